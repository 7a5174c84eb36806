"""Unit economics of an allocation: rows by tenant, product or model, and the run summary.

Every number comes from a run's lines (cost) and its recorded usage and tasks (requests, active
tokens, outcomes). A report filtered to some tenants shows exactly their unfiltered numbers: ratios
use run-wide denominators (share of GPU) or the row's own numbers. The summary is the JSON contract
of ``ledger allocate --json`` and is stored with each run (:mod:`ledger.runs`); rendering is in
:mod:`ledger.reports`.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, localcontext

from .allocate import CATEGORIES, KINDS, VARIANCE, Allocation, Flag, Line, Tasks, Usage
from .allocate.charges import ChargeShare
from .instants import iso, period_label
from .money import ZERO, fmt, quantize
from .store.signoff import Closing

BY = ("tenant", "product", "model")
RATIO_EXP = Decimal("0.0001")
NO_SUCCESS = "no task with outcome success was decided in the period"
NO_TOKENS = "no active tokens in the period"
#: The two costs per successful task, each with its definition (reports, JSON, CSV, workbook and
#: dashboard all label them with these texts).
ALL_IN = "cost_per_successful_task_all_in"
ALL_IN_DEFINITION = ("the run total (every line of the run: tenants' cost, idle slack, idle reserve and "
                     "unallocated shared charges) ÷ every task of the run with outcome success decided in the "
                     "period (run-wide, whichever tenants a report shows)")
OWN_DEFINITION = ("a tenant's (or product's) own cost (its lines, with the idle and shared charges booked on it) "
                  "÷ its own tasks with outcome success decided in the period")


@dataclass(frozen=True)
class RunInfo:
    """Where a report's numbers come from: run id, period ``[start, end)``, currency, price book
    versions, idle policy, basis, creation time, code version, inputs digest, notes, flags, and
    the regions the priced usage ran in; `closing`, the close of the run's period when the run was
    read from the store (:class:`ledger.store.Closing`: open, or closed and by whom, with its final
    run), None for an allocation not stored."""

    run_id: str
    start: datetime
    end: datetime
    currency: str
    price_books: tuple[str, ...]
    idle_policy: str
    basis: str
    created_at: datetime | None = None
    code_version: str = ""
    inputs_digest: str = ""
    notes: tuple[str, ...] = ()
    flags: tuple[Flag, ...] = ()
    regions: tuple[str, ...] = ()
    closing: Closing | None = None


@dataclass(frozen=True)
class RunData:
    """A run's `info`, `lines`, `usage` and `tasks`: what every report is computed from; and its
    `charge_shares` (each tenant's part of each shared charge, with the charge's rule; empty for a
    run made before runs recorded them)."""

    info: RunInfo
    lines: tuple[Line, ...]
    usage: tuple[Usage, ...]
    tasks: tuple[Tasks, ...]
    charge_shares: tuple[ChargeShare, ...] = ()


@dataclass(frozen=True)
class Row:
    """One row of unit economics. `key` is the tenant, product or model (None: lines with no
    product or model, such as shared charges). Money in the run currency, exact; ratios rounded
    half-even (money ratios to 1e-6, rates and shares to 1e-4); None with a `reasons` entry when
    undefined."""

    key: str | None
    cost: Decimal
    by_category: dict[str, Decimal]
    failed_work: Decimal
    idle_share: Decimal
    gpu_cost: Decimal
    active_tokens: int
    requests: int
    failed_requests: int
    tasks: dict[str, int] | None
    criteria: tuple[str, ...]
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def failed_work_share(self) -> Decimal | None:
        return quantize(self.failed_work / self.cost, RATIO_EXP) if self.cost else None

    @property
    def success_rate(self) -> Decimal | None:
        if not self.tasks or not (self.tasks["success"] + self.tasks["failure"]):
            return None
        return quantize(Decimal(self.tasks["success"]) / (self.tasks["success"] + self.tasks["failure"]), RATIO_EXP)

    @property
    def cost_per_successful_task(self) -> Decimal | None:
        """The row's own cost ÷ its own successful tasks, to 1e-6 (:data:`OWN_DEFINITION`); None
        when it has none. The run-wide all-in figure is :attr:`Report.cost_per_successful_task_all_in`."""
        if not self.tasks or not self.tasks["success"]:
            return None
        return quantize(self.cost / self.tasks["success"])

    @property
    def cost_per_1m_active_tokens(self) -> Decimal | None:
        if not self.active_tokens:
            return None
        with localcontext() as ctx:
            ctx.prec = 60
            return quantize(self.cost * 1_000_000 / self.active_tokens)


@dataclass(frozen=True)
class Report:
    """Unit economics `by` tenant, product or model over one run; `tenants` the filter (None: all).
    `unattributed` holds the lines that belong to no tenant (idle_slack, idle_reserve, unallocated;
    a true-up run's variance on no tenant under `variance`, while a tenant's variance is its cost);
    `total` is the run total, `gpu_total` all GPU cost of the run (the share-of-GPU denominator),
    `successful_tasks` every task of the run with outcome success decided in the period (all
    tenants, whatever the filter: the all-in denominator)."""

    by: str
    run: RunInfo
    rows: tuple[Row, ...]
    unattributed: dict[str, Decimal]
    total: Decimal
    gpu_total: Decimal
    tenants: tuple[str, ...] | None
    criteria: tuple[str, ...]
    successful_tasks: int
    view: str | None = None  # a view other than the lines as booked: "shared charges spread" (ledger.drilldown)
    #: The monthly budget in force for the month beside each row's key (issue 31; the guardrails'
    #: budgets of this report's scope, :mod:`ledger.reports.budgets`); None: no budget was looked up
    #: or none is in force for the month, and the outputs carry no budget at all.
    budgets: dict[str, Decimal] | None = None
    #: The budgets books (``name@version``) the `budgets` come from.
    budget_books: tuple[str, ...] = ()

    def budget_of(self, row: Row) -> Decimal | None:
        return None if self.budgets is None or row.key is None else self.budgets.get(row.key)

    def of_budget(self, row: Row) -> Decimal | None:
        """The row's cost ÷ its budget, half-even to 1e-4 (None when it has no budget)."""
        b = self.budget_of(row)
        return None if not b else quantize(row.cost / b, RATIO_EXP)

    def share_of_gpu(self, row: Row) -> Decimal | None:
        return quantize(row.gpu_cost / self.gpu_total, RATIO_EXP) if self.gpu_total else None

    @property
    def cost_per_successful_task_all_in(self) -> Decimal | None:
        """The run total ÷ the run's successful tasks, to 1e-6 (None when no task succeeded)."""
        return all_in(self.total, self.successful_tasks)


