"""Unit economics (finance): what a period cost, what one successful task cost, where the money went."""
from __future__ import annotations

import pandas as pd
import streamlit as st
from pages import _common as ui

from ledger import dashboard as dd

st.title("Unit economics")
state = ui.ledger_state()
if not state.has_runs:
    ui.show_guidance(state)
    st.stop()

with dd.reading(state.url) as s:
    run = ui.pick_run(s, state, "ue")
    if run is None:
        st.stop()
    url, run_id = state.url, run.run_id
    head = ui.headline(s, url, run_id).iloc[0]
    prov = ui.provenance(s, url, run_id)
    daily = ui.category_daily(s, url, run_id)
    kinds = ui.by_kind(s, url, run_id)
    by_tenant = ui.unit_economics(s, url, run_id, "tenant")
    by_product = ui.unit_economics(s, url, run_id, "product")

currency = head["currency"]
f = ui.fmt(currency)
items = dict(zip(prov["item"], prov["value"], strict=True))
st.caption(f"{items['period (UTC, end exclusive)']} · run `{run_id}` · {currency} · price books "
           f"{items['price book versions']} · success criteria: {items['success criteria']}")


def md(text: str) -> str:
    """Text for Streamlit markdown: a currency's `$` is a dollar, not the start of LaTeX."""
    return text.replace("$", "\\$")


# ---- tiles --------------------------------------------------------------------------------------
all_in = head["cost_per_successful_task_all_in"]
defined = all_in is not None and not pd.isna(all_in)
per_task = f.unit_money(all_in) if defined else "undefined"
worked = (f"{per_task} = run total {f.money(head['total'])} ÷ {f.count(head['successful_tasks'])} successful tasks"
          if defined else f"undefined: {head['cost_per_successful_task_all_in_reason']}")
with st.container(key="ue_tiles", horizontal=True):
    st.metric("Total cost", f.money(head["total"]), border=True,
              help="Every line of the run; equals the sum of the priced resources exactly.")
    st.metric("All-in cost per successful task", per_task, border=True,
              help=md(f"{worked}. All-in: {head['all_in_definition']}."))
    st.metric("Failed-work share", f.pct(head["failed_work_share"]), border=True,
              help=f"{f.money(head['failed_work'])} of cost on errored requests and failed tasks (kept on its tenant).")
    st.metric("Idle reserve share", f.pct(head["idle_reserve_share"]), border=True,
              help=f"{f.money(head['idle_reserve'])} of GPU held on purpose: failure, canary, warm, maintenance.")
    st.metric("Idle slack share", f.pct(head["idle_slack_share"]), border=True,
              help=f"{f.money(head['idle_slack'])} of serving capacity nobody used.")
    st.metric("Unallocated", f.money(head["unallocated"]), border=True,
              help=f"{f.pct(head['unallocated_share'])} of the total: charges with rule `none`.")
st.caption(md(f"Tasks: {f.count(head['successful_tasks'])} successful, {f.count(head['failed_tasks'])} failed "
           f"(success rate {f.pct(head['success_rate'])}). On tenants: {f.money(head['on_tenants'])}; failed work "
           f"{f.money(head['failed_work'])}; idle reserve {f.money(head['idle_reserve'])}; idle slack "
           f"{f.money(head['idle_slack'])}; unallocated {f.money(head['unallocated'])} "
           f"({f.pct(head['unallocated_share'])})."))

# ---- cost by category over days -----------------------------------------------------------------
left, right = st.columns([3, 1])
with left:
    st.subheader("Cost by category, per day (UTC)")
    st.altair_chart(ui.stacked_bars(daily, x="day", y="amount", color="category", x_title="day",
                                    y_title=f"cost ({currency})", currency=currency), width="stretch")
with right:
    st.subheader("Who carries it")
    shown = pd.DataFrame({"kind": kinds["kind"].str.replace("_", " "), "amount": kinds["amount"].map(f.money),
                          "share": kinds["share"].map(f.pct)})
    ui.table(shown, "ue_kinds")


