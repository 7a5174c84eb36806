"""The facts' Hive-style layout (docs/facts.md): month partitions written by ingest, read by DuckDB
through the partitions, period pruning equal to no pruning, undo in every month, the migration of a
flat (layout 1) home, crash-safe and idempotent, and the doc's column tables against ledger.facts.KINDS.

Runs on SQLite, and on PostgreSQL when LEDGER_TEST_DATABASE_URL is set.
"""
from __future__ import annotations

import re
import textwrap
from collections import defaultdict
from datetime import datetime, timezone
from decimal import Decimal as D
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from ledger import config, facts, facts_layout, store
from ledger.allocate import allocate
from ledger.cli import app
from ledger.ingest import ingest
from ledger.pricebook import PriceIndex
from test_allocate_support import TEST_BOOK

pytestmark = pytest.mark.store
runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
UTC = timezone.utc

REQ = "request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,cached_input_tokens," \
      "output_tokens,status"

# A home with rows in September, October and November 2026 (test book prices: H100 3.60 an hour,
# gpt-5 input 1.25 and output 10 per 1M tokens).
FILES = {
    # s1 crosses from September into October (filed under September, its start); s2 is in November.
    # capacity 1 token per GPU-second: K = 3,600 tokens an hour
    "fleet": """
        interval_id,pool,start,end,device,gpus,region,purchase_option,role,capacity_tokens_per_gpu_s
        s1,p1,2026-09-30T23:00:00Z,2026-10-01T01:00:00Z,H100,1,us-east-1,on_demand,serving,1
        s2,p1,2026-11-01T10:00:00Z,2026-11-01T12:00:00Z,H100,1,us-east-1,on_demand,serving,1
    """,
    "requests": f"""
        {REQ}
        q1,2026-09-30T23:30:00Z,a,chat,llama,p1,,t1,1000,0,200,ok
        q2,2026-10-01T00:10:00Z,a,chat,llama,p1,,t2,1000,0,200,ok
        q3,2026-10-01T00:20:00Z,b,chat,llama,p1,,t3,500,0,100,ok
        q4,2026-10-15T12:00:00Z,a,chat,gpt-5,,openai,t2,100000,0,1000,ok
        q5,2026-11-01T10:30:00Z,b,chat,llama,p1,,t4,1000,0,0,ok
    """,
    "outcomes": """
        task_id,tenant,product,outcome,decided_at,criteria
        t1,a,chat,success,2026-09-30T23:59:00Z,tests-pass
        t2,a,chat,failure,2026-10-02T00:00:00Z,tests-pass
        t3,b,chat,success,2026-10-03T00:00:00Z,tests-pass
        t3,b,chat,failure,2026-11-05T00:00:00Z,tests-pass
    """,
    # 300.00 over 2026-09-15 to 2026-10-15 (30 days): 160.00 in September, 140.00 in October
    "charges": """
        charge_id,period_start,period_end,category,description,amount,currency,allocate
        c1,2026-09-15T00:00:00Z,2026-10-15T00:00:00Z,observability,Grafana,300.00,USD,even
    """,
}
# After October is closed: t3 failed on 2026-10-20, ingested as an adjustment into December.
LATE_OUTCOME = "task_id,tenant,product,outcome,decided_at,criteria\nt3,b,chat,failure,2026-10-20T00:00:00Z,tests-pass\n"

OCT = (datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC))
PERIODS = [(datetime(2026, 9, 1, tzinfo=UTC), datetime(2026, 10, 1, tzinfo=UTC)), OCT,
           (datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)),
           (datetime(2026, 9, 30, 23, tzinfo=UTC), datetime(2026, 11, 1, 11, tzinfo=UTC))]


def cli(*args: str) -> str:
    r = runner.invoke(app, list(args))
    assert r.exit_code == 0, (args, r.output)
    return r.stdout


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).strip() + "\n", encoding="utf-8")
    return path


def files_of(home: Path, kind: str) -> list[str]:
    """The kind's fact files, relative to its folder."""
    d = home / "facts" / kind
    return sorted(str(p.relative_to(d)) for p in d.rglob("*.parquet"))


def ids(con, sql: str) -> list[str]:
    return [r[0] for r in con.execute(sql).fetchall()]


def allocation(start: datetime, end: datetime, *, period: bool):
    """The engine's allocation of [start, end) over the committed facts, with or without period pruning."""
    with store.session() as s:
        committed = facts.committed_batches(s)
        index = PriceIndex(store.books_from_store(s))
    con = facts.connect(committed, config.ledger_home(), period=(start, end) if period else None)
    try:
        return allocate(con, start=start, end=end, prices=index)
    finally:
        con.close()


