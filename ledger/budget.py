"""Forecast budgets: replica plans (TOML) priced month by month under scenarios, and forecast vs actual.

Pure functions over frozen dataclasses: :func:`parse_plan` / :func:`load_plan` turn a plan into a
:class:`Plan` (or one problem per line), :func:`budget` sizes and prices it per month and scenario,
:func:`compare` sets a month's base forecast beside an allocation run's lines. The rules
(calendar months in UTC, hours, price changes, scenario multipliers) are in ``docs/budgets.md``.
"""
from __future__ import annotations

import hashlib
import math
import re
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal, localcontext
from pathlib import Path

from . import units
from .allocate import CATEGORIES, CHARGE_CATEGORY, meter_category
from .money import MoneyError, ZERO, quantize, split, to_decimal
from .pricebook import NoPriceError, Price, PriceIndex
from .sizing import (DRAFT, VERDICT, Curve, CurveContext, CurvePoint, Reserves, SizingError, SizingRequest,
                     load_curve, make_curve, parse_anchors, price_per_gpu_hour, size)

#: Quantities (tokens, calls, GB, hours) are kept at this precision; money at the ledger's 1e-6.
QUANTITY_EXP = Decimal("0.000001")
RATIO_EXP = Decimal("0.0001")
SCENARIO_KNOBS = ("traffic", "output_length", "cache_hit_rate", "prices")
TOKEN_BUCKETS = (("uncached_input", "input_tokens"), ("cached_input", "cached_input_tokens"),
                 ("output", "output_tokens"))
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_PLAN_KEYS = {"name", "currency", "start", "months", "hours_per_month", "pricebooks", "description"}
_POOL_KEYS = {"name", "device", "region", "purchase_option", "gpus_per_replica", "curve", "curve_format",
              "curve_select", "anchors", "sla", "tpm", "util", "failure_reserve", "canary", "warm_reserve",
              "growth", "interpolate", "repair", "ttft_ms", "isl", "osl", "description"}
_INLINE_CURVE_KEYS = {"source", "model", "hardware", "engine", "precision", "gpus_per_replica", "isl", "osl",
                      "date", "notes", "points"}
_POINT_KEYS = {"concurrency", "tok_s_user", "output_tok_s", "ttft_ms"}
_TOKENS_KEYS = {"provider", "model", "region", "input_tokens", "cached_share", "output_tokens",
                "input_tokens_per_request", "growth", "description"}
_METER_KEYS = {"meter", "sku", "region", "quantity", "unit", "growth", "description"}
_CHARGE_KEYS = {"name", "category", "amount", "currency", "from", "to", "description"}


