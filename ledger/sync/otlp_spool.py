"""The receiver's spool and its micro-batches: a request is durable once it is written and fsynced to a
segment file in the ledger home (``<home>/spool/otlp/<name>/seg-<n>-<run>.jsonl``): its kept spans as
OTLP JSON documents, then one **tally line** ``{"ledgerOtlp": {"spans": S, "dropped": D, "rejected": R,
"kept": K}}`` that counts the whole request (a request of non-GenAI spans only is its tally line
alone). A committer thread turns the segments into ingest batches every `flush_every` seconds or
`flush_spans` spans, through the ``otel`` adapter and its map (the batches ``ledger ingest requests
--source otel`` makes of the same file: the adapter reads no span from a tally line), each with the
source's watermark (the segment's tallies added to its counts) in its transaction, and removes a
segment once its batch is committed; a segment without a kept span moves the watermark alone.

A receiver killed at any point loses nothing it answered 200 for, counts included: the segments it
left are committed when it starts again. A request cut off in the middle of its write was never
answered: the segment is cut back to the end of its last tally line, so neither its spans nor its
counts stay, and the exporter sends it again. A segment committed but not yet removed is read
again: every span of it is a duplicate by its key (trace id and span id), and its tallies are not
added twice because the watermark names the last segment committed (segment names are never used
twice: `<run>` is random to each start).

Stopped (SIGTERM, Ctrl-C), the committer commits what is spooled; while the ledger cannot commit it
keeps trying for `stop_grace` seconds, then gives up: the segments left are named, and committed
at the next start. A segment the ingest refuses (a map that names an unknown tenant, say) is
moved to ``failed/`` beside its problems, and the receiver goes on; it can be ingested by hand with
``ledger ingest requests --source otel`` once the cause is fixed.
"""
from __future__ import annotations

import fcntl
import json
import os
import secrets
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
#: How a segment's tally line begins (the line that ends each request's record).
TALLY = b'{"ledgerOtlp":'
COUNTS = ("spans", "dropped", "rejected")


class SpoolBusy(LedgerError):
    """Another receiver serves this spool (the same source name in the same ledger home)."""


