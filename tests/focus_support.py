"""Running focus-validator's command line on several files in one interpreter of its virtual environment.

Each run of the validator is its ``focus-validator`` script as a user types it (``focus_validator.main``'s
``main()`` with the given arguments, from its site-packages folder), with its own stdout, stderr and exit
status; only the interpreter and the validator's imports (a second or more each time) are shared by the
files of one call. Used by test_export_focus.py (focus-validator 1.0.0) and test_export_focus12.py (2.2.1).
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

#: Reads a JSON list of argument lists on stdin; runs the validator's `main()` once per list, as the
#: ``focus-validator`` script does (``sys.exit(main())``), each with stdout and stderr of its own (UTF-8,
#: as PYTHONIOENCODING=utf-8 makes them in a process of its own); writes one JSON list of
#: {"returncode", "stdout", "stderr"} into the file named by its one argument (not onto stdout, where
#: the validator might write too). An exception is a traceback on that run's stderr and status 1, as
#: the script's would be.
BATCH = r"""
import contextlib, io, json, sys, traceback
from focus_validator.main import main

RESULTS = sys.argv[1]

def stream():
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)

results = []
for argv in json.load(sys.stdin):
    out, err = stream(), stream()
    sys.argv = ["focus-validator", *argv]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main()
        except SystemExit as e:
            code = e.code
        except BaseException:
            traceback.print_exc()
            code = 1
    code = 0 if code is None else code if isinstance(code, int) else 1
    results.append({"returncode": code, "stdout": out.buffer.getvalue().decode("utf-8"),
                    "stderr": err.buffer.getvalue().decode("utf-8")})
with open(RESULTS, "w", encoding="utf-8") as fh:
    json.dump(results, fh)
"""


def run_validator(exe: Path, site: Path, runs: list[list[str]], *, timeout: int = 600
                  ) -> list[subprocess.CompletedProcess]:
    """Run the validator whose script is `exe` once per argument list in `runs`, all in one process of
    its virtual environment (the script's interpreter), from `site`; one CompletedProcess per run, in
    order, as ``subprocess.run([exe, *args], capture_output=True, text=True)`` would return it."""
    python = exe.parent / "python"
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        proc = subprocess.run([str(python), "-c", BATCH, str(results)], input=json.dumps(runs), cwd=site,
                              capture_output=True, text=True, encoding="utf-8",
                              timeout=timeout * max(1, len(runs)), env={**os.environ, "PYTHONIOENCODING": "utf-8"})
        assert proc.returncode == 0 and results.is_file(), (proc.stdout + proc.stderr)[-3000:]
        done = json.loads(results.read_text(encoding="utf-8"))
    assert len(done) == len(runs), done
    return [subprocess.CompletedProcess([str(exe), *args], d["returncode"], d["stdout"], d["stderr"])
            for args, d in zip(runs, done)]
