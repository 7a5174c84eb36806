"""A pool in parts: SLA tiers (each its own share of the traffic, SLA and TTFT limit, served by its own
replicas on the same curve) and disaggregated prefill/decode replicas; the reserves per role; the sum."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation

from ledger.money import quantize

from ..hints import Hint, Hinted

from .cost import PricingBasis, monthly_cost, price_per_gpu_hour
from .curve import Curve, SizingError, fmt_num, validate_curve
from .disagg import PrefillCurve, prefill_point, validate_prefill, xpyd
from .engine import DRAFT, VERDICT, SizingSpec, request_problems, shape_check, size_pool
from .ops import Ops, replica_ops, warm_replicas

#: The library's words for a tier written as text (`ledger size --tier NAME:SHARE:SLA[:TTFT_MS]`).
TIER = Hint("tier", "tier")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_DIGITS = 9


@dataclass(frozen=True)
class Tier:
    """A class of traffic served by its own replicas: `name`, `share` of the pool's traffic (a Decimal
    in (0, 1]; the tiers' shares add up to exactly 1), `sla` [token/s/user] and `ttft_ms`, its TTFT
    limit [ms] (None: the pool's)."""

    name: str
    share: Decimal
    sla: float
    ttft_ms: float | None = None


def parse_tier(text: str) -> Tier:
    """``NAME:SHARE:SLA[:TTFT_MS]`` (``interactive:0.3:100:500``) as a Tier; SizingError naming the
    part that is wrong. The share is read as a decimal, exactly."""
    parts = [p.strip() for p in text.split(":")]
    if len(parts) not in (3, 4):
        raise SizingError(Hinted(TIER, f" {text!r}: write NAME:SHARE:SLA or NAME:SHARE:SLA:TTFT_MS, e.g. "
                                       "interactive:0.3:100"))
    errors = []
    try:
        share = Decimal(parts[1])
        if not share.is_finite():
            raise InvalidOperation
    except InvalidOperation:
        errors.append(Hinted(TIER, f" {text!r}: share {parts[1]!r} is not a decimal such as 0.3"))
        share = Decimal(0)
    nums = []
    for what, raw in (("SLA", parts[2]), ("TTFT limit", parts[3] if len(parts) == 4 else None)):
        if raw is None:
            nums.append(None)
            continue
        try:
            nums.append(float(raw))
        except ValueError:
            errors.append(Hinted(TIER, f" {text!r}: {what} {raw!r} is not a number"))
            nums.append(math.nan)
    if errors:
        raise SizingError(errors)
    return Tier(name=parts[0], share=share, sla=nums[0], ttft_ms=nums[1])


def tier_problems(tiers) -> list[str]:
    """Everything wrong with a pool's tiers, one line each: names (letters, digits, _ . -; distinct;
    one unnamed tier of share 1 is an untiered pool), shares in (0, 1] adding up to exactly 1, SLAs > 0,
    TTFT limits > 0."""
    out = []
    names = [t.name for t in tiers]
    untiered = len(tiers) == 1 and tiers[0].name == ""
    for t in tiers:
        if not untiered and not _NAME.match(t.name or ""):
            out.append(f"tier {t.name!r}: a name uses letters, digits, '_', '.', '-'")
        if not (isinstance(t.share, Decimal) and t.share.is_finite() and 0 < t.share <= 1):
            out.append(f"tier {t.name}: share {t.share} must be in (0, 1]")
        if not (isinstance(t.sla, (int, float)) and math.isfinite(t.sla) and t.sla > 0):
            out.append(f"tier {t.name}: SLA {t.sla!r} must be > 0 tok/s/user")
        if t.ttft_ms is not None and not (math.isfinite(t.ttft_ms) and t.ttft_ms > 0):
            out.append(f"tier {t.name}: TTFT limit {t.ttft_ms!r} must be > 0 ms")
    for n in sorted({n for n in names if names.count(n) > 1}):
        out.append(f"tier {n} is given twice")
    total = sum((t.share for t in tiers if isinstance(t.share, Decimal) and t.share.is_finite()), Decimal(0))
    if tiers and total != 1:
        out.append(f"the tiers' shares add up to {total}, not 1: "
                   + " + ".join(f"{t.name} {t.share}" for t in tiers))
    return out


@dataclass(frozen=True, kw_only=True)
class PoolRequest(SizingSpec):
    """What to size a pool in parts for: the fields of ``engine.SizingSpec`` (`tpm` in output
    token/min, `gpus_per_replica` of decode or serving replicas, `util`, `reserves` (failure and
    canary per role; warm as a count, or from `rise_tpm` over `time_to_ready_min`), `interpolate`
    (DRAFT), `ttft_limit_ms` (a tier's default), `kv_cap`, workload `isl`/`osl` [token], `repair`,
    `workload_shape`), and `tiers` (one untiered tier of share 1 for a plain disaggregated pool) and
    `prefill_gpus_per_replica` (None: the same as `gpus_per_replica`)."""

    tiers: tuple[Tier, ...]
    prefill_gpus_per_replica: int | None = None


@dataclass(frozen=True)
class PartRow:
    """One group of identical replicas: tier `tier` ("" untiered) in role `role` (``serving``, or
    ``prefill`` / ``decode`` when disaggregated).

    - `share` of the pool's traffic; `tpm` the tier's output TPM [token/min].
    - `rate_tok_s`: what the part serves [token/s]: output tok/s (serving, decode) = TPM / 60, or
      input tok/s (prefill) = TPM / 60 x ISL / OSL.
    - `sla_tok_s_user`, `c_star`, `tok_s_user`: the SLA-first operating point (None for prefill).
    - `ttft_limit_ms` applied, `ttft_ms` at the operating point.
    - `replica_tok_s`: one replica's tok/s there (output; input for prefill) [token/s].
    - `measured`, `basis`, `limited_by`: as in SizingRow (prefill: ``ttft`` or ``curve_end``).
    - `replicas` = ceil(rate / (replica_tok_s x util)); `gpus_per_replica`; `gpus` = replicas x that.
    - `ops`: per replica, for operations; `monthly_cost` when priced [currency]."""

    tier: str
    role: str
    share: Decimal
    tpm: float
    rate_tok_s: float
    sla_tok_s_user: float | None
    c_star: float | None
    tok_s_user: float | None
    ttft_limit_ms: float | None
    ttft_ms: float | None
    replica_tok_s: float
    measured: bool
    basis: str
    limited_by: str
    replicas: int
    gpus_per_replica: int
    gpus: int
    ops: Ops
    monthly_cost: Decimal | None = None


@dataclass(frozen=True)
class ReserveRow:
    """Reserve replicas of one role: `kind` (failure, canary, warm), `replicas`, `gpus_per_replica`,
    `gpus`, the `reason` (for warm, the rise and the arithmetic) and `monthly_cost` when priced."""

    role: str
    kind: str
    replicas: int
    gpus_per_replica: int
    gpus: int
    reason: str
    monthly_cost: Decimal | None = None


@dataclass(frozen=True)
class PoolResult:
    """A pool sized in parts: `status`, the (decode) `curve` and `prefill_curve` (None when not
    disaggregated), the `request`, one PartRow per tier and role, one ReserveRow per role and kind,
    the `isl`/`osl` used, `repairs`, `warnings`, the `memory` fit, the `pricing` and the `workload`."""

    status: str
    curve: Curve
    prefill_curve: PrefillCurve | None
    request: PoolRequest
    parts: tuple[PartRow, ...]
    reserves: tuple[ReserveRow, ...]
    isl: float | None
    osl: float | None
    repairs: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    memory: object | None = None
    pricing: PricingBasis | None = None
    workload: object | None = None

    def replicas(self, role: str | None = None, *, reserve: bool = True) -> int:
        """Replicas of a role (all roles when None), serving plus (unless `reserve` is False) reserve."""
        n = sum(p.replicas for p in self.parts if role in (None, p.role))
        return n + (sum(r.replicas for r in self.reserves if role in (None, r.role)) if reserve else 0)

    @property
    def gpus(self) -> int:
        return sum(p.gpus for p in self.parts) + sum(r.gpus for r in self.reserves)

    @property
    def monthly_cost(self) -> Decimal | None:
        if self.pricing is None:
            return None
        return sum((x.monthly_cost for x in (*self.parts, *self.reserves)), Decimal(0))

    @property
    def ratio(self) -> str | None:
        """The xPyD ratio of a disaggregated pool's serving replicas (``2P4D (1P2D)``), else None."""
        if self.prefill_curve is None:
            return None
        return xpyd(self.replicas("prefill", reserve=False), self.replicas("decode", reserve=False))

    @property
    def ratio_with_reserves(self) -> str | None:
        """The xPyD ratio with every reserve replica counted, else None."""
        if self.prefill_curve is None:
            return None
        return xpyd(self.replicas("prefill"), self.replicas("decode"))


def _ceil(x: float) -> int:
    return math.ceil(round(x, _DIGITS))


def size_parts(curve: Curve, request: PoolRequest, *, prefill: PrefillCurve | None = None,
               memory: object | None = None) -> PoolResult:
    """Size every tier on the same curve, SLA-first; with a `prefill` curve, each tier's prefill
    replicas from its input token rate at its TTFT limit and its decode replicas SLA-first on
    `curve` (the decode curve; the TTFT limit is the prefill's, not applied to decode). Reserves are
    held per role: failure and canary as given, warm as given or from the traffic rise (the sum
    over tiers of what each tier's share of the rise needs). Fails with one line per problem."""
    req, disagg = request, prefill is not None
    tiers = req.tiers
    pgpus = req.prefill_gpus_per_replica or req.gpus_per_replica
    problems = tier_problems(tiers) + request_problems(
        tpm=req.tpm, slas=(1.0,), gpus_per_replica=req.gpus_per_replica, util=req.util, reserves=req.reserves,
        ttft_limit_ms=req.ttft_limit_ms, kv_cap=req.kv_cap, isl=req.isl, osl=req.osl, rise_tpm=req.rise_tpm)
    if not tiers:
        problems.append("no tier given")
    if req.prefill_gpus_per_replica is not None and (not isinstance(pgpus, int) or pgpus < 1):
        problems.append(f"prefill GPUs per replica must be a whole number >= 1 (got {pgpus!r})")
    if problems:
        raise SizingError(problems)
    curve, repairs = validate_curve(curve, repair=req.repair)
    problems, warnings = shape_check(curve.context, gpus_per_replica=req.gpus_per_replica, isl=req.isl, osl=req.osl,
                                     workload_shape=req.workload_shape,
                                     what="decode curve" if disagg else "curve")
    isl = req.isl if req.isl is not None else curve.context.isl
    osl = req.osl if req.osl is not None else curve.context.osl
    if disagg:
        prefill, more = validate_prefill(prefill, repair=req.repair)
        repairs += more
        p2, w2 = shape_check(prefill.context, gpus_per_replica=pgpus, isl=isl, osl=None,
                             workload_shape=req.workload_shape, what="prefill curve")
        problems += p2
        warnings += w2
        if isl is None or osl is None:
            problems.append(Hinted("disaggregated sizing needs the workload's ISL and OSL (", Hint("isl_osl", "given"),
                                   ", or a decode curve that has them): the input token rate is TPM / 60 x ISL / OSL"))
        problems += [Hinted(f"tier {t.name or '(all)'}: a prefill curve is sized at a TTFT limit; give one",
                            Hint("ttft_limit", ""))
                     for t in tiers if (t.ttft_ms or req.ttft_limit_ms) is None]
    if problems:
        raise SizingError(problems)
    parts, errors = [], []
    for t in tiers:
        tpm_t = float(Decimal(repr(req.tpm)) * t.share) if t.share != 1 else req.tpm
        ttft = t.ttft_ms if t.ttft_ms is not None else req.ttft_limit_ms
        label = f"tier {t.name}: " if t.name else ""
        try:
            part = SizingSpec(tpm=tpm_t, gpus_per_replica=req.gpus_per_replica, util=req.util,
                              interpolate=req.interpolate, ttft_limit_ms=None if disagg else ttft, kv_cap=req.kv_cap,
                              isl=isl, osl=osl)
            row = size_pool(curve, part, sla=t.sla, memory=memory)
            parts.append(PartRow(
                tier=t.name, role="decode" if disagg else "serving", share=t.share, tpm=tpm_t, rate_tok_s=tpm_t / 60,
                sla_tok_s_user=t.sla, c_star=row.c_star, tok_s_user=row.tok_s_user,
                ttft_limit_ms=None if disagg else ttft, ttft_ms=row.ttft_ms, replica_tok_s=row.replica_output_tok_s,
                measured=row.c_star_measured, basis=row.throughput_basis, limited_by=row.limited_by,
                replicas=row.replicas_serving, gpus_per_replica=req.gpus_per_replica,
                gpus=row.replicas_serving * req.gpus_per_replica, ops=row.ops))
            if disagg:
                parts.insert(len(parts) - 1, _prefill_part(prefill, t, tpm_t, ttft, isl, osl, pgpus, req))
        except SizingError as e:
            errors.extend(Hinted(label, p) for p in e.problems if label + p not in errors)
    if errors:
        raise SizingError(errors)
    return PoolResult(status=DRAFT if req.interpolate else VERDICT, curve=curve, prefill_curve=prefill,
                      request=req, parts=tuple(parts), reserves=_reserves(parts, req, isl, osl, pgpus, disagg),
                      isl=isl, osl=osl, repairs=repairs, warnings=tuple(warnings), memory=memory)


def _prefill_part(prefill: PrefillCurve, t: Tier, tpm_t: float, ttft: float, isl: float, osl: float, gpus: int,
                  req: PoolRequest) -> PartRow:
    """A tier's prefill replicas: its input token rate over what one replica prefills at the TTFT limit x util."""
    op = prefill_point(prefill, ttft, interpolate=req.interpolate)
    rate = tpm_t / 60 * isl / osl
    n = _ceil(rate / (op.input_tok_s * req.util))
    ops = replica_ops(c_star=None, capacity_tok_s=op.input_tok_s, util=req.util, rate_tok_s=rate, replicas=n,
                      ttft_limit_ms=ttft, ttft_ms=op.ttft_ms, tokens_per_request=isl)
    return PartRow(tier=t.name, role="prefill", share=t.share, tpm=tpm_t, rate_tok_s=rate, sla_tok_s_user=None,
                   c_star=None, tok_s_user=None, ttft_limit_ms=ttft, ttft_ms=op.ttft_ms, replica_tok_s=op.input_tok_s,
                   measured=op.measured, basis="measured" if op.measured else "interpolated", limited_by=op.limited_by,
                   replicas=n, gpus_per_replica=gpus, gpus=n * gpus, ops=ops)


def _reserves(parts: list[PartRow], req: PoolRequest, isl, osl, pgpus: int, disagg: bool) -> tuple[ReserveRow, ...]:
    """Failure, canary and warm reserves of each role (rows with replicas only)."""
    out = []
    for role in (("prefill", "decode") if disagg else ("serving",)):
        gpus = pgpus if role == "prefill" else req.gpus_per_replica
        rows = [("failure", req.reserves.failure, "N+K: replicas that take over from failed ones"),
                ("canary", req.reserves.canary, "replicas that run a new version under test")]
        if req.rise_tpm is None:
            rows.append(("warm", req.reserves.warm, "pre-started replicas, given as a count"))
        else:
            n, why = 0, []
            for p in (p for p in parts if p.role == role):
                k, reason = warm_replicas(rise_tpm=req.rise_tpm, minutes=req.time_to_ready_min,
                                          capacity_tok_s=p.replica_tok_s, util=req.util, share=float(p.share),
                                          input_per_output=isl / osl if role == "prefill" else 1.0,
                                          what="input" if role == "prefill" else "output")
                n += k
                why.append(f"{p.tier}: {reason}" if p.tier else reason)
            rows.append(("warm", n, "; ".join(why)))
        out += [ReserveRow(role=role, kind=k, replicas=n, gpus_per_replica=gpus, gpus=n * gpus, reason=why)
                for k, n, why in rows if n]
    return tuple(out)


def priced_parts(result: PoolResult, price, *, device: str, region: str, purchase_option: str, at,
                 hours_per_month: Decimal) -> PoolResult:
    """The result with every part's and reserve's monthly cost = GPUs x hours x the price per GPU-hour
    (each rounded once to the ledger precision; the pool's cost is their exact sum)."""
    if not isinstance(hours_per_month, Decimal) or not hours_per_month.is_finite() or hours_per_month <= 0:
        raise SizingError(f"hours per month must be a positive decimal (got {hours_per_month!r})")
    per_hour = price_per_gpu_hour(price.price, price.per)
    basis = PricingBasis(device=device, region=region, purchase_option=purchase_option, at=at,
                         hours_per_month=hours_per_month, price=price.price, per=price.per, currency=price.currency,
                         price_per_gpu_hour=per_hour, book=price.book, version=price.version,
                         source_url=price.source_url)
    parts = tuple(replace(p, monthly_cost=monthly_cost(p.gpus, per_hour, hours_per_month)) for p in result.parts)
    res = tuple(replace(r, monthly_cost=monthly_cost(r.gpus, per_hour, hours_per_month)) for r in result.reserves)
    return replace(result, parts=parts, reserves=res, pricing=basis)


def describe_tier(t: Tier) -> str:
    """``interactive 30 % at 100 tok/s/user, TTFT <= 500 ms``."""
    ttft = f", TTFT <= {fmt_num(t.ttft_ms)} ms" if t.ttft_ms is not None else ""
    return f"{t.name} {quantize(t.share * 100, Decimal('0.01')).normalize():f} % at {fmt_num(t.sla)} tok/s/user{ttft}"
