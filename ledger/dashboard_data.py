"""What the dashboards show, as DataFrames: read-only views of the ledger over ledger.* functions.

Every number here is computed by the modules that own it (``reports`` for unit economics,
``budget`` for forecasts, ``sizing`` for fleets, ``pricebook`` for prices); this module only reads
(sessions are rolled back, never committed), reshapes their results into pandas DataFrames and
keeps money as exact ``Decimal``. Formatting (babel, locale, currency) happens in the pages.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path

import pandas as pd
import sqlalchemy as sa
from sqlmodel import Session

from . import config, reports, runs, store
from .allocate import CATEGORIES, KINDS, period_label
from .budget import Budget, BudgetError, Comparison, Plan, compare, parse_plan
from .money import ZERO, quantize
from .pricebook import Book, PriceIndex, in_force_books, load_books
from .sizing import (Curve, SizingError, SizingRequest, SizingResult, load_curve, merge_curves, parse_curves,
                     price_per_gpu_hour, priced, select_curve, size, sizing_as_dict)

RATIO_EXP = reports.RATIO_EXP
EXAMPLES_DIR = config.project_root() / "examples"

# ---- where the dashboard reads ------------------------------------------------------------------

ABSENT, UNINITIALIZED, UNREACHABLE, NO_RUNS, READY = "absent", "uninitialized", "unreachable", "no_runs", "ready"


@dataclass(frozen=True)
class LedgerState:
    """The ledger the dashboard reads: `home` (LEDGER_HOME), `database` (the DB URL without
    credentials), `url` (the full URL, for sessions), `status` (absent: no DB file yet;
    uninitialized: a DB not migrated to the code's revision; unreachable: the DB cannot be opened;
    no_runs: initialized, no allocation run; ready) and `message`, what was found in one sentence."""

    home: Path
    database: str
    url: str
    status: str
    message: str
    runs: int = 0

    @property
    def has_runs(self) -> bool:
        return self.status == READY

    @property
    def has_store(self) -> bool:
        return self.status in (NO_RUNS, READY)


def _shown(url: str) -> str:
    return url.split("@")[-1] if "@" in url else url


def ledger_state() -> LedgerState:
    """Look at the configured ledger without creating anything (a missing SQLite file stays missing)."""
    home, url = config.ledger_home(), config.database_url()
    shown = _shown(url)
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).exists():
        return LedgerState(home, shown, url, ABSENT, f"there is no ledger in {home} yet")
    try:
        with reading(url) as s:
            store.check_initialized(s)
            n = s.execute(sa.text("SELECT count(*) FROM allocation_run")).scalar_one()
    except store.StoreError as e:
        return LedgerState(home, shown, url, UNINITIALIZED, str(e))
    except Exception as e:  # cannot connect, permissions, a foreign file: say so, never a traceback
        return LedgerState(home, shown, url, UNREACHABLE, f"cannot open the ledger DB ({shown}): {e}")
    if not n:
        return LedgerState(home, shown, url, NO_RUNS, "the ledger is initialized but holds no allocation run yet")
    return LedgerState(home, shown, url, READY, f"{n} allocation run{'s' if n != 1 else ''}", n)


def guidance(state: LedgerState) -> str:
    """Markdown: what to run to get data into this ledger (the demo, or your own inputs)."""
    first = {ABSENT: "Build the demo month (October 2026, from the Azure LLM inference trace) in this ledger home:",
             UNINITIALIZED: "Initialize the store, or build the demo month in a fresh ledger home:",
             UNREACHABLE: "Check `LEDGER_DATABASE_URL`, or build the demo month in a fresh ledger home:",
             NO_RUNS: "Allocate a period whose usage you have ingested, or build the demo in a fresh home:"}
    own = ("ledger init\n"
           "ledger pricebook load                 # the dated price books (default: pricebooks/)\n"
           "ledger dims import tenant tenants.csv # and: ledger dims import product products.csv\n"
           "ledger ingest fleet fleet.csv         # and: requests, outcomes, meters, charges\n"
           "ledger allocate --period 2026-10")
    lead = first.get(state.status, "")
    return (f"**{state.message}.** {lead}\n\n```sh\nledger demo\n```\n\n"
            f"Or load your own data (DESIGN §3 lists every input column), then allocate a period:\n\n"
            f"```sh\n{own}\n```\n\nThen reload this page. The dashboard reads `LEDGER_HOME` "
            f"(here `{state.home}`) and `LEDGER_DATABASE_URL`; it never writes to the ledger.")


@contextmanager
def reading(url: str | None = None) -> Iterator[Session]:
    """A session that never commits: whatever happens, it is rolled back at the end."""
    with Session(store.engine(url), expire_on_commit=False) as s:
        try:
            yield s
        finally:
            s.rollback()


# ---- runs ---------------------------------------------------------------------------------------

def period_name(start: datetime, end: datetime) -> str:
    """``2026-10`` for a calendar month, else ``2026-10-03 to 2026-10-10`` (end exclusive)."""
    month = store.month_of(start)
    if store.month_bounds(month) == (start.astimezone(timezone.utc), end.astimezone(timezone.utc)):
        return month
    return f"{start.astimezone(timezone.utc):%Y-%m-%d %H:%M} to {end.astimezone(timezone.utc):%Y-%m-%d %H:%M}"


def runs_frame(s: Session) -> pd.DataFrame:
    """Every run, newest first: run_id, period (name), start, end, created_at, currency, total
    (Decimal), idle_policy, basis, price_books, code_version, and `current` (the newest of its period)."""
    rows, seen = [], set()
    for r in runs.list_runs(s):
        key = (r.period_start, r.period_end)
        rows.append({"run_id": r.id, "period": period_name(r.period_start, r.period_end), "start": r.period_start,
                     "end": r.period_end, "created_at": r.created_at, "currency": r.currency, "total": r.total,
                     "idle_policy": r.idle_policy, "basis": r.basis,
                     "price_books": ", ".join(reports.runs_as_json([r])[0]["price_books"]),
                     "code_version": r.code_version, "current": key not in seen})
        seen.add(key)
    cols = ["run_id", "period", "start", "end", "created_at", "currency", "total", "idle_policy", "basis",
            "price_books", "code_version", "current"]
    return pd.DataFrame(rows, columns=cols)


def load_run_data(s: Session, *, run_id: str) -> reports.RunData:
    """A stored run as the reports read it (lines, usage, tasks, provenance)."""
    return reports.run_data_of_stored(runs.load_run(s, run_id=run_id))


# ---- unit economics -----------------------------------------------------------------------------

def _d(text: str | None) -> Decimal | None:
    return None if text is None or text == "" else Decimal(text)


def _share(part: Decimal, whole: Decimal) -> Decimal | None:
    return quantize(part / whole, RATIO_EXP) if whole else None


def fleet_row(data: reports.RunData) -> reports.Row:
    """The whole run as one unit-economics row: the run total over every task of the period, so
    its ``cost_per_successful_task`` is the all-in figure (idle and unallocated included)."""
    report = reports.unit_economics(data, by="tenant")
    tasks = {"success": 0, "failure": 0, "unknown": 0}
    for t in data.tasks:
        for k in tasks:
            tasks[k] += getattr(t, k)
    by_cat = {c: ZERO for c in CATEGORIES}
    failed = ZERO
    for ln in data.lines:
        by_cat[ln.category] += ln.amount
        if ln.work == "failed":
            failed += ln.amount
    reasons = {} if tasks["success"] else {"cost_per_successful_task": reports.NO_SUCCESS}
    return reports.Row(None, report.total, by_cat, failed, ZERO, report.gpu_total,
                       sum(u.active_tokens for u in data.usage), sum(u.requests for u in data.usage),
                       sum(u.failed_requests for u in data.usage), tasks, report.criteria, reasons)


def headline_frame(data: reports.RunData) -> pd.DataFrame:
    """One row, the finance tiles: total cost, all-in cost per successful task (with the reason
    when undefined), successful tasks, failed work and its share, idle reserve, idle slack and
    unallocated with their shares of the total, the currency and the run."""
    row = fleet_row(data)
    report = reports.unit_economics(data, by="tenant")
    un = report.unattributed
    return pd.DataFrame([{
        "run_id": data.info.run_id, "currency": data.info.currency, "total": row.cost,
        "cost_per_successful_task": row.cost_per_successful_task,
        "cost_per_successful_task_reason": row.reasons.get("cost_per_successful_task", ""),
        "successful_tasks": row.tasks["success"], "failed_tasks": row.tasks["failure"],
        "success_rate": row.success_rate,
        "failed_work": row.failed_work, "failed_work_share": row.failed_work_share,
        "idle_reserve": un["idle_reserve"], "idle_reserve_share": _share(un["idle_reserve"], row.cost),
        "idle_slack": un["idle_slack"], "idle_slack_share": _share(un["idle_slack"], row.cost),
        "unallocated": un["unallocated"], "unallocated_share": _share(un["unallocated"], row.cost),
        "on_tenants": row.cost - sum(un.values(), ZERO),
    }])


def provenance_frame(data: reports.RunData) -> pd.DataFrame:
    """Where every number of the run comes from: item and value (text), one row per item."""
    info = data.info
    report = reports.unit_economics(data, by="tenant")
    p = period_label(info.start, info.end)
    flags: dict[tuple[str, str], int] = {}
    for f in info.flags:
        flags[(f.kind, f.pool)] = flags.get((f.kind, f.pool), 0) + 1
    items = [
        ("period (UTC, end exclusive)", f"{p['start']} to {p['end']}"),
        ("run", info.run_id),
        ("run created at (UTC)", info.created_at.astimezone(timezone.utc).isoformat() if info.created_at else ""),
        ("reporting currency", info.currency),
        ("price book versions", ", ".join(info.price_books) or "none"),
        ("success criteria", ", ".join(report.criteria) or "none recorded"),
        ("idle policy", info.idle_policy),
        ("weight basis", info.basis),
        ("lines", f"{len(data.lines)}"),
        ("inputs digest", info.inputs_digest),
        ("code version", info.code_version),
        ("flags", "; ".join(f"{k} on pool {pool}: {n} hour{'s' if n != 1 else ''}"
                            for (k, pool), n in sorted(flags.items())) or "none"),
        ("notes", "; ".join(info.notes) or "none"),
    ]
    return pd.DataFrame(items, columns=["item", "value"])


def category_daily_frame(data: reports.RunData) -> pd.DataFrame:
    """Cost per UTC day and category (every line of the run, tenants and non-tenant kinds alike):
    day, category, amount (Decimal). The days' amounts add up to the run total."""
    acc: dict[tuple[date, str], Decimal] = {}
    for ln in data.lines:
        acc[(ln.day, ln.category)] = acc.get((ln.day, ln.category), ZERO) + ln.amount
    rows = [{"day": d, "category": c, "amount": v} for (d, c), v in sorted(acc.items())]
    return pd.DataFrame(rows, columns=["day", "category", "amount"])


