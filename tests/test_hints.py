"""What the library says in its own words, and how a command words it (ledger.hints): a line keeps
its hints through the places a line goes, and each command names its own options."""
from __future__ import annotations

import copy
import pickle
from dataclasses import asdict, dataclass

import pytest
import typer.main

from ledger.hints import Hint, Hinted, lines_of, say, say_one

REPAIR = Hint("repair", "repair the curve")


def test_a_line_reads_as_the_librarys_words_and_as_a_commands():
    line = Hinted("c.csv: tok/s/user rises with concurrency (", REPAIR, " to keep the upper envelope)")
    assert line == "c.csv: tok/s/user rises with concurrency (repair the curve to keep the upper envelope)"
    assert isinstance(line, str) and "rises" in line
    assert say_one(line, {"repair": "use --repair"}) == \
        "c.csv: tok/s/user rises with concurrency (use --repair to keep the upper envelope)"
    assert say_one(line, {"other": "--other"}) == line  # a key the command does not know: the library's words
    assert say(["plain", line], {"repair": "set repair = true"}) == \
        ["plain", "c.csv: tok/s/user rises with concurrency (set repair = true to keep the upper envelope)"]
    assert say("one line", {}) == ["one line"]


def test_a_line_keeps_its_hints_when_prefixed_copied_or_pickled():
    line = Hinted("x (", REPAIR, ")")
    prefixed = Hinted("pool a: ", line)
    assert prefixed == "pool a: x (repair the curve)" and prefixed.said({"repair": "--repair"}) == "pool a: x (--repair)"
    for kept in (copy.copy(line), copy.deepcopy(line), pickle.loads(pickle.dumps(line))):
        assert type(kept) is Hinted and kept.said({"repair": "R"}) == "x (R)"

    @dataclass(frozen=True)
    class Note:
        text: str

    assert say_one(asdict(Note(line))["text"], {"repair": "R"}) == "x (R)"  # a record's asdict keeps it too
    assert type(line + "!") is str  # `+` and f-strings make plain text: join with Hinted(...) instead
    with pytest.raises(TypeError):
        Hinted("x", 3)


def test_an_errors_lines_keep_their_hints():
    from ledger.sizing import SizingError

    line = Hinted(Hint("percentile", "percentile"), " 'p90': one of p50, p95")
    assert say(lines_of(SizingError([line])), {"percentile": "--percentile"}) == ["--percentile 'p90': one of p50, p95"]
    assert say(lines_of(ValueError(line)), {"percentile": "--percentile"}) == ["--percentile 'p90': one of p50, p95"]
    assert lines_of(ValueError("two\nlines")) == ["two", "lines"]


def test_ledger_size_options_start_from_the_sizing_jobs_defaults():
    # the dashboard's sizing page starts from the same defaults (dashboard.sizing_defaults), so the
    # page and `ledger size` agree by construction
    from ledger import dashboard as dd
    from ledger.cli import load
    from ledger.sizing.engine import Reserves
    from ledger.sizing.service import CurveSource, MemorySpec, PriceSpec, SizingJob, TrafficSpec, default

    size = load("size")
    options = {p.name: p.default for p in size.params}
    reserves = default(SizingJob, "reserves")
    assert reserves == Reserves()
    assert (options["util"], options["interpolate"], options["repair"], options["ttft_ms"]) == \
        (default(SizingJob, "util"), default(SizingJob, "interpolate"), default(SizingJob, "repair"),
         default(SizingJob, "ttft_limit_ms"))
    assert (options["failure_reserve"], options["canary"], options["warm"]) == \
        (reserves.failure, reserves.canary, reserves.warm)
    assert options["hours_per_month"] == str(default(PriceSpec, "hours_per_month"))
    assert (options["curve_format"], options["prefill_format"]) == (default(CurveSource, "format"),) * 2
    assert (options["kv_dtype"], options["mem_util"], options["mamba_cache_mode"]) == \
        (default(MemorySpec, "kv_dtype"), default(MemorySpec, "mem_util"), default(MemorySpec, "mamba_cache_mode"))
    assert options["percentile"] == default(TrafficSpec, "percentile")
    d = dd.sizing_defaults()
    assert (d["util"], d["failure"], d["canary"], d["warm"], d["interpolate"], d["repair"], d["ttft_ms"]) == \
        (options["util"], options["failure_reserve"], options["canary"], options["warm"], options["interpolate"],
         options["repair"], options["ttft_ms"])
    assert str(d["hours_per_month"]) == options["hours_per_month"]
    with pytest.raises(KeyError):
        default(SizingJob, "tpm")  # required: no default
