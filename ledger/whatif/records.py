"""Records of a what-if: the scenario as parsed (reprice, reroute, self-host), and its result beside the run."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from ..errors import LedgerError

#: What every output of a scenario says it is (table titles, JSON ``kind``, CSV, workbook, dashboard).
SCENARIO = "SCENARIO"
KIND = "scenario"
#: The fields a change selects provider requests by.
WHERE_KEYS = ("tenant", "product", "model", "provider")
ONE = Decimal(1)


class ScenarioError(LedgerError, ValueError):
    """A scenario that cannot be read or run: one problem per line (file, line, entry, message)."""


@dataclass(frozen=True)
class Where:
    """Which provider requests a change selects: each field a tuple of names (empty: any). Only
    provider requests (no pool) are ever selected."""

    tenant: tuple[str, ...] = ()
    product: tuple[str, ...] = ()
    model: tuple[str, ...] = ()
    provider: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, list[str]]:
        return {k: list(getattr(self, k)) for k in WHERE_KEYS if getattr(self, k)}

    def text(self) -> str:
        return ", ".join(f"{k} {'/'.join(v)}" for k, v in self.as_dict().items()) or "every provider request"


@dataclass(frozen=True, kw_only=True)
class ScenarioChange:
    """What every change shares: its `label` (``reroute[1]``, ``self_host[2]``: the table it came
    from), the selection `where`, the `share` of the selected requests moved (0 < share <= 1; below 1
    a request is moved when the first 8 hex digits of md5(``<label>:<request_id>``) read as an integer
    are below share x 16^8), and the token assumption: `input_ratio` and `output_ratio` (new tokens
    = old x ratio; 1 keeps them)."""

    label: str
    where: Where
    share: Decimal = ONE
    input_ratio: Decimal = ONE
    output_ratio: Decimal = ONE
    description: str = ""

    def tokens_text(self) -> str:
        if self.input_ratio == ONE and self.output_ratio == ONE:
            return "tokens 1:1"
        return f"input tokens x {self.input_ratio}, output tokens x {self.output_ratio}"


@dataclass(frozen=True, kw_only=True)
class Reroute(ScenarioChange):
    """Move the selected provider requests to another `model` and/or `provider` (None: kept)."""

    model: str | None = None
    provider: str | None = None


@dataclass(frozen=True, kw_only=True)
class SelfHost(ScenarioChange):
    """Move the selected provider requests onto the self-hosted `pool` (new, or existing: its fleet
    then grows by the replicas sized here), served as `model` (None: their own model's name).

    The pool is sized from the moved traffic's per-minute workload at `percentile`: `curve` (a
    ``sizing.Curve``, with `curve_ref` saying where it came from), `sla` [token/s/user], `util`,
    `gpus_per_replica`, `interpolate` (a DRAFT), `ttft_ms` (a TTFT limit or None), `failure_reserve`
    (replicas held as idle reserve). Its GPUs are `device` in `region` under `purchase_option`,
    priced from the books like every fleet interval."""

    pool: str
    device: str
    region: str
    purchase_option: str
    gpus_per_replica: int
    curve: object
    curve_ref: str
    sla: float
    percentile: str = "p95"
    failure_reserve: int = 0
    util: float = 0.7
    interpolate: bool = False
    ttft_ms: float | None = None
    model: str | None = None


@dataclass(frozen=True)
class Scenario:
    """A scenario file as read: its `name`, `description`, `path` (as given), `text` and SHA-256
    `digest`; `pricebooks`: book files or folders (resolved against the scenario's folder) and
    loaded books named ``name@version``, whose books replace every loaded version of the same book
    name (empty: the period's books); `prices_as_of`: price the whole period with the prices in force
    at this instant (None: at each usage's time); `reroutes` and `self_hosts` in file order (all
    reroutes apply first, then the self-hosts, each over the requests as the changes before left them)."""

    name: str
    path: str
    text: str
    digest: str
    description: str = ""
    pricebooks: tuple[str, ...] = ()
    prices_as_of: datetime | None = None
    reroutes: tuple[Reroute, ...] = ()
    self_hosts: tuple[SelfHost, ...] = ()

    @property
    def changes(self) -> tuple[ScenarioChange, ...]:
        return (*self.reroutes, *self.self_hosts)

    @property
    def changes_nothing(self) -> bool:
        return not (self.pricebooks or self.prices_as_of or self.changes)


@dataclass(frozen=True)
class Sized:
    """A self-hosted pool as the scenario sized it: `label` of its change, `pool`, `device`, `region`,
    `purchase_option`, `gpus_per_replica`; `requests` moved onto it (count); the workload it was
    sized from (`percentile`, `tpm` [output token/min], `isl`, `osl` [token]); `sla` [token/s/user],
    `util`, `curve` (where the curve came from); `status` VERDICT or DRAFT; `replicas_serving`,
    `replicas_reserve` (failure reserve), `gpus` (all of them); `hours` of the period each GPU is
    provisioned; `capacity_tokens_per_gpu_s` (active tokens per GPU-second at c*, as given to the
    fleet); `warnings` of the sizing (a curve measured at another shape)."""

    label: str
    pool: str
    device: str
    region: str
    purchase_option: str
    gpus_per_replica: int
    requests: int
    percentile: str
    tpm: float
    isl: float
    osl: float
    sla: float
    util: float
    curve: str
    status: str
    replicas_serving: int
    replicas_reserve: int
    gpus: int
    hours: Decimal
    capacity_tokens_per_gpu_s: Decimal
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompareRow:
    """One key (`by` tenant, product or model; `key` None for lines of none) actual against scenario:
    cost [currency], own successful tasks (None by model), cost per successful task of each
    (None when no task succeeded), `difference` = scenario - actual and its `difference_share` of
    the actual cost (None when the actual cost is 0)."""

    by: str
    key: str | None
    actual_cost: Decimal
    scenario_cost: Decimal
    successful_tasks: int | None
    actual_cost_per_successful_task: Decimal | None
    scenario_cost_per_successful_task: Decimal | None

    @property
    def difference(self) -> Decimal:
        return self.scenario_cost - self.actual_cost

    @property
    def difference_share(self) -> Decimal | None:
        from ..economics import RATIO_EXP
        from ..money import quantize

        return quantize(self.difference / self.actual_cost, RATIO_EXP) if self.actual_cost else None


@dataclass(frozen=True)
class ScenarioResult:
    """A scenario run over a period, beside the period's current run.

    `scenario`; `period` (``YYYY-MM``), `start`, `end`; `currency`; `run_id` of the actual (the
    period's current run) and its `actual_books`; `scenario_books` (``name@version``; with
    `prices_as_of`, each price re-dated from that instant); `actual` (the run's ``economics.RunData``)
    and `allocation` (the scenario's ``allocate.Allocation``, conserved); `rows`: CompareRow by
    tenant, product and model; `by_kind` and `by_category`: (actual, scenario) per line kind and
    category; `moved`: requests moved per change label; `sized`: the self-hosted pools;
    `same_inputs`: the actual run's inputs digest equals that of today's facts and books (else the
    difference holds what changed since the run too); `notes`; `id` once stored."""

    scenario: object
    period: str
    start: datetime
    end: datetime
    currency: str
    run_id: str
    actual_books: tuple[str, ...]
    scenario_books: tuple[str, ...]
    actual: object
    allocation: object
    rows: tuple[CompareRow, ...]
    by_kind: dict[str, tuple[Decimal, Decimal]]
    by_category: dict[str, tuple[Decimal, Decimal]]
    moved: dict[str, int]
    sized: tuple[Sized, ...]
    same_inputs: bool
    notes: tuple[str, ...] = ()
    id: str | None = None
    created_at: datetime | None = None
    extra: dict = field(default_factory=dict)

    @property
    def actual_total(self) -> Decimal:
        return sum((ln.amount for ln in self.actual.lines), Decimal(0))

    @property
    def scenario_total(self) -> Decimal:
        return self.allocation.total

    @property
    def difference(self) -> Decimal:
        return self.scenario_total - self.actual_total

    @property
    def status(self) -> str:
        """DRAFT when any self-hosted pool was sized by interpolation, VERDICT when all were measured,
        ``-`` when nothing was sized."""
        if not self.sized:
            return "-"
        return "DRAFT" if any(z.status == "DRAFT" for z in self.sized) else "VERDICT"
