"""One sizing, as ``ledger size`` and the dashboard's sizing page both ask for it: a typed, frozen
:class:`SizingJob` in (what to size, and where the curve, the traffic, the memory fit and the price
come from), a :class:`SizingOutcome` out (the sized and priced result, and a what-if beside it).

The command parses its options into a job and renders the outcome; the page builds a job from its
inputs, which start from the job's own defaults (:func:`default`), so that the page and the command
agree by construction. A plain job (SLAs) is sized by ``engine.size``; a job with tiers or a prefill
curve is a pool in parts (``tiers.size_parts``). Problems are :class:`~ledger.sizing.SizingError`
lines in the library's words, with hints (:mod:`ledger.hints`) a command words as its options.
"""
from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, fields, replace
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

from ..hints import Hint, Hinted
from .cost import ComparisonRow, compare, priced
from .curve import Curve, SizingError
from .engine import SizingRequest, SizingResult, SizingSpec, size, spec_of
from .loaders import load_curve
from .tiers import PoolRequest, PoolResult, Tier, priced_parts, size_parts
from .traffic import WorkloadInputs, workload_inputs


def default(record: type, name: str):
    """The default of the field `name` of the dataclass `record` (a default factory called): what a
    job assumes when the field is not given (``default(SizingJob, "util")`` is 0.7)."""
    for f in fields(record):
        if f.name == name:
            if f.default_factory is not MISSING:
                return f.default_factory()
            if f.default is MISSING:
                raise KeyError(f"{record.__name__}.{name} has no default")
            return f.default
    raise KeyError(f"{record.__name__} has no field {name}")


@dataclass(frozen=True, kw_only=True)
class CurveSource:
    """Where a measured curve comes from: `anchors` (``"c:tok_s_user,..."``), else `files` (several
    are merged into one curve, one file per load level), each read in `format` (``auto``: detected),
    `select` picking one curve in a file of several (a piece of its source, model or workload)."""

    anchors: str | None = None
    files: tuple[Path, ...] = ()
    format: str = "auto"
    select: str | None = None

    def load(self) -> Curve:
        if self.anchors is not None:
            return load_curve(self.anchors, "anchors")
        return load_curve(list(self.files), self.format, self.select)

    def load_prefill(self):
        """The one prefill curve of the one file (disagg.PrefillCurve)."""
        from .disagg import load_prefill_curve

        (path,) = self.files
        return load_prefill_curve(path, self.format, self.select)


@dataclass(frozen=True, kw_only=True)
class MemorySpec:
    """The memory fit that caps c* at what the KV cache holds: the model's `model_config`
    (config.json), per GPU the `weights_gib`, the memory `gpu_mem_gib` and the `workspace_gib`
    (activation peak and non-torch memory) [GiB], the `kv_dtype`, `mem_util` (the share of GPU memory
    the engine uses), and for a hybrid model `max_model_len` [token] (None: the config's) and
    `mamba_cache_mode` (``none`` or ``align``)."""

    model_config: Path
    weights_gib: float
    gpu_mem_gib: float
    workspace_gib: float
    kv_dtype: str = "bf16"
    mem_util: float = 0.9
    max_model_len: int | None = None
    mamba_cache_mode: str = "none"


@dataclass(frozen=True, kw_only=True)
class PriceSpec:
    """The GPU-time price every monthly cost takes: the price of `device` in `region` under
    `purchase_option` in force at `at` (None: now), for `hours_per_month` hours a month, from
    `books` (price book records; None: the ledger's loaded books, else the shipped ones)."""

    device: str
    region: str
    purchase_option: str
    at: datetime | None = None
    hours_per_month: Decimal = Decimal("730")
    books: tuple | None = None


