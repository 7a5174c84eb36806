"""Forecast vs actual: a plan's month beside the allocation run of that month, per category and pool."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from pages import _common as ui

from ledger import dashboard as dd
from ledger.budget import BudgetError

st.title("Forecast vs actual")
state = ui.ledger_state()
if not state.has_runs:
    ui.show_guidance(state)
    st.stop()
st.caption("A month of a plan's forecast beside the allocation run of that month: error = actual − forecast "
           "(positive: spent more than forecast), relative to the forecast. The same as `ledger budget compare`.")

books = ui.price_books(state)
source = ui.pick_plan("fa")
if source is None:
    st.stop()
try:
    plan = ui.plan_of(source)
except BudgetError as e:
    ui.show_problems(e.problems, title=f"{source.name} cannot be read")
    st.stop()

with dd.reading(state.url) as s:
    run = ui.pick_run(s, state, "fa")
    if run is None:
        st.stop()
    names = [sc.name for sc in plan.scenarios]
    scenario = st.selectbox("Forecast scenario", names, index=names.index("base") if "base" in names else 0,
                            key="fa_scenario")
    if run["period"] not in plan.months:
        ui.show_problems(f"run {run.run_id[:12]} covers {run['period']}, which is not a month of plan {plan.name} "
                         f"({plan.months[0]} to {plan.months[-1]}): pick another period or plan",
                         title="Nothing to compare")
        st.stop()
    try:
        frame, meta = ui.comparison(s, state, run.run_id, source, books, scenario)
    except BudgetError as e:
        ui.show_problems(e.problems, title="Cannot compare")
        st.stop()

f = ui.fmt(meta["currency"])
total = frame[frame["dimension"] == "total"].iloc[0]
badge = ":orange-badge[DRAFT]" if meta["status"] == "DRAFT" else ":green-badge[VERDICT]"
st.markdown(f"**{plan.name}**, scenario **{scenario}**, month **{meta['month']}** against run "
            f"`{meta['run_id']}` · {meta['currency']} · sizing {badge} · forecast priced with "
            f"{meta['priced_with']}")

matching = meta.get("matching")
if matching is not None:
    with st.container(key="fa_matching"):
        shared = "; ".join(f"{words}: {', '.join(matching[dim]) or 'none'}" for dim, words in
                           (("pools", "pools"), ("provider_models", "provider models"), ("categories", "categories")))
        if matching["complete"]:
            st.caption(f"The plan and the run name the same things. In both: {shared}.")
        else:
            st.warning("**Only part of the plan matches the run**: what one side has alone is compared with 0.\n\n"
                       + "\n".join(f"- {w}" for w in matching["warnings"]) + f"\n\nIn both: {shared}.",
                       icon=":material/warning:")

with st.container(key="fa_tiles", horizontal=True):
    st.metric("Forecast", f.money(total["forecast"]), border=True)
    st.metric("Actual", f.money(total["actual"]), border=True, help="The run's total: every line of the allocation.")
    st.metric("Error (actual − forecast)", f.money(total["error"]), border=True)
    st.metric("Error relative to forecast", f.pct(total["relative_error"]) if total["relative_error"] is not None
              else "undefined", border=True, help=total["reason"] or None)


def shown(rows: pd.DataFrame, label: str) -> pd.DataFrame:
    return pd.DataFrame({
        label: rows["key"].str.replace("_", " "), "forecast": rows["forecast"].map(f.money),
        "actual": rows["actual"].map(f.money), "error": rows["error"].map(f.money),
        "error %": [f.pct(v) if v is not None and not pd.isna(v) else f"undefined: {why}"
                    for v, why in zip(rows["relative_error"], rows["reason"], strict=True)]})


categories = frame[frame["dimension"] == "category"]
present = categories[(categories["forecast"] != 0) | (categories["actual"] != 0)]
long = pd.concat([present.assign(side="forecast", amount=present["forecast"]),
                  present.assign(side="actual", amount=present["actual"])])
chart = ui.floats(long[["key", "side", "amount"]], ["amount"])
chart["shown"] = long["amount"].map(f.money).to_numpy()
st.subheader("Per category")
ui.chart(alt.Chart(chart).mark_bar().encode(
    y=alt.Y("key:N", title=None, sort=list(present["key"])),
    x=alt.X("amount:Q", axis=ui.money_axis(meta["currency"], "cost")),
    yOffset=alt.YOffset("side:N", sort=["forecast", "actual"]),
    color=alt.Color("side:N", sort=["forecast", "actual"], title=None),
    tooltip=["key:N", "side:N", alt.Tooltip("shown:N", title="amount")]), meta["currency"], key="fa_chart")
ui.table(shown(categories, "category"), "fa_categories")
st.subheader("Per pool (GPU)")
ui.table(shown(frame[frame["dimension"] == "pool"], "pool"), "fa_pools")
st.caption(f"Run price books: {', '.join(meta['run_price_books']) or 'none'}. Forecast price books: "
           f"{', '.join(meta['forecast_price_books'])}.")
