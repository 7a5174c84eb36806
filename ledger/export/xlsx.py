"""Workbook helpers shared by every export: typed cells, currency formats from babel, sheets with
frozen headers and fitted widths, and the provenance sheet."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime, timezone
from decimal import Decimal
from functools import lru_cache
from pathlib import Path

from babel import Locale, UnknownLocaleError
from babel.numbers import get_currency_precision, get_currency_symbol
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.workbook import Workbook
from openpyxl.worksheet.worksheet import Worksheet

from ..errors import LedgerError
from ..formats import UNIT_COST_EXTRA_PLACES
from .safe import safe_text

DEFAULT_LOCALE = "en_US"
QUANTITY_FORMAT = "#,##0.######"
INTEGER_FORMAT = "#,##0"
RATE_FORMAT = "0.000000######"
DATETIME_FORMAT = "yyyy-mm-dd hh:mm"
DATE_FORMAT = "yyyy-mm-dd"
_HEADER_FONT = Font(bold=True)
_HEADER_FILL = PatternFill("solid", fgColor="DDE4EE")


class LocaleError(LedgerError, ValueError):
    """A locale babel does not know."""


def check_locale(locale: str) -> Locale:
    try:
        return Locale.parse(locale)
    except (UnknownLocaleError, ValueError, TypeError) as e:
        raise LocaleError(f"locale {locale!r} is not known (write it like en_US, de_DE, fr_FR): {e}") from None


def _quoted(text: str) -> str:
    return f'"{text}"' if text else ""


@lru_cache(maxsize=64)
def currency_format(currency: str, locale: str = DEFAULT_LOCALE, *, extra_decimals: int = 0) -> str:
    """An Excel number format for money in `currency` as `locale` writes it (babel's standard
    currency pattern): the symbol placed and spaced as the locale does (``"$"#,##0.00`` for en_US,
    ``#,##0.00" €"`` for de_DE), the currency's own decimals (JPY none), a negative section, and
    up to `extra_decimals` more optional digits (for unit prices). Grouping and decimal separators
    are written the Excel way (``,`` and ``.``): the spreadsheet shows them in the reader's locale."""
    loc = check_locale(locale)
    pattern = loc.currency_formats["standard"]
    symbol = get_currency_symbol(currency, loc)
    digits = get_currency_precision(currency)
    number = "#,##0" + ("." + "0" * digits + "#" * extra_decimals if digits or extra_decimals else "")
    if not digits and extra_decimals:
        number = "#,##0." + "#" * extra_decimals

    def affix(text: str) -> str:
        return _quoted(text.replace("¤", symbol).replace('"', ""))

    pos = affix(pattern.prefix[0]) + number + affix(pattern.suffix[0])
    neg = affix(pattern.prefix[1]) + number + affix(pattern.suffix[1])
    return f"{pos};{neg}"


def unit_cost_format(currency: str, locale: str = DEFAULT_LOCALE) -> str:
    """A unit cost (per successful task, per 1M tokens) or a unit price (per GPU-hour, per token):
    the currency's format with up to :data:`ledger.formats.UNIT_COST_EXTRA_PLACES` more optional
    decimals, so that a 2-decimal currency shows the unit-cost precision of every other surface (6)."""
    return currency_format(currency, locale, extra_decimals=UNIT_COST_EXTRA_PLACES)


def unit_column_format(currency: str, locale: str, values) -> str:
    """The one format of a column of unit costs (per successful task, per 1M tokens), as every other
    surface writes it (:func:`ledger.formats.unit_cost_places`): exactly 6 decimals when every value
    is below one unit of the currency, else the currency's own decimals, never optional digits (so
    ``$0.096660`` stands beside ``$0.238779``, never ``$0.09666``)."""
    from babel.numbers import get_currency_precision

    from ..formats import unit_cost_places

    digits = get_currency_precision(currency)
    places = unit_cost_places(list(values), money_places=digits)
    fixed = currency_format(currency, locale)
    if places == digits:
        return fixed
    number = "#,##0" + ("." + "0" * digits if digits else "")
    return fixed.replace(number, "#,##0." + "0" * places)


def naive_utc(at: datetime) -> datetime:
    """Excel has no time zones: an aware instant as a naive UTC datetime (headers say UTC)."""
    return at.astimezone(timezone.utc).replace(tzinfo=None) if at.tzinfo else at


def put(ws: Worksheet, row: int, col: int, value: object, number_format: str | None = None):
    """Write one cell: text is neutralized (never a formula: :func:`ledger.outputs.safe_text`, and
    typed as a string) with the control characters a workbook cannot hold shown as U+FFFD, Decimal
    and int stay numbers, datetimes become naive UTC. Formulas go through :func:`put_formula` only."""
    if isinstance(value, str):
        value = ILLEGAL_CHARACTERS_RE.sub("\ufffd", safe_text(value))
    elif isinstance(value, datetime):
        value = naive_utc(value)
        number_format = number_format or DATETIME_FORMAT
    elif isinstance(value, date):
        number_format = number_format or DATE_FORMAT
    elif isinstance(value, float):  # physical numbers (TPM, SLA) from the sizing engine, as written
        value = Decimal(repr(value))
    cell = ws.cell(row=row, column=col, value=value)
    if isinstance(value, str):
        cell.data_type = "s"
    if number_format:
        cell.number_format = number_format
    return cell


def put_formula(ws: Worksheet, row: int, col: int, formula: str, number_format: str | None = None):
    """Write a formula the export built itself (never from data)."""
    if not formula.startswith("="):
        raise ValueError(f"not a formula: {formula!r}")
    cell = ws.cell(row=row, column=col, value=formula)
    if number_format:
        cell.number_format = number_format
    return cell


def header(ws: Worksheet, names: Sequence[str], *, row: int = 1, freeze: str | None = "A2") -> None:
    """Bold header row, frozen so it stays on screen."""
    for i, name in enumerate(names, 1):
        c = put(ws, row, i, name)
        c.font = _HEADER_FONT
        c.fill = _HEADER_FILL
        c.alignment = Alignment(vertical="top", wrap_text=False)
    if freeze:
        ws.freeze_panes = freeze


def fit_widths(ws: Worksheet, *, minimum: int = 8, maximum: int = 60) -> None:
    """Column widths from the longest text or number in each column (formulas count as 14)."""
    widths: dict[int, int] = {}
    for row in ws.iter_rows():
        for c in row:
            if c.value is None:
                continue
            v = c.value
            if isinstance(v, str) and v.startswith("="):
                n = 14
            elif isinstance(v, (int, Decimal)):
                n = len(f"{v:,.2f}") + 2
            elif isinstance(v, datetime):
                n = 16
            else:
                n = max(len(line) for line in str(v).splitlines() or [""])
            widths[c.column] = max(widths.get(c.column, 0), n)
    for col, n in widths.items():
        ws.column_dimensions[get_column_letter(col)].width = max(minimum, min(maximum, n + 2))


def col(n: int) -> str:
    return get_column_letter(n)


def rng(sheet: str, column: int, first: int, last: int) -> str:
    """An absolute range ``'Sheet'!$A$2:$A$9`` (last >= first, so an empty sheet still has a range)."""
    c = col(column)
    return f"'{sheet}'!${c}${first}:${c}${max(first, last)}"


def write_provenance(wb: Workbook, items: Iterable[tuple[str, object]], *, title: str = "Provenance",
                     number_formats: dict[str, str] | None = None) -> Worksheet:
    """A two-column sheet, `item` and `value`, saying where every number of the workbook came from.
    Values that are sequences go one per row under their item; `number_formats` gives an item's
    value a number format (a money item its currency format). Long values wrap in a column at
    most 100 wide, so that the sheet prints one page wide."""
    ws = wb.create_sheet(title)
    header(ws, ("item", "value"))
    formats = number_formats or {}
    r = 2
    for key, value in items:
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if not values:
            values = ["(none)"]
        for i, v in enumerate(values):
            put(ws, r, 1, key if i == 0 else None)
            cell = put(ws, r, 2, v, formats.get(key))
            if isinstance(v, str) and len(v) > PROVENANCE_WIDTH:
                cell.alignment = Alignment(wrap_text=True, vertical="top")
            r += 1
    fit_widths(ws, maximum=PROVENANCE_WIDTH)
    return ws


#: The widest a provenance value's column gets (longer values wrap).
PROVENANCE_WIDTH = 100
#: Column widths (in characters) a portrait page holds at 100 %; a wider sheet prints landscape.
PORTRAIT_WIDTH = 100
_DEFAULT_WIDTH = 8.43


def print_one_page_wide(ws: Worksheet, *, landscape: bool | None = None, title_rows: str | None = "1:1") -> None:
    """Print setup: every column on one page width, as many pages tall as the rows need
    (``fitToWidth = 1``, ``fitToHeight = 0``), landscape when the columns are wider than a portrait
    page holds (:data:`PORTRAIT_WIDTH`) unless `landscape` says, and the `title_rows` (the header)
    repeated on every page."""
    if landscape is None:
        width = sum((d.width if (d := ws.column_dimensions.get(get_column_letter(k))) is not None and d.width
                     else _DEFAULT_WIDTH) for k in range(1, ws.max_column + 1))
        landscape = width > PORTRAIT_WIDTH
    ws.page_setup.orientation = "landscape" if landscape else "portrait"
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    if title_rows:
        ws.print_title_rows = title_rows


def recalculate(path: str | Path, outdir: str | Path, *, timeout: float = 180) -> Path:
    """Open `path` in LibreOffice headless, recalculate every formula and save a copy in `outdir`
    (an .xlsx with the computed values cached, readable with openpyxl ``data_only=True``).
    Needs ``soffice`` (Debian: libreoffice-calc-nogui). A private profile under `outdir` keeps
    parallel runs from sharing LibreOffice's user profile lock."""
    import shutil
    import subprocess

    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        raise FileNotFoundError("LibreOffice (soffice) is not installed: apt-get install libreoffice-calc-nogui")
    src, out = Path(path).resolve(), Path(outdir).resolve()
    if src.parent == out:
        raise ValueError("outdir must differ from the workbook's folder (the copy has the same name)")
    out.mkdir(parents=True, exist_ok=True)
    profile = out / ".lo-profile"
    proc = subprocess.run([soffice, "--headless", "--norestore", "--nolockcheck",
                           f"-env:UserInstallation={profile.as_uri()}", "--convert-to", "xlsx",
                           "--outdir", str(out), str(src)], capture_output=True, text=True, timeout=timeout)
    result = out / src.name
    if proc.returncode != 0 or not result.is_file():
        why = proc.stderr.strip() or proc.stdout.strip()
        raise RuntimeError(f"LibreOffice could not recalculate {src.name}: {why}")
    return result


def saved(wb, path: Path | None) -> bytes:
    """The workbook `wb` as .xlsx bytes, also written to `path` (through :func:`.safe.write_output`:
    the output guard and an atomic write) when one is given."""
    import io

    from .safe import write_output

    buf = io.BytesIO()
    wb.save(buf)
    data = buf.getvalue()
    if path is not None:
        write_output(path, data)
    return data
