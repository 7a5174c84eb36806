"""Curve loading: anchors strings and CSV here, load-tester files via `loadtest`; format detection and selection."""
from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from ..hints import Hint, Hinted
from .curve import Curve, CurveContext, CurvePoint, SizingError, make_curve
from .loadtest import TPOT_KEYS, parse_aiperf, parse_guidellm, parse_serving_runs

FORMATS = ("auto", "anchors", "csv", "vllm", "sglang", "guidellm", "aiperf")

_ANCHORS = re.compile(r"^\s*[^,:\s]+\s*:\s*[^,:\s]+\s*(,\s*[^,:\s]+\s*:\s*[^,:\s]+\s*)*,?\s*$")


# ---------------------------------------------------------------------------------------- anchors

def parse_anchors(text: str, *, source: str = "anchors") -> Curve:
    """``"1:215.5,10:122.2,256:41.8"``: concurrency:tok/s/user pairs. Anchors carry no measured
    aggregate throughput and no TTFT, so the replica throughput is derived (c x tok/s/user)."""
    points, errors = [], []
    entries = [e for e in text.split(",") if e.strip()]
    for i, entry in enumerate(entries, 1):
        parts = entry.split(":")
        if len(parts) != 2:
            errors.append(f"anchors: entry {i} {entry.strip()!r} is not concurrency:tok_s_user")
            continue
        try:
            c, t = float(parts[0]), float(parts[1])
        except ValueError:
            errors.append(f"anchors: entry {i} {entry.strip()!r} is not two numbers")
            continue
        points.append(CurvePoint(c, t, label=f"anchor {i}"))
    if errors:
        raise SizingError(errors)
    ctx = CurveContext(source=source, format="anchors",
                       metrics="anchors: concurrency:tok/s/user pairs; replica throughput = c x tok/s/user")
    return make_curve(points, ctx)


# -------------------------------------------------------------------------------------------- CSV

#: CSV columns: the point, and (optional) the context that groups rows into curves.
_POINT_COLS = {"concurrency", "tok_s_user", "itl_or_tpot_ms", "tpot_ms", "output_tok_s", "out_tok_s_total",
               "ttft_ms", "out_tok_s_per_gpu"}
_CONTEXT_COLS = ("source", "model", "precision", "hardware", "gpus", "gpus_per_replica", "tp", "engine",
                 "isl", "osl", "date", "workload")
_NOTE_COLS = {"note"}


def _num(raw: str | None, what: str, where: str, errors: list[str], required: bool = False) -> float | None:
    if raw is None or raw.strip() == "":
        if required:
            errors.append(f"{where}: {what} is missing")
        return None
    try:
        v = float(raw)
    except ValueError:
        errors.append(f"{where}: {what} {raw!r} is not a number")
        return None
    if not math.isfinite(v):
        errors.append(f"{where}: {what} {raw!r} is not a finite number")
        return None
    return v


