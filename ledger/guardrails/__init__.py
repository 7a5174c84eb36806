"""Guardrails between month-ends (issue 31): budgets per tenant, product or model (a dated, versioned
TOML book loaded into the store), the open month's provisional spend to date, its burn-rate projection
and run-out day, spend anomalies per tenant and model per day, and their delivery to a webhook.

Modules: ``records`` (budgets, books, the rule, statuses, anomalies), ``parse`` (one book's TOML,
checked), ``book`` (store, read back, budgets in force), ``alerts`` (one run: spend by the
allocation's rules), ``projection`` and ``anomalies`` (the two methods, pure), ``render`` (JSON,
CSV, tables, the Slack text), ``webhook`` (the POST). Commands: ``cli`` (``budgets``, ``alerts``).
The forecast budgets of a replica plan are another thing: :mod:`ledger.budget` (docs/alerts.md).

The names below are imported from their module when first used, so that ``ledger budgets --help``
and ``ledger alerts --help`` (its ``cli``) start without the package's stack (docs/scale.md, "Startup").
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    ".alerts": ("compute_alerts", "scope_daily"),
    ".book": ("budget_books", "budgets_in_force", "current_versions", "read_budget_book", "store_budget_book"),
    ".parse": ("parse_budget_book",),
    ".records": ("PROVISIONAL", "Alerts", "Anomaly", "Budget", "BudgetBook", "BudgetStatus", "GuardrailError",
                 "Rule", "WebhookError"),
})


if TYPE_CHECKING:
    from .alerts import compute_alerts, scope_daily
    from .book import budget_books, budgets_in_force, current_versions, read_budget_book, store_budget_book
    from .parse import parse_budget_book
    from .records import (PROVISIONAL, Alerts, Anomaly, Budget, BudgetBook, BudgetStatus, GuardrailError, Rule,
                          WebhookError)
