"""Records of the guardrails: budgets books and their budgets, the anomaly rule, and what an alerts
run found (spend to date, projection, run-out day, anomalies). Provisional numbers, never a run."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from ..errors import LedgerError

#: The label every output of the guardrails carries: spend to date of an open month is provisional
#: (DESIGN §9), replaced by the allocation run when the month is allocated.
PROVISIONAL = "PROVISIONAL"
#: The scope fields of a budget, in the order they are shown.
SCOPE_FIELDS = ("tenant", "product", "model")


class GuardrailError(LedgerError, ValueError):
    """A budgets book, a budget or an alerts run the ledger refuses: one problem per thing wrong."""


class WebhookError(LedgerError):
    """The webhook could not be delivered (down, refused, timed out, answered an error): one line.
    Its exit status is its own, 4, so that cron tells "alerts fired" (3) from "not delivered"."""

    code = 4


@dataclass(frozen=True, kw_only=True)
class Budget:
    """One budget of a book: the spend of a scope per calendar month.

    - `tenant`, `product`, `model`: the scope (None: any); at least one is set. A line of the
      allocation counts when it is a tenant's line and matches every field set.
    - `monthly`: the amount per calendar month, in `currency` (ISO 4217), exact.
    - `owner`: who answers for it (an e-mail or a team), free text.
    - `effective_from`, `effective_to`: when it is in force, UTC, end exclusive (`effective_to`
      None: until a later budget of the same scope starts, or for ever).
    - `book`, `version`, `entry`: the book it comes from and its 1-based index there."""

    tenant: str | None
    product: str | None
    model: str | None
    monthly: Decimal
    currency: str
    owner: str
    effective_from: datetime
    effective_to: datetime | None
    book: str
    version: str
    entry: int
    description: str = ""

    @property
    def scope(self) -> tuple[str | None, str | None, str | None]:
        return (self.tenant, self.product, self.model)

    def label(self) -> str:
        """``tenant=globex``, ``tenant=acme product=chat``: the scope as one short text."""
        return " ".join(f"{k}={v}" for k, v in zip(SCOPE_FIELDS, self.scope) if v is not None)

    def in_force(self, at: datetime) -> bool:
        return self.effective_from <= at and (self.effective_to is None or at < self.effective_to)


@dataclass(frozen=True, kw_only=True)
class BudgetBook:
    """A budgets book as loaded: `name`, `version` (versions of one name compare as text, the
    greatest in force: write dates), default `currency`, `path`, `digest` (SHA-256 of `text`), the
    TOML `text` itself and its `budgets`."""

    name: str
    version: str
    currency: str
    path: str
    digest: str
    text: str
    budgets: tuple[Budget, ...]
    description: str = ""

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True, kw_only=True)
class Rule:
    """How spend anomalies are found and the burn rate is profiled (each configurable on the
    command line; docs/alerts.md):

    - `weeks`: how many weeks back the baseline looks (same weekday, one day per week);
    - `min_weeks`: fewest baseline days a (tenant, model) needs before it can be flagged;
    - `mad_k`: a day is anomalous when its spend exceeds the median by more than `mad_k` times the
      scaled MAD (1.4826 × median absolute deviation, the normal-consistent sigma)...
    - `min_ratio`: ... and is at least `min_ratio` times the median ...
    - `min_increase`: ... and exceeds it by at least this amount (in the alerts' currency)."""

    weeks: int = 8
    min_weeks: int = 4
    mad_k: Decimal = Decimal(5)
    min_ratio: Decimal = Decimal("1.5")
    min_increase: Decimal = Decimal("5")

    def problems(self) -> list[str]:
        out = []
        if not 1 <= self.weeks <= 52:
            out.append(f"weeks {self.weeks}: the baseline looks back 1 to 52 weeks")
        if not 1 <= self.min_weeks <= self.weeks:
            out.append(f"min weeks {self.min_weeks}: between 1 and the weeks looked back ({self.weeks})")
        for what, v in (("MAD multiple", self.mad_k), ("minimum ratio", self.min_ratio),
                        ("minimum increase", self.min_increase)):
            if not v.is_finite() or v < 0:
                out.append(f"{what} {v}: must be a finite number >= 0")
        return out

    def as_dict(self) -> dict:
        return {"weeks": self.weeks, "min_weeks": self.min_weeks, "mad_k": str(self.mad_k),
                "min_ratio": str(self.min_ratio), "min_increase": str(self.min_increase),
                "mad_scale": str(MAD_SCALE)}


#: The MAD's scale to a standard deviation for normal data (1 / Φ⁻¹(3/4)).
MAD_SCALE = Decimal("1.4826")


@dataclass(frozen=True, kw_only=True)
class BudgetStatus:
    """A budget at the alerts' instant, all in its currency:

    - `budget`: the budget in force; `spent_to_date`: the month's provisional spend of its scope
      up to the instant; `daily`: that spend per day of the month so far (the last day partial);
    - `profile`: the expected spend per weekday (0 = Monday) and `profile_basis` (``weekday`` when
      it comes from past weeks, ``month_to_date`` from this month's mean day, ``none``);
    - `projected_month_end`: spend to date plus the expected rest of the month;
    - `runs_out_on`: the first day the spend (actual, then projected) reaches `monthly`, None when
      it does not this month; `alerts`: what fired (``exhausted``, ``runs_out``)."""

    budget: Budget
    spent_to_date: Decimal
    daily: tuple[tuple[date, Decimal], ...]
    profile: tuple[Decimal, ...]
    profile_basis: str
    projected_month_end: Decimal
    runs_out_on: date | None
    alerts: tuple[str, ...]

    @property
    def remaining(self) -> Decimal:
        return self.budget.monthly - self.spent_to_date


@dataclass(frozen=True, kw_only=True)
class Anomaly:
    """A day on which one tenant's spend on one model is far above its seasonal baseline: `day`
    (UTC), `spend` that day (so far, when `partial`), `baseline` (median of the same weekday over
    the baseline weeks), `mad` (median absolute deviation), `threshold` (the spend above which it
    fires), `weeks` (baseline days used), `ratio` (spend ÷ baseline, None when the baseline is 0)."""

    tenant: str
    model: str
    day: date
    spend: Decimal
    baseline: Decimal
    mad: Decimal
    threshold: Decimal
    weeks: int
    ratio: Decimal | None
    partial: bool
    currency: str


@dataclass(frozen=True, kw_only=True)
class Alerts:
    """One alerts run: `as_of` (UTC), the open `month` ``[month_start, month_end)``, `currency`,
    the `rule`, the budgets books and price books used, each budget's status, the anomalies, the
    first day with usage facts (`data_from`; baselines never reach before it) and `notes`."""

    as_of: datetime
    month_start: datetime
    month_end: datetime
    currency: str
    rule: Rule
    budget_books: tuple[str, ...]
    price_books: tuple[str, ...]
    budgets: tuple[BudgetStatus, ...]
    anomalies: tuple[Anomaly, ...]
    data_from: date | None
    notes: tuple[str, ...] = field(default=())

    @property
    def fired(self) -> int:
        """How many alerts fired: budget alerts plus anomalies."""
        return sum(len(b.alerts) for b in self.budgets) + len(self.anomalies)
