"""What every dashboard page shares: the ledger it reads, cached loaders, the run and plan pickers, the
formats of the sidebar's locale (from ``pages._formats``), and how tables and charts are shown.

Loaders are cached per ledger (its DB URL is part of every key) and per run (runs are immutable,
so a run's frames never go stale); the list of runs is re-read every few seconds. Sessions are
read-only (:func:`ledger.dashboard.reading`) and arguments with a leading underscore are
left out of the cache key, as Streamlit does for unhashable inputs.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st
from babel import Locale, UnknownLocaleError
from pages._formats import DASH, Formats, chart_locale, formats
from pages._widths import column_widths

from ledger import dashboard as dd
from ledger.formats import UNIT_COST_PLACES

#: Locales offered in the sidebar; `ledger dashboard --locale` (LEDGER_DASHBOARD_LOCALE) adds its own.
LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "sv_SE", "de_CH", "pt_BR", "ja_JP",
           "en_IN")
LOCALE_ENV = "LEDGER_DASHBOARD_LOCALE"


# ---- formats: the locale chosen in the sidebar ---------------------------------------------------

def default_locale() -> str:
    wanted = os.environ.get(LOCALE_ENV, "en_US")
    try:
        Locale.parse(wanted)
    except (UnknownLocaleError, ValueError, TypeError):
        return "en_US"
    return wanted


def locale_options() -> list[str]:
    first = default_locale()
    return [first, *(x for x in LOCALES if x != first)]


def current_locale() -> str:
    return st.session_state.get("locale") or default_locale()


def fmt(currency: str) -> Formats:
    """The formats of the locale chosen in the sidebar, for `currency` (the run's or the plan's)."""
    return formats(current_locale(), currency)


# ---- the ledger ---------------------------------------------------------------------------------

@st.cache_data(ttl=5, show_spinner=False)
def _state(home: str, url: str) -> dd.LedgerState:
    return dd.ledger_state()


def ledger_state(*, banner: bool = True, style: bool = True) -> dd.LedgerState:
    """The configured ledger (LEDGER_HOME, LEDGER_DATABASE_URL), looked at every few seconds. Every
    page calls it first, so it shows the alerts banner too while alerts are active (`banner`), and
    adds the layout's style (`style`: pages/_layout.py). The style is the page's own: written by
    app.py before the page runs, it was lost on a page opened at its own URL (only the default
    page kept it), so the tenant cards' labels were cut there."""
    from ledger import config
    from pages import _layout

    if style:
        _layout.apply_style()
    state = _state(str(config.ledger_home()), config.database_url())
    if banner:
        alerts_banner(state)
    return state


# ---- the guardrails: alerts as of the ledger's newest usage (ledger.dashboard.guardrails) -------

@st.cache_data(ttl=30, show_spinner=False)
def _alerts_state(url: str, home: str, runs: int) -> tuple[datetime, tuple] | None:
    from ledger import facts
    from ledger.dashboard import guardrails as dg
    from ledger.guardrails import budget_books

    with dd.reading(url) as s:
        as_of = dg.default_as_of(s, Path(home))
        if as_of is None:
            return None
        key = (tuple(sorted(b.ref for b in budget_books(s))),
               tuple(sorted((k, tuple(sorted(v))) for k, v in facts.committed_batches(s).items())))
    return as_of, key


def alerts_state(state: dd.LedgerState) -> tuple[datetime, tuple] | None:
    """(the alerts' default instant, what they depend on) or None: no budgets, or no usage."""
    if not state.has_store:
        return None
    return _alerts_state(state.url, str(state.home), state.runs)


@st.cache_resource(max_entries=8, show_spinner="Pricing the month so far (provisional)…")
def _alerts_at(url: str, home: str, as_of: datetime, key: tuple):
    from ledger.dashboard import guardrails as dg

    return dg.alerts_of(url, Path(home), as_of)


def alerts_at(state: dd.LedgerState, as_of: datetime):
    """``ledger alerts --as-of`` over the dashboard's ledger (cached per instant and per state of its
    budgets and facts). Raises the library's refusal (LedgerError)."""
    found = alerts_state(state)
    return _alerts_at(state.url, str(state.home), as_of, found[1] if found else ())


