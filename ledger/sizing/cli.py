"""`ledger size`: parse the options, call the sizing engine, print the table or the JSON."""
from __future__ import annotations

import json
import math
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from .curve import SizingError
from .cost import compare, priced
from .engine import Reserves, SizingRequest, size
from .loaders import FORMATS, load_curve
from .memory import memory_fit
from .model_config import load_model_config
from .report import comparison_as_table, context_lines, sizing_as_dict, sizing_as_table


def _fail(lines) -> None:
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    for line in [lines] if isinstance(lines, str) else lines:
        err.print(str(line), markup=False)
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


def _instant(text: str | None) -> datetime:
    from ledger.console import parse_instant

    return datetime.now(timezone.utc) if text is None else parse_instant(text, "--at")


def _price_index(pricebooks: Optional[List[Path]]):
    from ledger import pricebook, store

    if not pricebooks:
        return store.default_index()
    books, problems = pricebook.load_books(pricebooks)
    if problems:
        _fail([str(p) for p in problems])
    return pricebook.PriceIndex(books)


def size_command(
    tpm: float = typer.Option(..., "--tpm", help="output tokens per minute to serve"),
    sla: str = typer.Option(..., "--sla", help="interactivity SLAs in tok/s/user, comma-separated: 20,50,100"),
    gpus_per_replica: int = typer.Option(..., "--gpus-per-replica", help="GPUs per replica (the TP/pod size)"),
    anchors: Optional[str] = typer.Option(None, "--anchors", help='measured anchors "c:tok_s_user,...", e.g. "1:215.5,10:122.2"'),
    curve: Optional[List[Path]] = typer.Option(None, "--curve", help="curve file (repeat to merge one file per load level)"),
    curve_format: str = typer.Option("auto", "--curve-format", help=f"one of {', '.join(FORMATS)}"),
    curve_select: Optional[str] = typer.Option(None, "--curve-select", help="pick a curve in a multi-curve file by a piece of its source, model or workload"),
    util: float = typer.Option(0.7, "--util", help="planned utilization of replica throughput, in (0, 1]"),
    ttft_ms: Optional[float] = typer.Option(None, "--ttft-ms", help="highest acceptable TTFT at c* (ms)"),
    interpolate: bool = typer.Option(False, "--interpolate", help="solve between points (linear in log c): a DRAFT"),
    repair: bool = typer.Option(False, "--repair", help="keep the curve's upper envelope and report the points dropped"),
    failure_reserve: int = typer.Option(0, "--failure-reserve", help="failover replicas (N+K)"),
    canary: int = typer.Option(0, "--canary", help="canary replicas"),
    warm: int = typer.Option(0, "--warm", help="warm reserve replicas"),
    device: Optional[str] = typer.Option(None, "--device", help="GPU SKU in the price book, e.g. H100-SXM-80GB"),
    region: Optional[str] = typer.Option(None, "--region", help="price book region"),
    purchase_option: Optional[str] = typer.Option(None, "--purchase-option", help="on_demand, reserved, spot, capacity_block"),
    at: Optional[str] = typer.Option(None, "--at", help="instant whose price is used (ISO 8601 with offset; default now)"),
    hours_per_month: str = typer.Option("730", "--hours-per-month", help="hours billed per month (decimal)"),
    pricebooks: Optional[List[Path]] = typer.Option(None, "--pricebooks", help="price book files or folders (default: the ledger's)"),
    isl: Optional[float] = typer.Option(None, "--isl", help="workload mean input tokens (default: the curve's)"),
    osl: Optional[float] = typer.Option(None, "--osl", help="workload mean output tokens (default: the curve's)"),
    model_config: Optional[Path] = typer.Option(None, "--model-config", help="the model's config.json: caps c* at what the KV cache holds"),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="KV cache dtype (vLLM --kv-cache-dtype): bf16, fp16, fp8, fp4, nvfp4, fp32"),
    max_model_len: Optional[int] = typer.Option(None, "--max-model-len", help="vLLM --max-model-len for a hybrid model's token count (default: the config's max_position_embeddings)"),
    mamba_cache_mode: str = typer.Option("none", "--mamba-cache-mode", help="vLLM mamba_cache_mode of a linear-attention / Mamba hybrid: none, or align (prefix caching on)"),
    weights_gib: Optional[float] = typer.Option(None, "--weights-gib", help="model weights per GPU (GiB)"),
    gpu_mem_gib: Optional[float] = typer.Option(None, "--gpu-mem-gib", help="memory of one GPU (GiB), e.g. 79.18 for an H100 80GB"),
    mem_util: float = typer.Option(0.9, "--mem-util", help="share of GPU memory the engine uses (vLLM gpu_memory_utilization)"),
    workspace_gib: Optional[float] = typer.Option(None, "--workspace-gib", help="activation peak + non-torch memory per GPU (GiB)"),
    compare_curve: Optional[List[Path]] = typer.Option(None, "--compare-curve", help="what-if curve file: delta GPUs and $/month at each SLA"),
    compare_select: Optional[str] = typer.Option(None, "--compare-select", help="pick a curve in the what-if file"),
    as_json: bool = typer.Option(False, "--json", help="print the JSON report"),
) -> None:
    """Size a pool SLA-first: the SLA picks c*, c* the replica throughput, that the GPU count."""
    try:
        _run(**locals())
    except SizingError as e:
        _fail(list(e.problems))


