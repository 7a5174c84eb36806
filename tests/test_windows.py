"""One meaning of --from and --to in every command (docs/architecture.md, the command line): the
window from --from to --to, where a month ``YYYY-MM`` is the whole month (as --from its first
instant, as --to through its end) and an ISO 8601 instant is taken as given (the end excluded).
One parser (`ledger.console.window`, `month_window`), one sentence in every help text."""
from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest
import typer
from typer.testing import CliRunner

from ledger import console
from ledger.cli import app

runner = CliRunner()
UTC = timezone.utc

#: Every command with --from and --to (grep '"--from"' ledger/), and its --help.
COMMANDS = (("workload",), ("allocate",), ("check",), ("reconcile",), ("size",), ("report", "unit-economics"),
            ("report", "tenants"), ("report", "lines"), ("report", "trend"), ("budget", "forecast"))


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def refusal(fn, *args) -> str:
    """The one line a parser fails with (console.fail prints it to stderr and exits 1)."""
    with pytest.raises(typer.Exit) as e:
        fn(*args)
    assert e.value.exit_code == 1
    return ""


# ---- the parser ---------------------------------------------------------------------------------

def test_a_month_is_the_whole_month_at_either_end():
    assert console.window("2026-10", "2026-10") == (at(2026, 10, 1), at(2026, 11, 1))
    assert console.window("2026-08", "2026-10") == (at(2026, 8, 1), at(2026, 11, 1))
    assert console.window("2026-12", "2026-12") == (at(2026, 12, 1), at(2027, 1, 1))


def test_an_instant_is_taken_as_given_and_the_two_mix():
    assert console.window("2026-10-15T00:00:00Z", "2026-10-16T00:00:00Z") == (at(2026, 10, 15), at(2026, 10, 16))
    assert console.window("2026-10-01T12:00:00+02:00", "2026-10") == (at(2026, 10, 1, 10), at(2026, 11, 1))
    assert console.window("2026-10", "2026-10-02T00:00:00Z") == (at(2026, 10, 1), at(2026, 10, 2))
    assert console.window("2026-10-01", "2026-10-02") == (at(2026, 10, 1), at(2026, 10, 2))  # dates: 00:00 UTC
    assert console.period_bounds(None, "2026-10", "2026-10") == console.period_bounds("2026-10", None, None)


@pytest.mark.parametrize(("frm", "to", "said"), [
    ("2026-11", "2026-10", "--from 2026-11 is not before --to 2026-10: the window is empty"),
    ("2026-10-02", "2026-10-01", "--from 2026-10-02 is not before --to 2026-10-01: the window is empty"),
    ("2026-13", "2026-10", "--from: period '2026-13' is not a month like 2026-10"),
    ("2026-10", "last week", "--to: 'last week' is neither a month such as 2026-10 nor an ISO 8601 instant"),
    ("2026-10-01T00:00:00", "2026-10", "--from: '2026-10-01T00:00:00' has no UTC offset"),
])
def test_a_bad_window_is_one_line(capsys, frm, to, said):
    refusal(console.window, frm, to)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(said), lines


def test_by_month_the_window_is_its_first_and_last_months(capsys):
    assert console.month_window("2026-08", "2026-10", "report trend") == ("2026-08", "2026-10")
    assert console.month_window("2026-10", "2026-10", "report trend") == ("2026-10", "2026-10")
    assert console.month_window("2026-08-01T00:00:00Z", "2026-11-01T00:00:00Z", "report trend") == (
        "2026-08", "2026-10")  # an instant as --to is excluded: the window ends with October
    assert console.month_window(None, "2027-03", "budget forecast") == (None, "2027-03")
    assert console.month_window("2027-01", None, "budget forecast") == ("2027-01", None)
    assert console.month_window(None, None, "budget forecast") == (None, None)
    refusal(console.month_window, "2026-08-15T00:00:00Z", "2026-10", "report trend")
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["--from 2026-08-15T00:00:00Z: report trend goes by month: give a month such as 2026-10, or "
                     "the first instant of one (2026-10-01T00:00:00Z)"]


# ---- every command: the same words, the same window -----------------------------------------------

def _help(*command: str) -> str:
    r = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"})
    assert r.exit_code == 0, r.output
    return re.sub(r"\s+", " ", re.sub(r"[│╭╮╰╯─]", " ", r.stdout))


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_every_help_says_the_same_window(command):
    text = _help(*command)
    assert console.FROM_HELP in text, text
    assert console.TO_HELP in text, text
    for old in ("period end, exclusive", "period start (ISO 8601 instant)", "last month, included",
                "window end, exclusive"):
        assert old not in text


def test_the_rule_is_in_the_architecture_doc():
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "the window from --from to --to" in doc


def test_commands_by_month_refuse_an_instant_inside_a_month(tmp_path):
    """`report trend` and `budget forecast` go by month: one clear line, before any work."""
    plan = tmp_path / "missing.toml"  # never read: the window is checked first
    for args in (["report", "trend", "--from", "2026-08-15T00:00:00Z", "--to", "2026-10"],
                 ["budget", "forecast", str(plan), "--from", "2027-01", "--to", "2027-03-15T00:00:00Z"]):
        r = runner.invoke(app, args, env={"LEDGER_HOME": str(tmp_path / "home"), "LEDGER_DATABASE_URL": None})
        assert r.exit_code == 1, r.output
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "goes by month" in lines[0], lines


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory):
    from conftest import copy_demo

    return copy_demo(tmp_path_factory, tmp_path_factory.mktemp("windows") / "home").home


def _json(home, *args):
    import json

    r = runner.invoke(app, [*args, "--json"], env={"LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": None})
    assert r.exit_code == 0, (args, r.output)
    return json.loads(r.stdout)


def test_a_month_means_the_same_window_in_every_command(demo_home):
    """`--from 2026-10 --to 2026-10` is October wherever it is given, as `--period 2026-10` is; and
    the trend of `--from 2026-08 --to 2026-10` is three months."""
    assert _json(demo_home, "workload", "--from", "2026-10", "--to", "2026-10") == \
        _json(demo_home, "workload", "--from", "2026-10-01T00:00:00Z", "--to", "2026-11-01T00:00:00Z")
    by_period = _json(demo_home, "report", "unit-economics", "--period", "2026-10")
    by_months = _json(demo_home, "report", "unit-economics", "--from", "2026-10", "--to", "2026-10")
    assert by_months["run_id"] == by_period["run_id"] and by_months["run_total"] == by_period["run_total"]
    months = _json(demo_home, "report", "trend", "--from", "2026-08", "--to", "2026-10")["months"]
    assert [m["month"] for m in months] == ["2026-08", "2026-09", "2026-10"]
    same = _json(demo_home, "report", "trend", "--from", "2026-08-01T00:00:00Z", "--to", "2026-11-01T00:00:00Z")
    assert [m["month"] for m in same["months"]] == ["2026-08", "2026-09", "2026-10"]