@dataclass(frozen=True)
class Settings:
    """A receiver's settings. Fields: `name` (the source: its spool and watermark), `map` (the otel
    adapter map), `register_new`, `as_adjustment` (as the ingest options), `flush_every` (seconds
    between micro-batches), `flush_spans` (a micro-batch as soon as this many spans wait),
    `max_pending_spans` (spans spooled and not yet committed above which requests get 429),
    `max_body_bytes` (a body above it, packed or unpacked, gets 413), `token` (the bearer token a
    request must carry, or None), `operations` (the gen_ai.operation.name values read), `stop_grace`
    (seconds a stopping receiver keeps trying to commit while the ledger cannot)."""

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
    stop_grace: float = 30.0


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
        self.run = secrets.token_hex(6)  # segment names never repeat, so the watermark's last one is this one
        self.fh = None
        self.pending = 0  # spans written and not committed
        self.kept_in: dict[str, int] = {}  # segment name -> the spans written to it
        self.since = None  # when the segment being written was first written
        self.failing: str | None = None  # why the last commit could not be made (the DB is down ...)
        self.stopping = False
        self.deadline: float | None = None  # when a stopping committer gives up (monotonic)
        self.thread = threading.Thread(target=self._run, name="otlp-committer", daemon=True)

    # ---- the request side --------------------------------------------------------------------------

    def append(self, line: bytes | None, spans: int, dropped: int, rejected: int, kept: int) -> None:
        """Write one request durably (write, flush, fsync): its kept spans (`line`, or None) and its
        tally line."""
        tally = TALLY + json.dumps({"spans": spans, "dropped": dropped, "rejected": rejected, "kept": kept},
                                   separators=(",", ":")).encode() + b"}\n"
        with self.lock:
            if self.fh is None:
                self.fh = open(self._path(self.seq), "ab")
                _fsync_dir(self.dir)
            self.fh.write((line + b"\n" + tally) if line is not None else tally)
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

    def stop(self) -> list[str]:
        """Commit what is spooled, then stop the committer. While the ledger cannot commit, it keeps
        trying for `stop_grace` seconds, then gives up: returns the names of the segments left in the
        spool (committed at the next start), [] when everything was committed."""
        with self.lock:
            self.stopping = True
            self.deadline = time.monotonic() + self.s.stop_grace
            self.lock.notify_all()
        # a commit that hangs (a database that does not answer) is bounded too: the thread is a
        # daemon, and a commit cut off by the exit is a batch not made, as after a kill -9
        self.thread.join(timeout=self.s.stop_grace + 5)
        with self.lock:
            if self.fh is not None:
                self.fh.close()
                self.fh = None
            left = sorted(p.name for p in self.dir.glob("seg-*.jsonl") if p.stat().st_size)
        self._lockfile.close()
        return left

    def _path(self, seq: int) -> Path:
        return self.dir / f"seg-{seq:012d}-{self.run}.jsonl"

    def _recover(self) -> list[Path]:
        """The segments a killed receiver left, each cut back to the end of its last tally line (a
        request whose write was cut off was never answered 200: its exporter sends it again); empty
        ones removed."""
        segs = sorted(self.dir.glob("seg-*.jsonl"))
        for p in segs:
            data = p.read_bytes()
            end = _whole(data)
            if end < len(data):
                with open(p, "r+b") as fh:
                    fh.truncate(end)
                    os.fsync(fh.fileno())
            if not end:
                p.unlink()
        _fsync_dir(self.dir)
        return [p for p in segs if p.exists()]

    def _rotate(self) -> None:
        """Close the segment being written; it joins the ready ones (call under the lock)."""
        if self.fh is not None:
            self.fh.close()
            self.ready.append(self._path(self.seq))
            self.seq += 1
            self.fh = None
            self.since = None

    def _due(self) -> bool:
        if self.stopping or self.ready:
            return True
        return self.fh is not None and (self.pending >= self.s.flush_spans or
                                        time.monotonic() - self.since >= self.s.flush_every)

    def _gave_up(self) -> bool:
        """A stopping committer whose grace is over (call under the lock)."""
        return self.stopping and self.deadline is not None and time.monotonic() >= self.deadline

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
                if self._gave_up():
                    self.log(f"ledger otlp serve: gave up committing after {self.s.stop_grace:g}s of stopping "
                             f"({self.failing})")
                    return

    def _commit_all(self, segments: list[Path]) -> None:
        """Commit the ready segments in order; on a failure of the ledger (not of the data) keep them,
        say why to requests (503) and try again after a pause (cut short by a stop, never past the
        stop's grace)."""
        for seg in segments:
            try:
                try:
                    self._commit(seg)
                except IngestError as e:
                    self._count_alone(seg)
                    self._quarantine(seg, e)
            except Exception as e:  # noqa: BLE001 - the DB or the disk: keep the segment, retry
                with self.lock:
                    self.failing = (str(e).splitlines() or [type(e).__name__])[0][:200]
                self.log(f"ledger otlp serve: cannot commit {seg.name}: {self.failing} (retrying)")
                with self.lock:  # a stop wakes it; a stopping one never waits past its grace
                    pause = min(5.0, self.s.flush_every * 2)
                    if self.deadline is not None:
                        pause = min(pause, max(0.0, self.deadline - time.monotonic()))
                    if pause > 0:
                        self.lock.wait(timeout=pause)
                return
            with self.lock:
                self.ready.remove(seg)
                self.failing = None
                self.pending = max(0, self.pending - self.kept_in.pop(seg.name, 0))

    def _moved(self, seg: Path, received: dict):
        """The watermark's change for `seg`: its tallies added, unless the watermark already names it (a
        segment committed whose removal a kill cut off)."""

        def moved(position: dict, batch_id: str | None) -> dict:
            if position.get("segment") == seg.name:
                return position
            out = {k: position.get(k, 0) + received.get(k, 0) for k in COUNTS}
            return {**position, **out, "segment": seg.name}

        return moved

    def _count_alone(self, seg: Path) -> None:
        """Move the watermark by the tallies of `seg` with no batch (a segment without a kept span, or
        one the ingest refused)."""
        state.touch(self.home, self.s.name, "otlp", self._moved(seg, _tally(seg)))

    def _commit(self, seg: Path) -> None:
        """One segment as one batch, the watermark's counts moved with it; the segment removed after."""
        received = _tally(seg)
        if not received["kept"]:
            self._count_alone(seg)
            seg.unlink()
            _fsync_dir(self.dir)
            return
        result = ingest_from("otel", "requests", [seg], self.s.map, register_new=self.s.register_new,
                             as_adjustment=self.s.as_adjustment, home=self.home,
                             on_commit=state.hook(self.s.name, "otlp", self._moved(seg, received)))
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


def _whole(data: bytes) -> int:
    """How many bytes of a segment are whole requests: up to the end of its last complete tally line."""
    at = len(data)
    while True:
        at = data.rfind(TALLY, 0, at)
        if at < 0:
            return 0
        end = data.find(b"\n", at)
        if (at == 0 or data[at - 1:at] == b"\n") and end >= 0:
            return end + 1


def _tally(seg: Path) -> dict:
    """The counts of a segment's tally lines: spans, dropped, rejected and kept."""
    out = dict.fromkeys((*COUNTS, "kept"), 0)
    with open(seg, "rb") as fh:
        for line in fh:
            if line.startswith(TALLY):
                for k, v in json.loads(line)["ledgerOtlp"].items():
                    out[k] = out.get(k, 0) + int(v)
    return out
