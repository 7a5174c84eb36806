"""Parse and validate one price book's TOML text into a Book, with one Problem per fault.

Every name-like field follows the ledger's names rule (:mod:`ledger.names`) with the length of its
column in the store (``records.BOOK_FIELD_LIMITS``, ``PRICE_FIELD_LIMITS``), free text has no NUL,
and amounts fit the store's money columns, so a book that parses loads the same on SQLite and
PostgreSQL and never meets a database error."""
from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import date, datetime, time, timezone
from decimal import Decimal, localcontext

from babel.numbers import list_currencies

from .. import tomlfile, units
from ..errors import Problem
from ..money import MoneyError, quantize, to_decimal
from ..names import CONTROL_CLASS, name_problem
from .records import (BOOK_FIELD_LIMITS, EFFECTIVE_PRICE_EXP, GPU_METERS, METERED_DIMENSIONS, MONEY_INTEGER_DIGITS,
                      MONEY_PLACES, PRICE_FIELD_LIMITS, SERVICE_TIERS, TOKEN_METERS, Book, FxRate, Price, Tier, located,
                      price_label)

_CURRENCIES = frozenset(list_currencies())
_BOOK_FIELDS = {"name", "version", "currency", "source", "retrieved_at", "description"}
_PRICE_FIELDS = {"meter", "sku", "region", "purchase_option", "provider", "price", "currency", "per",
                 "effective_from", "effective_to", "source_url", "description", "tiers", "upfront", "term"}
_FX_FIELDS = {"from", "to", "rate", "effective_from", "effective_to", "source_url"}
_CONTROL = re.compile(CONTROL_CLASS)
_MONEY_SCALE = Decimal(1).scaleb(-MONEY_PLACES)
_MONEY_BOUND = Decimal(10) ** MONEY_INTEGER_DIGITS


def _shown(value: str, limit: int = 40) -> str:
    """A value as a problem line may print it: cut after `limit` characters, control characters and
    lone surrogates escaped (a NUL or a line break never reaches the terminal raw)."""
    cut = value if len(value) <= limit else value[:limit] + "…"
    cut = cut.encode("utf-8", "backslashreplace").decode("utf-8")
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], cut)


def _name_field(value: str, what: str, limit: int) -> str | None:
    """A problem line for a name-like field that breaks the names rule or its column's length."""
    p = name_problem(value, max_length=limit)
    return f"{what}: {p}" if p else None


def _free_text(value: object, what: str) -> str | None:
    """Free text (source, source_url, description) is kept as written, except a NUL, which
    PostgreSQL cannot store in text."""
    if isinstance(value, str) and "\x00" in value:
        return f"{what}: contains a NUL byte (at character {value.index(chr(0)) + 1})"
    return None


def _storable(value: Decimal, what: str) -> str | None:
    """Why the store's money columns (NUMERIC(38, 12)) cannot hold `value`, or None."""
    with localcontext() as ctx:
        ctx.prec = 80
        if abs(value) >= _MONEY_BOUND:
            return f"{what} {value} is too large to store (at most {MONEY_INTEGER_DIGITS} digits before the point)"
        if value != value.quantize(_MONEY_SCALE):
            return (f"{what} {value} has more than {MONEY_PLACES} decimal places "
                    f"(the ledger stores at most {MONEY_PLACES})")
    return None