def alerts_banner(state: dd.LedgerState) -> None:
    """A banner on every page while alerts are active at the ledger's newest usage (nothing when
    none fire, there are no budgets, or they cannot be computed: the Budgets page says why)."""
    try:
        found = alerts_state(state)
        if found is None:
            return
        alerts = alerts_at(state, found[0])
    except Exception:  # noqa: BLE001  (a banner never breaks a page: the Budgets page shows the refusal)
        return
    if alerts.fired:
        from ledger.guardrails.render import alert_lines

        lines = alert_lines(alerts)
        more = f" (and {len(lines) - 3} more)" if len(lines) > 3 else ""
        body = "; ".join(lines[:3]).replace("$", "\\$")
        with st.container(key="alerts_banner"):
            st.warning(f"**{alerts.fired} alert{'s' * (alerts.fired != 1)} (provisional, {alerts.month_start:%Y-%m} as "
                       f"of {found[0]:%Y-%m-%d %H:%M} UTC)**: {body}{more}. See the Budgets page.",
                       icon=":material/notification_important:")


def refuse_unknown_facts_layout(state: dd.LedgerState) -> None:
    """Stop every page, with one line, when the home's facts are in a layout this ledger does not
    know (a newer ledger wrote them): the dashboard reads nothing it cannot place (docs/facts.md)."""
    from ledger.facts import LayoutError, layout_version

    try:
        layout_version(state.home)
    except LayoutError as e:
        st.error(str(e), icon=":material/error:")
        st.stop()


def show_guidance(state: dd.LedgerState) -> None:
    st.info(dd.guidance(state), icon=":material/info:")


def show_problems(lines, *, title: str | None = None) -> None:
    """A refused input as an error box, one line per problem (never a traceback)."""
    lines = [lines] if isinstance(lines, str) else list(lines)
    body = "\n".join(f"- {line}" for line in lines)
    st.error((f"**{title}**\n\n" if title else "") + body, icon=":material/error:")


# ---- cached loaders: DataFrames per run ---------------------------------------------------------

@st.cache_data(ttl=5, show_spinner=False)
def runs(_s, url: str) -> pd.DataFrame:
    return dd.runs_frame(_s)


@st.cache_resource(max_entries=8, show_spinner=False)
def run_data(_s, url: str, run_id: str):
    """A run's lines, usage and tasks (immutable, shared by every frame of the run)."""
    return dd.load_run_data(_s, run_id=run_id)


@st.cache_data(max_entries=16, show_spinner=False)
def headline(_s, url: str, run_id: str) -> pd.DataFrame:
    return dd.headline_frame(run_data(_s, url, run_id))


@st.cache_data(max_entries=16, show_spinner=False)
def provenance(_s, url: str, run_id: str) -> pd.DataFrame:
    return dd.provenance_frame(run_data(_s, url, run_id))


@st.cache_data(max_entries=16, show_spinner=False)
def category_daily(_s, url: str, run_id: str) -> pd.DataFrame:
    return dd.category_daily_frame(run_data(_s, url, run_id))


@st.cache_data(max_entries=16, show_spinner=False)
def by_kind(_s, url: str, run_id: str) -> pd.DataFrame:
    return dd.unattributed_frame(run_data(_s, url, run_id))


@st.cache_data(ttl=5, show_spinner=False)
def budgets_key(_s, url: str) -> tuple[str, ...]:
    """The loaded budgets books (``name@version``): the cache key of the frames that show budgets."""
    return tuple(b.ref for b in dd.budget_books(_s))


@st.cache_data(max_entries=32, show_spinner=False)
def unit_economics(_s, url: str, run_id: str, by: str, budgets: tuple[str, ...] = ()) -> pd.DataFrame:
    """The rows by `by`, with the budget in force for the month beside them when `budgets` (the
    loaded budgets books, :func:`budgets_key`) holds any."""
    books = dd.budget_books(_s) if budgets else ()
    return dd.unit_economics_frame(run_data(_s, url, run_id), by=by, books=books)


@st.cache_data(max_entries=16, show_spinner=False)
def without_product(_s, url: str, run_id: str) -> dict:
    return dd.without_product(run_data(_s, url, run_id))


@st.cache_data(max_entries=16, show_spinner=False)
def tenant_names(_s, url: str, run_id: str) -> list[str]:
    return dd.tenant_names(run_data(_s, url, run_id))


@st.cache_data(max_entries=32, show_spinner=False)
def tenants(_s, url: str, run_id: str, names: tuple[str, ...], budgets: tuple[str, ...] = ()) -> pd.DataFrame:
    return dd.tenants_frame(run_data(_s, url, run_id), names, dd.budget_books(_s) if budgets else ())


@st.cache_data(max_entries=32, show_spinner=False)
def tenant_daily(_s, url: str, run_id: str, names: tuple[str, ...]) -> pd.DataFrame:
    return dd.tenant_daily_frame(run_data(_s, url, run_id), names)


