"""Workload (capacity engineers): the traffic a month's requests put on the fleet, per minute, as
``ledger workload``: TPM percentiles, bursts, request lengths, cache hits, hour of week, the ramp."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from pages import _common as ui

from ledger.dashboard import reading
from ledger.dashboard import workload as dw
from ledger.workload import WorkloadError
from ledger.workload.render import workload_as_csv

ALL = "(all)"

st.title("Workload")
state = ui.ledger_state()
if not state.has_store:
    ui.show_guidance(state)
    st.stop()
st.caption("The output tokens per minute (TPM) the month's requests put on the fleet, every minute of the month "
           "counted (a minute without requests is 0), failed requests included: they loaded the fleet too. "
           "The same as `ledger workload`; definitions in docs/workload.md.")


@st.cache_data(ttl=30, show_spinner=False)
def choices(url: str, home: str) -> pd.DataFrame:
    with reading(url) as s:
        return dw.workload_choices(s)


@st.cache_data(ttl=30, max_entries=16, show_spinner=False)
def month(url: str, home: str, period: str, pool: str | None, product: str | None, ramp: int):
    with reading(url) as s:
        return dw.workload_of_month(s, period, pool=pool, product=product, ramp_minutes=ramp)


options = choices(state.url, str(state.home))
if options.empty:
    st.info("No request has been ingested in this ledger yet: `ledger ingest requests FILE`, or `ledger demo`.",
            icon=":material/info:")
    st.stop()
months = list(dict.fromkeys(options["period"]))  # newest first
with reading(state.url) as s:
    allocated = set(ui.runs(s, state.url)["period"])
# The page opens on the newest month that has a run: a whole month, the one the other pages open on
# (an open month, like the demo's November, is partial and still selectable: docs/dashboard.md).
opening = next((i for i, m in enumerate(months) if m in allocated), 0)
left, mid, right, far = st.columns([1, 1, 1, 1])
period = left.selectbox("Month (UTC)", months, index=opening, key="wl_period",
                        format_func=lambda m: m if m in allocated or not allocated else f"{m} (no run yet)",
                        help="The months with requests; the page opens on the newest month that has an allocation "
                             "run. A month with no run yet (the open month) is partial: its minutes so far.")
of_month = options[options["period"] == period]
pools = [p for p in dict.fromkeys(of_month["pool"]) if p is not None]
pool = mid.selectbox("Pool", [ALL, *pools], key="wl_pool")
products = list(dict.fromkeys(of_month["product"]))
product = right.selectbox("Product", [ALL, *products], key="wl_product")
ramp = far.number_input("Ramp window (minutes)", min_value=1, max_value=1440, value=10, step=1, key="wl_ramp")
try:
    w = month(state.url, str(state.home), period, None if pool == ALL else pool, None if product == ALL else product,
              int(ramp))
except WorkloadError as e:
    ui.show_problems(e.problems, title="No workload")
    st.stop()

f = ui.fmt("USD")
st.markdown(f"**{period}**, {'all pools' if pool == ALL else f'pool **{pool}**'}, "
            f"{'all products' if product == ALL else f'product **{product}**'}: {f.plural(w.requests, 'request')} "
            f"({f.count(w.failed_requests)} not ok), {f.plural(w.minutes, 'minute')}")
with st.container(key="wl_tiles", horizontal=True):
    for k in ("p50", "p95", "p99", "max", "mean"):
        st.metric(f"TPM {k}", f.number(w.tpm[k]), border=True)
    st.metric("Peak to average", f.number(w.peak_to_average, 2), border=True, help="max / mean of the TPM series")
with st.container(key="wl_shape", horizontal=True):
    st.metric("Bursts above p95", f.count(w.bursts.count), border=True,
              help=f"runs of consecutive minutes above {f.number(w.bursts.threshold)} TPM")
    st.metric("Longest burst (minutes)", f.count(w.bursts.longest), border=True)
    st.metric(f"Largest rise over {w.ramp_minutes} min (TPM)", f.number(w.ramp), border=True)
    st.metric("Cache hit", f.pct(w.cache_hit), border=True, help="cached input tokens / input tokens")

hourly = dw.hourly_frame(w)
st.subheader("TPM by hour")
st.caption("Each hour's mean TPM and its busiest minute; the dashed line is the month's p95.")
long = hourly.melt(id_vars="hour", value_vars=["mean_tpm", "max_tpm"], var_name="series", value_name="tpm")
long["series"] = long["series"].map({"mean_tpm": "mean of the hour", "max_tpm": "busiest minute"})
lines = alt.Chart(long).mark_line().encode(x=alt.X("hour:T", title="hour (UTC)"), y=alt.Y("tpm:Q", title="TPM"),
                                           color=alt.Color("series:N", title=None),
                                           tooltip=["hour:T", "series:N", alt.Tooltip("tpm:Q", format=",.0f")])
rule = alt.Chart(pd.DataFrame({"p95": [w.tpm["p95"]]})).mark_rule(strokeDash=[4, 4]).encode(y="p95:Q")
st.altair_chart(lines + rule, width="stretch")

st.subheader("Hour of week")
week = dw.hour_of_week_frame(w)
clip = dw.color_clip(week["tpm"])
st.altair_chart(alt.Chart(week).mark_rect().encode(
    x=alt.X("hour:O", title="hour (UTC)"), y=alt.Y("day:N", sort=list(week["day"].drop_duplicates()), title=None),
    color=alt.Color("tpm:Q", title="mean TPM", scale=alt.Scale(domain=[0, clip], clamp=True) if clip else alt.Undefined),
    tooltip=["day:N", "hour:O", alt.Tooltip("tpm:Q", format=",.1f")]),
    width="stretch")
if clip:
    st.caption(f"The colour scale stops at the {dw.CLIP_PERCENTILE}th percentile of the hours of the week "
               f"({f.number(clip)} TPM): an hour above it (a weekly batch job, a re-index) shows in the top colour "
               "rather than washing out every other hour; the tooltip gives each hour's own mean.")

st.subheader("Tokens per request")
lengths = dw.lengths_frame(w)
ui.table(lengths.assign(**{c: [f.number(v) for v in lengths[c]] for c in lengths.columns if c != "tokens"}),
         "wl_lengths", max_rows=2)
st.subheader("Every figure")
figures = dw.figures_frame(w)
ui.table(figures.assign(value=[f.number(v, 0 if float(v).is_integer() else 2) if v != "" else "" for v in
                               figures["value"]]), "wl_figures", max_rows=12)
st.download_button("Download the figures (CSV, as `ledger workload --csv`)",
                   data=workload_as_csv(w),
                   file_name=f"workload-{period}.csv", mime="text/csv", key="wl_csv")