def unattributed_frame(data: reports.RunData) -> pd.DataFrame:
    """The run's total split by kind (tenant lines, idle slack, idle reserve, unallocated):
    kind, amount (Decimal), share of the total."""
    report = reports.unit_economics(data, by="tenant")
    on_tenants = report.total - sum(report.unattributed.values(), ZERO)
    amounts = {"tenant": on_tenants, **report.unattributed}
    return pd.DataFrame([{"kind": k, "amount": amounts[k], "share": _share(amounts[k], report.total)} for k in KINDS],
                        columns=["kind", "amount", "share"])


#: `undefined_because` is the reason the cost per successful task is undefined (empty when it is not).
UNIT_COLUMNS = ["key", "cost", "tasks_success", "tasks_failure", "tasks_unknown", "success_rate",
                "cost_per_successful_task", "undefined_because", "failed_work", "failed_work_share", "share_of_gpu",
                "requests", "active_tokens", "cost_per_1m_active_tokens", "success_criteria"]


def unit_economics_frame(data: reports.RunData, *, by: str) -> pd.DataFrame:
    """Unit economics by tenant or product: exactly the rows of ``ledger report unit-economics
    --by BY --json`` (key None is the product-less lines, such as shared charges), money and
    ratios as Decimal."""
    doc = reports.unit_economics_as_json(reports.unit_economics(data, by=by))
    rows = []
    for r in doc["rows"]:
        tasks = r.get("tasks") or {}
        rows.append({"key": r[by], "cost": _d(r["cost"]), "tasks_success": tasks.get("success", 0),
                     "tasks_failure": tasks.get("failure", 0), "tasks_unknown": tasks.get("unknown", 0),
                     "success_rate": _d(r.get("success_rate")),
                     "cost_per_successful_task": _d(r.get("cost_per_successful_task")),
                     "undefined_because": r["reasons"].get("cost_per_successful_task", ""),
                     "failed_work": _d(r.get("failed_work")), "failed_work_share": _d(r.get("failed_work_share")),
                     "share_of_gpu": _d(r.get("share_of_gpu")), "requests": r["requests"],
                     "active_tokens": r["active_tokens"],
                     "cost_per_1m_active_tokens": _d(r.get("cost_per_1m_active_tokens")),
                     "success_criteria": ", ".join(r.get("success_criteria", []))})
    return pd.DataFrame(rows, columns=UNIT_COLUMNS)


