"""Parse and check one budgets book's TOML text into a BudgetBook, with one Problem per fault
(file, line of the entry's table header, entry, what is wrong), as price books are checked.

The shape (docs/alerts.md)::

    [book]
    name = "team-budgets"
    version = "2026-10-01"
    currency = "USD"

    [[budget]]
    tenant = "globex"            # and/or product, model: at least one
    monthly = "3000.00"          # a decimal string, > 0
    owner = "finance@example.com"
    effective_from = 2026-10-01T00:00:00Z
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from datetime import date, datetime, time, timezone
from decimal import Decimal, localcontext

from babel.numbers import list_currencies

from .. import tomlfile
from ..errors import Problem
from ..instants import iso
from ..money import MoneyError, to_decimal
from ..names import name_problem, text_problem
from .records import SCOPE_FIELDS, Budget, BudgetBook

_CURRENCIES = frozenset(list_currencies())
_BOOK_FIELDS = {"name", "version", "currency", "description", "source"}
_BUDGET_FIELDS = {*SCOPE_FIELDS, "monthly", "currency", "owner", "effective_from", "effective_to", "description"}
#: The store's money columns hold 26 digits before the point and 12 after (NUMERIC(38, 12)).
_MONEY_BOUND = Decimal(10) ** 26
_MONEY_SCALE = Decimal("1e-12")
_HEADER = re.compile(r"\s*(\[\[\s*budget\s*\]\]|\[\s*book\s*\])\s*(#.*)?")
_ENTRY = re.compile(r"budget\[(\d+)\]")


def parse_budget_book(text: str, path: str) -> tuple[BudgetBook | None, list[Problem]]:
    """Parse and check one budgets book. Returns the book (None when it has problems) and the
    problems, each at the line of its table header (a TOML syntax error at its own line and column)."""
    try:
        doc = tomlfile.loads(text, path)
    except tomlfile.TomlError as e:
        return None, [Problem(file=path, line=e.line, column=e.column, message=e.message)]
    problems: list[Problem] = []

    def err(entry: str, message: str) -> None:
        problems.append(Problem(file=path, entry=entry, message=message))

    head = doc.get("book")
    if not isinstance(head, dict):
        err("[book]", "missing [book] table (name, version, currency)")
        return None, _located(problems, text)
    for k in sorted(set(doc) - {"book", "budget"}):
        err("", f"unknown top-level key {k!r}")
    name, version, currency = _head(head, err)
    raw = doc.get("budget", [])
    if not isinstance(raw, list) or not raw:
        err("budget", "no [[budget]] entries (each: tenant, product or model; monthly; owner; effective_from)")
        raw = raw if isinstance(raw, list) else []
    budgets = [b for i, r in enumerate(raw, start=1)
               if (b := _budget(r, i, name, version, currency, err)) is not None]
    for a, b in overlaps(budgets):
        err(f"budget[{b.entry}] {b.label()}", f"overlaps budget[{a.entry}] of the same scope (in force from "
            f"{iso(a.effective_from)}{' to ' + iso(a.effective_to) if a.effective_to else ''})")
    if problems:
        return None, _located(problems, text)
    return BudgetBook(name=name, version=version, currency=currency, path=path, text=text,
                      digest=hashlib.sha256(text.encode("utf-8")).hexdigest(), budgets=tuple(budgets),
                      description=str(head.get("description", ""))), []


def _head(head: dict, err) -> tuple[str, str, str]:
    for k in sorted(set(head) - _BOOK_FIELDS):
        err("[book]", f"unknown field {k!r}")
    for k in ("name", "version", "currency"):
        if k not in head:
            err("[book]", f"missing required field {k!r}")
    for k in ("name", "version"):
        if k in head and (p := name_problem(head[k], max_length=200 if k == "name" else 100)):
            err("[book]", f"{k} {p}")
    for k in ("description", "source"):
        if k in head and (p := text_problem(head[k], max_length=10_000)):
            err("[book]", f"{k} {p}")
    currency = head.get("currency", "")
    if "currency" in head and currency not in _CURRENCIES:
        err("[book]", f"currency {str(currency)[:20]!r} is not an ISO 4217 code")
    return str(head.get("name", "")), str(head.get("version", "")), str(currency)


def _budget(raw: object, i: int, book: str, version: str, book_currency: str, err) -> Budget | None:
    if not isinstance(raw, dict):
        err(f"budget[{i}]", "is not a table")
        return None
    scope = {k: raw.get(k) for k in SCOPE_FIELDS}
    where = " ".join([f"budget[{i}]", *(f"{k}={str(v)[:40]}" for k, v in scope.items() if v is not None)])
    found: list[str] = []
    for k in sorted(set(raw) - _BUDGET_FIELDS):
        found.append(f"unknown field {k!r}")
    if all(v is None for v in scope.values()):
        found.append("names no tenant, product or model: give at least one")
    for k, v in scope.items():
        if v is not None and (p := name_problem(v)):
            found.append(f"{k} {p}")
    for k in ("monthly", "owner", "effective_from"):
        if k not in raw:
            found.append(f"missing required field {k!r}")
    monthly = _money(raw["monthly"]) if "monthly" in raw else None
    if isinstance(monthly, str):
        found.append(monthly)
    currency = raw.get("currency", book_currency)  # the book's own is checked once, with [book]
    if "currency" in raw and currency not in _CURRENCIES:
        found.append(f"currency {str(currency)[:20]!r} is not an ISO 4217 code")
    owner = raw.get("owner", "")
    if "owner" in raw and ((p := text_problem(owner)) or not str(owner).strip()):
        found.append(f"owner {p or 'is empty'}")
    if "description" in raw and (p := text_problem(raw["description"], max_length=10_000)):
        found.append(f"description {p}")
    start = _instant(raw["effective_from"], "effective_from") if "effective_from" in raw else None
    end = _instant(raw["effective_to"], "effective_to") if raw.get("effective_to") is not None else None
    found += [x for x in (start, end) if isinstance(x, str)]
    if isinstance(start, datetime) and isinstance(end, datetime) and end <= start:
        found.append(f"effective_to {iso(end)} is not after effective_from {iso(start)} (end exclusive)")
    for message in found:
        err(where, message)
    if found:
        return None
    return Budget(tenant=scope["tenant"], product=scope["product"], model=scope["model"], monthly=monthly,
                  currency=currency, owner=owner, effective_from=start, effective_to=end, book=book, version=version,
                  entry=i, description=str(raw.get("description", "")))


def _money(value: object) -> Decimal | str:
    """A budget's monthly amount: a decimal string (or an integer), > 0, storable exactly."""
    if isinstance(value, float):
        return f"monthly {value!r} is a TOML float; write it as a string (\"{value}\") so it stays exact"
    try:
        d = to_decimal(value, what="monthly")
    except MoneyError as e:
        return str(e)
    with localcontext() as ctx:
        ctx.prec = 80
        if d <= 0:
            return f"monthly {d} is not positive"
        if d >= _MONEY_BOUND or d != d.quantize(_MONEY_SCALE):
            return f"monthly {d} cannot be stored exactly (at most 26 digits before the point and 12 after)"
    return d


