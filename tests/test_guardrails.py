"""Guardrails (issue 31): budgets books, spend to date, the burn-rate projection and run-out day, spend
anomalies, `ledger alerts` and its webhook. Expected numbers are worked by hand in the comments.

The fixture ledger (built once per module, SQLite): one provider model, gpt-x at 1.00 per million
input tokens (tests/data/guardrails/prices.toml), and requests of exactly 1,000,000 input tokens and no
output, so each request costs 1.00 and a day's spend is its count of requests. From 2026-10-01 to
2026-11-12 inclusive:

- acme sends 10 requests each weekday and 4 each weekend day;
- globex sends 5 every day, but 20 on Tuesday 2026-11-10 (the planted anomaly);
- a day's N requests start at 00:15 and follow every 24 h / N (10 a day: 00:15, 02:39, 05:03, 07:27,
  09:51, 12:15, ...; 5 a day: 00:15, 05:03, 09:51, 14:39, 19:27).

Budgets (tests/data/guardrails/team-budgets.toml): acme 300.00, globex 200.00 from November (3000.00 in
October), and model gpt-x 400.00.
"""
from __future__ import annotations

import csv
import http.server
import json
import threading
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger.guardrails import Rule, parse_budget_book, read_budget_book
from ledger.guardrails.anomalies import judge, median
from ledger.guardrails.projection import elapsed_fraction, project, weekday_profile

DATA = Path(__file__).resolve().parent / "data" / "guardrails"
UTC = timezone.utc
D = Decimal


def _requests(path: Path, last: date) -> None:
    rows = []
    day = datetime(2026, 10, 1, tzinfo=UTC)
    while day.date() <= last:
        plan = (("acme", 10 if day.weekday() < 5 else 4), ("globex", 20 if day.date() == date(2026, 11, 10) else 5))
        for tenant, n in plan:
            for i in range(n):
                at = day + timedelta(minutes=15) + i * timedelta(days=1) / n
                rows.append({"request_id": f"{tenant}-{at:%Y%m%dT%H%M%S}-{i}", "occurred_at": at.isoformat(),
                             "tenant": tenant, "product": "chat", "model": "gpt-x", "provider": "openai",
                             "input_tokens": 1_000_000, "output_tokens": 0, "status": "ok"})
        day += timedelta(days=1)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    from ledger import store
    from ledger.config import Home
    from ledger.guardrails import store_budget_book
    from ledger.ingest import ingest
    from ledger.pricebook import load_books

    ledger = Home.at(tmp_path_factory.mktemp("guardrails") / "home")
    ledger.path.mkdir()
    store.init_store(ledger.database_url, home=ledger.path)
    books, problems = load_books([DATA / "prices.toml"])
    assert not problems
    with store.session(ledger.database_url) as s:
        for b in books:
            store.store_book(s, book=b)
        for t in ("acme", "globex"):
            store.add_dim(s, kind="tenant", name=t)
        store.add_dim(s, kind="product", name="chat")
    _requests(ledger.path / "requests.csv", date(2026, 11, 12))
    assert ingest("requests", [ledger.path / "requests.csv"], home=ledger).rows_new == 588
    with store.session(ledger.database_url) as s:
        store_budget_book(s, book=read_budget_book(DATA / "team-budgets.toml"), models={"gpt-x"})
    store.dispose_engines()
    return ledger.path


def alerts(home: Path, *args: str, code: int | None = None):
    from ledger.cli import app

    result = CliRunner().invoke(app, ["alerts", *args], env={"LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": None})
    if code is not None:
        assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return result


def by_scope(doc: dict) -> dict:
    return {b["tenant"] or f"model={b['model']}": b for b in doc["budgets"]}


# ---- the budgets book ---------------------------------------------------------------------------

def test_the_issues_budget_shape_parses():
    text = ('[book]\nname = "team-budgets"\nversion = "2026-10-01"\ncurrency = "USD"\n\n[[budget]]\n'
            'tenant = "globex"\nmonthly = "3000.00"\nowner = "finance@example.com"\n'
            'effective_from = 2026-10-01T00:00:00Z\n')
    book, problems = parse_budget_book(text, "b.toml")
    assert problems == [] and book.ref == "team-budgets@2026-10-01"
    (b,) = book.budgets
    assert (b.tenant, b.product, b.model, b.monthly, b.currency, b.owner) == ("globex", None, None, D("3000.00"),
                                                                             "USD", "finance@example.com")
    assert b.effective_from == datetime(2026, 10, 1, tzinfo=UTC) and b.effective_to is None


