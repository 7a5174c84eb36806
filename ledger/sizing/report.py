"""One sizing report shape, two renderers: `sizing_as_dict` (JSON) and `sizing_as_tables` (rich)."""
from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal

from rich import box

from ..formats import count, figures, money, percent
from ..hints import Hinted
from ..instants import iso
from ..units import prose
from ..tables import FitTable
from .curve import Curve, CurvePoint, fmt_num
from .cost import ComparisonRow
from .engine import SizingResult


def _money(d) -> str | None:
    from ledger.money import fmt

    return None if d is None else fmt(d)


def _point(p: CurvePoint) -> dict:
    return {"concurrency": p.concurrency, "tok_s_user": p.tok_s_user, "output_tok_s": p.output_tok_s,
            "ttft_ms": p.ttft_ms, "label": p.label}


def curve_as_dict(curve: Curve) -> dict:
    """The curve's full context, its point count and points, and any points a repair dropped."""
    c = curve.context
    return {"source": c.source, "model": c.model, "points": len(curve.points), "hardware": c.hardware,
            "gpus_per_replica": c.gpus_per_replica, "isl": c.isl, "osl": c.osl, "engine": c.engine,
            "precision": c.precision, "workload": c.workload, "tool": c.tool, "date": c.date, "format": c.format,
            "metrics": c.metrics, "notes": c.notes, "measured_points": [_point(p) for p in curve.points],
            "dropped_points": [_point(p) for p in curve.dropped]}


def sizing_as_dict(result: SizingResult, comparison: tuple[ComparisonRow, ...] | None = None,
                   alt: SizingResult | None = None) -> dict:
    """The JSON report: money as decimal strings, physical quantities as numbers."""
    req = result.request
    rows = [{"sla_tok_s_user": r.sla_tok_s_user, "c_star": r.c_star, "tok_s_user": r.tok_s_user,
             "replica_output_tok_s": r.replica_output_tok_s, "throughput_basis": r.throughput_basis,
             "c_star_measured": r.c_star_measured, "limited_by": r.limited_by,
             "replicas_serving": r.replicas_serving, "replicas_reserve": r.replicas_reserve,
             "replicas": r.replicas, "gpus": r.gpus, "monthly_cost": _money(r.monthly_cost),
             "capacity_tokens_per_gpu_s": r.capacity_tokens_per_gpu_s, "ttft_ms": r.ttft_ms,
             "reserves": {"failure": r.reserves.failure, "canary": r.reserves.canary, "warm": r.reserves.warm,
                          "warm_reason": r.warm_reason or None},
             "ops": ops_as_dict(r.ops)} for r in result.rows]
    out = {"status": result.status, "curve": curve_as_dict(result.curve), "tpm": req.tpm, "util": req.util,
           "gpus_per_replica": req.gpus_per_replica, "interpolate": req.interpolate,
           "ttft_limit_ms": req.ttft_limit_ms, "kv_cap": req.kv_cap, "isl": result.isl, "osl": result.osl,
           "reserves": {"failure": req.reserves.failure, "canary": req.reserves.canary, "warm": req.reserves.warm},
           "rows": rows, "repairs": list(result.repairs), "memory": None, "pricing": None,
           "warnings": list(result.warnings), "workload": workload_as_dict(result.workload),
           "time_to_ready_min": req.time_to_ready_min, "rise_tpm": req.rise_tpm}
    if result.memory is not None:
        out["memory"] = asdict(result.memory)
    p = result.pricing
    if p is not None:
        out["pricing"] = {"device": p.device, "region": p.region, "purchase_option": p.purchase_option,
                          "at": p.at.isoformat(), "hours_per_month": str(p.hours_per_month), "price": str(p.price),
                          "per": p.per, "currency": p.currency, "price_per_gpu_hour": format(p.price_per_gpu_hour.normalize(), "f"),
                          "book": p.book, "version": p.version, "source_url": p.source_url}
    if comparison is not None and alt is not None:
        alt_dict = sizing_as_dict(alt)
        out["compare"] = {"status": alt.status, "curve": alt_dict["curve"], "rows": alt_dict["rows"],
                          "repairs": alt_dict["repairs"],
                          "deltas": [{"sla_tok_s_user": d.sla_tok_s_user, "gpus_base": d.gpus_base,
                                      "gpus_compare": d.gpus_alt, "delta_gpus": d.delta_gpus,
                                      "monthly_cost_base": _money(d.monthly_cost_base),
                                      "monthly_cost_compare": _money(d.monthly_cost_alt),
                                      "delta_monthly_cost": _money(d.delta_monthly_cost)} for d in comparison]}
    return out


