"""Load-tester result files as curves: vLLM and SGLang serving runs, GuideLLM reports, AIPerf exports."""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime, timezone

from .curve import Curve, CurveContext, CurvePoint, SizingError, make_curve

# ------------------------------------------------------------------------- vLLM and SGLang runs

TPOT_KEYS = ("mean_tpot_ms", "median_tpot_ms", "mean_itl_ms", "median_itl_ms")
_E2E_KEYS = ("mean_e2el_ms", "mean_latency_ms", "mean_e2e_latency_ms", "median_e2el_ms", "median_latency_ms",
             "median_e2e_latency_ms")


def _json_runs(text: str, source: str) -> list[tuple[int, dict]]:
    """One JSON object, a JSON array of objects, or JSON lines: (line, run) pairs."""
    stripped = text.strip()
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        return [(1, data)]
    if isinstance(data, list):
        return [(i, r) for i, r in enumerate(data, 1) if isinstance(r, dict)]
    runs, errors = [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"{source}:{lineno}: not JSON ({e.msg})")
            continue
        if not isinstance(obj, dict):
            errors.append(f"{source}:{lineno}: a JSON line must be an object")
            continue
        runs.append((lineno, obj))
    if errors:
        raise SizingError(errors)
    return runs


def _is_inf(rate: object) -> bool:
    return rate is None or rate == "inf" or (isinstance(rate, float) and math.isinf(rate))


def _first(run: dict, keys: Sequence[str]) -> tuple[str, float] | tuple[None, None]:
    for k in keys:
        v = run.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0:
            return k, float(v)
    return None, None


def _serving_point(run: dict, where: str, errors: list[str]) -> tuple[CurvePoint, str, str] | None:
    """A point from one `vllm bench serve` / `benchmark_serving.py` / SGLang `bench_serving` run."""
    completed = run.get("completed")
    if not completed:
        errors.append(f"{where}: the run completed no requests")
        return None
    tpot_key, tpot = _first(run, TPOT_KEYS)
    if tpot is None:
        errors.append(f"{where}: no TPOT or ITL in ms ({', '.join(TPOT_KEYS)})")
        return None
    rate, max_c = run.get("request_rate"), run.get("max_concurrency")
    if max_c and _is_inf(rate):
        c, c_basis = float(max_c), "max_concurrency (closed loop)"
    else:
        e2e_key, e2e = _first(run, _E2E_KEYS)
        if e2e is None:
            errors.append(f"{where}: no max_concurrency and no mean end-to-end latency to derive concurrency")
            return None
        thr = run.get("request_throughput")
        if not thr:
            duration = run.get("duration")
            if not duration:
                errors.append(f"{where}: no request_throughput and no duration to derive concurrency")
                return None
            thr = completed / duration
        c, c_basis = thr * e2e / 1000.0, f"Little's law (request_throughput x {e2e_key})"
    ttft_key, ttft = _first(run, ("mean_ttft_ms", "median_ttft_ms"))
    out = run.get("output_throughput")
    label = f"{where} (request_rate={rate}, max_concurrency={max_c})"
    point = CurvePoint(concurrency=c, tok_s_user=1000.0 / tpot, output_tok_s=float(out) if out else None, ttft_ms=ttft,
                       label=label)
    return point, f"tok/s/user = 1000 / {tpot_key}; concurrency = {c_basis}; TTFT = {ttft_key}", c_basis


def _workload_key(run: dict) -> tuple:
    keys = ["backend", "model_id", "dataset_name", "sharegpt_output_len", "fixed_output_len"]
    if run.get("dataset_name") in (None, "random"):
        keys += ["random_input_len", "random_output_len", "random_range_ratio"]
    return tuple((k, run[k]) for k in keys if run.get(k) is not None)


def _vllm_date(raw: object) -> str | None:
    if not isinstance(raw, str):
        return None
    try:  # benchmark_serving.py writes the runner's local time as %Y%m%d-%H%M%S, without an offset
        return datetime.strptime(raw, "%Y%m%d-%H%M%S").isoformat()
    except ValueError:
        return raw


