"""`ledger size`: parse the options, call the sizing engine, print the table or the JSON."""
from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from datetime import datetime, timezone
from decimal import Decimal
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
from .curve import fmt_num
from .report import (comparison_as_table, context_lines, ops_lines, ops_table, reserve_lines, sizing_as_dict,
                     sizing_as_table)


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
    tpm: Optional[float] = typer.Option(None, "--tpm", help="output tokens per minute to serve (or --workload)"),
    sla: Optional[str] = typer.Option(None, "--sla", help="interactivity SLAs in tok/s/user, comma-separated: 20,50,100 (or --tier)"),
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
    tier: Optional[List[str]] = typer.Option(None, "--tier", help="an SLA tier NAME:SHARE:SLA[:TTFT_MS], e.g. interactive:0.3:100:500; repeat, shares adding up to 1"),
    prefill_curve: Optional[Path] = typer.Option(None, "--prefill-curve", help="disaggregated: the prefill curve (input tok/s per replica against TTFT); --curve is then the decode curve"),
    prefill_format: str = typer.Option("auto", "--prefill-format", help="prefill curve format: auto, csv, vllm, sglang"),
    prefill_select: Optional[str] = typer.Option(None, "--prefill-select", help="pick a curve in a multi-curve prefill file"),
    prefill_gpus_per_replica: Optional[int] = typer.Option(None, "--prefill-gpus-per-replica", help="GPUs per prefill replica (default --gpus-per-replica)"),
    workload: Optional[str] = typer.Option(None, "--workload", help="size from the ledger's traffic of this period (YYYY-MM): TPM, ISL and OSL"),
    pool: Optional[str] = typer.Option(None, "--pool", help="with --workload: the pool whose traffic to size for"),
    product: Optional[str] = typer.Option(None, "--product", help="with --workload: only this product's traffic"),
    percentile: str = typer.Option("p99", "--percentile", help="with --workload: the per-minute TPM to size for: p50, p95, p99, max, mean"),
    time_to_ready_min: Optional[int] = typer.Option(None, "--time-to-ready-min", help="minutes a new replica needs to serve: warm reserve = replicas the workload's largest rise over it needs"),
    as_json: bool = typer.Option(False, "--json", help="print the JSON report (money as decimal strings)"),
    as_csv: bool = typer.Option(False, "--csv", help="print the sizing as CSV: one row per SLA (with --tier or "
                                                     "--prefill-curve: per part, reserve and the sum)"),
) -> None:
    """Size a pool SLA-first: the SLA picks c*, c* the replica throughput, that the GPU count."""
    if as_json and as_csv:
        _fail("give --json or --csv, not both")
    try:
        _run(**locals())
    except SizingError as e:
        _fail(list(e.problems))


def _run(*, tpm, sla, gpus_per_replica, anchors, curve, curve_format, curve_select, util, ttft_ms, interpolate,
         repair, failure_reserve, canary, warm, device, region, purchase_option, at, hours_per_month, pricebooks,
         isl, osl, model_config, kv_dtype, max_model_len, mamba_cache_mode, weights_gib, gpu_mem_gib, mem_util,
         workspace_gib, compare_curve, compare_select, as_json, as_csv, tier, prefill_curve, prefill_format,
         prefill_select,
         prefill_gpus_per_replica, workload, pool, product, percentile, time_to_ready_min) -> None:
    if (anchors is None) == (not curve):
        _fail("give the measured curve as exactly one of --anchors or --curve")
    _check_options(tpm=tpm, sla=sla, tier=tier, workload=workload, pool=pool, product=product, percentile=percentile,
                   time_to_ready_min=time_to_ready_min, warm=warm, isl=isl, osl=osl, prefill_curve=prefill_curve,
                   prefill_format=prefill_format, prefill_select=prefill_select,
                   prefill_gpus_per_replica=prefill_gpus_per_replica, compare_curve=compare_curve)
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
    wi = None
    if workload is not None:
        wi = _workload(workload, pool, product, percentile, time_to_ready_min)
        tpm, isl, osl = wi.tpm, wi.isl, wi.osl
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

    rise = None if wi is None else wi.rise_tpm
    if tier or prefill_curve is not None:
        from .disagg import load_prefill_curve
        from .tiers import PoolRequest, Tier, parse_tier, size_parts

        tiers = tuple(parse_tier(t) for t in tier) if tier else (Tier("", Decimal(1), _slas(sla)[0]),)
        pre = None if prefill_curve is None else load_prefill_curve(prefill_curve, prefill_format, prefill_select)
        preq = PoolRequest(tpm=tpm, tiers=tiers, gpus_per_replica=gpus_per_replica, util=util,
                           reserves=Reserves(failure_reserve, canary, warm), interpolate=interpolate,
                           ttft_limit_ms=ttft_ms, kv_cap=None if fit is None else fit.concurrency_cap, isl=isl,
                           osl=osl, repair=repair, rise_tpm=rise, time_to_ready_min=time_to_ready_min,
                           workload_shape=wi is not None, prefill_gpus_per_replica=prefill_gpus_per_replica)
        pooled = replace(size_parts(base_curve, preq, prefill=pre, memory=fit), workload=wi)
        price = _price(device, region, purchase_option, at, hours_per_month, pricebooks)
        if price is not None:
            from .tiers import priced_parts

            pooled = priced_parts(pooled, price[0], **price[1])
        _print_pool(pooled, as_json, as_csv)
        return
    request = SizingRequest(tpm=tpm, slas=_slas(sla), gpus_per_replica=gpus_per_replica, util=util,
                            reserves=Reserves(failure_reserve, canary, warm), interpolate=interpolate,
                            ttft_limit_ms=ttft_ms, kv_cap=None if fit is None else fit.concurrency_cap,
                            isl=isl, osl=osl, repair=repair, rise_tpm=rise, time_to_ready_min=time_to_ready_min,
                            workload_shape=wi is not None)
    result = replace(size(base_curve, request, memory=fit), workload=wi)
    alt = None
    if compare_curve:
        alt = size(load_curve(list(compare_curve), curve_format, compare_select), request, memory=fit)

    price = _price(device, region, purchase_option, at, hours_per_month, pricebooks)
    if price is not None:
        result = priced(result, price[0], **price[1])
        if alt is not None:
            alt = priced(alt, price[0], **price[1])

    deltas = compare(result, alt) if alt is not None else None
    if as_json:
        sys.stdout.write(json.dumps(sizing_as_dict(result, deltas, alt), indent=2) + "\n")
        return
    if as_csv:
        from .report_csv import sizing_as_csv

        sys.stdout.write(sizing_as_csv(sizing_as_dict(result, deltas, alt)))
        return
    out = Console(highlight=False)  # prose wraps at the terminal width, like the tables
    for line in context_lines(result):
        out.print(line, markup=False)
    out.print(sizing_as_table(result))
    if result.request.reserves.total or result.request.rise_tpm is not None:
        for line in reserve_lines(result):
            out.print(line, markup=False)
    rows = [(f"SLA {fmt_num(r.sla_tok_s_user)}", r.ops) for r in result.rows]
    out.print(ops_table(rows))
    for line in ops_lines(rows):
        out.print(line, markup=False)
    if alt is not None:
        for line in context_lines(alt)[1:2] + list(alt.repairs):
            out.print("what-if " + line, markup=False)
        out.print(comparison_as_table(result, alt, deltas))