@dataclass(frozen=True, kw_only=True)
class TrafficSpec:
    """Sizing from the ledger's own traffic: the month `period` (``YYYY-MM``) or the window
    [`start`, `end`), of `pool`'s and `product`'s requests (None: all), its per-minute TPM at
    `percentile` (p50, p95, p99, max or mean), and with `time_to_ready_min` [min] the largest rise
    over that many minutes (the warm reserve)."""

    period: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    pool: str | None = None
    product: str | None = None
    percentile: str = "p99"
    time_to_ready_min: int | None = None


def read_traffic(session, spec: TrafficSpec) -> WorkloadInputs:
    """The sizing inputs of `spec` from the ledger's request facts (through `session`): TPM, ISL,
    OSL and the rise. WorkloadError or SizingError with one line per problem."""
    from ledger.workload import workload

    span = {} if spec.start is None else {"start": spec.start, "end": spec.end}
    w = workload(session, spec.period, **span, pool=spec.pool, product=spec.product,
                 ramp_minutes=spec.time_to_ready_min or 10)
    return workload_inputs(w, spec.percentile, time_to_ready_min=spec.time_to_ready_min)


@dataclass(frozen=True, kw_only=True)
class SizingJob(SizingSpec):
    """A job for the sizing service: the fields every sizing shares (``engine.SizingSpec``: `tpm`,
    `gpus_per_replica`, `util`, `reserves`, `interpolate`, `ttft_limit_ms`, `isl`, `osl`,
    `repair`, ...), and

    - `curve`: the measured curve (a Curve, or a :class:`CurveSource` to load).
    - `slas`: the SLAs [token/s/user] of a plain sizing (one row each); a disaggregated pool
      without tiers takes the one SLA given.
    - `tiers`: SLA tiers (``tiers.Tier``): the pool is sized in parts, one per tier.
    - `prefill`: a :class:`CurveSource` of one prefill curve: disaggregated prefill/decode parts
      (`curve` is then the decode curve), `prefill_gpus_per_replica` (None: `gpus_per_replica`).
    - `compare`: a what-if curve (plain sizings only): the same job on it, and the deltas.
    - `memory`: the memory fit (:class:`MemorySpec`), or None.
    - `price`: the GPU price (:class:`PriceSpec`), or None (not priced).
    - `workload`: the traffic it was read from (``traffic.WorkloadInputs``, :func:`read_traffic`),
      or None: its TPM, ISL, OSL, rise and time to ready then replace the job's own.
    """

    curve: Curve | CurveSource
    slas: tuple[float, ...] = ()
    tiers: tuple[Tier, ...] = ()
    prefill: CurveSource | None = None
    prefill_gpus_per_replica: int | None = None
    compare: CurveSource | None = None
    memory: MemorySpec | None = None
    price: PriceSpec | None = None
    workload: WorkloadInputs | None = None

    @property
    def in_parts(self) -> bool:
        """Sized in parts: SLA tiers, or disaggregated prefill/decode."""
        return bool(self.tiers) or self.prefill is not None


@dataclass(frozen=True)
class SizingOutcome:
    """What the service gives back: the `job` as sized (its traffic applied), the `result` (an
    ``engine.SizingResult``, or a ``tiers.PoolResult`` for a pool in parts), and for a what-if the
    `alt` result on the other curve and the `deltas` (``cost.ComparisonRow`` per SLA)."""

    job: SizingJob
    result: SizingResult | PoolResult
    alt: SizingResult | None = None
    deltas: tuple[ComparisonRow, ...] | None = None


def run(job: SizingJob) -> SizingOutcome:
    """Size `job`: load its curve, fit its memory, size it (plain or in parts), size the what-if,
    price both. SizingError (one line per problem), or the price book's NoPriceError."""
    job = _with_traffic(job)
    if job.in_parts and job.compare is not None:
        raise SizingError("a what-if compares plain sizings: no tiers and no prefill curve")
    curve = job.curve.load() if isinstance(job.curve, CurveSource) else job.curve
    if not math.isfinite(job.tpm) or job.tpm <= 0:
        raise SizingError(Hinted(Hint("tpm", "TPM"), f" must be > 0 (got {job.tpm:g})"))
    fit = _memory_fit(job, curve)
    kv_cap = None if fit is None else fit.concurrency_cap
    if job.in_parts:
        result, alt = _in_parts(job, curve, fit, kv_cap), None
    else:
        request = SizingRequest(**_spec_fields(job, kv_cap=kv_cap), slas=job.slas)
        result = replace(size(curve, request, memory=fit), workload=job.workload)
        alt = None if job.compare is None else size(job.compare.load(), request, memory=fit)
    if job.price is not None:
        result, alt = _priced(job, result, alt)
    return SizingOutcome(job=job, result=result, alt=alt, deltas=None if alt is None else compare(result, alt))


