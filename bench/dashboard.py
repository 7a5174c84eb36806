"""Benchmark: how fast each dashboard page answers, in headless Chromium at 1400 x 1000.

    python bench/dashboard.py --home .ledger                 # a ledger home you have (the demo's)
    python bench/dashboard.py -n 10000000 --data bench/out/dash-10m   # a synthetic month of 10M requests

With ``-n`` a ledger home is built in ``--data`` (kept and reused; a temp folder otherwise) the way a
user builds one: the month's requests from ``bench/synth.py`` (written as Parquet), its fleet, an
outcome per task (80% success) and two shared charges (as bench/allocate.py derives them), then
``ledger init``, ``pricebook load`` (bench/allocate.py's book), ``ingest`` of each file (the
requests registering their tenants and products) and
``allocate --period 2026-10``; the time of each step is printed.

Then ``ledger dashboard`` is started on a free port and one headless Chromium opens every page in
the sidebar's order, each in a new session: the *first load* is the time from navigation until the
page is drawn (the script finished, no spinner, its charts and grids drawn; tests/dashboard_browser.py);
then each page is reloaded ``--repeat`` times (median and max). The server's start (until it answers)
is printed too. Nothing is asserted: the figures are for docs/dashboard.md.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

#: The pages in the sidebar's order: URL path, title.
PAGES = [("", "Unit economics"), ("reconcile", "Bill reconciliation"), ("tenants", "Tenants side by side"),
         ("workload", "Workload"), ("sizing-budget", "Sizing and budget"),
         ("forecast-vs-actual", "Forecast vs actual"), ("price-books", "Price books")]

GENERATE = """
import sys
sys.path.insert(0, sys.argv[1])
from synth import generate_requests, write_requests
write_requests(generate_requests(int(sys.argv[2]), int(sys.argv[3])), sys.argv[4], "parquet")
"""

OUTCOMES = """
COPY (SELECT task_id, any_value(tenant) AS tenant, any_value(product) AS product,
             CASE WHEN hash(task_id) % 10 < 8 THEN 'success' ELSE 'failure' END AS outcome,
             max(occurred_at) + INTERVAL 1 MINUTE AS decided_at, 'tests-pass' AS criteria
      FROM read_parquet('{requests}') GROUP BY task_id) TO '{out}' (FORMAT parquet)
"""


def ledger(home: Path, *args: str) -> float:
    """Run ``ledger ARGS`` on `home`; the seconds it took (stops the benchmark if it fails)."""
    from dashboard_browser import ledger_command

    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DATABASE_URL"}
    env["LEDGER_HOME"] = str(home)
    t0 = time.perf_counter()
    done = subprocess.run([ledger_command(), *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"ledger {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return time.perf_counter() - t0


def build_home(n: int, seed: int, folder: Path) -> Path:
    """A ledger home with a synthetic month of `n` requests, ingested and allocated (reused when
    `folder` already holds a complete one)."""
    import duckdb

    import allocate
    import synth

    home = folder / "home"
    if (folder / "complete").exists():
        print(f"reusing the ledger home in {home}")
        return home
    folder.mkdir(parents=True, exist_ok=True)
    inputs = folder / "inputs"
    inputs.mkdir(exist_ok=True)
    requests = inputs / "requests.parquet"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", GENERATE, str(ROOT / "bench"), str(n), str(seed), str(requests)], check=True)
    print(f"{n:,} requests generated in {time.perf_counter() - t0:.1f} s")
    with (inputs / "fleet.csv").open("w", newline="", encoding="utf-8") as fh:
        rows = synth.fleet_rows()
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with (inputs / "charges.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(allocate.CHARGES[0]))
        w.writeheader()
        w.writerows(allocate.CHARGES)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(OUTCOMES.format(requests=requests, out=inputs / "outcomes.parquet"))
    con.close()
    (folder / "books").mkdir(exist_ok=True)
    (folder / "books" / "bench.toml").write_text(allocate.BOOK, encoding="utf-8")
    steps = [("init",), ("pricebook", "load", str(folder / "books")), ("ingest", "fleet", str(inputs / "fleet.csv")),
             ("ingest", "requests", str(requests), "--register-new"),
             ("ingest", "outcomes", str(inputs / "outcomes.parquet")),
             ("ingest", "charges", str(inputs / "charges.csv")), ("allocate", "--period", "2026-10")]
    for step in steps:
        print(f"ledger {' '.join(step[:2])}: {ledger(home, *step):.1f} s", flush=True)
    (folder / "complete").write_text(f"{n} {seed}\n", encoding="utf-8")
    return home


def measure(home: Path, repeat: int) -> dict:
    """Each page's first load and reloads over `home` (see the module's docstring), in seconds."""
    from dashboard_browser import chromium, dashboard, exceptions, open_page

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="ledger-bench-dashboard-") as tmp:
        with dashboard(home, Path(tmp) / "server.log", cwd=ROOT) as (url, up), chromium() as driver:
            out["server answers after"] = {"seconds": round(up, 2)}
            for path, title in PAGES:
                first = open_page(driver, f"{url}/{path}", title, None)
                again = sorted(open_page(driver, f"{url}/{path}", title, None) for _ in range(repeat))
                out[title] = {"first_load": round(first, 2), "reload_median": round(statistics.median(again), 2),
                              "reload_max": round(again[-1], 2), "exception": bool(exceptions(driver))}
                print(f"{title}: first load {first:.2f} s, reload median {statistics.median(again):.2f} s",
                      flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, help="an existing ledger home to measure")
    ap.add_argument("-n", type=int, help="build a synthetic month of N requests instead")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--data", type=Path, help="with -n: the folder to build (and reuse) the ledger home in")
    ap.add_argument("--repeat", type=int, default=3, help="reloads of each page after its first load")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    if (args.home is None) == (args.n is None):
        ap.error("give --home HOME or -n N")
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
        home = args.home.resolve() if args.home else build_home(args.n, args.seed, (args.data or Path(tmp)).resolve())
        figures = measure(home, args.repeat)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print("\n| page | first load (s) | reload, median / max (s) |\n|---|---:|---:|")
    for name, f in figures.items():
        if "first_load" in f:
            print(f"| {name} | {f['first_load']:.2f} | {f['reload_median']:.2f} / {f['reload_max']:.2f} |")
    print(f"\nthe server answered {figures['server answers after']['seconds']} s after `ledger dashboard` started; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
