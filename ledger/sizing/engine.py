"""SLA-first sizing: the SLA picks c*, c* sets the replica throughput, that sets replicas and GPUs."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal

from .curve import Curve, SizingError, curve_problems, fmt_num, validate_curve
from .ops import Ops, replica_ops, warm_replicas

VERDICT, DRAFT = "VERDICT", "DRAFT"
#: A ratio within this of an integer is that integer before ceil(): float noise never adds a replica.
_CEIL_DIGITS = 9
_REL = 1e-12


@dataclass(frozen=True)
class Reserves:
    """Replicas provisioned beyond the serving ones (counts of replicas, each `gpus_per_replica` GPUs):
    `failure` (N+K failover), `canary` (new versions under test), `warm` (pre-started for bursts)."""

    failure: int = 0
    canary: int = 0
    warm: int = 0

    @property
    def total(self) -> int:
        return self.failure + self.canary + self.warm


@dataclass(frozen=True)
class OperatingPoint:
    """Where a replica runs for one SLA.

    - `c_star`: requests in flight per replica (count; fractional when interpolated or derived by
      Little's law).
    - `tok_s_user`: tok/s each user sees at c* [token/s/user] (>= the SLA).
    - `replica_output_tok_s`: aggregate output tok/s of one replica at c* [token/s].
    - `throughput_basis`: ``measured`` (the point's measured aggregate), ``derived`` (c* x tok/s/user)
      or ``interpolated`` (between two points' aggregates, linear in log concurrency; DRAFT only).
    - `measured`: True when c* is a measured point.
    - `limited_by`: what stops a higher concurrency: ``sla``, ``ttft``, ``kv_cap`` (joined by ``+``),
      ``curve_end`` (the highest measured concurrency meets everything) or ``throughput_peak``
      (a higher concurrency would still meet the limits but serve fewer tok/s; DRAFT only).
    - `ttft_ms`: TTFT at c* [ms] (interpolated like tok/s/user in DRAFT mode), or None when not measured.
    """

    c_star: float
    tok_s_user: float
    replica_output_tok_s: float
    throughput_basis: str
    measured: bool
    limited_by: str
    ttft_ms: float | None = None


@dataclass(frozen=True)
class SizingRow:
    """The sizing at one SLA.

    - `sla_tok_s_user`: the interactivity SLA [token/s/user].
    - `c_star`, `tok_s_user`, `replica_output_tok_s`, `throughput_basis`, `c_star_measured`,
      `limited_by`: the operating point (see OperatingPoint).
    - `replicas_serving` = ceil((TPM / 60) / (replica_output_tok_s x util)); `replicas_reserve` the
      reserves; `replicas` their sum; `gpus` = replicas x gpus_per_replica (counts).
    - `capacity_tokens_per_gpu_s`: active (input + output) tokens per GPU-second at c*, or None
      without ISL/OSL: replica_output_tok_s x (ISL + OSL) / OSL / gpus_per_replica.
    - `monthly_cost`: GPUs x hours per month x price per GPU-hour [currency], Decimal at the ledger
      precision, or None when not priced.
    - `ttft_ms`: TTFT at c* [ms], or None.
    - `reserves`: the reserve replicas of this row (the warm reserve may come from a traffic rise,
      per row); `warm_reason` says how the warm reserve was derived ("" when given as a count).
    - `ops`: what operations configure per replica (ops.Ops), or None.
    """

    sla_tok_s_user: float
    c_star: float
    tok_s_user: float
    replica_output_tok_s: float
    throughput_basis: str
    c_star_measured: bool
    limited_by: str
    replicas_serving: int
    replicas_reserve: int
    replicas: int
    gpus: int
    capacity_tokens_per_gpu_s: float | None = None
    monthly_cost: Decimal | None = None
    ttft_ms: float | None = None
    reserves: Reserves = field(default_factory=Reserves)
    warm_reason: str = ""
    ops: Ops | None = None


@dataclass(frozen=True, kw_only=True)
class SizingSpec:
    """What every sizing asks for, whatever its shape (a plain sizing at several SLAs, a pool in
    tiers or prefill/decode parts, one pool at one SLA): the fields :class:`SizingRequest` and
    ``tiers.PoolRequest`` share, and the defaults ``ledger size`` and the dashboard start from.

    - `tpm`: output tokens per minute to serve [token/min] (> 0).
    - `gpus_per_replica`: GPUs per replica (count >= 1).
    - `util`: planned utilization of a replica's throughput, in (0, 1] (headroom for TTFT and failover).
    - `reserves`: extra replicas (failure, canary, warm).
    - `interpolate`: solve between measured points (linear in log concurrency): a DRAFT.
    - `ttft_limit_ms`: highest acceptable TTFT at c* [ms], or None.
    - `kv_cap`: highest concurrency the KV cache holds at the workload's ISL+OSL (count), or None.
    - `isl`, `osl`: the workload's mean input and output tokens per request [token], or None (then
      the curve's are used).
    - `repair`: drop dominated points (upper envelope) instead of failing.
    - `rise_tpm`: the largest rise of output TPM over `time_to_ready_min` minutes [token/min], or
      None; when given, the warm reserve is the replicas that rise needs (`reserves.warm` must
      then be 0).
    - `time_to_ready_min`: minutes a new replica needs to serve [min], or None.
    - `workload_shape`: ISL/OSL come from measured traffic: a curve measured at another shape is
      warned about beyond 25 %, not refused beyond 10 %.

    Built by keyword only (``SizingSpec(tpm=..., gpus_per_replica=...)``).
    """

    tpm: float
    gpus_per_replica: int
    util: float = 0.7
    reserves: Reserves = field(default_factory=Reserves)
    interpolate: bool = False
    ttft_limit_ms: float | None = None
    kv_cap: float | None = None
    isl: float | None = None
    osl: float | None = None
    repair: bool = False
    rise_tpm: float | None = None
    time_to_ready_min: float | None = None
    workload_shape: bool = False


@dataclass(frozen=True, kw_only=True)
class SizingRequest(SizingSpec):
    """What to size for: the fields of :class:`SizingSpec`, and `slas`, the interactivity SLAs
    [token/s/user], each > 0 and distinct (one row each)."""

    slas: tuple[float, ...]


def spec_of(spec: SizingSpec, **changes) -> SizingSpec:
    """The fields `spec` shares with every sizing (a SizingRequest or PoolRequest seen as a
    plain SizingSpec), with `changes` applied."""
    base = SizingSpec(**{f.name: getattr(spec, f.name) for f in fields(SizingSpec)})
    return replace(base, **changes) if changes else base


@dataclass(frozen=True)
class SizingResult:
    """A sizing: `status` (VERDICT: measured points only; DRAFT: interpolated), the `curve` used
    (after any repair), the `request`, the workload `isl`/`osl` used, one row per SLA (ascending),
    the `repairs` made to the curve, the `memory` fit (a MemoryFit, or None), the `pricing`
    (a cost.PricingBasis, or None), `warnings` (one line each: a curve measured at another shape
    than the workload's) and the `workload` the request came from (a traffic.WorkloadInputs, or None)."""

    status: str
    curve: Curve
    request: SizingRequest
    rows: tuple[SizingRow, ...]
    isl: float | None = None
    osl: float | None = None
    repairs: tuple[str, ...] = ()
    memory: object | None = None
    pricing: object | None = None
    warnings: tuple[str, ...] = ()
    workload: object | None = None


# ----------------------------------------------------------------------------- checks on inputs

def request_problems(*, tpm: float, slas, gpus_per_replica: int, util: float, reserves: Reserves,
                     ttft_limit_ms: float | None = None, kv_cap: float | None = None,
                     isl: float | None = None, osl: float | None = None, rise_tpm: float | None = None) -> list[str]:
    """Everything wrong with the sizing inputs, one line each."""
    out = []

    def finite(x) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

    if not finite(tpm) or tpm <= 0:
        out.append(f"TPM must be > 0 (got {tpm!r})")
    if not finite(util) or not 0 < util <= 1:
        out.append(f"util must be in (0, 1] (got {util!r})")
    if not isinstance(gpus_per_replica, int) or isinstance(gpus_per_replica, bool) or gpus_per_replica < 1:
        out.append(f"GPUs per replica must be a whole number >= 1 (got {gpus_per_replica!r})")
    if not slas:
        out.append("no SLA given")
    for s in slas:
        if not finite(s) or s <= 0:
            out.append(f"SLA must be > 0 tok/s/user (got {s!r})")
    if len(set(slas)) != len(slas):
        out.append(f"an SLA is given twice: {', '.join(fmt_num(s) for s in slas)}")
    for name, v in (("failure reserve", reserves.failure), ("canary", reserves.canary), ("warm reserve", reserves.warm)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            out.append(f"{name} must be a whole number of replicas >= 0 (got {v!r})")
    if ttft_limit_ms is not None and (not finite(ttft_limit_ms) or ttft_limit_ms <= 0):
        out.append(f"TTFT limit must be > 0 ms (got {ttft_limit_ms!r})")
    if kv_cap is not None and (not finite(kv_cap) or kv_cap <= 0):
        out.append(f"KV concurrency cap must be > 0 (got {kv_cap!r}): the KV cache holds no whole sequence")
    if isl is not None and (not finite(isl) or isl < 0):
        out.append(f"ISL must be >= 0 tokens (got {isl!r})")
    if osl is not None and (not finite(osl) or osl <= 0):
        out.append(f"OSL must be > 0 tokens (got {osl!r})")
    if rise_tpm is not None:
        if not finite(rise_tpm):
            out.append(f"the traffic rise must be a finite TPM (got {rise_tpm!r})")
        if reserves.warm:
            out.append("give the warm reserve as a count or from the traffic rise (time to ready), not both")
    return out


# ------------------------------------------------------------------------------ operating point

def _constraint_names(t: float, ttft: float | None, c: float, sla: float, ttft_limit: float | None,
                      kv_cap: float | None) -> list[str]:
    """The limits a (t, ttft, c) violates."""
    bad = []
    if t < sla:
        bad.append("sla")
    if ttft_limit is not None and ttft is not None and ttft > ttft_limit:
        bad.append("ttft")
    if kv_cap is not None and c > kv_cap:
        bad.append("kv_cap")
    return bad


def _infeasible(curve: Curve, sla: float, ttft_limit: float | None, kv_cap: float | None) -> SizingError:
    """Why no point meets an SLA, naming the points."""
    pts = curve.points
    best = max(pts, key=lambda p: p.tok_s_user)
    src = curve.context.source
    if sla > best.tok_s_user:
        return SizingError(f"{src}: SLA {fmt_num(sla)} tok/s/user is above the best measured point, "
                           f"{best.describe()}; no concurrency meets it")
    why = []
    for p in pts:
        if p.tok_s_user < sla:
            continue
        parts = []
        if ttft_limit is not None and p.ttft_ms is not None and p.ttft_ms > ttft_limit:
            parts.append(f"TTFT {fmt_num(p.ttft_ms)} ms > {fmt_num(ttft_limit)} ms")
        if kv_cap is not None and p.concurrency > kv_cap:
            parts.append(f"concurrency above the KV cap of {fmt_num(kv_cap)}")
        why.append(f"c={fmt_num(p.concurrency)} ({', '.join(parts)})")
    return SizingError(f"{src}: no point meets SLA {fmt_num(sla)} tok/s/user within the limits: {'; '.join(why)}")


def _measured_point(curve: Curve, sla: float, ttft_limit: float | None, kv_cap: float | None) -> OperatingPoint:
    """c* = the highest measured concurrency whose tok/s/user >= SLA (and TTFT <= limit, c <= KV cap)."""
    pts = curve.points
    ok = [i for i, p in enumerate(pts) if not _constraint_names(p.tok_s_user, p.ttft_ms, p.concurrency,
                                                                   sla, ttft_limit, kv_cap)]
    if not ok:
        raise _infeasible(curve, sla, ttft_limit, kv_cap)
    i = ok[-1]
    p = pts[i]
    if i == len(pts) - 1:
        limited = "curve_end"
    else:
        q = pts[i + 1]
        limited = "+".join(_constraint_names(q.tok_s_user, q.ttft_ms, q.concurrency, sla, ttft_limit, kv_cap))
    return OperatingPoint(c_star=p.concurrency, tok_s_user=p.tok_s_user, replica_output_tok_s=p.replica_output_tok_s,
                          throughput_basis="measured" if p.output_tok_s is not None else "derived", measured=True,
                          limited_by=limited, ttft_ms=p.ttft_ms)


def _interval(ga: float, gb: float, bound: float, at_least: bool) -> tuple[float, float] | None:
    """The u in [0, 1] where g(u) = ga + (gb - ga) u is >= bound (`at_least`) or <= bound."""
    d = gb - ga
    if not at_least:
        ga, d, bound = -ga, -d, -bound
    if d == 0:
        return (0.0, 1.0) if ga >= bound else None
    u = (bound - ga) / d
    lo, hi = (max(0.0, u), 1.0) if d > 0 else (0.0, min(1.0, u))
    return (lo, hi) if lo <= hi else None


def _interpolated_point(curve: Curve, sla: float, ttft_limit: float | None, kv_cap: float | None) -> OperatingPoint:
    """The best operating point with interpolation between measured points (linear in log c).

    The feasible concurrencies (tok/s/user >= SLA, TTFT <= limit, c <= KV cap, each interpolated
    linearly in log c) form intervals; c* is where the replica serves the most output tok/s in
    them (ties: the higher c). On a segment where either end carries a measured aggregate, the
    throughput is interpolated between the ends' replica throughputs (basis ``interpolated``); on
    one without, it is c x tok/s/user(c) (``derived``). Either way it is continuous at the
    measured points. Taking the best over a set
    that only shrinks as the SLA tightens makes the GPU count monotone in the SLA by construction,
    and the measured answer is always one of the candidates (a DRAFT never needs more GPUs).
    """
    pts = curve.points
    cands: list[tuple[float, float, OperatingPoint]] = []
    for p in pts:
        if not _constraint_names(p.tok_s_user, p.ttft_ms, p.concurrency, sla, ttft_limit, kv_cap):
            op = OperatingPoint(c_star=p.concurrency, tok_s_user=p.tok_s_user,
                                replica_output_tok_s=p.replica_output_tok_s,
                                throughput_basis="measured" if p.output_tok_s is not None else "derived", measured=True,
                                limited_by="", ttft_ms=p.ttft_ms)
            cands.append((op.replica_output_tok_s, op.c_star, op))
    for a, b in zip(pts, pts[1:]):
        xa, dx = math.log(a.concurrency), math.log(b.concurrency) - math.log(a.concurrency)
        spans = [_interval(a.tok_s_user, b.tok_s_user, sla, True)]
        if ttft_limit is not None:
            spans.append(_interval(a.ttft_ms, b.ttft_ms, ttft_limit, False))
        if kv_cap is not None:
            spans.append(_interval(xa, xa + dx, math.log(kv_cap), False))
        if any(s is None for s in spans):
            continue
        lo, hi = max(s[0] for s in spans), min(s[1] for s in spans)
        if not lo <= hi:
            continue
        any_measured = a.output_tok_s is not None or b.output_tok_s is not None
        us = {lo, hi}
        if not any_measured:
            # c(u) t(u) = e^(xa + u dx) (ta + (tb - ta) u) peaks where t(u) = (ta - tb) / dx
            slope = (a.tok_s_user - b.tok_s_user) / dx
            if slope > 0:
                um = (a.tok_s_user - slope) / (a.tok_s_user - b.tok_s_user)
                if lo < um < hi:
                    us.add(um)
        for u in us:
            if u <= 0.0 or u >= 1.0:
                continue  # a measured end: already a candidate
            c = min(max(math.exp(xa + u * dx), a.concurrency), b.concurrency)
            if kv_cap is not None:
                c = min(c, kv_cap)  # exp(log(cap)) may land a hair above the cap: c* never exceeds it
            t = a.tok_s_user + (b.tok_s_user - a.tok_s_user) * u
            if abs(t - sla) <= _REL * sla:
                t = sla
            if any_measured:
                x, basis = a.replica_output_tok_s + (b.replica_output_tok_s - a.replica_output_tok_s) * u, "interpolated"
            else:
                x, basis = c * t, "derived"
            ttft = None if a.ttft_ms is None or b.ttft_ms is None else a.ttft_ms + (b.ttft_ms - a.ttft_ms) * u
            cands.append((x, c, OperatingPoint(c_star=c, tok_s_user=t, replica_output_tok_s=x, throughput_basis=basis,
                                               measured=False, limited_by="", ttft_ms=ttft)))
    if not cands:
        raise _infeasible(curve, sla, ttft_limit, kv_cap)
    top = max(x for x, _, _ in cands)
    best = max((c for x, c, _ in cands if x >= top * (1 - _REL)))
    op = next(o for x, c, o in cands if c == best)
    return replace(op, limited_by=_limit_above(curve, op.c_star, sla, ttft_limit, kv_cap))


def _limit_above(curve: Curve, c: float, sla: float, ttft_limit: float | None, kv_cap: float | None) -> str:
    """What an interpolated curve violates just above concurrency c."""
    pts = curve.points
    if c >= pts[-1].concurrency * (1 - _REL):
        return "curve_end"
    x = math.log(c) + 1e-9
    for a, b in zip(pts, pts[1:]):
        xa, xb = math.log(a.concurrency), math.log(b.concurrency)
        if xa <= x <= xb:
            u = (x - xa) / (xb - xa)
            t = a.tok_s_user + (b.tok_s_user - a.tok_s_user) * u
            ttft = None if a.ttft_ms is None or b.ttft_ms is None else a.ttft_ms + (b.ttft_ms - a.ttft_ms) * u
            bad = _constraint_names(t, ttft, math.exp(x), sla, ttft_limit, kv_cap)
            return "+".join(bad) if bad else "throughput_peak"
    return "curve_end"


def operating_point(curve: Curve, sla: float, *, interpolate: bool = False, ttft_limit_ms: float | None = None,
                    kv_cap: float | None = None) -> OperatingPoint:
    """Where a replica runs to give every user at least `sla` tok/s. The curve must be valid."""
    problems = curve_problems(curve)
    if problems:
        raise SizingError(problems)
    if ttft_limit_ms is not None:
        missing = [p for p in curve.points if p.ttft_ms is None]
        if missing:
            raise SizingError(f"{curve.context.source}: a TTFT limit needs TTFT at every point; none at "
                              + ", ".join(f"c={fmt_num(p.concurrency)}" for p in missing))
    solve = _interpolated_point if interpolate else _measured_point
    return solve(curve, sla, ttft_limit_ms, kv_cap)


# ------------------------------------------------------------------------------------- sizing

def capacity_tokens_per_gpu_s(replica_output_tok_s: float, isl: float, osl: float, gpus_per_replica: int) -> float:
    """Active tokens per GPU-second at c*. A replica completes replica_output_tok_s / OSL requests per
    second, each worth ISL + OSL active tokens: replica_output_tok_s x (ISL + OSL) / OSL, per GPU."""
    return replica_output_tok_s * (isl + osl) / osl / gpus_per_replica


def replicas_for(tpm: float, replica_output_tok_s: float, util: float) -> int:
    """ceil((TPM / 60) / (replica tok/s x util)); the ratio is rounded to 1e-9 first so that float
    noise (7.0000000001) never adds a replica."""
    return math.ceil(round((tpm / 60.0) / (replica_output_tok_s * util), _CEIL_DIGITS))


def size_pool(curve: Curve, spec: SizingSpec | None = None, *, sla: float, memory: object | None = None,
              **fields_) -> SizingRow:
    """One pool at one SLA (what a monthly budget calls): c*, replica throughput, replicas, GPUs, and
    what operations configure per replica. The pool is `spec` (any SizingSpec: its `isl`/`osl` as
    given, not the curve's), or a SizingSpec of the keyword `fields_` (``size_pool(curve, tpm=6_000,
    sla=100, gpus_per_replica=1)``), or `spec` with `fields_` changed. With `rise_tpm` the warm
    reserve is the replicas that rise needs (ops.warm_replicas); the `memory` fit (a MemoryFit) gives
    the KV-cache thresholds. The curve must already be valid (see `validate_curve`); inputs are
    checked and fail loudly."""
    if spec is None:
        spec = SizingSpec(**fields_)
    elif fields_:
        spec = replace(spec, **fields_)
    tpm, gpus_per_replica, util, reserves = spec.tpm, spec.gpus_per_replica, spec.util, spec.reserves
    isl, osl, ttft_limit_ms = spec.isl, spec.osl, spec.ttft_limit_ms
    problems = request_problems(tpm=tpm, slas=(sla,), gpus_per_replica=gpus_per_replica, util=util,
                                reserves=reserves, ttft_limit_ms=ttft_limit_ms, kv_cap=spec.kv_cap, isl=isl, osl=osl,
                                rise_tpm=spec.rise_tpm)
    if problems:
        raise SizingError(problems)
    op = operating_point(curve, sla, interpolate=spec.interpolate, ttft_limit_ms=ttft_limit_ms, kv_cap=spec.kv_cap)
    serving = replicas_for(tpm, op.replica_output_tok_s, util)
    warm_reason = ""
    if spec.rise_tpm is not None:
        warm, warm_reason = warm_replicas(rise_tpm=spec.rise_tpm, minutes=spec.time_to_ready_min,
                                          capacity_tok_s=op.replica_output_tok_s, util=util)
        reserves = replace(reserves, warm=warm)
    total = serving + reserves.total
    known = isl is not None and osl is not None
    cap = capacity_tokens_per_gpu_s(op.replica_output_tok_s, isl, osl, gpus_per_replica) if known else None
    ops = replica_ops(c_star=op.c_star, capacity_tok_s=op.replica_output_tok_s, util=util, rate_tok_s=tpm / 60.0,
                      replicas=serving, ttft_limit_ms=ttft_limit_ms, ttft_ms=op.ttft_ms, tokens_per_request=osl,
                      memory=memory)
    return SizingRow(sla_tok_s_user=sla, c_star=op.c_star, tok_s_user=op.tok_s_user,
                     replica_output_tok_s=op.replica_output_tok_s, throughput_basis=op.throughput_basis,
                     c_star_measured=op.measured, limited_by=op.limited_by, replicas_serving=serving,
                     replicas_reserve=reserves.total, replicas=total, gpus=total * gpus_per_replica,
                     capacity_tokens_per_gpu_s=cap, ttft_ms=op.ttft_ms, reserves=reserves, warm_reason=warm_reason,
                     ops=ops)


#: Typed ISL/OSL must be within 10 % of the curve's; ISL/OSL measured from traffic are warned about beyond 25 %.
SHAPE_TOLERANCE, WORKLOAD_SHAPE_TOLERANCE = 0.10, 0.25


def shape_check(ctx, *, gpus_per_replica: int, isl: float | None, osl: float | None, workload_shape: bool = False,
                what: str = "curve") -> tuple[list[str], list[str]]:
    """(problems, warnings) of a curve's context (a CurveContext) against the replica and the workload
    shape: another replica size is a problem; ISL/OSL more than 10 % apart (max-relative) a problem,
    or, when they come from measured traffic (`workload_shape`), more than 25 % from the workload's a
    warning that reports both."""
    problems: list[str] = []
    warnings: list[str] = []
    if ctx.gpus_per_replica is not None and ctx.gpus_per_replica != gpus_per_replica:
        problems.append(f"{ctx.source}: the {what} was measured on {ctx.gpus_per_replica} GPUs per replica, not "
                        f"{gpus_per_replica}: its throughput is that replica's")
    for name, want, got in (("ISL", isl, ctx.isl), ("OSL", osl, ctx.osl)):
        if want is None or got is None:
            continue
        if workload_shape:
            if want > 0 and abs(got - want) > WORKLOAD_SHAPE_TOLERANCE * want:
                warnings.append(f"warning: {ctx.source}: the {what} was measured at {name} {fmt_num(got, 0)}, the "
                                f"workload's mean {name} is {fmt_num(want, 0)} ({(got - want) / want:+.0%}): a curve "
                                f"measured at another shape is the most common sizing error")
        elif abs(want - got) > SHAPE_TOLERANCE * max(want, got):
            problems.append(f"{ctx.source}: the {what} was measured at {name} {fmt_num(got, 0)}, the workload has "
                            f"{fmt_num(want, 0)}: size with a curve measured at the workload's shape")
    return problems, warnings


def size(curve: Curve, request: SizingRequest, *, memory: object | None = None) -> SizingResult:
    """Size at every SLA of the request (ascending). Validates (or repairs) the curve, checks it
    matches the replica and workload, and fails loudly with one line per problem at any SLA."""
    problems = request_problems(tpm=request.tpm, slas=request.slas, gpus_per_replica=request.gpus_per_replica,
                                util=request.util, reserves=request.reserves, ttft_limit_ms=request.ttft_limit_ms,
                                kv_cap=request.kv_cap, isl=request.isl, osl=request.osl, rise_tpm=request.rise_tpm)
    if problems:
        raise SizingError(problems)
    curve, repairs = validate_curve(curve, repair=request.repair)
    shape, warnings = shape_check(curve.context, gpus_per_replica=request.gpus_per_replica, isl=request.isl,
                                  osl=request.osl, workload_shape=request.workload_shape)
    if shape:
        raise SizingError(shape)
    isl = request.isl if request.isl is not None else curve.context.isl
    osl = request.osl if request.osl is not None else curve.context.osl
    rows, errors = [], []
    for sla in sorted(request.slas):
        try:
            rows.append(size_pool(curve, spec_of(request, isl=isl, osl=osl), sla=sla, memory=memory))
        except SizingError as e:
            errors.extend(p for p in e.problems if p not in errors)
    if errors:
        raise SizingError(errors)
    return SizingResult(status=DRAFT if request.interpolate else VERDICT, curve=curve, request=request,
                        rows=tuple(rows), isl=isl, osl=osl, repairs=repairs, memory=memory,
                        warnings=tuple(warnings))