def _instant(value: object) -> datetime | str:
    """A TOML value as an aware UTC datetime, or an error message."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return "timestamp has no UTC offset (write e.g. 2026-10-01T00:00:00Z)"
        try:
            return value.astimezone(timezone.utc)
        except OverflowError:
            return f"{value.isoformat()} is out of range once moved to UTC"
    if isinstance(value, date):
        return datetime.combine(value, time(0), tzinfo=timezone.utc)
    if isinstance(value, str):
        try:
            d = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return f"{value!r} is not an ISO 8601 timestamp"
        return _instant(d)
    return f"{value!r} is not a timestamp"


def _decimal(value: object, what: str) -> Decimal | str:
    if isinstance(value, float):
        return f"{what} {value!r} is a TOML float; write it as a string (\"{value}\") so it stays exact"
    try:
        d = to_decimal(value, what=what)
    except MoneyError as e:
        return str(e)
    return _storable(d, what) or d


def parse_book(text: str, path: str) -> tuple[Book | None, list[Problem]]:
    """Parse and validate one book's TOML text. Returns the book (None when unusable) and problems,
    each with the line it concerns where known (:func:`records.located`)."""
    book, problems = _parse_book(text, path)
    return book, located(problems, text)


def _parse_book(text: str, path: str) -> tuple[Book | None, list[Problem]]:
    problems: list[Problem] = []

    def err(entry: str, msg: str) -> None:
        problems.append(Problem(file=path, entry=entry, message=msg))

    for what, value in (("file name", path), ("text", text)):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            path = path.encode("utf-8", "backslashreplace").decode("utf-8")
            err("", f"the {what} is not UTF-8 (a lone surrogate at character {e.start + 1})")
            return None, problems
    try:
        doc = tomlfile.loads(text, path)
    except tomlfile.TomlError as e:  # a syntax error, or values nested too deep: its line and column
        problems.append(Problem(file=path, message=e.message, line=e.line, column=e.column))
        return None, problems
    head = doc.get("book")
    if not isinstance(head, dict):
        err("[book]", "missing [book] table (name, version, currency, source, retrieved_at)")
        return None, problems
    for k in sorted(set(doc) - {"book", "price", "fx"}):
        err("", f"unknown top-level key {k!r}")
    for k in sorted(set(head) - _BOOK_FIELDS):
        err("[book]", f"unknown field {k!r}")
    for k in ("name", "version", "currency", "source", "retrieved_at"):
        if k not in head:
            err("[book]", f"missing required field {k!r}")
    name = str(head.get("name", ""))
    version = str(head.get("version", ""))
    for field, value in (("name", name), ("version", version)):
        msg = field in head and _name_field(value, field, BOOK_FIELD_LIMITS[field])
        if msg:
            err("[book]", msg)
    for field in ("source", "description"):
        msg = _free_text(head.get(field), field)
        if msg:
            err("[book]", msg)
    currency = head.get("currency", "")
    if "currency" in head and (not isinstance(currency, str) or currency not in _CURRENCIES):
        err("[book]", f"currency {_shown(repr(currency))} is not an ISO 4217 code")
    retrieved = head.get("retrieved_at")
    if "retrieved_at" in head and not isinstance(retrieved, date):
        err("[book]", f"retrieved_at {retrieved!r} is not a date")
    if isinstance(retrieved, datetime):
        retrieved = retrieved.date()

    prices: list[Price] = []
    raw_prices = doc.get("price", [])
    if not isinstance(raw_prices, list):
        err("price", "[[price]] must be an array of tables")
        raw_prices = []
    for i, raw in enumerate(raw_prices, start=1):
        p = _parse_price(raw, i, name, version, str(currency), err)
        if p is not None:
            prices.append(p)

    fx: list[FxRate] = []
    raw_fx = doc.get("fx", [])
    for i, raw in enumerate(raw_fx if isinstance(raw_fx, list) else [], start=1):
        r = _parse_fx(raw, i, name, version, err)
        if r is not None:
            fx.append(r)

    for a, b in _overlaps(prices):
        err(f"price[{b.entry}] {b.label()}",
            f"overlaps price[{a.entry}] of the same key in force from {a.effective_from.isoformat()}"
            f" to {a.effective_to.isoformat() if a.effective_to else 'open end'}")
    for (f1, t1), rates in _group(fx, lambda r: (r.from_, r.to)).items():
        rates.sort(key=lambda r: r.effective_from)
        for a, b in zip(rates, rates[1:]):
            if a.effective_to is None or b.effective_from < a.effective_to:
                err(f"fx {f1}->{t1}", f"rates from {a.effective_from.isoformat()} and {b.effective_from.isoformat()} overlap")
    if problems:
        return None, problems
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    book = Book(name=name, version=version, currency=str(currency), source=str(head["source"]),
                retrieved_at=retrieved, path=path, digest=digest, text=text, prices=tuple(prices), fx=tuple(fx),
                description=str(head.get("description", "")))
    return book, problems


def _parse_price(raw: object, i: int, book: str, version: str, book_currency: str, err) -> Price | None:
    if not isinstance(raw, dict):
        err(f"price[{i}]", "is not a table")
        return None
    label = price_label(*(_shown(str(raw.get(k, "*" if k in ("region", "purchase_option", "provider") else "?")))
                          for k in ("meter", "sku", "region", "purchase_option", "provider")))
    where = f"price[{i}] {label}"
    bad = False

    def fail(msg: str) -> None:
        nonlocal bad
        bad = True
        err(where, msg)

    for k in sorted(set(raw) - _PRICE_FIELDS):
        fail(f"unknown field {k!r}")
    for k in ("meter", "sku", "price", "per", "effective_from", "source_url"):
        if k not in raw or raw[k] in ("", None):
            fail(f"missing required field {k!r}")
    if bad:
        return None
    meter, sku = str(raw["meter"]), str(raw["sku"])
    region = str(raw.get("region", "*"))
    option = str(raw.get("purchase_option", "*"))
    provider = str(raw.get("provider", "*"))
    for what, value in (("region", region), ("purchase_option", option), ("provider", provider)):
        if not value.strip():
            fail(f"{what} is empty (write \"*\" for any)")
    for what, value in (("meter", meter), ("sku", sku), ("region", region), ("purchase_option", option),
                        ("provider", provider), ("per", str(raw["per"])), ("term", str(raw.get("term", "*")))):
        if what in ("region", "purchase_option", "provider") and not value.strip():
            continue  # said above
        msg = _name_field(value, what, PRICE_FIELD_LIMITS[what])
        if msg:
            fail(msg)
    for what in ("source_url", "description"):
        msg = _free_text(raw.get(what), what)
        if msg:
            fail(msg)
    if bad:  # a name the store cannot hold: the checks below would only repeat it
        return None
    for msg in _unused(meter, option, provider):
        fail(msg)
    currency = str(raw.get("currency", book_currency))
    if currency not in _CURRENCIES:
        fail(f"currency {_shown(repr(currency))} is not an ISO 4217 code")
    price = _decimal(raw["price"], "price")
    if isinstance(price, str):
        fail(price)
    elif price < 0:
        fail(f"price {price} is negative")
    per = str(raw["per"])
    _check_per(meter, per, fail)
    start, end = _effective_range(raw, fail)
    tiers = _tiers(raw, meter, fail)
    effective, upfront, term = _upfront(raw, price, per, fail)
    if bad:
        return None
    return Price(meter=meter, sku=sku, region=region, purchase_option=option, price=effective, currency=currency,
                 per=per, effective_from=start, effective_to=end, source_url=str(raw["source_url"]), book=book,
                 version=version, entry=i, list_price=price, tiers=tuple(tiers), upfront=upfront, term=term,
                 description=str(raw.get("description", "")), provider=provider)


def _check_per(meter: str, per: str, fail) -> None:
    """A price's `per`: a unit the ledger meters, of the dimension its meter needs (`fail` each problem)."""
    try:  # by ledger.units' table of known units where it can, without pint
        dims = units.dimensions(per)
        if meter in GPU_METERS and not units.is_dimension(per, "gpu * hour"):
            fail(f"per {per!r} is not GPU-time: a {meter} price must be per gpu * time (e.g. \"gpu * hour\")")
        elif meter in TOKEN_METERS and not units.is_dimension(per, "token"):
            fail(f"per {per!r} is not tokens: a {meter} price must be per tokens (e.g. \"1e6 * token\")")
        elif not dims or set(dims) - METERED_DIMENSIONS:
            fail(f"per {per!r} ({units.dimensionality(per)}) is not something the ledger meters: use gpu, token,"
                 " request, call, span, bytes (GB, GiB) and time")
        elif units.magnitude(per) <= 0:
            fail(f"per {per!r} is not a positive amount")
    except units.UnitError as e:
        fail(f"per: {e}")


