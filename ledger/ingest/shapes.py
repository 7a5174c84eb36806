"""What a file's bytes are, before anything parses them: gzip, and the three shapes of JSON.

One mechanism for every ingest (each kind, the bill, every ``--source``), run when a file is opened
(:func:`readable`):

- **gzip** (``.csv.gz``, ``.jsonl.gz``, ``.json.gz``, ``.parquet.gz``, or any file whose first bytes
  are gzip's magic ``1f 8b``, whatever ``--format`` says) is unpacked, streaming (1 MiB at a time:
  memory does not grow with the file), into a file of the command's scratch folder in the ledger
  home, removed with that folder when the command ends, however it ends. Everything else then reads
  the unpacked file exactly as it reads a plain one: DuckDB's parallel reader, the 1 MiB line limit,
  the UTF-8 header check, the sample of the fast pass, physical line numbers. A file that is not
  complete gzip (truncated, corrupt) is one problem naming it. The unpacking costs one pass over the
  file, and only for a compressed file: a plain file is read as it always was (its first bytes are
  looked at, nothing more).
- **JSON** comes as JSON Lines (one object per line), as a JSON array of row objects (LiteLLM's
  ``/spend/logs``, pandas' ``to_json(orient="records")``, DuckDB's ``FORMAT json, ARRAY true``), or as
  objects spread over many lines (a pretty-printed document: the OTLP/HTTP JSON body, ``jq .``).
  :func:`json_shape` tells which from the file's first bytes, and DuckDB reads each shape as it is
  (:func:`json_reader`: one object a row, its own text), with no pass of ours. A
  record's line is the physical line its object starts on: counted for JSON Lines as for CSV, and
  for the other two shapes found by :func:`json_scan`, which walks the file object by object, only
  for a file with problems to name. Malformed JSON is one problem with the file, its line and column,
  in the ledger's words (:func:`json_problem`), never DuckDB's message.

The batch records a file by its own bytes as given (for gzip, the compressed bytes: its SHA-256 is
what ``sha256sum`` says of it), so the same ``.gz`` ingested again is recognized by its digest.
"""
from __future__ import annotations

import codecs
import gzip
import hashlib
import json
import re
import shutil
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import Problem
from ..sqltext import literal
from .records import MAX_LINE_BYTES, IngestError

GZIP_MAGIC = b"\x1f\x8b"
#: Other compressions a cloud export may come in, by their magic bytes: told, never parsed as text.
OTHER_COMPRESSIONS = ((re.compile(rb"\A\x28\xb5\x2f\xfd"), "zstd"), (re.compile(rb"\ABZh[1-9]1AY&SY"), "bzip2"),
                      (re.compile(rb"\A\xfd7zXZ\x00"), "xz"), (re.compile(rb"\APK\x03\x04"), "zip"))
#: Characters DuckDB expands in a file name (glob patterns).
GLOB_CHARS = frozenset("*?[]{}")
CHUNK = 1 << 20  # unpacking buffer
#: The most bytes one JSON object may have anywhere (DuckDB's own default ``maximum_object_size``);
#: a ledger row is at most MAX_LINE_BYTES.
MAX_OBJECT_BYTES = 16 << 20
JSON_CHUNK = 1 << 22  # JSON walked: text read at a time


@dataclass(frozen=True)
class Readable:
    """A file as the readers see it: `path` is what DuckDB and the line scans read (the file itself,
    a link to it with a plain name, or its unpacked copy); `gzip`: the file was gzip-compressed;
    `shape`: for JSON, ``"lines"``, ``"array"`` or ``"documents"`` (:func:`json_shape`)."""

    path: Path
    gzip: bool = False
    shape: str | None = None


