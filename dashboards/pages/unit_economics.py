"""Unit economics (finance): what a period cost, what one successful task cost, where the money went."""
from __future__ import annotations

from decimal import Decimal

import pandas as pd
import streamlit as st
from pages import _common as ui
from pages import _layout

from ledger import dashboard as dd
from ledger.formats import display_column
from ledger.money import quantize

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
    budgets = ui.budgets_key(s, url)
    by_tenant = ui.unit_economics(s, url, run_id, "tenant", budgets)
    by_product = ui.unit_economics(s, url, run_id, "product", budgets)
    no_product = ui.without_product(s, url, run_id)

currency = head["currency"]
f = ui.fmt(currency)
items = dict(zip(prov["item"], prov["value"], strict=True))
st.caption(f"{items['period (UTC, end exclusive)']} · run `{run_id}` · {currency} · price books "
           f"{items['price book versions']} · success criteria: {items['success criteria']}")


def md(text: str) -> str:
    """Text for Streamlit markdown: a currency's `$` is a dollar, not the start of LaTeX."""
    return text.replace("$", "\\$")


# ---- tiles --------------------------------------------------------------------------------------
policy = head["idle_policy"]
shared = policy == "share"
all_in = head["cost_per_successful_task_all_in"]
defined = all_in is not None and not pd.isna(all_in)
per_task = f.unit_money(all_in) if defined else "undefined"
worked = (f"{per_task} = run total {f.money(head['total'])} ÷ {f.count(head['successful_tasks'])} successful tasks"
          if defined else f"undefined: {head['cost_per_successful_task_all_in_reason']}")
if shared:  # idle is on the tenants' lines: the tiles say how much of it, and that it is shared
    idle_tiles = [("Idle reserve share (shared over tenants)", "idle_reserve_shared",
                   "of GPU held on purpose (failure, canary, warm, maintenance), booked on the tenants in proportion "
                   "to their GPU cost in each pool: idle policy `share`."),
                  ("Idle slack share (shared over tenants)", "idle_slack_shared",
                   "of serving capacity nobody used, booked on the tenants in proportion to their GPU cost in each "
                   "pool: idle policy `share`.")]
else:
    idle_tiles = [("Idle reserve share", "idle_reserve",
                   "of GPU held on purpose (failure, canary, warm, maintenance), on its own lines: idle policy "
                   "`separate`."),
                  ("Idle slack share", "idle_slack",
                   "of serving capacity nobody used, on its own lines: idle policy `separate`.")]
with st.container(key="ue_tiles", horizontal=True):
    st.metric("Total cost", f.money(head["total"]), border=True,
              help="Every line of the run; equals the sum of the priced resources exactly.")
    st.metric("All-in cost per successful task", per_task, border=True,
              help=md(f"{worked}. All-in: {head['all_in_definition']}."))
    st.metric("Failed-work share", f.pct(head["failed_work_share"]), border=True,
              help=md(f"{f.money(head['failed_work'])} of cost on errored requests and failed tasks (kept on its "
                      "tenant)."))
    for label, column, what in idle_tiles:
        st.metric(label, f.pct(head[f"{column}_share"]), border=True, help=md(f"{f.money(head[column])} {what}"))
    st.metric("Unallocated", f.money(head["unallocated"]), border=True,
              help=f"{f.pct(head['unallocated_share'])} of the total: charges with rule `none`.")
idle_text = (f"idle shared over the tenants (in their cost): reserve {f.money(head['idle_reserve_shared'])}, slack "
             f"{f.money(head['idle_slack_shared'])}" if shared else
             f"idle on its own lines: reserve {f.money(head['idle_reserve'])}, slack {f.money(head['idle_slack'])}")
st.caption(md(f"Tasks: {f.count(head['successful_tasks'])} successful, {f.count(head['failed_tasks'])} failed "
              f"(success rate {f.pct(head['success_rate'])}). On tenants: {f.money(head['on_tenants'])}; failed work "
              f"{f.money(head['failed_work'])}; {idle_text}; unallocated {f.money(head['unallocated'])} "
              f"({f.pct(head['unallocated_share'])}). Idle policy `{policy}`."))

# ---- cost by category over days -----------------------------------------------------------------
kind_names = {"tenant": "tenants (idle included)" if shared else "tenants"}
# display rounding (docs/exports.md): the kinds add up to the run total as shown, their shares to 100%
kind_cells, kind_total = f.money_shown(kinds["amount"])
kind_shares, _ = display_column([a / head["total"] if head["total"] else None for a in kinds["amount"]], 3)
tenants_shown = dict(zip(kinds["kind"], kind_cells, strict=True)).get("tenant")
shown = pd.DataFrame({"kind": [*kinds["kind"].map(lambda k: kind_names.get(k, k.replace("_", " "))), "total"],
                      "amount": [f.money_at(v, f.places) for v in [*kind_cells, kind_total]],
                      "share": [f.pct(v) for v in [*kind_shares, Decimal(1) if head["total"] else None]]})