def unit_economics_csv(data: reports.RunData, *, by: str) -> str:
    """``ledger report unit-economics --by BY --csv`` of the run."""
    return reports.unit_economics_as_csv(reports.unit_economics(data, by=by))


# ---- tenants side by side -----------------------------------------------------------------------

#: The tenant report's metrics (``ledger report tenants --csv``) and the column each becomes here.
TENANT_METRICS = {"cost": "cost", "cost per successful task": "cost_per_successful_task",
                  "active tokens": "active_tokens", "$/1M active tokens": "cost_per_1m_active_tokens",
                  "share of GPU": "share_of_gpu", "task failure rate": "task_failure_rate",
                  "success rate": "success_rate", "failed work share": "failed_work_share", "requests": "requests",
                  "tasks success": "tasks_success", "tasks failure": "tasks_failure",
                  "tasks unknown": "tasks_unknown", "idle share": "idle_share"}
_INT_METRICS = {"active_tokens", "requests", "tasks_success", "tasks_failure", "tasks_unknown"}


def tenant_names(data: reports.RunData) -> list[str]:
    """Tenants of the run, by cost descending (the biggest first), then by name."""
    report = reports.unit_economics(data, by="tenant")
    return [r.key for r in sorted(report.rows, key=lambda r: (-r.cost, r.key or "")) if r.key is not None]


