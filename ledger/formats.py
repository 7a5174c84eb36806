"""The one number format of the tables a person reads: money, unit costs, percentages, counts.

Decimal in, text out, rounded half to even (as :mod:`ledger.money` rounds) and grouped as babel's
``en_US`` pattern ``#,##0.00`` groups: a comma every three digits, a point before the decimals, a
hyphen-minus (Python's own ``format(value, ",f")``, which says the same without loading babel's
locale data, about 0.03 s of every command that prints a number; a test compares the two). Money has 2 decimals; a unit cost below 1 (a cost per task or per token) has 6;
and a column takes one rule for all its cells (:func:`unit_cost_places`), so a column is either
money at 2 decimals or unit costs at 6, never a mix. That rule is the one of every surface: the
dashboard's columns and tiles take it too (in the sidebar's locale and currency), and the workbooks'
unit-cost formats show up to its 6 decimals (:data:`UNIT_COST_EXTRA_PLACES`). Ratios print as
percentages. A missing value prints as ``—``. JSON and CSV never come here: they keep the exact
decimal strings of :func:`ledger.money.fmt`.

Display rounding (:func:`display_column`, :func:`display_groups`, :func:`display_difference`): a
column of amounts is rounded as a whole, by largest remainder, so that its printed cells add up to its
printed total, and the printed total is the exact total correctly rounded; a difference printed
beside two totals is the difference of the printed totals. Only the text a person reads is rounded
this way (docs/exports.md, "Display rounding").
"""
from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from decimal import ROUND_FLOOR, Decimal, localcontext

from .money import quantize

#: What a table shows where there is no number.
MISSING = "—"
#: Decimals of money, and of a unit cost below 1.
MONEY_PLACES = 2
UNIT_COST_PLACES = 6
#: Decimals a workbook's unit-cost format may add to the currency's (optional digits, as a sheet has
#: no rule per column): a 2-decimal currency shows up to UNIT_COST_PLACES.
UNIT_COST_EXTRA_PLACES = UNIT_COST_PLACES - MONEY_PLACES
#: Decimals of a percentage (12.3%).
PERCENT_PLACES = 1

def _decimal(value: object) -> Decimal:
    """A Decimal from a Decimal, an int, a decimal string, or a float measured by the ledger (a
    token rate, never money) taken by its shortest repr."""
    if isinstance(value, Decimal):
        return value
    if isinstance(value, bool):
        raise TypeError(f"{value!r} is not a number")
    if isinstance(value, (int, str)):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    raise TypeError(f"{value!r} is not a number")


def number(value: object, places: int = 0, *, signed: bool = False) -> str:
    """`value` rounded half to even to `places` decimals, grouped: ``1,234.57``; ``-0.00`` never
    appears (a value that rounds to zero prints unsigned). `signed` writes ``+`` before a positive
    value (deltas). None prints as ``—``."""
    if value is None:
        return MISSING
    q = quantize(_decimal(value), Decimal(1).scaleb(-places))
    if q == 0:
        q = q.copy_abs()
    text = format(q, ",f")  # babel's en_US "#,##0.00..." (tests/test_cli_startup.py)
    return "+" + text if signed and q > 0 else text


def money(value: Decimal | None, currency: str | None = None, places: int = MONEY_PLACES, *,
          signed: bool = False) -> str:
    """Money at 2 decimals (or `places`), grouped, the currency code after it when given:
    ``12,345.68``, ``-3.00 USD``."""
    text = number(value, places, signed=signed)
    return f"{text} {currency}" if currency and value is not None else text


def unit_cost(value: Decimal | None, currency: str | None = None) -> str:
    """A unit cost at 6 decimals, grouped: ``0.096660``. Whether a column takes it or money is
    the column's rule (:func:`unit_cost_places`), not the cell's."""
    return money(value, currency, UNIT_COST_PLACES)


def unit_cost_places(values: Iterable[Decimal | None], money_places: int | None = MONEY_PLACES) -> int | None:
    """The one precision rule of unit costs, on every surface (CLI tables, dashboard columns and
    tiles): a column of them takes 6 decimals when every value is below 1 in size (costs per task or
    token, which 2 decimals would round to nothing), else `money_places`, the surface's money
    decimals (2 in a table; the dashboard passes None: the currency's own). None values are missing."""
    present = [abs(v) for v in values if v is not None]
    return UNIT_COST_PLACES if present and all(v < 1 for v in present) else money_places