def same(a, b) -> bool:
    return (a.total, a.lines, a.flags, a.usage, a.tasks, a.regions, a.notes) == \
        (b.total, b.lines, b.flags, b.usage, b.tasks, b.regions, b.notes)


@pytest.fixture
def months(ledger_home, tmp_path, monkeypatch):
    """The home of FILES, with October closed and the late outcome booked into December."""
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "test.toml").write_text(TEST_BOOK, encoding="utf-8")
    cli("pricebook", "load", str(tmp_path / "books"))
    for kind in ("fleet", "requests", "outcomes", "charges"):
        cli("ingest", kind, str(write(tmp_path / f"{kind}.csv", FILES[kind])), "--register-new")
    with store.session() as s:
        store.close_period(s, name="2026-10")
    monkeypatch.setattr(store, "current_open_period", lambda s, now=None: "2026-12")
    res = ingest("outcomes", [write(tmp_path / "late.csv", LATE_OUTCOME)], as_adjustment=True)
    assert res.booked_period == "2026-12" and res.rows_new == 1
    return ledger_home


# ---- ingest writes month partitions --------------------------------------------------------------

def test_ingest_writes_one_file_per_month_a_batch_has_rows_in(ledger_home, tmp_path):
    a = write(tmp_path / "a.csv", f"""
        {REQ}
        q1,2026-09-30T23:30:00Z,a,chat,m,p1,,t1,10,0,5,ok
        q2,2026-10-01T00:10:00Z,a,chat,m,p1,,t1,10,0,5,ok
        q3,2026-10-01T04:20:00+05:00,a,chat,m,p1,,t1,10,0,5,ok
    """)  # q3 is 2026-09-30T23:20Z: September in UTC
    b = write(tmp_path / "b.csv", f"{REQ}\nq4,2026-09-02T00:00:00Z,a,chat,m,p1,,t1,10,0,5,ok\n")
    first = ingest("requests", [a, b], register_new=True).batch_id
    # a batch of two files spanning two months: file 0 in both months, file 1 in September only
    assert files_of(ledger_home, "requests") == [f"month=2026-09/{first}-0.parquet", f"month=2026-09/{first}-1.parquet",
                                                 f"month=2026-10/{first}-0.parquet"]
    con = duckdb.connect()
    d = ledger_home / "facts" / "requests"
    assert ids(con, f"SELECT request_id FROM '{d}/month=2026-09/{first}-0.parquet' ORDER BY 1") == ["q1", "q3"]
    assert ids(con, f"SELECT request_id FROM '{d}/month=2026-10/{first}-0.parquet' ORDER BY 1") == ["q2"]
    # the month is the folder's name, never a column of the file
    assert "month" not in ids(con, f"SELECT name FROM parquet_schema('{d}/month=2026-10/{first}-0.parquet')")
    assert not list(d.glob("*.parquet"))  # nothing flat
    # a batch with a duplicate (q2) and a new row in November: only the new row, filed under November
    c = write(tmp_path / "c.csv", f"""
        {REQ}
        q2,2026-10-01T00:10:00Z,a,chat,m,p1,,t1,10,0,5,ok
        q5,2026-11-03T00:00:00Z,a,chat,m,p1,,t1,10,0,5,ok
    """)
    res = ingest("requests", [c])
    assert (res.rows_new, res.rows_duplicate) == (1, 1)
    assert f"month=2026-11/{res.batch_id}-0.parquet" in files_of(ledger_home, "requests")
    assert not any(f.startswith("month=2026-10/" + res.batch_id) for f in files_of(ledger_home, "requests"))
    with store.session() as s:
        assert ids(facts.open_ledger_facts(s, config.ledger_home()), "SELECT request_id FROM requests ORDER BY 1") == \
            ["q1", "q2", "q3", "q4", "q5"]
        assert facts.batch_files("requests", first, config.ledger_home()) == [d / f"month=2026-09/{first}-0.parquet",
                                                        d / f"month=2026-09/{first}-1.parquet",
                                                        d / f"month=2026-10/{first}-0.parquet"]
    assert facts_layout.layout_version(ledger_home) == 2


