"""Safe outputs: files the user names never overwrite the ledger, are written whole or not at all,
and no text in a CSV or workbook can run as a spreadsheet formula.

Shared below every stage (it reads only :mod:`ledger.config`), so that reports, checks, budgets,
exports and the console all write CSV the same way and guard the same paths:

- :func:`check_output_path` refuses a path that resolves (symlinks followed) to the ledger's SQLite
  DB or one of its ``-wal``/``-shm``/``-journal`` siblings, or to anything inside the home's
  ``facts/`` folder, or to a block device or a socket; :func:`write_output` and :func:`atomic_output`
  check it, then write a temporary file beside the target, fsync it and ``os.replace`` it into
  place; a character device (``/dev/null``) or a FIFO, and the file open as standard output
  (``/dev/stdout``), are written into, never replaced;
- :func:`safe_text` is the OWASP escape of a text cell; :func:`csv_cell`, :func:`csv_writer` and
  :func:`csv_text` write CSV with every field quoted, text neutralized and numbers left numbers.
"""
from __future__ import annotations

import csv
import io
import os
import re
import stat
import tempfile
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import IO

from . import config
from .errors import LedgerError

# ---- formula injection (OWASP "CSV injection") ---------------------------------------------------

#: First characters that make Excel, LibreOffice or Google Sheets read a cell as a formula
#: (``=``, ``+``, ``-``, ``@``) or that hide one behind a tab, carriage return or line feed.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n")
_AFTER_BLANKS = ("=", "+", "-", "@")
#: A number as the ledger writes one in CSV: an optional minus, digits, an optional fraction.
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def safe_text(value: object) -> str | None:
    """`value` as text that no spreadsheet will evaluate: text that starts with a formula trigger
    (``= + - @``, a tab, CR or LF), or with blanks and then ``= + - @``, gets a single quote in
    front (``=HYPERLINK(...)`` -> ``'=HYPERLINK(...)``), the escape OWASP recommends. None stays
    None. For text cells only: numbers are written by :func:`csv_cell` or as workbook numbers."""
    if value is None:
        return None
    text = str(value)
    if text.startswith(FORMULA_TRIGGERS) or text.lstrip().startswith(_AFTER_BLANKS):
        return "'" + text
    return text


def _number_text(value: int | Decimal | float) -> str:
    if isinstance(value, float):
        value = Decimal(repr(value))
    if isinstance(value, Decimal):
        if not value.is_finite():
            return str(value)
        return format(value.copy_abs() if value == 0 else value, "f")
    return str(value)


def csv_cell(value: object, *, numeric: bool = False) -> str:
    """One CSV field: None is empty; an int, Decimal or float is its plain decimal text (a
    negative number stays a number); a string in a `numeric` column that is a plain decimal
    (``-12.500000``) stays as it is; everything else is text, neutralized by :func:`safe_text`."""
    if value is None:
        return ""
    if isinstance(value, (int, Decimal, float)) and not isinstance(value, bool):
        text = _number_text(value)
        return text if NUMBER.fullmatch(text) else safe_text(text)
    if isinstance(value, str) and numeric and NUMBER.fullmatch(value):
        return value
    return safe_text(value)


def csv_writer(buf: IO[str]):
    """A csv.writer that quotes every field (a line break in a value stays inside its row)."""
    return csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object] | Mapping[str, object]], *,
             numeric: Collection[str] = ()) -> str:
    """CSV text: the `header`, then one line per row (a sequence in header order, or a mapping by
    column name, a missing key empty). Every field is quoted, the header included; every value goes
    through :func:`csv_cell`, numbers kept as numbers in the columns named in `numeric`."""
    buf = io.StringIO()
    w = csv_writer(buf)
    w.writerow([csv_cell(h) for h in header])
    flags = [h in numeric for h in header]
    for row in rows:
        values = [row.get(h) for h in header] if isinstance(row, Mapping) else list(row)
        w.writerow([csv_cell(v, numeric=f) for v, f in zip(values, flags, strict=True)])
    return buf.getvalue()


# ---- outputs that never reach into the ledger ----------------------------------------------------

class OutputError(LedgerError, ValueError):
    """An output path the ledger refuses to write; the message is one line."""