def tenants_frame(data: reports.RunData, tenants: Sequence[str]) -> pd.DataFrame:
    """The chosen tenants side by side, one row per tenant: the numbers of ``ledger report
    tenants --tenants A,B --csv`` (cost, cost per successful task with the reason when undefined,
    active tokens, $/1M active tokens, share of GPU, task failure rate, success rate, ...), money
    and ratios as Decimal, counts as int, None where the report leaves a number undefined."""
    cols = ["tenant", *TENANT_METRICS.values(), "undefined_because"]
    if not tenants:
        return pd.DataFrame([], columns=cols)
    report = reports.unit_economics(data, by="tenant", tenants=list(tenants))
    table = list(csv.reader(io.StringIO(reports.tenants_as_csv(report))))
    names = table[0][1:]
    metric_rows = {r[0]: r[1:] for r in table[1:]}
    rows = []
    for i, name in enumerate(names):
        row: dict = {"tenant": name, "undefined_because": ""}
        for metric, column in TENANT_METRICS.items():
            text = metric_rows[metric][i]
            if text.startswith("undefined"):
                row[column], row["undefined_because"] = None, text.split(":", 1)[-1].strip()
            elif column in _INT_METRICS:
                row[column] = int(text)
            else:
                row[column] = _d(text)
        rows.append(row)
    order = {t: i for i, t in enumerate(tenants)}
    rows.sort(key=lambda r: order.get(r["tenant"], len(order)))
    return pd.DataFrame(rows, columns=cols)


