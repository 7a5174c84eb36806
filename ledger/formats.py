"""The one number format of the tables a person reads: money, unit costs, percentages, counts.

Decimal in, text out, rounded half to even (as :mod:`ledger.money` rounds) and grouped by babel's
``en_US`` pattern. Money has 2 decimals; a unit cost below 1 (a cost per task or per token) has 6;
and a column takes one rule for all its cells (:func:`unit_cost_places`), so a column is either
money at 2 decimals or unit costs at 6, never a mix. That rule is the one of every surface: the
dashboard's columns and tiles take it too (in the sidebar's locale and currency), and the workbooks'
unit-cost formats show up to its 6 decimals (:data:`UNIT_COST_EXTRA_PLACES`). Ratios print as
percentages. A missing value prints as ``—``. JSON and CSV never come here: they keep the exact
decimal strings of :func:`ledger.money.fmt`.
"""
from __future__ import annotations

import operator
from collections.abc import Iterable
from decimal import Decimal

from babel.numbers import parse_pattern

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

_LOCALE = "en_US"
_PATTERNS: dict[int, object] = {}


def _pattern(places: int):
    """The grouped pattern with exactly `places` decimals (``#,##0.00``), parsed once."""
    if places not in _PATTERNS:
        _PATTERNS[places] = parse_pattern("#,##0" + ("." + "0" * places if places else ""))
    return _PATTERNS[places]


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
    text = _pattern(places).apply(q, _LOCALE)
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
