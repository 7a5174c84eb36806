"""`ledger demo`: deterministic inputs from the shipped Azure trace, an end-to-end run whose numbers
conserve, hand-checkable totals, and the refusal to touch a ledger that already holds data."""
from __future__ import annotations

import json
from decimal import Decimal as D

import duckdb
import pytest
from typer.testing import CliRunner

from ledger import demo, store
from ledger.allocate import CATEGORIES
from ledger.cli import app
from ledger.money import quantize

pytestmark = pytest.mark.store
runner = CliRunner()


def csv_rows(path) -> int:
    """Data rows of a CSV file without quoted newlines (the demo's never have any)."""
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b"")) - 1


@pytest.mark.slow
def test_the_inputs_are_the_same_files_every_time(tmp_path):
    a = demo.build_inputs(tmp_path / "a")
    b = demo.build_inputs(tmp_path / "b")
    assert a.digest == b.digest
    assert a.rows == b.rows
    for kind in demo.KINDS:
        assert a.paths[kind].read_bytes() == b.paths[kind].read_bytes(), kind
        assert csv_rows(a.paths[kind]) == a.rows[kind], kind
    con = duckdb.connect()
    req = str(a.paths["requests"])
    n, ids, first, last = con.execute(
        "SELECT count(*), count(DISTINCT request_id), min(occurred_at), max(occurred_at) "
        f"FROM read_csv('{req}', all_varchar=true)").fetchone()
    assert n == ids == a.rows["requests"] and 900_000 < n < 1_600_000  # August to October
    assert first.startswith("2026-08-01T") and last.startswith("2026-10-31T") and last.endswith("Z")
    # hooli is first seen in September; every task id and fleet interval id is unique over the months
    firsts = dict(con.execute(f"SELECT tenant, min(occurred_at) FROM read_csv('{req}', all_varchar=true) "
                              "GROUP BY ALL").fetchall())
    assert firsts["hooli"].startswith("2026-09-01T") and all(v.startswith("2026-08-01T") for t, v in firsts.items()
                                                            if t != "hooli")
    out = str(a.paths["outcomes"])
    assert con.execute(f"SELECT count(*) = count(DISTINCT task_id) FROM read_csv('{out}')").fetchone() == (True,)
    # an outcome of August or September is decided in its own month (none falls into October)
    assert con.execute(f"SELECT count(*) FROM read_csv('{out}', all_varchar=true) WHERE task_id LIKE '%-2026-09-%' "
                       "AND decided_at >= '2026-10'").fetchone() == (0,)
    # the code trace (mean 2,048 in / 28 out) is code-assist; the conversation trace (1,155 / 211) the rest
    means = {p: (round(i), round(o)) for p, i, o in con.execute(
        f"SELECT product, avg(input_tokens), avg(output_tokens) FROM read_csv('{req}') GROUP BY ALL").fetchall()}
    assert 1900 < means["code-assist"][0] < 2200 and means["code-assist"][1] < 40
    assert all(1050 < means[p][0] < 1250 and 190 < means[p][1] < 230 for p in ("chat", "search", "agent"))
    # tenants have different mixes of products
    mix = {t: set(ps.split(",")) for t, ps in con.execute(
        f"SELECT tenant, string_agg(DISTINCT product, ',' ORDER BY product) FROM read_csv('{req}') GROUP BY ALL"
    ).fetchall()}
    every = {"agent", "chat", "code-assist", "search"}
    assert mix == {"acme": every, "globex": every, "hooli": {"agent", "chat"}, "initech": {"chat", "code-assist"},
                   "umbrella": {"chat", "search"}}


def test_the_pool_capacities_are_the_sizing_engines_and_the_measured_figures(shared_data):
    from ledger.sizing.engine import size_pool
    from ledger.sizing.loaders import parse_csv

    curves = parse_csv((shared_data / "curves" / "published_curves.csv").read_text(encoding="utf-8"),
                       source="published_curves.csv")
    llama70 = next(c for c in curves if c.context.model == "Llama-3.3-70B-Instruct")
    row = size_pool(llama70, tpm=60_000, sla=70, gpus_per_replica=4, isl=1024, osl=1024)
    # c* = 7.8 (73.32 tok/s/user), 537.4 output tok/s per replica: 537.4 x 2048 / 1024 / 4 = 268.7
    assert (row.c_star, row.replica_output_tok_s) == (7.8, 537.4)
    assert D(demo.POOLS["h200-code"].capacity) == D(str(round(row.capacity_tokens_per_gpu_s, 1))) == D("268.7")
    run = json.loads((shared_data / "loadtest" / "vllm_benchmark_serving_lambdalabs_llama31_8b_fp8_1xH100.json")
                     .read_text(encoding="utf-8"))
    # (1,369 + 442) tokens / 1.0679 s on one H100 = 1,695.8 active tokens per GPU-second
    measured = (run["total_input_tokens"] + run["total_output_tokens"]) / run["duration"]
    assert D(demo.POOLS["h100-chat"].capacity) == D(str(round(measured, 1))) == D("1695.8")