def unit_costs(values: Iterable[Decimal | None], currency: str | None = None) -> list[str]:
    """A column of unit costs, every cell at the column's one rule (:func:`unit_cost_places`)."""
    values = list(values)
    places = unit_cost_places(values)
    return [money(v, currency, places) for v in values]


def percent(ratio: Decimal | None, places: int = PERCENT_PLACES, *, signed: bool = False) -> str:
    """A ratio as a percentage: ``Decimal("0.1234")`` is ``12.3%``; grouped, half to even."""
    if ratio is None:
        return MISSING
    return number(_decimal(ratio) * 100, places, signed=signed) + "%"


def count(n: int | None, *, signed: bool = False) -> str:
    """A whole number, grouped: ``450,787``."""
    if n is None:
        return MISSING
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{n!r} is not a count")
    return number(n, 0, signed=signed)


def plural(n: int, word: str, many: str | None = None) -> str:
    """A count and the word in the number it takes: ``1 request``, ``2 requests``, ``1,024 points``;
    `many` is the plural when it is not `word` + s (``plural(2, "batch", "batches")``). Only a
    whole number counts (an int, or a numpy integer; never a float or a Decimal)."""
    n = operator.index(n)
    return f"{count(n)} {word if n == 1 else many or word + 's'}"


def figures(values: Iterable[object], places: int = 1) -> list[str]:
    """A column of measured figures (tokens per second, concurrency) at one rule: whole numbers
    when every value is whole, else every value at `places` decimals; None prints as ``—``."""
    values = list(values)
    whole = all(v is None or _decimal(v) == _decimal(v).to_integral_value() for v in values)
    return [number(v, 0 if whole else places) for v in values]


# ---- display rounding: a column adds up to its printed total ------------------------------------

def display_column(values: Iterable[object], places: int = MONEY_PLACES, *,
                   total: Decimal | None = None) -> tuple[list[Decimal | None], Decimal]:
    """A column of amounts rounded for display so that its cells add up to its total, exactly.

    Returns ``(cells, total)``: the total is the exact sum of `values` rounded half to even to
    `places` decimals (or `total`, a displayed total given from above, such as a quarter's subtotal
    already rounded in its own column, or an error printed as the difference of two printed totals:
    it must be within one unit of the last place per value of the exact sum); each cell is its value
    rounded down or up to `places` (one unit further only when a `total` from above asks for more
    than that can give), and ``sum(cells) == total``. Largest remainder: every value is first
    rounded down, then the units left go one each to the values with the largest remainders; ties
    go to the larger value in size, then to the earlier row, so the result never depends on anything but the column. A value
    already at `places` decimals is shown as it is. None (no number) stays None and counts as
    nothing. Values may be negative (rounded down is toward minus infinity).

    ``display_column([Decimal("1.005"), Decimal("1.005"), Decimal("1.005")])`` is
    ``([1.01, 1.01, 1.00], 3.02)`` where rounding each cell alone would print 1.00 three times (or
    1.01 three times) beside a total of 3.02.
    """
    cells: list[Decimal | None] = [None if v is None else _decimal(v) for v in values]
    exp = Decimal(1).scaleb(-places)
    with localcontext() as ctx:
        ctx.prec = 80
        present = [(i, v) for i, v in enumerate(cells) if v is not None]
        exact = sum((v for _, v in present), Decimal(0))
        shown = quantize(exact, exp) if total is None else _decimal(total)
        target = shown.scaleb(places)
        if target != target.to_integral_value():
            raise ValueError(f"display_column: the total {shown} has more than {places} decimals")
        floors = {i: v.scaleb(places).to_integral_value(rounding=ROUND_FLOOR) for i, v in present}
        rema = {i: v.scaleb(places) - floors[i] for i, v in present}
        left = int(target - sum(floors.values(), Decimal(0)))
        ranked = sorted((i for i, _ in present), key=lambda i: (-rema[i], -abs(cells[i]), i))
        if not -len(ranked) <= left <= len(ranked):
            raise ValueError(f"display_column: the total {shown} is not the sum {exact} rounded to {places} decimals")
        # A total given from above may ask for one unit less than the values rounded down (a printed
        # difference of two printed totals): the values with the smallest remainders give it.
        step = {i: 1 for i in ranked[:left]} if left >= 0 else {i: -1 for i in ranked[len(ranked) + left:]}
        out: list[Decimal | None] = [None] * len(cells)
        for i, _ in present:
            q = (floors[i] + step.get(i, 0)).scaleb(-places).quantize(exp)
            out[i] = q.copy_abs() if q == 0 else q
    return out, (shown.copy_abs() if shown == 0 else shown.quantize(exp))


