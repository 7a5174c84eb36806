"""The receiver's spool and its micro-batches: spans are durable once they are written and fsynced to a
segment file in the ledger home (``<home>/spool/otlp/<name>/seg-<n>.jsonl``, one OTLP JSON document a
request); a committer thread turns the segments into ingest batches every `flush_every` seconds or
`flush_spans` spans, through the ``otel`` adapter and its map (the batches ``ledger ingest requests
--source otel`` makes of the same file), each with the source's watermark (counts of spans) in its
transaction, and removes a segment once its batch is committed.

A receiver killed at any point loses nothing it answered 200 for: the segments it left are
committed when it starts again (a request cut off in the middle of its write was never answered,
so its partial line is cut off too and the exporter sends it again); a segment committed but not
yet removed is read again, and every span of it is a duplicate by its key (trace id and span id),
so nothing counts twice. A segment the ingest refuses (a map that names an unknown tenant, say) is
moved to ``failed/`` beside its problems, and the receiver goes on; it can be ingested by hand with
``ledger ingest requests --source otel`` once the cause is fixed.
"""
from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..config import Home
from ..errors import LedgerError
from ..ingest import IngestError
from ..ingest.sources import ingest_from
from . import state

FOLDER = ("spool", "otlp")


class SpoolBusy(LedgerError):
    """Another receiver serves this spool (the same source name in the same ledger home)."""


@dataclass(frozen=True)
class Settings:
    """A receiver's settings. Fields: `name` (the source: its spool and watermark), `map` (the otel
    adapter map), `register_new`, `as_adjustment` (as the ingest options), `flush_every` (seconds
    between micro-batches), `flush_spans` (a micro-batch as soon as this many spans wait),
    `max_pending_spans` (spans spooled and not yet committed above which requests get 429),
    `max_body_bytes` (a body above it, packed or unpacked, gets 413), `token` (the bearer token a
    request must carry, or None), `operations` (the gen_ai.operation.name values read)."""

    name: str
    map: Path
    register_new: bool = False
    as_adjustment: bool = True
    flush_every: float = 2.0
    flush_spans: int = 20000
    max_pending_spans: int = 500000
    max_body_bytes: int = 16 << 20
    token: str | None = None
    operations: tuple[str, ...] = ("chat", "text_completion", "generate_content", "embeddings")


