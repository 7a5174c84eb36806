"""The scan for lines over the row limit (``ledger.ingest.lines.long_line``), which reads only the first
bytes of each block when they hold a line end: the same answer as reading every block whole, and as a
plain split of the file into lines, for random files of short and long lines and every kind of line end."""
from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.ingest.lines import PROBE_BYTES, long_line


def plain(data: bytes, limit: int) -> tuple[int, int] | None:
    """The reference: the first line (ended by \\n, \\r or \\r\\n, numbered from 1) longer than `limit`
    bytes, as (its number, its length); None when there is none or the file is not over `limit`."""
    if len(data) <= limit:
        return None
    number = 1
    for m in re.finditer(rb"[^\r\n]*(\r\n|\r|\n|$)", data):
        text = m.group(0).rstrip(b"\r\n")
        if len(text) > limit:
            return number, len(text)
        if not m.group(1):
            break
        number += 1
    return None


def test_a_long_line_after_short_ones_is_found_with_its_number_and_length(tmp_path: Path):
    # limit 100: blocks of 50 bytes, probes of 4. Lines 1-3 are 9 bytes + \n (30 bytes), line 4 is
    # 250 bytes: it covers blocks 1 to 5 whole, and the scan says line 4, 250 bytes.
    f = tmp_path / "f.csv"
    f.write_bytes(b"a,b,c,d,e\n" * 3 + b"x" * 250 + b"\n" + b"1,2\n" * 40)
    assert long_line(f, 100, probe=4) == (4, 250)
    assert long_line(f, 100, probe=50) == (4, 250)  # a probe as long as the block: every block read whole
    assert plain(f.read_bytes(), 100) == (4, 250)


def test_short_lines_only_and_a_line_just_at_the_limit_are_not_long(tmp_path: Path):
    f = tmp_path / "f.csv"
    f.write_bytes(b"y" * 100 + b"\r\n" + b"z" * 99 + b"\r" + b"w" * 100)
    assert long_line(f, 100, probe=3) is None
    assert plain(f.read_bytes(), 100) is None


def test_the_default_probe_is_far_smaller_than_a_block():
    assert PROBE_BYTES * 64 <= (1 << 20) // 2


line = st.one_of(st.integers(0, 30), st.integers(31, 160)).map(lambda n: b"q" * n)
end = st.sampled_from([b"\n", b"\r", b"\r\n"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.tuples(line, end), max_size=40), last=line, limit=st.integers(8, 80),
       probe=st.integers(1, 40))
def test_property_the_probe_changes_nothing(tmp_path: Path, lines, last, limit, probe):
    data = b"".join(a + b for a, b in lines) + last
    f = tmp_path / "f.csv"
    f.write_bytes(data)
    whole = long_line(f, limit, probe=limit)  # probe >= block: each block read whole, as before the probe
    assert long_line(f, limit, probe=probe) == whole == plain(data, limit)