# the chart takes what the table of kinds leaves, the table its columns' width (whole at 1024 px)
with st.container(horizontal=True, gap="medium", key="ue_where"):
    with st.container():
        st.subheader("Cost by category, per day (UTC)")
        ui.chart(ui.stacked_bars(daily, x="day", y="amount", color="category", x_title="day", y_title="cost",
                                 currency=currency), currency, key="ue_daily")
    with st.container(width=max(260, _layout.grid_width(shown))):
        st.subheader("Who carries it")
        ui.table(shown, "ue_kinds")


# ---- cost per successful task by tenant and by product ------------------------------------------
OWN = "cost per successful task (own cost)"
OWN_SHORT = "own cost per success"
parts = no_product


def no_key_label(by: str) -> str:
    """The row of lines with no `by`: by product, the one name of that row, "shared charges"."""
    return dd.SHARED_CHARGES if by == "product" else f"no {by}"


def as_shown(exact: Decimal) -> Decimal | None:
    """The tenants' cost as "Who carries it" shows it, for a table of the tenants' cost to add up to
    (None, its own total rounded, when the table's rows are not that cost: a true-up's variance)."""
    ok = tenants_shown is not None and abs(exact - tenants_shown) < Decimal(1).scaleb(-f.places)
    return tenants_shown if ok else None


def _ratio(a, b, scale: int = 1) -> Decimal | None:
    return quantize(Decimal(a) * scale / Decimal(b)) if b else None


