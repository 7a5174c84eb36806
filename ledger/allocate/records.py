"""Records and constants of an allocation: the policy, lines, flags, usage, tasks, and UTC instants."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

from babel.numbers import list_currencies

from ..errors import LedgerError
from ..money import ZERO
from ..vocab import Category, ChargeCategory, LineKind

IDLE_POLICIES = ("separate", "share")
BASES = ("active_tokens", "kv_token_seconds")
#: The line kinds of every run (:class:`~ledger.vocab.LineKind` but ``variance``).
KINDS = tuple(k for k in LineKind if k is not LineKind.VARIANCE)
#: The kind of a true-up's lines (``allocate --true-up``, ledger.reconcile): a resource's variance,
#: billed − priced, spread over the lines it produced. Only a true-up run has them, so the documents
#: of every other run keep the four kinds above.
VARIANCE = LineKind.VARIANCE
LINE_KINDS = tuple(LineKind)
CATEGORIES = tuple(Category)
WORK = ("succeeded", "failed")
FLAG_KINDS = ("over_capacity", "no_fleet", "capacity_unknown")
#: A charge's category (as its file spells it) -> the category of its lines: ``tools`` -> ``tool``.
CHARGE_CATEGORY = {c.value: c.line_category for c in ChargeCategory}

#: Non-overlapping token buckets of a provider request and the price meter of each: uncached input
#: (input − cached reads − cache writes), cached reads, 5-minute and 1-hour cache writes, output.
TOKEN_BUCKETS = (("uncached", "input_tokens"), ("cached", "cached_input_tokens"),
                 ("cache_write", "cache_write_tokens"), ("cache_write_1h", "cache_write_1h_tokens"),
                 ("output", "output_tokens"))
#: The part of the output billed at its own price when the model's book prices it (else as output).
REASONING_METER = "reasoning_tokens"
#: Buckets priced at another meter's price when their own has none in force (the run's notes say so).
FALLBACK_METERS = {"cache_write_tokens": "input_tokens", "cache_write_1h_tokens": "input_tokens"}
TOKEN_METERS = frozenset(m for _, m in TOKEN_BUCKETS) | {REASONING_METER}

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
HOUR_US = 3_600_000_000
DAY_US = 24 * HOUR_US
_CURRENCIES = frozenset(list_currencies())


class AllocationError(LedgerError, ValueError):
    """The run cannot be made: `problems` holds one line per problem (missing price, bad unit, ...)."""


@dataclass(frozen=True)
class Weights:
    """Per-pool token weights of the ``active_tokens`` basis: w = uncached input × `uncached` +
    cached input × `cached` + output × `output` (dimensionless decimals ≥ 0)."""

    uncached: Decimal = Decimal(1)
    cached: Decimal = Decimal(1)
    output: Decimal = Decimal(1)

    def as_text(self) -> str:
        return f"{self.uncached},{self.cached},{self.output}"


@dataclass(frozen=True)
class Policy:
    """How to allocate: `idle` (separate | share), `basis` (active_tokens | kv_token_seconds),
    reporting `currency` (ISO 4217), per-pool `weights` as sorted ``(pool, Weights)`` pairs, and
    `allow_pool_without_fleet`: sorted pool names whose requests may have no serving fleet interval
    in the period (otherwise such requests fail the run: their GPU cost would be a silent $0)."""

    idle: str = "separate"
    basis: str = "active_tokens"
    currency: str = "USD"
    weights: tuple[tuple[str, Weights], ...] = ()
    allow_pool_without_fleet: tuple[str, ...] = ()

    def problems(self) -> list[str]:
        out = []
        if self.idle not in IDLE_POLICIES:
            out.append(f"idle policy {self.idle!r}: expected one of {', '.join(IDLE_POLICIES)}")
        if self.basis not in BASES:
            out.append(f"basis {self.basis!r}: expected one of {', '.join(BASES)}")
        if self.currency not in _CURRENCIES:
            out.append(f"currency {self.currency!r} is not an ISO 4217 code")
        if self.weights and self.basis != "active_tokens":
            out.append("pool weights apply to the active_tokens basis only")
        for pool, w in self.weights:
            if min(w.uncached, w.cached, w.output) < 0:
                out.append(f"weights for pool {pool}: negative weight in {w.as_text()}")
        if any(not p.strip() for p in self.allow_pool_without_fleet):
            out.append("allow_pool_without_fleet: a pool name is empty")
        return out

    def as_dict(self) -> dict:
        """The policy as recorded in a run (and hashed into its inputs digest); the pools allowed
        without fleet appear only when there are some, so older digests stay comparable."""
        out = {"idle_policy": self.idle, "basis": self.basis, "currency": self.currency,
               "weights": {p: w.as_text() for p, w in self.weights}}
        if self.allow_pool_without_fleet:
            out["allow_pool_without_fleet"] = sorted(self.allow_pool_without_fleet)
        return out


def parse_weights(specs: Sequence[str]) -> tuple[tuple[str, Weights], ...]:
    """``["pool-a=1,0.1,1", ...]`` -> sorted ``(pool, Weights)`` pairs; ValueError on a bad spec."""
    out: dict[str, Weights] = {}
    for spec in specs:
        pool, sep, rest = spec.partition("=")
        parts = rest.split(",")
        if not sep or not pool.strip() or len(parts) != 3:
            raise ValueError(f"weights {spec!r}: expected POOL=UNCACHED,CACHED,OUTPUT such as h100-pool=1,0.1,1")
        try:
            ws = [Decimal(p.strip()) for p in parts]
        except ArithmeticError:
            raise ValueError(f"weights {spec!r}: {rest!r} is not three decimal numbers") from None
        if any(not w.is_finite() or w < 0 for w in ws):
            raise ValueError(f"weights {spec!r}: weights must be finite and >= 0")
        out[pool.strip()] = Weights(*ws)
    return tuple(sorted(out.items()))


def _scale(w: Weights) -> int:
    """The power of ten that makes the three weights integers."""
    return 10 ** max(0, *(-x.as_tuple().exponent for x in (w.uncached, w.cached, w.output)))


@dataclass(frozen=True)
class Line:
    """One allocation line. `day` (UTC date), `kind` (a :class:`~ledger.vocab.LineKind`: tenant |
    idle_slack | idle_reserve | unallocated | variance), `tenant` (None unless kind is tenant, or
    variance spread over a tenant's line), `product`, `model`, `pool`, `provider`,
    `category` (a :class:`~ledger.vocab.Category`), `work` (succeeded | failed), `shared_from` (idle_slack or
    idle_reserve on a tenant's share of idle under policy share), `quantity` in `unit` (active
    tokens for request lines, GPU-seconds for idle, the meter's unit, seconds for charges), and
    `amount` in the run's currency, exact at 1e-6."""

    day: date
    kind: str
    tenant: str | None
    product: str | None
    model: str | None
    pool: str | None
    provider: str | None
    category: str
    work: str
    shared_from: str | None
    quantity: Decimal
    unit: str
    amount: Decimal

    def sort_key(self) -> tuple:
        return (self.day, LINE_KINDS.index(self.kind), self.tenant or "", self.product or "", self.model or "",
                self.pool or "", self.provider or "", self.category, self.work, self.shared_from or "", self.unit)


@dataclass(frozen=True)
class Flag:
    """A pool-hour to look at: `kind` (over_capacity | no_fleet | capacity_unknown), `pool`, `hour` (UTC start)."""

    kind: str
    pool: str
    hour: datetime


@dataclass(frozen=True)
class Usage:
    """Requests of the period for one (tenant, product, model): `requests`, `active_tokens`
    (input + output), `failed_requests` (tagged failed work)."""

    tenant: str
    product: str
    model: str
    requests: int
    active_tokens: int
    failed_requests: int


@dataclass(frozen=True)
class Tasks:
    """Tasks of one (tenant, product): `success` and `failure` (latest outcome decided in the period),
    `unknown` (seen in the period's requests, no outcome decided up to period end), `criteria`."""

    tenant: str
    product: str
    success: int
    failure: int
    unknown: int
    criteria: tuple[str, ...]


@dataclass(frozen=True)
class Allocation:
    """The result of :func:`allocate`: period ``[start, end)``, the policy, `price_books`
    (``name@version``), `total` (Σ priced resources; after a true-up, plus Σ variance), `lines`
    (Σ amount == total), `flags`, `notes`, `usage` and `tasks` (for unit economics), the `regions`
    the priced usage ran in, `true_up` (None, or what a true-up used and found: its bill
    batches, map, and priced, billed and variance totals; recorded in the run's summary) and
    `charge_shares` (each tenant's part of each shared charge, :class:`~ledger.allocate.charges.ChargeShare`)."""

    start: datetime
    end: datetime
    policy: Policy
    price_books: tuple[str, ...]
    total: Decimal
    lines: tuple[Line, ...]
    flags: tuple[Flag, ...]
    notes: tuple[str, ...]
    usage: tuple[Usage, ...]
    tasks: tuple[Tasks, ...]
    regions: tuple[str, ...] = ()
    true_up: dict | None = None
    charge_shares: tuple = ()

    @property
    def currency(self) -> str:
        return self.policy.currency

    @property
    def lines_total(self) -> Decimal:
        return sum((ln.amount for ln in self.lines), ZERO)


# ---- UTC instants -------------------------------------------------------------------------------

def _us(at: datetime) -> int:
    d = at.astimezone(timezone.utc) - EPOCH
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def _at(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=int(us))


def _seconds(us: int) -> Decimal:
    return Decimal(us).scaleb(-6)
