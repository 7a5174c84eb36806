"""`ledger sync`, kind bill-folder: FOCUS files dropped into a real folder, read with the issue's sync file.

The bills are the samples of tests/data/bills/ (its README says where they come from): AWS's FOCUS 1.0
export of October 2026 and the FinOps Foundation's FOCUS sample. A new file is ingested once, an
unchanged one skipped without a batch, a restated one (same path, other bytes) replaces its earlier
batch as docs/reconcile.md says (undo, then ingest: the ledger holds the restated amounts, never
both), and once its month is closed a restated file is refused and nothing changes.
"""
from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import time
from decimal import Decimal
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ledger import config, facts, store
from ledger.sync import cli as sync_cli

pytestmark = pytest.mark.store
BILLS = Path(__file__).resolve().parent / "data" / "bills"
# the example, as written (the gateway's database is not reached: --source aws-bill)
SYNC_TOML = '''[[source]]
name = "gateway"
kind = "litellm-postgres"          # LiteLLM_SpendLogs in LiteLLM's PostgreSQL
url = "postgresql://reader@db:5432/litellm"
map = "litellm-map.toml"            # the same map as `ingest requests --source litellm`

[[source]]
name = "aws-bill"
kind = "bill-folder"                # FOCUS files dropped into a folder
path = "exports/aws"
'''


def cli(*args: str):
    app = typer.Typer(add_completion=False)
    sync_cli.register(app)
    app.command("noop")(lambda: None)
    return CliRunner().invoke(app, list(args))


def settled(p: Path) -> None:
    """Older than the default settle time (1 minute): a copy that is complete."""
    old = time.time() - 3600
    os.utime(p, (old, old))


def billed_in_ledger() -> Decimal:
    with store.session() as s:
        con = facts.open_ledger_facts(s, config.ledger_home())
        return Decimal(str(con.execute("SELECT sum(CAST(billed_cost AS DECIMAL(38, 12))) FROM bill").fetchone()[0]))


def billed_in_file(p: Path) -> Decimal:
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8", newline="") as fh:
        return sum((Decimal(r["BilledCost"]) for r in csv.DictReader(fh)), Decimal(0))


def sync(cfg: Path) -> tuple[int, dict, str]:
    r = cli("sync", "--config", str(cfg), "--source", "aws-bill", "--json")
    return r.exit_code, json.loads(r.stdout)[0], r.stderr


def test_new_files_once_unchanged_skipped_restated_replaced_and_refused_once_closed(ledger_home, tmp_path):
    cfg = tmp_path / "sync.toml"
    cfg.write_text(SYNC_TOML, encoding="utf-8")
    folder = tmp_path / "exports" / "aws" / "2026-10"
    folder.mkdir(parents=True)
    aws = folder / "aws-focus.csv"
    shutil.copy(BILLS / "aws-focus-2026-10.csv", aws)
    settled(aws)
    rows = sum(1 for _ in csv.DictReader(aws.open(encoding="utf-8")))

    code, rep, err = sync(cfg)
    assert code == 0, err
    assert (rep["status"], rep["read"], rep["new"], rep["files"]["new"]) == ("synced", rows, rows,
                                                                             ["2026-10/aws-focus.csv"])
    [first] = rep["batches"]
    assert rep["watermark"]["files"]["2026-10/aws-focus.csv"]["batch_id"] == first
    assert billed_in_ledger() == billed_in_file(aws)

    # unchanged: skipped without being read, no batch; a file still being written waits
    fresh = folder / "late.csv"
    shutil.copy(BILLS / "aws-focus-2026-10.csv", fresh)
    code, rep, _ = sync(cfg)
    assert (code, rep["read"], rep["batches"], rep["files"]["unchanged"], rep["files"]["settling"]) == \
        (0, 0, [], ["2026-10/aws-focus.csv"], ["2026-10/late.csv"])
    fresh.unlink()

    # a new file, gzipped: ingested once
    sample = folder / "focus-sample.csv.gz"
    sample.write_bytes(gzip.compress((BILLS / "focus-sample-1.0.csv").read_bytes()))
    settled(sample)
    code, rep, _ = sync(cfg)
    assert (code, rep["files"]["new"], len(rep["batches"])) == (0, ["2026-10/focus-sample.csv.gz"], 1)
    assert billed_in_ledger() == billed_in_file(aws) + billed_in_file(sample)

    # restated: AWS rewrites October's export (one row's cost changes): the earlier batch is undone and the
    # new version ingested; the ledger holds the restated amounts, not both versions
    text = aws.read_text(encoding="utf-8").splitlines(keepends=True)
    text[1] = text[1].replace("us-east-1a,0.0,", "us-east-1a,12.5,", 1)
    aws.write_text("".join(text), encoding="utf-8")
    settled(aws)
    code, rep, _ = sync(cfg)
    assert (code, rep["files"]["restated"], rep["undone"]) == (0, ["2026-10/aws-focus.csv"], [first])
    assert billed_in_ledger() == billed_in_file(aws) + billed_in_file(sample)
    assert billed_in_file(aws) == Decimal("12.5") + billed_in_file(BILLS / "aws-focus-2026-10.csv")

    # October closed: a restated file cannot replace its batch; refused, one line, nothing changes
    with store.session() as s:
        store.close_period(s, name="2026-10")
    before = billed_in_ledger()
    aws.write_text("".join(text).replace("us-east-1a,12.5,", "us-east-1a,13.5,", 1), encoding="utf-8")
    settled(aws)
    code, rep, err = sync(cfg)
    assert code == 1 and rep["status"] == "failed"
    assert "aws-focus.csv: restated, but the batch" in err and "cannot be undone" in err
    assert billed_in_ledger() == before
    # and again the next run: the watermark did not move
    assert sync(cfg)[0] == 1
