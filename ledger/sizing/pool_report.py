"""A pool sized in parts (tiers, disaggregated prefill/decode): `pool_as_dict` (JSON), `pool_lines` and
`pool_as_table` (rich): every tier and role, the reserves of each role with their reasons, and the sum."""
from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal

from ..formats import count, figures, money, percent
from ..instants import iso
from ..tables import FitTable
from ..units import prose
from .curve import fmt_num
from .report import curve_as_dict, ops_as_dict, ops_lines, ops_table, workload_as_dict
from .tiers import PoolResult, describe_tier


def _money(d) -> str | None:
    from ledger.money import fmt

    return None if d is None else fmt(d)


def _prefill_dict(c) -> dict | None:
    if c is None:
        return None
    x = c.context
    return {"source": x.source, "model": x.model, "hardware": x.hardware, "gpus_per_replica": x.gpus_per_replica,
            "isl": x.isl, "osl": x.osl, "engine": x.engine, "workload": x.workload, "tool": x.tool, "format": x.format,
            "metrics": x.metrics,
            "measured_points": [{"input_tok_s": p.input_tok_s, "ttft_ms": p.ttft_ms, "load": p.load, "label": p.label}
                                for p in c.points],
            "dropped_points": [{"input_tok_s": p.input_tok_s, "ttft_ms": p.ttft_ms, "label": p.label}
                               for p in c.dropped]}


def _part_label(p) -> str:
    return " ".join(x for x in (p.tier, p.role if p.role != "serving" else "") if x) or "all"


def pool_as_dict(result: PoolResult) -> dict:
    """The JSON report of a pool in parts: money as decimal strings, shares as decimal strings,
    physical quantities as numbers; `totals` are the exact sums of the parts and reserves."""
    req = result.request
    parts = [{"tier": p.tier or None, "role": p.role, "share": str(p.share), "tpm": p.tpm, "rate_tok_s": p.rate_tok_s,
              "rate_unit": "input tok/s" if p.role == "prefill" else "output tok/s",
              "sla_tok_s_user": p.sla_tok_s_user, "c_star": p.c_star, "tok_s_user": p.tok_s_user,
              "ttft_limit_ms": p.ttft_limit_ms, "ttft_ms": p.ttft_ms, "replica_tok_s": p.replica_tok_s,
              "measured": p.measured, "basis": p.basis, "limited_by": p.limited_by, "replicas": p.replicas,
              "gpus_per_replica": p.gpus_per_replica, "gpus": p.gpus, "monthly_cost": _money(p.monthly_cost),
              "ops": ops_as_dict(p.ops)} for p in result.parts]
    reserves = [{"role": r.role, "kind": r.kind, "replicas": r.replicas, "gpus_per_replica": r.gpus_per_replica,
                 "gpus": r.gpus, "reason": r.reason, "monthly_cost": _money(r.monthly_cost)} for r in result.reserves]
    roles = sorted({p.role for p in result.parts}, key=("prefill", "decode", "serving").index)
    out = {"status": result.status, "mode": "disaggregated" if result.prefill_curve is not None else "tiers",
           "curve": curve_as_dict(result.curve), "prefill_curve": _prefill_dict(result.prefill_curve),
           "tpm": req.tpm, "util": req.util, "gpus_per_replica": req.gpus_per_replica,
           "prefill_gpus_per_replica": (req.prefill_gpus_per_replica or req.gpus_per_replica)
           if result.prefill_curve is not None else None,
           "interpolate": req.interpolate, "ttft_limit_ms": req.ttft_limit_ms, "kv_cap": req.kv_cap,
           "isl": result.isl, "osl": result.osl, "time_to_ready_min": req.time_to_ready_min, "rise_tpm": req.rise_tpm,
           "tiers": [{"name": t.name or None, "share": str(t.share), "sla_tok_s_user": t.sla, "ttft_ms": t.ttft_ms}
                     for t in req.tiers],
           "parts": parts, "reserves": reserves,
           "totals": {"by_role": {role: {"serving": result.replicas(role, reserve=False),
                                         "reserve": result.replicas(role) - result.replicas(role, reserve=False),
                                         "replicas": result.replicas(role)} for role in roles},
                      "replicas": result.replicas(), "gpus": result.gpus, "monthly_cost": _money(result.monthly_cost)},
           "xpyd": result.ratio, "xpyd_with_reserves": result.ratio_with_reserves, "repairs": list(result.repairs), "warnings": list(result.warnings),
           "workload": workload_as_dict(result.workload), "memory": None, "pricing": None}
    if result.memory is not None:
        out["memory"] = asdict(result.memory)
    p = result.pricing
    if p is not None:
        out["pricing"] = {"device": p.device, "region": p.region, "purchase_option": p.purchase_option,
                          "at": p.at.isoformat(), "hours_per_month": str(p.hours_per_month), "price": str(p.price),
                          "per": p.per, "currency": p.currency,
                          "price_per_gpu_hour": format(p.price_per_gpu_hour.normalize(), "f"),
                          "book": p.book, "version": p.version, "source_url": p.source_url}
    return out


