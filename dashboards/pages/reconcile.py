"""Bill reconciliation (finance): a run's priced cost beside the cloud bill, per pool, provider and category."""
from __future__ import annotations

from decimal import Decimal

import altair as alt
import pandas as pd
import streamlit as st
from pages import _common as ui
from pages import _layout

from ledger import dashboard as dd
from ledger.dashboard import reconcile as dr
from ledger.reconcile import ReconcileError

st.title("Bill reconciliation")
state = ui.ledger_state()
if not state.has_runs:
    ui.show_guidance(state)
    st.stop()
st.caption("The ledger's priced cost beside the bill's effective cost (after discounts and commitments), the same "
           "figures as `ledger reconcile`: difference = billed − priced, its share of the priced cost. Bills come "
           "in with `ledger ingest bill FILE...` (FinOps FOCUS); the map says which bill rows are which resource's.")


@st.cache_data(ttl=30, show_spinner=False)
def figures(url: str, run_id: str, name: str, raw: bytes) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict]:
    """The reconciliation of a run with a map (runs are immutable; a new bill batch shows within 30 s)."""
    bill_map = dr.read_map(name, raw)
    with dd.reading(url) as s:
        rec = dr.reconciliation(s, run_id, bill_map)
    return dr.resources_frame(rec), dr.unmatched_frame(rec), dr.drift_frame(rec), dr.totals(rec)


found = dr.home_map()
kinds = ["the ledger home's bill-map.toml", "upload a map"]
source = st.radio("Bill map", kinds, key="rc_source", horizontal=True, index=0 if found else 1,
                  help="A TOML file of [[pools]], [[providers]] and [[categories]] rules (docs/reconcile.md).")
if source == kinds[0]:
    if found is None:
        st.info("There is no `bill-map.toml` in the ledger home: upload a map, or write one there "
                "(docs/reconcile.md shows how).")
        st.stop()
    name, raw = found
else:
    up = st.file_uploader("Bill map (TOML)", type=["toml"], key="rc_upload")
    if up is None:
        st.info("Upload a bill map (TOML), or keep one as `bill-map.toml` in the ledger home.")
        st.stop()
    name, raw = up.name, up.getvalue()

with dd.reading(state.url) as s:
    run = ui.pick_run(s, state, "rc")
if run is None:
    st.stop()
try:
    resources, unmatched, drift, tot = figures(state.url, run.run_id, name, raw)
except ReconcileError as e:
    ui.show_problems(e.problems, title="Cannot reconcile")
    st.stop()

f = ui.fmt(tot["currency"])
true_up = " (a true-up run: its variance lines are left out)" if tot["run_true_up"] else ""
st.markdown(f"Run `{tot['run_id']}`{true_up} · {tot['currency']} · bill batches "
            f"{', '.join(tot['bill_batches']) or 'none'} ({f.count(tot['bill_rows'])} rows) · map `{tot['map']}`")
if not tot["bill_rows"]:
    st.info("No bill row counts in this period: ingest the bill with `ledger ingest bill FILE...`.")
for warning in tot["warnings"]:  # a partial bill, a map rule naming a pool or provider the ledger lacks
    st.warning(warning)

with st.container(key="rc_tiles", horizontal=True):
    st.metric("Priced", f.money(tot["priced"]), border=True,
              help="The run's cost of the resources the bill covers.")
    st.metric("Billed", f.money(tot["billed"]), border=True,
              help="The bill's effective cost in the period, unmatched rows included.")
    st.metric("Variance (billed − priced)", f.money(tot["variance"]), border=True,
              help=f"{f.pct(tot['share'])} of the priced cost." if tot["share"] is not None else None)
    st.metric("Unmatched bill cost", f.money(tot["unmatched"]), border=True,
              help="Bill rows no rule of the map places: listed below, never dropped.")
    st.metric("Trued-up total", f.money(tot["trued_up_total"]), border=True,
              help=f"What `ledger allocate --true-up` books: the run total {f.money(tot['run_total'])} + the "
                   f"variance; the resources not billed ({f.money(tot['not_billed'])}) keep their priced cost.")


