"""Workbooks that print (issue 28): one unit-cost format per column, the Lines sheet filtered, and
the allocation workbook printed to PDF by LibreOffice headless with every label and definition whole."""
from __future__ import annotations

import re
import shutil
import subprocess
from decimal import Decimal as D

import openpyxl
import pytest

from ledger.economics import ALL_IN_DEFINITION, OWN_DEFINITION
from ledger.export.allocation_summary import OWN_ALL_TENANTS_LABEL
from ledger.export.xlsx import unit_column_format
from test_export_summary import _two_figures


def test_a_unit_cost_column_has_one_format():
    # the demo's acme 0.09666 beside globex 0.238779: both at 6 decimals ($0.096660), never optional digits
    assert unit_column_format("USD", "en_US", [D("0.09666"), D("0.238779"), None]) == \
        '"$"#,##0.000000;"-$"#,##0.000000'
    # a column with a value of 1 or more takes the currency's own decimals, as on every other surface
    assert unit_column_format("USD", "en_US", [D("0.5"), D("20.0333")]) == '"$"#,##0.00;"-$"#,##0.00'
    assert unit_column_format("EUR", "de_DE", [D("0.5")]) == '#,##0.000000"\xa0€";"-"#,##0.000000"\xa0€"'


def _pdf_text(xlsx, outdir) -> str:
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        pytest.skip("LibreOffice (soffice) is not installed")
    from pypdf import PdfReader

    subprocess.run([soffice, "--headless", "--norestore", f"-env:UserInstallation={(outdir / 'lo').as_uri()}",
                    "--convert-to", "pdf", "--outdir", str(outdir), str(xlsx)], check=True, capture_output=True,
                   timeout=180)
    return "\n".join(p.extract_text() for p in PdfReader(outdir / (xlsx.stem + ".pdf")).pages)


def test_the_workbook_prints_whole_labels_and_definitions(tmp_path):
    from ledger.export import allocation_as_xlsx

    path = tmp_path / "run.xlsx"
    allocation_as_xlsx(_two_figures(), path=path)
    wb = openpyxl.load_workbook(path)
    lines = wb["Lines"]
    assert lines.auto_filter.ref == f"A1:{openpyxl.utils.get_column_letter(lines.max_column)}{lines.max_row}"
    cps = wb["Cost per success"]
    for r in range(2, cps.max_row + 1):  # each row as tall as its wrapped definition (3 lines at least)
        assert cps.row_dimensions[r].height >= 45, r
    assert {cps.cell(row=r, column=5).number_format for r in range(2, cps.max_row + 1)} == {'"$"#,##0.00;"-$"#,##0.00'}

    text = " ".join(_pdf_text(path, tmp_path / "pdf").split())
    # the Summary's longest label is whole (it read "cost per successful task (own cost), all")
    assert OWN_ALL_TENANTS_LABEL in text
    # every definition of the Cost per success sheet is printed whole, the rows below it not over it:
    # the all-in definition once, the own-cost one once per tenant (a and b), words in order
    flat = re.sub(r"\s+", " ", text)
    assert flat.count("all-in = " + ALL_IN_DEFINITION) >= 1
    assert flat.count("own cost = " + OWN_DEFINITION) >= 2