def display_groups(groups: Sequence[Sequence[object]], places: int = MONEY_PLACES
                   ) -> tuple[list[list[Decimal | None]], list[Decimal], Decimal]:
    """Rows in groups with subtotals (months in quarters) rounded for display so that every level
    adds up: ``(cells per group, subtotals, total)`` where each group's cells sum to its subtotal,
    the subtotals sum to the total, and the total is the exact grand total correctly rounded. The
    subtotals are a column of their own (:func:`display_column`), then each group's cells are rounded
    to add to its displayed subtotal."""
    exact_subtotals = [sum((_decimal(v) for v in g if v is not None), Decimal(0)) for g in groups]
    subtotals, total = display_column(exact_subtotals, places)
    cells = [display_column(g, places, total=s)[0] for g, s in zip(groups, subtotals)]
    return cells, [s for s in subtotals if s is not None], total


def display_difference(a: object, b: object, places: int = MONEY_PLACES) -> tuple[Decimal, Decimal, Decimal]:
    """Two totals and their difference as printed side by side: ``(a, b, a - b)`` with `a` and `b`
    each correctly rounded and the difference the difference of the printed two (so a forecast
    error printed beside the actual and the forecast is their printed difference, never a cent
    off)."""
    exp = Decimal(1).scaleb(-places)
    ra, rb = quantize(_decimal(a), exp), quantize(_decimal(b), exp)
    d = ra - rb
    return ra, rb, d.copy_abs() if d == 0 else d


def money_column(values: Iterable[object], currency: str | None = None, places: int = MONEY_PLACES
                 ) -> tuple[list[str], str]:
    """A money column as text, display-rounded (:func:`display_column`): ``(cells, total)``, the
    cells adding up to the total as printed."""
    cells, total = display_column(values, places)
    return [money(c, currency, places) for c in cells], money(total, currency, places)


