"""`ledger size`: parse the options into a sizing job (:mod:`ledger.sizing.service`), run it, print
the table, the JSON or the CSV. The options' defaults are the job's own, as on the dashboard's
sizing page; the library's hints are worded as this command's options (:data:`NAMES`)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from ..console import FROM_HELP, TO_HELP
from ..hints import lines_of, say, say_one
from .curve import fmt_num
from .engine import Reserves
from .loaders import FORMATS
from .report import (comparison_as_table, context_lines, ops_lines, ops_table, reserve_lines, sizing_as_dict,
                     sizing_as_table)
from .service import CurveSource, MemorySpec, PriceSpec, SizingJob, SizingOutcome, TrafficSpec, default, run

_CURVE_FORMAT = default(CurveSource, "format")
_RESERVES = default(SizingJob, "reserves")
_MAMBA_CACHE_MODE = default(MemorySpec, "mamba_cache_mode")
_PERCENTILE = default(TrafficSpec, "percentile")

#: How `ledger size` words the hints of what the library says (:mod:`ledger.hints`): key -> words.
NAMES = {
    "repair": "use --repair", "repaired": "--repair", "curve_format": "name it with --curve-format",
    "curve_select": "pick one with --curve-select (a piece of its source, model or workload)",
    "memory_fit": "no memory fit (--model-config)", "tier": "--tier", "isl_osl": "--isl/--osl",
    "ttft_limit": " (--ttft-ms)", "percentile": "--percentile", "busy_window": "--from/--to ", "tpm": "--tpm",
    "give_isl_osl": ": pass --isl and --osl", "window_start": "--from", "window_end": "--to",
}


def _fail(lines) -> None:
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    for line in say(lines, NAMES):
        err.print(line, markup=False)
    raise typer.Exit(1)


def _slas(text: str) -> tuple[float, ...]:
    out, bad = [], []
    for part in (p.strip() for p in text.split(",")):
        try:
            v = float(part)
        except ValueError:
            bad.append(part)
            continue
        out.append(v)
    if bad or not out:
        _fail(f"--sla: {', '.join(repr(b) for b in bad) or 'nothing'} is not a list of tok/s/user numbers "
              f"such as 20,50,100")
    return tuple(out)


def _books(pricebooks: Optional[List[Path]]):
    """The books of --pricebooks, or None (the ledger's own)."""
    from ledger import pricebook

    if not pricebooks:
        return None
    books, problems = pricebook.load_books(pricebooks)
    if problems:
        _fail([str(p) for p in pricebook.unlocated(problems)])
    return tuple(books)


def size_command(
    tpm: Optional[float] = typer.Option(None, "--tpm", help="output tokens per minute to serve (or --workload)"),
    sla: Optional[str] = typer.Option(None, "--sla", help="interactivity SLAs in tok/s/user, comma-separated: 20,50,100 (or --tier)"),
    gpus_per_replica: int = typer.Option(..., "--gpus-per-replica", help="GPUs per replica (the TP/pod size)"),
    anchors: Optional[str] = typer.Option(None, "--anchors", help='measured anchors "c:tok_s_user,...", e.g. "1:215.5,10:122.2"'),
    curve: Optional[List[Path]] = typer.Option(None, "--curve", help="curve file (repeat to merge one file per load level)"),
    curve_format: str = typer.Option(_CURVE_FORMAT, "--curve-format", help=f"one of {', '.join(FORMATS)}"),
    curve_select: Optional[str] = typer.Option(None, "--curve-select", help="pick a curve in a multi-curve file by a piece of its source, model or workload"),
    util: float = typer.Option(default(SizingJob, "util"), "--util", help="planned utilization of replica throughput, in (0, 1]"),
    ttft_ms: Optional[float] = typer.Option(None, "--ttft-ms", help="highest acceptable TTFT at c* (ms)"),
    interpolate: bool = typer.Option(default(SizingJob, "interpolate"), "--interpolate", help="solve between points (linear in log c): a DRAFT"),
    repair: bool = typer.Option(default(SizingJob, "repair"), "--repair", help="keep the curve's upper envelope and report the points dropped"),
    failure_reserve: int = typer.Option(_RESERVES.failure, "--failure-reserve", help="failover replicas (N+K)"),
    canary: int = typer.Option(_RESERVES.canary, "--canary", help="canary replicas"),
    warm: int = typer.Option(_RESERVES.warm, "--warm", help="warm reserve replicas"),
    device: Optional[str] = typer.Option(None, "--device", help="GPU SKU in the price book, e.g. H100-SXM-80GB"),
    region: Optional[str] = typer.Option(None, "--region", help="price book region"),
    purchase_option: Optional[str] = typer.Option(None, "--purchase-option", help="on_demand, reserved, spot, capacity_block"),
    at: Optional[str] = typer.Option(None, "--at", help="instant whose price is used (ISO 8601 with offset; default now)"),
    hours_per_month: str = typer.Option(str(default(PriceSpec, "hours_per_month")), "--hours-per-month", help="hours billed per month (decimal)"),
    pricebooks: Optional[List[Path]] = typer.Option(None, "--pricebooks", help="price book files or folders (default: the ledger's)"),
    isl: Optional[float] = typer.Option(None, "--isl", help="workload mean input tokens (default: the curve's)"),
    osl: Optional[float] = typer.Option(None, "--osl", help="workload mean output tokens (default: the curve's)"),
    model_config: Optional[Path] = typer.Option(None, "--model-config", help="the model's config.json: caps c* at what the KV cache holds"),
    kv_dtype: str = typer.Option(default(MemorySpec, "kv_dtype"), "--kv-dtype", help="KV cache dtype (vLLM --kv-cache-dtype): bf16, fp16, fp8, fp4, nvfp4, fp32"),
    max_model_len: Optional[int] = typer.Option(None, "--max-model-len", help="vLLM --max-model-len for a hybrid model's token count (default: the config's max_position_embeddings)"),
    mamba_cache_mode: str = typer.Option(_MAMBA_CACHE_MODE, "--mamba-cache-mode", help="vLLM mamba_cache_mode of a linear-attention / Mamba hybrid: none, or align (prefix caching on)"),
    weights_gib: Optional[float] = typer.Option(None, "--weights-gib", help="model weights per GPU (GiB)"),
    gpu_mem_gib: Optional[float] = typer.Option(None, "--gpu-mem-gib", help="memory of one GPU (GiB), e.g. 79.18 for an H100 80GB"),
    mem_util: float = typer.Option(default(MemorySpec, "mem_util"), "--mem-util", help="share of GPU memory the engine uses (vLLM gpu_memory_utilization)"),
    workspace_gib: Optional[float] = typer.Option(None, "--workspace-gib", help="activation peak + non-torch memory per GPU (GiB)"),
    compare_curve: Optional[List[Path]] = typer.Option(None, "--compare-curve", help="what-if curve file: delta GPUs and $/month at each SLA"),
    compare_select: Optional[str] = typer.Option(None, "--compare-select", help="pick a curve in the what-if file"),
    tier: Optional[List[str]] = typer.Option(None, "--tier", help="an SLA tier NAME:SHARE:SLA[:TTFT_MS], e.g. interactive:0.3:100:500; repeat, shares adding up to 1"),
    prefill_curve: Optional[Path] = typer.Option(None, "--prefill-curve", help="disaggregated: the prefill curve (input tok/s per replica against TTFT); --curve is then the decode curve"),
    prefill_format: str = typer.Option(_CURVE_FORMAT, "--prefill-format", help="prefill curve format: auto, csv, vllm, sglang"),
    prefill_select: Optional[str] = typer.Option(None, "--prefill-select", help="pick a curve in a multi-curve prefill file"),
    prefill_gpus_per_replica: Optional[int] = typer.Option(None, "--prefill-gpus-per-replica", help="GPUs per prefill replica (default --gpus-per-replica)"),
    workload: Optional[str] = typer.Option(None, "--workload", help="size from the ledger's traffic of this period (YYYY-MM): TPM, ISL and OSL"),
    frm: Optional[str] = typer.Option(None, "--from", help=FROM_HELP + "; size from the ledger's traffic of that window (--workload over a window such as a day; an instant on a whole minute)"),
    to: Optional[str] = typer.Option(None, "--to", help=TO_HELP + "; an instant on a whole minute"),
    pool: Optional[str] = typer.Option(None, "--pool", help="with --workload: the pool whose traffic to size for"),
    product: Optional[str] = typer.Option(None, "--product", help="with --workload: only this product's traffic"),
    percentile: str = typer.Option(_PERCENTILE, "--percentile", help="with --workload: the per-minute TPM to size for: p50, p95, p99, max, mean"),
    time_to_ready_min: Optional[int] = typer.Option(None, "--time-to-ready-min", help="minutes a new replica needs to serve: warm reserve = replicas the workload's largest rise over it needs"),
    as_json: bool = typer.Option(False, "--json", help="print the JSON report (money as decimal strings)"),
    as_csv: bool = typer.Option(False, "--csv", help="print the sizing as CSV: one row per SLA (with --tier or "
                                                     "--prefill-curve: per part, reserve and the sum)"),
) -> None:
    """Size a pool SLA-first: the SLA picks c*, c* the replica throughput, that the GPU count."""
    if as_json and as_csv:
        _fail("give --json or --csv, not both")
    if (anchors is None) == (not curve):
        _fail("give the measured curve as exactly one of --anchors or --curve")
    window = _window(workload, frm, to)
    _check_options(tpm=tpm, sla=sla, tier=tier, workload=workload if window is None else window, pool=pool,
                   product=product, percentile=percentile, time_to_ready_min=time_to_ready_min, warm=warm, isl=isl,
                   osl=osl, prefill_curve=prefill_curve, prefill_format=prefill_format, prefill_select=prefill_select,
                   prefill_gpus_per_replica=prefill_gpus_per_replica, compare_curve=compare_curve)
    _check_ignored(anchors=anchors, curve_select=curve_select, curve_format=curve_format,
                   compare_select=compare_select, compare_curve=compare_curve, model_config=model_config,
                   memory=(weights_gib, gpu_mem_gib, workspace_gib), max_model_len=max_model_len,
                   mamba_cache_mode=mamba_cache_mode, device=device, at=at, pricebooks=pricebooks)
    memory = None if model_config is None else _memory(
        model_config=model_config, kv_dtype=kv_dtype, max_model_len=max_model_len, mamba_cache_mode=mamba_cache_mode,
        weights_gib=weights_gib, gpu_mem_gib=gpu_mem_gib, mem_util=mem_util, workspace_gib=workspace_gib)
    price = _price(device, region, purchase_option, at, hours_per_month, pricebooks)
    traffic = None if workload is None and window is None else TrafficSpec(
        period=workload, start=None if window is None else window[0], end=None if window is None else window[1],
        pool=pool, product=product, percentile=percentile, time_to_ready_min=time_to_ready_min)
    try:
        from .tiers import parse_tier

        wi = None if traffic is None else _traffic(traffic)
        job = SizingJob(
            curve=CurveSource(anchors=anchors, files=tuple(curve or ()), format=curve_format, select=curve_select),
            tpm=tpm if wi is None else wi.tpm, slas=() if sla is None else _slas(sla),
            tiers=tuple(parse_tier(t) for t in tier or ()), gpus_per_replica=gpus_per_replica, util=util,
            reserves=Reserves(failure=failure_reserve, canary=canary, warm=warm), interpolate=interpolate,
            ttft_limit_ms=ttft_ms, isl=isl, osl=osl, repair=repair, time_to_ready_min=time_to_ready_min,
            prefill=None if prefill_curve is None else CurveSource(files=(prefill_curve,), format=prefill_format,
                                                                  select=prefill_select),
            prefill_gpus_per_replica=prefill_gpus_per_replica,
            compare=None if not compare_curve else CurveSource(files=tuple(compare_curve), format=curve_format,
                                                                select=compare_select),
            memory=memory, price=price, workload=wi)
        outcome = run(job)
    except ValueError as e:  # SizingError; NoPriceError names meter, sku, region and time
        _fail(lines_of(e))
    if job.in_parts:
        _print_pool(outcome.result, as_json, as_csv)
    else:
        _print_plain(outcome, as_json, as_csv)


def _print_plain(outcome: SizingOutcome, as_json: bool, as_csv: bool) -> None:
    """A plain sizing: the JSON, the CSV, or the context, the table, the reserves, the operations
    table and the what-if."""
    result, alt, deltas = outcome.result, outcome.alt, outcome.deltas
    if as_json:
        sys.stdout.write(json.dumps(_said(sizing_as_dict(result, deltas, alt)), indent=2) + "\n")
        return
    if as_csv:
        from .report_csv import sizing_as_csv

        sys.stdout.write(sizing_as_csv(_said(sizing_as_dict(result, deltas, alt))))
        return
    out = Console(highlight=False)  # prose wraps at the terminal width, like the tables
    for line in say(context_lines(result), NAMES):
        out.print(line, markup=False)
    out.print(sizing_as_table(result))
    if result.request.reserves.total or result.request.rise_tpm is not None:
        for line in reserve_lines(result):
            out.print(line, markup=False)
    rows = [(f"SLA {fmt_num(r.sla_tok_s_user)}", r.ops) for r in result.rows]
    out.print(ops_table(rows))
    for line in say(ops_lines(rows), NAMES):
        out.print(line, markup=False)
    if alt is not None:
        for line in context_lines(alt)[1:2] + list(alt.repairs):
            out.print("what-if " + say_one(line, NAMES), markup=False)
        out.print(comparison_as_table(result, alt, deltas))


def _said(doc):
    """The JSON report with every line of the library worded as this command's (its repairs, its
    operations' bases), as `ledger size` always wrote them."""
    if isinstance(doc, dict):
        return {k: _said(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_said(v) for v in doc]
    return say_one(doc, NAMES) if isinstance(doc, str) else doc


def _check_options(*, tpm, sla, tier, workload, pool, product, percentile, time_to_ready_min, warm, isl, osl,
                   prefill_curve, prefill_format, prefill_select, prefill_gpus_per_replica, compare_curve) -> None:
    """Options that cannot go together, or need another: one line each, before any work."""
    bad = [msg for cond, msg in (
        ((tpm is None) == (workload is None), "give the traffic as exactly one of --tpm, --workload PERIOD or "
                                              "--from/--to"),
        (workload is not None and (isl is not None or osl is not None),
         "--isl and --osl come from --workload (its mean ISL and OSL); leave them out"),
        (workload is None and (pool is not None or product is not None or percentile != _PERCENTILE
                               or time_to_ready_min is not None),
         "--pool, --product, --percentile and --time-to-ready-min read the traffic: also give --workload (or "
         "--from/--to)"),
        (time_to_ready_min is not None and time_to_ready_min < 1, "--time-to-ready-min must be a whole number >= 1"),
        (time_to_ready_min is not None and warm, "give the warm reserve as --warm N or from --time-to-ready-min, "
                                                 "not both"),
        (bool(tier) and sla is not None, "--sla and --tier: each tier carries its own SLA; give one or the other"),
        (not tier and sla is None, "give the SLA: --sla 20,50,100, or tiers with --tier NAME:SHARE:SLA[:TTFT_MS]"),
        (prefill_curve is not None and not tier and sla is not None and len(sla.split(",")) != 1,
         "a disaggregated pool is sized at one SLA (or per --tier), not a list"),
        (prefill_curve is None and (prefill_format != _CURVE_FORMAT or prefill_select is not None
                                    or prefill_gpus_per_replica is not None),
         "--prefill-format, --prefill-select and --prefill-gpus-per-replica need --prefill-curve"),
        (bool(compare_curve) and (bool(tier) or prefill_curve is not None),
         "--compare-curve compares plain sizings; leave out --tier and --prefill-curve"),
    ) if cond]
    if bad:
        _fail(bad)


def _window(period: Optional[str], frm: Optional[str], to: Optional[str]):
    """The traffic window of --from/--to as (start, end), None without them; one line per mistake."""
    if frm is None and to is None:
        return None
    from ledger import console

    if period is not None:
        _fail("give the traffic as --workload PERIOD or --from/--to, not both")
    if frm is None or to is None:
        _fail("give both --from and --to: the window of traffic to size from, [from, to)")
    return console.period_bounds(None, frm, to)


def _check_ignored(*, anchors, curve_select, curve_format, compare_select, compare_curve, model_config, memory,
                   max_model_len, mamba_cache_mode, device, at, pricebooks) -> None:
    """Options that would be read by nothing: one line each, before any work."""
    ignored = [msg for cond, msg in (
        (anchors is not None and (curve_select is not None or curve_format != _CURVE_FORMAT),
         "--curve-select and --curve-format apply to --curve, not --anchors"),
        (compare_select is not None and not compare_curve, "--compare-select needs --compare-curve"),
        (model_config is None and any(v is not None for v in memory),
         "--weights-gib, --gpu-mem-gib and --workspace-gib are for the memory fit: also give --model-config"),
        (model_config is None and (max_model_len is not None or mamba_cache_mode != _MAMBA_CACHE_MODE),
         "--max-model-len and --mamba-cache-mode are for the memory fit: also give --model-config"),
        (device is None and (at is not None or pricebooks), "--at and --pricebooks price the rows: also give "
                                                            "--device, --region and --purchase-option"),
    ) if cond]
    if ignored:
        _fail(ignored)


def _memory(**options) -> MemorySpec:
    """The memory fit of --model-config and the options it needs."""
    missing = [n for n, v in (("--weights-gib", options["weights_gib"]), ("--gpu-mem-gib", options["gpu_mem_gib"]),
                              ("--workspace-gib", options["workspace_gib"])) if v is None]
    if missing:
        _fail(f"the memory fit (--model-config) also needs {', '.join(missing)}")
    return MemorySpec(**options)


def _traffic(spec: TrafficSpec):
    """The sizing inputs from the ledger's own traffic (read in a checked session of the ledger)."""
    from ledger import console

    from .service import read_traffic

    with console.Ledger() as s:
        return read_traffic(s, spec)


def _price(device, region, purchase_option, at, hours_per_month, pricebooks) -> PriceSpec | None:
    """The GPU price to take, or None when no device is given."""
    if device is None and region is None and purchase_option is None:
        return None
    if device is None or region is None or purchase_option is None:
        _fail("pricing needs all of --device, --region and --purchase-option")
    from ledger.console import parse_instant
    from ledger.money import MoneyError, to_decimal

    try:
        hours = to_decimal(hours_per_month, what="--hours-per-month")
    except MoneyError as e:
        _fail(str(e))
    return PriceSpec(device=device, region=region, purchase_option=purchase_option,
                     at=None if at is None else parse_instant(at, "--at"), hours_per_month=hours,
                     books=_books(pricebooks))


def _print_pool(result, as_json: bool, as_csv: bool = False) -> None:
    """A pool in parts: the JSON, the CSV, or the context, the table, the reserves and the operations table."""
    from .pool_report import pool_as_dict, pool_as_table, pool_lines, pool_ops, pool_reserve_lines

    if as_json:
        sys.stdout.write(json.dumps(_said(pool_as_dict(result)), indent=2) + "\n")
        return
    if as_csv:
        from .report_csv import pool_as_csv

        sys.stdout.write(pool_as_csv(_said(pool_as_dict(result))))
        return
    out = Console(highlight=False)  # prose wraps at the terminal width, like the tables
    for line in say(pool_lines(result), NAMES):
        out.print(line, markup=False)
    out.print(pool_as_table(result))
    if result.ratio:
        out.print(f"disaggregated: {result.ratio} serving (prefill : decode replicas), "
                  f"{result.ratio_with_reserves} with the reserves", markup=False)
    for line in pool_reserve_lines(result):
        out.print(line, markup=False)
    table, lines = pool_ops(result)
    out.print(table)
    for line in say(lines, NAMES):
        out.print(line, markup=False)


def register(app: typer.Typer) -> None:
    """Add `ledger size` to the main app."""
    app.command("size")(size_command)