def _check_options(*, tpm, sla, tier, workload, pool, product, percentile, time_to_ready_min, warm, isl, osl,
                   prefill_curve, prefill_format, prefill_select, prefill_gpus_per_replica, compare_curve) -> None:
    """Options that cannot go together, or need another: one line each, before any work."""
    bad = [msg for cond, msg in (
        ((tpm is None) == (workload is None), "give the traffic as exactly one of --tpm or --workload PERIOD"),
        (workload is not None and (isl is not None or osl is not None),
         "--isl and --osl come from --workload (its mean ISL and OSL); leave them out"),
        (workload is None and (pool is not None or product is not None or percentile != "p99"
                               or time_to_ready_min is not None),
         "--pool, --product, --percentile and --time-to-ready-min read the traffic: also give --workload"),
        (time_to_ready_min is not None and time_to_ready_min < 1, "--time-to-ready-min must be a whole number >= 1"),
        (time_to_ready_min is not None and warm, "give the warm reserve as --warm N or from --time-to-ready-min, "
                                                 "not both"),
        (bool(tier) and sla is not None, "--sla and --tier: each tier carries its own SLA; give one or the other"),
        (not tier and sla is None, "give the SLA: --sla 20,50,100, or tiers with --tier NAME:SHARE:SLA[:TTFT_MS]"),
        (prefill_curve is not None and not tier and sla is not None and len(sla.split(",")) != 1,
         "a disaggregated pool is sized at one SLA (or per --tier), not a list"),
        (prefill_curve is None and (prefill_format != "auto" or prefill_select is not None
                                    or prefill_gpus_per_replica is not None),
         "--prefill-format, --prefill-select and --prefill-gpus-per-replica need --prefill-curve"),
        (bool(compare_curve) and (bool(tier) or prefill_curve is not None),
         "--compare-curve compares plain sizings; leave out --tier and --prefill-curve"),
    ) if cond]
    if bad:
        _fail(bad)


def _workload(period: str, pool, product, percentile: str, time_to_ready_min):
    """The sizing inputs from the ledger's own traffic (ledger.workload, read lazily)."""
    from ledger import console
    from ledger.workload import workload as read_workload

    from .traffic import workload_inputs

    with console.Ledger() as s:
        try:
            w = read_workload(s, period, pool=pool, product=product, ramp_minutes=time_to_ready_min or 10)
        except ValueError as e:
            _fail(getattr(e, "problems", None) or str(e).splitlines())
    return workload_inputs(w, percentile, time_to_ready_min=time_to_ready_min)


def _price(device, region, purchase_option, at, hours_per_month, pricebooks):
    """The GPU price in force and the pricing keywords, or None when no device is given."""
    if device is None and region is None and purchase_option is None:
        return None
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
    return price, dict(device=device, region=region, purchase_option=purchase_option, at=when, hours_per_month=hours)


def _print_pool(result, as_json: bool, as_csv: bool = False) -> None:
    """A pool in parts: the JSON, the CSV, or the context, the table, the reserves and the operations table."""
    from .pool_report import pool_as_dict, pool_as_table, pool_lines, pool_ops, pool_reserve_lines

    if as_json:
        sys.stdout.write(json.dumps(pool_as_dict(result), indent=2) + "\n")
        return
    if as_csv:
        from .report_csv import pool_as_csv

        sys.stdout.write(pool_as_csv(pool_as_dict(result)))
        return
    out = Console(highlight=False)  # prose wraps at the terminal width, like the tables
    for line in pool_lines(result):
        out.print(line, markup=False)
    out.print(pool_as_table(result))
    if result.ratio:
        out.print(f"disaggregated: {result.ratio} serving (prefill : decode replicas), "
                  f"{result.ratio_with_reserves} with the reserves", markup=False)
    for line in pool_reserve_lines(result):
        out.print(line, markup=False)
    table, lines = pool_ops(result)
    out.print(table)
    for line in lines:
        out.print(line, markup=False)


def register(app: typer.Typer) -> None:
    """Add `ledger size` to the main app."""
    app.command("size")(size_command)
