"""Neutralize text that a spreadsheet would run as a formula (CSV/formula injection)."""
from __future__ import annotations

#: First characters that make Excel, LibreOffice or Google Sheets read a cell as a formula
#: (``=``, ``+``, ``-``, ``@``) or that hide one behind a tab or carriage return.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def safe_text(value: object) -> str | None:
    """`value` as text that no spreadsheet will evaluate: a leading formula trigger gets a single
    quote in front (``=HYPERLINK(...)`` -> ``'=HYPERLINK(...)``), the OWASP-recommended escape.
    None stays None. Apply it to every text cell of every workbook and CSV export, never to numbers."""
    if value is None:
        return None
    text = str(value)
    if text.startswith(FORMULA_TRIGGERS):
        return "'" + text
    return text
