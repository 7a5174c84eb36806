"""Source ``bill-folder``: FOCUS files (CSV, ``.csv.gz``, Parquet) a cloud export drops into a folder,
each new or changed file ingested once, as ``ledger ingest bill FILE`` ingests it (one batch a file).

The watermark is the files read: each file's path in the folder, the SHA-256 of its bytes and the
batch that took it. A file whose bytes are the ones recorded is skipped without being read; a new
file is ingested; a file whose bytes changed is a **restated** export, and docs/reconcile.md says what
that means: its rows that changed have new keys, so ingesting it beside the first version would count
both. So the batch of the earlier version is undone first (``ledger batches undo``), then the new
version is ingested; when that batch's period is closed it cannot be undone, and the restated file is
refused (one problem: the cloud's corrections of a closed month come as correction rows of a later
export, booked as adjustments). A file changed within `settle` is left for the next run (a copy still
being written). A file removed from the folder stays in the ledger.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import store
from ..config import Home
from ..errors import Problem
from ..ingest import IngestError, undo_batch
from ..ingest.bill import ingest_bill
from ..ingest.opening import file_sha256
from ..models import IngestBatch
from . import state
from .config import Source

SUFFIXES = (".csv", ".csv.gz", ".parquet", ".parquet.gz", ".pq")


@dataclass
class FolderRun:
    """What one run did with a folder: files `new`, `restated`, `unchanged`, `settling` (left for the
    next run), rows `read`, `new`, `duplicate`, the `batches` written and undone (`undone`), and the
    `problems` (a refused file, one line each)."""

    new: list[str] = field(default_factory=list)
    restated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    settling: list[str] = field(default_factory=list)
    read: int = 0
    rows_new: int = 0
    duplicate: int = 0
    batches: list[str] = field(default_factory=list)
    undone: list[str] = field(default_factory=list)
    booked: list[str] = field(default_factory=list)
    problems: list = field(default_factory=list)


def bill_files(folder: Path) -> list[Path]:
    """The FOCUS files under `folder` (and its subfolders, as exports nest them by month), by path."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name.lower().endswith(SUFFIXES)
                  and not p.name.startswith("."))


def sync(src: Source, home: Home) -> tuple[FolderRun, dict]:
    """Ingest the folder's new and changed files, one batch each, the watermark moved with each batch.
    Returns the run and the watermark now. A folder that is not there is one problem."""
    run = FolderRun()
    folder = src.path
    if folder is None or not folder.is_dir():
        run.problems.append(Problem(file=str(folder), message=f"source {src.name}: no such folder"))
        return run, state.read(home, src.name).position
    now = time.time()
    for path in bill_files(folder):
        rel = path.relative_to(folder).as_posix()
        if now - path.stat().st_mtime < src.settle.total_seconds():
            run.settling.append(rel)
            continue
        _one(src, home, path, rel, run)
    return run, state.read(home, src.name).position


def _one(src: Source, home: Home, path: Path, rel: str, run: FolderRun) -> None:
    """One file: skipped, ingested, or (restated) its earlier batch undone and the file ingested."""
    files = state.read(home, src.name).position.get("files", {})
    sha = file_sha256(path)
    before = files.get(rel)
    if before and before.get("sha256") == sha:
        run.unchanged.append(rel)
        return
    if before and before.get("batch_id"):
        if not _undo(home, before["batch_id"], path, run):
            return
    entry = {"sha256": sha, "bytes": path.stat().st_size}

    def moved(position: dict, batch_id: str | None) -> dict:
        return {**position, "files": {**position.get("files", {}), rel: {**entry, "batch_id": batch_id}}}

    try:
        result = ingest_bill([path], as_adjustment=src.as_adjustment, home=home,
                             on_commit=state.hook(src.name, src.kind, moved))
    except IngestError as e:
        run.problems += e.problems
        return
    (run.restated if before else run.new).append(rel)
    run.read += result.rows_read
    run.rows_new += result.rows_new
    run.duplicate += result.rows_duplicate
    if result.batch_id:
        run.batches.append(result.batch_id)
    if result.booked_period:
        run.booked.append(result.booked_period)


def _undo(home: Home, batch_id: str, path: Path, run: FolderRun) -> bool:
    """Undo the batch of a restated file's earlier version; False (a problem said) when its period is
    closed. A batch already gone (undone by hand, or by a run killed before it ingested the new
    version) is nothing to undo."""
    with store.session(home.database_url) as s:
        if s.get(IngestBatch, batch_id) is None:
            return True
        try:
            undo_batch(s, batch_id, home=home)
        except store.StoreError as e:
            run.problems.append(Problem(file=str(path), message=f"restated, but the batch {batch_id} of its earlier "
                                                                f"version cannot be undone ({e}); the file is not "
                                                                "ingested: a closed month's corrections come as "
                                                                "correction rows of a later export"))
            return False
    run.undone.append(batch_id)
    return True
