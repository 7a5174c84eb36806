"""Budgets (guardrails): each budget beside the open month's provisional spend, its burn-down to month
end, the day it runs out, and the spend anomalies: ``ledger alerts`` on a page."""
from __future__ import annotations

from datetime import datetime, time, timezone

import altair as alt
import streamlit as st
from pages import _common as ui
from pages import _layout

st.title("Budgets and alerts")
state = ui.ledger_state(banner=False)
if not state.has_store:
    ui.show_guidance(state)
    st.stop()

found = ui.alerts_state(state)
if found is None:
    st.info("No budgets to watch yet: load a budgets book (`ledger budgets load FILE`, docs/alerts.md) over a ledger "
            "with usage, or build the demo (`ledger demo`), which ships one.", icon=":material/info:")
    st.stop()
default_as_of, _ = found
left, right = st.columns(2)
day = left.date_input("As of (UTC day)", value=default_as_of.date(), key="bu_day",
                      help="The alerts are as of the ledger's newest usage by default (the hour after its last "
                           "request), never later than now.")
hour = right.time_input("As of (UTC time)", value=default_as_of.time(), key="bu_time", step=3600)
as_of = datetime.combine(day, hour if isinstance(hour, time) else time(0), tzinfo=timezone.utc)
try:
    alerts = ui.alerts_at(state, as_of)
except Exception as e:  # a refusal of the library (a usage with no price, ...): its lines, never a traceback
    lines = getattr(e, "lines", None)
    ui.show_problems(lines() if callable(lines) else str(e), title="The alerts cannot be computed")
    st.stop()

from ledger.dashboard import guardrails as dg  # noqa: E402

f = ui.fmt(alerts.currency)
st.caption(f"PROVISIONAL · {alerts.month_start:%Y-%m} as of {as_of:%Y-%m-%d %H:%M} UTC · {alerts.currency} · spend to "
           "date is the month's usage priced and allocated by the run's rules, never a run · the numbers of "
           f"`ledger alerts --as-of {as_of:%Y-%m-%dT%H:%M:%SZ} --json`. Method: docs/alerts.md.")
frame = dg.budgets_frame(alerts)
with st.container(key="bu_tiles", horizontal=True):
    st.metric("Budgets", f.count(len(frame)), border=True)
    st.metric("Alerts fired", f.count(alerts.fired), border=True)
    st.metric("Anomalies", f.count(len(alerts.anomalies)), border=True)

if frame.empty:
    st.info("No budget is in force at this instant.")
else:
    shown = frame.copy()
    for c in ("monthly", "spent_to_date", "projected_month_end"):
        shown[c] = frame[c].map(f.money)
    shown["spent_share"] = frame["spent_share"].map(f.pct)
    shown["runs_out_on"] = frame["runs_out_on"].map(lambda d: "—" if d is None else d.isoformat())
    shown["alert"] = frame["alert"].map(lambda a: a or "—")
    # in two parts, side by side at 1400 px and one under the other at 1024 (pages/_layout.py): the spend
    # first, then who owns the budget, its amount and what fired
    _layout.table_in_parts(shown.rename(columns={"spent_to_date": "spent", "spent_share": "spent %",
                                                 "projected_month_end": "projected", "runs_out_on": "runs out"}),
                           "bu_budgets", [["spent", "spent %", "projected", "runs out"], ["owner", "monthly", "alert"]],
                           table=ui.table)

    st.subheader("Burn-down per budget")
    for i, status in enumerate(alerts.budgets):
        data = ui.floats(dg.burndown_frame(status, alerts), ["remaining"])
        line = (alt.Chart(data).mark_line(point=True)
                .encode(x=alt.X("day:T", title="day (UTC)"),
                        y=alt.Y("remaining:Q", axis=ui.money_axis(alerts.currency, "budget left")),
                        strokeDash=alt.StrokeDash("series:N", title="spend"),
                        color=alt.Color("series:N", title="spend"),
                        tooltip=[alt.Tooltip("day:T"), alt.Tooltip("series:N"),
                                 alt.Tooltip("remaining:Q", format=",.2f")]))
        zero = alt.Chart(data.head(1)).mark_rule(color="firebrick").encode(y=alt.datum(0))
        b = status.budget
        out = f"runs out on {status.runs_out_on}" if status.runs_out_on else "holds to month end"
        st.markdown(f"**{b.label()}** · {f.money(b.monthly)} a month · owner {b.owner} · projected "
                    f"{f.money(status.projected_month_end)}: {out}".replace("$", "\\$"))
        ui.chart(line + zero, alerts.currency, key=f"bu_burndown_{i}")

st.subheader("Spend anomalies (per tenant and model per day)")
anomalies = dg.anomalies_frame(alerts)
if anomalies.empty:
    st.info("No spend anomaly: every tenant's daily spend per model is within its same-weekday baseline.")
else:
    shown = anomalies.copy()
    for c in ("spend", "baseline", "threshold"):
        shown[c] = anomalies[c].map(f.money)
    shown["ratio"] = anomalies["ratio"].map(lambda r: "—" if r is None else f"{r}x")
    shown["day"] = anomalies["day"].map(lambda d: d.isoformat())
    ui.table(shown, "bu_anomalies")