def ops_as_dict(ops) -> dict | None:
    """Per replica, for operations (ops.Ops) as JSON: counts as integers, shares and tok/s as numbers."""
    return None if ops is None else asdict(ops)


def workload_as_dict(w) -> dict | None:
    """What a sizing took from measured traffic (traffic.WorkloadInputs), or None."""
    return None if w is None else asdict(w)


def _warm_text(req) -> str:
    if req.rise_tpm is None:
        return f"warm {req.reserves.warm}"
    return f"warm from the largest rise over {fmt_num(req.time_to_ready_min)} min (time to ready), below"


def context_lines(result: SizingResult) -> list[str]:
    """Every number's context, as lines above the table (no bare numbers)."""
    from ledger.formats import plural

    c, req = result.curve.context, result.request
    mode = ("DRAFT: interpolated between measured points (linear in log concurrency)" if result.status == "DRAFT"
            else "VERDICT: measured points only")
    lines = [f"SLA-first sizing, {mode}",
             f"curve: {result.curve.label} [{c.format}], {plural(len(result.curve.points), 'point')}"]
    what = [f"model {c.model}" if c.model else "", f"precision {c.precision}" if c.precision else "",
            f"hardware {c.hardware}" if c.hardware else "", f"engine {c.engine}" if c.engine else "",
            f"tool {c.tool}" if c.tool else "", f"measured {c.date}" if c.date else ""]
    if any(what):
        lines.append("  " + ", ".join(w for w in what if w))
    if c.metrics:
        lines.append(f"  {c.metrics}")
    shape = (f"ISL/OSL {fmt_num(result.isl, 1)}/{fmt_num(result.osl, 1)} tokens" if result.isl is not None
             and result.osl is not None else "ISL/OSL unknown (no capacity per GPU)")
    lines.append(f"TPM {fmt_num(req.tpm, 0)} output tokens/min = {fmt_num(req.tpm / 60, 1)} tok/s, util "
                 f"{req.util:g}, {req.gpus_per_replica} GPU{'' if req.gpus_per_replica == 1 else 's'} per replica, reserves: failure {req.reserves.failure}, "
                 f"canary {req.reserves.canary}, {_warm_text(req)}; {shape}")
    if result.workload is not None:
        from .traffic import workload_lines

        lines.extend(workload_lines(result.workload))
        lines.append(f"the curve was measured at ISL/OSL {fmt_num(c.isl, 1)}/{fmt_num(c.osl, 1)} tokens")
    limits = []
    if req.ttft_limit_ms is not None:
        limits.append(f"TTFT <= {fmt_num(req.ttft_limit_ms)} ms")
    m = result.memory
    if m is not None:
        limits.append(f"KV cap {m.concurrency_cap} sequences ({m.model}, {m.kv_dtype}: "
                      f"{m.kv_bytes_per_token:,} B/token, {m.kv_budget_gib_per_gpu:.2f} GiB KV per GPU, "
                      f"{m.tokens_fit:,} tokens)")
    elif req.kv_cap is not None:
        limits.append(f"KV cap {fmt_num(req.kv_cap)} sequences")
    if limits:
        lines.append("limits: " + "; ".join(limits))
    p = result.pricing
    if p is not None:
        per_hour = "" if p.price == p.price_per_gpu_hour else f" = {p.price_per_gpu_hour.normalize():f} per GPU-hour"
        lines.append(f"price: {p.device} {p.region} {p.purchase_option}: {p.price} {p.currency} per {prose(p.per)}"
                     f"{per_hour}, in force at {iso(p.at)} ({p.book}@{p.version}, {p.source_url}); "
                     f"{p.hours_per_month} hours/month")
    lines.extend(result.repairs)
    lines.extend(result.warnings)
    return lines


def _ratio(x: float | None) -> str:
    """A share measured as a float (KV usage, utilisation) as a percentage."""
    return percent(None if x is None else Decimal(repr(x)))