st.subheader("Per pool, provider and category")
billed = resources[resources["billed"].notna()]
if not billed.empty:
    long = pd.concat([billed.assign(side="priced", amount=billed["priced"]),
                      billed.assign(side="billed", amount=billed["billed"])])
    long["resource"] = long["kind"] + " " + long["name"]
    chart = ui.floats(long[["resource", "side", "amount"]], ["amount"])
    chart["shown"] = long["amount"].map(f.money).to_numpy()
    ui.chart(alt.Chart(chart).mark_bar().encode(
        y=alt.Y("resource:N", title=None), x=alt.X("amount:Q", axis=ui.money_axis(tot["currency"], "cost")),
        yOffset=alt.YOffset("side:N", sort=["priced", "billed"]),
        color=alt.Color("side:N", sort=["priced", "billed"], title=None),
        tooltip=["resource:N", "side:N", alt.Tooltip("shown:N", title="amount")]), tot["currency"], key="rc_chart")
def money_total(column: str) -> list[str]:
    """A money column and its total, display-rounded (docs/exports.md): the cells add up to the total
    as shown; a resource the bill does not cover shows a dash and counts as nothing."""
    cells, total = f.money_column([None if v is None or pd.isna(v) else v for v in resources[column]])
    return [*cells, total]


def _exact_sum(column: str, rows=None):
    rows = resources if rows is None else rows
    return sum((v for v in rows[column] if v is not None and not pd.isna(v)), Decimal(0))


covered = resources[resources["billed"].notna()]
total_share = _exact_sum("difference", covered) / _exact_sum("priced", covered) if _exact_sum("priced", covered) else None
_layout.table_in_parts(pd.DataFrame({
    "resource": [*(resources["kind"] + " " + resources["name"]), "total"], "priced": money_total("priced"),
    "billed": money_total("billed"), "difference": money_total("difference"),
    "share": [*(f.pct(v) if v is not None and not pd.isna(v) else f"undefined: {why}"
                for v, why in zip(resources["share"], resources["undefined_because"], strict=True)),
              f.pct(total_share) if total_share is not None else "—"],
    "corrections": money_total("corrections"),
    "rows": [f.count(n) for n in [*resources["rows"], int(resources["rows"].sum())]],
    "coverage": [*("—" if pd.isna(hp) else "no hour priced" if not hp else
                   f"{f.pct(c)} ({f.count(int(hb))}/{f.count(int(hp))} h)"
                   for c, hb, hp in zip(resources["coverage"], resources["hours_billed"], resources["hours_priced"],
                                        strict=True)), ""]}),
    "rc_resources", [["priced", "billed", "difference", "share"], ["corrections", "rows", "coverage"]], table=ui.table,
    max_rows=len(resources) + 1)
st.caption("The totals row: the resources of the bill map above (the bill's unmatched rows are apart, below); "
           "each money column adds up to its total as shown, and the share is the billed resources' difference "
           "over their priced cost.")

st.subheader("Unmatched bill rows")
if unmatched.empty:
    st.caption("Every bill row of the period is placed by a rule.")
else:
    frame = pd.DataFrame({**{c: unmatched[c].fillna("") for c in dr.UNMATCHED_COLUMNS[:5]},
                          "rows": unmatched["rows"].map(f.count),
                          "effective cost": unmatched["effective_cost"].map(f.money),
                          "billed cost": unmatched["billed_cost"].map(f.money)})
    _layout.table_in_parts(frame, "rc_unmatched", [["service_name", "rows", "effective cost", "billed cost"],
                                                   ["service_category", "resource_id", "charge_category"]],
                           table=ui.table)

st.subheader("Reported cost vs the book, per model")
if drift.empty:
    st.caption("No provider request of the period carries a reported cost (a gateway's or tracer's own cost).")
else:
    ui.table(pd.DataFrame({"provider": drift["provider"], "model": drift["model"],
                           "requests": drift["requests"].map(f.count),
                           "ours (book)": f.unit_column(drift["ours"]),
                           "reported": f.unit_column(drift["reported"]),
                           "difference": f.unit_column(drift["difference"]),
                           "share": [f.pct(v) if v is not None and not pd.isna(v) else "undefined"
                                     for v in drift["share"]]}), "rc_drift")
for note in tot["notes"]:
    st.caption(f"Note: {note}")
