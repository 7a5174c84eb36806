"""Benchmark: `ledger workload` over a synthetic month of N requests, beside DuckDB's bare hourly group-by.

    python bench/workload.py                 # 10M requests, medians of 3 runs
    python bench/workload.py -n 1000000 --repeat 3

Target (not a timed test): the workload of a month (every figure: per-minute series, percentiles,
bursts, ramp, request lengths, hour of week) within 3x DuckDB's bare hourly group-by of the same
Parquet facts (hour, requests, input, cached and output tokens: the columns the workload reads),
timed in the same process, and its peak RSS. The ratio to the same group-by with the hour computed
as integer arithmetic (``epoch_us // 3600e6``, no calendar: the fastest hourly group-by) is printed too.

The requests come from ``bench/synth.py``. Each run is a fresh child process that times the bare
group-by and then the workload, both for every request and for one pool (``--pool``), after one
untimed read, so the two share the process, the connection and the operating system's file cache;
its peak RSS (``resource.getrusage``) covers both.
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

BARE_HOURLY = """
    SELECT date_trunc('hour', occurred_at) AS hour, count(*) AS requests, sum(input_tokens) AS input_tokens,
           sum(cached_input_tokens) AS cached, sum(output_tokens) AS output_tokens
    FROM requests {where} GROUP BY ALL
"""
#: The same, with the hour as integer arithmetic on the instant (no calendar): the fastest hourly group-by.
BARE_EPOCH = BARE_HOURLY.replace("date_trunc('hour', occurred_at)", "epoch_us(occurred_at) // 3600000000")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def prepare(n: int, seed: int, folder: Path) -> None:
    """Write the month's requests as Parquet (the other kinds read as empty views)."""
    import duckdb

    import synth

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("t", synth.generate_requests(n, seed))
    con.execute(f"COPY t TO '{folder / 'requests.parquet'}' (FORMAT parquet)")
    con.close()


def child(folder: Path, pool: str) -> dict:
    """One run, in this (fresh) process: the bare group-by, then the workload, for all requests and one pool."""
    from allocate import facts_connection

    import synth
    from ledger.workload import workload_of

    con = facts_connection(folder)
    con.execute(BARE_HOURLY.format(where="")).fetchall()  # untimed: neither pays for the first read of the file
    out: dict = {}
    for label, which in (("all", None), ("pool", pool)):
        where = "" if which is None else f"WHERE pool = '{which}'"
        t0 = time.perf_counter()
        groups = len(con.execute(BARE_HOURLY.format(where=where)).fetchall())
        bare = time.perf_counter() - t0
        t0 = time.perf_counter()
        con.execute(BARE_EPOCH.format(where=where)).fetchall()
        epoch = time.perf_counter() - t0
        t0 = time.perf_counter()
        w = workload_of(con, period="2026-10", start=synth.MONTH_START, end=synth.MONTH_END, pool=which,
                        now=synth.MONTH_END)
        seconds = time.perf_counter() - t0
        out[label] = {"bare_seconds": bare, "epoch_seconds": epoch, "workload_seconds": seconds, "groups": groups, "requests": w.requests,
                      "minutes": w.minutes, "tpm_p99": w.tpm["p99"], "peak_to_average": w.peak_to_average,
                      "bursts": w.bursts.count, "ramp": w.ramp}
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10_000_000, help="requests in the month (default 10M)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3, help="runs; medians are printed")
    ap.add_argument("--pool", default="h100-pool", help="the pool of the one-pool workload")
    ap.add_argument("--child", choices=["prepare", "run"], help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "prepare":
        prepare(args.n, args.seed, args.folder)
        return
    if args.child == "run":
        print(json.dumps(child(args.folder, args.pool)))
        return
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--child", "prepare", "--folder", str(folder), "-n", str(args.n),
                        "--seed", str(args.seed)], check=True)
        print(f"{args.n:,} requests generated and written as Parquet in {time.perf_counter() - t0:.1f} s")
        runs = []
        for _ in range(args.repeat):
            p = subprocess.run([sys.executable, __file__, "--child", "run", "--folder", str(folder),
                                "--pool", args.pool], capture_output=True, text=True, check=False)
            if p.returncode != 0:
                sys.exit(f"run failed:\n{p.stderr}")
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    for label, what in (("all", "every request"), ("pool", f"pool {args.pool}")):
        b = statistics.median(r[label]["bare_seconds"] for r in runs)
        e = statistics.median(r[label]["epoch_seconds"] for r in runs)
        w = statistics.median(r[label]["workload_seconds"] for r in runs)
        first = runs[0][label]
        print(f"{what}: {first['requests']:,} requests over {first['minutes']:,} minutes "
              f"(TPM p99 {first['tpm_p99']:,.1f}, peak/avg {first['peak_to_average']:.2f}, "
              f"{first['bursts']:,} bursts, rise over 10 min {first['ramp']:,.0f})")
        print(f"  duckdb bare hourly group-by: {b:6.2f} s   ({first['groups']:,} groups)")
        print(f"  same, hour by epoch_us     : {e:6.2f} s")
        print(f"  ledger workload            : {w:6.2f} s   ratio {w / b:5.2f} x   (target: within 3x; "
              f"{w / e:.2f} x the epoch_us group-by)")
    print(f"peak RSS (bare + workloads, one process): {statistics.median(r['peak_rss_mb'] for r in runs):.0f} MB")
    print(f"medians of {args.repeat} runs, each in a fresh process; {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