def _effective_range(raw: dict, fail) -> tuple:
    """(effective_from, effective_to) of a price entry, end-exclusive (`fail` each problem;
    a value that does not read comes back as its message)."""
    start = _instant(raw["effective_from"])
    if isinstance(start, str):
        fail(f"effective_from: {start}")
    end = None
    if raw.get("effective_to") is not None:
        end = _instant(raw["effective_to"])
        if isinstance(end, str):
            fail(f"effective_to: {end}")
        elif isinstance(start, datetime) and end <= start:
            fail(f"effective_to {end.isoformat()} is not after effective_from {start.isoformat()} (ranges are end-exclusive)")
    return start, end


def _tiers(raw: dict, meter: str, fail) -> list[Tier]:
    """A token price's long-context tiers, sorted by `above_input_tokens` (`fail` each problem)."""
    tiers: list[Tier] = []
    raw_tiers = raw.get("tiers", [])
    if raw_tiers and meter not in TOKEN_METERS:
        fail("tiers apply to token meters only")
    for j, t in enumerate(raw_tiers if isinstance(raw_tiers, list) else [None], start=1):
        if not isinstance(t, dict) or set(t) != {"above_input_tokens", "price"}:
            fail(f"tier {j} must be {{ above_input_tokens = N, price = \"...\" }}")
            continue
        n = t["above_input_tokens"]
        tp = _decimal(t["price"], f"tier {j} price")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            fail(f"tier {j} above_input_tokens {n!r} is not a whole number >= 0")
        elif isinstance(tp, str):
            fail(tp)
        elif tp < 0:
            fail(f"tier {j} price {tp} is negative")
        else:
            tiers.append(Tier(n, tp))
    tiers.sort(key=lambda t: t.above_input_tokens)
    if len({t.above_input_tokens for t in tiers}) != len(tiers):
        fail("two tiers have the same above_input_tokens")
    return tiers


