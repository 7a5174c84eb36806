"""Trend (finance and product owners): month over month, each month's current run, cost per tenant and
both costs per successful task, with the change from the month before."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from pages import _common as ui

from ledger import dashboard as dd

st.title("Trend")
state = ui.ledger_state()
if not state.has_runs:
    ui.show_guidance(state)
    st.stop()


@st.cache_data(max_entries=16, show_spinner=False)
def trend(_s, url: str, first: str, last: str, by: str, runs_key: tuple) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The trend's months and rows (``ledger report trend --json``), cached per run set."""
    return dd.trend_frames(_s, first=first, last=last, by=by)


with dd.reading(state.url) as s:
    runs = ui.runs(s, state.url)
    months = dd.run_months(runs)
    if not months:
        st.info("No run of a calendar month yet: the trend compares the current runs of months "
                "(`ledger allocate --period 2026-10`).")
        st.stop()
    with st.container(key="tr_range", horizontal=True):
        first = st.selectbox("From", months, index=max(0, len(months) - 12), key="tr_from")
        last = st.selectbox("To (included)", months, index=len(months) - 1, key="tr_to")
    if first > last:
        st.warning(f"From {first} is after To {last}: pick a first month before the last.")
        st.stop()
    by_month, rows = trend(s, state.url, first, last, "tenant", tuple(runs["run_id"]))

with_run = by_month[by_month["status"] == "run"]
currency = with_run["currency"].iloc[0] if len(with_run) else "USD"
f = ui.fmt(currency)
st.caption(f"The current run of each month from {first} to {last} (`ledger report trend --from {first} --to {last} "
           f"--json`) · {currency} · change: from the month before, whose run is read even before {first}.")

# ---- the last month, and the months -------------------------------------------------------------
if len(with_run):
    latest = with_run.iloc[-1]
    with st.container(key="tr_tiles", horizontal=True):
        st.metric(f"Run total {latest['month']}", f.money(latest["total"]), border=True,
                  delta=None if pd.isna(latest["total_change_ratio"]) or latest["total_change_ratio"] is None
                  else f.pct(latest["total_change_ratio"]), delta_color="off",
                  help="Every line of the month's current run; the change is from the month before.")
        all_in = latest["cost_per_successful_task_all_in"]
        st.metric("All-in cost per successful task", f.unit_money(all_in) if all_in is not None else "undefined",
                  border=True, delta=None if latest["all_in_change_ratio"] is None
                  or pd.isna(latest["all_in_change_ratio"]) else f.pct(latest["all_in_change_ratio"]),
                  delta_color="off", help=f"All-in: {dd.ALL_IN_DEFINITION}.")
        st.metric("Successful tasks", f.count(latest["successful_tasks"]), border=True)
per_success = f.unit_column(by_month["cost_per_successful_task_all_in"])
shown = pd.DataFrame({
    "month": by_month["month"],
    "run": [r[:12] if isinstance(r, str) else "no run" for r in by_month["run_id"]],
    "run total": [f.money(v) if st_ == "run" else "—" for v, st_ in zip(by_month["total"], by_month["status"])],
    "change": by_month["total_change_ratio"].map(f.pct),
    "successful tasks": [f.count(v) if st_ == "run" else "—" for v, st_ in zip(by_month["successful_tasks"],
                                                                                by_month["status"])],
    "all-in per success": [p if v is not None and not pd.isna(v) else ("—" if st_ != "run" else "undefined")
                           for p, v, st_ in zip(per_success, by_month["cost_per_successful_task_all_in"],
                                                by_month["status"])],
    "change ": by_month["all_in_change_ratio"].map(f.pct)})
st.subheader("Month by month")
ui.table(shown, "tr_months", help={"all-in per success": "the run total ÷ every successful task of the run",
                                   "change": "change of the run total from the month before",
                                   "change ": "change of the all-in cost per successful task"})
missing = list(by_month.loc[by_month["status"] != "run", "month"])
if missing:
    st.caption(f"No run for {', '.join(missing)}: allocate the month to see it here.")

# ---- per tenant: charts -------------------------------------------------------------------------
tenants = sorted({k for k in rows["key"] if isinstance(k, str)})
order = list(by_month["month"])
left, right = st.columns(2)
colors = alt.Color("tenant:N", scale=alt.Scale(domain=tenants), title="tenant")
cost = ui.floats(rows[rows["key"].map(lambda k: isinstance(k, str))].rename(columns={"key": "tenant"}),
                 ["cost", "cost_per_successful_task"])
cost["shown"] = rows.loc[cost.index, "cost"].map(f.money)
cost["per"] = rows.loc[cost.index, "cost_per_successful_task"].map(f.unit_money)
with left:
    st.subheader("Cost per tenant")
    ui.chart(alt.Chart(cost).mark_line(point=True)
             .encode(x=alt.X("month:O", sort=order, title="month"),
                     y=alt.Y("cost:Q", axis=ui.money_axis(currency, "cost")), color=colors,
                     tooltip=[alt.Tooltip("month:O"), alt.Tooltip("tenant:N"), alt.Tooltip("shown:N", title="cost")]),
             currency, key="tr_cost_chart")
with right:
    st.subheader("Cost per successful task (own cost)")
    ui.chart(alt.Chart(cost.dropna(subset=["cost_per_successful_task"])).mark_line(point=True)
             .encode(x=alt.X("month:O", sort=order, title="month"),
                     y=alt.Y("cost_per_successful_task:Q", axis=ui.money_axis(currency, "per success", unit=True)),
                     color=colors,
                     tooltip=[alt.Tooltip("month:O"), alt.Tooltip("tenant:N"),
                              alt.Tooltip("per:N", title="own cost per success")]),
             currency, key="tr_per_chart")

# ---- per tenant: the table ----------------------------------------------------------------------
st.subheader("Per tenant")
table = {"tenant": [*tenants, "all tenants"]}
for i, m in enumerate(order):
    ok = by_month.loc[by_month["month"] == m, "status"].iloc[0] == "run"
    here = rows[rows["month"] == m].set_index("key")
    values = [here.loc[t, "cost"] if t in here.index else None for t in tenants]
    cells, total = f.money_column(values)
    table[m] = ([c if v is not None else ("not in run" if ok else "no run") for c, v in zip(cells, values)]
                + [total if ok else "no run"])
    if i:
        table[f"change {m}"] = [f.pct(here.loc[t, "cost_change_ratio"]) if t in here.index else "—"
                                for t in tenants] + [""]
    per = f.unit_column([here.loc[t, "cost_per_successful_task"] if t in here.index else None for t in tenants])
    table[f"per success {m}"] = [p if t in here.index else "—" for p, t in zip(per, tenants)] + [""]
ui.tables(pd.DataFrame(table), "tr_tenants", per=4, max_rows=len(tenants) + 1)  # whole at 1024 px
st.caption(f"Cost: each month's column adds up to its total as printed. Per success: the tenant's own cost ÷ its "
           f"own successful tasks ({dd.OWN_DEFINITION}). Not in run: the month's run has no line of that tenant "
           "(a tenant first seen later); change: from the month before, — when there is none.")
