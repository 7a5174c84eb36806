"""Sizing and budget (capacity engineers): SLA-first sizing from a measured curve, and a plan's budget."""
from __future__ import annotations

from datetime import datetime, time, timezone

import altair as alt
import pandas as pd
import streamlit as st
from pages import _common as ui
from pages import _layout
from pages import _sizing as sz

from ledger import dashboard as dd
from ledger.budget import BudgetError
from ledger.formats import display_column, display_groups
from ledger.money import MoneyError, to_decimal
from ledger.pricebook import NoPriceError
from ledger.hints import say
from ledger.sizing import DRAFT, FORMATS, Reserves, SizingError
from ledger.sizing.service import PriceSpec, SizingJob

st.title("Sizing and budget")
state = ui.ledger_state()
books = ui.price_books(state)
# only the open tab runs (a click on the other reruns the page): the page answers for what it shows
sizing_tab, budget_tab = st.tabs(["SLA-first sizing", "Budget from a plan"], key="sz_tab", on_change="rerun")

SOURCES = ["a plan's pool", "anchors", "upload result files"]
# Measured: Llama-3.3-70B bf16 on 4xH200, SGLang bench_serving (datacrunch-research/h200-benchmarks),
# concurrency:tok/s/user. Anchors carry no aggregate throughput: c* x tok/s/user is used instead.
DEFAULT_ANCHORS = "7.8:73.32,17.1:67.43,51.6:51.49"
NOT_PRICED = sz.NOT_PRICED


# ================================================================================================
def sizing() -> None:
    """SLA-first sizing: a curve, the parameters, a price; the result as `ledger size` gives it."""
    st.caption("The SLA (output tok/s per user) picks the concurrency c*, c* the replica throughput, that the "
               "replicas and GPUs: the same engine as `ledger size` (docs/sizing.md).")
    setup, result_col = st.columns([2, 3], gap="large")
    with setup:
        curve, pool = curve_choice()
        inputs = parameters(curve, pool)
    with result_col:
        result = sized(curve, inputs)
        if result is not None:
            frame = dd.sizing_frame(result)
            currency = result.pricing.currency if result.pricing else "USD"
            f = ui.fmt(currency)
            result_tiles(result, frame, f, pool, inputs["gpus_per_replica"])
    if result is not None:  # the table and the chart take the page's whole width
        result_table(result, frame, f, currency)


def curve_choice():
    """The curve to size with (None until one is chosen and read) and the plan's pool it is from
    (None for anchors and uploaded files); the inputs then follow the curve source."""
    curve = None
    pool = None
    identity: tuple = ("plan",)
    source = st.radio("Curve", SOURCES, key="sz_source", horizontal=True,
                      help="Picking another curve source starts its inputs afresh: a plan's pool brings its own "
                           "parameters; anchors and uploaded files start from `ledger size`'s defaults.")
    try:
        if source == SOURCES[0]:
            examples = [p.name for p in dd.example_plans()]
            if not examples:
                st.info("No example plan ships in `examples/` here: use anchors or upload result files.")
            else:
                plan_name = st.selectbox("Plan", examples, key="sz_plan", on_change=sz.on_plan)
                pools = sz.plan_pools(plan_name)
                if not pools:
                    st.info(f"{plan_name} has no self-hosted pool: use anchors or upload result files.")
                else:
                    pool_name = st.selectbox("Pool", list(pools), key="sz_pool")
                    pool = pools[pool_name]
                    curve = pool.curve
                    identity = ("plan", plan_name, pool_name)
        elif source == SOURCES[1]:
            identity = ("anchors",)
            text = st.text_input("Anchors (concurrency:tok/s/user, ...)", value=DEFAULT_ANCHORS, key="sz_anchors",
                                 help="Measured points only. The default: Llama-3.3-70B bf16 on 4xH200, SGLang "
                                      "(datacrunch-research/h200-benchmarks).")
            curve = dd.curve_from_anchors(text)
        else:
            files = st.file_uploader("Result files (several: one per load level, merged)", accept_multiple_files=True,
                                     type=["csv", "json", "jsonl", "txt"], key="sz_upload",
                                     help="A curve CSV, or the results of vllm bench serve, SGLang bench_serving, "
                                          "GuideLLM or AIPerf.")
            fmt_col, sel_col = st.columns(2)
            fmt = fmt_col.selectbox("Format", list(FORMATS), key="sz_format")
            select = sel_col.text_input("Pick a curve (piece of its source, model or workload)", key="sz_select")
            identity = ("upload", tuple((f.name, f.size) for f in files or ()), fmt, select)
            if files:
                curve = dd.curve_from_files([(f.name, f.getvalue()) for f in files], fmt=fmt, select=select)
            else:
                st.info("Upload one or more result files.")
    except (SizingError, BudgetError) as e:
        ui.show_problems(say(e.problems, sz.NAMES), title="This curve cannot be read")
        curve = None
    sz.follow_source(identity, pool=pool, curve=curve)
    return curve, pool


