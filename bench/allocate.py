"""Benchmark: allocate a synthetic month of N requests, beside DuckDB's bare group-by of the same facts.

    python bench/allocate.py                 # 10M requests, medians of 3 runs
    python bench/allocate.py -n 1000000 --repeat 1
    python bench/allocate.py --sizes 1000000,10000000,30000000,100000000 --repeat 3   # the scaling table
    python bench/allocate.py --engine spark --sizes 1000000,10000000 --repeat 1 --data DIR

Targets (not timed tests): a 10M-request month allocates in under 30 s, within 5x DuckDB's bare
group-by of the same Parquet facts, with a peak RSS under 2 GB on a 2-core machine; at every size
of the scaling table, within 5x the bare group-by, and 100M requests with a peak RSS under 2.5 GB
(docs/scale.md).

Every DuckDB connection is the ledger's own (``ledger.duck.connect``): the memory limit of
``LEDGER_MEMORY_LIMIT`` (default 25% of the machine, at most 1.5 GiB), spilling into a ledger home
inside the bench's temp folder.

The scaling table (``--sizes``): for each size the month is generated (in chunks of 10M requests
above that, so that generation fits in memory too), then each repeat runs one fresh child that
times the bare group-by and then the allocation on the same connection; the table shows the median
allocation time, the median bare group-by, the median of each child's own ratio (of wall-clock time,
and of CPU time: user and system, all threads, less moved by other work on a shared machine), the
largest peak RSS of the children (``wait4``), and the digest of the allocation (the same in every run,
and before and after a change of the engine that must not change a number).

The requests and fleet come from ``bench/synth.py``. Outcomes (80% of tasks success, decided a
minute after their last request) and two shared charges are derived here. Each measurement runs in
a fresh child process so that its peak RSS (``resource.getrusage``) is its own: "allocate" is the
engine (pricing, weights, split, idle, charges, conservation); "write" adds writing the run and
its lines to a SQLite ledger DB; "duckdb" is the bare aggregation the engine is compared with.

``--engine spark``: per size, the allocation with the per-request work on Apache Spark in local mode
(``ledger.allocate.spark``, ``local[*]``, the driver's heap ``--spark-driver-memory``) over the same
Parquet files, each repeat in a fresh child (so its time includes no JVM start: that is timed apart),
each after a DuckDB allocation of the same month (a fresh child too: the ratio is the median of each
pair's own); the table says whether the two are the same line for line (a digest of every line, the
total, flags, usage and tasks) and the JVM's peak RSS.
"""
from __future__ import annotations

import argparse
import hashlib
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


