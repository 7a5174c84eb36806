"""Price book records: books, dated prices, tiers, FX rates, and the line of each problem a check finds."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from decimal import Decimal

from ..errors import LedgerError, Problem

#: Meters whose `per` must be GPU-time, and meters whose `per` must be tokens (the token meters of a
#: provider request: its buckets, and the reasoning part of its output).
GPU_METERS = frozenset({"gpu_time"})
TOKEN_METERS = frozenset({"input_tokens", "cached_input_tokens", "cache_write_tokens", "cache_write_1h_tokens",
                          "output_tokens", "reasoning_tokens"})
#: A request's `service_tier`, which a token price's `purchase_option` names (``*``: any tier).
SERVICE_TIERS = ("standard", "batch", "flex", "priority")
#: The dimensions a price may be `per` (pint names them in brackets); a price per parsec is a typo.
METERED_DIMENSIONS = frozenset({"[gpu]", "[token]", "[request]", "[call]", "[span]", "[information]", "[time]"})
#: The precision of an effective price that amortizes an upfront amount (a price, not money).
EFFECTIVE_PRICE_EXP = Decimal("1e-10")
#: The longest text each name-like field may hold: its column in the ledger DB (``ledger/models.py``,
#: ``VARCHAR(n)`` on PostgreSQL, which counts characters). A longer value is a problem of the book, on
#: every store, never a database error at load time.
BOOK_FIELD_LIMITS = {"name": 200, "version": 100}
PRICE_FIELD_LIMITS = {"meter": 100, "sku": 200, "region": 100, "purchase_option": 100, "provider": 200,
                      "per": 100, "term": 100}
#: What the store's money columns hold (``NUMERIC(38, 12)`` on PostgreSQL): at most 12 decimal places
#: and 26 digits before the point. Prices, upfront amounts and FX rates must fit, on every store.
MONEY_PLACES = 12
MONEY_INTEGER_DIGITS = 26


class NoPriceError(LedgerError, LookupError, ValueError):
    """No price in force for a usage: never a silent zero."""


_TOML_AT = re.compile(r"\(at line (\d+), column (\d+)\)")
_ENTRY = re.compile(r"(price|fx)\[(\d+)\]")
_HEADER = re.compile(r"\s*(\[\[\s*(price|fx)\s*\]\]|\[\s*(book)\s*\])\s*(#.*)?")


def located(problems: list[Problem], text: str) -> list[Problem]:
    """`problems` of one book with the line each concerns, found in the book's `text`: a TOML
    syntax error's own line and column; ``[book]`` and ``price[N]``/``fx[N]`` at the line of
    their table header (the Nth ``[[price]]``). An entry with no header (an inline array) keeps None."""
    headers: dict[str, list[int]] = {"price": [], "fx": [], "book": []}
    for n, raw in enumerate(text.split("\n"), start=1):
        m = _HEADER.fullmatch(raw.rstrip("\r"))
        if m:
            headers[m.group(2) or m.group(3)].append(n)
    out = []
    for p in problems:
        line = column = None
        if at := _TOML_AT.search(p.message):
            line, column = int(at.group(1)), int(at.group(2))
        elif (p.entry or "").startswith("[book]") and headers["book"]:
            line = headers["book"][0]
        elif entry := _ENTRY.match(p.entry or ""):
            found = headers[entry.group(1)]
            i = int(entry.group(2))
            line = found[i - 1] if 0 < i <= len(found) else None
        out.append(replace(p, line=line, column=column) if line is not None else p)
    return out


def unlocated(problems: Iterable[Problem]) -> list[Problem]:
    """`problems` without their line and column: a book's problems as every reader of books but
    ``ledger pricebook`` says them, ``file: entry: message`` (``ledger size`` and ``ledger budget``
    with their own books, a stored book that no longer validates, the demo, the dashboard)."""
    return [replace(p, line=None, column=None) for p in problems]


@dataclass(frozen=True)
class Tier:
    """Long-context tier: when a request has more than `above_input_tokens` input tokens, `price`
    (per the entry's `per`) applies to every token of that request for the entry's meter."""

    above_input_tokens: int
    price: Decimal


@dataclass(frozen=True)
class Price:
    """A price in force over ``[effective_from, effective_to)`` (end exclusive; None is open-ended).

    Fields: `meter`, `sku`, `region` (``*`` = any), `purchase_option` (``*`` = any; for token
    meters the request's service tier), `provider` (token meters: the request's provider; ``*`` =
    any); `price` is the effective price in `currency` per one `per` (a pint expression such as
    ``gpu * hour`` or ``1e6 * token``), with any `upfront` amount amortized over `term`;
    `list_price` is the price as written; `tiers` are long-context tiers, ascending; `book`,
    `version`, `entry` (1-based index in the book) and `source_url` say where it came from.
    """

    meter: str
    sku: str
    region: str
    purchase_option: str
    price: Decimal
    currency: str
    per: str
    effective_from: datetime
    effective_to: datetime | None
    source_url: str
    book: str
    version: str
    entry: int
    list_price: Decimal
    tiers: tuple[Tier, ...] = ()
    upfront: Decimal | None = None
    term: str | None = None
    description: str = ""
    provider: str = "*"

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        """What identifies the price (two prices of one key must not overlap in time)."""
        return (self.meter, self.sku, self.region, self.purchase_option, self.provider)

    def in_force(self, at: datetime) -> bool:
        return self.effective_from <= at and (self.effective_to is None or at < self.effective_to)

    def price_for_request(self, input_tokens: int) -> Decimal:
        """The per-`per` price for a request with `input_tokens` (highest tier exceeded, else base)."""
        p = self.price
        for t in self.tiers:
            if input_tokens > t.above_input_tokens:
                p = t.price
        return p

    def label(self) -> str:
        """``meter/sku/region/purchase_option``, with ``/provider`` when the price names one."""
        return price_label(self.meter, self.sku, self.region, self.purchase_option, self.provider)


def price_label(meter: str, sku: str, region: str, purchase_option: str, provider: str = "*") -> str:
    """How problem lines name a price: ``meter/sku/region/purchase_option[/provider]``."""
    return "/".join((meter, sku, region, purchase_option) + ((provider,) if provider != "*" else ()))


@dataclass(frozen=True)
class FxRate:
    """`rate` units of `to` for one unit of `from_`, in force over ``[effective_from, effective_to)``."""

    from_: str
    to: str
    rate: Decimal
    effective_from: datetime
    effective_to: datetime | None
    source_url: str
    book: str
    version: str


@dataclass(frozen=True)
class Book:
    """One version of a price book as written in `path`; `digest` is the SHA-256 of its bytes."""

    name: str
    version: str
    currency: str
    source: str
    retrieved_at: date
    path: str
    digest: str
    text: str
    prices: tuple[Price, ...] = field(default=())
    fx: tuple[FxRate, ...] = field(default=())
    description: str = ""

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"
