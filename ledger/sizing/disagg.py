"""Prefill curves for disaggregated serving: input tok/s per prefill replica against TTFT at that load,
read from CSV or from vLLM / SGLang serving runs; their checks, the operating point at a TTFT limit,
and the xPyD ratio. The decode side is an ordinary curve, sized SLA-first (docs/sizing.md)."""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..hints import Hinted
from .curve import REPAIR, REPAIRED, CurveContext, SizingError, fmt_num
from .loadtest import _json_runs, _workload_key
from .loaders import detect_format, select_curve

PREFILL_FORMATS = ("auto", "csv", "vllm", "sglang")
_CSV_COLS = {"input_tok_s", "ttft_ms", "load"}
_CONTEXT_COLS = ("source", "model", "precision", "hardware", "gpus", "gpus_per_replica", "tp", "engine", "isl",
                 "osl", "date", "workload")


@dataclass(frozen=True)
class PrefillPoint:
    """One measured load of one prefill replica: `input_tok_s` (input tokens prefilled per second
    [token/s]), `ttft_ms` (time to first token at that load [ms], the statistic named in the curve's
    `metrics`), `load` (the offered load of the run, as text: request rate or concurrency) and
    `label` (where it came from, ``file:line``)."""

    input_tok_s: float
    ttft_ms: float
    load: str = ""
    label: str = ""

    def describe(self) -> str:
        where = f" ({self.label})" if self.label else ""
        return f"{fmt_num(self.input_tok_s)} input tok/s at TTFT {fmt_num(self.ttft_ms)} ms{where}"


@dataclass(frozen=True)
class PrefillCurve:
    """A prefill curve: `points` sorted by input tok/s, the `context` they were measured in (ISL is
    the one that matters), and the points a repair `dropped`."""

    points: tuple[PrefillPoint, ...]
    context: CurveContext
    dropped: tuple[PrefillPoint, ...] = field(default=())

    @property
    def label(self) -> str:
        c = self.context
        return " | ".join(x for x in (c.source, c.model, c.workload) if x)


@dataclass(frozen=True)
class PrefillOperatingPoint:
    """Where a prefill replica runs under a TTFT limit: `input_tok_s` per replica [token/s], the
    `ttft_ms` there [ms], `measured` (a measured point; else interpolated, DRAFT) and `limited_by`
    (``ttft``: the next load breaks the limit; ``curve_end``: the highest load meets it)."""

    input_tok_s: float
    ttft_ms: float
    measured: bool
    limited_by: str


def make_prefill_curve(points, context: CurveContext) -> PrefillCurve:
    """A prefill curve with its points sorted by input tok/s."""
    return PrefillCurve(tuple(sorted(points, key=lambda p: p.input_tok_s)), context)


# ------------------------------------------------------------------------------------- loading

def _float(raw: object, what: str, where: str, errors: list[str]) -> float | None:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        errors.append(f"{where}: {what} is missing")
        return None
    try:
        v = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        errors.append(f"{where}: {what} {raw!r} is not a number")
        return None
    if not math.isfinite(v):
        errors.append(f"{where}: {what} {raw!r} is not a finite number")
        return None
    return v


