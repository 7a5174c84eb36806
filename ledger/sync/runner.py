"""One ``ledger sync``: under the sync lock of the ledger home, each source of the sync file that is
due read from its watermark and ingested as the usual batches; a report per source."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from ..config import Home
from ..errors import LedgerError, Problem
from ..instants import iso
from . import bills, litellm_pg, state
from .config import Source


@dataclass(frozen=True)
class SourceReport:
    """What one run did with one source. Fields:

    - `name`, `kind`: the source.
    - `status`: ``synced`` (a batch was committed), ``nothing new`` (read, no row new), ``not due``
      (its `every` has not passed since its watermark moved), ``served`` (an otlp source: its
      receiver, ``ledger otlp serve``, commits it) or ``failed`` (see `problems`).
    - `read`, `new`, `duplicate`: rows read from the source, new to the ledger, already in it.
    - `batches`: the batches committed; `undone`: batches undone for a restated bill file.
    - `files`: bill-folder: file paths by what happened (new, restated, unchanged, settling).
    - `adjustments`: the open period rows of closed months were booked into, if any.
    - `watermark`: the source's position after the run (its kind's JSON).
    - `problems`: one line each; nothing of a failed read was ingested and its watermark stayed."""

    name: str
    kind: str
    status: str
    read: int = 0
    new: int = 0
    duplicate: int = 0
    batches: tuple[str, ...] = ()
    undone: tuple[str, ...] = ()
    files: dict = field(default_factory=dict)
    adjustments: tuple[str, ...] = ()
    watermark: dict = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"source": self.name, "kind": self.kind, "status": self.status, "read": self.read, "new": self.new,
                "duplicate": self.duplicate, "batches": list(self.batches), "undone": list(self.undone),
                "files": self.files, "adjustments": list(self.adjustments), "watermark": self.watermark,
                "problems": list(self.problems)}


def due(src: Source, mark: state.Mark, now: datetime) -> bool:
    """A source is due when it has no `every`, was never read, or its watermark is `every` old."""
    return src.every is None or mark.updated_at is None or now - mark.updated_at >= src.every


def run(sources: list[Source], home: Home, *, only: str | None = None, wait: bool = False,
        now: datetime | None = None) -> list[SourceReport]:
    """Sync `sources` (only the one named `only`, which is then read whether due or not) into the
    ledger `home`, one after another under the sync lock. Raises state.Busy when another sync holds
    it (unless `wait`). A source that fails is reported and the others are still read."""
    if only is not None and only not in {s.name for s in sources}:
        raise LedgerError([Problem(entry="source", message=f"no source named {only!r} (the sync file has "
                                                           f"{', '.join(s.name for s in sources)})")])
    with state.locked(home.path, wait=wait):
        now = now or datetime.now(timezone.utc)
        return [one(src, home, forced=only is not None, now=now) for src in sources if only in (None, src.name)]


def one(src: Source, home: Home, *, forced: bool, now: datetime) -> SourceReport:
    """One source read (call under the sync lock)."""
    if src.kind == "otlp":
        return SourceReport(name=src.name, kind=src.kind, status="served", watermark=state.read(home, src.name).position)
    mark = state.read(home, src.name)
    if not forced and not due(src, mark, now):
        return SourceReport(name=src.name, kind=src.kind, status="not due", watermark=mark.position)
    try:
        if src.kind == "litellm-postgres":
            return _litellm(src, home, now)
        return _folder(src, home, now)
    except LedgerError as e:
        return SourceReport(name=src.name, kind=src.kind, status="failed", problems=tuple(e.lines()),
                            watermark=state.read(home, src.name).position)


def _stamp(now: datetime):
    return lambda position, _batch: {**position, "checked_at": iso(now)}


def _litellm(src: Source, home: Home, now: datetime) -> SourceReport:
    result, _pulled, position = litellm_pg.sync(src, home)
    if result is None or result.batch_id is None:
        state.touch(home, src.name, src.kind, _stamp(now))
    if result is None:
        return SourceReport(name=src.name, kind=src.kind, status="nothing new",
                            watermark=state.read(home, src.name).position)
    return SourceReport(name=src.name, kind=src.kind, status="synced" if result.rows_new else "nothing new",
                        read=result.rows_read, new=result.rows_new, duplicate=result.rows_duplicate,
                        batches=(result.batch_id,) if result.batch_id else (),
                        adjustments=(result.booked_period,) if result.booked_period else (),
                        watermark=state.read(home, src.name).position)


def _folder(src: Source, home: Home, now: datetime) -> SourceReport:
    r, _position = bills.sync(src, home)
    if not r.batches:
        state.touch(home, src.name, src.kind, _stamp(now))
    status = "failed" if r.problems else "synced" if r.rows_new else "nothing new"
    return SourceReport(name=src.name, kind=src.kind, status=status, read=r.read, new=r.rows_new,
                        duplicate=r.duplicate, batches=tuple(r.batches), undone=tuple(r.undone),
                        files={"new": r.new, "restated": r.restated, "unchanged": r.unchanged, "settling": r.settling},
                        adjustments=tuple(sorted(set(r.booked))), watermark=state.read(home, src.name).position,
                        problems=tuple(str(p) for p in r.problems))