def all_in(total: Decimal, successes: int) -> Decimal | None:
    """The all-in cost per successful task: `total` ÷ `successes`, half-even to 1e-6; None when 0."""
    if not successes:
        return None
    with localcontext() as ctx:
        ctx.prec = 60
        return quantize(total / successes)


# ---- building ----------------------------------------------------------------------------------

def run_data_of(allocation: Allocation, *, run_id: str, created_at: datetime | None = None,
                code_version: str = "", inputs_digest: str = "") -> RunData:
    """RunData of an allocation not (or just) written."""
    info = RunInfo(run_id=run_id, start=allocation.start, end=allocation.end, currency=allocation.currency,
                   price_books=allocation.price_books, idle_policy=allocation.policy.idle,
                   basis=allocation.policy.basis, created_at=created_at, code_version=code_version,
                   inputs_digest=inputs_digest, notes=allocation.notes, flags=allocation.flags,
                   regions=allocation.regions)
    return RunData(info=info, lines=allocation.lines, usage=allocation.usage, tasks=allocation.tasks,
                   charge_shares=allocation.charge_shares)


def lines_frame(lines: Iterable[Line]):
    """A run's lines as a pandas DataFrame (amounts and quantities stay Decimal, in object columns)."""
    import pandas as pd

    cols = [f.name for f in dataclasses.fields(Line)]
    return pd.DataFrame([[getattr(ln, c) for c in cols] for ln in lines], columns=cols)