def tenant_daily_frame(data: reports.RunData, tenants: Sequence[str]) -> pd.DataFrame:
    """Each chosen tenant's cost per UTC day (its lines only): day, tenant, amount (Decimal)."""
    wanted = set(tenants)
    acc: dict[tuple[date, str], Decimal] = {}
    for ln in data.lines:
        if ln.kind == "tenant" and ln.tenant in wanted:
            acc[(ln.day, ln.tenant)] = acc.get((ln.day, ln.tenant), ZERO) + ln.amount
    rows = [{"day": d, "tenant": t, "amount": v} for (d, t), v in sorted(acc.items())]
    return pd.DataFrame(rows, columns=["day", "tenant", "amount"])


# ---- exports ------------------------------------------------------------------------------------

def allocation_workbook(data: reports.RunData, *, locale: str) -> bytes:
    """The allocation workbook of ``ledger export --xlsx`` (totals as formulas, provenance sheet)."""
    from .export import allocation_as_xlsx

    return allocation_as_xlsx(data, locale=locale, generated_at=datetime.now(timezone.utc),
                              version=runs.code_version())


def allocation_lines_csv(data: reports.RunData) -> str:
    """The run's lines as ``ledger export --csv`` writes them."""
    from .export import allocation_as_csv

    return allocation_as_csv(data)


# ---- price books --------------------------------------------------------------------------------

@dataclass(frozen=True)
class PriceBooks:
    """The books the dashboard prices with: `books` (every version), `source` (``ledger``: loaded
    in the ledger; ``files``: the shipped folder, when the ledger has none), `where` (a sentence
    for people) and `problems` (of the files, when read from files)."""

    books: tuple[Book, ...]
    source: str
    where: str
    problems: tuple[str, ...] = ()

    @property
    def index(self) -> PriceIndex:
        return PriceIndex(self.books)


def price_books(state: LedgerState) -> PriceBooks:
    """The books loaded in the ledger (as ``pricebook show`` reads them); when the ledger has none,
    the shipped ``pricebooks/`` folder (as ``size`` and ``budget`` fall back to)."""
    if state.has_store:
        with reading(state.url) as s:
            books = store.books_from_store(s)
        if books:
            return PriceBooks(tuple(books), "ledger", f"{len(books)} book versions loaded in the ledger")
    paths = _default_book_paths()
    books, problems = load_books(paths)
    return PriceBooks(tuple(books), "files",
                      "the shipped price books folder (none are loaded in the ledger: `ledger pricebook load`)",
                      tuple(str(p) for p in problems))


def _default_book_paths() -> list[Path]:
    from .pricebook import default_paths

    return default_paths()


def books_frame(books: Sequence[Book]) -> pd.DataFrame:
    """One row per book version: book, version, in_force (the newest version of its name), currency,
    prices, fx_rates, retrieved_at, source."""
    current = {b.ref for b in in_force_books(books)}
    rows = [{"book": b.name, "version": b.version, "in_force": b.ref in current, "currency": b.currency,
             "prices": len(b.prices), "fx_rates": len(b.fx), "retrieved_at": b.retrieved_at, "source": b.source}
            for b in sorted(books, key=lambda b: (b.name, b.version))]
    return pd.DataFrame(rows, columns=["book", "version", "in_force", "currency", "prices", "fx_rates",
                                       "retrieved_at", "source"])