def parameters(curve, pool) -> dict:
    """The sizing's inputs (kept in ``sz_*`` session keys, set by :func:`pages._sizing.follow_source`)
    and the GPU price: the widgets' values by the job's field names."""
    a, b = st.columns(2)
    tpm = a.number_input("TPM (output tokens per minute)", min_value=1.0, step=10000.0, format="%.0f", key="sz_tpm")
    gpr = b.number_input("GPUs per replica", min_value=1, step=1, key="sz_gpr")
    slas_text = st.text_input("SLAs (tok/s per user, comma-separated)", key="sz_slas")
    if curve is not None and st.button("SLAs at the measured points", key="sz_slas_measured"):
        st.session_state["sz_slas"] = sz.measured_slas(curve)
        st.rerun()
    util = st.slider("Planned utilization of replica throughput", min_value=0.05, max_value=1.0, step=0.05,
                     key="sz_util")
    r1, r2, r3 = st.columns(3)
    failure = r1.number_input("Failure reserve", min_value=0, step=1, key="sz_failure", help="Failover replicas (N+K).")
    canary = r2.number_input("Canary", min_value=0, step=1, key="sz_canary", help="Canary replicas.")
    warm = r3.number_input("Warm reserve", min_value=0, step=1, key="sz_warm", help="Warm reserve replicas.")
    interpolate = st.checkbox("Interpolate between points (DRAFT)", key="sz_interpolate")
    repair = st.checkbox("Repair the curve", key="sz_repair", help="Keep the upper envelope, say what was dropped.")
    ttft = st.number_input("TTFT limit at c*, ms (0: none)", min_value=0.0, step=50.0, key="sz_ttft")
    return {"tpm": float(tpm), "gpus_per_replica": int(gpr), "slas_text": slas_text, "util": float(util),
            "reserves": Reserves(failure=int(failure), canary=int(canary), warm=int(warm)),
            "interpolate": bool(interpolate), "repair": bool(repair), "ttft_limit_ms": float(ttft) or None,
            **price_inputs(pool)}


def price_inputs(pool) -> dict:
    """The GPU-time price in force: the device (or not priced), region and purchase option, the day
    and the hours per month (``ledger size``'s default)."""
    st.markdown("**Price** (GPU-time in force, from " + books.where + ")")
    p1, p2 = st.columns(2)
    day = p1.date_input("Price in force at 00:00 UTC of", value=ui.now_utc().date(), key="sz_at")
    hours_text = p2.text_input("Hours per month", value=str(dd.sizing_defaults()["hours_per_month"]), key="sz_hours")
    at = datetime.combine(day, time(0), tzinfo=timezone.utc)
    gpu_prices = dd.gpu_prices_frame(books.books, at)
    devices = [NOT_PRICED, *sorted(gpu_prices["device"].unique())]
    device = sz.choose(st, "Device", devices, "sz_device", default=pool.device if pool else NOT_PRICED)
    of_device = gpu_prices[gpu_prices["device"] == device]
    regions = sorted(of_device["region"].unique()) or ["*"]
    # one under the other: side by side, half of the inputs' column cuts "on_demand" at 1024 px
    region = sz.choose(st, "Region", regions, "sz_region", default=pool.region if pool else None,
                       disabled=device == NOT_PRICED)
    options = sorted(of_device[of_device["region"] == region]["purchase_option"].unique()) or ["*"]
    option = sz.choose(st, "Purchase option", options, "sz_option", default=pool.purchase_option if pool else None,
                       disabled=device == NOT_PRICED)
    return {"device": None if device == NOT_PRICED else device, "region": region, "purchase_option": option,
            "at": at, "hours_text": hours_text}


