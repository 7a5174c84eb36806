"""The one way the ledger reads TOML: price books, bill maps, adapter maps, budget plans and the
dashboard's uploads of them all go through :func:`loads` (or :func:`loads_bytes` for a file's or an
upload's bytes), so every bad file is one :class:`TomlError` naming the file, the line and the column.

Shared below every stage (of the ledger it imports only :mod:`ledger.errors`). What it turns into a
``TomlError``:

- a syntax error (``tomllib.TOMLDecodeError``): tomllib's own message, line and column;
- text that is not UTF-8 (bytes): the line and column of the first bad byte;
- values nested deeper than :data:`MAX_DEPTH` tables and arrays: ``a = [[[[...]]]]`` or
  ``{b = {b = ...}}`` 5,000 deep, which tomllib reads by recursion (a ``RecursionError``), and
  dotted keys or table headers ``[a.a.a. ...]`` as deep, which it reads into a document that every
  ``repr``, ``str`` or JSON dump of it would then crash on. No file the ledger reads needs more
  than a few levels; the place given is where the nesting passes the limit.

A UTF-8 byte-order mark at the start is read as what it is, an encoding mark, not text.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from .errors import LedgerError, Problem

#: The deepest nesting of tables and arrays a file may have (``a = [1]`` is 1, ``[x] y = [[1]]`` 3).
MAX_DEPTH = 32

_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)$|\s*\(at end of document\)$")


class TomlError(LedgerError, ValueError):
    """A TOML text the ledger cannot read: `file` (the name it was given), 1-based `line` and
    `column`, and `reason`. ``str()`` is one line: ``file: message``, where :attr:`message` is
    ``not valid TOML: <reason> (at line L, column C)``, the form tomllib itself uses; its one
    problem is that line (the place is in the message)."""

    def __init__(self, file: str, line: int, column: int, reason: str):
        self.file, self.line, self.column, self.reason = file, line, column, reason
        super().__init__(Problem(file=file, message=self.message))

    @property
    def message(self) -> str:
        """The problem without the file: ``not valid TOML: <reason> (at line L, column C)``."""
        return f"not valid TOML: {self.reason} (at line {self.line}, column {self.column})"


def loads(text: str, file: str) -> dict[str, Any]:
    """The document of TOML `text` read from `file` (a path or an upload's name, for the messages);
    TomlError for a syntax error or values nested deeper than :data:`MAX_DEPTH`."""
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _decode_error(e, text, file) from None
    except RecursionError:
        line, column = _too_deep_at(text)
        raise TomlError(file, line, column, f"values nested more than {MAX_DEPTH} levels deep") from None
    if _depth(doc) > MAX_DEPTH:
        line, column = _too_deep_at(text)
        raise TomlError(file, line, column, f"values nested more than {MAX_DEPTH} levels deep")
    return doc


def loads_bytes(raw: bytes, file: str) -> dict[str, Any]:
    """:func:`loads` of `raw` bytes, which must be UTF-8 (TomlError at the first byte that is not)."""
    return loads(decode(raw, file), file)


def read_text(path: str | Path, file: str | None = None) -> str:
    """The text of the file at `path`, as ``Path.read_text(encoding="utf-8")`` reads it (line ends
    made ``\\n``); TomlError naming `file` (default: `path`) at the line and column of the first byte
    that is not UTF-8. OSError when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        decode(Path(path).read_bytes(), str(path) if file is None else file)
        raise  # not reached: decode raises on the same bytes


def decode(raw: bytes, file: str) -> str:
    """`raw` as UTF-8 text; TomlError at the line and column of the first byte that is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        column = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise TomlError(file, line, column, f"not UTF-8 text (byte 0x{raw[e.start]:02x})") from None


def _decode_error(e: tomllib.TOMLDecodeError, text: str, file: str) -> TomlError:
    msg = str(e)
    m = _AT.search(msg)
    reason = msg[:m.start()] if m else msg
    if m and m.group(1):
        return TomlError(file, int(m.group(1)), int(m.group(2)), reason)
    lines = text.split("\n")  # "at end of document": the last line, after its last character
    return TomlError(file, len(lines), len(lines[-1]) + 1, reason)


def _depth(doc: object) -> int:
    """How deep tables and arrays nest in a document (iteratively: never a RecursionError)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(doc, 0)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


# The pieces of TOML that decide nesting: strings (whose brackets and dots are text), comments,
# brackets, braces, commas, equals signs, dots and line ends; everything else is skipped.
_TOKEN = re.compile(r'''"""(?:[^\\]|\\.)*?"""(?!")|\'\'\'[\s\S]*?\'\'\'(?!')|"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|#[^\n]*'''
                    r'''|[\[\]{},=.\n]''')


def _too_deep_at(text: str) -> tuple[int, int]:
    """(line, column) where the nesting of tables and arrays first passes :data:`MAX_DEPTH`, read
    from the text the way TOML nests: a table header ``[a.b]`` opens one table per part (an array of
    tables ``[[a]]`` one more), a dotted key one per dot, each ``[`` and ``{`` of a value one.
    When nothing passes it (a text TOML itself refused), the place of the deepest nesting."""
    line, line_start = 1, 0
    header = 0                   # tables opened by the current table header
    stack: list[tuple[str, int]] = []  # open brackets and braces of values, with their depth
    key = True                   # reading a key (before its =)
    dots = 0                     # dots of the key being read
    value_base: int | None = None  # depth of a value just after its =
    in_header: int | None = None   # inside a table header: its depth so far
    best = (0, 1, 1)

    def at(pos: int) -> tuple[int, int]:
        return line, pos - line_start + 1

    for m in _TOKEN.finditer(text):
        tok, pos = m.group(), m.start()
        depth_here = stack[-1][1] if stack else header
        if tok == "\n":
            line, line_start = line + 1, pos + 1
            if not stack:
                key, dots, value_base = True, 0, None
            continue
        if tok[0] in "#\"'":
            line += tok.count("\n")
            if "\n" in tok:
                line_start = pos + tok.rindex("\n") + 1
            value_base = None if tok[0] != "#" else value_base
            continue
        if in_header is not None:
            if tok in ".[":  # a part, or the second [ of an [[array of tables]]
                in_header += 1
                if in_header > best[0]:
                    best = (in_header, *at(pos))
                if in_header > MAX_DEPTH:
                    return at(pos)
            elif tok == "]":
                header, in_header, key = in_header, None, False
            continue
        if tok == "[" and key and not stack and dots == 0:
            in_header = 1
            if best[0] < 1:
                best = (1, *at(pos))
            continue
        if tok == "." and key:
            dots += 1
            depth = depth_here + dots
            if depth > best[0]:
                best = (depth, *at(pos))
            if depth > MAX_DEPTH:
                return at(pos)
            continue
        if tok == "=":
            key, value_base, dots = False, depth_here + dots, 0
            continue
        if tok in "[{":
            depth = (value_base if value_base is not None else depth_here) + 1
            stack.append((tok, depth))
            value_base = None
            key, dots = tok == "{", 0
            if depth > best[0]:
                best = (depth, *at(pos))
            if depth > MAX_DEPTH:
                return at(pos)
            continue
        if tok in "]}":
            if stack:
                stack.pop()
            key, value_base = False, None
            continue
        if tok == ",":
            key, dots, value_base = bool(stack) and stack[-1][0] == "{", 0, None
    return best[1], best[2]
