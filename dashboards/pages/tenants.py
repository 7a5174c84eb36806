"""Tenants side by side (product owners): cost, cost per success, tokens, GPU share, failure rate, trend."""
from __future__ import annotations

from decimal import Decimal

import altair as alt
import pandas as pd
import streamlit as st
from pages import _common as ui
from pages import _layout

from ledger import dashboard as dd
from ledger.formats import display_column, display_table

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
    frame = ui.tenants(s, url, run_id, tuple(picked), ui.budgets_key(s, url))
    daily = ui.tenant_daily(s, url, run_id, tuple(picked))
    head = ui.headline(s, url, run_id).iloc[0]

currency = head["currency"]
f = ui.fmt(currency)
st.caption(f"Run `{run_id}` · {run['period']} · {currency} · idle policy `{head['idle_policy']}` · the numbers of "
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


# one rule per figure across the tenants compared: four decimals when every amount is below one unit
per_task_shown = dict(zip(frame["tenant"], f.unit_column(frame["cost_per_successful_task"]), strict=True))
per_1m_shown = dict(zip(frame["tenant"], f.unit_column(frame["cost_per_1m_active_tokens"]), strict=True))


def per_task(row) -> str:
    v = row["cost_per_successful_task"]
    return per_task_shown[row["tenant"]] if v is not None and not pd.isna(v) else "undefined"


shared = head["idle_policy"] == "share"
# ---- one card per tenant ------------------------------------------------------------------------
with st.container(key="tn_cards", horizontal=True):
    for _, row in frame.iterrows():
        with st.container(border=True, key=f"tn_card_{row['tenant']}"):
            st.markdown(f"**{row['tenant']}**")
            st.metric("Cost", f.money(row["cost"]),
                      help=(f"Idle shared over it (idle policy `share`): {f.money(row['idle_shared'])}."
                            .replace("$", "\\$") if shared else None))
            st.metric("Cost per successful task (own cost)", per_task(row),
                      help=(row["undefined_because"] or f"{f.money(row['cost'])} ÷ {f.count(row['tasks_success'])} "
                            f"successful tasks").replace("$", "\\$") + f". Own cost: {head['own_definition']}.")
            st.metric("Cost per 1M active tokens", per_1m_shown[row["tenant"]])
            st.metric("Share of GPU", f.pct(row["share_of_gpu"]))
            st.metric("Task failure rate", f.pct(row["task_failure_rate"]))

# ---- the comparison table -----------------------------------------------------------------------
METRICS = (("cost", "money"), ("cost per successful task", "per_task"), ("active tokens", "count"),
           ("$/1M active tokens", "unit"), ("share of GPU", "pct"), ("task failure rate", "pct"),
           ("success rate", "pct"), ("failed work share", "pct"), ("requests", "count"),
           ("tasks success", "count"), ("tasks failure", "count"), ("tasks unknown", "count"),
           *((("idle shared", "money"),) if shared else ()),
           # the budget in force for the month beside the cost (issue 31), when a tenant has one
           *((("budget", "budget"), ("of budget", "budget_pct"))
             if "budget" in frame and frame["budget"].notna().any() else ()))
COLUMN = {**dd.TENANT_METRICS, "budget": "budget", "of budget": "of_budget"}
LABELS = {"cost per successful task": OWN, "$/1M active tokens": "cost per 1M active tokens",
          "idle shared": "idle shared over it (policy share)"}
render = {"money": f.money, "pct": f.pct, "count": f.count,
          "budget": lambda v: "" if v is None or pd.isna(v) else f.money(v),
          "budget_pct": lambda v: "" if v is None or pd.isna(v) else f.pct(v)}
st.subheader("Side by side")
table = {"metric": [LABELS.get(m, m) for m, _ in METRICS]}
for _, row in frame.iterrows():
    cells = []
    for metric, kind in METRICS:
        if kind == "per_task":
            cells.append(per_task(row))
        elif kind == "unit":
            cells.append(per_1m_shown[row["tenant"]])
        else:
            cells.append(render[kind](row[COLUMN[metric]]))
    table[row["tenant"]] = cells
# The totals column (docs/exports.md, "Display rounding"): money and the shares of GPU are rounded as
# a whole, so each row's cells add up to its printed total; ratios are the ratios of the sums.
TOTAL = "total (these tenants)"
names = list(frame["tenant"])
row_of = {m: i for i, (m, _) in enumerate(METRICS)}
for metric, kind in METRICS:
    values = list(frame[COLUMN[metric]])
    if kind == "money":
        cells, total = f.money_column(values)
    elif metric == "share of GPU":
        shares, total = display_column([None if v is None or pd.isna(v) else v for v in values], 3)
        cells, total = [f.pct(v) for v in shares], f.pct(total)
    else:
        continue
    for name, cell in zip(names, cells, strict=True):
        table[name][row_of[metric]] = cell


def _ratio(num, den):
    return (num / den).quantize(Decimal("0.0001")) if den else None


def _sum(column: str):
    return sum((v for v in frame[column] if v is not None and not pd.isna(v)), Decimal(0))


cost, success, failure = _sum("cost"), _sum("tasks_success"), _sum("tasks_failure")
tokens = _sum("active_tokens")
per_task_total = cost / success if success else None
per_1m_total = cost * 1_000_000 / tokens if tokens else None
totals = {"cost": f.money_column(list(frame["cost"]))[1],
          "cost per successful task": f.unit_column([*frame["cost_per_successful_task"], per_task_total])[-1]
          if per_task_total is not None else "undefined",
          "active tokens": f.count(int(tokens)),
          "$/1M active tokens": f.unit_column([*frame["cost_per_1m_active_tokens"], per_1m_total])[-1]
          if per_1m_total is not None else ui.DASH,
          "share of GPU": f.pct(display_column([None if v is None or pd.isna(v) else v
                                                for v in frame["share_of_gpu"]], 3)[1]),
          "task failure rate": f.pct(_ratio(Decimal(failure), Decimal(success + failure))),
          "success rate": f.pct(_ratio(Decimal(success), Decimal(success + failure))),
          "failed work share": f.pct(_ratio(_sum("failed_work"), cost)),
          "requests": f.count(int(_sum("requests"))), "tasks success": f.count(int(success)),
          "tasks failure": f.count(int(failure)), "tasks unknown": f.count(int(_sum("tasks_unknown"))),
          "idle shared": f.money_column(list(frame["idle_shared"]))[1] if shared else None,
          "budget": "", "of budget": ""}  # budgets of some tenants add up to no budget of them all
table[TOTAL] = [totals[m] for m, _ in METRICS]
# six tenants a table: more are laid out in further tables below, so that every column shows; the
# totals column ends the last one
ui.tables(pd.DataFrame(table), "tn_table", per=6, max_rows=len(METRICS))
st.caption(f"*{TOTAL}*: the tenants compared here. Money and shares of GPU are rounded so that each row adds up "
           "to its total as printed; the rates and costs per unit in it are those of the sums (cost over "
           "successful tasks, failed over decided tasks).")
undefined = [f"{r['tenant']}: {r['undefined_because']}" for _, r in frame.iterrows() if r["undefined_because"]]
if undefined:
    st.caption(f"{OWN} undefined for " + "; ".join(undefined))

# ---- charts -------------------------------------------------------------------------------------
colors = alt.Color("tenant:N", scale=alt.Scale(domain=list(picked)), legend=None)
st.subheader("Compared")
charts = (("cost_per_successful_task", f"{OWN} ({currency})", f.unit_money, ui.UNIT_AXIS),
          ("cost_per_1m_active_tokens", f"cost per 1M active tokens ({currency})", f.unit_money, ui.MONEY_AXIS),
          ("share_of_gpu", "share of GPU", f.pct, ".1%"), ("task_failure_rate", "task failure rate", f.pct, ".0%"))
cols = [*st.columns(2), *st.columns(2)]  # two by two: each title whole
for col, (column, title, show, axis) in zip(cols, charts, strict=True):
    data = ui.floats(frame[["tenant", column]], [column])
    data["shown"] = frame[column].map(show)
    with col:
        ui.chart(alt.Chart(data, title=title).mark_bar()
                 .encode(x=alt.X("tenant:N", sort=list(picked), title=None),
                         y=alt.Y(f"{column}:Q", title=None, axis=alt.Axis(format=axis)), color=colors,
                         tooltip=[alt.Tooltip("tenant:N"), alt.Tooltip("shown:N", title=title)]), currency)

st.subheader("Daily cost (UTC days)")
trend = ui.floats(daily, ["amount"])
trend["shown"] = daily["amount"].map(f.money)
ui.chart(alt.Chart(trend).mark_line(point=True)
         .encode(x=alt.X("day:T", title="day"), y=alt.Y("amount:Q", axis=ui.money_axis(currency, "cost")),
                 color=alt.Color("tenant:N", scale=alt.Scale(domain=list(picked))),
                 tooltip=[alt.Tooltip("day:T"), alt.Tooltip("tenant:N"), alt.Tooltip("shown:N", title="cost")]),
         currency, key="tn_trend")

# ---- drill-down: one tenant's products, models and lines ----------------------------------------
st.subheader("Drill down")
with dd.reading(url) as s:
    with st.container(key="tn_drill_filters", horizontal=True):
        tenant = st.selectbox("Tenant", names, key="tn_drill_tenant")
        products_all, _, _ = ui.drill(s, url, run_id, tenant, None, None, None)
        product = st.selectbox("Product", ["(all)", *products_all["product"]], key="tn_drill_product")
        category = st.selectbox("Category", ["(all)", *dd.CATEGORIES], key="tn_drill_category")
    chosen_product = None if product == "(all)" else product
    chosen_category = None if category == "(all)" else category
    products, models, _ = ui.drill(s, url, run_id, tenant, None, None, chosen_category)
    _, models, _ = ui.drill(s, url, run_id, tenant, chosen_product, None, chosen_category)
    model = st.selectbox("Model", ["(all)", *dict.fromkeys(models["model"])], key="tn_drill_model")
    chosen_model = None if model == "(all)" else model
    _, _, lines = ui.drill(s, url, run_id, tenant, chosen_product, chosen_model, chosen_category)


def money_table(frame, name: str, extra: list[str]) -> pd.DataFrame:
    """`frame` with its cost column display-rounded to add up to its printed total row."""
    cells, total = f.money_column(frame["cost"])
    return pd.DataFrame({name: list(frame[name]) + ["total"], **{c: list(frame[c].map(str)) + [""] for c in extra},
                         "cost": cells + [total],
                         "lines": [f.count(n) for n in frame["lines"]] + [f.count(int(frame["lines"].sum()))]})


# side by side when they fit, one under the other when the page is narrow (pages/_layout.py)
with st.container(horizontal=True, gap="large", key="tn_drill_tables"):
    for title, frame, extra, key in ((f"**{tenant} by product**", products, [], "tn_drill_products"),
                                     (f"**{tenant} by model**" + (f" of {chosen_product}" if chosen_product else ""),
                                      models, ["model"], "tn_drill_models")):
        shown = money_table(frame, "product", extra)
        with st.container(width=max(240, _layout.grid_width(shown))):
            st.markdown(title)
            ui.table(shown, key, max_rows=len(shown))
st.caption(f"{dd.SHARED_CHARGES_NOTE}.".replace("$", "\\$"))
st.markdown(f"**Lines** ({f.count(len(lines))}; {f.money(lines['amount'].sum()) if len(lines) else f.money(0)})")
ui.table(pd.DataFrame({"day": lines["day"].map(str), "product": lines["product"], "model": lines["model"].fillna(""),
                       "category": lines["category"], "work": lines["work"],
                       "amount": lines["amount"].map(f.unit_money)}), "tn_drill_lines", max_rows=12)

# ---- tenant x product ---------------------------------------------------------------------------
st.subheader("Tenant × product")
spread_it = st.toggle(f"Spread the {dd.SHARED_CHARGES} over products", key="tn_matrix_spread",
                      help="each tenant's shared charges go to its own products by the rule they were shared over "
                           "tenants with")
with dd.reading(url) as s:
    grid = ui.matrix(s, url, run_id, spread_it)
columns = list(grid.columns[1:])
# controlled rounding: every printed row and column adds up to its printed total (ledger.formats)
cells, row_totals, col_totals, grand = display_table([list(r) for r in grid[columns].itertuples(index=False)])
shown = pd.DataFrame({"tenant": [*grid["tenant"], "all tenants"],
                      **{c: [f.money(r[j]) for r in cells] + [f.money(col_totals[j])] for j, c in enumerate(columns)},
                      "tenant total": [f.money(v) for v in row_totals] + [f.money(grand)]})
ui.tables(shown, "tn_matrix", per=6, max_rows=len(shown))
st.caption("Each row and column adds up to its total as printed; each tenant's total is its cost. "
           + (f"{dd.SHARED_CHARGES_NOTE}." if spread_it else f"{dd.SHARED_CHARGES}: each tenant's lines with no "
              "product; turn on the spread to see them on the products.").replace("$", "\\$"))