def test_duckdb_reads_one_month_through_the_partitions(ledger_home, tmp_path):
    f = write(tmp_path / "r.csv", f"""
        {REQ}
        q1,2026-09-30T23:30:00Z,a,chat,m,p1,,t1,10,0,5,ok
        q2,2026-10-01T00:10:00Z,a,chat,m,p1,,t1,10,0,5,ok
        q3,2026-10-31T23:59:59Z,a,chat,m,p1,,t1,10,0,5,ok
        q4,2026-11-01T00:00:00Z,a,chat,m,p1,,t1,10,0,5,ok
    """)
    batch = ingest("requests", [f], register_new=True).batch_id
    glob = f"{ledger_home}/facts/requests/*/*.parquet"
    query = (f"SELECT request_id, month, regexp_extract(filename, '([^/]+)-[^-/]+\\.parquet$', 1) AS batch "
             f"FROM read_parquet('{glob}', hive_partitioning = true, filename = true) "
             "WHERE month = '2026-10' ORDER BY 1")
    con = duckdb.connect()
    assert con.execute(query).fetchall() == [("q2", "2026-10", batch), ("q3", "2026-10", batch)]
    # DuckDB does not even open November's file: made unreadable, the query still runs (it reads its
    # schema from the first file, September's, which must stay readable)
    (ledger_home / "facts" / "requests" / "month=2026-11" / f"{batch}-0.parquet").write_bytes(b"not parquet")
    assert con.execute(query).fetchall() == [("q2", "2026-10", batch), ("q3", "2026-10", batch)]
    with pytest.raises(duckdb.Error):
        con.execute(f"SELECT count(*) FROM read_parquet('{glob}', hive_partitioning = true)").fetchall()


# ---- period pruning --------------------------------------------------------------------------------

def test_period_pruning_gives_the_allocation_of_every_month(months):
    for start, end in PERIODS:
        assert same(allocation(start, end, period=True), allocation(start, end, period=False)), (start, end)
    oct_ = allocation(*OCT, period=True)
    # GPU: s1's October hour 3.60 (q2 1,200 and q3 600 of K = 3,600 tokens: 1.20 and 0.60, slack 1.80);
    # provider q4: 100,000 × 1.25/1M + 1,000 × 10/1M = 0.135; charge c1: 300.00 × 14/30 = 140.00
    assert oct_.total == D("143.735000")
    # failed work: t2 failed (q2 1.20, q4 0.135), and t3's latest decision before November is the late
    # failure of 2026-10-20, filed under December: q3 0.60
    failed = sum((ln.amount for ln in oct_.lines if ln.work == "failed"), D(0))
    assert failed == D("1.935000")
    with store.session() as s:
        committed = facts.committed_batches(s)
    home = config.ledger_home()
    pruned, full = facts.connect(committed, home, period=OCT), facts.connect(committed, home)
    # the pruned views read October's requests only, and of the outcomes every month up to October
    # and, after it, only what was decided before November (the late failure, not t3's of 2026-11-05)
    assert ids(pruned, "SELECT request_id FROM requests ORDER BY 1") == ["q2", "q3", "q4"]
    assert ids(full, "SELECT request_id FROM requests ORDER BY 1") == ["q1", "q2", "q3", "q4", "q5"]
    assert pruned.execute("SELECT task_id, outcome, decided_at::VARCHAR FROM outcomes ORDER BY decided_at"
                          ).fetchall() == [
        ("t1", "success", "2026-09-30 23:59:00+00"), ("t2", "failure", "2026-10-02 00:00:00+00"),
        ("t3", "success", "2026-10-03 00:00:00+00"), ("t3", "failure", "2026-10-20 00:00:00+00")]
    # fleet and charges: every month up to October (s1 and c1 started in September)
    assert ids(pruned, "SELECT interval_id FROM fleet") == ["s1"]
    assert ids(pruned, "SELECT charge_id FROM charges") == ["c1"]
    # allocate through the command: runs.allocate_period opens its facts with the period
    assert '"total": "143.735000"' in cli("allocate", "--period", "2026-10", "--json")


