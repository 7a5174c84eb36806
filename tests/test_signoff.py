"""Month-end sign-off (issue 28 item 1): `ledger close --period P --by NAME [--note TEXT]` records who,
when, why and the final run, immutably; `ledger runs` and the reports say it; a true-up after the
close is a run of its own, marked, and the final run stays the final run."""
from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from decimal import Decimal as D
from types import SimpleNamespace

import openpyxl
import pytest
import sqlalchemy as sa

from ledger import runs, store
from ledger.runs import run_roles
from test_reconcile import BILL, MAP, cli, cli_fails, month  # noqa: F401 (the fixture)

pytestmark = pytest.mark.store


def flat(text: str) -> str:
    return " ".join(text.split())


def test_close_requires_by_and_a_run_and_refuses_bad_names(ledger_home):
    out = flat(cli_fails("close", "--period", "2026-10"))
    assert out == ("--by: who signs the month off is required (e.g. --by 'Dana Reyes'): the close records who "
                   "signed it, when, and the run signed as final")
    assert flat(cli_fails("close", "--period", "2026-10", "--by", " ")) == \
        "--by: the name of who signs the period off is empty"
    assert flat(cli_fails("close", "--period", "2026-10", "--by", "Dana", "--note", "a\x00b")) == \
        "--note: the note contains a NUL byte (at character 2)"
    assert "period 2026-10 has no allocation run: a sign-off signs the run of its month, so allocate it first" in \
        flat(cli_fails("close", "--period", "2026-10", "--by", "Dana"))
    with store.session() as s:
        assert store.closed_periods(s) == []  # nothing was closed by a refusal
        assert store.closing(s, "2026-10").text == "open"


def test_sign_off_is_recorded_shown_and_never_changed(month, tmp_path):
    run_id = month["run_id"]
    out = flat(cli("close", "--period", "2026-10", "--by", "Dana Reyes", "--note", "bill checked, variance < 1%"))
    with store.session() as s:
        c = store.closing(s, "2026-10")
    at = c.closed_at.isoformat().replace("+00:00", "Z")
    assert c.closed_at.microsecond == 0
    assert out == (f"period 2026-10 closed by Dana Reyes at {at}, final run {run_id} (total 560.325000 USD, inputs "
                   f"digest {month['inputs_digest'][:12]}); note: bill checked, variance < 1%")
    assert (c.by, c.note, c.final_run, c.total, c.currency, c.inputs_digest) == (
        "Dana Reyes", "bill checked, variance < 1%", run_id, D("560.325"), "USD", month["inputs_digest"])
    # runs: JSON, CSV and the table say it
    [doc] = json.loads(cli("runs", "--json"))
    assert (doc["kind"], doc["role"]) == ("allocation", "final")
    assert doc["close"] == {"status": "closed", "text": f"closed by Dana Reyes at {at}, final run {run_id}",
                            "closed_by": "Dana Reyes", "closed_at": at, "note": "bill checked, variance < 1%",
                            "final_run": run_id, "final_total": "560.325000", "currency": "USD",
                            "inputs_digest": month["inputs_digest"]}
    [row] = list(csv.DictReader(io.StringIO(cli("runs", "--csv"))))
    assert (row["role"], row["closed_by"], row["final_run"]) == ("final", "Dana Reyes", run_id)
    table = flat(cli("runs"))
    assert f"{run_id} (final)" in table and f"closed by Dana Reyes at {at}, final run {run_id}" in table
    # a report's header and JSON say it too
    report = json.loads(cli("report", "unit-economics", "--period", "2026-10", "--json"))
    assert report["close"]["text"] == f"closed by Dana Reyes at {at}, final run {run_id}"
    assert f"closed by Dana Reyes at {at}" in flat(cli("report", "unit-economics", "--period", "2026-10"))
    # the workbook: its provenance and its summary's run row
    book = tmp_path / "run.xlsx"
    cli("export", "--period", "2026-10", "--xlsx", str(book))
    wb = openpyxl.load_workbook(book)
    prov = {r[0]: r[1] for r in wb["Provenance"].iter_rows(min_row=2, values_only=True) if r[0]}
    assert (prov["period close"], prov["sign-off note"], prov["final run inputs digest (signed)"]) == (
        c.text, "bill checked, variance < 1%", month["inputs_digest"])
    assert D(str(prov["final run total (signed)"])) == D("560.325")
    run_row = next(r for r in wb["Summary"].iter_rows(values_only=True) if r[0] == "run")
    assert run_row[1] == run_id and run_row[2] == f"period {c.text}"
    # never re-signed: the CLI refuses, and so does the database, for an update or a delete
    assert "a sign-off is never changed; a correction after close is a true-up run" in \
        flat(cli_fails("close", "--period", "2026-10", "--by", "Eve"))
    eng = store.engine()
    for statement in ("UPDATE period_signoff SET signed_by = 'Eve'", "DELETE FROM period_signoff"):
        with pytest.raises(sa.exc.DatabaseError, match="a sign-off is immutable"):
            with eng.begin() as con:
                con.execute(sa.text(statement))
    with store.session() as s:
        assert store.closing(s, "2026-10").by == "Dana Reyes"


