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
def test_the_inputs_are_the_same_files_every_time(demo_run, tmp_path):
    # two builds: the one `ledger demo` made in its home (this module's run) and one of their own here
    _env, home, r = demo_run
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    b = demo.build_inputs(tmp_path / "b")
    a = demo.DemoInputs(home / "demo", {k: home / "demo" / f"{k}.csv" for k in demo.KINDS},
                        {k: doc["inputs"][k]["rows"] for k in demo.KINDS}, doc["inputs_sha256"])
    assert a.digest == b.digest
    assert a.rows == b.rows
    for kind in demo.KINDS:
        assert a.paths[kind].read_bytes() == b.paths[kind].read_bytes(), kind
        assert csv_rows(a.paths[kind]) == a.rows[kind], kind
    con = duckdb.connect()
    req = str(a.paths["requests"])
    # the requests file read once (as text), for the questions below
    con.execute("CREATE TABLE req AS SELECT request_id, occurred_at, tenant, product, input_tokens, output_tokens "
                f"FROM read_csv('{req}', all_varchar=true)")
    n, ids, first, last = con.execute(
        "SELECT count(*), count(DISTINCT request_id), min(occurred_at), max(occurred_at) FROM req").fetchone()
    assert n == ids == a.rows["requests"] and 900_000 < n < 1_600_000  # August to October
    assert first.startswith("2026-08-01T") and last.startswith("2026-10-31T") and last.endswith("Z")
    # hooli is first seen in September; every task id and fleet interval id is unique over the months
    firsts = dict(con.execute("SELECT tenant, min(occurred_at) FROM req GROUP BY ALL").fetchall())
    assert firsts["hooli"].startswith("2026-09-01T") and all(v.startswith("2026-08-01T") for t, v in firsts.items()
                                                            if t != "hooli")
    out = str(a.paths["outcomes"])
    assert con.execute(f"SELECT count(*) = count(DISTINCT task_id) FROM read_csv('{out}')").fetchone() == (True,)
    # an outcome of August or September is decided in its own month (none falls into October)
    assert con.execute(f"SELECT count(*) FROM read_csv('{out}', all_varchar=true) WHERE task_id LIKE '%-2026-09-%' "
                       "AND decided_at >= '2026-10'").fetchone() == (0,)
    # the code trace (mean 2,048 in / 28 out) is code-assist; the conversation trace (1,155 / 211) the rest
    means = {p: (round(i), round(o)) for p, i, o in con.execute(
        "SELECT product, avg(input_tokens::DOUBLE), avg(output_tokens::DOUBLE) FROM req GROUP BY ALL").fetchall()}
    assert 1900 < means["code-assist"][0] < 2200 and means["code-assist"][1] < 40
    assert all(1050 < means[p][0] < 1250 and 190 < means[p][1] < 230 for p in ("chat", "search", "agent"))
    # tenants have different mixes of products
    mix = {t: set(ps.split(",")) for t, ps in con.execute(
        "SELECT tenant, string_agg(DISTINCT product, ',' ORDER BY product) FROM req GROUP BY ALL"
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


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """`ledger demo --json` run once for this module as a user runs it: from the folder that holds
    the ledger home `home`, which the environment names (LEDGER_HOME), fresh and migrated (a SQLite
    DB in the home, or a schema of its own on PostgreSQL, as `ledger_home` makes one). Returns (the
    environment, the home, the CliResult); the module's two slow tests read it, neither changes it.

    On SQLite that run is the one that built the session's demo (tests/conftest.py's `demo_template`:
    the same command, in a home made the same way), and `home` is a copy of it; on PostgreSQL it runs
    here, in a schema of its own."""
    from conftest import copy_demo, demo_command, fresh_db_url

    tmp = tmp_path_factory.mktemp("demo-run")
    home = tmp / "home"
    home.mkdir()
    with fresh_db_url(home) as url:  # SQLite: the ledger DB in the home, where the demo looks for it
        env = {"LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": None if url.startswith("sqlite") else url}
        if url.startswith("sqlite"):
            copy_demo(tmp_path_factory, home)
            yield env, home, demo_command(tmp_path_factory)
            return
        store.init_store(url)
        with pytest.MonkeyPatch.context() as mp:
            for name, value in env.items():
                mp.delenv(name, raising=False) if value is None else mp.setenv(name, value)
            mp.chdir(tmp)
            r = runner.invoke(app, ["demo", "--json"])
        store.dispose_engines()
        yield env, home, r


@pytest.mark.slow
def test_demo_runs_end_to_end_and_its_numbers_conserve(demo_run, monkeypatch):
    env, ledger_home, r = demo_run
    for name, value in env.items():  # the commands below read the demo's ledger
        monkeypatch.delenv(name, raising=False) if value is None else monkeypatch.setenv(name, value)
    monkeypatch.chdir(ledger_home.parent)
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


# ---- a ledger home with data, refused, then wiped with --force ------------------------------------
# One `ledger demo --force` run (the whole demo, rebuilt after the wipe) serves both tests below: a
# ledger home (`init`, a tenant of its own) that also holds files the ledger did not write (a note,
# a workbook in reports/, a file of the user's in demo/, and, at first, a foreign file among the
# facts), refused while the foreign fact file is there (--force included), refused without --force
# once it is gone, then wiped and rebuilt with --force. Each step's result is kept for the tests.

@pytest.fixture(scope="module")
def forced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo-force")
    home = tmp / "mine"
    steps: dict = {"home": home}
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("LEDGER_DATABASE_URL", raising=False)  # the ledger DB in the home (SQLite)
        mp.setenv("LEDGER_HOME", str(home))  # the home the other commands use
        mp.chdir(tmp)
        try:
            steps["init"] = runner.invoke(app, ["init"])
            steps["dims_add"] = runner.invoke(app, ["dims", "add", "tenant", "zeta"])
            (home / "notes.txt").write_text("not the ledger's", encoding="utf-8")
            (home / "reports").mkdir()
            (home / "reports" / "q3.xlsx").write_bytes(b"my workbook")
            (home / "demo").mkdir()
            (home / "demo" / "mine.txt").write_text("kept\n", encoding="utf-8")
            (home / "facts" / "requests").mkdir(parents=True)
            (home / "facts" / "requests" / "note.txt").write_text("not a fact\n", encoding="utf-8")
            # a foreign file among the facts: not a home the demo may wipe
            steps["foreign_fact"] = runner.invoke(app, ["demo", "--home", "mine", "--force"])
            (home / "facts" / "requests" / "note.txt").unlink()

            steps["refused"] = runner.invoke(app, ["demo", "--home", "mine"])
            with store.session() as s:
                steps["tenants_after_refusal"] = store.dim_names(s, kind="tenant")

            steps["forced"] = runner.invoke(app, ["demo", "--home", "mine", "--force", "--json"])
            with store.session() as s:
                steps["tenants_after_force"] = store.dim_names(s, kind="tenant")
        finally:
            store.dispose_engines()
    return steps


def test_demo_refuses_a_home_with_data_and_force_wipes_only_the_ledger(forced):
    assert forced["init"].exit_code == 0 and forced["dims_add"].exit_code == 0
    r = forced["refused"]
    assert r.exit_code == 1
    msg = " ".join(r.output.split())
    assert "the ledger home mine already holds data (table tenant has rows)" in msg and "--force" in msg
    assert forced["tenants_after_refusal"] == {"zeta"}  # untouched

    r = forced["forced"]
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["home"] == "mine" and doc["dashboard"] == "LEDGER_HOME=mine ledger dashboard"
    assert D(doc["run"]["lines_total"]) == D(doc["run"]["total"])
    assert (forced["home"] / "notes.txt").read_text(encoding="utf-8") == "not the ledger's"
    assert forced["tenants_after_force"] == set(demo.TENANT_NAMES)  # zeta went with the wipe


def test_demo_force_in_a_ledger_home_deletes_only_the_ledgers_own_entries(forced):
    """(From test_hostile_outputs.py, where `ledger demo --force` meets folders that are not a ledger
    home: it shares this module's --force run.)"""
    assert forced["init"].exit_code == 0 and forced["dims_add"].exit_code == 0
    r = forced["foreign_fact"]
    assert r.exit_code == 1 and "requests/note.txt" in r.stderr

    assert forced["forced"].exit_code == 0, forced["forced"].output
    home = forced["home"]
    assert (home / "reports" / "q3.xlsx").read_bytes() == b"my workbook"
    assert (home / "demo" / "mine.txt").read_text(encoding="utf-8") == "kept\n"
    assert "zeta" not in forced["tenants_after_force"]  # the ledger's own DB was wiped and rebuilt


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