class BudgetError(ValueError):
    """A plan that cannot be budgeted: `problems` holds one line per problem."""

    def __init__(self, problems: Sequence[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


# ---- the plan ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scenario:
    """Multipliers (dimensionless decimals > 0) applied to the base plan: `traffic` (TPM and every
    usage volume), `output_length` (output tokens, hence output TPM), `cache_hit_rate` (the cached
    share of provider input tokens), `prices` (every price-book price; not fixed charges)."""

    name: str
    traffic: Decimal = Decimal(1)
    output_length: Decimal = Decimal(1)
    cache_hit_rate: Decimal = Decimal(1)
    prices: Decimal = Decimal(1)


@dataclass(frozen=True)
class PoolPlan:
    """A self-hosted pool to size every month: `device`, `region`, `purchase_option` (the GPU price
    key), `gpus_per_replica` (count), the measured `curve` and where it came from (`curve_ref`),
    the interactivity `sla` [token/s/user], `tpm` in the first month [output token/min], `util` in
    (0, 1], `reserves` [replicas], monthly `growth` (compounding, a decimal: 0.05 = +5 %/month),
    `interpolate` (DRAFT), `repair`, `ttft_ms` limit, workload `isl`/`osl` [token] (None: the curve's)."""

    name: str
    device: str
    region: str
    purchase_option: str
    gpus_per_replica: int
    curve: Curve
    curve_ref: str
    sla: float
    tpm: Decimal
    util: float
    reserves: Reserves
    growth: Decimal
    interpolate: bool = False
    repair: bool = False
    ttft_ms: float | None = None
    isl: float | None = None
    osl: float | None = None


@dataclass(frozen=True)
class TokenForecast:
    """Provider tokens per month in the first month: `input_tokens` (cached included),
    `cached_share` of them that hit the prefix cache (0..1), `output_tokens` (reasoning included),
    for `model` of `provider` in `region` (``*``: any); `input_tokens_per_request` picks a
    long-context tier (None: the base price); monthly `growth` (compounding)."""

    provider: str
    model: str
    region: str
    input_tokens: Decimal
    cached_share: Decimal
    output_tokens: Decimal
    growth: Decimal
    input_tokens_per_request: int | None = None


@dataclass(frozen=True)
class MeterForecast:
    """A metered usage per month in the first month: `quantity` in `unit` (a pint expression) of
    `meter`/`sku` in `region`; its `category` follows the allocation's (tool_call -> tool, ...)."""

    meter: str
    sku: str
    region: str
    quantity: Decimal
    unit: str
    growth: Decimal
    category: str


@dataclass(frozen=True)
class FixedCharge:
    """A fixed monthly `amount` in `currency`, booked to `category`, in the months
    ``[first, last]`` (None: every month of the plan)."""

    name: str
    category: str
    amount: Decimal
    currency: str
    first: str | None = None
    last: str | None = None
    description: str = ""


@dataclass(frozen=True)
class Plan:
    """A budget plan: `name`, reporting `currency`, the `months` (``YYYY-MM``, calendar months in
    UTC), `hours_per_month` (None: the actual hours of each month; else a fixed decimal such as
    730), `pools`, `tokens`, `meters`, `charges`, `scenarios` (``base`` always among them),
    `pricebooks` (paths the plan names, resolved), the plan `path` and the SHA-256 `digest` of its text."""

    name: str
    currency: str
    months: tuple[str, ...]
    hours_per_month: Decimal | None
    pools: tuple[PoolPlan, ...]
    tokens: tuple[TokenForecast, ...]
    meters: tuple[MeterForecast, ...]
    charges: tuple[FixedCharge, ...]
    scenarios: tuple[Scenario, ...]
    pricebooks: tuple[str, ...] = ()
    path: str = ""
    digest: str = ""
    description: str = ""

    def scenario(self, name: str) -> Scenario:
        for s in self.scenarios:
            if s.name == name:
                return s
        raise BudgetError(f"scenario {name!r} is not in the plan (it has {', '.join(s.name for s in self.scenarios)})")


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """``[start, end)`` of a calendar month in UTC (end exclusive)."""
    m = _MONTH.match(month)
    if not m or not 1 <= int(m.group(2)) <= 12:
        raise ValueError(f"{month!r} is not a month written YYYY-MM")
    y, mo = int(m.group(1)), int(m.group(2))
    start = datetime(y, mo, 1, tzinfo=timezone.utc)
    end = datetime(y + (mo == 12), mo % 12 + 1, 1, tzinfo=timezone.utc)
    return start, end


def _months_from(first: str, n: int) -> tuple[str, ...]:
    y, m = int(first[:4]), int(first[5:7])
    out = []
    for i in range(n):
        k = m - 1 + i
        out.append(f"{y + k // 12:04d}-{k % 12 + 1:02d}")
    return tuple(out)


class _Reader:
    """Reads one TOML table, collecting one problem per bad field."""

    def __init__(self, problems: list[str], where: str):
        self.problems = problems
        self.where = where
        self.bad = False

    def err(self, msg: str) -> None:
        self.bad = True
        self.problems.append(f"{self.where}: {msg}")

    def unknown(self, table: dict, known: set[str]) -> None:
        for k in sorted(set(table) - known):
            self.err(f"unknown field {k!r} (known: {', '.join(sorted(known))})")

    def text(self, table: dict, key: str, default: str | None = None, *, name: bool = False) -> str | None:
        if key not in table:
            if default is None:
                self.err(f"missing required field {key!r}")
            return default
        v = table[key]
        if not isinstance(v, str) or not v.strip():
            self.err(f"{key} {v!r} is not a non-empty string")
            return default
        if name and not _NAME.match(v):
            self.err(f"{key} {v!r}: use letters, digits, '_', '.', '-' (starting with a letter or digit)")
        return v

    def decimal(self, table: dict, key: str, default: Decimal | None = None, *, lo: Decimal | None = None,
                lo_open: bool = False, hi: Decimal | None = None) -> Decimal | None:
        if key not in table:
            if default is None:
                self.err(f"missing required field {key!r}")
            return default
        v = table[key]
        if isinstance(v, float):
            self.err(f"{key} {v!r} is a TOML float; write it as a string (\"{v}\") so it stays exact")
            return default
        try:
            d = to_decimal(v, what=key)
        except MoneyError as e:
            self.err(str(e))
            return default
        if lo is not None and (d <= lo if lo_open else d < lo):
            self.err(f"{key} must be {'>' if lo_open else '>='} {lo} (got {d})")
            return default
        if hi is not None and d > hi:
            self.err(f"{key} must be <= {hi} (got {d})")
            return default
        return d

    def number(self, table: dict, key: str, default: float | None = None, *, required: bool = False,
               positive: bool = True) -> float | None:
        if key not in table:
            if required:
                self.err(f"missing required field {key!r}")
            return default
        v = table[key]
        try:
            f = float(v) if not isinstance(v, bool) else math.nan
        except (TypeError, ValueError):
            f = math.nan
        if not math.isfinite(f) or (positive and f <= 0):
            self.err(f"{key} {v!r} must be a {'positive ' if positive else ''}number")
            return default
        return f

    def count(self, table: dict, key: str, default: int | None = None, *, minimum: int = 0) -> int | None:
        if key not in table:
            if default is None:
                self.err(f"missing required field {key!r}")
            return default
        v = table[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
            self.err(f"{key} {v!r} must be a whole number >= {minimum}")
            return default
        return v

    def flag(self, table: dict, key: str) -> bool:
        v = table.get(key, False)
        if not isinstance(v, bool):
            self.err(f"{key} {v!r} must be true or false")
            return False
        return v

    def month(self, table: dict, key: str) -> str | None:
        v = table.get(key)
        if v is None:
            return None
        try:
            month_bounds(str(v))
        except ValueError as e:
            self.err(f"{key}: {e}")
            return None
        return str(v)


def load_plan(path: str | Path) -> Plan:
    """Read and validate a plan file; BudgetError with one line per problem."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BudgetError(f"{p}: cannot read the plan ({e})") from None
    plan, problems = parse_plan(text, str(p), base_dir=p.parent)
    if problems:
        raise BudgetError(problems)
    return plan


def parse_plan(text: str, path: str = "plan.toml", *, base_dir: str | Path = ".") -> tuple[Plan | None, list[str]]:
    """Parse and validate a plan's TOML; curve files and price book paths resolve against `base_dir`.
    Returns the plan (None when it has problems) and the problems, one line each."""
    problems: list[str] = []
    name = Path(path).name
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        return None, [f"{name}: not valid TOML: {e}"]
    base = Path(base_dir)
    top = _Reader(problems, name)
    top.unknown(doc, {"plan", "pool", "tokens", "meter", "charge", "scenario"})
    head = doc.get("plan")
    if not isinstance(head, dict):
        return None, problems + [f"{name}: missing [plan] table (name, currency, start, months)"]
    r = _Reader(problems, f"{name}: [plan]")
    r.unknown(head, _PLAN_KEYS)
    plan_name = r.text(head, "name", name=True)
    currency = r.text(head, "currency", "USD")
    from babel.numbers import list_currencies

    if currency not in list_currencies():
        r.err(f"currency {currency!r} is not an ISO 4217 code")
    start = r.text(head, "start")
    if start is not None:
        try:
            month_bounds(start)
        except ValueError as e:
            r.err(f"start: {e}")
            start = None
    n_months = r.count(head, "months", minimum=1)
    if n_months is not None and n_months > 120:
        r.err(f"months {n_months} is more than 120 (ten years)")
    hours: Decimal | None = None
    raw_hours = head.get("hours_per_month", "actual")
    if raw_hours != "actual":
        hours = r.decimal(head, "hours_per_month", lo=ZERO, lo_open=True)
        if hours is not None and hours > 744:
            r.err(f"hours_per_month {hours} is more than the 744 hours of a 31-day month")
    books = head.get("pricebooks", [])
    if not isinstance(books, list) or not all(isinstance(b, str) and b for b in books):
        r.err("pricebooks must be a list of file or folder paths")
        books = []
    months = _months_from(start, n_months) if start and n_months else ()

    def each(key: str, read) -> tuple:
        return tuple(x for x in (read(t, i) for i, t in enumerate(_tables(doc, key, name, problems), 1)) if x)

    pools = each("pool", lambda t, i: _pool(t, i, name, base, problems))
    seen: set[str] = set()
    for p in pools:
        if p.name in seen:
            problems.append(f"{name}: pool {p.name!r} is defined twice")
        seen.add(p.name)
    tokens = each("tokens", lambda t, i: _tokens(t, i, name, problems))
    meters = each("meter", lambda t, i: _meter(t, i, name, problems))
    charges = each("charge", lambda t, i: _charge(t, i, name, months, problems))
    scenarios = _scenarios(doc.get("scenario", {}), name, tokens, problems)
    if problems:
        return None, problems
    return Plan(name=plan_name, currency=currency, months=months, hours_per_month=hours, pools=pools, tokens=tokens,
                meters=meters, charges=charges, scenarios=scenarios,
                pricebooks=tuple(str((base / b)) for b in books), path=path,
                digest=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                description=str(head.get("description", ""))), []


def _tables(doc: dict, key: str, name: str, problems: list[str]) -> list[dict]:
    v = doc.get(key, [])
    if not isinstance(v, list) or not all(isinstance(t, dict) for t in v):
        problems.append(f"{name}: {key} must be an array of tables ([[{key}]])")
        return []
    return v


def _pool(t: dict, i: int, name: str, base: Path, problems: list[str]) -> PoolPlan | None:
    r = _Reader(problems, f"{name}: pool[{i}] {t.get('name', '?')}")
    r.unknown(t, _POOL_KEYS)
    pool_name = r.text(t, "name", name=True)
    device = r.text(t, "device")
    region = r.text(t, "region")
    option = r.text(t, "purchase_option")
    gpr = r.count(t, "gpus_per_replica", minimum=1)
    sla = r.number(t, "sla", required=True)
    tpm = r.decimal(t, "tpm", lo=ZERO, lo_open=True)
    util = r.number(t, "util", 0.7)
    if util is not None and not 0 < util <= 1:
        r.err(f"util {util} must be in (0, 1]")
    reserves = Reserves(r.count(t, "failure_reserve", 0), r.count(t, "canary", 0), r.count(t, "warm_reserve", 0))
    growth = r.decimal(t, "growth", ZERO, lo=Decimal(-1), lo_open=True)
    interpolate, repair = r.flag(t, "interpolate"), r.flag(t, "repair")
    ttft = r.number(t, "ttft_ms")
    isl = r.number(t, "isl", positive=False)
    osl = r.number(t, "osl")
    curve, ref = _curve(t, r, base)
    if r.bad or curve is None:
        return None
    return PoolPlan(pool_name, device, region, option, gpr, curve, ref, sla, tpm, util, reserves, growth,
                    interpolate, repair, ttft, isl, osl)


def _curve(t: dict, r: _Reader, base: Path) -> tuple[Curve | None, str]:
    given = [k for k in ("curve", "anchors") if k in t]
    if len(given) != 1:
        r.err("give the measured curve as exactly one of curve = \"file\" (or an inline table) or "
              "anchors = \"c:tok_s_user,...\"")
        return None, ""
    try:
        if "anchors" in t:
            return parse_anchors(str(t["anchors"]), source=f"anchors {t['anchors']}"), f"anchors {t['anchors']}"
        c = t["curve"]
        if isinstance(c, dict):
            return _inline_curve(c, r), "inline"
        path = base / str(c)
        if not path.is_file():
            r.err(f"curve file {c!r} not found (paths are relative to the plan's folder)")
            return None, ""
        return load_curve(path, str(t.get("curve_format", "auto")), t.get("curve_select")), str(c)
    except SizingError as e:
        for p in e.problems:
            r.err(f"curve: {p}")
        return None, ""


def _inline_curve(c: dict, r: _Reader) -> Curve | None:
    bad_keys = sorted(set(c) - _INLINE_CURVE_KEYS)
    if bad_keys:
        r.err(f"curve: unknown field(s) {', '.join(bad_keys)} (known: {', '.join(sorted(_INLINE_CURVE_KEYS))})")
    pts = c.get("points")
    if not isinstance(pts, list) or not pts:
        r.err("curve: an inline curve needs points = [{ concurrency = ..., tok_s_user = ... }, ...]")
        return None
    points = []
    for j, p in enumerate(pts, 1):
        pr = _Reader(r.problems, f"{r.where}: curve point {j}")
        if not isinstance(p, dict):
            pr.err("is not a table")
            continue
        pr.unknown(p, _POINT_KEYS)
        conc, tsu = pr.number(p, "concurrency", required=True), pr.number(p, "tok_s_user", required=True)
        out, ttft = pr.number(p, "output_tok_s"), pr.number(p, "ttft_ms", positive=False)
        r.bad = r.bad or pr.bad
        if not pr.bad:
            points.append(CurvePoint(conc, tsu, out, ttft, label=f"point {j}"))
    gpr = c.get("gpus_per_replica")
    ctx = CurveContext(source=str(c.get("source", "inline curve")), model=c.get("model"), hardware=c.get("hardware"),
                       gpus_per_replica=gpr if isinstance(gpr, int) else None,
                       isl=float(c["isl"]) if isinstance(c.get("isl"), (int, float)) else None,
                       osl=float(c["osl"]) if isinstance(c.get("osl"), (int, float)) else None,
                       engine=c.get("engine"), precision=c.get("precision"),
                       date=str(c["date"]) if "date" in c else None, notes=c.get("notes"), format="plan")
    return make_curve(points, ctx) if not r.bad else None


def _tokens(t: dict, i: int, name: str, problems: list[str]) -> TokenForecast | None:
    r = _Reader(problems, f"{name}: tokens[{i}] {t.get('model', '?')}")
    r.unknown(t, _TOKENS_KEYS)
    provider, model = r.text(t, "provider"), r.text(t, "model")
    region = r.text(t, "region", "*")
    inp = r.decimal(t, "input_tokens", ZERO, lo=ZERO)
    share = r.decimal(t, "cached_share", ZERO, lo=ZERO, hi=Decimal(1))
    outp = r.decimal(t, "output_tokens", ZERO, lo=ZERO)
    growth = r.decimal(t, "growth", ZERO, lo=Decimal(-1), lo_open=True)
    per_req = r.count(t, "input_tokens_per_request", minimum=0) if "input_tokens_per_request" in t else None
    if r.bad:
        return None
    return TokenForecast(provider, model, region, inp, share, outp, growth, per_req)


def _meter(t: dict, i: int, name: str, problems: list[str]) -> MeterForecast | None:
    r = _Reader(problems, f"{name}: meter[{i}] {t.get('meter', '?')}/{t.get('sku', '?')}")
    r.unknown(t, _METER_KEYS)
    meter, sku, unit = r.text(t, "meter"), r.text(t, "sku"), r.text(t, "unit")
    region = r.text(t, "region", "*")
    qty = r.decimal(t, "quantity", lo=ZERO)
    growth = r.decimal(t, "growth", ZERO, lo=Decimal(-1), lo_open=True)
    if unit is not None:
        try:
            units.parse(unit)
        except units.UnitError as e:
            r.err(f"unit: {e}")
    if meter in ("gpu_time", "input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens"):
        r.err(f"meter {meter!r} is planned elsewhere: GPUs in [[pool]], provider tokens in [[tokens]]")
    if r.bad:
        return None
    return MeterForecast(meter, sku, region, qty, unit, growth, meter_category(meter))


def _charge(t: dict, i: int, name: str, months: tuple[str, ...], problems: list[str]) -> FixedCharge | None:
    r = _Reader(problems, f"{name}: charge[{i}] {t.get('name', '?')}")
    r.unknown(t, _CHARGE_KEYS)
    cname = r.text(t, "name")
    category = r.text(t, "category")
    if category is not None and category not in CATEGORIES and category not in CHARGE_CATEGORY:
        r.err(f"category {category!r}: expected one of {', '.join(CATEGORIES)} (or tools)")
    amount = r.decimal(t, "amount", lo=ZERO)
    currency = r.text(t, "currency", "")
    first, last = r.month(t, "from"), r.month(t, "to")
    if first and last and last < first:
        r.err(f"to {last} is before from {first}")
    if r.bad:
        return None
    return FixedCharge(cname, CHARGE_CATEGORY.get(category, category), amount, currency, first, last,
                       str(t.get("description", "")))


def _scenarios(raw: object, name: str, tokens: Sequence[TokenForecast], problems: list[str]) -> tuple[Scenario, ...]:
    if not isinstance(raw, dict):
        problems.append(f"{name}: scenario must be tables such as [scenario.worst]")
        return (Scenario("base"),)
    out = []
    for sname, t in raw.items():
        r = _Reader(problems, f"{name}: [scenario.{sname}]")
        if not _NAME.match(sname):
            r.err("a scenario name uses letters, digits, '_', '.', '-'")
        if not isinstance(t, dict):
            r.err("is not a table")
            continue
        r.unknown(t, set(SCENARIO_KNOBS) | {"description"})
        knobs = {k: r.decimal(t, k, Decimal(1), lo=ZERO, lo_open=True) for k in SCENARIO_KNOBS}
        for j, tf in enumerate(tokens, 1):
            if tf.cached_share * knobs["cache_hit_rate"] > 1:
                r.err(f"cache_hit_rate {knobs['cache_hit_rate']} makes the cached share of tokens[{j}] {tf.model} "
                      f"{tf.cached_share * knobs['cache_hit_rate']}, above 1")
        out.append(Scenario(sname, **knobs))
    if not any(s.name == "base" for s in out):
        out.insert(0, Scenario("base"))
    order = {"best": 0, "base": 1, "worst": 2}
    return tuple(sorted(out, key=lambda s: (order.get(s.name, 3), s.name)))


# ---- the budget --------------------------------------------------------------------------------

@dataclass(frozen=True)
class PriceUse:
    """A price used for a segment: `price` per `per` in `currency` (upfront amortized), `fx` to the
    plan currency at the segment start, and where it came from (`ref` = book@version price[entry],
    `source_url`, `effective_from`)."""

    price: Decimal
    per: str
    currency: str
    fx: Decimal
    ref: str
    source_url: str
    effective_from: datetime


@dataclass(frozen=True)
class GpuRow:
    """One pool in one month (or the part of a month in which one price is in force) of one
    scenario: `start`/`end` of the segment (end exclusive), the `tpm` sized for [output token/min],
    `status` (VERDICT | DRAFT), replicas (`serving` + `reserve` = `replicas`), `gpus`, `hours` of
    the segment, `price_per_gpu_hour` in the price's `currency`, `fx` to the plan currency,
    `price_multiplier` of the scenario, and `cost` = GPUs x hours x price x fx x multiplier (at 1e-6)."""

    scenario: str
    pool: str
    month: str
    start: datetime
    end: datetime
    tpm: float
    status: str
    serving: int
    reserve: int
    replicas: int
    gpus_per_replica: int
    gpus: int
    hours: Decimal
    price_per_gpu_hour: Decimal
    currency: str
    fx: Decimal
    price_multiplier: Decimal
    cost: Decimal
    price_ref: str


@dataclass(frozen=True)
class VariableRow:
    """Variable usage of one month segment of one scenario: `category`, `item` (provider/model or
    meter/sku), `bucket` (uncached_input, cached_input, output, or the meter), `quantity` in `unit`,
    `price` per `per` in `currency`, `per_factor` (pers per unit: 1e-6 for tokens priced per 1e6),
    `fx`, `price_multiplier`, and `cost` = quantity x per_factor x price x fx x multiplier (at 1e-6)."""

    scenario: str
    month: str
    start: datetime
    end: datetime
    category: str
    item: str
    bucket: str
    quantity: Decimal
    unit: str
    price: Decimal
    per: str
    currency: str
    per_factor: Decimal
    fx: Decimal
    price_multiplier: Decimal
    cost: Decimal
    price_ref: str


@dataclass(frozen=True)
class ChargeRow:
    """A fixed charge in one month (the same in every scenario): `amount` in `currency`, `fx` at the
    month start, `cost` = amount x fx in the plan currency (at 1e-6)."""

    month: str
    category: str
    name: str
    amount: Decimal
    currency: str
    fx: Decimal
    cost: Decimal


@dataclass(frozen=True)
class PoolSizing:
    """How a pool was sized: its curve's label, source and status, repairs made to the curve."""

    pool: str
    curve_ref: str
    curve_label: str
    status: str
    repairs: tuple[str, ...]
    hardware: str | None
    model: str | None


@dataclass(frozen=True)
class Budget:
    """A plan priced: the `scenarios` budgeted, `gpu`, `variable` and `charges` rows, the sizing
    `status` (DRAFT when any pool was interpolated), per-pool `sizing`, the `prices` used (by ref),
    the price books in force (`price_books`, ``name@version``; `book_details`: ref, retrieval date,
    SHA-256 of the book's text) and when it was `generated_at`."""

    plan: Plan
    scenarios: tuple[Scenario, ...]
    gpu: tuple[GpuRow, ...]
    variable: tuple[VariableRow, ...]
    charges: tuple[ChargeRow, ...]
    status: str
    sizing: tuple[PoolSizing, ...]
    prices: tuple[tuple[str, Price], ...]
    price_books: tuple[str, ...]
    generated_at: datetime | None = None
    book_details: tuple[tuple[str, str, str], ...] = ()

    @property
    def currency(self) -> str:
        return self.plan.currency

    def by_category(self, scenario: str, month: str) -> dict[str, Decimal]:
        """Cost per category (every category, zeros included) of one scenario and month."""
        out = {c: ZERO for c in CATEGORIES}
        for g in self.gpu:
            if g.scenario == scenario and g.month == month:
                out["gpu"] += g.cost
        for v in self.variable:
            if v.scenario == scenario and v.month == month:
                out[v.category] += v.cost
        for c in self.charges:
            if c.month == month:
                out[c.category] += c.cost
        return out

    def total(self, scenario: str, month: str | None = None) -> Decimal:
        months = [month] if month else self.plan.months
        return sum((sum(self.by_category(scenario, m).values(), ZERO) for m in months), ZERO)


def _shares(total: Decimal, segments: Sequence[tuple[datetime, datetime, object]]) -> list[Decimal]:
    """`total` split over the segments in proportion to their seconds, at 1e-6 by largest remainder,
    so the parts add up to exactly `total` (one segment: all of it)."""
    if len(segments) <= 1:
        return [total] * len(segments)
    secs = [int((b - a).total_seconds()) for a, b, _ in segments]
    parts = split(quantize(total, QUANTITY_EXP), list(enumerate(secs)), QUANTITY_EXP)
    return [parts[i] for i in range(len(secs))]


def _month_hours(plan: Plan, start: datetime, end: datetime) -> Decimal:
    """The hours of a month: its actual hours (24 x days, UTC has no daylight saving) or the plan's fixed hours."""
    if plan.hours_per_month is not None:
        return plan.hours_per_month
    return Decimal(int((end - start).total_seconds())) / 3600


def _growth(g: Decimal, m: int) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 60
        return (1 + g) ** m


class _Prices:
    """Price and FX lookups in the plan currency, collecting problems instead of stopping."""

    def __init__(self, index: PriceIndex, currency: str, problems: list[str]):
        self.index, self.currency, self.problems = index, currency, problems
        self.used: dict[str, Price] = {}
        self._missing: set[tuple] = set()
        self._fx_instants = sorted({t for b in index.books for r in b.fx
                                    for t in (r.effective_from, r.effective_to) if t is not None})

    def segments(self, start: datetime, end: datetime, *, meter: str, sku: str, region: str,
                 purchase_option: str) -> list[tuple[datetime, datetime, PriceUse]]:
        """``[start, end)`` cut where the price in force (or its FX rate) changes: (from, to, price)
        for each part, adjacent parts with the same price and rate merged. Empty when no price."""
        changes = self.index.changes(meter=meter, sku=sku, region=region, purchase_option=purchase_option)
        cuts = sorted({start, end, *(t for t in changes + self._fx_instants if start < t < end)})
        out: list[tuple[datetime, datetime, PriceUse]] = []
        for a, b in zip(cuts, cuts[1:]):
            use = self.at(meter=meter, sku=sku, region=region, purchase_option=purchase_option, at=a)
            if use is None:
                return []
            if out and (out[-1][2].ref, out[-1][2].fx) == (use.ref, use.fx):
                out[-1] = (out[-1][0], b, out[-1][2])
            else:
                out.append((a, b, use))
        return out

    def at(self, *, meter: str, sku: str, region: str, purchase_option: str, at: datetime) -> PriceUse | None:
        try:
            p = self.index.price_at(meter=meter, sku=sku, region=region, purchase_option=purchase_option, at=at)
            fx = self.index.fx_rate(p.currency, self.currency, at)
        except NoPriceError as e:
            key = (meter, sku, region, purchase_option)
            if key not in self._missing:  # one line per missing price, at the first instant it is needed
                self._missing.add(key)
                self.problems.append(str(e))
            return None
        ref = f"{p.book}@{p.version} price[{p.entry}]"
        self.used[ref] = p
        return PriceUse(p.price, p.per, p.currency, fx, ref, p.source_url, p.effective_from)


def budget(plan: Plan, index: PriceIndex, *, scenarios: Sequence[str] | None = None,
           generated_at: datetime | None = None) -> Budget:
    """Size and price `plan` for every month and scenario (all of the plan's when None).

    Raises BudgetError with one line per problem: a scenario not in the plan, a pool the sizing
    engine cannot size (naming the pool, month and scenario), a price or FX rate not in force.
    """
    chosen = tuple(plan.scenario(s) for s in (scenarios or [s.name for s in plan.scenarios]))
    problems: list[str] = []
    prices = _Prices(index, plan.currency, problems)
    gpu: list[GpuRow] = []
    variable: list[VariableRow] = []
    sizing: dict[str, PoolSizing] = {}
    cache: dict[tuple, tuple] = {}
    for sc in chosen:
        for m, month in enumerate(plan.months):
            start, end = month_bounds(month)
            for pool in plan.pools:
                row = _pool_month(plan, pool, sc, m, month, start, end, prices, cache, sizing, problems)
                gpu.extend(row)
            variable.extend(_tokens_month(plan, sc, m, month, start, end, prices))
            variable.extend(_meters_month(plan, sc, m, month, start, end, prices, problems))
    charges = _charges(plan, prices)
    if problems:
        raise BudgetError(problems)
    status = DRAFT if any(s.status == DRAFT for s in sizing.values()) else VERDICT
    return Budget(plan, chosen, tuple(gpu), tuple(variable), tuple(charges), status,
                  tuple(sizing[p.name] for p in plan.pools if p.name in sizing),
                  tuple(sorted(prices.used.items())), tuple(index.refs), generated_at,
                  tuple((bk.ref, bk.retrieved_at.isoformat(), bk.digest) for bk in index.books))


def _pool_month(plan, pool: PoolPlan, sc: Scenario, m: int, month: str, start: datetime, end: datetime,
                prices: _Prices, cache: dict, sizing: dict, problems: list[str]) -> list[GpuRow]:
    with localcontext() as ctx:
        ctx.prec = 60
        tpm = float(pool.tpm * _growth(pool.growth, m) * sc.traffic * sc.output_length)
    key = (pool.name, tpm)
    if key not in cache:
        req = SizingRequest(tpm=tpm, slas=(pool.sla,), gpus_per_replica=pool.gpus_per_replica, util=pool.util,
                            reserves=pool.reserves, interpolate=pool.interpolate, ttft_limit_ms=pool.ttft_ms,
                            isl=pool.isl, osl=pool.osl, repair=pool.repair)
        try:
            res = size(pool.curve, req)
            cache[key] = (res.status, res.rows[0], res)
        except SizingError as e:
            cache[key] = None
            for p in e.problems:
                msg = f"pool {pool.name}, {month}, scenario {sc.name} (TPM {tpm:,.0f}): {p}"
                problems.append(msg)
    if cache[key] is None:
        return []
    status, row, res = cache[key]
    if pool.name not in sizing:
        ctx_ = res.curve.context
        sizing[pool.name] = PoolSizing(pool.name, pool.curve_ref, res.curve.label, status, res.repairs,
                                       ctx_.hardware, ctx_.model)
    segs = prices.segments(start, end, meter="gpu_time", sku=pool.device, region=pool.region,
                           purchase_option=pool.purchase_option)
    out = []
    for (a, b, use), hours in zip(segs, _shares(_month_hours(plan, start, end), segs)):
        per_hour = price_per_gpu_hour(use.price, use.per)
        with localcontext() as ctx:
            ctx.prec = 60
            cost = quantize(Decimal(row.gpus) * hours * per_hour * use.fx * sc.prices)
        out.append(GpuRow(sc.name, pool.name, month, a, b, tpm, status, row.replicas_serving, row.replicas_reserve,
                          row.replicas, pool.gpus_per_replica, row.gpus, hours, per_hour, use.currency, use.fx,
                          sc.prices, cost, use.ref))
    return out


def _usage_rows(plan, sc: Scenario, month: str, start: datetime, end: datetime, prices: _Prices, *, category: str,
                item: str, bucket: str, quantity: Decimal, unit: str, meter: str, sku: str, region: str,
                tier_tokens: int | None, problems: list[str] | None = None) -> list[VariableRow]:
    if quantity == 0:
        return []
    segs = prices.segments(start, end, meter=meter, sku=sku, region=region, purchase_option="*")
    out = []
    for (a, b, use), qty in zip(segs, _shares(quantity, segs)):
        price = use.price
        if tier_tokens is not None:
            p = prices.used[use.ref]
            price = p.price_for_request(tier_tokens)
        try:
            f = units.factor(unit, use.per)
        except units.UnitError as e:
            if problems is not None:
                problems.append(f"{item}: quantity in {unit!r} cannot be priced per {use.per!r} ({e})")
            continue
        with localcontext() as ctx:
            ctx.prec = 60
            cost = quantize(qty * f * price * use.fx * sc.prices)
        out.append(VariableRow(sc.name, month, a, b, category, item, bucket, qty, unit, price, use.per,
                               use.currency, f, use.fx, sc.prices, cost, use.ref))
    return out


def _tokens_month(plan: Plan, sc: Scenario, m: int, month: str, start, end, prices: _Prices) -> list[VariableRow]:
    out = []
    for tf in plan.tokens:
        with localcontext() as ctx:
            ctx.prec = 60
            g = _growth(tf.growth, m)
            inp = quantize(tf.input_tokens * g * sc.traffic, QUANTITY_EXP)
            cached = quantize(inp * tf.cached_share * sc.cache_hit_rate, QUANTITY_EXP)
            outp = quantize(tf.output_tokens * g * sc.traffic * sc.output_length, QUANTITY_EXP)
        for (bucket, meter), qty in zip(TOKEN_BUCKETS, (inp - cached, cached, outp)):
            out += _usage_rows(plan, sc, month, start, end, prices, category="provider_tokens",
                               item=f"{tf.provider}/{tf.model}", bucket=bucket, quantity=qty, unit="token",
                               meter=meter, sku=tf.model, region=tf.region, tier_tokens=tf.input_tokens_per_request)
    return out


def _meters_month(plan: Plan, sc: Scenario, m: int, month: str, start, end, prices: _Prices,
                  problems: list[str]) -> list[VariableRow]:
    out = []
    for mf in plan.meters:
        with localcontext() as ctx:
            ctx.prec = 60
            qty = quantize(mf.quantity * _growth(mf.growth, m) * sc.traffic, QUANTITY_EXP)
        out += _usage_rows(plan, sc, month, start, end, prices, category=mf.category, item=f"{mf.meter}/{mf.sku}",
                           bucket=mf.meter, quantity=qty, unit=mf.unit, meter=mf.meter, sku=mf.sku,
                           region=mf.region, tier_tokens=None, problems=problems)
    return out


def _charges(plan: Plan, prices: _Prices) -> list[ChargeRow]:
    out = []
    for month in plan.months:
        start, _ = month_bounds(month)
        for c in plan.charges:
            if (c.first and month < c.first) or (c.last and month > c.last):
                continue
            currency = c.currency or plan.currency
            try:
                fx = prices.index.fx_rate(currency, plan.currency, start)
            except NoPriceError as e:
                if str(e) not in prices.problems:
                    prices.problems.append(f"charge {c.name}: {e}")
                continue
            out.append(ChargeRow(month, c.category, c.name, c.amount, currency, fx, quantize(c.amount * fx)))
    return out


# ---- forecast vs actual ------------------------------------------------------------------------

@dataclass(frozen=True)
class CompareRow:
    """One line of forecast vs actual: `dimension` (category | pool), `key`, `forecast` and `actual`
    in the plan currency, `error` = actual - forecast (positive: spent more than forecast), and
    `relative` = error / forecast (rounded to 1e-4; None with `reason` when the forecast is zero)."""

    dimension: str
    key: str
    forecast: Decimal
    actual: Decimal
    error: Decimal
    relative: Decimal | None
    reason: str = ""


@dataclass(frozen=True)
class Comparison:
    """A month's base forecast beside an allocation run: rows per category and per pool, and the totals."""

    month: str
    scenario: str
    run_id: str
    currency: str
    rows: tuple[CompareRow, ...]
    total: CompareRow
    status: str
    price_books: tuple[str, ...] = field(default=())


def _row(dimension: str, key: str, forecast: Decimal, actual: Decimal) -> CompareRow:
    err = actual - forecast
    if forecast == 0:
        return CompareRow(dimension, key, forecast, actual, err, None,
                          "no forecast for it" if actual else "no forecast and no actual")
    with localcontext() as ctx:
        ctx.prec = 60
        return CompareRow(dimension, key, forecast, actual, err, quantize(err / forecast, RATIO_EXP))


def compare(b: Budget, *, month: str, lines: Iterable, run_id: str, run_currency: str,
            price_books: Sequence[str] = (), scenario: str = "base") -> Comparison:
    """The `scenario` forecast of `month` beside the actual `lines` of an allocation run of that
    month (objects with `category`, `pool` and `amount`): per category (all of them), per pool (the
    plan's and any other pool with GPU cost), and in total. The run's currency must be the plan's."""
    if month not in b.plan.months:
        raise BudgetError(f"month {month} is not in the plan ({b.plan.months[0]} to {b.plan.months[-1]})")
    if run_currency != b.currency:
        raise BudgetError(f"the run is in {run_currency}, the plan in {b.currency}: compare like with like")
    if scenario not in {s.name for s in b.scenarios}:
        raise BudgetError(f"scenario {scenario} was not budgeted")
    forecast = b.by_category(scenario, month)
    actual = {c: ZERO for c in CATEGORIES}
    pool_actual: dict[str, Decimal] = defaultdict(Decimal)
    for ln in lines:
        actual[ln.category] = actual.get(ln.category, ZERO) + ln.amount
        if ln.category == "gpu" and ln.pool:
            pool_actual[ln.pool] += ln.amount
    pool_forecast: dict[str, Decimal] = {p.name: ZERO for p in b.plan.pools}
    for g in b.gpu:
        if g.scenario == scenario and g.month == month:
            pool_forecast[g.pool] += g.cost
    rows = [_row("category", c, forecast.get(c, ZERO), actual.get(c, ZERO)) for c in actual]
    for pool in list(pool_forecast) + sorted(set(pool_actual) - set(pool_forecast)):
        rows.append(_row("pool", pool, pool_forecast.get(pool, ZERO), pool_actual.get(pool, ZERO)))
    total = _row("total", "total", sum(forecast.values(), ZERO), sum(actual.values(), ZERO))
    return Comparison(month, scenario, run_id, b.currency, tuple(rows), total, b.status, tuple(price_books))
