"""Benchmark: ingest N seeded synthetic request rows, beside DuckDB's bare read + hourly group-by.

    python bench/ingest.py --rows 1000000 --repeat 3
    python bench/ingest.py --rows 10000000 --repeat 3 --formats csv

For each format it writes the same rows as CSV and Parquet (bench/out/, reused when present),
then, in a fresh ledger home each time, measures in child processes (so that each figure has its
own peak RSS, read with wait4):

- ingest: validation of every row, typing, hashing, key checks and the Parquet facts write;
- re-ingest of the same file (every row a duplicate: nothing written);
- the reference: DuckDB reading the same file and grouping it by hour (count, token sums), run
  before and after the ingests of each repeat;
- the floor: DuckDB copying the same file to Parquet with no checks, keys or hashes (what writing
  every column costs by itself).

Times are the work inside the child (imports excluded); figures are medians of the repeats. Two
ratios are printed: the ratio of the medians, and the median of each repeat's own ratio (against
the mean of the references run just before and after it), which a drifting machine skews less.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

INGEST = """
import json, sys, time
from ledger.ingest import ingest
t = time.perf_counter()
r = ingest("requests", [sys.argv[1]], register_new=True)
print(json.dumps({"seconds": time.perf_counter() - t, "new": r.rows_new, "dup": r.rows_duplicate}))
"""

# The start of both DuckDB children: the clock, a connection, and `rel`, the file as DuckDB reads it.
DUCKDB_CHILD = """
import json, os, sys, tempfile, time
import duckdb
t = time.perf_counter()
con = duckdb.connect()
con.execute("SET TimeZone = 'UTC'")
con.execute("SET enable_progress_bar = false")
src = sys.argv[1]
rel = f"read_parquet('{src}')" if src.endswith(".parquet") else f"read_csv('{src}')"
"""

REFERENCE = DUCKDB_CHILD + """
rows = con.execute(f"SELECT date_trunc('hour', occurred_at) AS h, count(*), sum(input_tokens), sum(output_tokens) "
                   f"FROM {rel} GROUP BY 1").fetchall()
