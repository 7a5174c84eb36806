"""Rich tables that fit the width they are printed at, and never cut a number or a name.

A :class:`FitTable` is laid out when it is printed, for the width of the terminal: a number column
is never narrower than its longest cell (no wrapping, no ``…``); a text column wraps between words
and is never narrower than its longest word (``on_demand`` never reads ``on_dema``), unless it is
declared ``fold`` (paths, identifiers: folded, never cut); a header wraps between its words. When
the columns do not fit side by side, the table splits into several, each repeating the key
columns on the left; when even the key and one column do not fit, every row is printed as a
block of ``column  value`` lines. Titles and captions too long for the table wrap at the terminal
width above and below it (the CLI's consoles wrap prose only when the width is known, see
``ledger.console``; a table is laid out for the console's width either way).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from rich import box as boxes
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

#: A text cell this wide or narrower never wraps; a fold column is never narrower than this (or
#: its widest cell, when that is narrower).
FOLD_MIN = 12


def paragraph(text: str | Text, *, style: str = "", justify: str = "default") -> Text:
    """Prose that wraps at the width it is printed at (between words; a longer word folds), even on
    a console made with ``soft_wrap``, when rendered inside a table or a ``Group`` (printed alone
    on such a console, rich joins it into plain text); never markup."""
    t = text.copy() if isinstance(text, Text) else Text(text, style=style)
    t.no_wrap, t.overflow, t.justify = False, "fold", justify
    return t


@dataclass(frozen=True)
class _Column:
    header: str
    numeric: bool
    fold: bool
    justify: str


def _plain(cell: str | Text) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _longest(text: str, split: bool) -> int:
    parts = text.split() if split else text.splitlines()
    return max((cell_len(p) for p in parts), default=0)


class FitTable:
    """A table laid out for the width it is printed at (see the module docstring). The first
    `keys` columns name a row and are repeated when the table splits, into at most `split` tables
    (beyond, or with `split` 1, the rows print as blocks of lines)."""

    def __init__(self, title: str | None = None, caption: str | None = None, *, keys: int = 1,
                 box: boxes.Box | None = boxes.HEAVY_HEAD, title_justify: str = "center",
                 show_header: bool = True, split: int = 3) -> None:
        self.title, self.caption, self.keys, self.box, self.split = title, caption, keys, box, split
        self.title_justify, self.show_header = title_justify, show_header
        self.columns: list[_Column] = []
        self.rows: list[tuple[list[str | Text], str | None]] = []

    def add_column(self, header: str, *, numeric: bool = True, fold: bool = False, justify: str | None = None) -> None:
        """A number column (right-justified, never wrapped) or a text column (`numeric=False`)."""
        self.columns.append(_Column(header, numeric, fold, justify or ("right" if numeric else "left")))

    def add_row(self, *cells: str | Text, style: str | None = None) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells in a table of {len(self.columns)} columns")
        self.rows.append((list(cells), style))

    # ---- layout ----------------------------------------------------------------------------------
    def _extra(self, n: int) -> int:
        """The width of `n` columns' padding and borders."""
        return 2 * n + ((n + 1) if self.box is not None else 0)

    def _limits(self) -> tuple[list[int], list[int]]:
        """Each column's narrowest width that cuts nothing, and the width it would like."""
        floors, needs = [], []
        for i, c in enumerate(self.columns):
            cells = [_plain(r[i]) for r, _ in self.rows]
            widest = max((_longest(x, False) for x in cells), default=0)
            head_word = _longest(c.header, True) if self.show_header else 0
            need = max(widest, cell_len(c.header) if self.show_header else 0, 1)
            if c.numeric:
                floor = widest
            elif c.fold:
                floor = min(widest, FOLD_MIN)
            else:  # wraps between words; a short cell (a label like "SLA 20") not at all
                floor = max(max((_longest(x, True) for x in cells), default=0), min(widest, FOLD_MIN))
            floors.append(max(floor, head_word, 1))
            needs.append(need)
        return floors, needs

    def _groups(self, width: int, floors: list[int]) -> list[list[int]] | None:
        """The columns of each table side by side (keys first in each): all in one when they fit,
        else the fewest tables (at most `split`) with the widest as narrow as can be; None when
        that cannot be done."""
        keys = list(range(min(self.keys, len(self.columns))))
        rest = list(range(len(keys), len(self.columns)))

        def fits(idx: list[int]) -> bool:
            return sum(floors[i] for i in idx) + self._extra(len(idx)) <= width

        if fits(keys + rest):
            return [keys + rest]
        if not rest or not fits(keys + rest[:1]):
            return None
        for k in range(2, min(self.split, len(rest)) + 1):  # the fewest tables, columns shared out evenly
            best = None
            for cuts in combinations(range(1, len(rest)), k - 1):
                parts = [rest[a:b] for a, b in zip((0, *cuts), (*cuts, len(rest)))]
                if all(fits(keys + part) for part in parts):
                    widest = max(sum(floors[i] for i in part) for part in parts)
                    if best is None or widest < best[0]:
                        best = (widest, parts)
            if best is not None:
                return [keys + part for part in best[1]]
        return None

    def _widths(self, idx: list[int], width: int, floors: list[int], needs: list[int]) -> list[int]:
        """Widths for the columns `idx` within `width`: what each would like when all fit, else each
        its floor and the room left shared in proportion to what each still lacks."""
        extra = self._extra(len(idx))
        if sum(needs[i] for i in idx) + extra <= width:
            return [needs[i] for i in idx]
        out = [floors[i] for i in idx]
        lack = [needs[i] - floors[i] for i in idx]
        room = width - extra - sum(out)
        total = sum(lack)
        if room > 0 and total:
            give = [room * x // total for x in lack]
            for k in sorted(range(len(idx)), key=lambda k: -(room * lack[k] % total))[:room - sum(give)]:
                give[k] += 1
            out = [w + min(g, x) for w, g, x in zip(out, give, lack)]
        return out

    def _table(self, idx: list[int], widths: list[int], title: bool, caption: bool) -> Table:
        t = Table(box=self.box, show_header=self.show_header, title_justify=self.title_justify,
                  title=paragraph(self.title, justify=self.title_justify) if title else None,
                  caption=paragraph(self.caption) if caption else None, caption_justify="left")
        for i, w in zip(idx, widths):
            c = self.columns[i]
            t.add_column(paragraph(c.header, justify=c.justify), width=w, no_wrap=c.numeric, overflow="fold",
                         justify=c.justify)
        for cells, style in self.rows:  # a cell is data (a tenant's name), never markup
            t.add_row(*(cells[i] if isinstance(cells[i], Text) else Text(cells[i]) for i in idx), style=style)
        return t

    def _vertical(self, width: int) -> RenderResult:
        """Every row as a block, for a terminal too narrow for the columns side by side: its key in
        bold, then one ``column  value`` line per column (a text value wraps beside the names), or,
        when a number does not fit beside the names, each name on a line and its value below."""
        if self.title:
            yield paragraph(self.title)
        keys = min(self.keys, len(self.columns))
        names = self.columns[keys:]
        name_w = max((cell_len(c.header) for c in names), default=0)
        number_w = max((cell_len(_plain(cells[keys + i])) for cells, _ in self.rows
                        for i, c in enumerate(names) if c.numeric), default=0)
        side = 2 + name_w + 2 + number_w <= width
        for cells, style in self.rows:
            yield paragraph(Text(" · ".join(_plain(c) for c in cells[:keys]), style="bold"))
            if side:
                grid = Table.grid(padding=(0, 2), pad_edge=False)
                grid.add_column(width=2)
                grid.add_column(width=name_w, no_wrap=True, style="dim" if style is None else style)
                grid.add_column(width=width - name_w - 6, overflow="fold", style=style or "")
                for c, v in zip(names, cells[keys:]):
                    grid.add_row("", Text(c.header), v if isinstance(v, Text) else Text(v))
                yield grid
                continue
            for c, v in zip(names, cells[keys:]):
                yield paragraph(Text("  " + c.header, style="dim" if style is None else style))
                yield paragraph(Text("    ") + (v if isinstance(v, Text) else Text(v)))
        if self.caption:
            yield paragraph(self.caption)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        floors, needs = self._limits()
        groups = self._groups(width, floors)
        if groups is None:
            yield from self._vertical(width)
            return
        for n, idx in enumerate(groups):
            widths = self._widths(idx, width, floors, needs)
            table_width = sum(widths) + self._extra(len(idx))
            first, last = n == 0, n == len(groups) - 1
            title_inside = bool(self.title) and cell_len(self.title) <= table_width
            caption_inside = bool(self.caption) and max(map(cell_len, self.caption.splitlines())) <= table_width
            if first and self.title and not title_inside:
                yield paragraph(self.title)
            yield self._table(idx, widths, first and title_inside, last and caption_inside)
            if last and self.caption and not caption_inside:
                yield paragraph(self.caption)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        floors, needs = self._limits()
        keys = list(range(min(self.keys, len(self.columns))))
        narrow = sum(floors[i] for i in keys) + (floors[len(keys)] if len(floors) > len(keys) else 0)
        return Measurement(min(narrow + self._extra(len(keys) + 1), options.max_width),
                           min(sum(needs) + self._extra(len(needs)), options.max_width))