def display_table(rows: Sequence[Sequence[object]], places: int = MONEY_PLACES, *, total: object = None
                  ) -> tuple[list[list[Decimal]], list[Decimal], list[Decimal], Decimal]:
    """A table of amounts whose rows and columns both add up as printed (controlled rounding):
    ``(cells, row totals, column totals, total)``. Each cell is its value rounded down or up to
    `places`, each row and column total is its exact sum rounded down or up, every printed row adds
    up to its printed row total, every printed column to its printed column total, and the total is
    the exact grand total correctly rounded (half to even). Such a rounding always exists (Cox,
    "A constructive procedure for unbiased controlled rounding", JASA 1987); it is found as an
    integer flow (rows to columns, one unit per cell at most) with the units given first to the
    cells with the largest remainders, so the result depends on the table alone.

    `total`, a printed total given from above (an error printed as the difference of two printed
    totals), replaces the correctly rounded one: the units it differs by are first added to the
    largest cell (in size; the first of equals), which then may print up to that many units beyond
    its value rounded."""
    m, n = len(rows), max((len(r) for r in rows), default=0)
    with localcontext() as ctx:
        ctx.prec = 80
        x = [[_decimal(v if v is not None else 0) for v in r] + [Decimal(0)] * (n - len(r)) for r in rows]
        if total is not None and m and n:
            unit = Decimal(1).scaleb(-places)
            shift = _decimal(total) - quantize(sum((v for r in x for v in r), Decimal(0)), unit)
            if shift:
                i, j = max(((i, j) for i in range(m) for j in range(n)),
                           key=lambda c: (abs(x[c[0]][c[1]]), -c[0], -c[1]))
                x[i][j] += shift
        floor = [[v.scaleb(places).to_integral_value(rounding=ROUND_FLOOR) for v in r] for r in x]
        rem = [[v.scaleb(places) - f for v, f in zip(r, fr)] for r, fr in zip(x, floor)]
        exact = sum((v for r in x for v in r), Decimal(0))
        total = quantize(exact, Decimal(1).scaleb(-places)) if total is None else _decimal(total)
        need = int(total.scaleb(places) - sum((f for r in floor for f in r), Decimal(0)))
        row_rem = [sum(r, Decimal(0)) for r in rem]
        col_rem = [sum((rem[i][j] for i in range(m)), Decimal(0)) for j in range(n)]
        bounds = lambda d: (int(d.to_integral_value(rounding=ROUND_FLOOR)),  # noqa: E731
                            int(-(-d).to_integral_value(rounding=ROUND_FLOOR)))
        cells = sorted(((i, j) for i in range(m) for j in range(n) if rem[i][j] > 0),
                       key=lambda c: (-rem[c[0]][c[1]], c))
        up = _unit_flow(m, n, [bounds(d) for d in row_rem], [bounds(d) for d in col_rem], cells, need)
        out = [[(floor[i][j] + ((i, j) in up)).scaleb(-places) for j in range(n)] for i in range(m)]
    exp = Decimal(1).scaleb(-places)
    out = [[(v.copy_abs() if v == 0 else v).quantize(exp) for v in r] for r in out]
    row_totals = [sum(r, Decimal(0)).quantize(exp) for r in out]
    col_totals = [sum((out[i][j] for i in range(m)), Decimal(0)).quantize(exp) for j in range(n)]
    return out, row_totals, col_totals, (total.copy_abs() if total == 0 else total).quantize(exp)


def _unit_flow(m: int, n: int, row_bounds: list[tuple[int, int]], col_bounds: list[tuple[int, int]],
               cells: list[tuple[int, int]], need: int) -> set[tuple[int, int]]:
    """The cells that take one unit: `need` units in all, row i taking between its bounds, column j
    between its, each cell of `cells` (in order of preference) at most one. A circulation with lower
    bounds (source -> rows -> columns -> sink -> source) reduced to a maximum flow (Edmonds-Karp)."""
    src, sink, ss, tt = m + n, m + n + 1, m + n + 2, m + n + 3
    graph: list[list[int]] = [[] for _ in range(m + n + 4)]
    to: list[int] = []
    cap: list[int] = []
    excess = [0] * (m + n + 4)

    def edge(u: int, v: int, lo: int, hi: int) -> int:
        excess[v] += lo
        excess[u] -= lo
        graph[u].append(len(to))
        to.append(v)
        cap.append(hi - lo)
        graph[v].append(len(to))
        to.append(u)
        cap.append(0)
        return len(to) - 2

    for i, (lo, hi) in enumerate(row_bounds):
        edge(src, i, lo, hi)
    cell_edge = {(i, j): edge(i, m + j, 0, 1) for i, j in cells}
    for j, (lo, hi) in enumerate(col_bounds):
        edge(m + j, sink, lo, hi)
    edge(sink, src, need, need)
    demand = 0
    for v, e in enumerate(excess[:m + n + 2]):
        if e > 0:
            edge(ss, v, 0, e)
            demand += e
        elif e < 0:
            edge(v, tt, 0, -e)
    flow = 0
    while True:
        prev = [-1] * len(graph)
        prev[ss] = -2
        queue = [ss]
        for u in queue:
            for e in graph[u]:
                if cap[e] > 0 and prev[to[e]] == -1:
                    prev[to[e]] = e
                    queue.append(to[e])
        if prev[tt] == -1:
            break
        v = tt
        while v != ss:
            e = prev[v]
            cap[e] -= 1
            cap[e ^ 1] += 1
            v = to[e ^ 1]
        flow += 1
    if flow != demand:  # cannot happen (Cox 1987); never a table that does not add up
        raise ValueError("display_table: no controlled rounding found")
    return {c for c, e in cell_edge.items() if cap[e] == 0}
