"""The FOCUS export of the demo month passes `focus-validator --validate-version 1.0`.

focus-validator 1.0.0 (its newest release for Python 3.11) needs ``multimethod<1.11`` and pins an
older pandas, so it runs in a virtual environment of its own: the one named by LEDGER_FOCUS_VENV
(created there when missing, so CI can keep it between runs), else a fresh one for this session.
The validator reads its ISO 4217 list from a path relative to the working directory, so it runs
from its own site-packages folder.
"""
from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from decimal import Decimal as D
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ledger.cli import app
from ledger.export.focus import COLUMNS, FOCUS_COLUMNS

runner = CliRunner()


@pytest.fixture(scope="session")
def focus_validator(tmp_path_factory) -> tuple[Path, Path]:
    """(the focus-validator executable, the site-packages folder to run it from)."""
    given = os.environ.get("LEDGER_FOCUS_VENV")
    venv = Path(given) if given else tmp_path_factory.mktemp("focus-venv")
    exe, python = venv / "bin" / "focus-validator", venv / "bin" / "python"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        pip = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              "focus-validator==1.0.0", "multimethod<1.11"], capture_output=True, text=True)
        assert pip.returncode == 0, pip.stderr[-2000:]
    site = subprocess.run([str(python), "-c", "import focus_validator, os; "
                           "print(os.path.dirname(os.path.dirname(focus_validator.__file__)))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return exe, Path(site)


def validate(focus_validator, *paths: Path) -> list[subprocess.CompletedProcess]:
    """``focus-validator --data-file PATH --validate-version 1.0`` on each of `paths`, in order: one
    run of its command line per file, all in one process of its environment (its start and imports
    paid once: ``focus_support.run_validator``)."""
    from focus_support import run_validator

    exe, site = focus_validator
    return run_validator(exe, site, [["--data-file", str(p), "--validate-version", "1.0"] for p in paths])


def test_focus_export_of_the_demo_month_passes_the_validator(demo_ledger, tmp_path, focus_validator):
    result = demo_ledger
    out = tmp_path / "focus.csv"
    r = runner.invoke(app, ["export", "--period", "2026-10", "--focus", str(out), "--focus-version", "1.0"])
    assert r.exit_code == 0, r.output
    assert "FOCUS 1.0 CSV" in r.output

    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert list(rows[0]) == list(COLUMNS) and set(FOCUS_COLUMNS) <= set(rows[0])
    assert len(rows) == result.summary["lines"]
    # cost columns are decimals that add up to the run total, exactly
    assert sum(D(r["BilledCost"]) for r in rows) == D(result.summary["total"])
    assert all(r["EffectiveCost"] == r["BilledCost"] == r["ListCost"] == r["ContractedCost"] for r in rows)
    assert {r["BillingPeriodStart"] for r in rows} == {"2026-10-01T00:00:00Z"}
    assert {r["x_Kind"] for r in rows} == {"tenant", "idle_slack", "idle_reserve", "unallocated"}
    assert {r["x_Tenant"] for r in rows} >= {"acme", "globex", "hooli", "initech", "umbrella"}

    # the harness can fail: a text in a cost column is caught
    bad = tmp_path / "bad.csv"
    rows[0]["BilledCost"] = "twelve"
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    bad.write_text(buf.getvalue(), encoding="utf-8")

    check, check_bad = validate(focus_validator, out, bad)  # each file validated on its own
    assert check.returncode == 0 and "Validation succeeded." in check.stdout, check.stdout + check.stderr
    assert "Validation failed!" in check_bad.stdout and "BilledCost" in check_bad.stdout