def sized(curve, inputs: dict):
    """The sizing service (``ledger size``'s) on a job of the page's inputs, or None with why not."""
    problems = []
    slas: list[float] = []
    for part in (p.strip() for p in (inputs["slas_text"] or "").split(",")):
        if part:
            try:
                slas.append(float(part))
            except ValueError:
                problems.append(f"SLAs: {part!r} is not a number of tok/s per user")
    if not slas and not problems:
        problems.append("SLAs: give one or more, such as 20,50,70")
    try:
        hours = to_decimal(inputs["hours_text"], what="hours per month")
    except MoneyError as e:
        problems.append(str(e))
    if curve is None:
        st.info("Choose a curve to size with.")
        return None
    if problems:
        ui.show_problems(problems, title="Cannot size yet")
        return None
    price = None if inputs["device"] is None else PriceSpec(
        device=inputs["device"], region=inputs["region"] or "*", purchase_option=inputs["purchase_option"] or "*",
        at=inputs["at"], hours_per_month=hours, books=tuple(books.books))
    job = SizingJob(curve=curve, tpm=inputs["tpm"], slas=tuple(slas), gpus_per_replica=inputs["gpus_per_replica"],
                    util=inputs["util"], reserves=inputs["reserves"], interpolate=inputs["interpolate"],
                    ttft_limit_ms=inputs["ttft_limit_ms"], repair=inputs["repair"], price=price)
    try:
        return dd.size_fleet(job)
    except SizingError as e:
        ui.show_problems(say(e.problems, sz.NAMES), title="The sizing engine refused")
    except NoPriceError as e:
        ui.show_problems(str(e), title="No price in force")
    return None


def result_tiles(result, frame, f, pool, gpr: int) -> None:
    """VERDICT or DRAFT, the GPUs, the cost and c* at the pool's SLA (else the first), and the
    context ``ledger size`` prints above its table."""
    focus = frame.iloc[0]
    if pool is not None and pool.sla in set(frame["sla_tok_s_user"]):
        focus = frame[frame["sla_tok_s_user"] == pool.sla].iloc[0]
    badge = (":orange-badge[DRAFT] interpolated between measured points (linear in log concurrency)"
             if result.status == DRAFT else ":green-badge[VERDICT] measured points only")
    with st.container(key="sz_status"):
        st.markdown(badge)
    currency = result.pricing.currency if result.pricing else "USD"
    with st.container(key="sz_tiles", horizontal=True):
        sla = float(focus["sla_tok_s_user"])
        sla_text = f.number(sla, 0 if sla.is_integer() else 1)
        st.metric(f"GPUs at {sla_text} tok/s/user", f.count(focus["gpus"]), border=True,
                  help=f"{focus['replicas_serving']} serving + {focus['replicas_reserve']} reserve replicas "
                       f"x {gpr} GPUs")
        st.metric(f"{currency}/month at {sla_text} tok/s/user",
                  f.money(focus["monthly_cost"]) if result.pricing else "not priced", border=True)
        st.metric("c* (requests in flight per replica)",
                  f.number(focus["c_star"], 1) + ("" if focus["c_star_measured"] else " ~"), border=True)
    st.code("\n".join(say(dd.sizing_context(result), sz.NAMES)), language=None, wrap_lines=True)


