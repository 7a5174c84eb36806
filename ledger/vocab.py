"""The ledger's closed sets, each declared once as a :class:`~enum.StrEnum`.

A member *is* its text (``LineKind.TENANT == "tenant"``, ``str(Category.TOOL) == "tool"``, and it
hashes as the text), so files, JSON documents, CSV, the CLI and stored rows keep their spelling,
and a value read back from any of them compares equal to the member. Every module that lists one
of these sets (a tuple of names, a SQL ``IN`` list, a help or error text, a CHECK constraint)
takes it from here:

- :class:`LineKind` and :class:`Category`: what an allocation line is and what it is for (the
  ``kind`` and ``category`` columns of ``allocation_line``, CHECKed by the store);
- :class:`ChargeCategory`: a shared charge's category as the charges file spells it; it becomes a
  line category by :attr:`ChargeCategory.line_category` (``tools`` is booked as ``tool``);
- :class:`ChargeRule` and :data:`TENANT_RULE`: how a charge is spread over tenants;
- :class:`EngineName` and :class:`Dialect`: where the allocation's per-request SQL runs, and the
  SQL dialect it is rendered in;
- :data:`ADJUSTABLE`: the ingest kinds whose rows of a closed month may be booked into an open one
  (``ingest --as-adjustment``).
"""
from __future__ import annotations

from enum import StrEnum


class LineKind(StrEnum):
    """The kind of an allocation line (docs/allocation.md §7). Every run has the first four; only a
    true-up run (``allocate --true-up``, ``ledger.reconcile``) has ``variance`` lines."""

    TENANT = "tenant"
    IDLE_SLACK = "idle_slack"
    IDLE_RESERVE = "idle_reserve"
    UNALLOCATED = "unallocated"
    VARIANCE = "variance"


class Category(StrEnum):
    """The category of an allocation line: ``gpu`` (the fleet), ``provider_tokens``, then the
    categories of meters (``pricing.meter_category``) and of shared charges
    (:attr:`ChargeCategory.line_category`)."""

    GPU = "gpu"
    PROVIDER_TOKENS = "provider_tokens"
    TOOL = "tool"
    EGRESS = "egress"
    OBSERVABILITY = "observability"
    STORAGE = "storage"
    EVALUATION = "evaluation"
    ENGINEERING_OPS = "engineering_ops"
    NETWORK = "network"
    OTHER = "other"


class ChargeCategory(StrEnum):
    """The category of a shared charge, as the ``category`` column of a charges file spells it
    (the ingest refuses any other). Lines spell them as :class:`Category`: ``tools`` becomes
    ``tool``, the others keep their name."""

    OBSERVABILITY = "observability"
    EVALUATION = "evaluation"
    ENGINEERING_OPS = "engineering_ops"
    STORAGE = "storage"
    NETWORK = "network"
    TOOLS = "tools"
    OTHER = "other"

    @property
    def line_category(self) -> Category:
        """The category of the lines this charge books: ``tools`` -> ``tool``, the others by name."""
        return Category.TOOL if self is ChargeCategory.TOOLS else Category(self.value)


class ChargeRule(StrEnum):
    """How a shared charge is spread over tenants (its ``allocate`` column, docs/allocation.md §6),
    besides ``tenant:<name>`` (:data:`TENANT_RULE`)."""

    EVEN = "even"
    BY_COST = "by_cost"
    BY_TOKENS = "by_tokens"
    NONE = "none"


#: The prefix of the rule that books a charge on one tenant: ``tenant:<name>``.
TENANT_RULE = "tenant:"


def rule_choices() -> str:
    """The rules a charge may name, as its problems list them: ``even, by_cost, by_tokens,
    tenant:<name> or none``."""
    named = [r for r in ChargeRule if r is not ChargeRule.NONE]
    return f"{', '.join([*named, TENANT_RULE + '<name>'])} or {ChargeRule.NONE}"


class EngineName(StrEnum):
    """Where the allocation's per-request SQL runs (``ledger allocate --engine``): DuckDB on this
    machine, or Apache Spark. Each engine renders the SQL in the :class:`Dialect` of its name."""

    DUCKDB = "duckdb"
    SPARK = "spark"


class Dialect(StrEnum):
    """The SQL dialects the allocation's SQL is rendered in (SQLGlot's names): DuckDB's, in which it
    is written, and Spark SQL (``ledger.allocate.sql.render``)."""

    DUCKDB = "duckdb"
    SPARK = "spark"


#: The ingest kinds whose rows of a closed month may be booked into the current open month as an
#: adjustment (``ledger ingest KIND --as-adjustment``; ``ledger.ingest.records`` says it too).
ADJUSTABLE = ("requests", "meters", "outcomes", "bill")