def line_ends(data: bytes) -> int:
    """Line ends in `data` as CSV readers count them: LF, CRLF and a lone CR each end a line."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def lines(fh):
    """Lines of a binary file ended by LF, CRLF or a lone CR."""
    rest = b""
    while chunk := fh.read(1 << 22):
        data, hold = rest + chunk, b""
        if data.endswith(b"\r"):  # may be the first half of a CRLF: decided with the next chunk
            data, hold = data[:-1], b"\r"
        parts = re.split(rb"\r\n|\n|\r", data)
        rest = parts.pop() + hold
        yield from parts
    if rest:
        yield rest.rstrip(b"\r")


def readable_path(path: Path, link_dir: Path | None) -> Path:
    """`path`, or when its name holds a glob character, a symbolic link to it in `link_dir` under a
    plain name, so that DuckDB reads exactly that one file."""
    if not GLOB_CHARS & set(str(path)) or link_dir is None:
        return path
    link_dir.mkdir(parents=True, exist_ok=True)
    suffix = "" if GLOB_CHARS & set(path.suffix) else path.suffix
    link = link_dir / f"source-{hashlib.sha256(str(path).encode()).hexdigest()[:16]}{suffix}"
    link.unlink(missing_ok=True)
    link.symlink_to(path.resolve())
    return link


def plain_suffix(path: Path) -> str:
    """The extension that names the format: ``.csv`` for ``x.csv`` and for ``x.csv.gz``."""
    name = path.name
    return Path(name[:-3]).suffix if name.lower().endswith(".gz") else path.suffix


def readable(path: Path, label: str, fmt: str, scratch: Path) -> Readable:
    """The file at `path` (told as `label`) in `fmt` (csv, jsonl or parquet) made readable: unpacked
    into `scratch` (the caller removes it) when gzip; for JSON, its shape. IngestError (one problem
    naming the file) when it cannot be."""
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError as e:
        raise IngestError([Problem(file=label, message=f"cannot read the file ({e.strerror or e})")]) from None
    for magic, name in OTHER_COMPRESSIONS:
        if magic.match(head):
            raise IngestError([Problem(file=label,
                                       message=f"is {name}-compressed: the ledger reads gzip (.gz) or plain "
                                               f"files; unpack it first")])
    packed = head.startswith(GZIP_MAGIC)
    if not packed and path.name.lower().endswith(".gz"):
        raise IngestError([Problem(file=label, message="the name ends in .gz but the file is not gzip-compressed (it "
                                                       "does not start with gzip's bytes 1f 8b)")])
    data = gunzip(path, label, scratch, plain_suffix(path)) if packed else readable_path(path, scratch)
    return Readable(data, packed, json_shape(data) if fmt == "jsonl" else None)


def gunzip(path: Path, label: str, scratch: Path, suffix: str) -> Path:
    """`path` unpacked into a new file of `scratch`, 1 MiB at a time. IngestError naming the file
    when it is not complete gzip (truncated, corrupt) or cannot be written."""
    scratch.mkdir(parents=True, exist_ok=True)
    out = scratch / f"unpacked-{uuid.uuid4().hex[:16]}{suffix}"
    try:
        with gzip.open(path, "rb") as src, out.open("wb") as dst:
            shutil.copyfileobj(src, dst, CHUNK)
    except EOFError:
        out.unlink(missing_ok=True)
        raise IngestError([Problem(file=label, message="the gzip file is truncated (it ends before gzip's end-of-"
                                                       "stream marker): nothing was read")]) from None
    except (gzip.BadGzipFile, zlib.error) as e:
        out.unlink(missing_ok=True)
        raise IngestError([Problem(file=label, message=f"the gzip file is corrupt ({_reason(e)}): nothing was "
                                                       "read")]) from None
    except OSError as e:
        out.unlink(missing_ok=True)
        raise IngestError([Problem(file=label, message=f"cannot unpack it into the ledger home's scratch folder "
                                                       f"({e.strerror or e})")]) from None
    return out


def _reason(e: BaseException) -> str:
    text = str(e).strip()
    text = re.sub(r"^Error -?\d+ while decompressing data: ", "", text)
    return text or type(e).__name__


# ---- JSON -----------------------------------------------------------------------------------------

def json_shape(path: Path) -> str:
    """``"lines"`` (JSON Lines: the file's first object is whole on its first line; also an empty
    file, or a first line too long to look at), ``"array"`` (the file starts with ``[``) or
    ``"documents"`` (anything else: objects spread over lines; what is not JSON is told by
    :func:`json_as_lines`)."""
    with path.open("rb") as fh:
        head = fh.read(MAX_LINE_BYTES + 1)
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        return "lines"
    if text[:1] == b"[":
        return "array"
    if text[:1] != b"{":
        return "documents"
    ends = [i for i in (text.find(b"\n"), text.find(b"\r")) if i >= 0]
    if not ends:
        return "lines" if len(head) > MAX_LINE_BYTES else ("lines" if _whole_object(text) else "documents")
    return "lines" if _whole_object(text[:min(ends)]) else "documents"


def _whole_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line.decode("utf-8")), dict)
    except (ValueError, RecursionError):
        return False


def _nothing(*_args) -> None:
    return None


#: Validates JSON without building it: objects, numbers are not made into Python values.
_DECODER = json.JSONDecoder(object_pairs_hook=_nothing, parse_float=_nothing, parse_int=_nothing)
_WHITE = re.compile(r"[ \t\r\n]*")


def _text_line_ends(text: str, prev_cr: bool, start: int = 0, end: int | None = None) -> int:
    """Line ends in text[start:end] (LF, CRLF, a lone CR); `prev_cr`: the character before was a CR."""
    end = len(text) if end is None else end
    n = text.count("\n", start, end) + text.count("\r", start, end) - text.count("\r\n", start, end)
    return n - 1 if prev_cr and text.startswith("\n", start, end) else n


class _JsonText:
    """A JSON file as text, read a chunk at a time, with the physical line and column of a position."""

    def __init__(self, fh, label: str, ahead: int):
        self.fh, self.label, self.ahead = fh, label, ahead
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.buf, self.pos, self.eof = "", 0, False
        self.line, self.line_start, self.prev_cr = 1, 0, False  # the line of buf[pos], where it starts in buf
        self.first = True

    def fill(self) -> None:
        """Keep more than `ahead` characters after `pos` in the buffer (or all that is left)."""
        while not self.eof and len(self.buf) - self.pos <= self.ahead:
            data = self.fh.read(max(JSON_CHUNK, self.ahead))
            try:
                text = self.decoder.decode(data, final=not data)
            except UnicodeDecodeError as e:
                line = (self.line + _text_line_ends(self.buf, self.prev_cr, self.pos)
                        + line_ends(data[:max(e.start, 0)]))
                raise IngestError([Problem(file=self.label, line=line, message="bytes that are not UTF-8")]) from None
            if self.first:
                text, self.first = text.removeprefix("\ufeff"), False
            self.eof = not data
            self.line_start -= self.pos
            self.buf, self.pos = self.buf[self.pos:] + text, 0

    def advance(self, end: int) -> None:
        """Move `pos` to `end`, counting the line ends passed."""
        buf, pos = self.buf, self.pos
        if end > pos:
            k = max(buf.rfind("\n", pos, end), buf.rfind("\r", pos, end))
            if k >= 0:  # most objects of a one-line array have no line end: nothing to count
                self.line += _text_line_ends(buf, self.prev_cr, pos, end)
                self.line_start = k + 1
                self.prev_cr = buf[end - 1] == "\r"
            else:
                self.prev_cr = False
        self.pos = end

    def skip_white(self) -> str | None:
        """Step over white space; the next character, or None at the end of the file."""
        while True:
            if len(self.buf) - self.pos <= self.ahead:
                self.fill()
            if self.pos < len(self.buf) and self.buf[self.pos] not in " \t\r\n":
                return self.buf[self.pos]
            self.advance(_WHITE.match(self.buf, self.pos).end())
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if self.eof:
                return None

    def where(self, at: int) -> tuple[int, int]:
        """(line, column) of buffer position `at` (>= pos), columns counted in characters from 1."""
        k = max(self.buf.rfind("\n", self.pos, at), self.buf.rfind("\r", self.pos, at))
        start = k + 1 if k >= 0 else self.line_start
        return self.line + _text_line_ends(self.buf, self.prev_cr, self.pos, at), at - start + 1

    def problem(self, at: int, message: str) -> IngestError:
        line, col = self.where(at)
        return IngestError([Problem(file=self.label, line=line, message=f"{message} (column {col})")])


def json_scan(path: Path, label: str, shape: str, limit: int, want: set[int] | None = None) -> dict[int, int]:
    """Walk a JSON array of objects (`shape` ``"array"``) or JSON objects one after another over any
    number of lines (``"documents"``), one object at a time (memory holds at most `limit` bytes of
    it, never the file): the physical line each wanted object (numbered from 1, in file order) starts
    on; with `want` None, the whole file is checked. IngestError naming the file, the line and column,
    in the ledger's words, at the first place that is not such JSON, or an object over `limit` bytes.
    Only a file with problems is walked (to name their lines), or one DuckDB refused (to say why)."""
    found: dict[int, int] = {}
    last = max(want) if want else None
    with path.open("rb") as fh:
        t = _JsonText(fh, label, limit + 1)
        n = 0

        def one_object(what: str) -> None:
            c = t.skip_white()
            if c != "{" and (want is None or c is None):  # looking lines up, any value counts as a record
                shown = "the end of the file" if c is None else repr(c)
                raise t.problem(t.pos, f"{what}: expected a JSON object {{...}}, found {shown}")
            start = t.line
            try:
                _, end = _DECODER.raw_decode(t.buf, t.pos)
            except json.JSONDecodeError as e:
                raise _malformed(t, e, limit) from None
            except RecursionError:
                raise t.problem(t.pos, "the JSON object is nested too deeply") from None
            size = len(t.buf[t.pos:end].encode("utf-8")) if end - t.pos > limit // 4 else end - t.pos
            if size > limit:
                raise IngestError([Problem(file=label, line=start, message=f"a JSON object longer than {limit} bytes "
                                                                           f"({size} bytes)")])
            t.advance(end)
            if want is None or n + 1 in want:
                found[n + 1] = start

        if shape == "array":
            t.skip_white()
            t.advance(t.pos + 1)  # the [
            if t.skip_white() == "]":
                t.advance(t.pos + 1)
            else:
                while last is None or n < last:
                    one_object(f"element [{n}] of the array is not a row")
                    n += 1
                    c = t.skip_white()
                    if c == ",":
                        comma = (t.line, t.pos - t.line_start + 1)
                        t.advance(t.pos + 1)
                        if t.skip_white() == "]":
                            said = "a trailing comma after the last element of the array (not JSON)"
                            raise IngestError([Problem(file=label, line=comma[0],
                                                       message=f"{said} (column {comma[1]})")])
                        continue
                    if c == "]":
                        t.advance(t.pos + 1)
                        break
                    if c is None:
                        raise t.problem(t.pos, "the JSON array is not closed: the file ends before its ]")
                    raise t.problem(t.pos, f"expected , or ] after element [{n - 1}] of the array, found {c!r}")
            if last is None and t.skip_white() is not None:
                raise t.problem(t.pos, "text after the end of the JSON array (a file holds one array)")
        else:
            while (last is None or n < last) and t.skip_white() is not None:
                one_object("not JSON Lines, a JSON array or JSON objects")
                n += 1
    return found


def json_record_line(path: Path, label: str, shape: str, n: int) -> int:
    """The physical line JSON record `n` (from 1, in file order) starts on, in a file of any shape."""
    if shape != "lines":
        return json_scan(path, label, shape, MAX_OBJECT_BYTES, {n}).get(n, n)
    with path.open("rb") as fh:
        k = 0
        for i, raw in enumerate(lines(fh), start=1):
            if raw.strip():
                k += 1
                if k == n:
                    return i
    return n


def json_problem(path: Path, label: str, shape: str, limit: int) -> Problem | None:
    """The first place a JSON file of `shape` is not what the ledger reads, in its words (file, line,
    column); None when there is none (DuckDB refused it for another reason)."""
    if shape == "lines":
        return json_lines_problem(path, label)
    try:
        json_scan(path, label, shape, limit)
    except IngestError as e:
        return e.problems[0]
    return None


def json_reader(path: Path, shape: str, limit: int) -> str:
    """SQL: DuckDB's table function reading a JSON file of `shape` one object a row, as its text
    (column ``json``), in file order."""
    fmt = {"lines": "newline_delimited", "array": "array", "documents": "unstructured"}[shape]
    return f"read_json_objects({literal(str(path))}, format='{fmt}', maximum_object_size={limit})"


def _malformed(t: _JsonText, e: json.JSONDecodeError, limit: int) -> IngestError:
    """The problem of a JSON object that does not parse at buffer position ``e.pos``: malformed there,
    or (when it reaches past what the buffer holds of a file not yet read) longer than `limit`."""
    if not t.eof and (e.pos - t.pos >= limit or e.pos >= len(t.buf) - 64 or e.msg.startswith("Unterminated string")):
        line, _ = t.where(t.pos)
        return IngestError([Problem(file=t.label, line=line, message=f"a JSON object longer than {limit} bytes")])
    comma = _trailing_comma(t.buf, max(t.pos, e.pos - 4096), e)
    if comma is not None:
        return t.problem(comma, "a trailing comma (not JSON)")
    if e.pos >= len(t.buf) and t.eof:
        return t.problem(e.pos, "malformed JSON: the file ends inside an object")
    return t.problem(e.pos, f"malformed JSON: {_json_reason(e.msg)}")


def _trailing_comma(text: str, start: int, e: json.JSONDecodeError) -> int | None:
    """The position of the comma a JSON error at ``e.pos`` comes right after (``{"a": 1,}``), if any."""
    if not e.msg.startswith(("Expecting property name", "Expecting value")):
        return None
    before = text[start:e.pos].rstrip(" \t\r\n")
    return start + len(before) - 1 if before.endswith(",") else None


def _json_reason(msg: str) -> str:
    """Python's JSON error in plain words (its position is told as line and column instead)."""
    return {"Expecting value": "a value is expected here",
            "Expecting ',' delimiter": "a comma (or the end of the object) is expected here",
            "Expecting ':' delimiter": "a colon is expected after the key",
            "Expecting property name enclosed in double quotes": "a key in double quotes is expected here",
            "Extra data": "text after the end of the object",
            "Invalid control character at": "a control character (a raw tab or line break) inside a string",
            "Unterminated string starting at": "a string that is never closed",
            "Invalid \\escape": "an invalid escape (\\) in a string",
            "Invalid \\uXXXX escape": "an invalid \\u escape in a string"}.get(msg, msg[:1].lower() + msg[1:])


def json_lines_problem(path: Path, label: str) -> Problem | None:
    """The first line of a JSON Lines file that is not one whole JSON object, in the ledger's words
    (a JSON Lines file DuckDB refused); None when every line is one."""
    with path.open("rb") as fh:
        for i, raw in enumerate(lines(fh), start=1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8").removeprefix("\ufeff") if i == 1 else raw.decode("utf-8")
            except UnicodeDecodeError:
                return Problem(file=label, line=i, message="bytes that are not UTF-8")
            stripped = text.strip(" \t")
            lead = len(text) - len(text.lstrip(" \t"))
            if not stripped.startswith("{"):
                return Problem(file=label, line=i,
                               message=f"not a JSON object (column {lead + 1}): JSON Lines hold one object "
                                       "per line")
            try:
                _, end = _DECODER.raw_decode(stripped)
            except json.JSONDecodeError as e:
                if e.pos >= len(stripped):
                    col = lead + e.pos + 1
                    return Problem(file=label, line=i,
                                   message=f"the JSON object does not end on its line (column {col}): JSON "
                                           "Lines hold one whole object per line")
                comma = _trailing_comma(stripped, 0, e)
                if comma is not None:
                    return Problem(file=label, line=i,
                                   message=f"a trailing comma (not JSON) (column {lead + comma + 1})")
                return Problem(file=label, line=i,
                               message=f"malformed JSON: {_json_reason(e.msg)} (column {lead + e.pos + 1})")
            except RecursionError:
                return Problem(file=label, line=i, message="the JSON object is nested too deeply")
            rest = stripped[end:]
            if rest.strip():
                col = lead + end + len(rest) - len(rest.lstrip()) + 1
                return Problem(file=label, line=i,
                               message=f"text after the end of the object (column {col}): JSON Lines hold "
                                       "one object per line")
    return None