def result_table(result, frame, f, currency: str) -> None:
    """The SLA-first table, GPUs and cost by SLA as a chart, and the curve's measured points."""
    shown = pd.DataFrame({
        "SLA tok/s/user": frame["sla_tok_s_user"].map(lambda v: f.number(v, 1)),
        "c*": [f.number(c, 1) + ("" if m else " ~")
               for c, m in zip(frame["c_star"], frame["c_star_measured"], strict=True)],
        "tok/s/user at c*": frame["tok_s_user"].map(lambda v: f.number(v, 1)),
        "replica output tok/s": frame["replica_output_tok_s"].map(lambda v: f.number(v, 1)),
        "basis": frame["throughput_basis"], "limited by": frame["limited_by"],
        "replicas": [f"{s}+{r}" if r else f"{s}" for s, r in zip(frame["replicas_serving"],
                                                                 frame["replicas_reserve"], strict=True)],
        "GPUs": frame["gpus"].map(f.count),
        f"{currency}/month": frame["monthly_cost"].map(f.money) if result.pricing else "not priced",
        "capacity tok/GPU-s": frame["capacity_tokens_per_gpu_s"].map(lambda v: f.number(v, 1)),
    })
    # in two parts, side by side at 1400 px and one under the other at 1024 (pages/_layout.py)
    _layout.table_in_parts(shown, "sz_table", [["c*", "replicas", "GPUs", f"{currency}/month"],
                                                    ["tok/s/user at c*", "replica output tok/s", "basis",
                                                     "limited by", "capacity tok/GPU-s"]], table=ui.table,
                           help={"c*": "requests in flight per replica at the SLA (~: between measured points, "
                                       "DRAFT)", "replicas": "serving + reserve replicas",
                                 "capacity tok/GPU-s": "output tokens per GPU-second at c*"})
    chart = ui.floats(frame, ["monthly_cost"]) if result.pricing else frame.assign(monthly_cost=None)
    base = alt.Chart(chart).encode(x=alt.X("sla_tok_s_user:Q", title="SLA (output tok/s per user)"))
    gpus = base.mark_line(point=True, color="#1f77b4").encode(
        y=alt.Y("gpus:Q", title="GPUs", axis=alt.Axis(titleColor="#1f77b4")),
        tooltip=[alt.Tooltip("sla_tok_s_user:Q", title="SLA"), alt.Tooltip("gpus:Q", title="GPUs")])
    layers = [gpus]
    if result.pricing:
        layers.append(base.mark_line(point=True, strokeDash=[4, 3], color="#d62728").encode(
            y=alt.Y("monthly_cost:Q", axis=ui.money_axis(currency, "cost per month", titleColor="#d62728")),
            tooltip=[alt.Tooltip("sla_tok_s_user:Q", title="SLA"),
                     alt.Tooltip("monthly_cost:Q", title=f"cost per month ({currency})", format="$,.2f")]))
    ui.chart(alt.layer(*layers).resolve_scale(y="independent"), currency, key="sz_chart")
    with st.expander("Measured points of the curve"):
        points = dd.curve_points_frame(result.curve)
        ui.table(pd.DataFrame({"concurrency": points["concurrency"].map(lambda v: f.number(v, 2)),
                               "tok/s/user": points["tok_s_user"].map(lambda v: f.number(v, 2)),
                               "output tok/s": points["output_tok_s"].map(lambda v: f.number(v, 1)),
                               "TTFT ms": points["ttft_ms"].map(lambda v: f.number(v, 1))}), "sz_points")

# ================================================================================================
def pools_table(pools: pd.DataFrame, f) -> None:
    """A scenario's pools month by month, in two parts (side by side at 1400 px, one under the other
    at 1024: pages/_layout.py)."""
    pool_frame = pd.DataFrame({
        "pool": [f"{p} {part}".strip() for p, part in zip(pools["pool"], pools["part"], strict=True)],
        "month": pools["month"], "sizing": pools["status"],
        "TPM": pools["tpm"].map(lambda v: f.number(v, 0)),
        "replicas": [f"{s}+{r}" if r else f"{s}"
                     for s, r in zip(pools["replicas_serving"], pools["replicas_reserve"], strict=True)],
        "GPUs": pools["gpus"].map(f.count), "hours": pools["hours"].map(lambda v: f.number(v, 1)),
        "price per GPU-hour": [f.price(p, c)
                               for p, c in zip(pools["price_per_gpu_hour"], pools["currency"], strict=True)],
        "cost": pools["cost"].map(f.money), "price source": pools["price_source"]})
    _layout.table_in_parts(pool_frame, "bg_pools", [["month", "sizing", "TPM", "replicas", "GPUs"],
                                                    ["month", "hours", "price per GPU-hour", "cost",
                                                     "price source"]], table=ui.table)


