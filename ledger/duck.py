"""Every DuckDB connection the ledger opens: in memory, under a memory limit, spilling to the ledger home.

:func:`connect` is the one place a connection is made (ingest, facts, allocate, check, reconcile,
workload, the demo). Each connection gets:

- ``memory_limit`` from ``LEDGER_MEMORY_LIMIT``: a DuckDB size (``2GB``, ``1500MiB``) or a share of
  the machine's memory (``25%``; the machine is the smaller of physical memory and the cgroup's
  limit). Unset: 25% of the machine, at most 1.5 GiB (:data:`DEFAULT_SHARE`, :data:`DEFAULT_CAP`), and
  at most the purpose's own ceiling (:data:`CEILINGS`: ingest 1200MB). A set value applies as given;
- ``temp_directory``: ``<home>/tmp/duckdb-<purpose>-<host>-<pid>-<n>``, where DuckDB spills what
  does not fit. DuckDB creates it on the first spill and deletes it when the connection closes; a
  folder left by a killed process of this host is swept by the next connection;
- ``preserve_insertion_order = false`` unless the caller asks for order (``ordered=True``):
  DuckDB then need not buffer rows to keep a scan's order;
- ``threads`` from ``LEDGER_THREADS`` when set (DuckDB's default, one per core, otherwise);
- ``TimeZone = 'UTC'``.

A bad ``LEDGER_MEMORY_LIMIT`` or ``LEDGER_THREADS`` raises :class:`SettingError` with one line.
"""
from __future__ import annotations

import itertools
import os
import re
import shutil
import socket
import tempfile
import weakref
from pathlib import Path

import duckdb

from . import config
from .errors import LedgerError
from .sqltext import literal

MEMORY_ENV = "LEDGER_MEMORY_LIMIT"
THREADS_ENV = "LEDGER_THREADS"
#: The default limit: this share of the machine's memory (percent) ...
DEFAULT_SHARE = 25
#: ... and at most this many bytes (1.5 GiB): beyond it the allocation spills instead of growing. DuckDB's
#: hash joins overshoot the limit by a few hundred MB, so a 100M-request month's allocation peaks at
#: ~2.1 GB RSS under this cap (2.8 GB under 2 GiB) for about the same time (docs/scale.md).
DEFAULT_CAP = 3 * 2**29
#: Purposes that need less than the default (when LEDGER_MEMORY_LIMIT is unset): ingest streams its
#: files and sorts keys, and spills beyond 1200MB as it always has; the conversion of a source (an
#: adapter, a bill) stays open beside the ingest it hands its rows to, under the same ceiling.
CEILINGS = {"ingest": 1_200_000_000, "ingest_source": 1_200_000_000, "ingest_bill": 1_200_000_000}