def test_period_months_follow_the_allocations_reads():
    start, end = datetime(2026, 10, 15, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    assert facts.period_months("requests", start, end) == ("2026-10", "2026-11")
    assert facts.period_months("bill", start, end) == ("2026-10", "2026-11")
    assert facts.period_months("fleet", start, end) == (None, "2026-11")
    assert facts.period_months("outcomes", start, end) == (None, "2026-11")
    files = [Path(f"f/requests/month={m}/b-0.parquet") for m in ("2026-09", "2026-10", "2026-11", "2026-12")]
    flat = Path("f/requests/b-1.parquet")
    assert facts.period_files("requests", files + [flat], (start, end)) == (files[1:3] + [flat], [])
    outcomes = [Path(str(f).replace("requests", "outcomes")) for f in files]
    assert facts.period_files("outcomes", outcomes, (start, end)) == (outcomes[:3], outcomes[3:])


def test_the_month_of_an_instant_is_its_utc_month_by_case_and_by_formatting(monkeypatch):
    instants = ["2026-09-30 23:59:59.999999+00", "2026-10-01 00:00:00+00", "2026-10-01 01:00:00+02",
                "2026-10-31 23:59:59+00", "2026-11-01 00:00:00+00", "2026-11-30 22:00:00-05"]
    want = ["2026-09", "2026-10", "2026-09", "2026-10", "2026-11", "2026-12"]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'Asia/Kolkata'")  # the connection's zone does not matter
    con.execute("CREATE TABLE t AS SELECT unnest($1)::TIMESTAMPTZ AS booked_at, generate_subscripts($1, 1) AS i",
                [instants])
    case = facts_layout.month_sql("2026-09", "2026-12")
    assert case.startswith("CASE WHEN booked_at < TIMESTAMPTZ '2026-10-01T00:00:00Z' THEN '2026-09'")
    assert ids(con, f"SELECT {case} FROM t ORDER BY i") == want
    monkeypatch.setattr(facts_layout, "MAX_CASE_MONTHS", 2)  # a write spanning many months formats each row
    assert ids(con, f"SELECT {facts_layout.month_sql('2026-09', '2026-12')} FROM t ORDER BY i") == want
    assert facts_layout.month_sql("2026-10", "2026-10") == "'2026-10'"
    assert facts_layout.months_between("2026-11", "2027-02") == ["2026-11", "2026-12", "2027-01", "2027-02"]


# ---- undo ----------------------------------------------------------------------------------------

def test_undo_removes_the_batch_in_every_month(ledger_home, tmp_path):
    f = write(tmp_path / "r.csv", f"""
        {REQ}
        q1,2026-09-30T23:30:00Z,a,chat,m,p1,,t1,10,0,5,ok
        q2,2026-10-01T00:10:00Z,a,chat,m,p1,,t1,10,0,5,ok
    """)
    keep = ingest("requests", [write(tmp_path / "k.csv", f"{REQ}\nk1,2026-10-02T00:00:00Z,a,chat,m,p1,,t1,1,0,1,ok\n")],
                  register_new=True).batch_id
    gone = ingest("requests", [f]).batch_id
    assert files_of(ledger_home, "requests") == sorted([f"month=2026-09/{gone}-0.parquet",
                                                        f"month=2026-10/{gone}-0.parquet",
                                                        f"month=2026-10/{keep}-0.parquet"])
    cli("batches", "undo", gone)
    assert files_of(ledger_home, "requests") == [f"month=2026-10/{keep}-0.parquet"]
    assert not (ledger_home / "facts" / "requests" / "month=2026-09").exists()  # emptied, removed
    with store.session() as s:
        assert ids(facts.open_ledger_facts(s, config.ledger_home()), "SELECT request_id FROM requests") == ["k1"]


# ---- migration of a flat home --------------------------------------------------------------------

def flatten(home: Path) -> None:
    """Rewrite a home's facts in the flat layout 1, ``<kind>/<batch>-<n>.parquet``, as ledgers were
    written before the month partitions (the files of a staged file n joined again), and drop the marker."""
    con = duckdb.connect()
    for kind in facts.KINDS:
        d = home / "facts" / kind
        groups: dict[str, list[Path]] = defaultdict(list)
        for f in d.glob("month=*/*.parquet"):
            groups[facts.source_stem(f)].append(f)
        for stem, files in groups.items():
            listing = ", ".join(f"'{f}'" for f in files)
            con.execute(f"COPY (SELECT * FROM read_parquet([{listing}], hive_partitioning = false)) "
                        f"TO '{d / stem}.parquet' (FORMAT parquet)")
            for f in files:
                f.unlink()
        for m in d.glob("month=*"):
            m.rmdir()
    (home / "facts" / ".layout").unlink()


def snapshot(home: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(home)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted((home / "facts").rglob("*.parquet")) if "_staging" not in p.parts}


def test_a_flat_home_migrates_to_the_same_allocations_and_twice_changes_nothing(months):
    before = {p: allocation(*p, period=False) for p in PERIODS}
    flatten(months)
    assert facts_layout.layout_version(months) == 1
    flat = sorted(str(p.relative_to(months / "facts")) for p in (months / "facts").glob("*/*.parquet"))
    assert flat and not list((months / "facts").glob("*/month=*"))
    for p, alloc in before.items():  # the readers read a flat home as it is
        assert same(allocation(*p, period=True), alloc)
    cli("init")  # moves the home to the month partitions
    assert facts_layout.layout_version(months) == 2
    assert not list((months / "facts").glob("*/*.parquet"))
    assert files_of(months, "requests") == sorted(f"month={m}/{b}" for m, b in zip(
        ("2026-09", "2026-10", "2026-11"), [flat_name(flat, "requests")] * 3))
    for p, alloc in before.items():
        assert same(allocation(*p, period=True), alloc) and same(allocation(*p, period=False), alloc)
    # idempotent: run again (directly, by init, by an ingest's open), nothing moves
    snap = snapshot(months)
    assert facts_layout.migrate(months) == []
    cli("init")
    assert snapshot(months) == snap


def flat_name(flat: list[str], kind: str) -> str:
    (name,) = [f.split("/", 1)[1] for f in flat if f.startswith(kind + "/")]
    return name


def test_an_ingest_migrates_a_flat_home_first(months, tmp_path):
    flatten(months)
    ingest("requests", [write(tmp_path / "n.csv", f"{REQ}\nq9,2026-11-02T00:00:00Z,a,chat,llama,p1,,t9,1,0,1,ok\n")])
    assert facts_layout.layout_version(months) == 2
    assert not list((months / "facts").glob("*/*.parquet"))
    with store.session() as s:
        assert ids(facts.open_ledger_facts(s, config.ledger_home()), "SELECT request_id FROM requests ORDER BY 1") == \
            ["q1", "q2", "q3", "q4", "q5", "q9"]


def test_a_migration_cut_short_reads_every_row_once_and_finishes_when_run_again(months, monkeypatch):
    before = allocation(*OCT, period=False)
    flatten(months)
    real = facts_layout.fsync_dir
    calls = []

    def crash_after_the_first_month(d: Path) -> None:  # the first month's file is in place, the rest not
        real(d)
        calls.append(d)
        if len(calls) == 1:
            raise OSError("killed")

    monkeypatch.setattr(facts_layout, "fsync_dir", crash_after_the_first_month)
    with pytest.raises(OSError):
        facts_layout.migrate(months)
    monkeypatch.setattr(facts_layout, "fsync_dir", real)
    d = months / "facts" / "requests"
    # requests go first: the flat file, and September's partition file made from it, are both on disk
    assert len(list(d.glob("*.parquet"))) == 1 and [p.parent.name for p in d.glob("month=*/*.parquet")] == \
        ["month=2026-09"]
    assert facts_layout.layout_version(months) == 1
    with store.session() as s:
        con = facts.open_ledger_facts(s, config.ledger_home())
        assert ids(con, "SELECT interval_id FROM fleet ORDER BY 1") == ["s1", "s2"]  # each once
        assert ids(con, "SELECT request_id FROM requests ORDER BY 1") == ["q1", "q2", "q3", "q4", "q5"]
    assert same(allocation(*OCT, period=True), before)
    assert facts_layout.migrate(months)  # run again: it finishes
    assert not list((months / "facts").glob("*/*.parquet")) and facts_layout.layout_version(months) == 2
    assert sorted(p.parent.name for p in d.glob("month=*/*.parquet")) == ["month=2026-09", "month=2026-10",
                                                                          "month=2026-11"]
    assert same(allocation(*OCT, period=True), before)


# ---- docs/facts.md lists every column of every kind ---------------------------------------------

def test_the_doc_lists_every_column_of_every_kind_with_its_type():
    doc = (ROOT / "docs" / "facts.md").read_text(encoding="utf-8")
    for kind, spec in facts.KINDS.items():
        section = doc.split(f"\n### {kind}\n", 1)[1].split("\n### ", 1)[0]
        rows = [[c.strip() for c in line.strip().strip("|").split("|")]
                for line in section.splitlines() if line.startswith("| `")]
        got = [(r[0].strip("`"), r[1].strip("`"), r[2], r[3]) for r in rows]
        want = [(c.name, c.type, "yes" if c.required else "no", "—" if c.required else f"`{c.default}`")
                for c in spec.columns]
        assert got == want, kind
        assert all(r[4] for r in rows), kind  # every column says what it means
    assert re.search(r"\| `booked_at` \| `TIMESTAMPTZ` \|", doc)
