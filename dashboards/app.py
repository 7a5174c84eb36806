"""The ledger dashboard: finance, product owners and capacity engineers, over the current ledger home.

Run it with ``ledger dashboard`` (or ``streamlit run dashboards/app.py``). It reads LEDGER_HOME and
LEDGER_DATABASE_URL and never writes to the ledger; every number comes from ledger.* functions.
"""
from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="ledger: inference unit economics", page_icon=":material/receipt_long:",
                   layout="wide")

from pages import _common as ui  # noqa: E402  (set_page_config must come first)

PAGES = {
    # The default page is served at the root URL.
    "Finance": [st.Page("pages/unit_economics.py", title="Unit economics", icon=":material/payments:",
                        default=True),
                st.Page("pages/reconcile.py", title="Bill reconciliation", icon=":material/receipt:",
                        url_path="reconcile")],
    "Product owners": [st.Page("pages/tenants.py", title="Tenants", icon=":material/groups:", url_path="tenants"),
                       st.Page("pages/trend.py", title="Trend", icon=":material/trending_up:", url_path="trend")],
    "Capacity": [st.Page("pages/workload.py", title="Workload", icon=":material/monitoring:", url_path="workload"),
                 st.Page("pages/sizing_budget.py", title="Sizing and budget", icon=":material/dns:",
                         url_path="sizing-budget"),
                 st.Page("pages/forecast_actual.py", title="Forecast vs actual", icon=":material/compare_arrows:",
                         url_path="forecast-vs-actual"),
                 st.Page("pages/whatif.py", title="What if", icon=":material/alt_route:", url_path="what-if")],
    "Reference": [st.Page("pages/price_books.py", title="Price books", icon=":material/sell:",
                          url_path="price-books")],
    "Guardrails": [st.Page("pages/budgets.py", title="Budgets and alerts", icon=":material/savings:",
                           url_path="budgets")],
}

page = st.navigation(PAGES)

state = ui.ledger_state(banner=False, style=False)  # each page shows the alerts banner and the style itself
ui.refuse_unknown_facts_layout(state)
with st.sidebar:
    st.selectbox("Locale (money and numbers)", ui.locale_options(), key="locale",
                 help="How amounts, ratios and counts are written; amounts stay in the run's or plan's currency.")
    st.caption(f"Ledger home: `{state.home}`  \nDatabase: `{state.database}`  \nStatus: {state.message}")

page.run()
