"""`ledger workload`: a small hand-written trace, every figure worked by hand (percentiles by linear
interpolation between the closest ranks: position (n - 1) x q of the sorted values)."""
from __future__ import annotations

import csv
import io
import json
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent

# October 2025 (1 October is a Wednesday), minute m = 00:mm on 1 October unless said otherwise.
# Pool p1, product chat:
#   m0  r1   in 1,000 (cached   500) out   100 ok
#   m2  r2   in 2,000               out   300 ok
#   m3  r3   in   500               out   150 ok
#   m3  r4   in   500 (cached   250) out   250 error     (failed: counted, it loaded the fleet)
#   m10 r5   in 4,000 (cached 2,000) out 1,000 ok
#   m11 r6   in 3,000 (cached 3,000) out   700 timeout   (failed: counted)
#   m11 r7   in 1,000               out   500 ok
#   m12 r8   in 1,000               out   200 ok
#   m40 r9   in 1,000 (cached 1,000) out   900 ok
#   m59 r10  in 1,000               out    50 ok
# Pool p2, product search: m5 r11 in 100 out 5,000. Pool p3, product batch: m0 r14 out 700, m2 r15
# out 100. Outside October: r12 (30 Sep 23:59:59) and
# r13 (1 Nov 00:00:00, the end is exclusive), both p1 chat.
REQUESTS = """
    request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,cached_input_tokens,output_tokens,status
    r1,2025-10-01T00:00:05Z,a,chat,llama,p1,,t1,1000,500,100,ok
    r2,2025-10-01T00:02:00Z,a,chat,llama,p1,,t1,2000,0,300,ok
    r3,2025-10-01T00:03:10Z,a,chat,llama,p1,,t2,500,0,150,ok
    r4,2025-10-01T00:03:59Z,b,chat,llama,p1,,t2,500,250,250,error
    r5,2025-10-01T00:10:00Z,a,chat,llama,p1,,t3,4000,2000,1000,ok
    r6,2025-10-01T00:11:01Z,b,chat,llama,p1,,t3,3000,3000,700,timeout
    r7,2025-10-01T00:11:30Z,a,chat,llama,p1,,t4,1000,0,500,ok
    r8,2025-10-01T00:12:00Z,a,chat,llama,p1,,t4,1000,0,200,ok
    r9,2025-10-01T00:40:00Z,b,chat,llama,p1,,t5,1000,1000,900,ok
    r10,2025-10-01T00:59:59Z,a,chat,llama,p1,,t5,1000,0,50,ok
    r11,2025-10-01T00:05:30Z,a,search,llama,p2,,t6,100,0,5000,ok
    r12,2025-09-30T23:59:59Z,a,chat,llama,p1,,t7,1000,0,7777,ok
    r13,2025-11-01T00:00:00Z,a,chat,llama,p1,,t7,1000,0,8888,ok
    r14,2025-10-01T00:00:30Z,a,batch,llama,p3,,t8,10,0,700,ok
    r15,2025-10-01T00:02:30Z,a,batch,llama,p3,,t8,10,0,100,ok
"""
# The month still under way (now = 1 October 12:00): the series ends at the last request's minute.
OPEN = datetime(2025, 10, 1, 12, tzinfo=timezone.utc)
MINUTES_OCT = 31 * 24 * 60  # 44,640
WED_00H = 2 * 24  # the hour-of-week slot of Wednesday 00h (Monday 00h is 0)


@pytest.fixture
def trace(ledger_home, tmp_path):
    path = tmp_path / "requests.csv"
    path.write_text(textwrap.dedent(REQUESTS).strip() + "\n", encoding="utf-8")
    r = runner.invoke(app, ["ingest", "requests", str(path), "--register-new"])
    assert r.exit_code == 0, r.output
    return ledger_home


def _workload(**kw):
    from ledger import store
    from ledger.workload import workload

    with store.session() as s:
        return workload(s, "2025-10", **kw)