print(json.dumps({"seconds": time.perf_counter() - t, "groups": len(rows)}))
"""


COPY_FLOOR = DUCKDB_CHILD + """
with tempfile.TemporaryDirectory() as d:
    con.execute(f"COPY (SELECT * FROM {rel}) TO '{d}/copy.parquet' (FORMAT parquet, COMPRESSION zstd)")
    print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def child(code: str, arg: str, env: dict) -> tuple[dict, float]:
    """Run `code` in a fresh interpreter; return its JSON line and its peak RSS in MiB."""
    proc = subprocess.Popen([sys.executable, "-c", code, arg], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    out, errs = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({proc.returncode}):\n{errs}")
    return json.loads(out.strip().splitlines()[-1]), usage.ru_maxrss / 1024


GENERATE = """
import os, sys
sys.path.insert(0, sys.argv[1])
from synth import generate_requests, write_requests
rows, seed, files = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
table = generate_requests(rows, seed)
for p in files:
    write_requests(table, p + ".tmp", p.rsplit(".", 1)[1])
    os.replace(p + ".tmp", p)
"""


def make_files(rows: int, seed: int) -> dict[str, Path]:
    """The seeded files, generated in a child process: a child forked from a parent holding the
    generated table would count the parent's pages in its own peak RSS."""
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    files = {f: out / f"requests_{rows}_{seed}.{f}" for f in ("csv", "parquet")}
    if not all(p.exists() for p in files.values()):
        subprocess.run([sys.executable, "-c", GENERATE, str(HERE), str(rows), str(seed), *map(str, files.values())],
                       check=True)
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--formats", default="csv,parquet")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    files = make_files(args.rows, args.seed)
    results = {}
    for fmt in args.formats.split(","):
        path = files[fmt]
        runs = {"ingest": [], "reingest": [], "reference": [], "copy_floor": []}
        paired = {"ingest": [], "reingest": []}
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="ledger-bench-") as home:
                env = dict(os.environ, LEDGER_HOME=home)
                env.pop("LEDGER_DATABASE_URL", None)
                subprocess.run([sys.executable, "-c", "from ledger.store import init_store; init_store()"], env=env, check=True)
                ref = child(REFERENCE, str(path), env)
                runs["copy_floor"].append(child(COPY_FLOOR, str(path), env))
                first = child(INGEST, str(path), env)
                again = child(INGEST, str(path), env)
                ref_after = child(REFERENCE, str(path), env)
                assert first[0]["new"] == args.rows and again[0]["new"] == 0 and again[0]["dup"] == args.rows
                runs["reference"] += [ref, ref_after]
                runs["ingest"].append(first)
                runs["reingest"].append(again)
                # this repeat's ratio: against the mean of the references run just before and after it,
                # so that a machine getting slower or faster between repeats does not skew it
                bracket = (ref[0]["seconds"] + ref_after[0]["seconds"]) / 2
                paired["ingest"].append(first[0]["seconds"] / bracket)
                paired["reingest"].append(again[0]["seconds"] / bracket)
        med = {k: (statistics.median(r[0]["seconds"] for r in v), max(r[1] for r in v)) for k, v in runs.items()}
        results[fmt] = {
            "rows": args.rows, "file_mib": round(path.stat().st_size / 2**20, 1), "repeat": args.repeat,
            **{f"{k}_seconds": round(t, 3) for k, (t, _) in med.items()},
            **{f"{k}_peak_rss_mib": round(m, 1) for k, (_, m) in med.items()},
            "ingest_rows_per_s": round(args.rows / med["ingest"][0]),
            "reingest_rows_per_s": round(args.rows / med["reingest"][0]),
            "ingest_vs_reference": round(med["ingest"][0] / med["reference"][0], 2),
            "reingest_vs_reference": round(med["reingest"][0] / med["reference"][0], 2),
            "copy_floor_vs_reference": round(med["copy_floor"][0] / med["reference"][0], 2),
            "ingest_vs_reference_paired": round(statistics.median(paired["ingest"]), 2),
            "reingest_vs_reference_paired": round(statistics.median(paired["reingest"]), 2),
            "paired_ratios": {k: [round(x, 2) for x in v] for k, v in paired.items()},
            "all_seconds": {k: [round(r[0]["seconds"], 3) for r in v] for k, v in runs.items()},
        }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for fmt, r in results.items():
        print(f"{fmt}: {r['rows']:,} rows, {r['file_mib']} MiB, median of {r['repeat']}")
        print(f"  reference (DuckDB read + hourly group-by): {r['reference_seconds']:.2f} s, "
              f"peak RSS {r['reference_peak_rss_mib']:.0f} MiB")
        print(f"  floor (DuckDB copy of the file to Parquet, no checks): {r['copy_floor_seconds']:.2f} s, "
              f"{r['copy_floor_vs_reference']}x the reference")
        print(f"  ingest:    {r['ingest_seconds']:.2f} s = {r['ingest_rows_per_s']:,} rows/s, "
              f"peak RSS {r['ingest_peak_rss_mib']:.0f} MiB, {r['ingest_vs_reference']}x the reference")
        print(f"  re-ingest: {r['reingest_seconds']:.2f} s = {r['reingest_rows_per_s']:,} rows/s, "
              f"peak RSS {r['reingest_peak_rss_mib']:.0f} MiB, {r['reingest_vs_reference']}x the reference")
        print(f"  paired ratios (each repeat against the references just before and after it): ingest "
              f"{r['ingest_vs_reference_paired']}x, re-ingest {r['reingest_vs_reference_paired']}x (medians); "
              f"all: {r['paired_ratios']}")
        print(f"  all runs (s): {r['all_seconds']}")


if __name__ == "__main__":
    main()
