"""Benchmark: how long each `ledger` command takes to answer, beside the import of what it stands on.

    python bench/startup.py --repeat 7

Issue 27's targets, measured in one run on one machine:

- ``ledger --help`` and a feature's own ``--help`` (``ledger ingest --help``, ``ledger report --help``)
  within 3x the floor ``python -c "import typer, rich.console"``: the root lists its commands from a
  table and imports none of them, and a feature's ``cli.py`` imports its stack inside its commands;
- ``ledger runs``, ``ledger batches`` and ``ledger ingest requests`` of a one-row file within 2x the
  floor ``python -c "import duckdb, sqlalchemy, typer, rich.console"``: what a command that reads
  the ledger DB and the facts cannot do without (``runs`` and ``batches`` read through SQLAlchemy
  Core, without SQLModel or DuckDB).

Each figure is the wall time of a whole process (interpreter start, imports, the work, exit), the
median of ``--repeat`` runs; the floors are run interleaved with the commands, so a machine whose
load drifts skews both alike. The commands run in a ledger home made for the run (``ledger init``,
the shipped price books loaded, one tenant and product), which is removed afterwards; each one-row
ingest is a new request, so each is a real batch, not a duplicate.

Python's bytecode: an installed ledger has its modules compiled (pip writes the ``.pyc`` files at
install, and Python writes them at a first run), so by default every process of the run reads and
writes bytecode in a cache of the run's own folder (``PYTHONPYCACHEPREFIX``, whatever
``PYTHONDONTWRITEBYTECODE`` says), and each command and floor runs once untimed first.
``--source`` times what a checkout run with ``PYTHONDONTWRITEBYTECODE=1`` and no ``__pycache__`` does:
every module of the ledger compiled from its source at every start (0.07 to 0.08 s of CPU for the
one-row ingest's 46 modules), the floors' packages read from their installed bytecode.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOOR_HELP = [sys.executable, "-c", "import typer, rich.console"]
FLOOR_DB = [sys.executable, "-c", "import duckdb, sqlalchemy, typer, rich.console"]
#: the same with SQLModel (pydantic under it), which the design card fixes for the store: every command
#: that writes the ledger DB imports it (``runs`` and ``batches``, which only read, do not), so this is
#: printed too, for what is left above it
FLOOR_STORE = [sys.executable, "-c", "import duckdb, sqlalchemy, sqlmodel, typer, rich.console"]
#: the installed `ledger` script beside this interpreter (what users run), else the module
LEDGER = [str(Path(sys.executable).with_name("ledger"))] if Path(sys.executable).with_name("ledger").exists() \
    else [sys.executable, "-m", "ledger.cli"]

ROW = ("request_id,occurred_at,tenant,product,model,provider,input_tokens,output_tokens,status\n"
       "r-{n},2026-10-05T10:00:00Z,acme,chat,gpt-5-mini,openai,100,20,ok\n")


def _time(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one whole process, read with wait4."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    elapsed = time.perf_counter() - t
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {err.strip()}")
    return elapsed, usage.ru_utime + usage.ru_stime


def _setup(home: Path, env: dict) -> None:
    for args in (["init"], ["pricebook", "load"], ["dims", "add", "tenant", "acme"],
                 ["dims", "add", "product", "chat"]):
        r = subprocess.run(LEDGER + args, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"ledger {' '.join(args)} failed: {r.stderr.strip() or r.stdout.strip()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7, help="runs of each command (the median is printed)")
    ap.add_argument("--source", action="store_true",
                    help="compile the ledger from source at every start, as a checkout with PYTHONDONTWRITEBYTECODE "
                         "does (default: bytecode cached in the run's folder, as an installed ledger has it)")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ledger-startup-"))
    try:
        env = {**os.environ, "LEDGER_HOME": str(work / "home"), "COLUMNS": "100"}
        env.pop("LEDGER_DATABASE_URL", None)
        if not args.source:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        _setup(work / "home", env)
        serial = iter(range(10**9))

        def one_row_ingest() -> list[str]:
            f = work / "one-row.csv"
            f.write_text(ROW.format(n=next(serial)))
            return LEDGER + ["ingest", "requests", str(f)]

        cases: list[tuple[str, object, list[str]]] = [
            ("ledger --help", lambda: LEDGER + ["--help"], FLOOR_HELP),
            ("ledger version", lambda: LEDGER + ["version"], FLOOR_HELP),
            ("ledger ingest --help", lambda: LEDGER + ["ingest", "--help"], FLOOR_HELP),
            ("ledger report --help", lambda: LEDGER + ["report", "--help"], FLOOR_HELP),
            ("ledger runs", lambda: LEDGER + ["runs"], FLOOR_DB),
            ("ledger batches", lambda: LEDGER + ["batches"], FLOOR_DB),
            ("ledger ingest requests (1 row)", one_row_ingest, FLOOR_DB),
        ]
        floors: dict[str, list[tuple[float, float]]] = {" ".join(FLOOR_HELP[2:]): [], " ".join(FLOOR_DB[2:]): []}
        rows = []
        if not args.source:  # the bytecode of every command and floor written once, untimed
            for _, make, floor in cases:
                _time(floor, env)
                _time(make(), env)
            _time(FLOOR_STORE, env)
        for name, make, floor in cases:
            own, base = [], []
            for _ in range(args.repeat):
                base.append(_time(floor, env))
                own.append(_time(make(), env))
            floors[" ".join(floor[2:])] += base
            wall, cpu = (statistics.median(t[i] for t in own) for i in (0, 1))
            f_wall, f_cpu = (statistics.median(t[i] for t in base) for i in (0, 1))
            target = 3 if floor is FLOOR_HELP else 2
            rows.append((name, wall, f_wall, cpu, f_cpu, target))
        load = os.getloadavg()[0]
        code = "compiled from source at each start" if args.source else "bytecode cached"
        print(f"# ledger startup, medians of {args.repeat} runs (load {load:.1f}, {os.cpu_count()} cores; {code}); "
              "wall: seconds to answer, cpu: user + system seconds of the process (what a busy machine skews least)")
        print(f"{'command':32} {'wall':>6} {'floor':>6} {'ratio':>6} {'cpu':>6} {'floor':>6} {'ratio':>6} {'target':>7}")
        for name, wall, f_wall, cpu, f_cpu, target in rows:
            mark = "ok" if cpu / f_cpu <= target else "OVER"
            print(f"{name:32} {wall:6.3f} {f_wall:6.3f} {wall / f_wall:6.2f} {cpu:6.3f} {f_cpu:6.3f} {cpu / f_cpu:6.2f} "
                  f"{'<=' + str(target) + 'x':>7} {mark}")
        store = [_time(FLOOR_STORE, env) for _ in range(args.repeat)]
        floors[" ".join(FLOOR_STORE[2:])] = store
        s_cpu = statistics.median(t[1] for t in store)
        for name, wall, f_wall, cpu, f_cpu, target in rows:
            if target == 2:
                print(f"{name:32} cpu {cpu:.3f} s = {cpu / s_cpu:.2f}x the store stack's import ({s_cpu:.3f} s)")
        for floor, times in floors.items():
            print(f"floor `{floor}`: median wall {statistics.median(t[0] for t in times):.3f} s, "
                  f"cpu {statistics.median(t[1] for t in times):.3f} s over {len(times)} runs")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