PRICE_COLUMNS = ["meter", "sku", "region", "purchase_option", "price", "list_price", "currency", "per", "tiers",
                 "upfront", "term", "effective_from", "effective_to", "book", "version", "entry", "source_url"]


def _price_row(p) -> dict:
    return {"meter": p.meter, "sku": p.sku, "region": p.region, "purchase_option": p.purchase_option,
            "price": p.price, "list_price": p.list_price, "currency": p.currency, "per": p.per,
            "tiers": "; ".join(f"above {t.above_input_tokens:,} input tokens: {t.price}" for t in p.tiers),
            "upfront": p.upfront, "term": p.term or "", "effective_from": p.effective_from,
            "effective_to": p.effective_to, "book": p.book, "version": p.version, "entry": p.entry,
            "source_url": p.source_url}


def prices_in_force_frame(books: Sequence[Book], at: datetime, *, meter: str | None = None) -> pd.DataFrame:
    """The prices in force at `at` over the books in force (``ledger pricebook show --at``)."""
    rows = [_price_row(p) for p in PriceIndex(books).in_force(at, meter=meter or None)]
    return pd.DataFrame(rows, columns=PRICE_COLUMNS)


def price_keys(books: Sequence[Book]) -> list[tuple[str, str, str, str]]:
    """Every (meter, sku, region, purchase_option) priced by any book version, sorted."""
    return sorted({p.key for b in books for p in b.prices})


def price_history_frame(books: Sequence[Book], key: tuple[str, str, str, str]) -> pd.DataFrame:
    """Every price ever written for `key`, in every book version (superseded versions included,
    marked by `in_force_version` False): the columns of a price, sorted by effective_from."""
    current = {b.ref for b in in_force_books(books)}
    rows = []
    for b in books:
        for p in b.prices:
            if p.key == tuple(key):
                rows.append({**_price_row(p), "in_force_version": b.ref in current})
    rows.sort(key=lambda r: (r["effective_from"], r["book"], r["version"]))
    return pd.DataFrame(rows, columns=[*PRICE_COLUMNS, "in_force_version"])


def check_frame(paths: Sequence[str | Path] | None = None) -> tuple[pd.DataFrame, str]:
    """``ledger pricebook check`` over `paths` (default: the shipped folder): one row per finding
    (file name, entry, message) and a one-line summary."""
    paths = list(paths) if paths else _default_book_paths()
    books, problems = load_books(paths)
    rows = [{"file": Path(p.file).name, "entry": p.entry, "message": p.message} for p in problems]
    n = sum(len(b.prices) for b in books)
    summary = (f"{len(books)} price books, {n} prices: no problems" if not problems else
               f"{len(problems)} problem{'s' if len(problems) != 1 else ''} in {len(books)} readable books")
    return pd.DataFrame(rows, columns=["file", "entry", "message"]), summary


# ---- sizing -------------------------------------------------------------------------------------

def example_plans() -> list[Path]:
    """The plans shipped in ``examples/`` (TOML files with a [plan] table)."""
    if not EXAMPLES_DIR.is_dir():
        return []
    return [p for p in sorted(EXAMPLES_DIR.glob("*.toml")) if "[plan]" in p.read_text(encoding="utf-8")]


def read_plan(text: str, name: str, *, base_dir: str | Path) -> Plan:
    """A plan from its TOML text (curve files resolve against `base_dir`); BudgetError listing
    every problem otherwise."""
    plan, problems = parse_plan(text, name, base_dir=base_dir)
    if problems or plan is None:
        raise BudgetError(problems or [f"{name}: not a plan"])
    return plan


def curve_from_files(files: Sequence[tuple[str, bytes]], *, fmt: str = "auto", select: str | None = None) -> Curve:
    """One curve from uploaded result files (name, bytes): each file read in `fmt` (or detected),
    `select` picking among several curves of a file, several files merged into one curve (one
    file per load level). SizingError naming the file otherwise."""
    picked = []
    for name, content in files:
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            raise SizingError([f"{name}: not UTF-8 text"]) from None
        picked.append(select_curve(parse_curves(text, source=name, fmt=fmt), select or None, where=name))
    if not picked:
        raise SizingError(["no curve file given"])
    return merge_curves(picked)


