"""What every dashboard page shares: the ledger it reads, cached loaders, babel formats, the run picker.

Loaders are cached per ledger (its DB URL is part of every key) and per run (runs are immutable,
so a run's frames never go stale); the list of runs is re-read every few seconds. Sessions are
read-only (:func:`ledger.dashboard.reading`) and arguments with a leading underscore are
left out of the cache key, as Streamlit does for unhashable inputs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from functools import lru_cache

import altair as alt
import pandas as pd
import streamlit as st
from babel import Locale, UnknownLocaleError
from babel.numbers import format_currency, format_decimal, format_percent

from ledger import dashboard as dd
from ledger.money import quantize

#: Locales offered in the sidebar; `ledger dashboard --locale` (LEDGER_DASHBOARD_LOCALE) adds its own.
LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "sv_SE", "de_CH", "pt_BR", "ja_JP",
           "en_IN")
LOCALE_ENV = "LEDGER_DASHBOARD_LOCALE"
DASH = "—"


# ---- formats (babel, built once per locale and currency) ---------------------------------------

@dataclass(frozen=True)
class Formats:
    """Money, ratios and counts as `locale` writes them, money in `currency`."""

    locale: str
    currency: str

    def money(self, d: Decimal | None) -> str:
        """An amount at the currency's own decimals ($54,486.23; 54.486,23 $ in de_DE)."""
        return DASH if d is None else format_currency(d, self.currency, locale=self.locale)

    def unit_money(self, d: Decimal | None) -> str:
        """A per-unit amount (cost per task, per 1M tokens): below one unit of the currency up to 4
        decimals ($0.0967), else the currency's own ($31.18)."""
        if d is None:
            return DASH
        if abs(d) >= 1:
            return self.money(d)
        q = quantize(d, Decimal("0.0001"))
        q = q.quantize(Decimal(1)) if q == q.to_integral_value() else q.normalize()
        return format_currency(q, self.currency, locale=self.locale, decimal_quantization=False)

    def price(self, d: Decimal | None, currency: str) -> str:
        """A price as booked, every decimal kept (a price book's $0.125 per 1M tokens stays $0.125)."""
        if d is None:
            return DASH
        q = d.quantize(Decimal(1)) if d == d.to_integral_value() else d.normalize()
        return format_currency(q, currency, locale=self.locale, decimal_quantization=False)

    def pct(self, d: Decimal | None) -> str:
        """A ratio as a percentage with one decimal (2.7%; 2,7 % in de_DE)."""
        if d is None:
            return DASH
        return format_percent(d, format=_percent_pattern(self.locale), locale=self.locale)

    def count(self, n: int | float | None) -> str:
        return DASH if n is None or pd.isna(n) else format_decimal(int(n), locale=self.locale)

    def number(self, x: float | Decimal | None, digits: int = 1) -> str:
        if x is None or pd.isna(x):
            return DASH
        return format_decimal(round(Decimal(str(x)), digits), format="#,##0." + "0" * digits if digits else "#,##0",
                              locale=self.locale)


@lru_cache(maxsize=32)
def _percent_pattern(locale: str) -> str:
    """The locale's percent pattern with one decimal: ``#,##0.0%`` (en_US), ``#,##0.0 %`` (de_DE)."""
    pattern = Locale.parse(locale).percent_formats[None].pattern.split(";")[0]
    i = pattern.rfind("0")
    return pattern[:i + 1] + ".0" + pattern[i + 1:] if i >= 0 else pattern


@lru_cache(maxsize=32)
def formats(locale: str, currency: str) -> Formats:
    return Formats(locale, currency)


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


def ledger_state() -> dd.LedgerState:
    """The configured ledger (LEDGER_HOME, LEDGER_DATABASE_URL), looked at every few seconds."""
    from ledger import config

    return _state(str(config.ledger_home()), config.database_url())


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


@st.cache_data(max_entries=32, show_spinner=False)
def unit_economics(_s, url: str, run_id: str, by: str) -> pd.DataFrame:
    return dd.unit_economics_frame(run_data(_s, url, run_id), by=by)


@st.cache_data(max_entries=16, show_spinner=False)
def tenant_names(_s, url: str, run_id: str) -> list[str]:
    return dd.tenant_names(run_data(_s, url, run_id))


@st.cache_data(max_entries=32, show_spinner=False)
def tenants(_s, url: str, run_id: str, names: tuple[str, ...]) -> pd.DataFrame:
    return dd.tenants_frame(run_data(_s, url, run_id), names)


@st.cache_data(max_entries=32, show_spinner=False)
def tenant_daily(_s, url: str, run_id: str, names: tuple[str, ...]) -> pd.DataFrame:
    return dd.tenant_daily_frame(run_data(_s, url, run_id), names)


