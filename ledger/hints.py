"""What the library says in its own words, with the pieces a command words as its own options.

A stage below the commands (sizing, budget, workload, pricebook, reconcile, allocate) never writes a
command-line flag into a problem or a note: it says what is wrong in its own words, and marks each
piece that names an input, or a remedy a command offers as an option, with a :class:`Hint` (a key
and the library's words for it). The line is a :class:`Hinted`: a ``str`` that reads as the
library's words, so it goes wherever a line goes (an error's `problems`, a result's notes, JSON),
and keeps its hints through a list, a tuple, a pickle or a copy (an f-string or ``+`` makes a plain
``str``: join pieces with ``Hinted(prefix, line)`` instead).

A command's ``cli.py`` says the line with its own words for the keys it knows (:func:`say`):
``Hinted("... (", Hint("repair", "repair the curve"), " to keep the upper envelope)")`` reads
``(repair the curve to keep the upper envelope)``, and ``(use --repair to keep the upper
envelope)`` from ``ledger size``, whose words for ``repair`` are ``use --repair``. A key a command
does not know keeps the library's words.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Hint:
    """A piece of a line that a command may word as its own option: `key` names what it is
    (``repair``, ``percentile``), `words` is how the library says it (may be empty: a hint only a
    command adds, such as ``" (--ttft-ms)"``)."""

    key: str
    words: str


class Hinted(str):
    """A line in the library's words (the string itself) whose `parts` are text and :class:`Hint`
    pieces in order. Built from pieces: text, hints, and other lines (whose parts it takes over)."""

    parts: tuple[str | Hint, ...]

    def __new__(cls, *pieces: str | Hint) -> Hinted:
        parts: list[str | Hint] = []
        for p in pieces:
            if isinstance(p, Hinted):
                parts.extend(p.parts)
            elif isinstance(p, (str, Hint)):
                parts.append(str(p) if isinstance(p, str) else p)
            else:
                raise TypeError(f"{p!r} is neither text nor a Hint")
        self = super().__new__(cls, "".join(p.words if isinstance(p, Hint) else p for p in parts))
        self.parts = tuple(parts)
        return self

    def __reduce__(self):
        return (Hinted, self.parts)

    def said(self, names: Mapping[str, str]) -> str:
        """The line with `names` (key -> a command's words) in place of the library's words."""
        return "".join(names.get(p.key, p.words) if isinstance(p, Hint) else p for p in self.parts)


def say_one(line: str, names: Mapping[str, str]) -> str:
    """One line as a command says it: a Hinted with `names`, any other text as it is."""
    return line.said(names) if isinstance(line, Hinted) else str(line)


def say(lines: Iterable[str] | str, names: Mapping[str, str]) -> list[str]:
    """Every line as a command says it (:func:`say_one`); a single line is a list of one."""
    return [say_one(line, names) for line in ([lines] if isinstance(lines, str) else lines)]


def lines_of(error: BaseException) -> list[str]:
    """What an error says, its hints kept: its `problems` when it has them, else its message (a
    Hinted message as it is, any other text line by line)."""
    problems = getattr(error, "problems", None)
    if problems:
        return list(problems)
    message = error.args[0] if error.args else ""
    if isinstance(message, Hinted):
        return [message]
    return str(error).splitlines() or [type(error).__name__]