def _upfront(raw: dict, price, per: str, fail) -> tuple:
    """(effective price, upfront, term): an upfront amount spread over its term into the effective
    price (quantized to EFFECTIVE_PRICE_EXP); the list price when there is none (`fail` each problem)."""
    upfront = None
    term = None
    effective = price
    if "upfront" in raw or "term" in raw:
        if "upfront" not in raw or "term" not in raw:
            fail("upfront and term go together")
        else:
            up = _decimal(raw["upfront"], "upfront")
            term = str(raw["term"])
            if isinstance(up, str):
                fail(up)
            elif up < 0:
                fail(f"upfront {up} is negative")
            else:
                upfront = up
            try:
                if not units.is_dimension(term, "hour"):
                    fail(f"term {term!r} is not a duration")
                elif not units.dimensions(per).get("[time]"):
                    fail(f"an upfront amount needs a per-time price; per {per!r} has no time")
                elif upfront is not None and not isinstance(price, str):
                    # upfront is per (per's non-time part) for the whole term: spread it over the term
                    # expressed in per's time unit. gpu*hour with term 8760 hour -> upfront / 8760.
                    term_in_per = units.duration_in(term, per)
                    if term_in_per <= 0:
                        fail(f"term {term!r} is not positive")
                    else:
                        effective = quantize(price + upfront / term_in_per, EFFECTIVE_PRICE_EXP)
                        msg = _storable(effective, "the effective price (price + upfront / term)")
                        if msg:
                            fail(msg)
            except units.UnitError as e:
                fail(f"term: {e}")
    return effective, upfront, term