def ops_table(rows: list[tuple[str, object]], title: str = "per replica, for operations") -> FitTable:
    """One row per (label, ops.Ops): the admission limit, the scale-out thresholds on waiting requests
    and on KV-cache usage, the headroom at the planned util, the load per replica as sized."""
    t = FitTable(title=title, title_justify="left", box=box.SIMPLE)
    t.add_column("", numeric=False)
    for name in ("admission limit", "scale out at waiting", "scale out at KV", "KV at admission", "replica tok/s",
                 "headroom tok/s", "load tok/s", "util as sized"):
        t.add_column(name)
    ops = [o for _, o in rows]
    cap, head, load = (figures((getattr(o, k) for o in ops), 1)
                       for k in ("capacity_tok_s", "headroom_tok_s", "load_tok_s"))
    for (label, o), c, h, ld in zip(rows, cap, head, load):
        t.add_row(label, count(o.admission_limit), count(o.queue_scale_out), _ratio(o.kv_scale_out),
                  _ratio(o.kv_at_admission), c, h, ld, _ratio(o.utilisation_as_sized))
    return t


def ops_lines(rows: list[tuple[str, object]]) -> list[str]:
    """How each threshold was derived, one line per row and signal."""
    out = []
    for label, o in rows:
        out.append(f"{label}: scale out at waiting: {o.queue_basis}")
        out.append(Hinted(f"{label}: KV: ", o.kv_basis))
    return out


def reserve_lines(result: SizingResult) -> list[str]:
    """The reserves beside each other, with the warm reserve's reason, one line per SLA."""
    out = []
    for r in result.rows:
        v = r.reserves
        why = f" ({r.warm_reason})" if r.warm_reason else ""
        out.append(f"reserves at SLA {fmt_num(r.sla_tok_s_user)}: failure {v.failure}, canary {v.canary}, "
                   f"warm {v.warm}{why}")
    return out


def sizing_as_table(result: SizingResult) -> FitTable:
    """SLA first: SLA -> c* -> tok/s/user -> replica tok/s -> replicas -> GPUs -> money a month."""
    priced = result.pricing is not None
    t = FitTable(title=f"{result.status}: GPUs for {fmt_num(result.request.tpm, 0)} TPM", title_justify="left",
                 caption="c* with ~ lies between measured points (DRAFT)" if result.status == "DRAFT" else None)
    for name in ("SLA tok/s/user", "c*", "tok/s/user", "replica tok/s", "basis", "limited by", "replicas",
                 "GPUs", f"{result.pricing.currency}/month" if priced else "$/month", "cap tok/GPU-s"):
        t.add_column(name, numeric=name not in ("basis", "limited by"))
    rows = result.rows
    sla, c_star, user, replica, cap = (figures(getattr(r, k) for r in rows) for k in (
        "sla_tok_s_user", "c_star", "tok_s_user", "replica_output_tok_s", "capacity_tokens_per_gpu_s"))
    for r, a, c, u, rep, k in zip(rows, sla, c_star, user, replica, cap):
        reps = f"{r.replicas_serving:,}+{r.replicas_reserve:,}" if r.replicas_reserve else count(r.replicas_serving)
        t.add_row(a, c + ("" if r.c_star_measured else "~"), u, rep, r.throughput_basis, r.limited_by, reps,
                  count(r.gpus), money(r.monthly_cost), k)
    return t


def comparison_as_table(base: SizingResult, alt: SizingResult, rows: tuple[ComparisonRow, ...]) -> FitTable:
    """The what-if: GPUs and money a month of the base and the alternative curve, and their deltas."""
    cur = base.pricing.currency if base.pricing is not None else "$"
    t = FitTable(title=f"what-if: {alt.curve.label} ({alt.status}) vs {base.curve.label} ({base.status})",
                 title_justify="left")
    for name in ("SLA tok/s/user", "GPUs base", "GPUs what-if", "delta GPUs", f"{cur}/month base",
                 f"{cur}/month what-if", f"delta {cur}/month"):
        t.add_column(name)
    sla = figures(d.sla_tok_s_user for d in rows)
    for d, a in zip(rows, sla):
        t.add_row(a, count(d.gpus_base), count(d.gpus_alt), count(d.delta_gpus, signed=True),
                  money(d.monthly_cost_base), money(d.monthly_cost_alt), money(d.delta_monthly_cost, signed=True))
    return t
