"""Budgets beside actual cost (issue 31, "shown beside actuals on every surface"): the guardrails'
monthly budget in force for a report's month, put beside each row of the same scope.

Which budget: of the loaded budgets books (:mod:`ledger.guardrails.book`), the one
:func:`~ledger.guardrails.book.budgets_in_force` picks at the period's last instant (``end`` less
one microsecond): what ``ledger alerts`` watched as the month ended. Only a period that is one UTC
calendar month has a budget (a budget is an amount per calendar month), only a budget in the
report's currency is shown, and only a budget whose scope is exactly the row's: a budget of
``tenant = "globex"`` beside the tenant row ``globex`` of ``--by tenant``, one of ``model = "gpt-5"``
beside the model row of ``--by model``; a budget of a tenant and a product together is beside no
row. By product or model, a report filtered to some tenants (or with the shared charges spread over
products) shows no budget: its rows are not the spend the budget counts. A month with no budget in
force leaves the report as it was (`Report.budgets` None: no column, no key)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta, timezone
from decimal import Decimal

from sqlmodel import Session

from ..economics import Report, Row, ratio
from ..formats import money, percent
from ..guardrails.book import budget_books, budgets_in_force
from ..guardrails.records import SCOPE_FIELDS, BudgetBook
from ..money import fmt
from ..store import StoreError, month_bounds, month_of

#: The header of the cost ÷ budget column (JSON and CSV: ``of_budget``).
OF_BUDGET = "of budget"


def budgets_for(report: Report, books: Sequence[BudgetBook]) -> dict[str, tuple[Decimal, str]]:
    """Each row key of `report`'s scope with a budget for its month: key -> (monthly, book ref)."""
    start, end = (x.astimezone(timezone.utc) for x in (report.run.start, report.run.end))
    try:
        if month_bounds(month_of(start)) != (start, end) or report.view is not None:
            return {}
    except StoreError:  # a month outside the store's range has no budget either
        return {}
    if report.by != "tenant" and report.tenants is not None:
        return {}
    at = end - timedelta(microseconds=1)
    field = SCOPE_FIELDS.index(report.by)
    out = {}
    for b in budgets_in_force(books, at):
        others = [v for i, v in enumerate(b.scope) if i != field]
        if b.scope[field] is not None and all(v is None for v in others) and b.currency == report.run.currency:
            out[b.scope[field]] = (b.monthly, f"{b.book}@{b.version}")
    return out


def with_budgets(report: Report, books: Sequence[BudgetBook]) -> Report:
    """`report` with the budget in force for its month beside each row of its scope; the report
    itself when none is (then nothing it prints changes)."""
    found = budgets_for(report, books)
    if not found:
        return report
    return replace(report, budgets={k: v for k, (v, _) in found.items()},
                   budget_books=tuple(sorted({ref for _, ref in found.values()})))


def with_stored_budgets(s: Session, report: Report) -> Report:
    """:func:`with_budgets` over the budgets books loaded in the ledger whose session is `s`."""
    books = budget_books(s)
    return with_budgets(report, books) if books else report


def budget_entry(report: Report, row: Row) -> dict:
    """A row's ``budget`` (decimal string, null when its scope has none) and ``of_budget`` (its cost
    ÷ the budget, a ratio to 1e-4): both absent when the report carries no budget."""
    if report.budgets is None:
        return {}
    b = report.budget_of(row)
    return {"budget": None if b is None else fmt(b), "of_budget": ratio(report.of_budget(row))}


def shows_budgets(report: Report) -> bool:
    """Whether a table shows the budget columns: some row has a budget."""
    return any(report.budget_of(r) is not None for r in report.rows)


def budget_columns(report: Report) -> tuple[tuple[str, ...], list[tuple[str, ...]], tuple[str, ...]]:
    """A table's budget columns: the headers, each row's cells (the budget as money, the cost's share
    of it as a percentage; empty where the row has none) and the totals row's (empty: budgets of
    some rows do not add up to a budget of all); no column when no row has a budget."""
    if not shows_budgets(report):
        return (), [() for _ in report.rows], ()
    cells = []
    for r in report.rows:
        b = report.budget_of(r)
        cells.append(("", "") if b is None else (money(b), percent(report.of_budget(r))))
    return ("budget", OF_BUDGET), cells, ("", "")
