"""Driving the dashboard in headless Chromium: start `ledger dashboard`, open a page and time it until
its content is drawn, and measure its tables in the DOM. Shared by tests/test_dashboard_browser.py and
bench/dashboard.py.

Streamlit's ``st.dataframe`` draws on a canvas (glide-data-grid), so a cut cell is not visible in the
DOM text. :data:`GRID_JS` reads what the grid itself holds: beside its canvas it keeps an
accessibility table with the columns it shows (``aria-colcount`` says how many there are), its
scroller says whether the columns overflow the box (``scrollWidth`` against ``clientWidth``), and its
React props carry each column's width, the rows, the cells' text and the font; each cell's text is
measured in that font on a canvas, as the grid measures it, and must fit its column with the grid's
padding. Static tables (``st.table``) wrap; they must not overflow their box.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync")
WIDTH, HEIGHT = 1400, 1000

#: One grid (``arguments[0]``, a ``stDataFrame``) measured as the module's docstring says, or null
#: when it is not shown (in a closed expander, a tab not open).
GRID_JS = r"""
const df = arguments[0];
const holder = df.closest('[class*="st-key-"]');
const key = holder ? [...holder.classList].find(c => c.startsWith('st-key-')).slice(7) : '';
if (!(df.getClientRects().length > 0 && df.getBoundingClientRect().width > 0) || df.closest('details:not([open])'))
  return null;
const canvas = df.querySelector('canvas[data-testid="data-grid-canvas"]');
const scroller = df.querySelector('.dvn-scroller');
const grid = df.querySelector('table[role="grid"]');
let props = null;
if (canvas) {
  const fiber = Object.keys(canvas).find(k => k.startsWith('__reactFiber$'));
  for (let f = fiber && canvas[fiber]; f; f = f.return) {
    const p = f.memoizedProps;
    if (p && Array.isArray(p.columns) && p.getCellContent && p.theme) { props = p; break; }
  }
}
const g = {kind: 'grid', key, drawn: !!(canvas && scroller && props && grid),
           client: scroller ? scroller.clientWidth : null, scroll: scroller ? scroller.scrollWidth : null,
           colcount: grid ? Number(grid.getAttribute('aria-colcount')) : null,
           shown: df.querySelectorAll('th[role="columnheader"]').length, columns: []};
if (props) {
  const ctx = document.createElement('canvas').getContext('2d');
  const pad = props.theme.cellHorizontalPadding;
  props.columns.forEach((col, i) => {
    ctx.font = props.theme.headerFontFull;
    let need = ctx.measureText(col.title).width + 2 * pad + (col.icon ? 28 : 0), widest = col.title;
    ctx.font = props.theme.baseFontFull;
    for (let r = 0; r < props.rows; r++) {
      const cell = props.getCellContent([i, r]);
      const text = typeof cell.displayData === 'string' ? cell.displayData
                 : (typeof cell.data === 'string' || typeof cell.data === 'number') ? String(cell.data) : '';
      const w = ctx.measureText(text).width + 2 * pad;
      if (w > need) { need = w; widest = text; }
    }
    g.columns.push({title: col.title, width: col.width, need: Math.ceil(need), widest});
  });
}
return g;
"""

#: Every static table (``st.table``) shown: it must not scroll sideways.
TABLES_JS = r"""
const out = [];
for (const t of document.querySelectorAll('[data-testid="stTable"]')) {
  if (!(t.getClientRects().length > 0 && t.getBoundingClientRect().width > 0) || t.closest('details:not([open])'))
    continue;
  const holder = t.closest('[class*="st-key-"]');
  out.push({kind: 'table', key: holder ? [...holder.classList].find(c => c.startsWith('st-key-')).slice(7) : '',
            client: t.clientWidth, scroll: t.scrollWidth, drawn: true, columns: []});
}
return out;
"""

#: True once the page is drawn: the script has finished, the title is the page's, no spinner or
#: skeleton is left, every visible chart has its SVG or canvas and every visible grid its canvas.
DRAWN_JS = r"""
const [title, key] = arguments;
const states = [...document.querySelectorAll('[data-test-script-state]')].map(e => e.getAttribute('data-test-script-state'));
if (!states.length || states.some(s => s !== 'notRunning')) return false;
const h1 = document.querySelector('[data-testid="stMain"] h1');
if (title !== null && (!h1 || h1.textContent.trim() !== title)) return false;
if (document.querySelector('[data-testid="stSpinner"], [data-testid="stSkeleton"]')) return false;
const visible = el => el.getClientRects().length > 0 && el.getBoundingClientRect().width > 0 &&
  !el.closest('details:not([open])');  // a closed expander keeps its content laid out, undrawn