def table(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    """The rows and a totals row (the rows' sums, its ratios those of the sums). The costs are
    display-rounded to add up to the total as shown, the tenants' part of "Who carries it"."""
    cost, successes, failures = sum(frame["cost"], Decimal(0)), int(frame["tasks_success"].sum()), \
        int(frame["tasks_failure"].sum())
    tokens = int(frame["active_tokens"].sum())
    failed = sum((v for v in frame["failed_work"] if v is not None and not pd.isna(v)), Decimal(0))
    cells, total = display_column(frame["cost"], f.places, total=as_shown(cost))
    per_task = f.unit_column([*frame["cost_per_successful_task"], _ratio(cost, successes)])
    per_task = [shown if v is not None and not pd.isna(v) else "undefined"
                for shown, v in zip(per_task, [*frame["cost_per_successful_task"], _ratio(cost, successes)],
                                    strict=True)]
    return pd.DataFrame({
        by: [*frame["key"].map(lambda k: k if isinstance(k, str) else no_key_label(by)), "total"],
        "cost": [f.money_at(v, f.places) for v in [*cells, total]], OWN_SHORT: per_task,
        "successes": [f.count(n) for n in [*frame["tasks_success"], successes]],
        "failures": [f.count(n) for n in [*frame["tasks_failure"], failures]],
        "success rate": [f.pct(v) for v in [*frame["success_rate"], _ratio(successes, successes + failures)]],
        "failed work": [f.pct(v) for v in [*frame["failed_work_share"], _ratio(failed, cost)]],
        "per 1M tokens": f.unit_column([*frame["cost_per_1m_active_tokens"], _ratio(cost, tokens, 1_000_000)]),
        "active tokens": [f.count(n) for n in [*frame["active_tokens"], tokens]],
        **budget_columns(frame)})


def has_budget(frame: pd.DataFrame) -> bool:
    return "budget" in frame and frame["budget"].notna().any()


def budget_columns(frame: pd.DataFrame) -> dict:
    """The budget in force for the month beside a row's cost and its share (issue 31), when some row
    has one; the totals row leaves both empty (budgets of some rows are no budget of all)."""
    if not has_budget(frame):
        return {}
    shown = [(f.money(b), f.pct(s)) if b is not None and not pd.isna(b) else ("", "")
             for b, s in zip(frame["budget"], frame["of_budget"], strict=True)]
    return {"budget": [b for b, _ in shown] + [""], "of budget": [s for _, s in shown] + [""]}


HELP = {OWN_SHORT: f"{OWN}: {head['own_definition']}",
        "successes": "tasks with outcome success decided in the period",
        "failures": "tasks with outcome failure decided in the period",
        "success rate": "successes ÷ decided tasks",
        "failed work": "failed-work share: the cost of errored requests and failed tasks ÷ the row's cost",
        "per 1M tokens": f"cost per 1M active tokens ({currency}): the row's cost ÷ its active tokens (millions)",
        "active tokens": "input + output tokens of the row's requests (docs/allocation.md)",
        "budget": "the monthly budget in force for the month of the row's scope (ledger budgets, docs/alerts.md)",
        "of budget": "the row's cost ÷ its budget"}


def notes(frame: pd.DataFrame, by: str) -> list[str]:
    """What the table leaves to words: undefined figures, success criteria, the row with no `by`."""
    label = {i: (k if isinstance(k, str) else no_key_label(by)) for i, k in enumerate(frame["key"])}
    out = []
    for why in dict.fromkeys(w for w in frame["undefined_because"] if w):
        rows = [label[i] for i, w in enumerate(frame["undefined_because"]) if w == why]
        out.append(f"{OWN_SHORT} undefined for {', '.join(rows)}: {why}")
    criteria = dict.fromkeys(c for c in frame["success_criteria"] if c)
    if len(criteria) == 1:
        out.append(f"success criteria: {next(iter(criteria))}")
    elif criteria:
        out.append("success criteria: " + "; ".join(f"{label[i]}: {c}" for i, c in enumerate(frame["success_criteria"])
                                                    if c))
    if by == "product" and frame["key"].isna().any():
        held = " and ".join(f"{p} {f.money(v)}" for p, v in parts.items())
        out.append(f"{no_key_label(by)}: what tenants carry on lines with no product: {held or 'nothing'} (charges are "
                   "shared over tenants by their rule" + (", idle over the tenants of its pool under idle policy "
                                                         "`share`" if "shared idle" in parts else "") + ")")
    return out


st.subheader("Cost per successful task")
with st.container(key="ue_per_success_definitions"):
    st.markdown(md(f"**All-in cost per successful task**: {worked}. *All-in* = {head['all_in_definition']}."))
    kept = ("idle slack and idle reserve are shared over the tenants, so they are in the tenants' own cost; "
            "unallocated charges stay on their own line" if shared else
            "idle slack, idle reserve and unallocated charges stay on their own lines")
    st.markdown(f"**{OWN[0].upper() + OWN[1:]}** (*{OWN_SHORT}* in the tables below): {head['own_definition']}. "
                f"Under idle policy `{policy}` {kept}, which the all-in figure includes.")
for by, frame in (("tenant", by_tenant), ("product", by_product)):
    st.markdown(f"**By {by}**")
    _layout.table_in_parts(table(frame, by), f"ue_by_{by}", [["cost", OWN_SHORT, "successes", "failures"],
                                                              ["success rate", "failed work", "per 1M tokens",
                                                               "active tokens"],
                                                              *([["cost", "budget", "of budget"]]
                                                                if has_budget(frame) else [])],
                           table=ui.table, help=HELP)
    with st.container(key=f"ue_by_{by}_notes"):
        st.caption(md("  \n".join(notes(frame, by))))

# ---- the shared charges spread over products ----------------------------------------------------
if by_product["key"].isna().any() and st.toggle(f"Spread the {dd.SHARED_CHARGES} over products", key="ue_spread",
                                                help="each tenant's shared charges go to its own products by the "
                                                     "rule they were shared over tenants with"):
    with dd.reading(url) as s:
        spread = ui.spread(s, url, run_id)
    spread_cells, spread_total = display_column(spread["cost"], f.places,
                                                total=as_shown(sum(spread["cost"], Decimal(0))))
    ui.table(pd.DataFrame({"product": [*spread["key"].map(lambda k: k if isinstance(k, str) else dd.SHARED_CHARGES),
                                       "total"],
                           "cost": [f.money_at(v, f.places) for v in [*spread_cells, spread_total]],
                           OWN_SHORT: [*(f.unit_money(v) if v is not None and not pd.isna(v) else "undefined"
                                         for v in spread["cost_per_successful_task"]), ""],
                           "successes": [f.count(n) for n in [*spread["tasks_success"],
                                                              int(spread["tasks_success"].sum())]]}),
             "ue_by_product_spread", max_rows=len(spread) + 1)
    with st.container(key="ue_by_product_spread_notes"):
        st.caption(md(f"{dd.SHARED_CHARGES_NOTE}. The products' costs add up to the tenants' cost, "
                      f"{f.money(spread['cost'].sum())}, exactly; with idle and unallocated, to the run total."))

# ---- provenance and downloads -------------------------------------------------------------------
st.subheader("Where these numbers come from")
ui.text_table(prov, "ue_provenance")

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
                            "(`ledger export --lines FILE`).")
    st.download_button("Unit economics (.csv)", _report_csv, file_name=f"unit-economics-{period}-{run_id[:12]}.csv",
                       mime="text/csv", key="ue_report_csv", on_click="ignore", icon=":material/download:",
                       help="`ledger report unit-economics --csv`, by tenant then by product.")
