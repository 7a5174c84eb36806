"""Benchmark: allocate a synthetic month of N requests, beside DuckDB's bare group-by of the same facts.

    python bench/allocate.py                 # 10M requests, medians of 3 runs
    python bench/allocate.py -n 1000000 --repeat 1

Targets (not timed tests): a 10M-request month allocates in under 30 s, within 5x DuckDB's bare
group-by of the same Parquet facts, with a peak RSS under 2 GB on a 2-core machine.

The requests and fleet come from ``bench/synth.py``. Outcomes (80% of tasks success, decided a
minute after their last request) and two shared charges are derived here. Each measurement runs in
a fresh child process so that its peak RSS (``resource.getrusage``) is its own: "allocate" is the
engine (pricing, weights, split, idle, charges, conservation); "write" adds writing the run and
its lines to a SQLite ledger DB; "duckdb" is the bare aggregation the engine is compared with.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

BOOK = """
[book]
name = "bench"
version = "2026-10-01"
currency = "USD"
source = "prices listed in the shared data README (AWS on-demand and Capacity Blocks; provider list prices)"
retrieved_at = 2026-11-09

[[price]]
meter = "gpu_time"
sku = "H100-SXM-80GB"
region = "us-east-1"
purchase_option = "on_demand"
price = "6.88"
per = "gpu * hour"
effective_from = 2026-06-01T00:00:00Z
source_url = "https://aws.amazon.com/ec2/pricing/on-demand/"

[[price]]
meter = "gpu_time"
sku = "H200-SXM-141GB"
region = "us-east-1"
purchase_option = "capacity_block"
price = "5.408"
per = "gpu * hour"
effective_from = 2026-06-01T00:00:00Z
source_url = "https://aws.amazon.com/ec2/capacityblocks/pricing/"

[[price]]
meter = "input_tokens"
sku = "gpt-5"
price = "1.25"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://openai.com/api/pricing/"

[[price]]
meter = "cached_input_tokens"
sku = "gpt-5"
price = "0.125"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://openai.com/api/pricing/"

[[price]]
meter = "output_tokens"
sku = "gpt-5"
price = "10"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://openai.com/api/pricing/"

[[price]]
meter = "input_tokens"
sku = "claude-sonnet-4-5"
price = "3"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://www.anthropic.com/pricing"

[[price]]
meter = "cached_input_tokens"
sku = "claude-sonnet-4-5"
price = "0.30"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://www.anthropic.com/pricing"

[[price]]
meter = "output_tokens"
sku = "claude-sonnet-4-5"
price = "15"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://www.anthropic.com/pricing"
"""

CHARGES = [
    {"charge_id": "grafana-2026-10", "period_start": "2026-10-01T00:00:00Z", "period_end": "2026-11-01T00:00:00Z",
     "category": "observability", "description": "Grafana Cloud", "amount": "4200.00", "currency": "USD",
     "allocate": "by_tokens"},
    {"charge_id": "oncall-2026-10", "period_start": "2026-10-01T00:00:00Z", "period_end": "2026-11-01T00:00:00Z",
     "category": "engineering_ops", "description": "on-call rotation", "amount": "18000.00", "currency": "USD",
     "allocate": "even"},
]

BARE_GROUP_BY = """
    SELECT pool, provider, date_trunc('hour', occurred_at) AS hour, tenant, product, model, status,
           sum(input_tokens) AS input_tokens, sum(cached_input_tokens) AS cached, sum(output_tokens) AS output_tokens,
           count(*) AS requests
    FROM requests GROUP BY ALL
"""


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def prepare(n: int, seed: int, folder: Path) -> None:
    """Write the month's facts as Parquet (requests, fleet, outcomes, charges)."""
    import duckdb
    import pyarrow as pa

    import synth

    requests = synth.generate_requests(n, seed)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("t", requests)
    con.execute(f"COPY t TO '{folder / 'requests.parquet'}' (FORMAT parquet)")
    fleet = pa.Table.from_pylist(synth.fleet_rows())
    con.register("f", fleet)
    con.execute(f"""COPY (SELECT interval_id, pool, "start"::TIMESTAMPTZ AS "start", "end"::TIMESTAMPTZ AS "end",
                         device, gpus::BIGINT AS gpus, region, purchase_option, role,
                         nullif(capacity_tokens_per_gpu_s, '')::DECIMAL(38,9) AS capacity_tokens_per_gpu_s
                  FROM f) TO '{folder / 'fleet.parquet'}' (FORMAT parquet)""")
    # one outcome per task: success for 80% of tasks (by a hash of the id), decided after its last request
    con.execute(f"""COPY (SELECT task_id, any_value(tenant) AS tenant, any_value(product) AS product,
                         CASE WHEN hash(task_id) % 10 < 8 THEN 'success' ELSE 'failure' END AS outcome,
                         max(occurred_at) + INTERVAL 1 MINUTE AS decided_at, 'tests-pass' AS criteria
                  FROM read_parquet('{folder / 'requests.parquet'}') GROUP BY task_id)
                  TO '{folder / 'outcomes.parquet'}' (FORMAT parquet)""")
    con.register("c", pa.Table.from_pylist(CHARGES))
    con.execute(f"""COPY (SELECT charge_id, period_start::TIMESTAMPTZ AS period_start,
                         period_end::TIMESTAMPTZ AS period_end, category, description,
                         amount::DECIMAL(38,6) AS amount, currency, allocate FROM c)
                  TO '{folder / 'charges.parquet'}' (FORMAT parquet)""")
    con.close()


