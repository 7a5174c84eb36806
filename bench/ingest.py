"""Benchmark: ingest N seeded synthetic request rows against the copy floor, measured in the same process.

    python bench/ingest.py --rows 1000000 --repeat 3
    python bench/ingest.py --rows 10000000 --repeat 3 --formats csv
    python bench/ingest.py --rows 2000000 --repeat 3 --formats csv --cli

The floor is DuckDB's plain copy of the same file to Parquet (``COPY (SELECT * FROM read_csv(f)) TO
... (FORMAT parquet, COMPRESSION zstd)``: its own type detection, no checks, keys or hashes): what
reading and writing every column costs by itself. Targets (issue 27): the ingest at most 1.2x the
floor in-process, at 1M and 10M rows; the whole ``ledger ingest requests`` command at most 1.5x at 2M.

For each format the same rows are written as CSV and Parquet (bench/out/, reused when present).
Each repeat is one fresh child process with a fresh ledger home (``ledger init`` first, apart), which
times, in this order: the reference (DuckDB reading the file and grouping it by hour), the floor,
the ingest (validation of every row, typing, hashing, key checks, the Parquet facts, the commit),
the re-ingest of the same file (every row a duplicate: nothing written), and the floor again. Each
repeat's ratio is its ingest over the mean of its two floors; the figure printed is the median of
those ratios, beside the medians of the times. Peak RSS is the child's (``wait4``): the largest of
its steps, the ingest's in practice.

``--cli``: the ingest is the ``ledger ingest requests FILE --register-new`` command in a process of
its own (the interpreter's start, imports, the ledger DB and the ingest; timed from its start to its
exit), between two floors measured in a child each (the copy alone, timed inside it). Its ratio is
the command over the mean of the floors just before and after it.

``uptime`` is printed before and after: on a shared machine compare ratios, which pair measurements
taken moments apart, rather than seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# One child: the reference, the floor, the ingest, the re-ingest and the floor again, in one process.
PAIRED = """
import json, os, sys, tempfile, time
import duckdb
from ledger.ingest import ingest
src = sys.argv[1]
rel = f"read_parquet('{src}')" if src.endswith(".parquet") else f"read_csv('{src}')"

def duck():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    return con

def reference():
    t = time.perf_counter()
    con = duck()
    con.execute(f"SELECT date_trunc('hour', occurred_at) AS h, count(*), sum(input_tokens), sum(output_tokens) "
                f"FROM {rel} GROUP BY 1").fetchall()
    con.close()
    return time.perf_counter() - t

def floor():
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        con = duck()
        con.execute(f"COPY (SELECT * FROM {rel}) TO '{d}/copy.parquet' (FORMAT parquet, COMPRESSION zstd)")
        con.close()
        return time.perf_counter() - t

def ledger_ingest():
    t = time.perf_counter()
    r = ingest("requests", [src], register_new=True)
    return time.perf_counter() - t, r.rows_new, r.rows_duplicate

out = {"reference": reference(), "floor_before": floor()}
out["ingest"], out["new"], _ = ledger_ingest()
out["reingest"], again, out["dup"] = ledger_ingest()
assert again == 0, again
out["floor_after"] = floor()
print(json.dumps(out))
"""

FLOOR = """
import json, sys, tempfile, time
import duckdb
src = sys.argv[1]
rel = f"read_parquet('{src}')" if src.endswith(".parquet") else f"read_csv('{src}')"
with tempfile.TemporaryDirectory() as d:
    t, c = time.perf_counter(), time.process_time()
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    con.execute(f"COPY (SELECT * FROM {rel}) TO '{d}/copy.parquet' (FORMAT parquet, COMPRESSION zstd)")
    con.close()
    print(json.dumps({"seconds": time.perf_counter() - t, "cpu": time.process_time() - c}))
"""


def run(argv: list[str], env: dict) -> tuple[str, float, float, float]:
    """Run `argv`; return its standard output, its wall time from start to exit (s), its peak RSS (MiB)
    and its CPU time, user and system, of every thread (s)."""
    with tempfile.TemporaryFile("w+") as errs:
        t = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=errs, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            errs.seek(0)
            raise SystemExit(f"{argv[:3]} failed ({proc.returncode}):\n{errs.read()}")
    return out, seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def child(code: str, arg: str, env: dict) -> tuple[dict, float]:
    """Run `code` in a fresh interpreter; return its JSON line and its peak RSS in MiB (read with wait4)."""
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


def fresh_home(home: str) -> dict:
    """The environment of a child working in the ledger home `home` (SQLite in it), initialized."""
    env = dict(os.environ, LEDGER_HOME=home)
    env.pop("LEDGER_DATABASE_URL", None)
    subprocess.run([sys.executable, "-c", "from ledger.store import init_store; init_store()"], env=env, check=True)
    return env


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "uptime: not available"


def in_process(path: Path, rows: int, repeat: int) -> dict:
    """`repeat` paired children (see the module's docstring): medians and the median ratio."""
    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="ledger-bench-") as home:
            got, rss = child(PAIRED, str(path), fresh_home(home))
        assert got["new"] == rows and got["dup"] == rows, got
        floor = (got["floor_before"] + got["floor_after"]) / 2
        runs.append({**got, "floor": floor, "ratio": got["ingest"] / floor, "reingest_ratio": got["reingest"] / floor,
                     "peak_rss_mib": rss})
    med = {k: statistics.median(r[k] for r in runs) for k in ("reference", "floor", "ingest", "reingest", "ratio",
                                                              "reingest_ratio")}
    return {"rows": rows, "file_mib": round(path.stat().st_size / 2**20, 1), "repeat": repeat,
            **{f"{k}_median": round(v, 3) for k, v in med.items()},
            "peak_rss_mib": round(max(r["peak_rss_mib"] for r in runs)),
            "ratios": [round(r["ratio"], 2) for r in runs],
            "all_seconds": {k: [round(r[k], 2) for r in runs] for k in ("floor_before", "ingest", "floor_after",
                                                                        "reingest", "reference")}}