def test_a_bad_book_is_one_line_per_problem_at_its_entry():
    text = ('[book]\nname = "b"\nversion = "1"\ncurrency = "usd"\ncolour = "red"\n\n'
            '[[budget]]\nmonthly = 3000.5\nowner = "x"\neffective_from = 2026-10-01T00:00:00\n\n'   # line 7
            '[[budget]]\ntenant = "a"\nmonthly = "-1"\neffective_from = 2026-10-01\n\n'            # line 12
            '[[budget]]\ntenant = "b"\nmonthly = "10"\nowner = "y"\neffective_from = 2026-10-01\n'  # line 17
            '[[budget]]\ntenant = "b"\nmonthly = "20"\nowner = "y"\neffective_from = 2026-10-01\n')  # line 22
    book, problems = parse_budget_book(text, "b.toml")
    assert book is None
    assert [str(p) for p in problems] == [
        "b.toml:1: [book]: unknown field 'colour'",
        "b.toml:1: [book]: currency 'usd' is not an ISO 4217 code",
        "b.toml:7: budget[1]: names no tenant, product or model: give at least one",
        "b.toml:7: budget[1]: monthly 3000.5 is a TOML float; write it as a string (\"3000.5\") so it stays exact",
        "b.toml:7: budget[1]: effective_from 2026-10-01T00:00:00 has no UTC offset (write e.g. 2026-10-01T00:00:00Z)",
        "b.toml:12: budget[2] tenant=a: missing required field 'owner'",
        "b.toml:12: budget[2] tenant=a: monthly -1 is not positive",
        "b.toml:22: budget[4] tenant=b: overlaps budget[3] of the same scope (in force from 2026-10-01T00:00:00Z)",
    ]


def test_a_toml_syntax_error_is_its_line_and_column():
    _, problems = parse_budget_book('[book]\nname = "b\n', "b.toml")
    assert len(problems) == 1 and problems[0].line == 2 and problems[0].column is not None


@pytest.mark.store
def test_budgets_load_stores_once_and_refuses_what_would_count_nothing_or_twice(ledger_home, tmp_path):
    from ledger import store
    from ledger.cli import app

    with store.session() as s:
        store.add_dim(s, kind="tenant", name="globex")
    run = lambda *a: CliRunner().invoke(app, ["budgets", *a])  # noqa: E731
    good = tmp_path / "b.toml"
    good.write_text('[book]\nname = "team"\nversion = "2026-10-01"\ncurrency = "USD"\n\n[[budget]]\ntenant = "globex"\n'
                    'monthly = "3000.00"\nowner = "f@x"\neffective_from = 2026-10-01T00:00:00Z\n', encoding="utf-8")
    r = run("load", str(good))
    assert r.exit_code == 0 and r.stdout == "team@2026-10-01: loaded\n"
    assert run("load", str(good)).stdout == "team@2026-10-01: unchanged\n"
    good.write_text(good.read_text(encoding="utf-8").replace("3000.00", "3100.00"), encoding="utf-8")
    r = run("load", str(good))
    assert r.exit_code == 1 and "already loaded with different content" in r.stderr
    typo = tmp_path / "typo.toml"
    typo.write_text('[book]\nname = "other"\nversion = "1"\ncurrency = "USD"\n\n[[budget]]\ntenant = "globexx"\n'
                    'monthly = "1"\nowner = "f"\neffective_from = 2026-10-01\n', encoding="utf-8")
    r = run("load", str(typo))
    assert r.exit_code == 1
    assert r.stderr.strip() == ("typo.toml: budget[1] tenant=globexx: tenant 'globexx' is not registered (globex)"
                                .replace("typo.toml", str(typo)))
    twice = tmp_path / "twice.toml"
    twice.write_text(typo.read_text(encoding="utf-8").replace("globexx", "globex"), encoding="utf-8")
    r = run("load", str(twice))
    assert r.exit_code == 1 and "the same scope is budgeted at the same time by team@2026-10-01 budget[1]" in r.stderr
    shown = json.loads(run("show", "--at", "2026-11-01", "--json").stdout)
    assert [(b["tenant"], b["monthly"], b["book"]) for b in shown["budgets"]] == [("globex", "3000.00", "team@2026-10-01")]