def cpu_seconds() -> float:
    """User and system CPU time of this process so far (all of DuckDB's threads): on a machine shared
    with other work, less moved by it than the wall clock (a busy disk still slows spilling)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


CHUNK = 10_000_000


def _chunk(n: int, seed: int, first: int, total: int):
    """Requests `first` .. `first + n - 1` of a month of `total`: synth's mix over the whole month,
    with ids numbered from `first` and tasks drawn from the month's ``total // 3`` task ids."""
    import numpy as np
    import pyarrow as pa

    import synth

    t = synth.generate_requests(n, seed)
    if n == total:
        return t
    rng = np.random.default_rng([seed, first])
    ids = np.char.add("r", np.arange(first, first + n).astype("U12"))
    tasks = np.char.add("t", rng.integers(0, max(1, total // 3), size=n).astype("U12"))
    t = t.set_column(t.schema.get_field_index("request_id"), "request_id", pa.array(ids))
    return t.set_column(t.schema.get_field_index("task_id"), "task_id", pa.array(tasks))


def prepare(n: int, seed: int, folder: Path) -> None:
    """Write the month's facts as Parquet (requests in files of up to CHUNK rows, fleet, outcomes,
    charges) and make the ledger home its connections spill into."""
    import pyarrow as pa

    import synth
    from ledger import duck

    (folder / "home").mkdir(exist_ok=True)
    con = duck.connect("bench", home=folder / "home")
    for i, first in enumerate(range(0, n, CHUNK)):
        path = folder / f"requests-{i:03d}.parquet"
        if path.exists():  # written by an earlier, interrupted run into the same --data folder
            continue
        con.register("t", _chunk(min(CHUNK, n - first), seed + i, first, n))
        con.execute(f"COPY t TO '{path}.tmp' (FORMAT parquet)")
        con.unregister("t")
        os.replace(f"{path}.tmp", path)
    requests = f"read_parquet('{folder / 'requests-*.parquet'}')"
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
                  FROM {requests} GROUP BY task_id)
                  TO '{folder / 'outcomes.parquet'}' (FORMAT parquet)""")
    con.register("c", pa.Table.from_pylist(CHARGES))
    con.execute(f"""COPY (SELECT charge_id, period_start::TIMESTAMPTZ AS period_start,
                         period_end::TIMESTAMPTZ AS period_end, category, description,
                         amount::DECIMAL(38,6) AS amount, currency, allocate FROM c)
                  TO '{folder / 'charges.parquet'}' (FORMAT parquet)""")
    con.close()
    (folder / "complete").write_text(f"{n} {seed}\n")


def facts_connection(folder: Path):
    """DuckDB views with the facts contract's columns over the bench's Parquet files, on a ledger
    connection (its memory limit, spilling into the bench's ledger home)."""
    from ledger import duck
    from ledger.facts import KINDS

    con = duck.connect("bench", home=folder / "home")
    booked = {"requests": "occurred_at", "meters": "occurred_at", "outcomes": "decided_at"}
    for kind, spec in KINDS.items():
        path = folder / (f"{kind}-*.parquet" if kind == "requests" else f"{kind}.parquet")
        if not (kind == "requests" or path.exists()):
            from ledger.facts import empty_select

            con.execute(f"CREATE VIEW {kind} AS {empty_select(kind)}")
            continue
        have = {r[0] for r in con.execute(f"SELECT DISTINCT name FROM parquet_schema('{path}')").fetchall()}
        # a column synth.py does not write (cache writes, service tier) reads as its default, as in the ledger
        cols = ", ".join(f'CAST("{c.name}" AS {c.type}) AS "{c.name}"' if c.name in have else
                         f'CAST({c.default} AS {c.type}) AS "{c.name}"' for c in spec.columns)
        b = booked.get(kind)
        con.execute(f"CREATE VIEW {kind} AS SELECT {cols}, {f'CAST({b} AS TIMESTAMPTZ)' if b else 'NULL'} AS booked_at "
                    f"FROM read_parquet('{path}')")
    return con


def digest(alloc) -> str:
    """A digest of everything an allocation says: every line (amounts as exact Decimals), total, flags, usage, tasks."""
    text = repr((alloc.lines, alloc.total, alloc.flags, alloc.usage, alloc.tasks, alloc.notes))
    return hashlib.sha256(text.encode()).hexdigest()


def spark_child(folder: Path, driver_memory: str, conf: list[str] | None = None) -> dict:
    """One allocation with the Spark engine over the month's Parquet files (fleet and charges on DuckDB)."""
    from ledger.allocate import Policy, allocate
    from ledger.allocate.spark import SparkEngine, session
    from ledger.pricebook import PriceIndex, parse_book

    import synth

    t0 = time.perf_counter()
    spark = session("local[*]", {"spark.driver.memory": driver_memory, **dict(kv.split("=", 1) for kv in conf or [])})
    settings = {k: spark.conf.get(k) for k in ("spark.sql.shuffle.partitions", "spark.sql.autoBroadcastJoinThreshold",
                                               "spark.sql.adaptive.enabled")}
    started = time.perf_counter() - t0
    urls = {"requests": ["file://" + p.as_posix() for p in sorted(folder.glob("requests-*.parquet"))],
            "outcomes": ["file://" + (folder / "outcomes.parquet").as_posix()], "meters": []}
    book, problems = parse_book(BOOK, "bench.toml")
    assert not problems, problems
    stages: list[tuple[str, float]] = []
    engine = SparkEngine(spark, urls)
    tables: dict[str, float] = {}  # seconds of each relation the engine makes (Spark's job and the copy back)
    create = engine.create

    def timed(con, table, sql):
        t = time.perf_counter()
        create(con, table, sql)
        tables[table.name] = round(tables.get(table.name, 0) + time.perf_counter() - t, 2)

    engine.create = timed
    t0 = time.perf_counter()
    alloc = allocate(facts_connection(folder), start=synth.MONTH_START, end=synth.MONTH_END,
                     prices=PriceIndex([book]), policy=Policy(), engine=engine,
                     progress=lambda stage: stages.append((stage, time.perf_counter())))
    seconds = time.perf_counter() - t0
    ends = [t for _, t in stages[1:]] + [t0 + seconds]
    jvm = spark.sparkContext._gateway.proc  # the JVM, a child of this process: wait for it to read its peak RSS
    spark.stop()
    jvm.stdin.close()
    jvm.wait(timeout=120)
    return {"seconds": seconds, "session_seconds": started, "lines": len(alloc.lines), "total": str(alloc.total),
            "digest": digest(alloc), "stages": {name: round(e - t, 2) for (name, t), e in zip(stages, ends)},
            "settings": settings, "tables": tables,
            "jvm_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
            "python_peak_rss_mb": peak_rss_mb()}


def child(what: str, folder: Path) -> dict:
    """One measurement, in this (fresh) process."""
    from ledger.allocate import Policy, allocate
    from ledger.pricebook import PriceIndex, parse_book

    import synth

    con = facts_connection(folder)
    bare: dict = {}
    if what in ("duckdb", "pair"):
        t0, c0 = time.perf_counter(), cpu_seconds()
        rows = len(con.execute(BARE_GROUP_BY).fetchall())
        bare = {"bare_seconds": time.perf_counter() - t0, "bare_cpu_seconds": cpu_seconds() - c0, "groups": rows}
        if what == "duckdb":
            return {"seconds": bare["bare_seconds"], "peak_rss_mb": peak_rss_mb(), "groups": rows}
    book, problems = parse_book(BOOK, "bench.toml")
    assert not problems, problems
    stages: list[tuple[str, float]] = []
    t0, c0 = time.perf_counter(), cpu_seconds()
    alloc = allocate(con, start=synth.MONTH_START, end=synth.MONTH_END, prices=PriceIndex([book]), policy=Policy(),
                     progress=lambda stage: stages.append((stage, time.perf_counter())))
    seconds = time.perf_counter() - t0
    ends = [t for _, t in stages[1:]] + [t0 + seconds]
    out = {"seconds": seconds, "cpu_seconds": cpu_seconds() - c0, "peak_rss_mb": peak_rss_mb(),
           "lines": len(alloc.lines), "total": str(alloc.total),
           "flags": len(alloc.flags), "digest": digest(alloc),
           "stages": {name: round(e - t, 2) for (name, t), e in zip(stages, ends)},
           "memory_limit": con.execute("SELECT current_setting('memory_limit')").fetchone()[0], **bare}
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


def measure(what: str, folder: Path, repeat: int, extra: tuple[str, ...] = ()) -> list[dict]:
    """`repeat` runs of `what`, each in a fresh child; its peak RSS (MiB) is read with wait4."""
    results = []
    for _ in range(repeat):
        with tempfile.TemporaryFile("w+") as errs:
            proc = subprocess.Popen([sys.executable, __file__, "--child", what, "--folder", str(folder), *extra],
                                    stdout=subprocess.PIPE, stderr=errs, text=True)
            out = proc.stdout.read()
            proc.stdout.close()
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                errs.seek(0)
                sys.exit(f"{what} run failed ({proc.returncode}):\n{errs.read()}")
        result = json.loads(out.strip().splitlines()[-1])
        result["peak_rss_mb"] = usage.ru_maxrss / 1024
        results.append(result)
    return results


def generate(n: int, seed: int, folder: Path) -> float:
    """The month's facts, written by a child (Linux keeps a process's peak RSS across fork and exec,
    so a parent that had held the generated month would lend its peak to every measurement)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--child", "prepare", "--folder", str(folder), "-n", str(n),
                    "--seed", str(seed)], check=True)
    return time.perf_counter() - t0


def scaling(sizes: list[int], seed: int, repeat: int, as_json: bool, data: Path | None = None) -> None:
    """The scaling table: per size, the median allocation, bare group-by and paired ratio, and the
    largest peak RSS, each repeat in one fresh child. With `data`, each month's facts are kept in
    ``data/month-<n>-<seed>/`` and reused (an interrupted generation resumes at its next chunk)."""
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
            folder = Path(tmp) if data is None else data / f"month-{n}-{seed}"
            folder.mkdir(parents=True, exist_ok=True)
            made = 0.0 if (folder / "complete").exists() else generate(n, seed, folder)
            runs = measure("pair", folder, repeat)
        row = {"requests": n, "generate_seconds": round(made, 1), "repeat": repeat,
               "allocate_seconds": round(statistics.median(r["seconds"] for r in runs), 2),
               "bare_seconds": round(statistics.median(r["bare_seconds"] for r in runs), 2),
               "ratio": round(statistics.median(r["seconds"] / r["bare_seconds"] for r in runs), 2),
               "cpu_ratio": round(statistics.median(r["cpu_seconds"] / r["bare_cpu_seconds"] for r in runs), 2),
               "digests": sorted({r["digest"] for r in runs}),
               "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs)),
               "memory_limit": runs[0]["memory_limit"], "lines": runs[0]["lines"], "total": runs[0]["total"],
               "all_allocate_seconds": [round(r["seconds"], 2) for r in runs],
               "all_bare_seconds": [round(r["bare_seconds"], 2) for r in runs],
               "stages": runs[0]["stages"]}
        rows.append(row)
        if not as_json:
            print(f"{n:,} requests: allocate {row['allocate_seconds']} s, bare group-by {row['bare_seconds']} s, "
                  f"ratio {row['ratio']}x (CPU time {row['cpu_ratio']}x), peak RSS {row['peak_rss_mb']} MiB, "
                  f"digest {', '.join(d[:16] for d in row['digests'])} "
                  f"({f'generated in {made:.0f} s' if made else 'facts reused'})", flush=True)
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    print()
    print("| requests | allocate (s) | bare group-by (s) | ratio | CPU-time ratio | peak RSS (MiB) | memory limit "
          "| lines |")
    print("|---:|---:|---:|---:|---:|---:|---|---:|")
    for r in rows:
        print(f"| {r['requests']:,} | {r['allocate_seconds']:.2f} | {r['bare_seconds']:.2f} | {r['ratio']:.2f}x | "
              f"{r['cpu_ratio']:.2f}x | {r['peak_rss_mb']:,} | {r['memory_limit']} | {r['lines']:,} |")
    print(f"\nmedians of {repeat} runs (ratio: the median of each run's own ratio, of wall-clock and of CPU "
          f"time), peak RSS the largest; each run in a fresh process; {os.cpu_count()} CPUs")


def spark_table(sizes: list[int], seed: int, repeat: int, data: Path | None, driver_memory: str,
                conf: list[str] | None = None) -> None:
    """Per size: the Spark engine's allocation (`repeat` fresh children), each run after a DuckDB
    allocation of the same month (a fresh child too), so that each ratio is of two runs side by side;
    the table has the medians and the median of the pairs' own ratios."""
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
            folder = Path(tmp) if data is None else data / f"month-{n}-{seed}"
            folder.mkdir(parents=True, exist_ok=True)
            made = 0.0 if (folder / "complete").exists() else generate(n, seed, folder)
            extra = ("--spark-driver-memory", driver_memory, *(x for kv in conf or [] for x in ("--spark-conf", kv)))
            ducks, spark = [], []
            for _ in range(repeat):
                ducks += measure("pair", folder, 1)
                spark += measure("spark", folder, 1, extra)
        duck = ducks[0]
        same = all(r["digest"] == duck["digest"] for r in spark + ducks)
        ratios = [s["seconds"] / d["seconds"] for d, s in zip(ducks, spark)]
        row = {"requests": n, "spark_seconds": round(statistics.median(r["seconds"] for r in spark), 2),
               "all_spark_seconds": [round(r["seconds"], 2) for r in spark],
               "all_duckdb_seconds": [round(r["seconds"], 2) for r in ducks],
               "session_seconds": round(statistics.median(r["session_seconds"] for r in spark), 2),
               "duckdb_seconds": round(statistics.median(r["seconds"] for r in ducks), 2), "same": same,
               "lines": duck["lines"],
               "total": duck["total"], "jvm_peak_rss_mb": round(max(r["jvm_peak_rss_mb"] for r in spark)),
               "stages": spark[0]["stages"], "settings": spark[0]["settings"], "tables": spark[0]["tables"],
               "all_ratios": [round(r, 1) for r in ratios], "ratio": round(statistics.median(ratios), 1)}
        rows.append(row)
        print(f"{n:,} requests ({f'generated in {made:.0f} s' if made else 'facts reused'}): Spark "
              f"{row['spark_seconds']} s (session start {row['session_seconds']} s apart), DuckDB "
              f"{row['duckdb_seconds']} s; {'the same' if same else 'DIFFERENT'} lines ({row['lines']:,}, total "
              f"{row['total']}); {row['ratio']}x DuckDB (median of each pair's own: {row['all_ratios']}); "
              f"Spark runs {row['all_spark_seconds']}, DuckDB runs {row['all_duckdb_seconds']}; "
              f"stages {row['stages']}; relations {row['tables']}; settings {row['settings']}",
              flush=True)
    print()
    print("| requests | Spark local (s) | session start (s) | DuckDB (s) | ratio | same lines | lines "
          "| JVM peak RSS (MiB) |")
    print("|---:|---:|---:|---:|---:|---|---:|---:|")
    for r in rows:
        print(f"| {r['requests']:,} | {r['spark_seconds']:.2f} | {r['session_seconds']:.2f} | "
              f"{r['duckdb_seconds']:.2f} | {r['ratio']}x "
              f"| {'yes' if r['same'] else 'NO'} | {r['lines']:,} | {r['jvm_peak_rss_mb']:,} |")
    print(f"\nSpark and DuckDB: medians of {repeat} runs, alternating, each in a fresh process (ratio: the median "
          f"of each pair's own); local[*], driver memory {driver_memory}; {os.cpu_count()} CPUs")
    if not all(r["same"] for r in rows):
        sys.exit("the Spark engine's allocation differs from DuckDB's")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10_000_000, help="requests in the month (default 10M)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement; medians are printed")
    ap.add_argument("--sizes", help="the scaling table: comma-separated request counts, e.g. 1000000,10000000")
    ap.add_argument("--json", action="store_true", help="the scaling table as JSON")
    ap.add_argument("--data", type=Path, help="the scaling table: keep each month's facts in this folder and reuse them")
    ap.add_argument("--engine", choices=["duckdb", "spark"], default="duckdb",
                    help="spark: time the allocation with the per-request work on local Spark, beside DuckDB's")
    ap.add_argument("--spark-driver-memory", default="3g", help="--engine spark: the local driver's heap (default 3g)")
    ap.add_argument("--spark-conf", action="append", metavar="KEY=VALUE",
                    help="--engine spark: a Spark setting over the engine's own (e.g. spark.sql.shuffle.partitions=200 "
                         "to measure Spark's defaults); repeatable")
    ap.add_argument("--child", choices=["prepare", "allocate", "write", "duckdb", "pair", "spark"],
                    help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "prepare":
        prepare(args.n, args.seed, args.folder)
        return
    if args.child == "spark":
        print(json.dumps(spark_child(args.folder, args.spark_driver_memory, args.spark_conf)))
        return
    if args.child:
        print(json.dumps(child(args.child, args.folder)))
        return
    if args.engine == "spark":
        sizes = args.sizes.split(",") if args.sizes else [str(args.n)]
        spark_table([int(x.replace("_", "")) for x in sizes], args.seed, args.repeat, args.data,
                    args.spark_driver_memory, args.spark_conf)
        return
    if args.sizes:
        scaling([int(x.replace("_", "")) for x in args.sizes.split(",")], args.seed, args.repeat, args.json, args.data)
        return
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
        folder = Path(tmp)
        made = generate(args.n, args.seed, folder)
        print(f"{args.n:,} requests generated and written as Parquet in {made:.1f} s")
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