def _run(*, tpm, sla, gpus_per_replica, anchors, curve, curve_format, curve_select, util, ttft_ms, interpolate,
         repair, failure_reserve, canary, warm, device, region, purchase_option, at, hours_per_month, pricebooks,
         isl, osl, model_config, kv_dtype, max_model_len, mamba_cache_mode, weights_gib, gpu_mem_gib, mem_util,
         workspace_gib, compare_curve, compare_select, as_json) -> None:
    if (anchors is None) == (not curve):
        _fail("give the measured curve as exactly one of --anchors or --curve")
    ignored = [msg for cond, msg in (
        (anchors is not None and (curve_select is not None or curve_format != "auto"),
         "--curve-select and --curve-format apply to --curve, not --anchors"),
        (compare_select is not None and not compare_curve, "--compare-select needs --compare-curve"),
        (model_config is None and any(v is not None for v in (weights_gib, gpu_mem_gib, workspace_gib)),
         "--weights-gib, --gpu-mem-gib and --workspace-gib are for the memory fit: also give --model-config"),
        (model_config is None and (max_model_len is not None or mamba_cache_mode != "none"),
         "--max-model-len and --mamba-cache-mode are for the memory fit: also give --model-config"),
        (device is None and (at is not None or pricebooks), "--at and --pricebooks price the rows: also give "
                                                            "--device, --region and --purchase-option"),
    ) if cond]
    if ignored:
        _fail(ignored)
    base_curve = (load_curve(anchors, "anchors") if anchors is not None
                  else load_curve(list(curve), curve_format, curve_select))
    if not math.isfinite(tpm) or tpm <= 0:
        _fail(f"--tpm must be > 0 (got {tpm:g})")
    shape_isl = isl if isl is not None else base_curve.context.isl
    shape_osl = osl if osl is not None else base_curve.context.osl

    fit = None
    if model_config is not None:
        missing = [n for n, v in (("--weights-gib", weights_gib), ("--gpu-mem-gib", gpu_mem_gib),
                                  ("--workspace-gib", workspace_gib)) if v is None]
        if missing:
            _fail(f"the memory fit (--model-config) also needs {', '.join(missing)}")
        if shape_isl is None or shape_osl is None:
            _fail("the memory fit needs the workload's ISL and OSL: pass --isl and --osl (the curve has none)")
        fit = memory_fit(load_model_config(model_config), kv_dtype=kv_dtype, gpu_mem_gib=gpu_mem_gib,
                         weights_gib=weights_gib, workspace_gib=workspace_gib, mem_util=mem_util,
                         gpus=gpus_per_replica, isl=shape_isl, osl=shape_osl, max_model_len=max_model_len,
                         mamba_cache_mode=mamba_cache_mode)

    request = SizingRequest(tpm=tpm, slas=_slas(sla), gpus_per_replica=gpus_per_replica, util=util,
                            reserves=Reserves(failure_reserve, canary, warm), interpolate=interpolate,
                            ttft_limit_ms=ttft_ms, kv_cap=None if fit is None else fit.concurrency_cap,
                            isl=isl, osl=osl, repair=repair)
    result = size(base_curve, request, memory=fit)
    alt = None
    if compare_curve:
        alt = size(load_curve(list(compare_curve), curve_format, compare_select), request, memory=fit)

    if device is not None or region is not None or purchase_option is not None:
        if device is None or region is None or purchase_option is None:
            _fail("pricing needs all of --device, --region and --purchase-option")
        from ledger.money import MoneyError, to_decimal

        try:
            hours = to_decimal(hours_per_month, what="--hours-per-month")
        except MoneyError as e:
            _fail(str(e))
        when = _instant(at)
        try:
            price = _price_index(pricebooks).price_at(meter="gpu_time", sku=device, region=region,
                                                      purchase_option=purchase_option, at=when)
        except ValueError as e:  # NoPriceError names meter, sku, region and time
            _fail(str(e))
        kw = dict(device=device, region=region, purchase_option=purchase_option, at=when, hours_per_month=hours)
        result = priced(result, price, **kw)
        if alt is not None:
            alt = priced(alt, price, **kw)

    deltas = compare(result, alt) if alt is not None else None
    if as_json:
        sys.stdout.write(json.dumps(sizing_as_dict(result, deltas, alt), indent=2) + "\n")
        return
    out = Console(highlight=False, soft_wrap=True)
    for line in context_lines(result):
        out.print(line, markup=False)
    out.print(sizing_as_table(result))
    if alt is not None:
        for line in context_lines(alt)[1:2] + list(alt.repairs):
            out.print("what-if " + line, markup=False)
        out.print(comparison_as_table(result, alt, deltas))


def register(app: typer.Typer) -> None:
    """Add `ledger size` to the main app."""
    app.command("size")(size_command)