# ---- the projection and the run-out day, by hand ------------------------------------------------

def test_weekday_profile_projection_and_run_out_day_by_hand():
    # 2026-11: Sunday Nov 1. History: from 2026-10-01 (data_from), a scope spending 10 a weekday and 4
    # a weekend day. As of Thursday Nov 12 00:00: spent Nov 1-11 = 8 weekdays x 10 + 3 weekend days x 4
    # = 92. Still to come Nov 12-30: 13 weekdays x 10 + 6 weekend days x 4 = 154: projected 246.
    daily = {}
    d = date(2026, 10, 1)
    while d < date(2026, 11, 12):
        daily[d] = D(10) if d.weekday() < 5 else D(4)
        d += timedelta(days=1)
    month = {k: v for k, v in daily.items() if k >= date(2026, 11, 1)}
    spent = sum(month.values())
    assert spent == 92
    profile, basis = weekday_profile(daily, today=date(2026, 11, 12), weeks=8, data_from=date(2026, 10, 1),
                                     spent=spent, elapsed_days=D(11))
    assert basis == "weekday" and profile == (D(10),) * 5 + (D(4),) * 2
    as_of = datetime(2026, 11, 12, tzinfo=UTC)
    projected, runs_out = project(month, profile, as_of=as_of, month_start=date(2026, 11, 1),
                                  month_end=date(2026, 12, 1), monthly=D(300))
    assert (projected, runs_out) == (D(246), None)
    # With 200: 92 after Nov 11; Nov 12 102, 13 112, 14 116, 15 120, 16-20 170, 21 174, 22 178,
    # 23 188, 24 198, 25 208 >= 200: it runs out on Wednesday 2026-11-25.
    assert project(month, profile, as_of=as_of, month_start=date(2026, 11, 1), month_end=date(2026, 12, 1),
                   monthly=D(200)) == (D(246), date(2026, 11, 25))
    # Reaching the amount exactly runs it out (>=): 92 + 10 on Nov 12 = 102.
    assert project(month, profile, as_of=as_of, month_start=date(2026, 11, 1), month_end=date(2026, 12, 1),
                   monthly=D(102))[1] == date(2026, 11, 12)
    # Already spent: the day the actual spend crossed it. 10 (Nov 1, a Sunday, 4) -> Nov 2 (14).
    assert project(month, profile, as_of=as_of, month_start=date(2026, 11, 1), month_end=date(2026, 12, 1),
                   monthly=D(10))[1] == date(2026, 11, 2)


def test_the_as_of_day_counts_by_the_part_of_it_still_to_come():
    # As of 18:00 on Thursday Nov 12 with 7 spent that day: the rest of the day is 10 x 0.25 = 2.50.
    assert elapsed_fraction(datetime(2026, 11, 12, 18, tzinfo=UTC)) == D("0.75")
    profile = (D(10),) * 5 + (D(4),) * 2
    month = {date(2026, 11, 12): D(7)}
    projected, _ = project(month, profile, as_of=datetime(2026, 11, 12, 18, tzinfo=UTC), month_start=date(2026, 11, 1),
                           month_end=date(2026, 11, 14), monthly=D(1000))
    assert projected == D(7) + D("2.5") + D(10)  # + Friday Nov 13


def test_without_history_the_profile_is_this_months_mean_day():
    # 30 spent in 2.5 days of the month, no usage before: 12 a day on every weekday.
    profile, basis = weekday_profile({}, today=date(2026, 11, 3), weeks=8, data_from=None, spent=D(30),
                                     elapsed_days=D("2.5"))
    assert basis == "month_to_date" and profile == (D(12),) * 7


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=7, max_size=7), st.integers(0, 30), st.integers(1, 2000),
       st.integers(0, 23))
