"""The ledger's refusals: one base, :class:`LedgerError`, and one problem record, :class:`Problem`.

Below every stage (it imports nothing of the ledger). Every error the ledger raises on purpose
derives from :class:`LedgerError` (besides ``ValueError`` or ``LookupError`` where callers catch
those), and carries its `problems`, one per thing wrong: a :class:`Problem` where the problem has a
place (a file, its line and column, the entry, column or key it concerns), else a line of text (a
:class:`~ledger.hints.Hinted` line keeps its hints). The command line prints them in one place: the
root command catches a LedgerError and prints :meth:`LedgerError.lines`, one line each, to stderr
and exits with its :attr:`~LedgerError.code` (:class:`ledger.console.RootGroup`).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One thing wrong with an input, where it is. Fields (all but `message` optional):

    - `file`: the file it is in, as the user named it (or the name of what was given: an upload,
      an ingest kind, a source); None for a problem of no file.
    - `line`: the 1-based line of the file (for Parquet, the row); None when not known.
    - `column`: the 1-based character column of that line (a TOML syntax error); None otherwise.
    - `entry`: what in the file it concerns: a price book's entry (``price[3] gpu_time/H100/...``,
      ``[book]``), a file's column or field, a map's key (``columns.tenant``); None or empty when
      it concerns the file as a whole.
    - `message`: what is wrong, one line.

    ``str()`` is the problem's one line, ``file:line:column: entry: message``, with only the parts
    that are present (a line only after a file, a column only after a line)."""

    file: str | None = None
    line: int | None = None
    column: int | None = None
    entry: str | None = None
    message: str

    def __str__(self) -> str:
        parts = []
        if self.file is not None:
            at = "" if self.line is None else f":{self.line}" + ("" if self.column is None else f":{self.column}")
            parts.append(self.file + at)
        if self.entry:
            parts.append(self.entry)
        return ": ".join([*parts, self.message])

    def as_dict(self) -> dict:
        """The problem as a record of JSON and CSV output: file, line, column, entry, message."""
        return {"file": self.file, "line": self.line, "column": self.column, "entry": self.entry or None,
                "message": self.message}


class LedgerError(Exception):
    """A refusal: what the ledger will not do, and why. `problems` holds one item per problem
    (:class:`Problem` records or lines of text); the message (``str()``) is their lines. `code` is
    the exit status of a command it ends (1)."""

    code: int = 1

    def __init__(self, problems: Problem | str | Iterable[Problem | str] = ()):
        self.problems = [problems] if isinstance(problems, (str, Problem)) else list(problems)
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """What the error says, one line per problem (a line of text as it is, hints kept)."""
        return [p if isinstance(p, str) else str(p) for p in self.problems]
