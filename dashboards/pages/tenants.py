"""Tenants side by side (product owners): cost, cost per success, tokens, GPU share, failure rate, trend."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from pages import _common as ui

from ledger import dashboard as dd

st.title("Tenants side by side")
state = ui.ledger_state()
if not state.has_runs:
    ui.show_guidance(state)
    st.stop()

with dd.reading(state.url) as s:
    run = ui.pick_run(s, state, "tn")
    if run is None:
        st.stop()
    url, run_id = state.url, run.run_id
    names = ui.tenant_names(s, url, run_id)
    if len(names) < 2:
        st.info(f"Run `{run_id[:12]}` has {len(names)} tenant{'s' if len(names) != 1 else ''} with cost: "
                "a comparison needs two or more.")
        st.stop()
    picked = st.multiselect("Tenants to compare (two or more; the biggest by cost come first)", names,
                            default=names[:3], key="tn_pick")
    if len(picked) < 2:
        st.info("Pick two or more tenants to compare them side by side.")
        st.stop()
    frame = ui.tenants(s, url, run_id, tuple(picked))
    daily = ui.tenant_daily(s, url, run_id, tuple(picked))
    head = ui.headline(s, url, run_id).iloc[0]

currency = head["currency"]
f = ui.fmt(currency)
st.caption(f"Run `{run_id}` · {run['period']} · {currency} · the numbers of "
           f"`ledger report tenants --run {run_id[:12]} --tenants {','.join(picked)}`. Share of GPU is of all the "
           f"run's GPU cost (idle included); failure rate is failed ÷ decided tasks.")

# ---- the two costs per successful task, each with its definition --------------------------------
OWN = "cost per successful task (own cost)"
all_in = head["cost_per_successful_task_all_in"]
all_in_defined = all_in is not None and not pd.isna(all_in)
all_in_worked = (f"{f.unit_money(all_in)} = run total {f.money(head['total'])} ÷ "
                 f"{f.count(head['successful_tasks'])} successful tasks" if all_in_defined
                 else f"undefined: {head['cost_per_successful_task_all_in_reason']}")
with st.container(key="tn_per_success", horizontal=True):
    st.metric("All-in cost per successful task (whole run)", f.unit_money(all_in) if all_in_defined else "undefined",
              border=True, help=(f"{all_in_worked}. All-in: {head['all_in_definition']}.").replace("$", "\\$"))
    with st.container(key="tn_per_success_definitions"):
        st.markdown(f"**All-in cost per successful task**: {all_in_worked}. *All-in* = "
                    f"{head['all_in_definition']}.".replace("$", "\\$"))
        st.markdown(f"**{OWN[0].upper() + OWN[1:]}**, on each card and in the table: {head['own_definition']}.")


def per_task(row) -> str:
    v = row["cost_per_successful_task"]
    return f.unit_money(v) if v is not None and not pd.isna(v) else "undefined"


# ---- one card per tenant ------------------------------------------------------------------------
with st.container(key="tn_cards", horizontal=True):
    for _, row in frame.iterrows():
        with st.container(border=True, key=f"tn_card_{row['tenant']}"):
            st.markdown(f"**{row['tenant']}**")
            st.metric("Cost", f.money(row["cost"]))
            st.metric("Cost per successful task (own cost)", per_task(row),
                      help=(row["undefined_because"] or f"{f.money(row['cost'])} ÷ {f.count(row['tasks_success'])} "
                            f"successful tasks").replace("$", "\\$") + f". Own cost: {head['own_definition']}.")
            st.metric("$/1M active tokens", f.unit_money(row["cost_per_1m_active_tokens"]))
            st.metric("Share of GPU", f.pct(row["share_of_gpu"]))
            st.metric("Task failure rate", f.pct(row["task_failure_rate"]))

# ---- the comparison table -----------------------------------------------------------------------
METRICS = (("cost", "money"), ("cost per successful task", "per_task"), ("active tokens", "count"),
           ("$/1M active tokens", "unit"), ("share of GPU", "pct"), ("task failure rate", "pct"),
           ("success rate", "pct"), ("failed work share", "pct"), ("requests", "count"),
           ("tasks success", "count"), ("tasks failure", "count"), ("tasks unknown", "count"))
render = {"money": f.money, "unit": f.unit_money, "pct": f.pct, "count": f.count}
table = {"metric": [OWN if m == "cost per successful task" else m for m, _ in METRICS]}
for _, row in frame.iterrows():
    cells = []
    for metric, kind in METRICS:
        column = dd.TENANT_METRICS[metric]
        if kind == "per_task":
            v = row[column]
            defined = v is not None and not pd.isna(v)
            cells.append(f.unit_money(v) if defined else f"undefined: {row['undefined_because']}")
        else:
            cells.append(render[kind](row[column]))
    table[row["tenant"]] = cells
st.subheader("Side by side")
ui.table(pd.DataFrame(table), "tn_table")

# ---- charts -------------------------------------------------------------------------------------
colors = alt.Color("tenant:N", scale=alt.Scale(domain=list(picked)), legend=None)
st.subheader("Compared")
charts = (("cost_per_successful_task", f"{OWN} ({currency})", f.unit_money, ",.2f"),
          ("cost_per_1m_active_tokens", f"{currency} per 1M active tokens", f.unit_money, ",.2f"),
          ("share_of_gpu", "share of GPU", f.pct, ".1%"), ("task_failure_rate", "task failure rate", f.pct, ".0%"))
cols = st.columns(len(charts))
for col, (column, title, show, axis) in zip(cols, charts, strict=True):
    data = ui.floats(frame[["tenant", column]], [column])
    data["shown"] = frame[column].map(show)
    col.altair_chart(alt.Chart(data, title=title).mark_bar()
                     .encode(x=alt.X("tenant:N", sort=list(picked), title=None),
                             y=alt.Y(f"{column}:Q", title=None, axis=alt.Axis(format=axis)), color=colors,
                             tooltip=[alt.Tooltip("tenant:N"), alt.Tooltip("shown:N", title=title)]),
                     width="stretch")

st.subheader("Daily cost (UTC days)")
trend = ui.floats(daily, ["amount"])
trend["shown"] = daily["amount"].map(f.money)
with st.container(key="tn_trend"):
    st.altair_chart(alt.Chart(trend).mark_line(point=True)
                    .encode(x=alt.X("day:T", title="day"), y=alt.Y("amount:Q", title=f"cost ({currency})"),
                            color=alt.Color("tenant:N", scale=alt.Scale(domain=list(picked))),
                            tooltip=[alt.Tooltip("day:T"), alt.Tooltip("tenant:N"),
                                     alt.Tooltip("shown:N", title="cost")]),
                    width="stretch")