def whole_cli(path: Path, rows: int, repeat: int) -> dict:
    """`repeat` times: a floor child, the `ledger ingest requests` command, a floor child (see the docstring)."""
    runs = []
    ledger = shutil.which("ledger")
    argv = [ledger] if ledger else [sys.executable, "-m", "ledger.cli"]
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="ledger-bench-") as home:
            env = fresh_home(home)
            before = child(FLOOR, str(path), env)[0]
            out, seconds, rss, cpu = run([*argv, "ingest", "requests", str(path), "--register-new", "--json"], env)
            after = child(FLOOR, str(path), env)[0]
        assert json.loads(out)["rows_new"] == rows, out
        floor = (before["seconds"] + after["seconds"]) / 2
        floor_cpu = (before["cpu"] + after["cpu"]) / 2
        runs.append({"cli": seconds, "floor": floor, "ratio": seconds / floor, "peak_rss_mib": rss,
                     "floor_before": before["seconds"], "floor_after": after["seconds"],
                     "cli_cpu": cpu, "floor_cpu": floor_cpu, "cpu_ratio": cpu / floor_cpu})
    return {"rows": rows, "file_mib": round(path.stat().st_size / 2**20, 1), "repeat": repeat, "command": argv[-1],
            **{f"{k}_median": round(statistics.median(r[k] for r in runs), 3)
               for k in ("cli", "floor", "ratio", "cli_cpu", "floor_cpu", "cpu_ratio")},
            "peak_rss_mib": round(max(r["peak_rss_mib"] for r in runs)), "ratios": [round(r["ratio"], 2) for r in runs],
            "all_seconds": {k: [round(r[k], 2) for r in runs] for k in ("floor_before", "cli", "floor_after")}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--formats", default="csv,parquet")
    ap.add_argument("--cli", action="store_true", help="time the whole `ledger ingest requests` command instead")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    files = make_files(args.rows, args.seed)
    load = [uptime()]
    measure = whole_cli if args.cli else in_process
    results = {fmt: measure(files[fmt], args.rows, args.repeat) for fmt in args.formats.split(",")}
    load.append(uptime())
    if args.json:
        print(json.dumps({"load": load, **results}, indent=2))
        return
    for fmt, r in results.items():
        print(f"{fmt}: {r['rows']:,} rows, {r['file_mib']} MiB, median of {r['repeat']}")
        if args.cli:
            print(f"  floor (DuckDB's plain copy of the file to Parquet, in a child): {r['floor_median']:.2f} s")
            print(f"  `ledger ingest requests` (the whole command, start to exit): {r['cli_median']:.2f} s, "
                  f"peak RSS {r['peak_rss_mib']} MiB")
            print(f"  ratio command/floor: {r['ratio_median']:.2f}x (median of {r['ratios']}; target 1.5x)")
            print(f"  CPU-seconds (user + system, every thread; the command's from start to exit, the floor's of the "
                  f"copy): {r['cli_cpu_median']:.2f} against {r['floor_cpu_median']:.2f}, "
                  f"ratio {r['cpu_ratio_median']:.2f}x (median)")
        else:
            print(f"  reference (DuckDB read + hourly group-by): {r['reference_median']:.2f} s")
            print(f"  floor (DuckDB's plain copy of the file to Parquet): {r['floor_median']:.2f} s")
            print(f"  ingest: {r['ingest_median']:.2f} s = {round(r['rows'] / r['ingest_median']):,} rows/s, "
                  f"peak RSS {r['peak_rss_mib']} MiB")
            print(f"  ratio ingest/floor, same process: {r['ratio_median']:.2f}x (median of {r['ratios']}; target 1.2x)")
            print(f"  re-ingest of the same file: {r['reingest_median']:.2f} s ({r['reingest_ratio_median']:.2f}x the floor)")
        print(f"  all runs (s): {r['all_seconds']}")
    print("load: " + " | ".join(load))


if __name__ == "__main__":
    main()