#: October's run total, the same since the demo was one month (the months before changed nothing in it).
OCTOBER_TOTAL = D("54486.225218")


@pytest.mark.slow
def test_demo_runs_end_to_end_and_its_numbers_conserve(ledger_home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["demo", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    run = doc["run"]

    # conservation, as Decimals: the lines add up to the total, and so do kinds and categories
    total = D(run["total"])
    assert doc["conserved"] is True and D(run["lines_total"]) == total
    assert sum(map(D, run["by_kind"].values())) == total == sum(map(D, run["by_category"].values()))

    # every category the issue lists, idle slack and reserve, unallocated, failed work: all there
    assert all(D(run["by_category"][c]) > 0 for c in CATEGORIES), run["by_category"]
    assert all(D(run["by_kind"][k]) > 0 for k in ("tenant", "idle_slack", "idle_reserve", "unallocated"))
    assert 0 < D(run["failed_work"]) < D(run["by_kind"]["tenant"])
    assert run["period"] == {"start": "2026-10-01T00:00:00Z", "end": "2026-11-01T00:00:00Z"}
    assert run["currency"] == "USD" and "aws@2026-11-09" in run["price_books"]
    assert total == OCTOBER_TOTAL
    assert run["success_criteria"] == ["tests-pass", "user-accepted"]

    # what was built is what was ingested, and what the run counts
    assert doc["home"] == "home" and doc["dashboard"] == "ledger dashboard"
    for kind in demo.KINDS:
        assert doc["ingested"][kind] == doc["inputs"][kind]["rows"] == csv_rows(ledger_home / "demo" / f"{kind}.csv")
    tenants = {t["tenant"]: t for t in run["tenants"]}
    req = ledger_home / "demo" / "requests.csv"
    october = duckdb.connect().execute(f"SELECT count(*) FROM read_csv('{req}', all_varchar=true) "
                                       "WHERE occurred_at >= '2026-10'").fetchone()[0]
    assert sum(t["requests"] for t in tenants.values()) == october < doc["inputs"]["requests"]["rows"]

    # GPU, worked from the fleet file: H100 at 6.88 on-demand, H200 at 7.912 (aws@2026-11-09)
    #   h100-chat: serving 744 h + 3 re-index windows x 3 h = 753 GPU-h; failure reserve 744 GPU-h
    #   h200-code: serving 4 x 744 = 2,976 GPU-h; canary 4 x 72 = 288 GPU-h
    #   (753 + 744) x 6.88 + (2,976 + 288) x 7.912 = 10,299.36 + 25,824.768 = 36,124.128
    assert D(run["by_category"]["gpu"]) == D("36124.128")
    #   idle reserve = 744 x 6.88 + 288 x 7.912 = 5,118.72 + 2,278.656 = 7,397.376
    assert D(run["by_kind"]["idle_reserve"]) == D("7397.376")
    # the Q4 audit (15,000.00, rule none) falls 31 of its 92 days in October: 5,054.347826 unallocated
    assert D(run["by_kind"]["unallocated"]) == quantize(D(15000) * 31 / 92) == D("5054.347826")
    # initech's only tool cost is its licence (rule tenant:initech): it has no agent, so no tool calls
    assert D(tenants["initech"]["by_category"]["tool"]) == D("1500.00")
    # the re-index of 2026-10-25 ran without its pre-scaled GPU: the one hour over capacity
    assert run["flags"] == [{"kind": "over_capacity", "pool": "h100-chat", "hour": "2026-10-25T14:00:00Z"}]
    # different mixes: provider tokens only where the agent product runs; GPU for all but hooli's agent
    assert {t for t, x in tenants.items() if D(x["by_category"]["provider_tokens"]) > 0} == {"acme", "globex", "hooli"}
    for name, t in tenants.items():
        assert t["tasks"]["success"] > 0 and t["cost_per_successful_task"] is not None, name
        assert D(t["cost_per_successful_task"]) == quantize(D(t["cost"]) / t["tasks"]["success"])

    # the pre-flight of the facts against the books finds nothing on the demo month (docs/check.md)
    r = runner.invoke(app, ["check", "--period", "2026-10"])
    assert r.exit_code == 0 and r.stdout.startswith("no problems: "), r.output

    # three months, one run each, October the newest; the trend reads them, July has none
    r = runner.invoke(app, ["runs", "--json"])
    assert [x["period"]["start"][:7] for x in json.loads(r.stdout)] == ["2026-10", "2026-09", "2026-08"]
    r = runner.invoke(app, ["report", "trend", "--from", "2026-07", "--to", "2026-10", "--json"])
    assert r.exit_code == 0, r.output
    months = json.loads(r.stdout)["months"]
    assert [(m["month"], m["status"]) for m in months] == [("2026-07", "no run"), ("2026-08", "run"),
                                                           ("2026-09", "run"), ("2026-10", "run")]
    assert D(months[-1]["total"]) == OCTOBER_TOTAL and months[-1]["run_id"] == run["run_id"]
    for m in months[1:]:  # every month's figures are its unit-economics report's, and conserve
        ue = json.loads(runner.invoke(app, ["report", "unit-economics", "--period", m["month"], "--json"]).stdout)
        assert m["total"] == ue["run_total"] and m["cost_per_successful_task_all_in"] == \
            ue["cost_per_successful_task_all_in"]
        assert {x["tenant"]: x["cost"] for x in m["rows"]} == {x["tenant"]: x["cost"] for x in ue["rows"]}
        assert sum(D(x["cost"]) for x in m["rows"]) + sum(map(D, ue["unattributed"].values())) == D(m["total"])
    aug, sep = months[1], months[2]
    assert "hooli" not in {x["tenant"] for x in aug["rows"]}  # the new tenant, first seen in September
    hooli = next(x for x in sep["rows"] if x["tenant"] == "hooli")
    assert hooli["change"]["cost"] == {"amount": None, "ratio": None, "reason": "not in the month before's run"}
    # the openai account's August rate (1.50 / 0.15 / 12 per 1M) gave way to the list price (1.25 / 0.125 / 10)
    # on 2026-09-01: acme's gpt-5 tokens cost 20% more per token in August
    def per_token(m):
        ue = json.loads(runner.invoke(app, ["report", "unit-economics", "--period", m, "--by", "model",
                                            "--json"]).stdout)
        gpt = next(x for x in ue["rows"] if x["model"] == "gpt-5")
        return D(gpt["provider_tokens_cost"]) / gpt["active_tokens"]
    assert per_token("2026-08") > per_token("2026-09") * D("1.15")


def test_demo_refuses_a_home_with_data_and_force_wipes_only_the_ledger(tmp_path, monkeypatch):
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)  # the ledger DB in the home (SQLite)
    monkeypatch.setenv("LEDGER_HOME", str(tmp_path / "mine"))  # the home the other commands use
    monkeypatch.chdir(tmp_path)
    try:
        assert runner.invoke(app, ["init"]).exit_code == 0
        assert runner.invoke(app, ["dims", "add", "tenant", "zeta"]).exit_code == 0
        (tmp_path / "mine" / "notes.txt").write_text("not the ledger's", encoding="utf-8")

        r = runner.invoke(app, ["demo", "--home", "mine"])
        assert r.exit_code == 1
        msg = " ".join(r.output.split())
        assert "the ledger home mine already holds data (table tenant has rows)" in msg and "--force" in msg
        with store.session() as s:
            assert store.dim_names(s, kind="tenant") == {"zeta"}  # untouched

        r = runner.invoke(app, ["demo", "--home", "mine", "--force", "--json"])
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert doc["home"] == "mine" and doc["dashboard"] == "LEDGER_HOME=mine ledger dashboard"
        assert D(doc["run"]["lines_total"]) == D(doc["run"]["total"])
        assert (tmp_path / "mine" / "notes.txt").read_text(encoding="utf-8") == "not the ledger's"
        with store.session() as s:
            assert store.dim_names(s, kind="tenant") == set(demo.TENANT_NAMES)  # zeta went with the wipe
    finally:
        store.dispose_engines()


def test_force_never_wipes_a_database_outside_the_home(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'team.db'}"
    monkeypatch.setenv("LEDGER_DATABASE_URL", url)
    monkeypatch.setenv("LEDGER_HOME", str(tmp_path / "home"))
    try:
        store.init_store(url)
        with store.session() as s:
            store.add_dim(s, kind="product", name="chat")
        r = runner.invoke(app, ["demo", "--force"])
        assert r.exit_code == 1
        assert "does not wipe it" in " ".join(r.output.split())
        with store.session() as s:
            assert store.dim_names(s, kind="product") == {"chat"}
        assert (tmp_path / "team.db").exists()
    finally:
        store.dispose_engines()