def _with_traffic(job: SizingJob) -> SizingJob:
    """The job with the TPM, ISL, OSL, rise and time to ready of the traffic it was read from."""
    w = job.workload
    if w is None:
        return job
    return replace(job, tpm=w.tpm, isl=w.isl, osl=w.osl, rise_tpm=w.rise_tpm, time_to_ready_min=w.time_to_ready_min,
                   workload_shape=True)


def _spec_fields(job: SizingJob, **changes) -> dict:
    spec = spec_of(job, **changes)
    return {f.name: getattr(spec, f.name) for f in fields(SizingSpec)}


def _memory_fit(job: SizingJob, curve: Curve):
    """The memory fit of the job's model on one replica at the workload's ISL and OSL, or None."""
    m = job.memory
    if m is None:
        return None
    from .memory import memory_fit
    from .model_config import load_model_config

    isl = job.isl if job.isl is not None else curve.context.isl
    osl = job.osl if job.osl is not None else curve.context.osl
    if isl is None or osl is None:
        raise SizingError(Hinted("the memory fit needs the workload's ISL and OSL", Hint("give_isl_osl", ""),
                                 " (the curve has none)"))
    return memory_fit(load_model_config(m.model_config), kv_dtype=m.kv_dtype, gpu_mem_gib=m.gpu_mem_gib,
                      weights_gib=m.weights_gib, workspace_gib=m.workspace_gib, mem_util=m.mem_util,
                      gpus=job.gpus_per_replica, isl=isl, osl=osl, max_model_len=m.max_model_len,
                      mamba_cache_mode=m.mamba_cache_mode)


def _in_parts(job: SizingJob, curve: Curve, fit, kv_cap):
    """A pool in parts: every tier (or the one SLA of an untiered disaggregated pool) and role."""
    tiers = tuple(job.tiers)
    if not tiers:
        if len(job.slas) != 1:
            raise SizingError("a disaggregated pool is sized at one SLA (or per tier), not a list")
        tiers = (Tier("", Decimal(1), job.slas[0]),)
    prefill = None if job.prefill is None else job.prefill.load_prefill()
    request = PoolRequest(**_spec_fields(job, kv_cap=kv_cap), tiers=tiers,
                          prefill_gpus_per_replica=job.prefill_gpus_per_replica)
    return replace(size_parts(curve, request, prefill=prefill, memory=fit), workload=job.workload)


def price_index(books):
    """The PriceIndex of `books`, or when None the ledger's (its loaded books, else the shipped ones)."""
    from ledger import pricebook, store

    return store.default_index() if books is None else pricebook.PriceIndex(list(books))


def _priced(job: SizingJob, result, alt):
    """The result (and the what-if) with the monthly cost of the GPU price in force."""
    p = job.price
    when = p.at or datetime.now(timezone.utc).replace(microsecond=0)  # an instant people read: whole seconds
    price = price_index(p.books).price_at(meter="gpu_time", sku=p.device, region=p.region,
                                          purchase_option=p.purchase_option, at=when)
    basis = dict(device=p.device, region=p.region, purchase_option=p.purchase_option, at=when,
                 hours_per_month=p.hours_per_month)
    if job.in_parts:
        return priced_parts(result, price, **basis), None
    return priced(result, price, **basis), None if alt is None else priced(alt, price, **basis)