def unit_economics(data: RunData, *, by: str = "tenant", tenants: Sequence[str] | None = None) -> Report:
    """Unit economics of a run by tenant, product or model; restricted to `tenants` when given
    (each row then holds exactly the numbers it has unfiltered, for by tenant)."""
    if by not in BY:
        raise ValueError(f"by {by!r}: expected one of {', '.join(BY)}")
    wanted = None if tenants is None else frozenset(tenants)

    def keep(tenant: str | None) -> bool:
        return wanted is None or tenant in wanted

    def key_of(obj) -> str | None:
        return getattr(obj, by, None)

    cost: dict = defaultdict(Decimal)
    cats: dict = defaultdict(lambda: defaultdict(Decimal))
    failed: dict = defaultdict(Decimal)
    idle: dict = defaultdict(Decimal)
    gpu: dict = defaultdict(Decimal)
    unattributed = {k: ZERO for k in KINDS[1:]}
    total = gpu_total = ZERO
    for ln in data.lines:
        total += ln.amount
        if ln.category == "gpu":
            gpu_total += ln.amount
        if ln.kind != "tenant" and not (ln.kind == VARIANCE and ln.tenant is not None):
            # idle, unallocated, and a true-up's variance on no tenant (only a true-up run has that key)
            unattributed[ln.kind] = unattributed.get(ln.kind, ZERO) + ln.amount
            continue
        if not keep(ln.tenant):
            continue
        k = key_of(ln)
        cost[k] += ln.amount
        cats[k][ln.category] += ln.amount
        if ln.work == "failed":
            failed[k] += ln.amount
        if ln.shared_from:
            idle[k] += ln.amount
        if ln.category == "gpu":
            gpu[k] += ln.amount
    requests: dict = defaultdict(int)
    tokens: dict = defaultdict(int)
    failed_req: dict = defaultdict(int)
    for u in data.usage:
        if keep(u.tenant):
            k = key_of(u)
            requests[k] += u.requests
            tokens[k] += u.active_tokens
            failed_req[k] += u.failed_requests
    tasks: dict = defaultdict(lambda: {"success": 0, "failure": 0, "unknown": 0})
    criteria: dict = defaultdict(set)
    all_criteria: set[str] = set()
    if by != "model":
        for t in data.tasks:
            if keep(t.tenant):
                k = key_of(t)
                for name in ("success", "failure", "unknown"):
                    tasks[k][name] += getattr(t, name)
                criteria[k].update(t.criteria)
                all_criteria.update(t.criteria)
    successes = sum(t.success for t in data.tasks)  # run-wide, whatever the filter
    keys = set(cost) | set(requests) | set(tasks)
    rows = []
    for k in sorted(keys, key=lambda x: (x is None, x or "")):
        t = dict(tasks[k]) if by != "model" else None
        reasons = {}
        if t is not None and not t["success"]:
            reasons["cost_per_successful_task"] = NO_SUCCESS
        if not tokens[k]:
            reasons["cost_per_1m_active_tokens"] = NO_TOKENS
        rows.append(Row(key=k, cost=cost[k], by_category={c: cats[k][c] for c in CATEGORIES}, failed_work=failed[k],
                        idle_share=idle[k], gpu_cost=gpu[k], active_tokens=tokens[k], requests=requests[k],
                        failed_requests=failed_req[k], tasks=t, criteria=tuple(sorted(criteria[k])), reasons=reasons))
    return Report(by=by, run=data.info, rows=tuple(rows), unattributed=unattributed, total=total, gpu_total=gpu_total,
                  tenants=None if tenants is None else tuple(sorted(wanted)), criteria=tuple(sorted(all_criteria)),
                  successful_tasks=successes)


# ---- the run summary (allocate --json) ---------------------------------------------------------

def opt(d: Decimal | None) -> str | None:
    """Money as the documents write it (a decimal string with six places), None as None."""
    return None if d is None else fmt(d)


def ratio(d: Decimal | None) -> str | None:
    """A ratio or share (already rounded) as a plain decimal string, None as None."""
    return None if d is None else format(d, "f")


