"""The priced forecast's records: prices used, GPU, variable and fixed-charge lines, pool sizing, and the Budget."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from ..allocate import CATEGORIES
from ..money import ZERO
from ..pricebook import Price
from .plan import Plan, Scenario


@dataclass(frozen=True)
class PriceUse:
    """A price used for a segment: `price` per `per` in `currency` (upfront amortized), `fx` to the
    plan currency at the segment start, and where it came from (`ref` = book@version price[entry],
    `source_url`, `effective_from`)."""

    price: Decimal
    per: str
    currency: str
    fx: Decimal
    ref: str
    source_url: str
    effective_from: datetime


@dataclass(frozen=True)
class GpuRow:
    """One pool in one month (or the part of a month in which one price is in force) of one
    scenario: `start`/`end` of the segment (end exclusive), the `tpm` sized for [output token/min],
    `status` (VERDICT | DRAFT), replicas (`serving` + `reserve` = `replicas`), `gpus`, `hours` of
    the segment, `price_per_gpu_hour` in the price's `currency`, `fx` to the plan currency,
    `price_multiplier` of the scenario, and `cost` = GPUs x hours x price x fx x multiplier (at 1e-6).

    A pool sized in parts has one row per part and segment: `part` names it (a tier, ``prefill`` /
    ``decode``, ``interactive prefill``, or ``reserve`` / ``prefill reserve`` / ``decode reserve``
    for a role's reserve replicas); "" for a plain pool. Per replica, for operations (None on a
    reserve row): `admission_limit` (requests in flight, floor(c*); None for prefill),
    `queue_scale_out` (waiting requests per replica), `kv_scale_out` (KV-cache usage share; None
    without a memory fit), `replica_tok_s` (output tok/s, input for prefill) and `headroom_tok_s`
    = (1 - util) x replica_tok_s. `xpyd` is a disaggregated pool's serving ratio (``2P4D (1P2D)``)."""

    scenario: str
    pool: str
    month: str
    start: datetime
    end: datetime
    tpm: float
    status: str
    serving: int
    reserve: int
    replicas: int
    gpus_per_replica: int
    gpus: int
    hours: Decimal
    price_per_gpu_hour: Decimal
    currency: str
    fx: Decimal
    price_multiplier: Decimal
    cost: Decimal
    price_ref: str
    part: str = ""
    admission_limit: int | None = None
    queue_scale_out: int | None = None
    kv_scale_out: float | None = None
    replica_tok_s: float | None = None
    headroom_tok_s: float | None = None
    xpyd: str = ""


@dataclass(frozen=True)
class VariableRow:
    """Variable usage of one month segment of one scenario: `category`, `item` (provider/model or
    meter/sku), `bucket` (uncached_input, cached_input, output, or the meter), `quantity` in `unit`,
    `price` per `per` in `currency`, `per_factor` (pers per unit: 1e-6 for tokens priced per 1e6),
    `fx`, `price_multiplier`, and `cost` = quantity x per_factor x price x fx x multiplier (at 1e-6)."""

    scenario: str
    month: str
    start: datetime
    end: datetime
    category: str
    item: str
    bucket: str
    quantity: Decimal
    unit: str
    price: Decimal
    per: str
    currency: str
    per_factor: Decimal
    fx: Decimal
    price_multiplier: Decimal
    cost: Decimal
    price_ref: str


@dataclass(frozen=True)
class ChargeRow:
    """A fixed charge in one month (the same in every scenario): `amount` in `currency`, `fx` at the
    month start, `cost` = amount x fx in the plan currency (at 1e-6)."""

    month: str
    category: str
    name: str
    amount: Decimal
    currency: str
    fx: Decimal
    cost: Decimal


@dataclass(frozen=True)
class PoolSizing:
    """How a pool was sized: its curve's label, source and status, repairs made to the curve, and
    `mode` (``plain``, ``tiers``, ``disaggregated`` or ``tiers, disaggregated``) with the prefill
    curve's label (`prefill_label`, "" when not disaggregated)."""

    pool: str
    curve_ref: str
    curve_label: str
    status: str
    repairs: tuple[str, ...]
    hardware: str | None
    model: str | None
    mode: str = "plain"
    prefill_label: str = ""