def test_after_close_a_plain_run_is_refused_and_a_true_up_is_marked_beside_the_final_run(month):
    cli("ingest", "bill", str(BILL))  # the bill is in before the close
    cli("close", "--period", "2026-10", "--by", "Dana Reyes")
    out = flat(cli_fails("allocate", "--period", "2026-10"))
    assert "a signed month's final run does not change, so it is not allocated again" in out
    trued = json.loads(cli("allocate", "--period", "2026-10", "--true-up", "--bill-map", str(MAP), "--json"))
    docs = json.loads(cli("runs", "--json"))
    assert [(d["run_id"], d["kind"], d["role"]) for d in docs] == [
        (trued["run_id"], "true-up", "after close"), (month["run_id"], "allocation", "final")]
    start, end = store.month_bounds("2026-10")
    with store.session() as s:  # reports still read the signed run
        assert runs.current_run(s, start=start, end=end).id == month["run_id"]
    assert json.loads(cli("report", "unit-economics", "--period", "2026-10", "--json"))["run_id"] == month["run_id"]
    assert f"{trued['run_id']} (after close)" in flat(cli("runs"))


def test_a_month_closed_before_sign_off_existed_says_so_and_can_be_signed_once(month):
    with store.session() as s:
        store.close_period(s, name="2026-10")
    with store.session() as s:
        c = store.closing(s, "2026-10")
    assert c.text.startswith("closed at ") and c.text.endswith(", no sign-off recorded")
    cli("close", "--period", "2026-10", "--by", "Dana Reyes")
    with store.session() as s:
        assert store.closing(s, "2026-10").final_run == month["run_id"]


def _run(run_id: str, month: int, created: int) -> SimpleNamespace:
    start = datetime(2026, month, 1, tzinfo=timezone.utc)
    end = datetime(2026, month + 1, 1, tzinfo=timezone.utc)
    return SimpleNamespace(id=run_id, period_start=start, period_end=end,
                           created_at=datetime(2026, 12, created, tzinfo=timezone.utc))


def test_run_roles():
    # October signed on Dec 10 with r2 final: r1 before it is superseded, r3 after it is after close;
    # September open: its newest run is current, the older one nothing
    signed = store.Closing(period="2026-10", closed=True, closed_at=datetime(2026, 12, 10, tzinfo=timezone.utc),
                           by="Dana", final_run="r2")
    found = [_run("r1", 10, 1), _run("r2", 10, 5), _run("r3", 10, 20), _run("s1", 9, 1), _run("s2", 9, 2)]
    assert run_roles(found, {"2026-10": signed, "2026-09": store.Closing(period="2026-09")}) == {
        "r1": "superseded", "r2": "final", "r3": "after close", "s1": "", "s2": "current"}


def test_reconcile_and_trend_say_the_close(month):
    """Issue 28 item 1: `ledger reconcile` (its title, `close` in the JSON, `period_close` in the CSV)
    and `ledger report trend` (each month's row) say the month's close, open then signed."""
    run_id = month["run_id"]
    cli("ingest", "bill", str(BILL))
    rec = ["reconcile", "--period", "2026-10", "--bill-map", str(MAP)]
    assert json.loads(cli(*rec, "--json"))["close"]["text"] == "open"
    trend = ["report", "trend", "--from", "2026-10", "--to", "2026-10"]
    assert json.loads(cli(*trend, "--json"))["months"][0]["close"]["text"] == "open"
    assert {r["period_close"] for r in csv.DictReader(io.StringIO(cli(*trend, "--csv")))} == {"open"}
    cli("close", "--period", "2026-10", "--by", "Dana Reyes")
    with store.session() as s:
        text = store.closing(s, "2026-10").text
    assert text.endswith(f"final run {run_id}")
    doc = json.loads(cli(*rec, "--json"))
    assert doc["close"]["text"] == text and doc["close"]["closed_by"] == "Dana Reyes"
    rows = list(csv.DictReader(io.StringIO(cli(*rec, "--csv"))))
    assert rows and {r["period_close"] for r in rows} == {text}
    assert text in flat(cli(*rec))
    assert json.loads(cli(*trend, "--json"))["months"][0]["close"]["text"] == text
    assert {r["period_close"] for r in csv.DictReader(io.StringIO(cli(*trend, "--csv")))} == {text}
    table = flat(cli(*trend))
    assert "close" in table and "Dana Reyes" in table