def test_a_budget_runs_out_exactly_when_the_projection_reaches_it(profile, spent_today, monthly, hour):
    prof = tuple(D(x) for x in profile)
    as_of = datetime(2026, 11, 12, hour, tzinfo=UTC)
    month = {date(2026, 11, 12): D(spent_today)}
    projected, runs_out = project(month, prof, as_of=as_of, month_start=date(2026, 11, 1),
                                  month_end=date(2026, 12, 1), monthly=D(monthly))
    assert (runs_out is not None) == (projected >= monthly)
    assert projected >= spent_today


# ---- anomalies, by hand -------------------------------------------------------------------------

def test_median_and_mad_threshold_by_hand():
    # Baseline 10, 12, 11, 13, 10 -> median 11; deviations 1, 1, 0, 2, 1 -> MAD 1. With k = 5 it fires
    # above 11 + 5 x 1.4826 x 1 = 18.413, if also >= 1.5 x 11 = 16.5 and >= 11 + 5 = 16.
    history = [D(10), D(12), D(11), D(13), D(10)]
    assert median(history) == 11 and median([D(1), D(2)]) == D("1.5")
    assert judge(D("18.41"), history, Rule()) is None
    assert judge(D("18.42"), history, Rule()) == (D(11), D(1), D("18.413000"))
    # A flat baseline (MAD 0) needs the ratio and the increase: 5 -> 7.5 (x1.5) and 10 (+5).
    flat = [D(5)] * 4
    assert judge(D("9.99"), flat, Rule()) is None and judge(D(10), flat, Rule()) is not None
    # Fewer baseline days than min_weeks: never judged.
    assert judge(D(1000), flat[:3], Rule()) is None


# ---- ledger alerts over the fixture ledger ------------------------------------------------------

def test_a_quiet_month_raises_nothing_and_exits_0(home):
    # As of Tuesday Nov 10 00:00, before the planted day. acme: 6 weekdays x 10 + 3 weekend days x 4 = 72,
    # projected 72 + 15 x 10 + 6 x 4 = 246; globex: 9 x 5 = 45, projected 45 + 21 x 5 = 150; gpt-x (both):
    # 117, projected 396 < 400.
    doc = json.loads(alerts(home, "--as-of", "2026-11-10T00:00:00Z", "--json", code=0).stdout)
    assert doc["status"] == "PROVISIONAL" and doc["provisional"] is True and doc["fired"] == 0
    assert doc["anomalies"] == [] and doc["alerts"] == []
    got = {k: (b["spent_to_date"], b["projected_month_end"], b["runs_out_on"]) for k, b in by_scope(doc).items()}
    assert got == {"acme": ("72.000000", "246.000000", None), "globex": ("45.000000", "150.000000", None),
                   "model=gpt-x": ("117.000000", "396.000000", None)}


def test_the_planted_anomaly_is_found_and_the_model_budget_runs_out(home):
    # As of Thursday Nov 12 00:00. globex spent 10 x 5 + 20 = 70; its Tuesdays since Oct 1 were 5 x 5 and
    # 20: 7.5 expected on Tuesdays, 5 otherwise; projected 70 + 2 x 7.5 + 17 x 5 = 170. gpt-x: 92 + 70 =
    # 162 and 416 projected; cumulative 162, Nov 12 177, 13 192, 14 201, 15 210, 16 225, 17 242.5, 18-20
    # 287.5, 21 296.5, 22 305.5, 23 320.5, 24 338, 25 353, 26 368, 27 383, 28 392, 29 401: Nov 29.
    r = alerts(home, "--as-of", "2026-11-12T00:00:00Z", "--json", code=3)
    doc = json.loads(r.stdout)
    got = {k: (b["spent_to_date"], b["projected_month_end"], b["runs_out_on"], b["alerts"])
           for k, b in by_scope(doc).items()}
    assert got == {"acme": ("92.000000", "246.000000", None, []),
                   "globex": ("70.000000", "170.000000", None, []),
                   "model=gpt-x": ("162.000000", "416.000000", "2026-11-29", ["runs_out"])}
    # Tuesday Nov 10: 20 against Oct 6, 13, 20, 27 and Nov 3 (5 weeks since the data starts), all 5.
    assert doc["anomalies"] == [{"tenant": "globex", "model": "gpt-x", "day": "2026-11-10", "spend": "20.000000",
                                 "baseline": "5.000000", "mad": "0.000000", "threshold": "10.000000", "weeks": 5,
                                 "ratio": "4.00", "partial_day": False, "currency": "USD"}]
    assert doc["fired"] == 2