@dataclass(frozen=True)
class Budget:
    """A plan priced: the `scenarios` budgeted, `gpu`, `variable` and `charges` rows, the sizing
    `status` (DRAFT when any pool was interpolated), per-pool `sizing`, the `prices` used (by ref),
    the price books in force (`price_books`, ``name@version``; `book_details`: ref, retrieval date,
    SHA-256 of the book's text) and when it was `generated_at`."""

    plan: Plan
    scenarios: tuple[Scenario, ...]
    gpu: tuple[GpuRow, ...]
    variable: tuple[VariableRow, ...]
    charges: tuple[ChargeRow, ...]
    status: str
    sizing: tuple[PoolSizing, ...]
    prices: tuple[tuple[str, Price], ...]
    price_books: tuple[str, ...]
    generated_at: datetime | None = None
    book_details: tuple[tuple[str, str, str], ...] = ()
    window: tuple[str, str] | None = None

    @property
    def currency(self) -> str:
        return self.plan.currency

    @property
    def months(self) -> tuple[str, ...]:
        """The months shown: the plan's, or those of its `window` (first, last; both included). The
        volumes still grow from the plan's first month (:attr:`Plan.months` [0])."""
        if self.window is None:
            return self.plan.months
        first, last = self.window
        return tuple(m for m in self.plan.months if first <= m <= last)

    def windowed(self, first: str | None, last: str | None) -> "Budget":
        """The budget shown from month `first` to `last` (either None: the plan's first or last): the
        same forecast, priced from the plan's start, its rows cut to the window. BudgetError when a
        month is not one of the plan's or the window is empty."""
        from dataclasses import replace

        from ..hints import Hint, Hinted
        from .plan import BudgetError

        months = self.plan.months
        start, end = Hint("from", "the first month"), Hint("to", "the last month")
        problems = [Hinted(hint, f" {m}: not a month of the plan ({months[0]} to {months[-1]})")
                    for hint, m in ((start, first), (end, last)) if m is not None and m not in months]
        first, last = first or months[0], last or months[-1]
        if not problems and first > last:
            problems.append(Hinted(start, f" {first} is after ", end, f" {last}: the window has no month"))
        if problems:
            raise BudgetError(problems)
        inside = (lambda m: first <= m <= last)  # noqa: E731
        return replace(self, window=(first, last), gpu=tuple(g for g in self.gpu if inside(g.month)),
                       variable=tuple(v for v in self.variable if inside(v.month)),
                       charges=tuple(c for c in self.charges if inside(c.month)))

    def quarters(self) -> list[tuple[str, tuple[str, ...]]]:
        """The calendar quarters the shown months fall in, in order, each with its shown months:
        ``[("2027-Q1", ("2027-01", "2027-02", "2027-03")), ...]`` (a quarter the window or the plan
        cuts holds fewer than three)."""
        out: dict[str, list[str]] = {}
        for m in self.months:
            out.setdefault(quarter_of(m), []).append(m)
        return [(q, tuple(ms)) for q, ms in out.items()]

    def months_after_start(self, month: str) -> int:
        """How many months of growth `month` has had: 0 for the plan's first month."""
        return self.plan.months.index(month)

    def by_category(self, scenario: str, month: str) -> dict[str, Decimal]:
        """Cost per category (every category, zeros included) of one scenario and month."""
        out = {c: ZERO for c in CATEGORIES}
        for g in self.gpu:
            if g.scenario == scenario and g.month == month:
                out["gpu"] += g.cost
        for v in self.variable:
            if v.scenario == scenario and v.month == month:
                out[v.category] += v.cost
        for c in self.charges:
            if c.month == month:
                out[c.category] += c.cost
        return out

    def total(self, scenario: str, month: str | None = None) -> Decimal:
        months = [month] if month else self.months
        return sum((sum(self.by_category(scenario, m).values(), ZERO) for m in months), ZERO)


def quarter_of(month: str) -> str:
    """The calendar quarter of a month ``YYYY-MM``: ``2027-02`` is ``2027-Q1``."""
    return f"{month[:4]}-Q{(int(month[5:7]) - 1) // 3 + 1}"