def curve_from_anchors(text: str) -> Curve:
    return load_curve(text, "anchors")


def curve_points_frame(curve: Curve) -> pd.DataFrame:
    """The measured points: concurrency, tok_s_user, output_tok_s (None when not measured), ttft_ms."""
    rows = [{"concurrency": p.concurrency, "tok_s_user": p.tok_s_user, "output_tok_s": p.output_tok_s,
             "ttft_ms": p.ttft_ms} for p in curve.points]
    return pd.DataFrame(rows, columns=["concurrency", "tok_s_user", "output_tok_s", "ttft_ms"])


def gpu_prices_frame(books: Sequence[Book], at: datetime) -> pd.DataFrame:
    """GPU-time prices in force at `at`: device (sku), region, purchase_option, price, per,
    currency, per_gpu_hour (Decimal), book, version, source_url."""
    rows = []
    for p in PriceIndex(books).in_force(at, meter="gpu_time"):
        try:
            per_hour = price_per_gpu_hour(p.price, p.per)
        except SizingError:
            continue
        rows.append({"device": p.sku, "region": p.region, "purchase_option": p.purchase_option, "price": p.price,
                     "per": p.per, "currency": p.currency, "per_gpu_hour": per_hour, "book": p.book,
                     "version": p.version, "source_url": p.source_url})
    return pd.DataFrame(rows, columns=["device", "region", "purchase_option", "price", "per", "currency",
                                       "per_gpu_hour", "book", "version", "source_url"])


def size_fleet(curve: Curve, request: SizingRequest, *, books: Sequence[Book] = (), device: str | None = None,
               region: str | None = None, purchase_option: str | None = None, at: datetime | None = None,
               hours_per_month: Decimal = Decimal("730")) -> SizingResult:
    """``ledger size``: the SLA-first sizing of `request` on `curve`, priced with the GPU-time price
    in force at `at` when a device is given. Raises SizingError (or NoPriceError) with the reason."""
    result = size(curve, request)
    if device:
        when = at or datetime.now(timezone.utc)
        price = PriceIndex(books).price_at(meter="gpu_time", sku=device, region=region or "*",
                                           purchase_option=purchase_option or "*", at=when)
        result = priced(result, price, device=device, region=region or "*", purchase_option=purchase_option or "*",
                        at=when, hours_per_month=hours_per_month)
    return result


SIZING_COLUMNS = ["sla_tok_s_user", "c_star", "c_star_measured", "tok_s_user", "replica_output_tok_s",
                  "throughput_basis", "limited_by", "replicas_serving", "replicas_reserve", "replicas", "gpus",
                  "monthly_cost", "capacity_tokens_per_gpu_s"]


def sizing_frame(result: SizingResult) -> pd.DataFrame:
    """The SLA-first table (the rows of ``ledger size --json``), monthly_cost as Decimal or None."""
    doc = sizing_as_dict(result)
    rows = [{**r, "monthly_cost": _d(r["monthly_cost"])} for r in doc["rows"]]
    return pd.DataFrame(rows, columns=SIZING_COLUMNS)


def sizing_context(result: SizingResult) -> list[str]:
    """The lines ``ledger size`` prints above its table: mode, curve, workload, limits, price."""
    from .sizing.report import context_lines

    return context_lines(result)


# ---- budgets ------------------------------------------------------------------------------------

def plan_books(plan: Plan, fallback: PriceBooks) -> PriceBooks:
    """The books a plan is priced with: the plan's own `pricebooks`, else `fallback` (the ledger's,
    else the shipped folder), as ``ledger budget`` does."""
    if not plan.pricebooks:
        return fallback
    books, problems = load_books(list(plan.pricebooks))
    if problems:
        raise BudgetError([str(p) for p in problems])
    return PriceBooks(tuple(books), "plan", f"the plan's price books ({', '.join(map(str, plan.pricebooks))})")