@pytest.mark.store
def test_an_open_month_ends_at_the_last_request_and_every_figure_is_the_hand_number(trace):
    w = _workload(pool="p1", product="chat", now=OPEN)
    # the series: minutes 0..59 (the last request is at 00:59:59), zero-filled:
    #   m0 100, m2 300, m3 400, m10 1,000, m11 1,200, m12 200, m40 900, m59 50, the other 52 minutes 0
    assert (w.minutes, w.start, w.end) == (60, datetime(2025, 10, 1, tzinfo=timezone.utc),
                                           datetime(2025, 10, 1, 1, tzinfo=timezone.utc))
    assert (w.requests, w.failed_requests) == (10, 2)
    assert (w.input_tokens, w.cached_input_tokens, w.output_tokens) == (15_000, 6_750, 4_150)
    # sorted TPM: 52 zeros, then 50, 100, 200, 300, 400, 900, 1,000, 1,200 (positions 52..59)
    #   p50: position 29.5 -> 0; p95: 56.05 -> 400 + 0.05 x (900 - 400) = 425;
    #   p99: 58.41 -> 1,000 + 0.41 x 200 = 1,082; max 1,200; mean 4,150 / 60
    assert w.tpm == pytest.approx({"p50": 0, "p95": 425, "p99": 1082, "max": 1200, "mean": 4150 / 60})
    assert w.peak_to_average == pytest.approx(1200 / (4150 / 60))  # 17.349...
    # requests per minute: 52 zeros, then 1 x6 and 2 x2 -> p95 (56.05) 1, p99 (58.41) 2
    assert w.rpm == pytest.approx({"p50": 0, "p95": 1, "p99": 2, "max": 2, "mean": 10 / 60})
    # bursts above p95 = 425: {m10 1,000, m11 1,200} and {m40 900}: 2 runs, the longest 2 minutes,
    # 3 minutes, 3,100 tokens, 575 + 775 + 475 = 1,825 above the threshold
    b = w.bursts
    assert (b.count, b.longest, b.minutes, b.tokens) == (2, 2, 3, 3100)
    assert (b.threshold, b.excess_tokens) == (pytest.approx(425), pytest.approx(1825))
    # input per request, sorted: 500 500 1000 1000 1000 1000 1000 2000 3000 4000
    #   p50 (4.5) 1,000; p95 (8.55) 3,000 + 0.55 x 1,000 = 3,550; p99 (8.91) 3,910; mean 1,500
    assert w.input_len.as_dict() == pytest.approx({"p50": 1000, "p95": 3550, "p99": 3910, "max": 4000,
                                                   "mean": 1500})
    # output per request, sorted: 50 100 150 200 250 300 500 700 900 1000
    #   p50 250 + 0.5 x 50 = 275; p95 900 + 0.55 x 100 = 955; p99 991; mean 415
    assert w.output_len.as_dict() == pytest.approx({"p50": 275, "p95": 955, "p99": 991, "max": 1000, "mean": 415})
    assert (w.isl_mean, w.osl_mean) == (1500, 415)
    assert w.cache_hit == 6750 / 15000 == 0.45
    # all 60 minutes are Wednesday 00h: that slot's mean is 4,150 / 60; the others have no minute
    assert w.hour_of_week[WED_00H] == pytest.approx(4150 / 60)
    assert [h for h, v in enumerate(w.hour_of_week) if v is not None] == [WED_00H] and len(w.hour_of_week) == 168
    # the largest rise over 10 minutes: at m11, 1,200 - min(m1..m11) = 1,200 - 0
    assert (w.ramp_minutes, w.ramp) == (10, 1200)
    assert w.hourly == ((datetime(2025, 10, 1, tzinfo=timezone.utc), pytest.approx(4150 / 60), 1200),)


@pytest.mark.store
def test_the_largest_rise_is_taken_over_the_window_ending_at_each_minute(trace):
    from ledger import store
    from ledger.workload import largest_rise

    with store.session() as s:
        # window [t - 1, t]: m2 300 - 0; m3 400 - 300; m10 1,000 - 0; m11 1,200 - 1,000 = 200;
        # m12 200 - 200; m40 900 - 0: the largest is 1,000 (m10), not 1,200
        assert largest_rise(s, "2025-10", 1, pool="p1", now=OPEN) == 1000
        assert largest_rise(s, "2025-10", 10, pool="p1", now=OPEN) == 1200
        # the window is cut at the series start (nothing before the month is taken as 0): p3 is
        # 700, 0, 100; m0's window is [m0] alone (0, not 700), m1 0 - 0, m2 100 - min(700, 0, 100)
        assert largest_rise(s, "2025-10", 2, pool="p3", now=OPEN) == 100
        # p2 is 0 x5 then 5,000 at m5: reached within any window of 1 minute or more
        assert largest_rise(s, "2025-10", 1, pool="p2", now=OPEN) == 5000