@st.cache_resource(ttl=30, show_spinner=False)
def _price_books(_state: dd.LedgerState, url: str, status: str) -> dd.PriceBooks:
    return dd.price_books(_state)


def price_books(state: dd.LedgerState) -> dd.PriceBooks:
    """The books to price with (the ledger's, else the shipped folder); re-read every 30 s."""
    return _price_books(state, state.url, state.status)


# ---- the run picker -----------------------------------------------------------------------------

def pick_run(s, state: dd.LedgerState, prefix: str) -> pd.Series | None:
    """Period and run selectors (keys ``<prefix>_period`` and ``<prefix>_run``); the newest run of
    the period is preselected. Returns the chosen run's row of :func:`ledger.dashboard.runs_frame`."""
    frame = runs(s, state.url)
    if frame.empty:
        show_guidance(state)
        return None
    periods = list(dict.fromkeys(frame.sort_values("start", ascending=False, kind="stable")["period"]))
    left, right = st.columns([1, 3])
    period = left.selectbox("Period (UTC, end exclusive)", periods, key=f"{prefix}_period")
    of_period = frame[frame["period"] == period]
    labels = {r.run_id: (f"{r.run_id[:12]} · {'current' if r.current else 'superseded'} · created "
                         f"{r.created_at:%Y-%m-%d %H:%M} UTC · idle {r.idle_policy}")
              for r in of_period.itertuples()}
    run_id = right.selectbox("Allocation run (the newest of a period is its current run)", list(labels),
                             format_func=labels.get, key=f"{prefix}_run")
    return of_period[of_period["run_id"] == run_id].iloc[0]


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
    try:
        text = up.getvalue().decode("utf-8")
    except UnicodeDecodeError:
        show_problems(f"{up.name}: not UTF-8 text")
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
                _books: dd.PriceBooks) -> tuple[pd.DataFrame, dict]:
    b, priced_with = _budget(name, text, base_dir, (scenario,), books_key, _books)
    c = dd.forecast_vs_actual(b, _s, run_id=run_id, scenario=scenario)
    meta = {"month": c.month, "run_id": c.run_id, "currency": c.currency, "status": c.status,
            "run_price_books": list(c.price_books), "forecast_price_books": list(b.price_books),
            "priced_with": priced_with.where}
    return dd.comparison_frame(c), meta


def comparison(s, state: dd.LedgerState, run_id: str, source: PlanSource, books: dd.PriceBooks,
               scenario: str) -> tuple[pd.DataFrame, dict]:
    """``ledger budget compare``: the comparison frame of a run against a plan's month, and what it
    compares (month, run, currency, sizing status, price books). Raises BudgetError."""
    key = (books.source, tuple(b.ref for b in books.books))
    return _comparison(s, state.url, run_id, source.name, source.text, source.base_dir, scenario, key, books)


@st.cache_resource(max_entries=16, show_spinner=False)
def _plan(name: str, text: str, base_dir: str):
    return dd.read_plan(text, name, base_dir=base_dir)


def plan_of(source: PlanSource):
    """The parsed plan (BudgetError listing the problems when it does not parse)."""
    return _plan(source.name, source.text, source.base_dir)


# ---- display helpers ----------------------------------------------------------------------------

def table(frame: pd.DataFrame, key: str, *, max_rows: int = 20, **kwargs) -> None:
    """A read-only table in a container keyed `key` (tests and the browser find it by that key),
    tall enough to show `max_rows` rows without scrolling."""
    height = 38 + 35 * max(1, min(len(frame), max_rows)) + 2
    with st.container(key=key):
        st.dataframe(frame, hide_index=True, height=height, **kwargs)


def floats(frame: pd.DataFrame, columns) -> pd.DataFrame:
    """A copy with Decimal columns as floats, for charts only (tables and tiles stay exact)."""
    out = frame.copy()
    for c in columns:
        out[c] = out[c].map(lambda v: None if v is None else float(v))
    return out


def stacked_bars(frame: pd.DataFrame, *, x: str, y: str, color: str, x_title: str, y_title: str,
                 currency: str) -> alt.Chart:
    """A stacked bar chart of an amount (tooltips show the exact amount formatted for the locale)."""
    f = fmt(currency)
    data = floats(frame, [y])
    data["shown"] = frame[y].map(f.money)
    return (alt.Chart(data).mark_bar()
            .encode(x=alt.X(f"{x}:T", title=x_title), y=alt.Y(f"{y}:Q", title=y_title, stack="zero"),
                    color=alt.Color(f"{color}:N", title=color.replace("_", " ")),
                    tooltip=[alt.Tooltip(f"{x}:T", title=x_title), alt.Tooltip(f"{color}:N"),
                             alt.Tooltip("shown:N", title=y_title)]))


def now_utc() -> datetime:
    return datetime.now(timezone.utc)