def parse_csv(text: str, *, source: str) -> tuple[Curve, ...]:
    """Curves from CSV: required `concurrency` and `tok_s_user` (or `itl_or_tpot_ms` / `tpot_ms`, from
    which tok/s/user = 1000 / ms); optional `output_tok_s` (alias `out_tok_s_total`), `ttft_ms`.
    Optional context columns (`source, model, precision, hardware, gpus, tp, engine, isl, osl, date,
    workload, note`) group the rows into one curve per distinct context, in order of appearance.
    An unknown column is an error: a typo must never become a silent missing value."""
    reader = csv.DictReader(io.StringIO(text))
    cols = [c.strip() for c in (reader.fieldnames or [])]
    known = _POINT_COLS | set(_CONTEXT_COLS) | _NOTE_COLS
    errors = [f"{source}:1: unknown column {c!r} (known: {', '.join(sorted(known))})"
              for c in cols if c not in known]
    if "concurrency" not in cols:
        errors.append(f"{source}:1: no 'concurrency' column")
    if not {"tok_s_user", "itl_or_tpot_ms", "tpot_ms"} & set(cols):
        errors.append(f"{source}:1: no 'tok_s_user' column (or 'itl_or_tpot_ms' / 'tpot_ms')")
    if errors:
        raise SizingError(errors)
    groups: dict[tuple, list[CurvePoint]] = {}
    notes: dict[tuple, list[str]] = {}
    for lineno, raw in enumerate(reader, 2):
        row = {k.strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        if None in raw:
            errors.append(f"{source}:{lineno}: more fields than columns")
            continue
        where = f"{source}:{lineno}"
        c = _num(row.get("concurrency"), "concurrency", where, errors, required=True)
        t = _num(row.get("tok_s_user"), "tok_s_user", where, errors)
        ms = _num(row.get("itl_or_tpot_ms") or row.get("tpot_ms"), "TPOT ms", where, errors)
        if t is None and ms is None:
            errors.append(f"{where}: neither tok_s_user nor a TPOT in ms")
            continue
        if ms is not None and ms <= 0:
            errors.append(f"{where}: TPOT {ms} ms must be > 0")
            continue
        if t is None:
            t = 1000.0 / ms
        elif ms is not None and abs(t - 1000.0 / ms) > 0.01 * t:
            errors.append(f"{where}: tok_s_user {t} disagrees with 1000 / {ms} ms = {1000.0 / ms:.2f} (more than 1%)")
        agg = _num(row.get("output_tok_s") or row.get("out_tok_s_total"), "output_tok_s", where, errors)
        ttft = _num(row.get("ttft_ms"), "ttft_ms", where, errors)
        for col in ("gpus", "gpus_per_replica", "tp", "isl", "osl"):
            v = _num(row.get(col), col, where, errors)
            if v is not None and (v <= 0 or (col != "isl" and col != "osl" and not v.is_integer())):
                errors.append(f"{where}: {col} {row[col]!r} must be a positive{' whole' if col not in ('isl', 'osl') else ''} number")
        if c is None:
            continue
        key = tuple(row.get(k, "") for k in _CONTEXT_COLS)
        groups.setdefault(key, []).append(CurvePoint(concurrency=c, tok_s_user=t, output_tok_s=agg, ttft_ms=ttft,
                                                     label=where))
        if row.get("note"):
            notes.setdefault(key, [])
            if row["note"] not in notes[key]:
                notes[key].append(row["note"])
    if errors:
        raise SizingError(errors)
    if not groups:
        raise SizingError([f"{source}: no data rows"])
    curves = []
    for key, points in groups.items():
        ctx = dict(zip(_CONTEXT_COLS, key))
        gpus = ctx["gpus_per_replica"] or ctx["gpus"]
        curves.append(make_curve(points, CurveContext(
            source=ctx["source"] or source, model=ctx["model"] or None, hardware=ctx["hardware"] or None,
            gpus_per_replica=int(float(gpus)) if gpus else None,
            isl=float(ctx["isl"]) if ctx["isl"] else None, osl=float(ctx["osl"]) if ctx["osl"] else None,
            engine=ctx["engine"] or None, precision=ctx["precision"] or None, workload=ctx["workload"] or None,
            date=ctx["date"] or None, format="csv", notes="; ".join(notes.get(key, [])) or None,
            metrics=("tok/s/user = tok_s_user column" if "tok_s_user" in cols else "tok/s/user = 1000 / TPOT ms")
            + (f"; tensor parallel {ctx['tp']}" if ctx["tp"] else ""))))
    return tuple(curves)


# --------------------------------------------------------------------------------- dispatch

def detect_format(text: str, name: str = "") -> str:
    """Which loader reads `text`: anchors, csv, vllm, sglang, guidellm or aiperf. SizingError if none."""
    if name.lower().endswith(".csv"):
        return "csv"
    stripped = text.strip()
    obj = None
    try:
        obj = json.loads(stripped)
    except json.JSONDecodeError:
        first = next((ln for ln in stripped.splitlines() if ln.strip()), "")
        try:
            obj = json.loads(first)
        except json.JSONDecodeError:
            obj = None
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        obj = obj[0]
    if isinstance(obj, dict):
        if "benchmarks" in obj and "metadata" in obj:
            return "guidellm"
        if "aiperf_version" in obj or "output_token_throughput_per_user" in obj:
            return "aiperf"
        if any(k in obj for k in TPOT_KEYS) or "output_throughput" in obj:
            backend = str(obj.get("backend", ""))
            sglang = backend.startswith("sglang") or "mean_e2e_latency_ms" in obj or "median_e2e_latency_ms" in obj
            return "sglang" if sglang else "vllm"
    elif obj is None:
        head = stripped.splitlines()[0] if stripped else ""
        if "concurrency" in head and "," in head:
            return "csv"
        if _ANCHORS.match(stripped):
            return "anchors"
    raise SizingError([Hinted(f"{name or 'curve'}: cannot tell the curve format (anchors, csv, vllm, sglang, guidellm, "
                              "aiperf); ", Hint("curve_format", "name its format"))])


def parse_curves(text: str, *, source: str, fmt: str = "auto") -> tuple[Curve, ...]:
    """Every curve in `text` (read from `source`), in the format named or detected."""
    if fmt not in FORMATS:
        raise SizingError([f"unknown curve format {fmt!r} (one of {', '.join(FORMATS)})"])
    if fmt == "auto":
        fmt = detect_format(text, source)
    if fmt == "anchors":
        return (parse_anchors(text, source=source),)
    if fmt == "csv":
        return parse_csv(text, source=source)
    if fmt in ("vllm", "sglang"):
        return parse_serving_runs(text, source=source, fmt=fmt)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SizingError([f"{source}: not JSON ({e.msg} at line {e.lineno})"]) from None
    if not isinstance(data, dict):
        raise SizingError([f"{source}: a {fmt} result must be a JSON object"])
    return parse_guidellm(data, source=source) if fmt == "guidellm" else parse_aiperf(data, source=source)


def load_curves(path_or_anchors: str | Path, fmt: str = "auto") -> tuple[Curve, ...]:
    """Every curve in a file (or the one curve of an anchors string). The curve's `source` is the
    file name (or the CSV's `source` column), never the folder it was read from."""
    if isinstance(path_or_anchors, str) and fmt == "anchors":
        return (parse_anchors(path_or_anchors),)
    if isinstance(path_or_anchors, str) and not Path(path_or_anchors).exists():
        if fmt == "auto" and _ANCHORS.match(path_or_anchors):
            return (parse_anchors(path_or_anchors),)
        raise SizingError([f"{path_or_anchors}: no such file (and not an anchors string like 1:215.5,10:122.2)"])
    path = Path(path_or_anchors)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SizingError([f"{path.name}: cannot read ({e})"]) from None
    return parse_curves(text, source=path.name, fmt=fmt)


def select_curve(curves: Iterable[Curve], select: str | None, *, where: str = "") -> Curve:
    """The one curve whose source, model or workload contains `select` (case-insensitive); with no
    `select`, the only curve. SizingError listing the curves when none or several match."""
    curves = tuple(curves)
    chosen = curves if not select else tuple(c for c in curves if select.lower() in c.label.lower())
    if len(chosen) == 1:
        return chosen[0]
    from ledger.formats import plural

    listing = "; ".join(f"[{c.label}] ({plural(len(c.points), 'point')})" for c in curves)
    if not chosen:
        raise SizingError([f"{where or 'curves'}: no curve matches {select!r}; the curves are: {listing}"])
    raise SizingError([Hinted(f"{where or 'curves'}: {len(chosen)} curves {'match ' + repr(select) if select else 'found'}; ",
                              Hint("curve_select", "pick one by a piece of its source, model or workload"),
                              f": {listing}")])


def load_curve(path_or_anchors: str | Path | Sequence[str | Path], fmt: str = "auto",
               select: str | None = None) -> Curve:
    """One curve: from an anchors string, a file (picking with `select` when it holds several), or a
    list of files merged into one curve (for example one AIPerf or vLLM result per concurrency)."""
    if isinstance(path_or_anchors, (list, tuple)):
        picked = [select_curve(load_curves(p, fmt), select, where=str(Path(p).name)) for p in path_or_anchors]
        return merge_curves(picked)
    where = "anchors" if fmt == "anchors" or not Path(str(path_or_anchors)).exists() else Path(path_or_anchors).name
    return select_curve(load_curves(path_or_anchors, fmt), select, where=where)


def merge_curves(curves: Sequence[Curve]) -> Curve:
    """Several curves of the same model, engine, replica size and format (one file per load level)
    as one curve. Contexts that disagree on what was measured fail loudly."""
    if not curves:
        raise SizingError(["no curves to merge"])
    if len(curves) == 1:
        return curves[0]
    errors = []
    for attr in ("model", "engine", "hardware", "gpus_per_replica", "precision", "format"):
        values = {getattr(c.context, attr) for c in curves}
        if len(values) > 1:
            errors.append(f"cannot merge curves measured with different {attr}: "
                          + ", ".join(f"{c.context.source}={getattr(c.context, attr)!r}" for c in curves))
    if errors:
        raise SizingError(errors)
    first = curves[0].context
    n = [len(c.points) for c in curves]

    def mean(attr: str) -> float | None:
        vals = [getattr(c.context, attr) for c in curves]
        return None if any(v is None for v in vals) else sum(v * k for v, k in zip(vals, n)) / sum(n)

    dates = sorted(c.context.date for c in curves if c.context.date)
    ctx = replace(first, source=" + ".join(c.context.source for c in curves), isl=mean("isl"), osl=mean("osl"),
                  date=dates[0] if dates else None,
                  workload="; ".join(dict.fromkeys(c.context.workload for c in curves if c.context.workload)) or None)
    return make_curve([p for c in curves for p in c.points], ctx)