def parse_serving_runs(text: str, *, source: str, fmt: str) -> tuple[Curve, ...]:
    """Curves from vLLM (`vllm bench serve --save-result`, `benchmark_serving.py`) or SGLang
    (`bench_serving --output-file`, JSON lines) results: one point per run, one curve per workload
    (backend, model, dataset and its nominal lengths), in order of appearance."""
    runs = _json_runs(text, source)
    if not runs:
        raise SizingError([f"{source}: no runs"])
    errors: list[str] = []
    groups: dict[tuple, list[tuple[int, dict, CurvePoint, str]]] = {}
    for lineno, run in runs:
        got = _serving_point(run, f"{source}:{lineno}", errors)
        if got:
            groups.setdefault(_workload_key(run), []).append((lineno, run, got[0], got[1]))
    if errors:
        raise SizingError(errors)
    tool = "vllm bench serve / benchmark_serving.py" if fmt == "vllm" else "sglang.bench_serving"
    curves = []
    for key, items in groups.items():
        k = dict(key)
        completed = sum(r["completed"] for _, r, _, _ in items)
        tin = [r.get("total_input_tokens") for _, r, _, _ in items]
        tout = [r.get("total_output_tokens") for _, r, _, _ in items]
        isl = sum(tin) / completed if all(isinstance(x, (int, float)) for x in tin) else None
        osl = sum(tout) / completed if all(isinstance(x, (int, float)) for x in tout) else None
        workload = ", ".join(f"{n}={v}" for n, v in key if n not in ("backend", "model_id")) or None
        dates = sorted(d for d in (_vllm_date(r.get("date")) for _, r, _, _ in items) if d)
        metrics = "; ".join(dict.fromkeys(m for _, _, _, m in items))
        curves.append(make_curve([p for _, _, p, _ in items], CurveContext(
            source=source, model=k.get("model_id"), engine=k.get("backend"), workload=workload, tool=tool,
            isl=isl, osl=osl, date=dates[0] if dates else None, metrics=metrics, format=fmt)))
    return tuple(curves)


# ---------------------------------------------------------------------------------------- GuideLLM

def _stat(metrics: dict, name: str, where: str, errors: list[str], *, required: bool = True) -> float | None:
    """GuideLLM v2: metrics[name]['successful']['mean']."""
    try:
        v = metrics[name]["successful"]["mean"]
    except (KeyError, TypeError):
        if required:
            errors.append(f"{where}: metrics.{name}.successful.mean is missing")
        return None
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        errors.append(f"{where}: metrics.{name}.successful.mean is {v!r}")
        return None
    return float(v)


def parse_guidellm(data: dict, *, source: str) -> tuple[Curve, ...]:
    """A curve from a GuideLLM report (schema v2): one point per benchmark.

    Concurrency: the `concurrent` strategy's streams, 1 for `synchronous`, else the measured mean
    request concurrency. tok/s/user = 1000 / inter_token_latency_ms (GuideLLM's ITL excludes the
    first token, like vLLM's TPOT; its `time_per_output_token_ms` includes it). Aggregate =
    `output_tokens_per_second` (the server's total, not per user). Successful requests only."""
    version = (data.get("metadata") or {}).get("version")
    if version != 2:
        raise SizingError([f"{source}: GuideLLM report schema version {version!r}; this loader reads version 2"])
    benchmarks = data.get("benchmarks") or []
    if not benchmarks:
        raise SizingError([f"{source}: the GuideLLM report has no benchmarks"])
    errors: list[str] = []
    points, models, dates = [], [], []
    isl_w = osl_w = n_w = 0.0
    for i, b in enumerate(benchmarks, 1):
        where = f"{source}: benchmark {i}"
        m, cfg = b.get("metrics") or {}, b.get("config") or {}
        strategy = cfg.get("strategy") or {}
        kind = strategy.get("type_")
        if kind == "concurrent":
            c = strategy.get("streams") or strategy.get("max_concurrency")
        elif kind == "synchronous":
            c = 1
        else:
            c = _stat(m, "request_concurrency", where, errors)
        itl = _stat(m, "inter_token_latency_ms", where, errors)
        agg = _stat(m, "output_tokens_per_second", where, errors, required=False)
        ttft = _stat(m, "time_to_first_token_ms", where, errors, required=False)
        n = ((m.get("request_totals") or {}).get("successful")) or 0
        if not n:
            errors.append(f"{where}: no successful requests")
        if c is None or itl is None or not n:
            continue
        if itl <= 0:
            errors.append(f"{where}: inter-token latency {itl} ms must be > 0")
            continue
        points.append(CurvePoint(concurrency=float(c), tok_s_user=1000.0 / itl, output_tok_s=agg, ttft_ms=ttft,
                                 label=f"benchmark {i}, {kind} {c}"))
        isl, osl = (_stat(m, k, where, errors, required=False) for k in ("prompt_token_count", "output_token_count"))
        if isl is not None and osl is not None:
            isl_w, osl_w, n_w = isl_w + isl * n, osl_w + osl * n, n_w + n
        models.append((cfg.get("backend") or {}).get("model"))
        if isinstance(b.get("start_time"), (int, float)):
            dates.append(datetime.fromtimestamp(b["start_time"], tz=timezone.utc).isoformat(timespec="seconds"))
    if errors:
        raise SizingError(errors)
    spec = (data.get("config") or {}).get("spec") or {}
    target = (spec.get("backend") or {}).get("target")
    model = next((x for x in models if x), None)
    ctx = CurveContext(
        source=source, model=model, isl=isl_w / n_w if n_w else None, osl=osl_w / n_w if n_w else None,
        tool=f"guidellm {(data.get('metadata') or {}).get('guidellm_version', '?')}",
        workload=f"target {target}" if target else None, date=min(dates) if dates else None, format="guidellm",
        metrics="tok/s/user = 1000 / inter_token_latency_ms (successful mean); concurrency = strategy streams; "
                "aggregate = output_tokens_per_second (server total); TTFT = mean")
    return (make_curve(points, ctx),)