def budget() -> None:
    """A plan priced month by month per scenario, as `ledger budget PLAN`."""
    st.caption("A plan priced month by month with the prices in force, per scenario: the same as "
               "`ledger budget PLAN`. Sizing runs SLA-first for every pool and month.")
    source = ui.pick_plan("bg")
    b = None
    if source is not None:
        try:
            plan = ui.plan_of(source)
            names = [s.name for s in plan.scenarios]
            picked = st.multiselect("Scenarios", names, default=names, key="bg_scenarios")
            if not picked:
                st.info("Pick one or more scenarios.")
            else:
                b, priced_with = ui.load_budget(source, books, tuple(picked))
        except BudgetError as e:
            ui.show_problems(e.problems, title=f"{source.name} cannot be budgeted")
    if b is not None:
        f = ui.fmt(b.currency)
        months, totals, all_pools = ui.budget_frames(source, books, tuple(picked))
        badge = ":orange-badge[DRAFT]" if b.status == DRAFT else ":green-badge[VERDICT]"
        st.markdown(f"**{b.plan.name}** · {b.currency} · {b.plan.months[0]} to {b.plan.months[-1]} "
                    f"({len(b.plan.months)} months) · sizing {badge} · priced with {priced_with.where}")
        with st.container(key="bg_tiles", horizontal=True):
            for _, row in totals.iterrows():
                st.metric(f"{row['scenario']}: total over {len(b.plan.months)} months", f.money(row["total"]),
                          border=True)
        chart = ui.floats(months, ["total"])
        chart["month"] = pd.to_datetime(chart["month"] + "-01")
        chart["shown"] = months["total"].map(f.money)
        ui.chart(alt.Chart(chart).mark_line(point=True).encode(
            x=alt.X("month:T", title="month", axis=alt.Axis(format="%Y-%m")),
            y=alt.Y("total:Q", axis=ui.money_axis(b.currency, "cost per month")),
            color=alt.Color("scenario:N", sort=list(picked)),
            tooltip=["scenario:N", alt.Tooltip("month:T", format="%Y-%m"), alt.Tooltip("shown:N", title="total")]),
            b.currency, key="bg_chart")
        st.subheader("Month by month, by quarter")
        # as `ledger budget forecast`: each calendar quarter's months, then its subtotal, then the
        # total; display-rounded so that the months add up to their quarter and the quarters to the
        # total as shown (ledger.formats.display_groups; docs/exports.md)
        quarters = b.quarters()
        grouped = {s: display_groups([[b.total(s, m) for m in ms] for _, ms in quarters], f.places) for s in picked}
        labels, cells = [], {s: [] for s in picked}
        month_shown: dict[tuple[str, str], object] = {}
        for k, (q, ms) in enumerate(quarters):
            for i, m in enumerate(ms):
                labels.append(m)
                for s in picked:
                    cells[s].append(f.money_at(grouped[s][0][k][i], f.places))
                    month_shown[(s, m)] = grouped[s][0][k][i]
            labels.append(q if len(ms) == 3 else f"{q} ({len(ms)} of 3 months)")
            for s in picked:
                cells[s].append(f.money_at(grouped[s][1][k], f.places))
        labels.append("total")
        for s in picked:
            cells[s].append(f.money_at(grouped[s][2], f.places))
        ui.table(pd.DataFrame({"month": labels, **cells}), "bg_months", max_rows=len(labels))
        detail = st.selectbox("Scenario in detail", picked, index=picked.index("base") if "base" in picked else 0,
                              key="bg_detail_scenario")
        one = months[months["scenario"] == detail]
        used = [c for c in dd.CATEGORIES if any(v != 0 for v in one[c])]
        st.markdown(f"**Scenario {detail} by category** (columns: months)")
        by_month = one.set_index("month")
        # each month's categories add up to the month as shown in the table above
        detail_cells = {m: display_column([by_month.loc[m, c] for c in used], f.places,
                                          total=month_shown[(detail, m)])[0] for m in by_month.index}
        ui.tables(pd.DataFrame({"category": [*(c.replace("_", " ") for c in used), "total"],
                                **{m: [*(f.money_at(v, f.places) for v in detail_cells[m]),
                                       f.money_at(month_shown[(detail, m)], f.places)]
                                   for m in by_month.index}}),
                  "bg_detail", per=6, max_rows=len(used) + 1)
        pools = all_pools[all_pools["scenario"] == detail]
        st.markdown(f"**Pools, scenario {detail}** (a month splits where a price changes)")
        pools_table(pools, f)
        locale = ui.current_locale()

        def _workbook(budget=b, locale: str = locale) -> bytes:
            return dd.budget_workbook(budget, locale=locale)

        def _csv(budget=b) -> str:
            from ledger.budget.render import budget_as_csv

            return budget_as_csv(budget)

        with st.container(key="bg_downloads", horizontal=True):
            st.download_button("Budget workbook (.xlsx)", _workbook, file_name=f"budget-{b.plan.name}.xlsx",
                               mime="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", key="bg_xlsx",
                               on_click="ignore", icon=":material/download:",
                               help="Summary as live formulas over the detail, a provenance sheet "
                                    "(`ledger budget --xlsx`).")
            st.download_button("Budget (.csv)", _csv, file_name=f"budget-{b.plan.name}.csv", mime="text/csv",
                               key="bg_csv", on_click="ignore", icon=":material/download:")
        st.caption("Price books: " + ", ".join(b.price_books) + f". Plan sha256 {b.plan.digest[:12]}.")


with sizing_tab:
    if sizing_tab.open:
        sizing()
with budget_tab:
    if budget_tab.open:
        budget()