DB_SIBLINGS = ("", "-wal", "-shm", "-journal")


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (``sqlite:///path``, any ``sqlite+driver``), resolved; else None."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+")[0] != "sqlite" or not rest.startswith("/"):
        return None
    path = rest[1:].split("?", 1)[0]
    if not path or path == ":memory:":
        return None
    return Path(path).resolve()


def protected() -> tuple[tuple[Path, ...], Path]:
    """(the ledger DB's files when the store is SQLite: the DB and its -wal, -shm and -journal
    siblings; the facts folder), resolved, for the configured ledger (LEDGER_HOME, LEDGER_DATABASE_URL)."""
    db = sqlite_path(config.database_url())
    files = tuple(Path(str(db) + s) for s in DB_SIBLINGS) if db is not None else ()
    return files, config.facts_dir().resolve()


def _stat(path: str | Path) -> os.stat_result | None:
    """What is at `path` (symlinks followed, /dev/stdout's included), or None when nothing is."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror or e}") from None


_NOT_FILES = ((stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_output_path(path: str | Path) -> Path:
    """The resolved path to write `path` to (symlinks followed), or OutputError when it is the
    ledger's own DB (or a sibling of it), inside the home's facts folder, a folder, or something
    that is neither a regular file nor a stream (a block device, a socket). A character device
    (``/dev/null``, a terminal) or a FIFO (``/dev/stdout`` into a pipe) is written into, never
    replaced (:func:`atomic_output`)."""
    target = Path(path).resolve()
    files, facts = protected()
    if target in files:
        raise OutputError(f"refusing to write {path}: it is the ledger's own database file {target} "
                          "(writing there would destroy the ledger); choose another file")
    if target == facts or facts in target.parents:
        raise OutputError(f"refusing to write {path}: it is inside the ledger's facts folder {facts} "
                          "(writing there would destroy the ledger); choose another file")
    if target.is_dir():
        raise OutputError(f"cannot write {path}: it is a folder; give a file name")
    st = _stat(path)
    if st is not None:
        for test, what in _NOT_FILES:
            if test(st.st_mode):
                raise OutputError(f"refusing to write {path}: it is {what}, not a file; the ledger writes regular "
                                  "files, and into character devices and FIFOs (/dev/null, /dev/stdout)")
        if not (stat.S_ISREG(st.st_mode) or _is_stream(st)):
            raise OutputError(f"refusing to write {path}: it is not a regular file (mode {st.st_mode:o})")
        return target
    if not target.parent.is_dir():
        raise OutputError(f"cannot write {path}: the folder {target.parent} does not exist")
    return target


def check_output_folder(path: str | Path) -> Path:
    """The resolved folder `path` that files may be written into, existing or not (the caller
    creates it): OutputError when it is the home's facts folder or inside it, or exists and is not
    a folder."""
    target = Path(path).resolve()
    _, facts = protected()
    if target == facts or facts in target.parents:
        raise OutputError(f"refusing to write into {path}: it is inside the ledger's facts folder {facts} "
                          "(writing there would destroy the ledger); choose another folder")
    if target.exists() and not target.is_dir():
        raise OutputError(f"cannot write into {path}: it is a file, not a folder")
    return target


def check_outputs(paths: Iterable[str | Path | None]) -> list[Path]:
    """:func:`check_output_path` for every given path (None skipped), and no two the same file (a
    character device, ``/dev/null``, or this process's standard output or error may take several:
    each output is written into it in turn). The checked paths, in order."""
    seen: dict[Path, str] = {}
    out = []
    for p in paths:
        if p is None:
            continue
        target = check_output_path(p)
        if target in seen and not _shared(p):
            raise OutputError(f"{seen[target]} and {p} are the same file: give each output its own file")
        seen.setdefault(target, str(p))
        out.append(target)
    return out


def _shared(path: str | Path) -> bool:
    """Whether several outputs may be written into `path` one after the other: a character device,
    or this process's standard output or error."""
    st = _stat(path)
    return st is not None and (stat.S_ISCHR(st.st_mode) or _standard_fd(st) is not None)


def _mode_for(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _is_stream(st: os.stat_result) -> bool:
    """A character device (``/dev/null``, a terminal) or a FIFO (a named pipe, a shell's pipe)."""
    return stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)


def _standard_fd(st: os.stat_result) -> int | None:
    """1 or 2 when `st` is the file open as this process's standard output or error (``--lines
    /dev/stdout``, or the file a shell redirected it to), else None."""
    for fd in (1, 2):
        try:
            std = os.fstat(fd)
        except OSError:
            continue
        if (std.st_dev, std.st_ino) == (st.st_dev, st.st_ino):
            return fd
    return None


class StdoutError(LedgerError):
    """Writing to standard output failed (`errno`: EPIPE when the reader went away, ENOSPC on a
    full device, EBADF when it is closed). Not an OSError, so that no command mistakes it for a
    file of its own it could not write: the CLI's entry (:func:`ledger.console.run`) handles it."""

    def __init__(self, errno_: int | None, strerror: str):
        self.errno, self.strerror = errno_, strerror
        super().__init__(strerror)


def _write_into(path: str | Path, st: os.stat_result, data: bytes) -> None:
    """Write `data` straight into what is at `path`: through this process's own descriptor when it
    is its standard output or error (after what was printed there: the shell's redirection, even
    ``>>``, is kept), else opened for writing as it is (no creating, no truncating, no replacing)."""
    import sys

    fd = _standard_fd(st)
    if fd is not None:
        stream = sys.stdout if fd == 1 else sys.stderr
        try:
            if stream is not None:
                stream.flush()
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError as e:
            if fd == 1:  # standard output, as if printed there: `| head -1` ends quietly (ledger.console.run)
                raise StdoutError(e.errno, e.strerror or str(e)) from None
            raise
        return
    out = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view):]
    finally:
        os.close(out)


@contextmanager
def atomic_output(path: str | Path) -> Iterator[IO[bytes]]:
    """``with atomic_output(path) as fh: fh.write(...)``: a binary file that becomes `path` only
    when the block ends without an error. Checked by :func:`check_output_path` first; written to a
    temporary file in the target's folder, flushed and fsynced, then moved into place with
    ``os.replace`` (a symlink's target is the file replaced). On any error the temporary file is
    removed and `path` is left as it was: never a half-written file.

    What is not a regular file is never replaced: a character device (``/dev/null``, a terminal) or
    a FIFO gets the whole output written straight into it once the block ends without an error
    (nothing when it fails), and so does the file open as this process's standard output or error
    (``--lines /dev/stdout``, appended where the shell's redirection stands)."""
    target = check_output_path(path)
    st = _stat(path)
    if st is not None and (_is_stream(st) or _standard_fd(st) is not None):
        buf = io.BytesIO()
        yield buf
        _write_into(path, st, buf.getvalue())
        return
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def write_output(path: str | Path, data: bytes | str) -> Path:
    """Write `data` (text as UTF-8, line ends as given) to `path` through :func:`atomic_output`;
    returns the file written (resolved)."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_output(path) as fh:
        fh.write(payload)
    return Path(path).resolve()