def _instant(value: object, what: str) -> datetime | str:
    """A TOML date or offset date-time as an aware UTC instant (a date is its 00:00 UTC), or why not."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return f"{what} {value.isoformat()} has no UTC offset (write e.g. 2026-10-01T00:00:00Z)"
        try:
            return value.astimezone(timezone.utc)
        except OverflowError:
            return f"{what} {value.isoformat()} is out of range once moved to UTC"
    if isinstance(value, date):
        return datetime.combine(value, time(0), tzinfo=timezone.utc)
    return f"{what} {str(value)[:40]!r} is not a TOML date or date-time (write e.g. 2026-10-01T00:00:00Z)"


def overlaps(budgets) -> list[tuple[Budget, Budget]]:
    """Pairs (earlier, later) of budgets of one scope in force at the same time: the same start, or
    an explicit end after the later one's start. (An open end is cut where the next one starts.)"""
    by_scope: dict[tuple, list[Budget]] = {}
    for b in budgets:
        by_scope.setdefault(b.scope, []).append(b)
    found = []
    for group in by_scope.values():
        group.sort(key=lambda b: (b.effective_from, b.book, b.entry))
        for a, b in zip(group, group[1:]):
            if a.effective_from == b.effective_from or (a.effective_to is not None and a.effective_to > b.effective_from):
                found.append((a, b))
    return found


def _located(problems: list[Problem], text: str) -> list[Problem]:
    """Each problem at the line of its entry's table header (``[book]``, the Nth ``[[budget]]``)."""
    book_line, budget_lines = None, []
    for n, line in enumerate(text.split("\n"), start=1):
        if m := _HEADER.fullmatch(line.rstrip("\r")):
            if m.group(1).startswith("[["):
                budget_lines.append(n)
            elif book_line is None:
                book_line = n
    out = []
    for p in problems:
        line = None
        if (p.entry or "").startswith("[book]"):
            line = book_line
        elif m := _ENTRY.match(p.entry or ""):
            i = int(m.group(1))
            line = budget_lines[i - 1] if 0 < i <= len(budget_lines) else None
        out.append(replace(p, line=line) if line is not None else p)
    return out