for (const c of document.querySelectorAll('[data-testid="stVegaLiteChart"]'))
  if (visible(c) && !c.querySelector('svg, canvas')) return false;
for (const d of document.querySelectorAll('[data-testid="stDataFrame"]'))
  if (visible(d) && !d.querySelector('canvas[data-testid="data-grid-canvas"]')) return false;
if (key === null) return true;
const tiles = [...document.querySelectorAll(`.st-key-${key} [data-testid="stMetricValue"]`)];
return tiles.length > 0 && tiles.every(t => t.textContent.trim());
"""


#: Every shown input (select box, text, number, date) whose value is wider than its box: [label, value].
CUT_INPUTS_JS = r"""
const out = [];
for (const i of document.querySelectorAll('[data-testid="stSelectbox"] input, [data-testid="stTextInput"] input, ' +
                                          '[data-testid="stNumberInput"] input, [data-testid="stDateInput"] input')) {
  if (!(i.getClientRects().length > 0) || i.closest('details:not([open])')) continue;
  if (i.scrollWidth > i.clientWidth + 1) out.push([i.getAttribute('aria-label') || i.id, i.value]);
}
return out;
"""


#: Every shown metric whose label or value is cut (ends in "…" or is clipped by its box): [key, text].
CUT_METRICS_JS = r"""
const out = [];
for (const m of document.querySelectorAll('[data-testid="stMetricLabel"], [data-testid="stMetricValue"]')) {
  if (!(m.getClientRects().length > 0) || m.closest('details:not([open])')) continue;
  const cut = [m, ...m.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1 &&
                                                     getComputedStyle(e).overflow !== 'visible');
  const box = m.getBoundingClientRect(), card = m.closest('[data-testid="stMetric"]').getBoundingClientRect();
  if (cut || box.right > card.right + 1) {
    const holder = m.closest('[class*="st-key-"]');
    out.push([holder ? [...holder.classList].find(c => c.startsWith('st-key-')).slice(7) : '', m.textContent.trim()]);
  }
}
return out;
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
            return r.status == 200 and r.read().strip() == b"ok"
    except OSError:
        return False


def ledger_command() -> str:
    """The `ledger` console script of the running interpreter's environment."""
    found = shutil.which("ledger", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if not found:
        raise RuntimeError("the `ledger` command is not installed: pip install -e '.[test]'")
    return found


@contextmanager
def dashboard(home: Path, log_path: Path, cwd: Path, timeout: float = 120):
    """`ledger dashboard` on a free 127.0.0.1 port over `home`, yielding its URL and the seconds
    until it answered; always stopped at the end."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k not in ("LEDGER_DATABASE_URL", "STREAMLIT_SERVER_PORT")}
    env["LEDGER_HOME"] = str(home)
    with log_path.open("wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen([ledger_command(), "dashboard", "--host", "127.0.0.1", "--port", str(port),
                                 "--locale", "en_US"], env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        try:
            while not healthy(url):
                if proc.poll() is not None or time.perf_counter() - t0 > timeout:
                    raise RuntimeError(f"the dashboard did not come up on {url}:\n{log_path.read_text(errors='replace')}")
                time.sleep(0.1)
            yield url, time.perf_counter() - t0
        finally:
            proc.terminate()  # `ledger dashboard` passes SIGTERM on to Streamlit and waits for it
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@contextmanager
def chromium(width: int = WIDTH, height: int = HEIGHT):
    """Headless Chromium through Selenium, the window `width` x `height`, a throwaway profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()):
        raise RuntimeError("install Debian's chromium and chromium-driver")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in CHROMIUM_FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={profile}")
        options.add_argument(f"--window-size={width},{height}")
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            yield driver
        finally:
            driver.quit()