# ------------------------------------------------------------------------------------------ AIPerf

def _avg(data: dict, name: str) -> float | None:
    v = (data.get(name) or {}).get("avg") if isinstance(data.get(name), dict) else None
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def parse_aiperf(data: dict, *, source: str) -> tuple[Curve, ...]:
    """A one-point curve from an AIPerf `profile_export_aiperf.json`.

    Concurrency: the profiling phase's `concurrency` (or `loadgen.concurrency` of older exports), else
    Little's law (request_throughput x request_latency). tok/s/user = output_token_throughput_per_user
    (else 1000 / inter_token_latency); aggregate = output_token_throughput; TTFT = time_to_first_token."""
    cfg = data.get("input_config") or {}
    c, basis = None, ""
    for phase in cfg.get("phases") or []:
        if isinstance(phase, dict) and phase.get("kind", "profiling") == "profiling" and phase.get("concurrency"):
            c, basis = float(phase["concurrency"]), "profiling phase concurrency"
    if c is None and (cfg.get("loadgen") or {}).get("concurrency"):
        c, basis = float(cfg["loadgen"]["concurrency"]), "loadgen concurrency"
    if c is None:
        thr, lat = _avg(data, "request_throughput"), _avg(data, "request_latency")
        if thr and lat:
            c, basis = thr * lat / 1000.0, "Little's law (request_throughput x request_latency)"
    t, t_basis = _avg(data, "output_token_throughput_per_user"), "output_token_throughput_per_user"
    if t is None and _avg(data, "inter_token_latency"):
        t, t_basis = 1000.0 / _avg(data, "inter_token_latency"), "1000 / inter_token_latency"
    errors = []
    if c is None:
        errors.append(f"{source}: no concurrency (input_config phases / loadgen) and no request throughput and latency")
    if t is None:
        errors.append(f"{source}: no output_token_throughput_per_user and no inter_token_latency")
    if errors:
        raise SizingError(errors)
    items = (cfg.get("models") or {}).get("items") if isinstance(cfg.get("models"), dict) else cfg.get("models")
    model = None
    if isinstance(items, list) and items:
        model = items[0].get("name") if isinstance(items[0], dict) else str(items[0])
    point = CurvePoint(concurrency=c, tok_s_user=t, output_tok_s=_avg(data, "output_token_throughput"),
                       ttft_ms=_avg(data, "time_to_first_token"), label=f"profile export, concurrency {c:g}")
    ctx = CurveContext(
        source=source, model=model, isl=_avg(data, "input_sequence_length"), osl=_avg(data, "output_sequence_length"),
        tool=f"aiperf {data.get('aiperf_version', '?')}", date=data.get("start_time"), format="aiperf",
        metrics=f"tok/s/user = {t_basis} (avg); concurrency = {basis}; aggregate = output_token_throughput; TTFT = avg")
    return (make_curve([point], ctx),)