@st.cache_data(max_entries=16, show_spinner=False)
def spread(_s, url: str, run_id: str) -> pd.DataFrame:
    """Unit economics by product with the shared charges spread over products."""
    return dd.spread_frame(run_data(_s, url, run_id))


@st.cache_data(max_entries=16, show_spinner=False)
def matrix(_s, url: str, run_id: str, spread: bool) -> pd.DataFrame:
    return dd.matrix_frame(run_data(_s, url, run_id), spread=spread)


@st.cache_data(max_entries=32, show_spinner=False)
def drill(_s, url: str, run_id: str, tenant: str, product: str | None, model: str | None,
          category: str | None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A tenant's products, its models (of `product` when given) and its lines, filtered."""
    data = run_data(_s, url, run_id)
    return (dd.tenant_products_frame(data, tenant, category=category),
            dd.tenant_models_frame(data, tenant, product=product, category=category),
            dd.tenant_lines_frame(data, tenant, product=product, model=model, category=category))


@st.cache_resource(ttl=30, show_spinner=False)
def _price_books(_state: dd.LedgerState, url: str, status: str) -> dd.PriceBooks:
    return dd.price_books(_state)


def price_books(state: dd.LedgerState) -> dd.PriceBooks:
    """The books to price with (the ledger's, else the shipped folder); re-read every 30 s."""
    return _price_books(state, state.url, state.status)


# ---- the run picker -----------------------------------------------------------------------------

def pick_run(s, state: dd.LedgerState, prefix: str) -> pd.Series | None:
    """Period and run selectors (keys ``<prefix>_period`` and ``<prefix>_run``); the period's current
    run (a signed month's final run, else the newest) is preselected, and the period's close is said
    under them (:func:`show_close`). Returns the chosen run's row of :func:`ledger.dashboard.runs_frame`."""
    frame = runs(s, state.url)
    if frame.empty:
        show_guidance(state)
        return None
    periods = list(dict.fromkeys(frame.sort_values("start", ascending=False, kind="stable")["period"]))
    left, right = st.columns([1, 3])
    period = left.selectbox("Period (UTC, end exclusive)", periods, key=f"{prefix}_period")
    of_period = frame[frame["period"] == period].sort_values("current", ascending=False, kind="stable")
    labels = {r.run_id: (f"{r.run_id[:12]} · {r.role or 'superseded'}{' (true-up)' if r.kind == 'true-up' else ''} · "
                         f"created {r.created_at:%Y-%m-%d %H:%M} UTC · idle {r.idle_policy}")
              for r in of_period.itertuples()}
    run_id = right.selectbox("Allocation run (the current run first: a signed month's final run, else the newest)",
                             list(labels), format_func=labels.get, key=f"{prefix}_run")
    chosen = of_period[of_period["run_id"] == run_id].iloc[0]
    show_close(chosen)
    return chosen


def show_close(run: pd.Series) -> None:
    """The period's close under the run picker, as every surface says it: "closed by NAME at T,
    final run R" or "open" (docs/month-end.md)."""
    st.caption(f"Period {run['period']}: {run['close']}", help="A closed month is signed off with `ledger close "
               "--by NAME`; its final run never changes, and a true-up after the close is a run of its own.")


# ---- plans and budgets -------------------------------------------------------------------------

@dataclass(frozen=True)
class PlanSource:
    """A plan's TOML `text`, its file `name`, and the folder its curve files resolve against."""

    name: str
    text: str
    base_dir: str


def pick_plan(prefix: str) -> PlanSource | None:
    """A shipped example plan or an uploaded one (keys ``<prefix>_source``, ``<prefix>_plan``,
    ``<prefix>_upload``); None, with a hint shown, when there is none yet."""
    examples = {p.name: p for p in dd.example_plans()}
    kinds = ["example plan", "upload a plan"]
    source = st.radio("Plan", kinds, key=f"{prefix}_source", horizontal=True,
                      help="A plan (TOML) lists pools, usage forecasts, fixed charges and scenarios (docs/budgets.md).")
    if source == kinds[0]:
        if not examples:
            st.info("No example plan ships in `examples/` here: upload a plan instead.")
            return None
        name = st.selectbox("Example plan", list(examples), key=f"{prefix}_plan")
        path = examples[name]
        return PlanSource(name, path.read_text(encoding="utf-8"), str(path.parent))
    up = st.file_uploader("Plan (TOML)", type=["toml"], key=f"{prefix}_upload",
                          help="Curve files a plan names are read relative to the dashboard's working directory; "
                               "inline curves ([pool.curve] with points) need nothing else.")
    if up is None:
        st.info("Upload a plan (TOML), or pick an example plan.")
        return None
    from ledger.tomlfile import TomlError, decode

    try:
        text = decode(up.getvalue(), up.name)
    except TomlError as e:  # the line and column of the first byte that is not UTF-8
        show_problems(str(e))
        return None
    return PlanSource(up.name, text, os.getcwd())


@st.cache_resource(max_entries=16, show_spinner=False)
def _budget(name: str, text: str, base_dir: str, scenarios: tuple[str, ...] | None, books_key: tuple,
            _books: dd.PriceBooks):
    from ledger.budget import budget

    plan = dd.read_plan(text, name, base_dir=base_dir)
    priced_with = dd.plan_books(plan, _books)
    return budget(plan, priced_with.index, scenarios=list(scenarios) if scenarios else None,
                  generated_at=now_utc()), priced_with


def load_budget(source: PlanSource, books: dd.PriceBooks, scenarios: tuple[str, ...] | None = None):
    """(Budget, the PriceBooks it was priced with) of a plan: ``ledger budget PLAN``. Raises
    BudgetError with one line per problem."""
    key = (books.source, tuple(b.ref for b in books.books))
    return _budget(source.name, source.text, source.base_dir, scenarios, key, books)


@st.cache_data(max_entries=16, show_spinner=False)
def _budget_frames(name: str, text: str, base_dir: str, scenarios: tuple[str, ...] | None, books_key: tuple,
                   _books: dd.PriceBooks) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    b, _ = _budget(name, text, base_dir, scenarios, books_key, _books)
    return dd.budget_months_frame(b), dd.budget_totals_frame(b), dd.budget_pools_frame(b)


def budget_frames(source: PlanSource, books: dd.PriceBooks, scenarios: tuple[str, ...] | None = None):
    """The budget's (months, totals, pools) frames: see ledger.dashboard.budget_*_frame."""
    key = (books.source, tuple(b.ref for b in books.books))
    return _budget_frames(source.name, source.text, source.base_dir, scenarios, key, books)


@st.cache_data(max_entries=16, show_spinner=False)
def _comparison(_s, url: str, run_id: str, name: str, text: str, base_dir: str, scenario: str, books_key: tuple,
                _books: dd.PriceBooks, home: str) -> tuple[pd.DataFrame, dict]:
    b, priced_with = _budget(name, text, base_dir, (scenario,), books_key, _books)
    # with the index the forecast was priced with, the error is split into drivers (as the CLI does)
    c = dd.forecast_vs_actual(b, _s, run_id=run_id, scenario=scenario, index=priced_with.index, home=Path(home))
    places = formats(current_locale(), c.currency).places
    meta = {"month": c.month, "run_id": c.run_id, "currency": c.currency, "status": c.status,
            "run_price_books": list(c.price_books), "forecast_price_books": list(b.price_books),
            "priced_with": priced_with.where, "drivers": dd.drivers_frame(c, places),
            "drivers_notes": dd.drivers_notes(c),
            "tpm_statistic": None if c.drivers is None else c.drivers.statistic}
    matching = getattr(c, "matching", None)  # what the plan and the run share (ledger.budget.matching)
    meta["matching"] = None if matching is None else {
        "complete": matching.complete, "warnings": list(matching.warnings()),
        **{dim: list(getattr(matching, dim).matched) for dim in ("pools", "provider_models", "categories")}}
    return dd.comparison_frame(c, places), meta


def comparison(s, state: dd.LedgerState, run_id: str, source: PlanSource, books: dd.PriceBooks,
               scenario: str) -> tuple[pd.DataFrame, dict]:
    """``ledger budget compare``: the comparison frame of a run against a plan's month, and what it
    compares (month, run, currency, sizing status, price books). Raises BudgetError."""
    key = (books.source, tuple(b.ref for b in books.books))
    return _comparison(s, state.url, run_id, source.name, source.text, source.base_dir, scenario, key, books,
                       str(state.home))


@st.cache_resource(max_entries=16, show_spinner=False)
def _plan(name: str, text: str, base_dir: str):
    return dd.read_plan(text, name, base_dir=base_dir)


def plan_of(source: PlanSource):
    """The parsed plan (BudgetError listing the problems when it does not parse)."""
    return _plan(source.name, source.text, source.base_dir)


# ---- display helpers ----------------------------------------------------------------------------

#: A number as the formats write it: a symbol, code or sign before it, digits with their marks, a
#: symbol or unit after it (``$1,234.56``, ``54.486,23 $``, ``-2.7%``, ``30,098``, ``2.7 ~``).
_NUMBER = re.compile(r"[^\d]{0,5}?(\d[\d.,'\u00a0\u202f ]*\d|\d)[^\d]{0,5}")


def _numeric(values) -> bool:
    """Every cell a formatted number (a dash or "undefined" aside): such a column is right-aligned."""
    cells = [v for v in values if v not in (DASH, "", None) and not str(v).startswith("undefined")]
    return bool(cells) and all(isinstance(v, str) and _NUMBER.fullmatch(v.removesuffix(" ~")) for v in cells)


def table(frame: pd.DataFrame, key: str, *, max_rows: int = 20, help: dict[str, str] | None = None,
          column_config: dict | None = None) -> None:
    """A read-only table in a container keyed `key` (tests and the browser find it by that key),
    as wide as its container and tall enough to show `max_rows` rows without scrolling. Columns of
    formatted numbers are right-aligned; `help` gives a column's header a tooltip (what a short
    header means); a column whose widest cell the grid's sampling would miss gets the width that
    holds it (:mod:`pages._widths`). The pages keep headers short and cells free of long prose,
    so that every column shows at 1400 px."""
    help = help or {}
    widths = column_widths(frame)
    config: dict = {}
    for name in frame.columns:
        align = "right" if _numeric(frame[name]) else None
        if align or name in help or name in widths:
            config[name] = st.column_config.Column(name, help=help.get(name), alignment=align, width=widths.get(name))
    config.update(column_config or {})
    height = 38 + 35 * max(1, min(len(frame), max_rows)) + 2
    with st.container(key=key):
        st.dataframe(frame, hide_index=True, height=height, width="stretch", column_config=config or None)


def tables(frame: pd.DataFrame, key: str, *, per: int, **kwargs) -> None:
    """A wide table as several: the first column, then at most `per` further columns each, keyed
    `key`, `key_2`, ... (a tenant comparison of many tenants, a plan's twelve months)."""
    first, rest = frame.columns[:1], list(frame.columns[1:])
    for n, i in enumerate(range(0, max(1, len(rest)), per)):
        table(frame[[*first, *rest[i:i + per]]], key if n == 0 else f"{key}_{n + 1}", **kwargs)


def text_table(frame: pd.DataFrame, key: str) -> None:
    """A table of words (provenance, book sources): a static table whose cells wrap, never cut."""
    with st.container(key=key):
        st.table(frame, hide_index=True)


def floats(frame: pd.DataFrame, columns) -> pd.DataFrame:
    """A copy with Decimal columns as floats, for charts only (tables and tiles stay exact)."""
    out = frame.copy()
    for c in columns:
        out[c] = out[c].map(lambda v: None if v is None else float(v))
    return out


#: Axis label formats (d3): money grouped with the currency's symbol, trailing zeros dropped; unit
#: costs up to the decimals of the one unit-cost rule (:data:`ledger.formats.UNIT_COST_PLACES`).
MONEY_AXIS = "$,.2~f"
UNIT_AXIS = f"$,.{UNIT_COST_PLACES}~f"


def money_axis(currency: str, title: str, *, unit: bool = False, **kwargs) -> alt.Axis:
    """An axis of amounts in `currency`: its labels carry the currency symbol (``$2,500``), its
    title names the currency (``cost (USD)``)."""
    return alt.Axis(format=UNIT_AXIS if unit else MONEY_AXIS, title=f"{title} ({currency})", **kwargs)


def chart(spec, currency: str, key: str | None = None) -> None:
    """Show an Altair chart as wide as its container, its numbers in the sidebar's locale (decimal
    mark, grouping, `currency`'s symbol before or after the amount)."""
    spec = spec.configure(locale={"number": chart_locale(current_locale(), currency)})
    if key is None:
        st.altair_chart(spec, width="stretch")
        return
    with st.container(key=key):
        st.altair_chart(spec, width="stretch")


def stacked_bars(frame: pd.DataFrame, *, x: str, y: str, color: str, x_title: str, y_title: str,
                 currency: str) -> alt.Chart:
    """A stacked bar chart of an amount (tooltips show the exact amount formatted for the locale)."""
    f = fmt(currency)
    data = floats(frame, [y])
    data["shown"] = frame[y].map(f.money)
    return (alt.Chart(data).mark_bar()
            .encode(x=alt.X(f"{x}:T", title=x_title),
                    y=alt.Y(f"{y}:Q", stack="zero", axis=money_axis(currency, y_title)),
                    color=alt.Color(f"{color}:N", title=color.replace("_", " ")),
                    tooltip=[alt.Tooltip(f"{x}:T", title=x_title), alt.Tooltip(f"{color}:N"),
                             alt.Tooltip("shown:N", title=f"{y_title} ({currency})")]))


def now_utc() -> datetime:
    return datetime.now(timezone.utc)
