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

with st.container(key="fa_tiles", horizontal=True):  # as shown: the error is the shown actual − the shown forecast
    st.metric("Forecast", f.money_at(total["forecast_shown"], f.places), border=True)
    st.metric("Actual", f.money_at(total["actual_shown"], f.places), border=True,
              help="The run's total: every line of the allocation.")
    st.metric("Error (actual − forecast)", f.money_at(total["error_shown"], f.places), border=True)
    st.metric("Error relative to forecast", f.pct(total["relative_error"]) if total["relative_error"] is not None
              else "undefined", border=True, help=total["reason"] or None)


def shown(rows: pd.DataFrame, label: str) -> pd.DataFrame:
    """The rows as shown: amounts display-rounded (the categories add up to their total row; an error
    is its shown actual − its shown forecast), as `ledger budget compare` prints them."""
    def money(col: str) -> list[str]:
        return [f.money_at(v, f.places) for v in rows[f"{col}_shown"]]

    return pd.DataFrame({
        label: rows["key"].str.replace("_", " "), "forecast": money("forecast"), "actual": money("actual"),
        "error": money("error"),
        "error %": [f.pct(v) if v is not None and not pd.isna(v) else f"undefined: {why}"
                    for v, why in zip(rows["relative_error"], rows["reason"], strict=True)]})


categories = frame[frame["dimension"] == "category"]
totals_row = frame[frame["dimension"] == "total"].assign(key="total")
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
ui.table(shown(pd.concat([categories, totals_row]), "category"), "fa_categories", max_rows=11)
st.subheader("Per pool (GPU)")
ui.table(shown(frame[frame["dimension"] == "pool"], "pool"), "fa_pools")

st.subheader("Why the forecast missed")
drivers = meta["drivers"]
if drivers is None:
    st.caption("No breakdown: the month's usage could not be read from the facts.")
else:
    st.caption(f"The error split into drivers, substituted top to bottom (traffic, output length, cache-hit "
               f"rate, fleet, prices, then what no driver describes), each pool's TPM at its "
               f"{meta['tpm_statistic']}: every column adds up to its error, every row to its total, as "
               f"`ledger budget compare` prints it (docs/budgets.md).")
    ui.table(pd.DataFrame({"driver": drivers["driver"],
                           **{c: [f.money_at(v, f.places) for v in drivers[c]] for c in drivers.columns[1:]}}),
             "fa_drivers")
    with st.container(key="fa_drivers_notes"):
        for line in meta["drivers_notes"]:
            st.caption(line)
st.caption(f"Run price books: {', '.join(meta['run_price_books']) or 'none'}. Forecast price books: "
           f"{', '.join(meta['forecast_price_books'])}.")