def parse_prefill_csv(text: str, *, source: str) -> tuple[PrefillCurve, ...]:
    """Prefill curves from CSV: `input_tok_s` and `ttft_ms` per row, optional `load` (the run's
    offered load, text) and the context columns of a decode CSV (`source, model, precision, hardware,
    gpus, gpus_per_replica, tp, engine, isl, osl, date, workload, note`), one curve per context.
    An unknown column is an error, naming `file:1`; a bad value names `file:line`."""
    reader = csv.DictReader(io.StringIO(text))
    cols = [c.strip() for c in (reader.fieldnames or [])]
    known = _CSV_COLS | set(_CONTEXT_COLS) | {"note"}
    errors = [f"{source}:1: unknown column {c!r} (known: {', '.join(sorted(known))})" for c in cols if c not in known]
    errors += [f"{source}:1: no {c!r} column" for c in ("input_tok_s", "ttft_ms") if c not in cols]
    if errors:
        raise SizingError(errors)
    groups: dict[tuple, list[PrefillPoint]] = {}
    for lineno, raw in enumerate(reader, 2):
        row = {k.strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        where = f"{source}:{lineno}"
        if None in raw:
            errors.append(f"{where}: more fields than columns")
            continue
        x, t = _float(row.get("input_tok_s"), "input_tok_s", where, errors), _float(row.get("ttft_ms"), "ttft_ms",
                                                                                    where, errors)
        for col in ("gpus", "gpus_per_replica", "tp", "isl", "osl"):
            if row.get(col):
                v = _float(row[col], col, where, errors)
                if v is not None and (v <= 0 or (col not in ("isl", "osl") and not v.is_integer())):
                    errors.append(f"{where}: {col} {row[col]!r} must be a positive number")
        if x is None or t is None:
            continue
        key = tuple(row.get(k, "") for k in _CONTEXT_COLS)
        groups.setdefault(key, []).append(PrefillPoint(input_tok_s=x, ttft_ms=t, load=row.get("load", ""),
                                                       label=where))
    if errors:
        raise SizingError(errors)
    if not groups:
        raise SizingError([f"{source}: no data rows"])
    out = []
    for key, points in groups.items():
        c = dict(zip(_CONTEXT_COLS, key))
        gpus = c["gpus_per_replica"] or c["gpus"]
        out.append(make_prefill_curve(points, CurveContext(
            source=c["source"] or source, model=c["model"] or None, hardware=c["hardware"] or None,
            gpus_per_replica=int(float(gpus)) if gpus else None, isl=float(c["isl"]) if c["isl"] else None,
            osl=float(c["osl"]) if c["osl"] else None, engine=c["engine"] or None, precision=c["precision"] or None,
            workload=c["workload"] or None, date=c["date"] or None, format="csv",
            metrics="prefill: input tok/s = input_tok_s column; TTFT = ttft_ms column")))
    return tuple(out)


def parse_prefill_runs(text: str, *, source: str, fmt: str) -> tuple[PrefillCurve, ...]:
    """Prefill curves from vLLM (`vllm bench serve --save-result`, `benchmark_serving.py`) or SGLang
    (`bench_serving --output-file`) runs against prefill replicas: one point per run, input tok/s =
    `input_throughput` (else total_input_tokens / duration), TTFT = `mean_ttft_ms` (else
    `median_ttft_ms`); one curve per workload (backend, model, dataset and nominal lengths)."""
    runs = _json_runs(text, source)
    if not runs:
        raise SizingError([f"{source}: no runs"])
    errors: list[str] = []
    groups: dict[tuple, list[tuple[dict, PrefillPoint, str]]] = {}
    for lineno, run in runs:
        where = f"{source}:{lineno}"
        if not run.get("completed"):
            errors.append(f"{where}: the run completed no requests")
            continue
        if isinstance(run.get("input_throughput"), (int, float)) and not isinstance(run["input_throughput"], bool):
            x, how = float(run["input_throughput"]), "input_throughput"
        elif run.get("total_input_tokens") and run.get("duration"):
            x, how = run["total_input_tokens"] / run["duration"], "total_input_tokens / duration"
        else:
            errors.append(f"{where}: no input_throughput and no total_input_tokens and duration")
            continue
        key = next((k for k in ("mean_ttft_ms", "median_ttft_ms") if isinstance(run.get(k), (int, float))), None)
        if key is None:
            errors.append(f"{where}: no mean_ttft_ms or median_ttft_ms")
            continue
        rate, max_c = run.get("request_rate"), run.get("max_concurrency")
        load = f"max_concurrency={max_c}" if max_c else f"request_rate={rate}"
        groups.setdefault(_workload_key(run), []).append(
            (run, PrefillPoint(input_tok_s=float(x), ttft_ms=float(run[key]), load=load, label=f"{where} ({load})"),
             f"prefill: input tok/s = {how}; TTFT = {key}"))
    if errors:
        raise SizingError(errors)
    tool = "vllm bench serve / benchmark_serving.py" if fmt == "vllm" else "sglang.bench_serving"
    out = []
    for key, items in groups.items():
        k = dict(key)
        done = sum(r["completed"] for r, _, _ in items)
        tin = [r.get("total_input_tokens") for r, _, _ in items]
        tout = [r.get("total_output_tokens") for r, _, _ in items]
        workload = ", ".join(f"{n}={v}" for n, v in key if n not in ("backend", "model_id")) or None
        out.append(make_prefill_curve([p for _, p, _ in items], CurveContext(
            source=source, model=k.get("model_id"), engine=k.get("backend"), workload=workload, tool=tool,
            isl=sum(tin) / done if all(isinstance(v, (int, float)) for v in tin) else None,
            osl=sum(tout) / done if all(isinstance(v, (int, float)) for v in tout) else None,
            metrics="; ".join(dict.fromkeys(m for _, _, m in items)), format=fmt)))
    return tuple(out)


def parse_prefill_curves(text: str, *, source: str, fmt: str = "auto") -> tuple[PrefillCurve, ...]:
    """Every prefill curve in `text`, in the format named (csv, vllm, sglang) or detected."""
    if fmt not in PREFILL_FORMATS:
        raise SizingError([f"unknown prefill curve format {fmt!r} (one of {', '.join(PREFILL_FORMATS)})"])
    if fmt == "auto":
        head = text.strip().splitlines()[0] if text.strip() else ""
        fmt = "csv" if source.lower().endswith(".csv") or "input_tok_s" in head else detect_format(text, source)
    if fmt == "csv":
        return parse_prefill_csv(text, source=source)
    if fmt in ("vllm", "sglang"):
        return parse_prefill_runs(text, source=source, fmt=fmt)
    raise SizingError([f"{source}: a prefill curve is read from CSV (input_tok_s, ttft_ms) or vLLM / SGLang "
                       f"serving runs, not {fmt}"])


def load_prefill_curve(path: str | Path, fmt: str = "auto", select: str | None = None) -> PrefillCurve:
    """The one prefill curve of a file (`select` picks among several by source, model or workload)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SizingError([f"{p.name}: cannot read ({e})"]) from None
    return select_curve(parse_prefill_curves(text, source=p.name, fmt=fmt), select, where=p.name)


# ---------------------------------------------------------------------------------- validation

def prefill_problems(curve: PrefillCurve) -> list[tuple[str, str]]:
    """(kind, message) for everything wrong with a prefill curve: no points, bad numbers, a load given
    twice, and TTFT falling as the load rises (kind ``falling``: repairable)."""
    src = curve.context.source
    if not curve.points:
        return [("empty", f"{src}: the prefill curve has no points")]
    out = []
    for p in curve.points:
        if not (math.isfinite(p.input_tok_s) and p.input_tok_s > 0):
            out.append(("value", f"{src}: prefill point {p.describe()} must have input tok/s > 0"))
        if not (math.isfinite(p.ttft_ms) and p.ttft_ms >= 0):
            out.append(("value", f"{src}: prefill point {p.describe()} must have TTFT >= 0 ms"))
    if out:
        return out
    pts = curve.points
    for a, b in zip(pts, pts[1:]):
        if a.input_tok_s == b.input_tok_s:
            out.append(("duplicate", f"{src}: input tok/s {fmt_num(a.input_tok_s)} appears twice: {a.describe()} "
                                     f"and {b.describe()}"))
    if out:
        return out
    for i, a in enumerate(pts):
        faster = [b for b in pts[i + 1:] if b.ttft_ms < a.ttft_ms]
        if faster:
            b = min(faster, key=lambda q: q.ttft_ms)
            out.append(("falling", Hinted(f"{src}: TTFT falls as the load rises: {a.describe()} is slower than "
                                          f"{b.describe()} (", REPAIR, " to keep the points no higher load beats)")))
    return out


def validate_prefill(curve: PrefillCurve, *, repair: bool = False) -> tuple[PrefillCurve, tuple[str, ...]]:
    """The curve ready for sizing and the notes of any repair; SizingError naming every bad point.
    A repair drops each point that a higher load serves with a lower TTFT (that point meets every
    TTFT limit the dropped one meets, at more input tok/s), so it never changes a measured answer."""
    problems = prefill_problems(curve)
    if not problems:
        return curve, ()
    if not repair or any(k != "falling" for k, _ in problems):
        raise SizingError([m for k, m in problems if not repair or k != "falling"])
    keep, dropped, notes = [], [], []
    for i, a in enumerate(curve.points):
        faster = [b for b in curve.points[i + 1:] if b.ttft_ms < a.ttft_ms]
        if faster:
            dropped.append(a)
            notes.append(Hinted(f"{curve.context.source}: ", REPAIRED, f" dropped {a.describe()}: "
                                f"{min(faster, key=lambda q: q.ttft_ms).describe()} serves more at a lower TTFT"))
        else:
            keep.append(a)
    return replace(curve, points=tuple(keep), dropped=curve.dropped + tuple(dropped)), tuple(notes)


def prefill_point(curve: PrefillCurve, ttft_limit_ms: float, *, interpolate: bool = False) -> PrefillOperatingPoint:
    """The input tok/s a prefill replica serves within the TTFT limit: the highest measured load whose
    TTFT <= limit (VERDICT); with `interpolate`, the load where TTFT reaches the limit, linear in
    input tok/s between the last point within it and the first beyond it (DRAFT). The curve must be
    valid (TTFT non-decreasing in load)."""
    pts = curve.points
    ok = [i for i, p in enumerate(pts) if p.ttft_ms <= ttft_limit_ms]
    if not ok:
        raise SizingError(f"{curve.context.source}: no measured load meets TTFT <= {fmt_num(ttft_limit_ms)} ms: "
                          f"the lightest, {pts[0].describe()}, is already slower")
    i = ok[-1]
    a = pts[i]
    if i == len(pts) - 1:
        return PrefillOperatingPoint(input_tok_s=a.input_tok_s, ttft_ms=a.ttft_ms, measured=True,
                                     limited_by="curve_end")
    b = pts[i + 1]
    if not interpolate or a.ttft_ms == ttft_limit_ms:
        return PrefillOperatingPoint(input_tok_s=a.input_tok_s, ttft_ms=a.ttft_ms, measured=True, limited_by="ttft")
    u = (ttft_limit_ms - a.ttft_ms) / (b.ttft_ms - a.ttft_ms)
    return PrefillOperatingPoint(input_tok_s=a.input_tok_s + (b.input_tok_s - a.input_tok_s) * u,
                                 ttft_ms=ttft_limit_ms, measured=False, limited_by="ttft")


def xpyd(prefill: int, decode: int) -> str:
    """The disaggregation ratio as engines write it: ``2P4D``, and its reduced form ``(1P2D)`` when
    the counts share a factor."""
    g = math.gcd(prefill, decode) or 1
    ratio = f"{prefill}P{decode}D"
    return ratio if g == 1 else f"{ratio} ({prefill // g}P{decode // g}D)"