def all_in_entry(total: Decimal, successes: int) -> dict:
    """The top-level keys both JSON documents (``allocate --json``, ``report ... --json``) carry for
    the two costs per successful task: the all-in figure with its numerator (the run total) and
    denominator (the run's successful tasks) so a script can check it, both definitions, and the
    reason when the all-in figure is undefined (null)."""
    return {ALL_IN: opt(all_in(total, successes)), f"{ALL_IN}_numerator": fmt(total),
            f"{ALL_IN}_denominator": successes,
            "definitions": {ALL_IN: ALL_IN_DEFINITION, "cost_per_successful_task": OWN_DEFINITION},
            "reasons": {} if successes else {ALL_IN: NO_SUCCESS}}


def tenant_entry(report: Report, r: Row) -> dict:
    """One tenant's entry of the run summary's ``tenants`` (and of ``report tenants --json``)."""
    return {"tenant": r.key, "cost": fmt(r.cost), "by_category": {c: fmt(v) for c, v in r.by_category.items()},
            "failed_work": fmt(r.failed_work), "failed_work_share": ratio(r.failed_work_share),
            "idle_share": fmt(r.idle_share), "share_of_gpu": ratio(report.share_of_gpu(r)),
            "active_tokens": r.active_tokens, "requests": r.requests, "failed_requests": r.failed_requests,
            "tasks": r.tasks, "success_rate": ratio(r.success_rate),
            "cost_per_successful_task": opt(r.cost_per_successful_task),
            "cost_per_1m_active_tokens": opt(r.cost_per_1m_active_tokens),
            "reasons": dict(r.reasons), "success_criteria": list(r.criteria)}


def summary(allocation: Allocation, *, run_id: str, created_at: datetime | None = None, inputs_digest: str = "",
            code_version: str = "") -> dict:
    """The JSON contract of ``ledger allocate --json`` (money as decimal strings), also stored as
    the run's summary. Beyond the contract's keys it records the run's provenance, notes, usage
    and tasks, so that reports of a stored run need nothing but the run."""
    data = run_data_of(allocation, run_id=run_id, created_at=created_at, code_version=code_version,
                       inputs_digest=inputs_digest)
    report = unit_economics(data, by="tenant")
    by_kind = {k: ZERO for k in KINDS}  # a true-up run adds "variance"
    by_cat = {c: ZERO for c in CATEGORIES}
    failed = ZERO
    for ln in allocation.lines:
        by_kind[ln.kind] = by_kind.get(ln.kind, ZERO) + ln.amount
        by_cat[ln.category] += ln.amount
        if ln.work == "failed":
            failed += ln.amount
    return {
        "run_id": run_id,
        "period": period_label(allocation.start, allocation.end),
        "currency": allocation.currency,
        "price_books": list(allocation.price_books),
        "idle_policy": allocation.policy.idle,
        "basis": allocation.policy.basis,
        "weights": allocation.policy.as_dict()["weights"],
        "total": fmt(allocation.total),
        "lines_total": fmt(allocation.lines_total),
        "by_kind": {k: fmt(v) for k, v in by_kind.items()},
        "by_category": {c: fmt(v) for c, v in by_cat.items()},
        "failed_work": fmt(failed),
        **all_in_entry(allocation.total, report.successful_tasks),
        "flags": [{"kind": f.kind, "pool": f.pool, "hour": iso(f.hour)} for f in allocation.flags],
        "tenants": [tenant_entry(report, r) for r in report.rows],
        "success_criteria": list(report.criteria),
        "regions": list(allocation.regions),
        "notes": list(allocation.notes),
        "created_at": iso(created_at),
        "inputs_digest": inputs_digest,
        "code_version": code_version,
        "lines": len(allocation.lines),
        "usage": [{"tenant": u.tenant, "product": u.product, "model": u.model, "requests": u.requests,
                   "active_tokens": u.active_tokens, "failed_requests": u.failed_requests} for u in allocation.usage],
        "tasks": [{"tenant": t.tenant, "product": t.product, "success": t.success, "failure": t.failure,
                   "unknown": t.unknown, "criteria": list(t.criteria)} for t in allocation.tasks],
        "charge_shares": [{"charge_id": c.charge_id, "category": c.category, "rule": c.rule, "tenant": c.tenant,
                           "amount": fmt(c.amount)} for c in allocation.charge_shares],
        **({"true_up": allocation.true_up} if allocation.true_up is not None else {}),
    }