def test_mid_day_the_spend_so_far_and_the_rest_of_the_day(home):
    # As of 12:00 on Nov 12: acme spent 5 of the day's 10 (00:15 ... 09:51): 97, and the rest of the day
    # is 10 x 0.5: projected 97 + 5 + 144 = 246. globex spent 3 (00:15, 05:03, 09:51): 73 + 2.5 + 95 = 170.5.
    doc = json.loads(alerts(home, "--as-of", "2026-11-12T12:00:00Z", "--json", code=3).stdout)
    got = {k: (b["spent_to_date"], b["projected_month_end"]) for k, b in by_scope(doc).items()}
    assert got["acme"] == ("97.000000", "246.000000") and got["globex"] == ("73.000000", "170.500000")


def test_csv_and_thresholds_are_options(home):
    r = alerts(home, "--as-of", "2026-11-12T00:00:00Z", "--csv", "--min-ratio", "5", code=3)  # 4x < 5x: no anomaly
    rows = list(csv.DictReader(r.stdout.splitlines()))
    assert [(x["record"], x["tenant"] or x["model"], x["alert"]) for x in rows] == [
        ("budget", "gpt-x", "runs_out"), ("budget", "acme", ""), ("budget", "globex", "")]
    assert {x["status"] for x in rows} == {"PROVISIONAL"}
    r = alerts(home, "--as-of", "2026-11-12T00:00:00Z", "--json", "--csv", code=1)
    assert r.stderr.strip() == "give --json or --csv, not both"


# ---- the webhook --------------------------------------------------------------------------------

class _Receiver(http.server.BaseHTTPRequestHandler):
    bodies: list = []
    status = 200

    def do_POST(self):  # noqa: N802 (the handler's name)
        type(self).bodies.append((self.headers["Content-Type"], self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    class Handler(_Receiver):
        bodies: list = []

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, Handler
    server.shutdown()
    server.server_close()


def test_the_webhook_gets_one_json_body_with_slack_text_and_the_alerts(home, receiver):
    server, handler = receiver
    url = f"http://127.0.0.1:{server.server_address[1]}/hooks/T000/SECRET"
    r = alerts(home, "--as-of", "2026-11-12T00:00:00Z", "--webhook", url, code=3)
    assert len(handler.bodies) == 1
    kind, raw = handler.bodies[0]
    body = json.loads(raw)
    assert kind.startswith("application/json")
    assert body["text"].splitlines() == [
        "PROVISIONAL ledger alerts as of 2026-11-12T00:00:00Z (2026-11, USD): 2 alerts",
        "• budget model=gpt-x runs out on 2026-11-29: projected 416.00 USD of 400.00 USD by month end "
        "(owner ml-platform@example.com)",
        "• anomaly: globex on gpt-x spent 20.00 USD on 2026-11-10 against a baseline of 5.00 USD, 4.00x"]
    assert body["anomalies"][0]["day"] == "2026-11-10" and len(body["budgets"]) == 3 and body["provisional"] is True
    assert "Budgets" in r.stdout


def test_a_webhook_that_is_down_is_one_line_and_exit_4(home, receiver):
    server, handler = receiver
    handler.status = 503  # answers, but fails: retried, then given up
    port = server.server_address[1]
    r = alerts(home, "--as-of", "2026-11-10T00:00:00Z", "--json", "--webhook", f"http://127.0.0.1:{port}/x/SECRET",
               code=4)
    assert len(handler.bodies) == 3
    assert r.stderr.strip() == f"webhook http://127.0.0.1:{port} not delivered after 3 attempts: HTTP 503 Service Unavailable"
    assert json.loads(r.stdout)["fired"] == 0 and r.exception is None or isinstance(r.exception, SystemExit)
    r = alerts(home, "--as-of", "2026-11-10T00:00:00Z", "--webhook", "file:///etc/passwd", code=4)
    assert r.stderr.strip() == "webhook URL must be http:// or https:// with a host, not file://" and r.stdout == ""