def pool_lines(result: PoolResult) -> list[str]:
    """The context above the table: mode, curves, traffic, tiers, limits, price, repairs, warnings."""
    from ledger.formats import plural

    from .traffic import workload_lines

    req, c = result.request, result.curve.context
    mode = ("DRAFT: interpolated between measured points" if result.status == "DRAFT" else
            "VERDICT: measured points only")
    kind = "disaggregated prefill/decode" if result.prefill_curve is not None else "SLA tiers"
    lines = [f"SLA-first sizing in parts ({kind}), {mode}",
             f"{'decode ' if result.prefill_curve is not None else ''}curve: {result.curve.label} [{c.format}], "
             f"{plural(len(result.curve.points), 'point')}"
             + (f"; ISL/OSL {fmt_num(c.isl, 1)}/{fmt_num(c.osl, 1)}" if c.isl is not None else "")]
    if result.prefill_curve is not None:
        pc = result.prefill_curve
        lines.append(f"prefill curve: {pc.label} [{pc.context.format}], {plural(len(pc.points), 'point')}"
                     + (f"; ISL {fmt_num(pc.context.isl, 1)}" if pc.context.isl is not None else "")
                     + (f"; {pc.context.metrics}" if pc.context.metrics else ""))
    shape = (f"ISL/OSL {fmt_num(result.isl, 1)}/{fmt_num(result.osl, 1)} tokens" if result.isl is not None
             and result.osl is not None else "ISL/OSL unknown")
    lines.append(f"TPM {fmt_num(req.tpm, 0)} output tokens/min = {fmt_num(req.tpm / 60, 1)} tok/s, util {req.util:g}, "
                 f"{req.gpus_per_replica} GPUs per {'decode ' if result.prefill_curve is not None else ''}replica"
                 + (f", {req.prefill_gpus_per_replica or req.gpus_per_replica} per prefill replica"
                    if result.prefill_curve is not None else "") + f"; {shape}")
    if result.workload is not None:
        lines.extend(workload_lines(result.workload))
    if any(t.name for t in req.tiers):
        lines.append("tiers: " + "; ".join(describe_tier(t) for t in req.tiers))
    if req.ttft_limit_ms is not None:
        lines.append(f"TTFT limit {fmt_num(req.ttft_limit_ms)} ms (a tier's own limit comes first)")
    p = result.pricing
    if p is not None:
        lines.append(f"price: {p.device} {p.region} {p.purchase_option}: {p.price} {p.currency} per {prose(p.per)}, in "
                     f"force at {iso(p.at)} ({p.book}@{p.version}, {p.source_url}); {p.hours_per_month} hours/month")
    return lines + list(result.repairs) + list(result.warnings)


def pool_as_table(result: PoolResult) -> FitTable:
    """Every tier and role, then each role's reserves with their reasons, then the sum."""
    cur = result.pricing.currency if result.pricing else "$"
    t = FitTable(title=f"{result.status}: GPUs for {fmt_num(result.request.tpm, 0)} TPM"
                 + (f", {result.ratio} serving" if result.ratio else ""), title_justify="left")
    for name in ("part", "share", "demand tok/s", "SLA tok/s/user", "TTFT limit", "c*", "replica tok/s",
                 "limited by", "replicas", "GPUs", f"{cur}/month"):
        t.add_column(name, numeric=name not in ("part", "limited by"))
    parts = result.parts
    rate, sla, ttft, c_star, replica = (figures(getattr(p, k) for p in parts) for k in (
        "rate_tok_s", "sla_tok_s_user", "ttft_limit_ms", "c_star", "replica_tok_s"))
    for p, ra, sl, tt, c, rep in zip(parts, rate, sla, ttft, c_star, replica):
        unit = " in" if p.role == "prefill" else ""
        t.add_row(_part_label(p), percent(p.share), ra + unit, sl, tt,
                  c + ("" if p.measured or p.c_star is None else "~"), rep + unit, p.limited_by, count(p.replicas),
                  count(p.gpus), money(p.monthly_cost))
    for r in result.reserves:
        label = f"{r.role} {r.kind} reserve" if r.role != "serving" else f"{r.kind} reserve"
        t.add_row(label, "", "", "", "", "", "", "", count(r.replicas), count(r.gpus), money(r.monthly_cost))
    t.add_row("sum", percent(Decimal(1)), "", "", "", "", "", "", count(result.replicas()), count(result.gpus),
              money(result.monthly_cost), style="bold")
    return t


def pool_reserve_lines(result: PoolResult) -> list[str]:
    """Each reserve with its reason (the warm reserve's rise and arithmetic)."""
    return [f"{r.role + ' ' if r.role != 'serving' else ''}{r.kind} reserve {r.replicas}: {r.reason}"
            for r in result.reserves]


def pool_ops(result: PoolResult) -> tuple[FitTable, list[str]]:
    """The operations table of a pool in parts and how each threshold was derived."""
    rows = [(_part_label(p), p.ops) for p in result.parts]
    return ops_table(rows), ops_lines(rows)
