"""The dashboard in a real browser: `ledger dashboard` serves the demo month on a free loopback port,
headless Chromium (Selenium, Debian's chromium and chromium-driver) opens every page, and each page
must show no exception box and the headline number the CLI gives for the same run, plan or date.

A screenshot of each page goes to ``test-artifacts/screenshots/``, and the time each page took to
render (first visit, then a reload) to ``test-artifacts/render-times.json``: measured, not asserted.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent

ARTIFACTS = ROOT / "test-artifacts"
SCREENSHOTS = ARTIFACTS / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync")
PERIOD = "2026-10"
TIMES: dict[str, dict[str, float]] = {}


def cli(home: Path, *args: str) -> dict | list:
    from ledger.cli import app

    result = CliRunner().invoke(app, [*args, "--json"], env={"LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": None})
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def usd(amount: str | Decimal) -> str:
    """Money as the dashboard writes it in en_US (babel's standard currency format, two decimals)."""
    return f"${Decimal(amount).quantize(Decimal('0.01'), rounding=ROUND_HALF_EVEN):,}"


# ---- the server and the browser -----------------------------------------------------------------

@pytest.fixture(scope="module")
def demo_home(tmp_path_factory) -> Path:
    from ledger import store
    from ledger.demo import run_demo

    home = tmp_path_factory.mktemp("browser-demo") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEDGER_HOME", str(home))
        mp.delenv("LEDGER_DATABASE_URL", raising=False)
        run_demo()
        store.dispose_engines()
    return home


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
            return r.status == 200 and r.read().strip() == b"ok"
    except OSError:
        return False


def _ledger_command() -> str:
    """The `ledger` console script of the running interpreter's environment (pip install -e .)."""
    found = shutil.which("ledger", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    assert found, "the `ledger` command is not installed: pip install -e '.[test]'"
    return found


@pytest.fixture(scope="module")
def server(demo_home, tmp_path_factory):
    """`ledger dashboard` on a free 127.0.0.1 port over the demo home; always stopped at the end."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DATABASE_URL"}
    env["LEDGER_HOME"] = str(demo_home)
    log_path = tmp_path_factory.mktemp("dashboard-server") / "server.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([_ledger_command(), "dashboard", "--host", "127.0.0.1", "--port", str(port),
                                 "--locale", "en_US"], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 90
            while not _healthy(url):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the dashboard did not come up on {url}:\n{log_path.read_text(errors='replace')}")
                time.sleep(0.3)
            yield url
        finally:
            proc.terminate()  # `ledger dashboard` passes SIGTERM on to Streamlit and waits for it
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file(), "install Debian's chromium and chromium-driver"
    profile = tempfile.TemporaryDirectory(prefix="chromium-profile-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile.name}")
    options.add_argument("--window-size=1600,2600")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        profile.cleanup()
        if TIMES:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (ARTIFACTS / "render-times.json").write_text(json.dumps(TIMES, indent=2) + "\n", encoding="utf-8")


def render(driver, url: str, key: str, timeout: float = 90) -> tuple[list[str], float]:
    """Open `url` and wait until the script has run and the metric tiles in the container keyed
    `key` are shown. Returns the tiles' values (hidden tabs included) and the seconds it took."""
    t0 = time.perf_counter()
    driver.get(url)
    return wait_for(driver, key, t0, timeout)


def wait_for(driver, key: str, t0: float, timeout: float = 90) -> tuple[list[str], float]:
    """Wait until the app is idle with the tiles keyed `key` shown (or an exception box appears)."""
    from selenium.webdriver.common.by import By

    deadline = t0 + timeout
    while True:
        states = {e.get_attribute("data-test-script-state")
                  for e in driver.find_elements(By.CSS_SELECTOR, "[data-test-script-state]")}
        values = [e.get_attribute("textContent").strip()
                  for e in driver.find_elements(By.CSS_SELECTOR, f".st-key-{key} [data-testid='stMetricValue']")]
        if values and all(values) and states == {"notRunning"}:
            return values, time.perf_counter() - t0
        if driver.find_elements(By.CSS_SELECTOR, "[data-testid='stException']") or time.perf_counter() > deadline:
            return values, time.perf_counter() - t0
        time.sleep(0.05)


# ---- the pages ----------------------------------------------------------------------------------

def _plan() -> Path:
    """The plan the pages open with: the first example plan."""
    from ledger.dashboard import example_plans

    return example_plans()[0]


def _unit_economics(home: Path) -> str:
    return usd(cli(home, "report", "unit-economics", "--period", PERIOD)["run_total"])


def _tenants(home: Path) -> str:
    rows = cli(home, "report", "tenants", "--period", PERIOD)["rows"]
    return usd(max(rows, key=lambda r: Decimal(r["cost"]))["cost"])  # the biggest tenant's card comes first


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


def _price_books(home: Path) -> str:
    today = datetime.now(timezone.utc).date().isoformat()
    return f"{len(cli(home, 'pricebook', 'show', '--at', today)['prices']):,}"


def _forecast(home: Path) -> str:
    return usd(cli(home, "budget", "compare", str(_plan()), "--period", PERIOD)["total"]["forecast"])


# name, URL path, container of the headline tiles, the CLI's headline as the page writes it
PAGES = [("unit-economics", "", "ue_tiles", _unit_economics),
         ("tenants", "tenants", "tn_cards", _tenants),
         ("sizing-budget", "sizing-budget", "sz_tiles", _sizing),
         ("price-books", "price-books", "pb_tiles", _price_books),
         ("forecast-vs-actual", "forecast-vs-actual", "fa_tiles", _forecast)]


@pytest.mark.parametrize(("name", "path", "key", "expected"), PAGES, ids=[p[0] for p in PAGES])
def test_page_renders_with_the_cli_headline(server, browser, demo_home, name, path, key, expected):
    from selenium.webdriver.common.by import By

    values, first = render(browser, f"{server}/{path}", key)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    errors = [e.get_attribute("textContent")[:500]
              for e in browser.find_elements(By.CSS_SELECTOR, "[data-testid='stException']")]
    assert not errors, f"{name}: exception box: {errors}"
    assert not browser.find_elements(By.CSS_SELECTOR, "[role='dialog']"), f"{name}: a dialog is open"
    assert values, f"{name}: no headline tiles in .st-key-{key}"
    assert values[0] == expected(demo_home), f"{name}: headline {values[0]!r}"
    again = sorted(render(browser, f"{server}/{path}", key)[1] for _ in range(3))
    TIMES[name] = {"first_visit_s": round(first, 3), "reload_median_s": round(again[1], 3),
                   "reload_max_s": round(again[2], 3)}
    if name == "sizing-budget":  # the budget tab is rendered too (hidden until clicked): its base total
        base = [e.get_attribute("textContent") for e in
                browser.find_elements(By.CSS_SELECTOR, ".st-key-bg_tiles [data-testid='stMetric']")]
        want = cli(demo_home, "budget", str(_plan()))["totals"]["base"]["total"]
        assert any(t.startswith("base:") and t.endswith(usd(want)) for t in base), base


def test_moving_between_pages_from_the_sidebar(server, browser, demo_home):
    """After the first load, every page reached from the sidebar shows its headline, no exception."""
    from selenium.webdriver.common.by import By

    render(browser, f"{server}/", "ue_tiles")
    for name, path, key, expected in [*PAGES[1:], PAGES[0]]:
        link = browser.find_element(By.CSS_SELECTOR, f"[data-testid='stSidebarNav'] a[href='{server}/{path}']")
        t0 = time.perf_counter()
        link.click()
        values, seconds = wait_for(browser, key, t0)
        assert not browser.find_elements(By.CSS_SELECTOR, "[data-testid='stException']"), name
        assert values and values[0] == expected(demo_home), f"{name}: headline {values[:1]!r}"
        TIMES.setdefault(name, {})["from_sidebar_s"] = round(seconds, 3)