def _unused(meter: str, option: str, provider: str) -> list[str]:
    """Why no pricing rule could ever use a price of this meter, purchase option and provider.

    The rules: gpu_time is looked up by device, region and purchase option; the token meters by
    model, region, service tier (the purchase option) and provider; any other meter (the meters
    input) by sku and region with purchase option ``*``. A meter named like a token meter that is
    none of them, a purchase option or provider that its meter's rule never asks for, would be a
    price carried and silently ignored."""
    out = []
    if meter not in TOKEN_METERS and (meter.endswith("_tokens") or meter == "tokens"):
        out.append(f"meter {meter!r} is not a token meter the ledger prices ({', '.join(sorted(TOKEN_METERS))}): "
                   "no rule would use this price (a meters-input meter must not end in _tokens)")
    if meter in TOKEN_METERS and option not in (*SERVICE_TIERS, "*"):
        out.append(f"purchase_option {option!r} is not a service tier ({', '.join(SERVICE_TIERS)}, or * for any): "
                   "no request would use this price")
    if meter not in TOKEN_METERS and provider != "*":
        out.append(f"provider {provider!r}: only token prices are matched against a request's provider; no usage "
                   f"of meter {meter} names one, so this price would never be used")
    if meter not in TOKEN_METERS and meter not in GPU_METERS and option != "*":
        out.append(f"purchase_option {option!r}: meter {meter} is looked up with purchase option * (options apply "
                   "to gpu_time, and as service tiers to token meters), so this price would never be used")
    return out


def _parse_fx(raw: object, i: int, book: str, version: str, err) -> FxRate | None:
    where = f"fx[{i}]"
    if not isinstance(raw, dict):
        err(where, "is not a table")
        return None
    problems = []
    for k in sorted(set(raw) - _FX_FIELDS):
        problems.append(f"unknown field {k!r}")
    for k in ("from", "to", "rate", "effective_from"):
        if k not in raw:
            problems.append(f"missing required field {k!r}")
    if problems:
        for m in problems:
            err(where, m)
        return None
    for k in ("from", "to"):
        if not isinstance(raw[k], str) or raw[k] not in _CURRENCIES:
            problems.append(f"{k} {_shown(repr(raw[k]))} is not an ISO 4217 code")
    msg = _free_text(raw.get("source_url"), "source_url")
    if msg:
        problems.append(msg)
    rate = _decimal(raw["rate"], "rate")
    if isinstance(rate, str):
        problems.append(rate)
    elif rate <= 0:
        problems.append(f"rate {rate} is not positive")
    start = _instant(raw["effective_from"])
    if isinstance(start, str):
        problems.append(f"effective_from: {start}")
    end = _instant(raw["effective_to"]) if raw.get("effective_to") is not None else None
    if isinstance(end, str):
        problems.append(f"effective_to: {end}")
    elif end is not None and isinstance(start, datetime) and end <= start:
        problems.append("effective_to is not after effective_from")
    if problems:
        for m in problems:
            err(f"{where} {_shown(str(raw.get('from')))}->{_shown(str(raw.get('to')))}", m)
        return None
    return FxRate(from_=raw["from"], to=raw["to"], rate=rate, effective_from=start, effective_to=end,
                  source_url=str(raw.get("source_url", "")), book=book, version=version)


def _group(items, keyfn) -> dict:
    out: dict = defaultdict(list)
    for x in items:
        out[keyfn(x)].append(x)
    return out


def _overlaps(prices: Iterable[Price]) -> list[tuple[Price, Price]]:
    """Pairs (earlier, later) of prices for one key whose ranges overlap."""
    found = []
    for _, ps in _group(prices, lambda p: p.key).items():
        ps = sorted(ps, key=lambda p: (p.effective_from, p.book, p.entry))
        for a, b in zip(ps, ps[1:]):
            if a.effective_to is None or b.effective_from < a.effective_to:
                found.append((a, b))
    return found
