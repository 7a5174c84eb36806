"""Parsing and validating a plan's TOML (pools and their curves, tokens, meters, charges, scenarios) into a Plan."""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

from .. import tomlfile, units
from ..allocate import CATEGORIES, CHARGE_CATEGORY, meter_category
from ..hints import Hinted
from ..money import ZERO
from ..sizing import Curve, CurveContext, CurvePoint, Reserves, SizingError, load_curve, make_curve, parse_anchors
from ..sizing.disagg import PrefillCurve, PrefillPoint, load_prefill_curve, make_prefill_curve
from ..sizing.tiers import Tier, tier_problems
from .plan import (SCENARIO_KNOBS, BudgetError, FixedCharge, MeterForecast, Plan, PoolPlan, Scenario, TokenForecast,
                   _months_from, month_bounds)
from .reader import _NAME, _Reader

_PLAN_KEYS = {"name", "currency", "start", "months", "hours_per_month", "pricebooks", "description"}
_POOL_KEYS = {"name", "device", "region", "purchase_option", "gpus_per_replica", "curve", "curve_format",
              "curve_select", "anchors", "sla", "tpm", "util", "failure_reserve", "canary", "warm_reserve",
              "growth", "interpolate", "repair", "ttft_ms", "isl", "osl", "description", "tier", "prefill_curve",
              "prefill_curve_format", "prefill_curve_select", "prefill_gpus_per_replica"}
_TIER_KEYS = {"name", "share", "sla", "ttft_ms", "description"}
_PREFILL_POINT_KEYS = {"input_tok_s", "ttft_ms", "load"}
_INLINE_CURVE_KEYS = {"source", "model", "hardware", "engine", "precision", "gpus_per_replica", "isl", "osl",
                      "date", "notes", "points"}
_POINT_KEYS = {"concurrency", "tok_s_user", "output_tok_s", "ttft_ms"}
_TOKENS_KEYS = {"provider", "model", "region", "input_tokens", "cached_share", "output_tokens",
                "input_tokens_per_request", "growth", "description"}
_METER_KEYS = {"meter", "sku", "region", "quantity", "unit", "growth", "description"}
_CHARGE_KEYS = {"name", "category", "amount", "currency", "from", "to", "description"}


def load_plan(path: str | Path) -> Plan:
    """Read and validate a plan file; BudgetError with one line per problem."""
    p = Path(path)
    try:
        text = tomlfile.read_text(p)
    except OSError as e:
        raise BudgetError(f"{p}: cannot read the plan ({e})") from None
    except tomlfile.TomlError as e:  # not UTF-8: the line and column of the first bad byte
        raise BudgetError(str(e)) from None
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
        doc = tomlfile.loads(text, name)
    except tomlfile.TomlError as e:  # a syntax error, or values nested too deep: its line and column
        return None, [str(e)]
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
    if months:
        try:
            month_bounds(months[-1])
        except ValueError:
            r.err(f"start {start} and months {n_months} run to {months[-1]}, past 9999-11, the last month a "
                  "plan can have")
            months = ()

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
    tiers = _tiers(t, r)
    if tiers and "sla" in t:
        r.err("give sla or [[pool.tier]] tables, not both: each tier carries its own SLA")
    sla = r.number(t, "sla", required=True) if "sla" in t or not tiers else None
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
    prefill, prefill_ref, prefill_gpus = _prefill(t, r, base)
    if prefill is not None and ttft is None and (not tiers or any(x.ttft_ms is None for x in tiers)):
        r.err("a prefill curve is sized at a TTFT limit: give ttft_ms (the pool's, or every tier's)")
    if r.bad or curve is None:
        return None
    return PoolPlan(name=pool_name, device=device, region=region, purchase_option=option, gpus_per_replica=gpr,
                    curve=curve, curve_ref=ref, sla=sla, tpm=tpm, util=util, reserves=reserves, growth=growth,
                    interpolate=interpolate, repair=repair, ttft_ms=ttft, isl=isl, osl=osl, tiers=tiers,
                    prefill_curve=prefill, prefill_curve_ref=prefill_ref, prefill_gpus_per_replica=prefill_gpus)


def _tiers(t: dict, r: _Reader) -> tuple[Tier, ...]:
    """The pool's [[pool.tier]] tables (name, share as a decimal, sla, optional ttft_ms), checked
    field by field, then together (distinct names, shares adding up to exactly 1)."""
    raw = t.get("tier")
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or not all(isinstance(x, dict) for x in raw):
        r.err("tier must be [[pool.tier]] tables with name, share, sla and optional ttft_ms")
        return ()
    out, bad = [], False
    for j, x in enumerate(raw, 1):
        tr = _Reader(r.problems, f"{r.where}: tier[{j}] {x.get('name', '?')}")
        tr.unknown(x, _TIER_KEYS)
        name = tr.text(x, "name", name=True)
        share = tr.decimal(x, "share", lo=ZERO, lo_open=True, hi=Decimal(1))
        sla = tr.number(x, "sla", required=True)
        ttft = tr.number(x, "ttft_ms")
        bad = bad or tr.bad
        if not tr.bad:
            out.append(Tier(name=name, share=share, sla=sla, ttft_ms=ttft))
    r.bad = r.bad or bad
    if not bad:
        for p in tier_problems(out):
            r.err(p)
    return tuple(out)


