"""Layouts that hold from 1024 to 1400 pixels and wider: the page's style, and wide tables as parts.

At 1024 x 768 the sidebar (300 px) and Streamlit's wide-layout margins (80 px a side) leave the
page 552 px; :data:`STYLE` narrows the margins below 1280 px (676 px of page at 1024) and lets a
metric's label wrap instead of ending in "…". A table wider than that is laid out as parts
(:func:`table_in_parts`): each part repeats the first column and sits in a box as wide as its
columns, in a row that wraps, so the parts stand side by side on a wide screen and one under the
other on a narrow one, every column whole (tests/test_dashboard_browser.py measures both widths).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from pages._widths import MAX_AUTO_WIDTH, autosized, column_widths

#: Below 1280 px the page's side margins shrink to 1.5 rem; metric labels wrap everywhere.
STYLE = """<style>
@media (max-width: 1279.98px) {
  [data-testid="stMainBlockContainer"] { padding-left: 1.5rem; padding-right: 1.5rem; }
}
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] * { white-space: normal !important;
  overflow: visible !important; text-overflow: clip !important; }
</style>"""
#: Pixels a column's header needs beyond its text for a help icon, and a grid beyond its columns.
HELP_ICON, GRID_EXTRA = 28, 4


def apply_style() -> None:
    """Add :data:`STYLE` to the page: every page does, once per run, through
    ``_common.ledger_state`` (written by app.py before the page ran, a page opened at its own URL
    lost it and its metric labels were cut)."""
    st.html(STYLE)


def _cell(v) -> str:
    return "" if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v)


def grid_width(frame: pd.DataFrame, help: dict[str, str] | None = None) -> int:
    """The width (px) a grid of `frame` takes with every column whole: each column as the grid
    sizes it, or wider where :func:`pages._widths.column_widths` widens it, plus help icons."""
    help = help or {}
    wider = column_widths(frame)
    total = 0
    for name in frame.columns:
        cells = [_cell(v) for v in frame[name]]
        w = wider.get(str(name)) or autosized(str(name), cells)
        total += min(MAX_AUTO_WIDTH, w + (HELP_ICON if name in help else 0))
    return math.ceil(total + GRID_EXTRA)


def table_in_parts(frame: pd.DataFrame, key: str, parts: Sequence[Sequence[str]], *, table, **kwargs) -> None:
    """`frame` as tables side by side that wrap one under the other when the page is narrow: part
    ``i`` shows the first column and the columns `parts[i]`, keyed `key`, `key_2`, ...; `table` is
    the page's table function (``pages._common.table``), given `kwargs`."""
    first = frame.columns[0]
    with st.container(horizontal=True, key=f"{key}_parts", gap="medium"):
        for n, cols in enumerate(parts):
            part = frame[[first, *cols]]
            helps = {k: v for k, v in (kwargs.get("help") or {}).items() if k in part.columns}
            extra = {}
            if kwargs.get("column_config") is not None:  # a column's config goes with the part that shows it
                extra["column_config"] = {k: v for k, v in kwargs["column_config"].items() if k in part.columns} or None
            with st.container(width=grid_width(part, helps)):
                table(part, key if n == 0 else f"{key}_{n + 1}", **{**kwargs, "help": helps or None, **extra})