_UNITS = {"b": 1, "bytes": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$", re.IGNORECASE)
_SHARE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
_PURPOSE = re.compile(r"^[a-z][a-z0-9_]*$")
_FOLDER = re.compile(r"^duckdb-[a-z][a-z0-9_]*-(?P<host>.+)-(?P<pid>\d+)-\d+$")
_serial = itertools.count()


class SettingError(LedgerError, ValueError):
    """A ledger setting (an environment variable) with a value the ledger cannot use; one line."""


def machine_memory() -> int | None:
    """Bytes of memory this process may use: physical memory, or the cgroup's limit when smaller
    (a container). None when neither can be read."""
    found = []
    try:
        found.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            found.append(int(text))
    found = [n for n in found if n > 0]
    return min(found) if found else None


def memory_limit(purpose: str = "") -> int:
    """The memory limit in bytes for a connection of `purpose` (see the module's docstring).
    Raises SettingError on a bad ``LEDGER_MEMORY_LIMIT``."""
    text = os.environ.get(MEMORY_ENV, "").strip()
    if not text:
        share = machine_memory()
        limit = DEFAULT_CAP if share is None else min(share * DEFAULT_SHARE // 100, DEFAULT_CAP)
        return min(limit, CEILINGS.get(purpose, limit))
    bad = SettingError(f"{MEMORY_ENV}={text!r} is not a memory size: give a size such as 2GB or 1500MiB, "
                       "or a share of the machine's memory such as 25%")
    if m := _SHARE.match(text):
        share = float(m.group(1))
        if not 0 < share <= 100:
            raise SettingError(f"{MEMORY_ENV}={text!r}: a share of the machine's memory is above 0% and at most 100%")
        total = machine_memory()
        if total is None:
            raise SettingError(f"{MEMORY_ENV}={text!r}: this machine's memory cannot be read; give a size "
                               "such as 2GB")
        return int(total * share / 100)
    limit = size_bytes(text)
    if limit is None:
        raise bad
    if limit < 2**20:
        raise SettingError(f"{MEMORY_ENV}={text!r} is below 1MiB: DuckDB cannot work in that; give a size "
                           "such as 2GB")
    return limit


def size_bytes(text: str) -> int | None:
    """A memory size as DuckDB reads or writes one (``2GB``, ``1500MiB``, ``1.5 GiB``, ``500 bytes``)
    in bytes; None when `text` is no such size."""
    m = _SIZE.match(text or "")
    if not m or m.group(2).lower() not in _UNITS:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def limit_of(con: duckdb.DuckDBPyConnection) -> int | None:
    """The memory limit of `con` in bytes, as DuckDB says it (``current_setting('memory_limit')``,
    rounded to its one decimal); None when it says no size."""
    return size_bytes(con.execute("SELECT current_setting('memory_limit')").fetchone()[0])


def threads() -> int | None:
    """``LEDGER_THREADS`` as a positive integer, or None (DuckDB's default). SettingError if bad."""
    text = os.environ.get(THREADS_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise SettingError(f"{THREADS_ENV}={text!r} is not a positive whole number of threads")
    return int(text)


def check_settings() -> list[str]:
    """The problems of the DuckDB settings in the environment, one line each (empty when usable)."""
    problems = []
    for check in (memory_limit, threads):
        try:
            check()
        except SettingError as e:
            problems.append(str(e))
    return problems


def spill_root(home: Path | None = None) -> Path:
    """Where connections spill: ``<home>/tmp`` when the ledger home exists, else the system's
    temporary folder (a connection with no ledger around, such as writing the demo's inputs)."""
    home = home or config.ledger_home()
    return home / "tmp" if home.is_dir() else Path(tempfile.gettempdir()) / "ledger-tmp"


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname()) or "host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(root: Path) -> list[Path]:
    """Remove the spill folders under `root` left by processes of this host that are gone."""
    removed = []
    host = _host()
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for d in entries:
        m = _FOLDER.match(d.name)
        if m and m.group("host") == host and int(m.group("pid")) != os.getpid() and not _alive(int(m.group("pid"))):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def connect(purpose: str, *, home: Path | None = None, ordered: bool = False) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection for `purpose` (a short lowercase name: ``ingest``, ``facts``,
    ``check``, ...) under the ledger's memory limit, spilling into the ledger home (`home`, default
    ``LEDGER_HOME``), in UTC; ``ordered=True`` keeps scans in insertion order. Raises SettingError
    on a bad ``LEDGER_MEMORY_LIMIT`` or ``LEDGER_THREADS``."""
    if not _PURPOSE.match(purpose):
        raise ValueError(f"purpose {purpose!r}: lowercase letters, digits and _")
    limit, n_threads = memory_limit(purpose), threads()
    root = spill_root(Path(home) if home is not None else None)
    root.mkdir(parents=True, exist_ok=True)
    sweep(root)
    spill = root / f"duckdb-{purpose}-{_host()}-{os.getpid()}-{next(_serial)}"
    con = duckdb.connect()
    try:
        con.execute(f"SET memory_limit = '{max(limit // 1024, 1)}KiB'")
        con.execute(f"SET temp_directory = {literal(str(spill))}")
        con.execute(f"SET preserve_insertion_order = {'true' if ordered else 'false'}")
        if n_threads is not None:
            con.execute(f"SET threads = {n_threads}")
        con.execute("SET TimeZone = 'UTC'")
    except BaseException:
        con.close()
        raise
    # DuckDB deletes the folder it created when the connection closes; this covers a connection
    # that is only dropped (garbage-collected, or still open when the interpreter exits)
    weakref.finalize(con, shutil.rmtree, spill, True)
    return con