def _prefill(t: dict, r: _Reader, base: Path) -> tuple[PrefillCurve | None, str, int | None]:
    """The pool's prefill curve (a file the sizing engine reads, or an inline table of points), where
    it came from, and the GPUs per prefill replica (None: the pool's)."""
    if "prefill_curve" not in t:
        extra = [k for k in ("prefill_curve_format", "prefill_curve_select", "prefill_gpus_per_replica") if k in t]
        if extra:
            r.err(f"{', '.join(extra)} need prefill_curve")
        return None, "", None
    gpus = r.count(t, "prefill_gpus_per_replica", minimum=1) if "prefill_gpus_per_replica" in t else None
    c = t["prefill_curve"]
    try:
        if isinstance(c, dict):
            return _inline_prefill(c, r), "inline", gpus
        path = base / str(c)
        if not path.is_file():
            r.err(f"prefill curve file {c!r} not found (paths are relative to the plan's folder)")
            return None, "", gpus
        return (load_prefill_curve(path, str(t.get("prefill_curve_format", "auto")), t.get("prefill_curve_select")),
                str(c), gpus)
    except SizingError as e:
        for p in e.problems:
            r.err(Hinted("prefill curve: ", p))
        return None, "", gpus


def _inline_prefill(c: dict, r: _Reader) -> PrefillCurve | None:
    bad_keys = sorted(set(c) - _INLINE_CURVE_KEYS)
    if bad_keys:
        r.err(f"prefill curve: unknown field(s) {', '.join(bad_keys)} (known: {', '.join(sorted(_INLINE_CURVE_KEYS))})")
    pts = c.get("points")
    if not isinstance(pts, list) or not pts:
        r.err("prefill curve: an inline curve needs points = [{ input_tok_s = ..., ttft_ms = ... }, ...]")
        return None
    points = []
    for j, p in enumerate(pts, 1):
        pr = _Reader(r.problems, f"{r.where}: prefill curve point {j}")
        if not isinstance(p, dict):
            pr.err("is not a table")
            r.bad = True
            continue
        pr.unknown(p, _PREFILL_POINT_KEYS)
        x, ttft = pr.number(p, "input_tok_s", required=True), pr.number(p, "ttft_ms", required=True, positive=False)
        if ttft is not None and ttft < 0:
            pr.err(f"ttft_ms {ttft} must be >= 0")
        r.bad = r.bad or pr.bad
        if not pr.bad:
            points.append(PrefillPoint(input_tok_s=x, ttft_ms=ttft, load=str(p.get("load", "")), label=f"point {j}"))
    if r.bad:
        return None
    return make_prefill_curve(points, _inline_context(c, "prefill: inline points (input tok/s, TTFT ms)"))


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
            r.err(Hinted("curve: ", p))
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
            points.append(CurvePoint(concurrency=conc, tok_s_user=tsu, output_tok_s=out, ttft_ms=ttft,
                                     label=f"point {j}"))
    return make_curve(points, _inline_context(c)) if not r.bad else None


def _inline_context(c: dict, metrics: str | None = None) -> CurveContext:
    """The context of an inline curve table (source, model, hardware, GPUs, ISL/OSL, engine, ...)."""
    gpr = c.get("gpus_per_replica")
    return CurveContext(source=str(c.get("source", "inline curve")), model=c.get("model"), hardware=c.get("hardware"),
                        gpus_per_replica=gpr if isinstance(gpr, int) else None,
                        isl=float(c["isl"]) if isinstance(c.get("isl"), (int, float)) else None,
                        osl=float(c["osl"]) if isinstance(c.get("osl"), (int, float)) else None,
                        engine=c.get("engine"), precision=c.get("precision"),
                        date=str(c["date"]) if "date" in c else None, notes=c.get("notes"), format="plan",
                        metrics=metrics)


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
    return TokenForecast(provider=provider, model=model, region=region, input_tokens=inp, cached_share=share,
                         output_tokens=outp, growth=growth, input_tokens_per_request=per_req)


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
    return MeterForecast(meter=meter, sku=sku, region=region, quantity=qty, unit=unit, growth=growth,
                         category=meter_category(meter))


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
    return FixedCharge(name=cname, category=CHARGE_CATEGORY.get(category, category), amount=amount, currency=currency,
                       first=first, last=last, description=str(t.get("description", "")))


def _scenarios(raw: object, name: str, tokens: Sequence[TokenForecast], problems: list[str]) -> tuple[Scenario, ...]:
    if not isinstance(raw, dict):
        problems.append(f"{name}: scenario must be tables such as [scenario.worst]")
        return (Scenario(name="base"),)
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
        out.append(Scenario(name=sname, **knobs))
    if not any(s.name == "base" for s in out):
        out.insert(0, Scenario(name="base"))
    order = {"best": 0, "base": 1, "worst": 2}
    return tuple(sorted(out, key=lambda s: (order.get(s.name, 3), s.name)))