@pytest.mark.store
def test_a_finished_month_counts_every_minute_and_nothing_outside_it(trace):
    w = _workload(pool="p1")  # October 2025 is over: all 44,640 minutes, r12 and r13 excluded
    assert (w.minutes, w.requests, w.output_tokens) == (MINUTES_OCT, 10, 4150)
    # 8 busy minutes out of 44,640: every percentile up to p99 is 0 (position 0.99 x 44,639 = 44,192.61)
    assert w.tpm == pytest.approx({"p50": 0, "p95": 0, "p99": 0, "max": 1200, "mean": 4150 / MINUTES_OCT})
    # above p95 = 0: {m0} {m2 m3} {m10 m11 m12} {m40} {m59}: 5 runs, the longest 3 minutes
    b = w.bursts
    assert (b.count, b.longest, b.minutes, b.tokens, b.excess_tokens) == (5, 3, 8, 4150, 4150)
    # October 2025 has five Wednesdays (1, 8, 15, 22, 29): 300 minutes at Wednesday 00h
    assert w.hour_of_week[WED_00H] == pytest.approx(4150 / 300)
    assert all(v == 0 for h, v in enumerate(w.hour_of_week) if h != WED_00H)
    assert len(w.hourly) == 31 * 24


@pytest.mark.store
def test_filters_by_pool_and_product(trace):
    everything = _workload(now=OPEN)  # r11 (p2, 5,000 at m5), r14 and r15 (p3, 700 at m0, 100 at m2) join p1's
    assert (everything.requests, everything.output_tokens, everything.tpm["max"]) == (13, 9950, 5000)
    assert _workload(product="chat", now=OPEN).output_tokens == 4150
    p2 = _workload(pool="p2", now=OPEN)  # one request at m5: 6 minutes, 5,000 at the last
    assert (p2.minutes, p2.tpm["max"], p2.tpm["mean"]) == (6, 5000, pytest.approx(5000 / 6))
    assert p2.peak_to_average == pytest.approx(6)


@pytest.mark.store
def test_nothing_matching_is_one_line_and_a_non_zero_exit(trace):
    from ledger.workload import WorkloadError

    with pytest.raises(WorkloadError) as e:
        _workload(pool="p1", product="search")
    assert e.value.problems == ["no requests occurred in 2025-10 for pool p1 and product search"]
    r = runner.invoke(app, ["workload", "--period", "2025-10", "--pool", "p9"])
    assert r.exit_code == 1 and r.stderr.strip() == "no requests occurred in 2025-10 for pool p9"
    r = runner.invoke(app, ["workload", "--period", "2025-13"])
    assert r.exit_code == 1 and "2025-13" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = runner.invoke(app, ["workload", "--period", "2025-10", "--json", "--csv"])
    assert r.exit_code == 1 and r.stderr.strip() == "give --json or --csv, not both"
    r = runner.invoke(app, ["workload", "--period", "2025-10", "--ramp-minutes", "0"])
    assert r.exit_code == 1 and r.stderr.strip() == "--ramp-minutes 0: give a whole number of minutes >= 1"


