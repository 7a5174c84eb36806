"""Budgets books in the ledger store: load one (checked against the ledger's tenants and products and
the other books), read them back, and the budgets in force at an instant."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

from sqlmodel import Session, select

from .. import tomlfile
from ..errors import Problem
from ..models import BudgetBookRow, BudgetEntryRow
from ..store import dim_names
from .parse import parse_budget_book
from .records import Budget, BudgetBook, GuardrailError


def read_budget_book(path: str | Path, name: str | None = None) -> BudgetBook:
    """The budgets book in the file at `path` (named `name` in messages), checked; GuardrailError
    with one problem per fault (file, line, entry, message)."""
    shown = str(path) if name is None else name
    try:
        text = tomlfile.read_text(path, shown)
    except OSError as e:
        raise GuardrailError(Problem(file=shown, message=f"cannot read: {e.strerror or e}")) from None
    book, problems = parse_budget_book(text, shown)
    if problems:
        raise GuardrailError(problems)
    return book


def budget_books(s: Session) -> list[BudgetBook]:
    """Every loaded version of every budgets book, rebuilt from the TOML stored at load time."""
    out = []
    for row in s.exec(select(BudgetBookRow).order_by(BudgetBookRow.name, BudgetBookRow.version)):
        book, problems = parse_budget_book(row.content, row.path or f"{row.name}@{row.version}")
        if book is None:  # cannot happen for content that was checked at load; say so if it does
            raise GuardrailError([f"stored budgets book {row.name}@{row.version} no longer checks: {p}"
                                  for p in problems])
        out.append(book)
    return out


def current_versions(books: Iterable[BudgetBook]) -> list[BudgetBook]:
    """The version in force of each book name: the greatest version (compared as text)."""
    latest: dict[str, BudgetBook] = {}
    for b in books:
        if b.name not in latest or b.version > latest[b.name].version:
            latest[b.name] = b
    return [latest[n] for n in sorted(latest)]


def budgets_in_force(books: Sequence[BudgetBook], at: datetime) -> list[Budget]:
    """The budgets in force at `at` (UTC) over the current version of each book, one per scope:
    the latest to start at or before `at`, unless its explicit end is at or before `at` (an open end
    lasts until the next budget of the same scope starts). Sorted by scope."""
    by_scope: dict[tuple, list[Budget]] = {}
    for book in current_versions(books):
        for b in book.budgets:
            by_scope.setdefault(b.scope, []).append(b)
    out = []
    for scope, group in by_scope.items():
        started = [b for b in group if b.effective_from <= at]
        if not started:
            continue
        b = max(started, key=lambda x: x.effective_from)
        if b.effective_to is None or at < b.effective_to:
            out.append(b)
    return sorted(out, key=lambda b: tuple(x or "" for x in b.scope))


def store_budget_book(s: Session, *, book: BudgetBook, models: Iterable[str] | None = None) -> str:
    """Store a checked budgets book: ``loaded``, or ``unchanged`` when the same version with the same
    content is there. Refuses (GuardrailError, one problem each, nothing written) different content
    under a loaded (name, version), a tenant or product the ledger does not know, a model none of the
    ledger's usage names (when `models` is given), and a budget whose scope another book's budget
    covers at the same time (no spend is counted twice)."""
    existing = s.exec(select(BudgetBookRow).where(BudgetBookRow.name == book.name,
                                                  BudgetBookRow.version == book.version)).first()
    if existing is not None:
        if existing.digest == book.digest:
            return "unchanged"
        raise GuardrailError(Problem(file=book.path, entry="[book]", message=(
            f"budgets book {book.ref} is already loaded with different content (sha256 {existing.digest[:12]} vs "
            f"{book.digest[:12]}); a loaded version is immutable: give the changed book a new version")))
    problems = _unknown_names(s, book, models) + _cross_book(budget_books(s), book)
    if problems:
        raise GuardrailError(problems)
    row = BudgetBookRow(name=book.name, version=book.version, currency=book.currency, digest=book.digest,
                        path=book.path, content=book.text)
    s.add(row)
    s.flush()
    for b in book.budgets:
        s.add(BudgetEntryRow(book_id=row.id, entry=b.entry, tenant=b.tenant, product=b.product, model=b.model,
                             monthly=b.monthly, currency=b.currency, owner=b.owner, effective_from=b.effective_from,
                             effective_to=b.effective_to))
    s.flush()
    return "loaded"


def _unknown_names(s: Session, book: BudgetBook, models: Iterable[str] | None) -> list[Problem]:
    """A budget naming a tenant, product or model the ledger has never seen would count nothing: a
    silent zero. One problem per such name, listing the known ones."""
    known = {"tenant": dim_names(s, kind="tenant"), "product": dim_names(s, kind="product")}
    if models is not None:
        known["model"] = set(models)
    out = []
    for b in book.budgets:
        for field, names in known.items():
            value = getattr(b, field)
            if value is not None and value not in names:
                listed = ", ".join(sorted(names)[:12]) + (", ..." if len(names) > 12 else "") or "none yet"
                what = "in the ledger's usage" if field == "model" else f"registered ({listed})"
                out.append(Problem(file=book.path, entry=f"budget[{b.entry}] {b.label()}",
                                   message=f"{field} {value!r} is not {what}"
                                   + (f": known models are {listed}" if field == "model" else "")))
    return out


def _cross_book(stored: Sequence[BudgetBook], book: BudgetBook) -> list[Problem]:
    """Budgets of `book` whose scope another book's current version covers at any common time (an
    open end counts as for ever: across books nothing is superseded silently)."""
    others = [b for other in current_versions(x for x in stored if x.name != book.name) for b in other.budgets]
    out = []
    for mine in book.budgets:
        for theirs in others:
            if theirs.scope == mine.scope and _meet(mine, theirs):
                out.append(Problem(file=book.path, entry=f"budget[{mine.entry}] {mine.label()}",
                                   message=f"the same scope is budgeted at the same time by {theirs.book}@"
                                           f"{theirs.version} budget[{theirs.entry}]: one scope has one budget at a time"))
    return out


def _meet(a: Budget, b: Budget) -> bool:
    """Whether the spans in force of `a` and `b` share an instant (ends exclusive, None open)."""
    return ((a.effective_to is None or b.effective_from < a.effective_to)
            and (b.effective_to is None or a.effective_from < b.effective_to))