def facts_connection(folder: Path):
    """DuckDB views with the facts contract's columns over the bench's Parquet files."""
    import duckdb

    from ledger.facts import KINDS

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    booked = {"requests": "occurred_at", "meters": "occurred_at", "outcomes": "decided_at"}
    for kind, spec in KINDS.items():
        path = folder / f"{kind}.parquet"
        if not path.exists():
            from ledger.facts import empty_select

            con.execute(f"CREATE VIEW {kind} AS {empty_select(kind)}")
            continue
        have = {r[0] for r in con.execute(f"SELECT name FROM parquet_schema('{path}')").fetchall()}
        # a column synth.py does not write (cache writes, service tier) reads as its default, as in the ledger
        cols = ", ".join(f'CAST("{c.name}" AS {c.type}) AS "{c.name}"' if c.name in have else
                         f'CAST({c.default} AS {c.type}) AS "{c.name}"' for c in spec.columns)
        b = booked.get(kind)
        con.execute(f"CREATE VIEW {kind} AS SELECT {cols}, {f'CAST({b} AS TIMESTAMPTZ)' if b else 'NULL'} AS booked_at "
                    f"FROM read_parquet('{path}')")
    return con


def child(what: str, folder: Path) -> dict:
    """One measurement, in this (fresh) process."""
    from ledger.allocate import Policy, allocate
    from ledger.pricebook import PriceIndex, parse_book

    import synth

    con = facts_connection(folder)
    if what == "duckdb":
        t0 = time.perf_counter()
        rows = len(con.execute(BARE_GROUP_BY).fetchall())
        return {"seconds": time.perf_counter() - t0, "peak_rss_mb": peak_rss_mb(), "groups": rows}
    book, problems = parse_book(BOOK, "bench.toml")
    assert not problems, problems
    stages: list[tuple[str, float]] = []
    t0 = time.perf_counter()
    alloc = allocate(con, start=synth.MONTH_START, end=synth.MONTH_END, prices=PriceIndex([book]), policy=Policy(),
                     progress=lambda stage: stages.append((stage, time.perf_counter())))
    seconds = time.perf_counter() - t0
    ends = [t for _, t in stages[1:]] + [t0 + seconds]
    out = {"seconds": seconds, "peak_rss_mb": peak_rss_mb(), "lines": len(alloc.lines), "total": str(alloc.total),
           "flags": len(alloc.flags), "stages": {name: round(e - t, 2) for (name, t), e in zip(stages, ends)}}
    if what == "write":
        os.environ["LEDGER_HOME"] = str(folder / "home")
        os.environ.pop("LEDGER_DATABASE_URL", None)
        from ledger import runs, store

        store.init_store()
        t1 = time.perf_counter()
        with store.session() as s:
            runs.write_run(s, allocation=alloc, inputs_digest="bench", code_version=runs.code_version())
        out["write_seconds"] = time.perf_counter() - t1
        out["peak_rss_mb"] = peak_rss_mb()
    return out


def measure(what: str, folder: Path, repeat: int) -> list[dict]:
    results = []
    for _ in range(repeat):
        p = subprocess.run([sys.executable, __file__, "--child", what, "--folder", str(folder)],
                           capture_output=True, text=True, check=False)
        if p.returncode != 0:
            sys.exit(f"{what} run failed:\n{p.stderr}")
        results.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10_000_000, help="requests in the month (default 10M)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement; medians are printed")
    ap.add_argument("--child", choices=["prepare", "allocate", "write", "duckdb"], help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "prepare":
        prepare(args.n, args.seed, args.folder)
        return
    if args.child:
        print(json.dumps(child(args.child, args.folder)))
        return
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        # generation runs in a child too: Linux keeps a process's peak RSS across fork and exec, so a
        # parent that had held the generated month would lend its peak to every measurement
        subprocess.run([sys.executable, __file__, "--child", "prepare", "--folder", str(folder), "-n", str(args.n),
                        "--seed", str(args.seed)], check=True)
        print(f"{args.n:,} requests generated and written as Parquet in {time.perf_counter() - t0:.1f} s")
        bare = measure("duckdb", folder, args.repeat)
        engine = measure("allocate", folder, args.repeat)
        written = measure("write", folder, 1)[0]
    med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
    b, a = med(bare, "seconds"), med(engine, "seconds")
    print(f"duckdb bare group-by : {b:6.2f} s   peak RSS {med(bare, 'peak_rss_mb'):7.0f} MB   "
          f"({bare[0]['groups']:,} groups)")
    print(f"allocate (engine)    : {a:6.2f} s   peak RSS {med(engine, 'peak_rss_mb'):7.0f} MB   "
          f"({engine[0]['lines']:,} lines, total {engine[0]['total']} USD, {engine[0]['flags']} flags)")
    print(f"ratio allocate/duckdb: {a / b:6.2f} x   (target: under 5x; allocation under 30 s; RSS under 2048 MB)")
    print(f"write run to SQLite  : {written['write_seconds']:6.2f} s   peak RSS {written['peak_rss_mb']:7.0f} MB "
          f"(one run: allocate {written['seconds']:.2f} s + write)")
    print("engine stages (first run): " + "; ".join(f"{k} {v:.2f} s" for k, v in engine[0]["stages"].items()))
    print(f"medians of {args.repeat} runs, each in a fresh process; {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
