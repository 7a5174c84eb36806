"""What if (finance and capacity): a past month under a scenario (reprice, reroute, self-host) beside its
run, as ``ledger whatif``: a shipped scenario, an uploaded one, or one built here. Never stored: SCENARIO."""
from __future__ import annotations

import os
from decimal import Decimal

import altair as alt
import pandas as pd
import streamlit as st
from pages import _common as ui
from pages import _layout

from ledger.dashboard import reading
from ledger.dashboard import whatif as dwf
from ledger.errors import LedgerError

st.title("What if · SCENARIO")
state = ui.ledger_state()
if not state.has_store:
    ui.show_guidance(state)
    st.stop()
st.caption("A past month allocated again by the same rules over changed inputs (other price books, traffic "
           "rerouted to another model or provider, provider traffic served by a self-hosted pool sized from its "
           "own workload), beside the month's run. Every number on this page is a SCENARIO, never a run; the "
           "page stores nothing (`ledger whatif` does). Scenario format: docs/whatif.md.")

with reading(state.url) as s:
    runs = ui.runs(s, state.url)
if runs.empty:
    ui.show_guidance(state)
    st.stop()
periods = list(dict.fromkeys(p for p in runs["period"] if len(str(p)) == 7))
if not periods:
    st.info("What if compares a calendar month with its run: allocate a month first (`ledger allocate --period`).")
    st.stop()
period = st.selectbox("Month", periods, key="wi_period")

sources = ["shipped scenario", "upload a scenario", "build one here"]
source = st.radio("Scenario", sources, key="wi_source", horizontal=True)
text = name = None
base_dir = os.getcwd()
if source == sources[0]:
    shipped = {p.name: p for p in dwf.shipped_scenarios()}
    if not shipped:
        st.info("No scenario ships in `scenarios/` here: upload one or build one.")
        st.stop()
    pick = st.selectbox("Shipped scenario", list(shipped), key="wi_shipped")
    text, name, base_dir = shipped[pick].read_text(encoding="utf-8"), pick, str(shipped[pick].parent)
elif source == sources[1]:
    up = st.file_uploader("Scenario (TOML)", type=["toml"], key="wi_upload")
    if up is None:
        st.info("Upload a scenario (TOML), or pick a shipped one.")
        st.stop()
    from ledger.tomlfile import TomlError, decode

    try:
        text, name = decode(up.getvalue(), up.name), up.name
    except TomlError as e:
        ui.show_problems(str(e))
        st.stop()
else:
    kind = st.radio("Change", ["reroute", "self_host"], key="wi_kind", horizontal=True)
    a, b, c = st.columns(3)
    where_model = a.text_input("Requests of model", "gpt-5", key="wi_where_model")
    where_product = b.text_input("and product (empty: any)", "", key="wi_where_product")
    share = c.text_input("Share moved (0 to 1)", "1", key="wi_share")
    fields = {}
    if kind == "reroute":
        a, b = st.columns(2)
        fields = {"to_model": a.text_input("To model", "claude-sonnet-4-5", key="wi_to_model"),
                  "to_provider": b.text_input("To provider (empty: kept)", "anthropic", key="wi_to_provider")}
    else:
        a, b, c = st.columns(3)
        fields = {"pool": a.text_input("Pool", "whatif-pool", key="wi_pool"),
                  "device": b.text_input("Device", "H100-SXM-80GB", key="wi_device"),
                  "region": c.text_input("Region", "us-east-1", key="wi_region"),
                  "purchase_option": a.text_input("Purchase option", "on_demand", key="wi_purchase"),
                  "gpus_per_replica": int(b.number_input("GPUs per replica", 1, 64, 1, key="wi_gpr")),
                  "anchors": c.text_input("Curve (concurrency:tok/s/user,...)", "2.7189:166.15", key="wi_anchors"),
                  "sla": float(a.number_input("SLA (tok/s/user)", 1.0, 10000.0, 100.0, key="wi_sla")),
                  "percentile": b.selectbox("TPM percentile", ["p50", "p95", "p99", "max", "mean"], index=1,
                                            key="wi_percentile"),
                  "failure_reserve": int(c.number_input("Failure reserve (replicas)", 0, 64, 1, key="wi_reserve"))}
    name = "built in the page"
    text = dwf.built_scenario(name, kind, {"model": where_model, "product": where_product},
                              {"share": share, **fields})
    with st.expander("The scenario as TOML"):
        st.code(text, language="toml")


