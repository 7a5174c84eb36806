"""Unit-economics reports over an allocation run: one report shape, renderers ``*_as_json``,
``*_as_csv`` and ``*_as_table`` (rich), and the run summary (the ``allocate --json`` contract).

Every number comes from a run's lines (cost) and its recorded usage and tasks (requests, active
tokens, outcomes); every report states its period, run, price book versions, currency and the
success criteria of the outcomes it counts. A report filtered to some tenants shows exactly their
unfiltered numbers: ratios use run-wide denominators (share of GPU) or the row's own numbers.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal, localcontext

from babel.numbers import format_decimal
from rich.console import Group
from rich.table import Table

from .allocate import CATEGORIES, KINDS, Allocation, Flag, Line, Tasks, Usage, period_label
from .money import ZERO, fmt, quantize

BY = ("tenant", "product", "model")
RATIO_EXP = Decimal("0.0001")
NO_SUCCESS = "no task with outcome success was decided in the period"
NO_TOKENS = "no active tokens in the period"


@dataclass(frozen=True)
class RunInfo:
    """Where a report's numbers come from: run id, period ``[start, end)``, currency, price book
    versions, idle policy, basis, creation time, code version, inputs digest, notes, flags, and
    the regions the priced usage ran in."""

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


@dataclass(frozen=True)
class RunData:
    """A run's `info`, `lines`, `usage` and `tasks`: what every report is computed from."""

    info: RunInfo
    lines: tuple[Line, ...]
    usage: tuple[Usage, ...]
    tasks: tuple[Tasks, ...]


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
    `unattributed` holds the lines that belong to no tenant (idle_slack, idle_reserve, unallocated);
    `total` is the run total, `gpu_total` all GPU cost of the run (the share-of-GPU denominator)."""

    by: str
    run: RunInfo
    rows: tuple[Row, ...]
    unattributed: dict[str, Decimal]
    total: Decimal
    gpu_total: Decimal
    tenants: tuple[str, ...] | None
    criteria: tuple[str, ...]

    def share_of_gpu(self, row: Row) -> Decimal | None:
        return quantize(row.gpu_cost / self.gpu_total, RATIO_EXP) if self.gpu_total else None


# ---- building ----------------------------------------------------------------------------------

def run_data_of(allocation: Allocation, *, run_id: str, created_at: datetime | None = None,
                code_version: str = "", inputs_digest: str = "") -> RunData:
    """RunData of an allocation not (or just) written."""
    info = RunInfo(run_id, allocation.start, allocation.end, allocation.currency, allocation.price_books,
                   allocation.policy.idle, allocation.policy.basis, created_at, code_version, inputs_digest,
                   allocation.notes, allocation.flags, allocation.regions)
    return RunData(info, allocation.lines, allocation.usage, allocation.tasks)


def run_data_of_stored(stored) -> RunData:
    """RunData of a :class:`ledger.runs.StoredRun`."""
    run, doc = stored.run, stored.summary
    flags = tuple(Flag(f["kind"], f["pool"], datetime.fromisoformat(f["hour"].replace("Z", "+00:00")))
                  for f in doc.get("flags", []))
    info = RunInfo(run.id, run.period_start, run.period_end, run.currency, tuple(json.loads(run.price_books)),
                   run.idle_policy, run.basis, run.created_at, run.code_version, run.inputs_digest,
                   tuple(doc.get("notes", [])), flags, tuple(doc.get("regions", [])))
    return RunData(info, stored.lines, stored.usage, stored.tasks)


def load_report(s, *, by: str = "tenant", tenants: Sequence[str] | None = None, run_id: str | None = None,
                start: datetime | None = None, end: datetime | None = None) -> Report:
    """Unit economics of a stored run: by id, or the current run of ``[start, end)``."""
    from .runs import load_run

    return unit_economics(run_data_of_stored(load_run(s, run_id=run_id, start=start, end=end)), by=by,
                          tenants=tenants)


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
        if ln.kind != "tenant":
            unattributed[ln.kind] += ln.amount
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
    keys = set(cost) | set(requests) | set(tasks)
    rows = []
    for k in sorted(keys, key=lambda x: (x is None, x or "")):
        t = dict(tasks[k]) if by != "model" else None
        reasons = {}
        if t is not None and not t["success"]:
            reasons["cost_per_successful_task"] = NO_SUCCESS
        if not tokens[k]:
            reasons["cost_per_1m_active_tokens"] = NO_TOKENS
        rows.append(Row(k, cost[k], {c: cats[k][c] for c in CATEGORIES}, failed[k], idle[k], gpu[k], tokens[k],
                        requests[k], failed_req[k], t, tuple(sorted(criteria[k])), reasons))
    return Report(by, data.info, tuple(rows), unattributed, total, gpu_total,
                  None if tenants is None else tuple(sorted(wanted)), tuple(sorted(all_criteria)))


# ---- the run summary (allocate --json) ---------------------------------------------------------

def _opt(d: Decimal | None) -> str | None:
    return None if d is None else fmt(d)


def _ratio(d: Decimal | None) -> str | None:
    return None if d is None else format(d, "f")


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _tenant_entry(report: Report, r: Row) -> dict:
    return {"tenant": r.key, "cost": fmt(r.cost), "by_category": {c: fmt(v) for c, v in r.by_category.items()},
            "failed_work": fmt(r.failed_work), "failed_work_share": _ratio(r.failed_work_share),
            "idle_share": fmt(r.idle_share), "share_of_gpu": _ratio(report.share_of_gpu(r)),
            "active_tokens": r.active_tokens, "requests": r.requests, "failed_requests": r.failed_requests,
            "tasks": r.tasks, "success_rate": _ratio(r.success_rate),
            "cost_per_successful_task": _opt(r.cost_per_successful_task),
            "cost_per_1m_active_tokens": _opt(r.cost_per_1m_active_tokens),
            "reasons": dict(r.reasons), "success_criteria": list(r.criteria)}


def summary(allocation: Allocation, *, run_id: str, created_at: datetime | None = None, inputs_digest: str = "",
            code_version: str = "") -> dict:
    """The JSON contract of ``ledger allocate --json`` (money as decimal strings), also stored as
    the run's summary. Beyond the contract's keys it records the run's provenance, notes, usage
    and tasks, so that reports of a stored run need nothing but the run."""
    data = run_data_of(allocation, run_id=run_id, created_at=created_at, code_version=code_version,
                       inputs_digest=inputs_digest)
    report = unit_economics(data, by="tenant")
    by_kind = {k: ZERO for k in KINDS}
    by_cat = {c: ZERO for c in CATEGORIES}
    failed = ZERO
    for ln in allocation.lines:
        by_kind[ln.kind] += ln.amount
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
        "flags": [{"kind": f.kind, "pool": f.pool, "hour": _iso(f.hour)} for f in allocation.flags],
        "tenants": [_tenant_entry(report, r) for r in report.rows],
        "success_criteria": list(report.criteria),
        "regions": list(allocation.regions),
        "notes": list(allocation.notes),
        "created_at": _iso(created_at),
        "inputs_digest": inputs_digest,
        "code_version": code_version,
        "lines": len(allocation.lines),
        "usage": [{"tenant": u.tenant, "product": u.product, "model": u.model, "requests": u.requests,
                   "active_tokens": u.active_tokens, "failed_requests": u.failed_requests} for u in allocation.usage],
        "tasks": [{"tenant": t.tenant, "product": t.product, "success": t.success, "failure": t.failure,
                   "unknown": t.unknown, "criteria": list(t.criteria)} for t in allocation.tasks],
    }


# ---- renderers ---------------------------------------------------------------------------------

def _provenance(report: Report) -> dict:
    info = report.run
    return {"period": period_label(info.start, info.end), "run_id": info.run_id, "currency": info.currency,
            "price_books": list(info.price_books), "idle_policy": info.idle_policy, "basis": info.basis,
            "regions": list(info.regions), "success_criteria": list(report.criteria)}


def _row_json(report: Report, r: Row) -> dict:
    if report.by == "model":
        return {"model": r.key, "cost": fmt(r.cost), "gpu_cost": fmt(r.gpu_cost),
                "provider_tokens_cost": fmt(r.by_category["provider_tokens"]), "active_tokens": r.active_tokens,
                "requests": r.requests, "cost_per_1m_active_tokens": _opt(r.cost_per_1m_active_tokens),
                "share_of_gpu": _ratio(report.share_of_gpu(r)), "reasons": dict(r.reasons)}
    entry = _tenant_entry(report, r)
    entry.pop("tenant")
    return {report.by: r.key, **entry}


def unit_economics_as_json(report: Report) -> dict:
    """The report as a JSON-ready dict; money as decimal strings, ratios as decimal strings."""
    doc = {"report": "unit-economics", "by": report.by, **_provenance(report),
           "tenants_filter": None if report.tenants is None else list(report.tenants),
           "rows": [_row_json(report, r) for r in report.rows],
           "run_total": fmt(report.total)}
    if report.tenants is None:
        doc["unattributed"] = {k: fmt(v) for k, v in report.unattributed.items()}
    return doc


def unit_economics_as_csv(report: Report) -> str:
    """One CSV row per report row; every row repeats the period, run, currency, price books and
    success criteria so that a row taken alone still says where it came from."""
    rows = [_row_json(report, r) for r in report.rows]
    prov = _provenance(report)
    head = {"period_start": prov["period"]["start"], "period_end": prov["period"]["end"], "run_id": prov["run_id"],
            "currency": prov["currency"], "price_books": " ".join(prov["price_books"]),
            "regions": " ".join(prov["regions"]), "success_criteria": " ".join(prov["success_criteria"])}
    flat = []
    for r in rows:
        d = dict(head)
        for k, v in r.items():
            if k == "by_category":
                d.update({f"cost_{c}": x for c, x in v.items()})
            elif k == "tasks":
                d.update({f"tasks_{n}": x for n, x in (v or {}).items()})
            elif k == "reasons":
                d["undefined_because"] = "; ".join(f"{a}: {b}" for a, b in v.items())
            elif k == "success_criteria":
                d["row_success_criteria"] = " ".join(v)
            else:
                d[k] = "" if v is None else v
        flat.append(d)
    buf = io.StringIO()
    fields = list(flat[0]) if flat else list(head) + [report.by]
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(flat)
    return buf.getvalue()


def _money(d: Decimal | None) -> str:
    """Money for a person: grouped, two to six decimals (formatting happens here, at the edge)."""
    return "—" if d is None else format_decimal(d, format="#,##0.00####", locale="en_US")


def _pct(d: Decimal | None) -> str:
    return "—" if d is None else format_decimal(d * 100, format="#,##0.0", locale="en_US") + "%"


def _title(report: Report, what: str) -> str:
    info = report.run
    p = period_label(info.start, info.end)
    return (f"{what} · {p['start']} to {p['end']} · run {info.run_id[:12]} · {info.currency} · "
            f"price books {', '.join(info.price_books) or 'none'} · regions {', '.join(info.regions) or 'none'}")


def _caption(report: Report) -> str:
    crit = ", ".join(report.criteria) or "none recorded"
    parts = [f"success criteria: {crit}", f"idle policy {report.run.idle_policy}", f"basis {report.run.basis}",
             f"run total {_money(report.total)}"]
    if report.tenants is None:
        parts.append("not on tenants: " + ", ".join(f"{k} {_money(v)}" for k, v in report.unattributed.items()))
    return " · ".join(parts)


def _label(key: str | None, by: str) -> str:
    return key if key is not None else f"(no {by}: shared charges, shared idle)"


def unit_economics_as_table(report: Report) -> Table | Group:
    """A rich table of the report (money formatted here)."""
    t = Table(title=_title(report, f"unit economics by {report.by}"), caption=_caption(report))
    if report.by == "model":
        for col in ("model", "cost", "GPU", "provider tokens", "requests", "active tokens", "$/1M active tokens",
                    "share of GPU"):
            t.add_column(col, justify="left" if col == "model" else "right")
        for r in report.rows:
            t.add_row(_label(r.key, "model"), _money(r.cost), _money(r.gpu_cost),
                      _money(r.by_category["provider_tokens"]), f"{r.requests:,}", f"{r.active_tokens:,}",
                      _money(r.cost_per_1m_active_tokens), _pct(report.share_of_gpu(r)))
        return t
    # Headline columns first; the split by category is a second table, so each fits a terminal.
    cols = [report.by, "cost", "failed work", "idle share", "requests", "active tokens", "tasks ok/fail/unknown",
            "success rate", "cost per success", "$/1M active tokens"]
    for col in cols:
        t.add_column(col, justify="left" if col == report.by else "right")
    for r in report.rows:
        tk = r.tasks or {"success": 0, "failure": 0, "unknown": 0}
        per_success = _money(r.cost_per_successful_task) if r.cost_per_successful_task is not None else "undefined"
        t.add_row(_label(r.key, report.by), _money(r.cost),
                  f"{_money(r.failed_work)} ({_pct(r.failed_work_share)})", _money(r.idle_share),
                  f"{r.requests:,}", f"{r.active_tokens:,}",
                  f"{tk['success']:,}/{tk['failure']:,}/{tk['unknown']:,}", _pct(r.success_rate), per_success,
                  _money(r.cost_per_1m_active_tokens))
    used = [c for c in CATEGORIES if any(r.by_category[c] for r in report.rows)]
    cats = Table(title=f"cost by category ({report.run.currency})")
    for col in [report.by, *used]:
        cats.add_column(col, justify="left" if col == report.by else "right")
    for r in report.rows:
        cats.add_row(_label(r.key, report.by), *(_money(r.by_category[c]) for c in used))
    return Group(t, cats)


TENANT_METRICS = ("cost", "share of GPU", "cost per successful task", "success rate", "task failure rate",
                  "failed work share", "$/1M active tokens", "idle share", "requests", "active tokens",
                  "tasks success", "tasks failure", "tasks unknown")


def _tenant_metrics(report: Report, r: Row) -> dict[str, str]:
    tk = r.tasks or {"success": 0, "failure": 0, "unknown": 0}
    decided = tk["success"] + tk["failure"]
    fail_rate = quantize(Decimal(tk["failure"]) / decided, RATIO_EXP) if decided else None
    return {"cost": fmt(r.cost), "share of GPU": _ratio(report.share_of_gpu(r)) or "",
            "cost per successful task": _opt(r.cost_per_successful_task) or f"undefined: {NO_SUCCESS}",
            "success rate": _ratio(r.success_rate) or "", "task failure rate": _ratio(fail_rate) or "",
            "failed work share": _ratio(r.failed_work_share) or "",
            "$/1M active tokens": _opt(r.cost_per_1m_active_tokens) or "", "idle share": fmt(r.idle_share),
            "requests": str(r.requests), "active tokens": str(r.active_tokens), "tasks success": str(tk["success"]),
            "tasks failure": str(tk["failure"]), "tasks unknown": str(tk["unknown"])}


def tenants_as_csv(report: Report) -> str:
    """Tenants side by side: one row per metric, one column per tenant, after provenance rows."""
    if report.by != "tenant":
        raise ValueError("the tenant comparison needs a report by tenant")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["metric", *(r.key for r in report.rows)])
    metrics = [_tenant_metrics(report, r) for r in report.rows]
    for m in TENANT_METRICS:
        w.writerow([m, *(x[m] for x in metrics)])
    prov = _provenance(report)
    for k, v in (("period_start", prov["period"]["start"]), ("period_end", prov["period"]["end"]),
                 ("run_id", prov["run_id"]), ("currency", prov["currency"]),
                 ("price_books", " ".join(prov["price_books"])), ("regions", " ".join(prov["regions"])),
                 ("success_criteria", " ".join(prov["success_criteria"]))):
        w.writerow([k, *([v] * len(report.rows))])
    return buf.getvalue()


def tenants_as_table(report: Report) -> Table:
    """Tenants side by side (rich): one row per metric, one column per tenant."""
    if report.by != "tenant":
        raise ValueError("the tenant comparison needs a report by tenant")
    t = Table(title=_title(report, "tenants side by side"), caption=_caption(report))
    t.add_column("metric")
    for r in report.rows:
        t.add_column(r.key or "", justify="right")
    metrics = [_tenant_metrics(report, r) for r in report.rows]
    money_rows = {"cost", "cost per successful task", "$/1M active tokens", "idle share"}
    pct_rows = {"share of GPU", "success rate", "task failure rate", "failed work share"}
    for m in TENANT_METRICS:
        cells = []
        for x in metrics:
            v = x[m]
            if m in money_rows and v and not v.startswith("undefined"):
                v = _money(Decimal(v))
            elif m in pct_rows and v:
                v = _pct(Decimal(v))
            elif m in ("requests", "active tokens") or m.startswith("tasks"):
                v = f"{int(v):,}"
            cells.append(v or "—")
        t.add_row(m, *cells)
    return t


def runs_as_json(runs: Iterable) -> list[dict]:
    """`ledger runs --json`: one entry per run, newest first."""
    return [{"run_id": r.id, "period": period_label(r.period_start, r.period_end), "created_at": _iso(r.created_at),
             "currency": r.currency, "idle_policy": r.idle_policy, "basis": r.basis, "total": fmt(r.total),
             "price_books": json.loads(r.price_books), "code_version": r.code_version,
             "inputs_digest": r.inputs_digest} for r in runs]