def _fsync_dir(d: Path) -> None:
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Spool:
    """The segments of one receiver, and the committer that makes them batches (one thread)."""

    def __init__(self, settings: Settings, home: Home, log=None):
        self.s, self.home = settings, home
        self.dir = home.path.joinpath(*FOLDER, settings.name)
        self.failed = self.dir / "failed"
        self.failed.mkdir(parents=True, exist_ok=True)
        self._lockfile = open(self.dir / ".receiver.lock", "a+")
        try:
            fcntl.flock(self._lockfile, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SpoolBusy(f"another receiver serves {self.dir}: one receiver a source name and home") from None
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.lock = threading.Condition()
        self.ready = self._recover()  # segments of an earlier run, committed first
        self.seq = max([int(p.stem.split("-")[1]) for p in self.ready] or [0]) + 1
        self.fh = None
        self.pending = 0  # spans written and not committed
        self.kept_in: dict[str, int] = {}  # segment name -> the spans written to it
        self.since = None  # when the oldest of them was written
        self.counts = {"spans": 0, "dropped": 0, "rejected": 0}  # received and not yet committed with a batch
        self.failing: str | None = None  # why the last commit could not be made (the DB is down ...)
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name="otlp-committer", daemon=True)

    # ---- the request side --------------------------------------------------------------------------

    def append(self, line: bytes | None, spans: int, dropped: int, rejected: int, kept: int) -> None:
        """Write one request's kept spans (`line`) durably (write, flush, fsync) and count the rest."""
        with self.lock:
            self.counts["spans"] += spans
            self.counts["dropped"] += dropped
            self.counts["rejected"] += rejected
            if line is None:
                return
            if self.fh is None:
                path = self.dir / f"seg-{self.seq:012d}.jsonl"
                self.fh = open(path, "ab")
                _fsync_dir(self.dir)
            self.fh.write(line + b"\n")
            self.fh.flush()
            os.fsync(self.fh.fileno())
            self.pending += kept
            name = Path(self.fh.name).name
            self.kept_in[name] = self.kept_in.get(name, 0) + kept
            self.since = self.since or time.monotonic()
            if self.pending >= self.s.flush_spans:
                self.lock.notify_all()

    def behind(self) -> tuple[int, str] | None:
        """(HTTP status, reason) when requests must wait: 503 while commits fail, 429 while too many
        spans wait to be committed; None when the receiver keeps up."""
        if self.failing:
            return 503, f"the ledger cannot commit now ({self.failing})"
        if self.pending >= self.s.max_pending_spans:
            return 429, f"{self.pending} spans wait to be committed"
        return None

    # ---- the committer -----------------------------------------------------------------------------

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Commit what is spooled, then stop the committer."""
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        self.thread.join()
        self._lockfile.close()

    def _recover(self) -> list[Path]:
        """The segments a killed receiver left, each cut back to its last whole line (a request whose
        write was cut off was never answered 200: its exporter sends it again)."""
        segs = sorted(self.dir.glob("seg-*.jsonl"))
        for p in segs:
            data = p.read_bytes()
            if data and not data.endswith(b"\n"):
                with open(p, "r+b") as fh:
                    fh.truncate(data.rfind(b"\n") + 1)
                    os.fsync(fh.fileno())
        return [p for p in segs if p.stat().st_size]

    def _rotate(self) -> None:
        """Close the segment being written; it joins the ready ones (call under the lock)."""
        if self.fh is not None:
            self.fh.close()
            self.ready.append(self.dir / f"seg-{self.seq:012d}.jsonl")
            self.seq += 1
            self.fh = None

    def _due(self) -> bool:
        if self.stopping or self.ready:
            return True
        return self.pending > 0 and (self.pending >= self.s.flush_spans or
                                     time.monotonic() - self.since >= self.s.flush_every)

    def _run(self) -> None:
        while True:
            with self.lock:
                while not self._due():
                    self.lock.wait(timeout=self.s.flush_every / 4)
                self._rotate()
                batch, stopping = list(self.ready), self.stopping
            if batch:
                self._commit_all(batch)
            with self.lock:
                if stopping and not self.ready and self.fh is None:
                    return

    def _commit_all(self, segments: list[Path]) -> None:
        """Commit the ready segments in order; on a failure of the ledger (not of the data) keep them,
        say why to requests (503) and try again after a pause."""
        for seg in segments:
            try:
                self._commit(seg)
            except IngestError as e:
                self._quarantine(seg, e)
            except Exception as e:  # noqa: BLE001 - the DB or the disk: keep the segment, retry
                with self.lock:
                    self.failing = (str(e).splitlines() or [type(e).__name__])[0][:200]
                self.log(f"ledger otlp serve: cannot commit {seg.name}: {self.failing} (retrying)")
                time.sleep(min(5.0, self.s.flush_every * 2))
                return
            with self.lock:
                self.ready.remove(seg)
                self.failing = None
                self.pending = max(0, self.pending - self.kept_in.pop(seg.name, 0))
                if self.pending == 0:
                    self.since = None

    def _commit(self, seg: Path) -> None:
        """One segment as one batch, the watermark's counts moved with it; the segment removed after."""
        with self.lock:
            received, self.counts = self.counts, {k: 0 for k in self.counts}

        def moved(position: dict, batch_id: str | None) -> dict:
            out = {k: position.get(k, 0) + received.get(k, 0) for k in received}
            return {**position, **out, "segment": seg.name}

        try:
            result = ingest_from("otel", "requests", [seg], self.s.map, register_new=self.s.register_new,
                                 as_adjustment=self.s.as_adjustment, home=self.home,
                                 on_commit=state.hook(self.s.name, "otlp", moved))
        except BaseException:
            with self.lock:  # not committed: counted with the next batch
                for k, v in received.items():
                    self.counts[k] += v
            raise
        seg.unlink()
        _fsync_dir(self.dir)
        self.log(f"ledger otlp serve: {seg.name}: {result.rows_read} spans read, {result.rows_new} new, "
                 f"{result.rows_duplicate} duplicate" + (f" (batch {result.batch_id})" if result.batch_id else ""))

    def _quarantine(self, seg: Path, e: IngestError) -> None:
        """A segment the ingest refuses: moved to failed/ with its problems; the receiver goes on."""
        target = self.failed / seg.name
        seg.replace(target)
        (self.failed / (seg.stem + ".problems.txt")).write_text("\n".join(e.lines()) + "\n", encoding="utf-8")
        _fsync_dir(self.dir)
        self.log(f"ledger otlp serve: {seg.name} refused, kept in {target}: {e.lines()[0]}")

