"""The dashboard in a real browser at 1400 x 1000 and at 1024 x 768: `ledger dashboard` serves the demo month (with the
sample bill of tests/data/bills and its map) on a free loopback port, and headless Chromium (Selenium,
Debian's chromium and chromium-driver) opens every page at both widths. On each page, in each of its
tabs, every table must show every column whole, every input its whole value and every metric tile
its whole label and value (measured in the DOM:
tests/dashboard_browser.py), no exception
box may appear, the Deploy button is gone, and the headline number is the CLI's for the same run,
plan or date.

Each page's first load (a new browser session; the time from navigation until its content is drawn
with no spinner left) is measured, printed (``pytest -s``) and written with a reload (``RELOADS``;
``LEDGER_BROWSER_RELOADS=3`` for a median of three, as bench/dashboard.py ``--repeat`` measures) and
the moves from the sidebar to ``test-artifacts/render-times.json``; a screenshot of each page goes to
``test-artifacts/screenshots/``. Times are measured, never asserted.

One server and one browser serve the whole module; each page's headline by the CLI is worked out
once (``headlines``, while the server starts) and compared at both sizes and from the sidebar.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest
from dashboard_browser import (chromium, clipped, cut_inputs, cut_metrics, dashboard, exceptions, grids, open_page,
                               settle, wait_drawn)
from dashboard_support import PERIOD, ROOT, cli, demo_month

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "test-artifacts"
SCREENSHOTS = ARTIFACTS / "screenshots"
BILLS = ROOT / "tests" / "data" / "bills"
TIMES: dict[str, dict[str, float]] = {}
FIRST_SESSION = [True]  # until the first page of the module has been opened
#: Reloads of each page at 1400 px after its first load (each a new session, timed, never asserted).
RELOADS = int(os.environ.get("LEDGER_BROWSER_RELOADS", "1"))


def usd(amount: str | Decimal, places: int = 2) -> str:
    """Money as the dashboard writes it in en_US (babel's standard currency format)."""
    return f"${Decimal(amount).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN):,}"


# ---- the server and the browser -----------------------------------------------------------------

@pytest.fixture(scope="module")
def demo_home(tmp_path_factory) -> Path:
    """A copy of the demo month with October's sample AWS bill ingested and its map in the home."""
    from ledger.cli import app
    from typer.testing import CliRunner

    home = tmp_path_factory.mktemp("browser-demo") / "home"
    shutil.copytree(demo_month(tmp_path_factory), home)
    result = CliRunner().invoke(app, ["ingest", "bill", str(BILLS / "aws-focus-2026-10.csv")],
                                env={"LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": None})
    assert result.exit_code == 0, result.output
    shutil.copy(BILLS / "bill-map.toml", home / "bill-map.toml")
    return home


def cli_headlines(home: Path) -> dict:
    """What the CLI gives for `home`, as the pages write it: each page's headline (keyed by its
    function in :data:`PAGES`) and the example plan's base budget (:func:`_budget_base`)."""
    return {f: f(home) for f in [*(p[4] for p in PAGES), _budget_base]}


@pytest.fixture(scope="module")
def served(demo_home, tmp_path_factory):
    """`ledger dashboard` over the demo home, and the CLI's headlines for it. The headlines are
    worked out (in a thread of this process) while the server process starts, and are done before
    the first page is opened, so no page load is timed beside them; the demo home never changes, so
    they are worked out once for the module. Meanwhile LEDGER_HOME is already the demo home (and
    LEDGER_DATABASE_URL unset), so the CLI runner, which sets both while it runs, changes no
    variable's presence while the server's environment is copied and its health polled."""
    with pytest.MonkeyPatch.context() as mp, ThreadPoolExecutor(1) as pool:
        mp.setenv("LEDGER_HOME", str(demo_home))
        mp.delenv("LEDGER_DATABASE_URL", raising=False)
        worked_out = pool.submit(cli_headlines, demo_home)  # (the pool waits for it on the way out)
        with dashboard(demo_home, tmp_path_factory.mktemp("dashboard-server") / "server.log", cwd=ROOT) as (url, up):
            TIMES["server"] = {"answers_after_s": round(up, 3)}
            heads = worked_out.result()
            mp.undo()
            yield url, heads


@pytest.fixture(scope="module")
def server(served) -> str:
    return served[0]


@pytest.fixture(scope="module")
def headlines(served) -> dict:
    """Each page's headline function -> the headline as the CLI gives it (:func:`cli_headlines`)."""
    return served[1]


@pytest.fixture(scope="module")
def browser():
    with chromium() as driver:
        try:
            yield driver
        finally:
            if TIMES:
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                (ARTIFACTS / "render-times.json").write_text(json.dumps(TIMES, indent=2) + "\n", encoding="utf-8")
                print("\nfirst load of each page (s): " + ", ".join(
                    f"{k} {v['first_load_s']}" for k, v in TIMES.items() if "first_load_s" in v))


# ---- the pages ----------------------------------------------------------------------------------

def _plan() -> Path:
    """The plan the pages open with: the first example plan."""
    from ledger.dashboard import example_plans

    return example_plans()[0]


def _unit_economics(home: Path) -> str:
    return usd(cli(home, "report", "unit-economics", "--period", PERIOD)["run_total"])


def _reconcile(home: Path) -> str:
    return usd(cli(home, "reconcile", "--period", PERIOD)["total"]["priced"])


def _tenants(home: Path) -> str:
    rows = cli(home, "report", "tenants", "--period", PERIOD)["rows"]
    return usd(max(rows, key=lambda r: Decimal(r["cost"]))["cost"])  # the biggest tenant's card comes first


def _workload(home: Path) -> str:
    """The page opens on the newest month that has a run (October; the demo's open November has
    requests but no run yet: docs/dashboard.md), so its p50 is October's."""
    p50 = Decimal(str(cli(home, "workload", "--period", PERIOD)["tpm"]["p50"]))
    return f"{p50.quantize(Decimal('0.1'), rounding=ROUND_HALF_EVEN):,}"


def _sizing(home: Path) -> str:
    """GPUs of the example plan's first pool at its SLA, by `ledger size` on the same curve."""
    from ledger.budget import load_plan

    pool = load_plan(_plan()).pools[0]
    c = pool.curve.context
    with tempfile.TemporaryDirectory() as tmp:
        curve = Path(tmp) / "curve.csv"
        lines = ["concurrency,tok_s_user,output_tok_s,ttft_ms,isl,osl,gpus_per_replica"]
        lines += [",".join("" if v is None else repr(v) for v in (p.concurrency, p.tok_s_user, p.output_tok_s,
                                                                    p.ttft_ms, c.isl, c.osl, c.gpus_per_replica))
                  for p in pool.curve.points]
        curve.write_text("\n".join(lines) + "\n", encoding="utf-8")
        doc = cli(home, "size", "--curve", str(curve), "--tpm", str(pool.tpm), "--sla", f"{pool.sla:g}",
                  "--gpus-per-replica", str(pool.gpus_per_replica), "--util", str(pool.util),
                  "--failure-reserve", str(pool.reserves.failure), "--canary", str(pool.reserves.canary),
                  "--warm", str(pool.reserves.warm), *(["--interpolate"] if pool.interpolate else []),
                  *(["--repair"] if pool.repair else []))
    return f"{doc['rows'][0]['gpus']:,}"


def _forecast(home: Path) -> str:
    return usd(cli(home, "budget", "compare", str(_plan()), "--period", PERIOD)["total"]["forecast"])


def _trend(home: Path) -> str:
    return usd(cli(home, "report", "trend", "--from", "2026-08", "--to", PERIOD)["months"][-1]["total"])


def _whatif(home: Path) -> str:
    """The page opens on the newest run's month (October) and the first shipped scenario: its actual total."""
    from ledger.dashboard.whatif import shipped_scenarios

    doc = cli(home, "whatif", "--period", PERIOD, "--scenario", str(shipped_scenarios()[0]), "--no-store")
    return usd(doc["actual_total"])


def _budgets(home: Path) -> str:
    """How many budgets are in force as of the page's default instant (the hour after the newest usage),
    as `ledger alerts --as-of` counts them (its exit status is 3 when an alert fires)."""
    from ledger import store
    from ledger.cli import app
    from ledger.dashboard import guardrails as dg
    from ledger.dashboard import reading
    from typer.testing import CliRunner

    with reading(f"sqlite:///{home / 'ledger.db'}") as s:
        as_of = dg.default_as_of(s, home)
    store.dispose_engines()
    result = CliRunner().invoke(app, ["alerts", "--as-of", as_of.strftime("%Y-%m-%dT%H:%M:%SZ"), "--json"],
                                env={"LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": None})
    assert result.exit_code in (0, 3), result.output
    return f"{len(json.loads(result.stdout)['budgets']):,}"


def _budget_base(home: Path) -> str:
    """The example plan's base scenario total over its months, as `ledger budget` gives it."""
    return usd(cli(home, "budget", str(_plan()))["totals"]["base"]["total"])


def _price_books(home: Path) -> str:
    today = datetime.now(timezone.utc).date().isoformat()
    return f"{len(cli(home, 'pricebook', 'show', '--at', today)['prices']):,}"


# name, URL path, title, container of the headline tiles, the CLI's headline as the page writes it
PAGES = [("unit-economics", "", "Unit economics", "ue_tiles", _unit_economics),
         ("reconcile", "reconcile", "Bill reconciliation", "rc_tiles", _reconcile),
         ("tenants", "tenants", "Tenants side by side", "tn_cards", _tenants),
         ("trend", "trend", "Trend", "tr_tiles", _trend),
         ("workload", "workload", "Workload", "wl_tiles", _workload),
         ("sizing-budget", "sizing-budget", "Sizing and budget", "sz_tiles", _sizing),
         ("forecast-vs-actual", "forecast-vs-actual", "Forecast vs actual", "fa_tiles", _forecast),
         ("what-if", "what-if", "What if · SCENARIO", "wi_tiles", _whatif),
         ("price-books", "price-books", "Price books", "pb_tiles", _price_books),
         ("budgets", "budgets", "Budgets and alerts", "bu_tiles", _budgets)]


def every_table_whole(driver, name: str) -> int:
    """Check the tables of each tab of the page (expanders opened); returns how many were measured."""
    from selenium.webdriver.common.by import By

    measured = 0
    for i in range(max(1, len(driver.find_elements(By.CSS_SELECTOR, "[data-testid='stTab']")))):
        tabs = driver.find_elements(By.CSS_SELECTOR, "[data-testid='stTab']")
        if tabs and tabs[i].get_attribute("aria-selected") != "true":
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", tabs[i])  # not under the header
            tabs[i].click()
            settle(driver)  # only the open tab runs: the click reruns the page
        for summary in driver.find_elements(By.CSS_SELECTOR, "[data-testid='stExpander'] summary"):
            if summary.is_displayed() and summary.find_element(By.XPATH, "..").get_attribute("open") is None:
                driver.execute_script("arguments[0].click()", summary)
        found = grids(driver)
        assert found, f"{name}, tab {i + 1}: no table found"
        problems = clipped(found) + cut_inputs(driver) + cut_metrics(driver)
        assert not problems, f"{name}, tab {i + 1}: " + "; ".join(problems)
        assert not exceptions(driver), f"{name}, tab {i + 1}: exception box: {exceptions(driver)}"
        measured += len(found)
    driver.execute_script("window.scrollTo(0, 0)")
    return measured


#: The window sizes the pages are checked at: a laptop's 1400 px and a 1024 x 768 screen.
SIZES = ((1400, 1000), (1024, 768))
#: Every page is checked at both sizes (wide tables in parts below 1280 px: pages/_layout.py).
CASES = [(*p, size) for size in SIZES for p in PAGES]


@pytest.mark.parametrize(("name", "path", "title", "key", "expected", "size"), CASES,
                         ids=[f"{c[0]}-{c[-1][0]}px" for c in CASES])
def test_page_shows_every_column_label_and_the_cli_headline(server, browser, headlines, name, path, title, key,
                                                            expected, size):
    from selenium.webdriver.common.by import By

    width, height = size
    browser.set_window_size(width, height)
    wide = width == SIZES[0][0]
    first = open_page(browser, f"{server}/{path}", title, key)
    if wide:
        TIMES[name] = {"first_load_s": round(first, 3)}
        print(f"\n{name}: first load {first:.2f} s")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / (f"{name}.png" if wide else f"{name}-{width}.png")))
    assert not exceptions(browser), f"{name}: exception box: {exceptions(browser)}"
    dialogs = [d.text.split("\n")[0] for d in browser.find_elements(By.CSS_SELECTOR, "[role='dialog']")]
    if FIRST_SESSION and dialogs == ["Page not found"]:
        # Streamlit's known bug (streamlit/streamlit#8860): the first session of a server opened on
        # another page than the default one gets this box over the right page; close it
        browser.find_element(By.CSS_SELECTOR, "[role='dialog'] button[aria-label='Close']").click()
        dialogs = []
    FIRST_SESSION.clear()
    assert not dialogs, f"{name}: a dialog is open: {dialogs}"
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-testid='stAppDeployButton']"), "the Deploy button shows"
    assert browser.execute_script("return [window.innerWidth, window.innerHeight]")[0] == width
    values = [e.get_attribute("textContent").strip()
              for e in browser.find_elements(By.CSS_SELECTOR, f".st-key-{key} [data-testid='stMetricValue']")]
    assert values and values[0] == headlines[expected], f"{name}: headline {values[:1]!r}"
    if name == "workload":  # the month the headline is of: the newest with a run, not the open November
        said = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "[data-testid='stMarkdownContainer']")]
        assert any(t.startswith(f"{PERIOD}, all pools") for t in said), said
    measured = every_table_whole(browser, f"{name} at {width} px")
    if wide:
        TIMES[name]["tables_measured"] = measured
    if name == "sizing-budget":  # the budget tab (open now): its base scenario's total, as `ledger budget`
        base = [e.get_attribute("textContent") for e in
                browser.find_elements(By.CSS_SELECTOR, ".st-key-bg_tiles [data-testid='stMetric']")]
        assert any(t.startswith("base:") and t.endswith(headlines[_budget_base]) for t in base), base
    if not wide or not RELOADS:
        return
    again = sorted(open_page(browser, f"{server}/{path}", title, key) for _ in range(RELOADS))
    TIMES[name].update({"reload_median_s": round(statistics.median(again), 3), "reload_max_s": round(again[-1], 3)})


def test_moving_between_pages_from_the_sidebar(server, browser, headlines):
    """After the first load, every page reached from the sidebar shows its headline, no exception."""
    from selenium.webdriver.common.by import By

    open_page(browser, f"{server}/", "Unit economics", "ue_tiles")
    for name, path, title, key, expected in [*PAGES[1:], PAGES[0]]:
        link = browser.find_element(By.CSS_SELECTOR, f"[data-testid='stSidebarNav'] a[href='{server}/{path}']")
        t0 = time.perf_counter()
        link.click()
        seconds = wait_drawn(browser, title, key, t0)
        assert not exceptions(browser), name
        values = [e.get_attribute("textContent").strip()
                  for e in browser.find_elements(By.CSS_SELECTOR, f".st-key-{key} [data-testid='stMetricValue']")]
        assert values and values[0] == headlines[expected], f"{name}: headline {values[:1]!r}"
        TIMES.setdefault(name, {})["from_sidebar_s"] = round(seconds, 3)