def budget_months_frame(b: Budget) -> pd.DataFrame:
    """Month by month per scenario (``ledger budget --json`` summary): scenario, month, one Decimal
    column per category, total."""
    from .export.budget_report import budget_as_json

    doc = budget_as_json(b)
    rows = [{"scenario": s["scenario"], "month": s["month"], **{c: Decimal(v) for c, v in s["by_category"].items()},
             "total": Decimal(s["total"])} for s in doc["summary"]]
    return pd.DataFrame(rows, columns=["scenario", "month", *CATEGORIES, "total"])


def budget_totals_frame(b: Budget) -> pd.DataFrame:
    """Per scenario over the plan's months: scenario, one Decimal column per category, total."""
    from .export.budget_report import budget_as_json

    doc = budget_as_json(b)
    rows = [{"scenario": name, **{c: Decimal(v) for c, v in t["by_category"].items()}, "total": Decimal(t["total"])}
            for name, t in doc["totals"].items()]
    return pd.DataFrame(rows, columns=["scenario", *CATEGORIES, "total"])


def budget_pools_frame(b: Budget) -> pd.DataFrame:
    """GPUs per pool, month and scenario (a month split where a price changes): scenario, pool,
    month, from, to, status, tpm, replicas_serving, replicas_reserve, gpus, hours, price_per_gpu_hour,
    cost (Decimal), price_source."""
    rows = [{"scenario": g.scenario, "pool": g.pool, "month": g.month, "from": g.start, "to": g.end,
             "status": g.status, "tpm": g.tpm, "replicas_serving": g.serving, "replicas_reserve": g.reserve,
             "gpus": g.gpus, "hours": g.hours, "price_per_gpu_hour": g.price_per_gpu_hour, "currency": g.currency,
             "cost": g.cost, "price_source": g.price_ref} for g in b.gpu]
    return pd.DataFrame(rows, columns=["scenario", "pool", "month", "from", "to", "status", "tpm", "replicas_serving",
                                       "replicas_reserve", "gpus", "hours", "price_per_gpu_hour", "currency", "cost",
                                       "price_source"])


def budget_workbook(b: Budget, *, locale: str) -> bytes:
    """The budget workbook of ``ledger budget PLAN --xlsx`` (live formulas, provenance sheet)."""
    from .export.budget_xlsx import budget_as_xlsx

    return budget_as_xlsx(b, locale=locale, generated_at=b.generated_at or datetime.now(timezone.utc),
                          version=runs.code_version())


def forecast_vs_actual(b: Budget, s: Session, *, run_id: str, scenario: str = "base") -> Comparison:
    """``ledger budget compare``: the plan's month of the run's period beside the run's lines.
    BudgetError when the run is not a calendar month of the plan, or not in the plan's currency."""
    stored = runs.load_run(s, run_id=run_id)
    month = period_name(stored.run.period_start, stored.run.period_end)
    return compare(b, month=month, lines=stored.lines, run_id=stored.run.id, run_currency=stored.run.currency,
                   price_books=stored.summary.get("price_books", []), scenario=scenario)


def comparison_frame(c: Comparison) -> pd.DataFrame:
    """Forecast vs actual per category, per pool and in total (``ledger budget compare --json``):
    dimension, key, forecast, actual, error = actual - forecast (Decimal), relative_error
    (Decimal or None) and the reason when it is undefined."""
    rows = [{"dimension": r.dimension, "key": r.key, "forecast": r.forecast, "actual": r.actual, "error": r.error,
             "relative_error": r.relative, "reason": r.reason} for r in (*c.rows, c.total)]
    return pd.DataFrame(rows, columns=["dimension", "key", "forecast", "actual", "error", "relative_error", "reason"])