@pytest.mark.store
def test_json_csv_and_text(trace):
    r = runner.invoke(app, ["workload", "--period", "2025-10", "--pool", "p1", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["report"], doc["period"], doc["pool"], doc["product"], doc["minutes"]) == \
        ("workload", "2025-10", "p1", None, MINUTES_OCT)
    assert doc["tpm"] == {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 1200.0, "mean": round(4150 / MINUTES_OCT, 3)}
    assert doc["peak_to_average"] == round(1200 / (4150 / MINUTES_OCT), 4)
    assert doc["bursts"] == {"threshold": 0.0, "count": 5, "longest_minutes": 3, "minutes": 8, "tokens": 4150,
                             "excess_tokens": 4150.0}
    assert doc["input_tokens"] == {"p50": 1000.0, "p95": 3550.0, "p99": 3910.0, "max": 4000.0, "mean": 1500.0}
    assert doc["output_tokens"] == {"p50": 275.0, "p95": 955.0, "p99": 991.0, "max": 1000.0, "mean": 415.0}
    assert doc["cache_hit"] == 0.45
    assert doc["totals"] == {"requests": 10, "failed_requests": 2, "input_tokens": 15000,
                             "cached_input_tokens": 6750, "output_tokens": 4150}
    assert doc["ramp"] == {"window_minutes": 10, "largest_rise_tpm": 1200.0}
    assert doc["hour_of_week"][WED_00H] == {"day": "Wed", "hour": 0, "tpm": round(4150 / 300, 3)}
    assert len(doc["hour_of_week"]) == 168

    r = runner.invoke(app, ["workload", "--period", "2025-10", "--pool", "p1", "--csv", "--ramp-minutes", "1"])
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    got = {(x["figure"], x["statistic"]): x["value"] for x in rows}
    assert got[("tpm", "max")] == "1200.0" and got[("bursts", "count")] == "5"
    assert got[("ramp", "largest_rise_1min")] == "1000.0" and got[("cache_hit", "cached/input")] == "0.45"
    assert got[("hour_of_week", "Wed 00h")] == str(round(4150 / 300, 3))
    assert {x["pool"] for x in rows} == {"p1"} and len(rows) == len(got)

    r = runner.invoke(app, ["workload", "--period", "2025-10", "--pool", "p1"], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "1,200.0" in r.stdout and "45.0%" in r.stdout and "10 requests (2 not ok" in r.stdout


@pytest.mark.store
def test_the_dashboard_page_shows_the_cli_numbers(trace, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from ledger import store

    monkeypatch.delenv("LEDGER_DASHBOARD_LOCALE", raising=False)
    doc = json.loads(runner.invoke(app, ["workload", "--period", "2025-10", "--pool", "p1", "--json"]).stdout)
    at = AppTest.from_file(str(ROOT / "dashboards" / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/workload.py")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    # months with requests, newest first: r13 makes November 2025 the first
    assert at.selectbox(key="wl_period").options == ["2025-11", "2025-10", "2025-09"]
    at.selectbox(key="wl_period").set_value("2025-10").run()
    assert at.selectbox(key="wl_pool").options == ["(all)", "p1", "p2", "p3"]
    at.selectbox(key="wl_pool").set_value("p1").run()
    assert not at.exception, [e.message for e in at.exception]
    tiles = {m.label: m.value for m in at.get_by_key("wl_tiles").metric}
    # 1,200 / (4,150 / 44,640) = 12,907.9518...
    assert tiles["TPM max"] == "1,200.0" and tiles["TPM p99"] == "0.0" and tiles["Peak to average"] == "12,907.95"
    assert doc["peak_to_average"] == 12907.9518
    shape = {m.label: m.value for m in at.get_by_key("wl_shape").metric}
    assert (shape["Bursts above p95"], shape["Longest burst (minutes)"], shape["Cache hit"]) == ("5", "3", "45.0%")
    assert shape["Largest rise over 10 min (TPM)"] == "1,200.0"
    lengths = at.get_by_key("wl_lengths").dataframe[0].value
    from ledger.formats import number  # grouped as every table (issue 28): the JSON keeps the figure itself

    assert list(lengths["p95"]) == [number(doc["input_tokens"]["p95"], 1), number(doc["output_tokens"]["p95"], 1)]
    assert len(at.get_by_key("wl_figures").dataframe[0].value) == len(
        runner.invoke(app, ["workload", "--period", "2025-10", "--pool", "p1", "--csv"]).stdout.splitlines()) - 1
    store.dispose_engines()


@pytest.mark.store
def test_the_dashboard_page_on_an_empty_ledger_says_how_to_load_data(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("LEDGER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    at = AppTest.from_file(str(ROOT / "dashboards" / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/workload.py")
    at.run()
    assert not at.exception and "ledger demo" in at.info[0].value
    assert not (tmp_path / "home").exists()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=60))
def test_percentiles_from_a_histogram_are_duckdbs_quantile_cont_of_the_values(values):
    import duckdb

    from ledger.workload.compute import _percentiles

    con = duckdb.connect()
    con.execute("CREATE TABLE x (v BIGINT)")
    con.executemany("INSERT INTO x VALUES (?)", [(v,) for v in values])
    con.execute("CREATE TABLE hist AS SELECT v, count(*) AS c FROM x GROUP BY v")
    got = _percentiles(con, "hist")
    want = con.execute("SELECT quantile_cont(v, [0.5, 0.95, 0.99]), max(v), avg(v) FROM x").fetchone()
    assert [got.p50, got.p95, got.p99] == pytest.approx(want[0], rel=1e-12, abs=1e-9)
    assert (got.max, got.mean) == (want[1], pytest.approx(want[2]))
