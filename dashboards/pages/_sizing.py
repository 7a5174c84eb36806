"""The sizing inputs of the sizing page: where they start, and how they follow the curve source.

The inputs live in ``st.session_state`` under ``sz_*`` keys. They are set once per curve source
(:func:`follow_source`): a plan's pool brings its own parameters (TPM, SLAs, replica size, util,
reserves, device and price key); a curve without a plan (anchors, uploaded result files) starts from
what ``ledger size`` assumes when an option is not given, so nothing a pool set is carried over to
another curve.
"""
from __future__ import annotations

import streamlit as st
from pages import _common as ui

from ledger import dashboard as dd

NOT_PRICED = "(not priced)"
#: How the sizing page words the hints of what the library says (:mod:`ledger.hints`): its own inputs
#: where ``ledger size`` names its options.
NAMES = {"repair": "tick “Repair the curve”", "curve_format": "pick its format",
         "curve_select": "pick one with “Pick a curve” (a piece of its source, model or workload)"}
#: TPM a curve without a plan starts from (``ledger size`` requires --tpm: a round starting point).
START_TPM = 300000.0
SOURCE_KEY = "sz_curve_source"


def choose(container, label: str, options: list, key: str, default=None, **kwargs):
    """A selectbox whose kept value is dropped when it is no longer an option (e.g. another device)."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else options[0]
    return container.selectbox(label, options, key=key, **kwargs)


def measured_slas(curve) -> str:
    """SLAs at which each measured point just qualifies (its tok/s/user, rounded down), at most 8."""
    values = sorted({int(p.tok_s_user) for p in curve.points if p.tok_s_user >= 1})
    if len(values) > 8:
        step = (len(values) - 1) / 7
        values = sorted({values[round(i * step)] for i in range(8)})
    return ",".join(str(v) for v in values)


def apply_pool(pool) -> None:
    """Take the plan pool's parameters (TPM, SLAs, replica size, util, reserves, device and price key)."""
    own = [pool.sla] if pool.sla is not None else [t.sla for t in pool.tiers]  # a tiered pool: its tiers' SLAs
    slas = sorted({*(float(x) for x in measured_slas(pool.curve).split(",") if x), *(float(v) for v in own)})
    st.session_state.update({
        "sz_tpm": float(pool.tpm), "sz_gpr": int(pool.gpus_per_replica), "sz_util": float(pool.util),
        "sz_failure": pool.reserves.failure, "sz_canary": pool.reserves.canary, "sz_warm": pool.reserves.warm,
        "sz_interpolate": pool.interpolate, "sz_repair": pool.repair, "sz_ttft": float(pool.ttft_ms or 0),
        "sz_device": pool.device, "sz_region": pool.region, "sz_option": pool.purchase_option,
        "sz_slas": ",".join(f"{v:g}" for v in slas)})


def apply_defaults(curve=None) -> None:
    """``ledger size``'s defaults (util, reserves, no interpolation, no repair, no TTFT limit, not
    priced), with the curve's replica size and the SLAs of its measured points when there is a curve."""
    d = dd.sizing_defaults()
    st.session_state.update({
        "sz_tpm": START_TPM, "sz_gpr": int((curve.context.gpus_per_replica if curve else None) or 1),
        "sz_util": float(d["util"]), "sz_failure": d["failure"], "sz_canary": d["canary"], "sz_warm": d["warm"],
        "sz_interpolate": d["interpolate"], "sz_repair": d["repair"], "sz_ttft": float(d["ttft_ms"] or 0),
        "sz_device": NOT_PRICED, "sz_slas": measured_slas(curve) if curve else "50"})
    for key in ("sz_region", "sz_option"):
        st.session_state.pop(key, None)


def follow_source(identity: tuple, pool=None, curve=None) -> None:
    """Set the inputs for the curve source `identity` (kind, then what names the curve) when it is
    not the one they were set for, or when they were dropped (back from another page)."""
    if st.session_state.get(SOURCE_KEY) == identity and "sz_tpm" in st.session_state:
        return
    if pool is not None:
        apply_pool(pool)
    else:
        apply_defaults(curve)
    st.session_state[SOURCE_KEY] = identity


def plan_pools(name: str):
    plans = {p.name: p for p in dd.example_plans()}
    path = plans[name]
    plan = ui.plan_of(ui.PlanSource(name, path.read_text(encoding="utf-8"), str(path.parent)))
    return {p.name: p for p in plan.pools}


def on_plan() -> None:
    """Another plan: its first pool (whose parameters :func:`follow_source` then takes)."""
    pools = plan_pools(st.session_state["sz_plan"])
    if pools:
        st.session_state["sz_pool"] = next(iter(pools))
