"""What the dashboard tests share: the demo month built once per test session, the CLI's JSON,
the app under Streamlit's AppTest, and reading numbers as the pages write them."""
from __future__ import annotations

import json
import shutil
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest
from babel.numbers import parse_decimal
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "dashboards" / "app.py"
PLAN = ROOT / "examples" / "plan.toml"
PERIOD = "2026-10"


def demo_month(tmp_path_factory) -> Path:
    """The demo month (`ledger demo`), built once per test session under pytest's base temp folder
    and shared read-only by every dashboard test module (a test that changes a ledger copies it)."""
    from conftest import demo_template

    return demo_template(tmp_path_factory)[0]  # the session's demo (tests/conftest.py)


def cli(home: Path, *args: str) -> dict | list:
    """Run ``ledger ARGS --json`` on `home` and return the parsed JSON."""
    from ledger.cli import app

    result = CliRunner().invoke(app, [*args, "--json"], env={"LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": None})
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


#: Streamlit's registry of custom components, found once per test session. An AppTest looks for
#: components on its first run by reading the metadata of every installed distribution (about 1 s,
#: 2 to 3 s on a busy machine), where a server does it once when it starts; every app here gets
#: the one registry the first app found, as every session of a server does.
_COMPONENTS: list = []


def app(timeout: float = 120) -> AppTest:
    """The app (dashboards/app.py) under AppTest, not run yet, sharing the session's component registry."""
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    if _COMPONENTS and hasattr(at, "_bidi_component_manager"):
        at._bidi_component_manager = _COMPONENTS[0]
    return at


def _keep_components(at: AppTest) -> None:
    if not _COMPONENTS and getattr(at, "_bidi_component_manager", None) is not None:
        _COMPONENTS.append(at._bidi_component_manager)


def page(name: str | None = None, *, timeout: float = 120) -> AppTest:
    """The app opened (and switched to page `name`), run once, with no exception box. (AppTest runs
    a page switched to on its own, without app.py's sidebar; the browser test covers the whole app.)"""
    at = app(timeout)
    at.run()
    _keep_components(at)
    if name:
        at.switch_page(name)
        at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def metrics(at: AppTest, key: str) -> dict[str, str]:
    """Label -> value of the metric tiles in the container keyed `key`."""
    return {m.label: m.value for m in at.get_by_key(key).metric}


def table(at: AppTest, key: str):
    """The DataFrame shown in the container keyed `key` (a grid, or a static table of words)."""
    box = at.get_by_key(key)
    return box.dataframe[0].value if box.dataframe else box.table[0].value


def shown(text: str) -> Decimal:
    """A number as displayed in en_US (``$1,234.56``, ``2.7%``, ``30,098``; currency symbols and
    marks dropped), exactly as shown: a percentage becomes its ratio with the decimals shown
    (2.7% -> 0.027)."""
    pct = text.endswith("%")
    core = "".join(ch for ch in text if ch.isdigit() or ch in ",.-")
    d = parse_decimal(core, locale="en_US", strict=True)
    return d.scaleb(-2) if pct else d


def assert_shows(text: str, exact: str | Decimal | int) -> None:
    """`text` is the exact decimal `exact` rounded half-even to the decimals `text` shows."""
    value = shown(text)
    want = Decimal(exact).quantize(Decimal(1).scaleb(value.as_tuple().exponent), rounding=ROUND_HALF_EVEN)
    assert value == want, f"shows {text!r}, the CLI says {exact} (rounded: {want})"


def assert_near(text: str, exact: str | Decimal | int) -> None:
    """`text` is the exact decimal `exact` display-rounded (docs/exports.md, "Display rounding"):
    within one unit of the last decimal shown, two for a cell given its column's total from above."""
    value = shown(text)
    unit = Decimal(1).scaleb(value.as_tuple().exponent)
    assert abs(value - Decimal(exact)) < 2 * unit, f"shows {text!r}, the CLI says {exact}"


def decimals(text: str) -> int:
    """How many decimals a number is shown with (``$0.096655`` -> 6, ``$31.18`` -> 2, ``30,098`` -> 0)."""
    return max(0, -shown(text).as_tuple().exponent) - (2 if text.endswith("%") else 0)
