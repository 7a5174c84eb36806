"""Column widths that hold every cell of a table, for the columns Streamlit's grid would size too narrow.

``st.dataframe`` draws on a canvas (glide-data-grid) and sizes a column from its header and a
sample of its cells: the first 9 rows and the last when there are more than 10, and among more
than 5 samples a cell at least twice their mean width is left out. A wider cell elsewhere is cut
(``gpu * hou…``). :func:`column_widths` repeats that sizing with the grid's font metrics and, where
a cell the sample misses is wider, gives the column the width that holds it.
"""
from __future__ import annotations

import math

import pandas as pd

#: Advance widths (px) of the grid's font, 400 14px "Source Sans", for the characters 32 to 126, as
#: a canvas measures them (Chromium); other characters count as :data:`OTHER`.
ASCII = (2.8, 4.05, 5.96, 6.96, 6.96, 11.54, 8.53, 3.49, 4.24, 4.24, 5.85, 6.96, 3.49, 4.35, 3.49, 4.9, 6.96, 6.96,
         6.96, 6.96, 6.96, 6.96, 6.96, 6.96, 6.96, 6.96, 3.49, 3.49, 6.96, 6.96, 6.96, 5.95, 11.86, 7.6, 8.23, 7.99,
         8.61, 7.38, 6.92, 8.64, 9.13, 3.68, 6.71, 8.11, 6.8, 10.18, 9.06, 9.3, 7.92, 9.3, 7.97, 7.48, 7.5, 9.03, 7.21,
         11.0, 7.18, 6.66, 7.55, 4.24, 4.9, 4.24, 6.96, 7.0, 7.59, 7.06, 7.74, 6.38, 7.77, 6.94, 4.09, 7.06, 7.62, 3.44,
         3.46, 6.93, 3.57, 11.61, 7.66, 7.59, 7.77, 7.77, 4.86, 5.87, 4.73, 7.62, 6.54, 10.07, 6.24, 6.54, 5.95, 4.24,
         3.37, 4.24, 6.96)
NARROW = {"\u00a0": 2.8, "\u202f": 1.68, "\u2019": 3.49}
OTHER = 11.2  # the widest of the other characters the pages write (an em dash)
#: The grid's cell padding (each side), smallest width and widest automatic width, in px.
PADDING, MIN_WIDTH, MAX_AUTO_WIDTH = 8, 50, 500


def text_width(text: str) -> float:
    """The drawn width of `text` in the grid's font (px), without padding."""
    return sum(ASCII[ord(ch) - 32] if 32 <= ord(ch) < 127 else NARROW.get(ch, OTHER) for ch in text)


def _cell(value) -> str:
    return "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)


def autosized(header: str, cells: list[str]) -> float:
    """The width the grid gives a column from its sample (see the module's docstring)."""
    rows = list(range(len(cells))) if len(cells) <= 10 else [*range(9), len(cells) - 1]
    sample = [text_width(cells[i]) + 2 * PADDING for i in rows]
    if len(sample) > 5:
        mean = sum(sample) / len(sample)
        sample = [0 if w >= 2 * mean else w for w in sample]
    return max(MIN_WIDTH, min(MAX_AUTO_WIDTH, math.ceil(max([text_width(header) + 2 * PADDING, *sample]))))


def column_widths(frame: pd.DataFrame) -> dict[str, int]:
    """Pixel widths for the columns whose widest cell the grid's sample misses (the others are
    left to the grid), each wide enough for that cell, at most :data:`MAX_AUTO_WIDTH`."""
    out = {}
    for name in frame.columns:
        cells = [_cell(v) for v in frame[name]]
        need = math.ceil(max([text_width(str(name)), *map(text_width, cells)]) + 2 * PADDING)
        if need > autosized(str(name), cells):
            out[str(name)] = min(need + 2, MAX_AUTO_WIDTH)  # 2 px for the rounding of a canvas's measure
    return out