@st.cache_data(ttl=60, max_entries=8, show_spinner="Allocating the scenario...")
def compute(url: str, home: str, period: str, text: str, name: str, base_dir: str):
    with reading(url) as s:
        result = dwf.whatif_of(s, period, text, name, base_dir=base_dir)
    return result, dwf.comparison_frame(result), dwf.kinds_frame(result)


try:
    result, frame, kinds = compute(state.url, str(state.home), period, text, name, base_dir)
except LedgerError as e:
    ui.show_problems(e.lines(), title="The scenario cannot run")
    st.stop()

f = ui.fmt(result.currency)
st.subheader(f"SCENARIO: {result.scenario.name}")
with st.container(key="wi_tiles", horizontal=True):
    st.metric("Actual (the run)", f.money(result.actual_total), border=True)
    st.metric("SCENARIO", f.money(result.scenario_total), border=True)
    st.metric("Difference", f.money(result.difference), border=True)
    st.metric("Sizing", result.status, border=True, help="VERDICT: sized on measured points; DRAFT: interpolated")
st.caption(f"Beside run `{result.run_id}` · books: {', '.join(result.scenario_books)}")
for z in result.sized:
    st.caption(f"Pool **{z.pool}** ({z.status}): {z.replicas_serving} serving + {z.replicas_reserve} reserve "
               f"replicas × {z.gpus_per_replica} {z.device}, sized at TPM {z.percentile} {z.tpm:,.0f}, SLA {z.sla:g}")
for note in result.notes:
    st.caption(note)

by = st.radio("Compare by", ["tenant", "product", "model"], key="wi_by", horizontal=True)
rows = frame[frame["by"] == by].drop(columns=["by"]).rename(columns={"key": by})
# the exact decimals (ledger whatif --csv) written by the page's formats, one rule per column, short
# headers with their meaning in a tooltip; in two parts, side by side at 1400 px and one under the
# other at 1024 (pages/_layout.py), so that every column shows whole
exact = [r for r in dwf.whatif_rows(result) if r["by"] == by]
dec = (lambda v: None if v in (None, "") else Decimal(str(v)))  # noqa: E731
shown = pd.DataFrame({
    by: [r["key"] for r in exact],
    "actual": [f.money(dec(r["actual_cost"])) for r in exact],
    "SCENARIO": [f.money(dec(r["scenario_cost"])) for r in exact],
    "difference": [f.money(dec(r["difference"])) for r in exact],
    "difference %": [f.pct(dec(r["difference_share"])) for r in exact],
    "successes": [f.count(r["successful_tasks"]) for r in exact],
    "actual /success": f.unit_column([dec(r["actual_cost_per_successful_task"]) for r in exact]),
    "SCENARIO /success": f.unit_column([dec(r["scenario_cost_per_successful_task"]) for r in exact]),
})
WHATIF_HELP = {"actual": "the run's cost", "SCENARIO": "the cost under the scenario (never a run)",
               "difference": "SCENARIO − actual", "difference %": "the difference ÷ actual",
               "successes": "successful tasks (the same in both)",
               "actual /success": "the run's own cost per successful task",
               "SCENARIO /success": "the scenario's own cost per successful task"}
_layout.table_in_parts(shown, "wi_table", [["actual", "SCENARIO", "difference", "difference %"],
                                           ["successes", "actual /success", "SCENARIO /success"]],
                       table=ui.table, help=WHATIF_HELP)
long = rows.melt(id_vars=by, value_vars=["actual_cost", "scenario_cost"], var_name="series", value_name="cost")
long["series"] = long["series"].map({"actual_cost": "actual", "scenario_cost": "SCENARIO"})
chart = alt.Chart(long).mark_bar().encode(x=alt.X(f"{by}:N", title=by), xOffset="series:N",
                                          y=alt.Y("cost:Q", title=f"cost ({result.currency})"),
                                          color=alt.Color("series:N", title=None))
with st.container(key="wi_chart"):
    st.altair_chart(chart, width="stretch")
st.subheader("By line kind (idle and unallocated on their own lines)")
ui.table(pd.DataFrame({"kind": list(result.by_kind),
                       "actual": [f.money(a) for a, _ in result.by_kind.values()],
                       "SCENARIO": [f.money(b) for _, b in result.by_kind.values()]}), "wi_kinds")