def exceptions(driver) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.get_attribute("textContent")[:800] for e in driver.find_elements(By.CSS_SELECTOR,
                                                                                "[data-testid='stException']")]


def wait_drawn(driver, title: str | None, key: str | None, t0: float, timeout: float = 120) -> float:
    """Seconds from `t0` until the page titled `title` is drawn with the tiles keyed `key` (see
    :data:`DRAWN_JS`; None: any title, no tiles needed); stops early, returning the time so far,
    when an exception box shows."""
    while True:
        if driver.execute_script(DRAWN_JS, title, key) or exceptions(driver):
            return time.perf_counter() - t0
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError(f"{title}: not drawn within {timeout} s")
        time.sleep(0.02)


def open_page(driver, url: str, title: str, key: str, timeout: float = 120) -> float:
    """Open `url` in a new session and return the seconds until it is drawn."""
    t0 = time.perf_counter()
    driver.get(url)
    return wait_drawn(driver, title, key, t0, timeout)


def settle(driver, timeout: float = 120) -> float:
    """After a click that reruns the page (a tab, an expander): wait until it is drawn again."""
    t0 = time.perf_counter()
    time.sleep(0.3)  # the click reaches the server and the script starts
    return wait_drawn(driver, None, None, t0, timeout)


def grids(driver, timeout: float = 30) -> list[dict]:
    """Every grid and static table shown on the page, measured. A grid draws its cells (and their
    accessibility table) only while in view: each is scrolled into view and measured once drawn."""
    from selenium.webdriver.common.by import By

    found = []
    for element in driver.find_elements(By.CSS_SELECTOR, "[data-testid='stDataFrame']"):
        deadline = time.monotonic() + timeout
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        while (g := driver.execute_script(GRID_JS, element)) is not None and not g["drawn"]:
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if g is not None:
            found.append(g)
    return found + driver.execute_script(TABLES_JS)


def cut_inputs(driver) -> list[str]:
    """The inputs whose value does not fit their box (``on_dema…``), one line each."""
    return [f"input {label!r} cuts {value!r}" for label, value in driver.execute_script(CUT_INPUTS_JS)]


def cut_metrics(driver) -> list[str]:
    """The metric tiles whose label or value does not show whole, one line each."""
    return [f"metric in {key or '(no key)'} cuts {text!r}" for key, text in driver.execute_script(CUT_METRICS_JS)]


def clipped(found: list[dict]) -> list[str]:
    """What is cut or hidden in the tables `found` (one line each); empty when every column shows."""
    problems = []
    for g in found:
        where = f"{g['kind']} {g['key'] or '(no key)'}"
        if not g["drawn"]:
            problems.append(f"{where}: not drawn, cannot be measured")
            continue
        if g["scroll"] > g["client"] + 1:
            problems.append(f"{where}: {g['scroll']} px of columns in a {g['client']} px box (scrolls sideways)")
        if g["kind"] == "grid" and g["colcount"] != g["shown"]:
            problems.append(f"{where}: {g['shown']} of {g['colcount']} columns drawn")
        for c in g["columns"]:
            if c["need"] > c["width"] + 1:
                problems.append(f"{where}: column {c['title']!r} is {c['width']} px, {c['widest']!r} needs {c['need']}")
    return problems
