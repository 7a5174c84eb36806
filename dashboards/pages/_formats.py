"""How the dashboard writes numbers: babel formats per locale and currency, and the same locale for charts.

One rule per column: money at the currency's decimals (two for USD and EUR), grouped; a column of
per-unit amounts (cost per successful task, per 1M tokens) takes the ledger's one precision rule of
unit costs (:func:`ledger.formats.unit_cost_places`, as the CLI's tables): six decimals when every
amount in it is below one unit of the currency, else the currency's decimals; ratios are percentages with one
decimal; counts are grouped. Prices keep the decimals their book wrote. Everything stays an exact
Decimal until it is written here. Charts get the same decimal mark, grouping and currency symbol
through Vega's number locale (:func:`chart_locale`), so an axis reads ``$2,500`` or ``2.500 $``.

Display rounding, as the CLI's tables (docs/exports.md): a column of amounts with a total is rounded
as a whole (:meth:`Formats.money_column`, :func:`ledger.formats.display_column`), so the cells add
up to the total as shown, and a difference shown beside two totals is their shown difference.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

import pandas as pd
from babel import Locale
from babel.numbers import format_currency, format_decimal, format_percent, get_currency_precision

from ledger.formats import display_column, display_difference, unit_cost_places
from ledger.money import quantize

DASH = "—"


def _missing(d) -> bool:
    return d is None or (not isinstance(d, (str, Decimal)) and pd.isna(d))


@dataclass(frozen=True)
class Formats:
    """Money, ratios and counts as `locale` writes them, money in `currency`."""

    locale: str
    currency: str

    def money(self, d: Decimal | None) -> str:
        """An amount at the currency's own decimals ($54,486.23; 54.486,23 $ in de_DE)."""
        return DASH if _missing(d) else format_currency(d, self.currency, locale=self.locale)

    def unit_places(self, values: Iterable[Decimal | None]) -> int | None:
        """The one rule of a column of per-unit amounts (:func:`ledger.formats.unit_cost_places`):
        six decimals when every amount is below one unit of the currency, else None (the currency's
        own decimals)."""
        return unit_cost_places([None if _missing(v) else v for v in values], money_places=None)

    def unit_column(self, values: Iterable[Decimal | None]) -> list[str]:
        """A column of per-unit amounts, every cell at the column's one rule ($0.096655, $0.587720)."""
        values = list(values)
        places = self.unit_places(values)
        return [self.money_at(v, places) for v in values]

    def unit_money(self, d: Decimal | None) -> str:
        """One per-unit amount (a tile): the rule of a column of one."""
        return self.unit_column([d])[0]

    @property
    def places(self) -> int:
        """The currency's own decimals (2 for USD and EUR, 0 for JPY)."""
        return get_currency_precision(self.currency)

    def money_column(self, values: Iterable[Decimal | None]) -> tuple[list[str], str]:
        """A column of amounts and its total as shown, display-rounded at the currency's decimals
        (:func:`ledger.formats.display_column`): the cells add up to the total as shown."""
        cells, total = display_column([None if _missing(v) else v for v in values], self.places)
        return [self.money_at(c, self.places) for c in cells], self.money_at(total, self.places)

    def money_shown(self, values: Iterable[Decimal | None]) -> tuple[list[Decimal | None], Decimal]:
        """The display-rounded amounts of a column and its total, as Decimals (for a difference or a
        further sum shown beside them)."""
        return display_column([None if _missing(v) else v for v in values], self.places)

    def difference(self, a: Decimal, b: Decimal) -> str:
        """``a - b`` as shown beside `a` and `b` shown at the currency's decimals: their shown difference."""
        return self.money_at(display_difference(a, b, self.places)[2], self.places)

    def money_at(self, d: Decimal | None, places: int | None) -> str:
        """An amount at `places` decimals (None: the currency's own), rounded half-even."""
        if _missing(d):
            return DASH
        if places is None:
            return self.money(d)
        q = quantize(d, Decimal(1).scaleb(-places))
        return format_currency(q, self.currency, locale=self.locale, format=_currency_pattern(self.locale, places),
                               currency_digits=False)

    def price(self, d: Decimal | None, currency: str) -> str:
        """A price as booked, every decimal kept (a price book's $0.125 per 1M tokens stays $0.125)."""
        if _missing(d):
            return DASH
        q = d.quantize(Decimal(1)) if d == d.to_integral_value() else d.normalize()
        return format_currency(q, currency, locale=self.locale, decimal_quantization=False)

    def pct(self, d: Decimal | None) -> str:
        """A ratio as a percentage with one decimal (2.7%; 2,7 % in de_DE)."""
        if _missing(d):
            return DASH
        return format_percent(d, format=_percent_pattern(self.locale), locale=self.locale)

    def count(self, n: int | float | None) -> str:
        return DASH if _missing(n) else format_decimal(int(n), locale=self.locale)

    def number(self, x: float | Decimal | None, digits: int = 1) -> str:
        if _missing(x):
            return DASH
        return format_decimal(round(Decimal(str(x)), digits), format="#,##0." + "0" * digits if digits else "#,##0",
                              locale=self.locale)

    def plural(self, n: int, one: str, many: str | None = None) -> str:
        """``1 hour``, ``2 hours``, ``1,234 points``: the count grouped, the noun agreeing."""
        return f"{self.count(n)} {one if n == 1 else (many or one + 's')}"


@lru_cache(maxsize=32)
def _percent_pattern(locale: str) -> str:
    """The locale's percent pattern with one decimal: ``#,##0.0%`` (en_US), ``#,##0.0 %`` (de_DE)."""
    pattern = Locale.parse(locale).percent_formats[None].pattern.split(";")[0]
    i = pattern.rfind("0")
    return pattern[:i + 1] + ".0" + pattern[i + 1:] if i >= 0 else pattern


@lru_cache(maxsize=64)
def _currency_pattern(locale: str, places: int) -> str:
    """The locale's currency pattern with exactly `places` decimals (``¤#,##0.0000``)."""
    pattern = Locale.parse(locale).currency_formats["standard"].pattern
    return re.sub(r"0(\.0+)?(?=[^0-9#.,]|$)", "0." + "0" * places if places else "0", pattern)


@lru_cache(maxsize=32)
def formats(locale: str, currency: str) -> Formats:
    return Formats(locale, currency)


@lru_cache(maxsize=64)
def chart_locale(locale: str, currency: str) -> dict:
    """Vega's number locale for `locale` with `currency` as its ``$``: the decimal mark, the group
    separator and sizes, and the symbol before or after the amount, as babel writes them (a chart's
    ``$,.0f`` axis then reads like the tables: ``$2,500``, ``2.500 $``)."""
    loc = Locale.parse(locale)
    symbols = loc.number_symbols
    symbols = symbols.get("latn", symbols) if hasattr(symbols, "get") else symbols
    primary, secondary = loc.decimal_formats[None].grouping
    sample = format_currency(Decimal(0), currency, locale=locale, format=_currency_pattern(locale, 0),
                             currency_digits=False)
    before, _, after = sample.partition("0")
    return {"decimal": symbols["decimal"], "thousands": symbols["group"],
            "grouping": [primary] if primary == secondary else [primary, secondary],
            "currency": [before, after]}