# ---- cost per successful task by tenant and by product ------------------------------------------
OWN = "cost per successful task (own cost)"


def table(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    per_task = [f.unit_money(v) if v is not None and not pd.isna(v) else f"undefined: {why}"
                for v, why in zip(frame["cost_per_successful_task"], frame["undefined_because"], strict=True)]
    label = frame["key"].map(lambda k: k if isinstance(k, str) else f"(no {by}: shared charges)")
    return pd.DataFrame({
        by: label, "cost": frame["cost"].map(f.money), OWN: per_task,
        "successful tasks": frame["tasks_success"].map(f.count), "failed tasks": frame["tasks_failure"].map(f.count),
        "success rate": frame["success_rate"].map(f.pct), "failed-work share": frame["failed_work_share"].map(f.pct),
        "$/1M active tokens": frame["cost_per_1m_active_tokens"].map(f.unit_money),
        "active tokens": frame["active_tokens"].map(f.count), "success criteria": frame["success_criteria"]})


st.subheader("Cost per successful task")
with st.container(key="ue_per_success_definitions"):
    st.markdown(md(f"**All-in cost per successful task**: {worked}. *All-in* = {head['all_in_definition']}."))
    kept = ("idle is shared over the tenants' own cost; unallocated charges stay on their own line"
            if items["idle policy"] == "share" else
            "idle slack, idle reserve and unallocated charges stay on their own lines")
    st.markdown(f"**{OWN[0].upper() + OWN[1:]}**, in the tables below: {head['own_definition']}. Under idle "
                f"policy `{items['idle policy']}` {kept}, which only the all-in figure includes.")
t_col, p_col = st.columns(2)
with t_col:
    st.markdown("**By tenant**")
    ui.table(table(by_tenant, "tenant"), "ue_by_tenant")
with p_col:
    st.markdown("**By product**")
    ui.table(table(by_product, "product"), "ue_by_product")

# ---- provenance and downloads -------------------------------------------------------------------
st.subheader("Where these numbers come from")
ui.table(prov, "ue_provenance")

locale = ui.current_locale()


def _workbook(url: str = url, run_id: str = run_id, locale: str = locale) -> bytes:
    with dd.reading(url) as s:
        return dd.allocation_workbook(dd.load_run_data(s, run_id=run_id), locale=locale)


def _lines_csv(url: str = url, run_id: str = run_id) -> str:
    with dd.reading(url) as s:
        return dd.allocation_lines_csv(dd.load_run_data(s, run_id=run_id))


def _report_csv(url: str = url, run_id: str = run_id) -> str:
    with dd.reading(url) as s:
        data = dd.load_run_data(s, run_id=run_id)
    return dd.unit_economics_csv(data, by="tenant") + "\n" + dd.unit_economics_csv(data, by="product")


period = run["period"]
with st.container(key="ue_downloads", horizontal=True):
    st.download_button("Allocation workbook (.xlsx)", _workbook, file_name=f"allocation-{period}-{run_id[:12]}.xlsx",
                       mime="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", key="ue_xlsx",
                       on_click="ignore", icon=":material/download:",
                       help=f"Totals as live formulas over the lines, currency formats for {locale}, a provenance "
                            "sheet.")
    st.download_button("Allocation lines (.csv)", _lines_csv, file_name=f"allocation-{period}-{run_id[:12]}.csv",
                       mime="text/csv", key="ue_csv", on_click="ignore", icon=":material/download:",
                       help="Every line of the run with its run, period, currency and price books "
                            "(`ledger export --csv`).")
    st.download_button("Unit economics (.csv)", _report_csv, file_name=f"unit-economics-{period}-{run_id[:12]}.csv",
                       mime="text/csv", key="ue_report_csv", on_click="ignore", icon=":material/download:",
                       help="`ledger report unit-economics --csv`, by tenant then by product.")
