"""GPU share: request weights per pool-hour, the split coefficients and flags, and the largest-remainder split."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext

import duckdb

from ..hints import Hint, Hinted
from ..instants import iso
from ..money import from_micros, quantize, to_micros
from . import sql
from .engines import DUCKDB
from .pricing import PoolHour, _Group
from .records import Flag, Policy, _at, _scale
from .tables import COEFF, GPU_GROUPS, GPU_SPLIT


def _gpu_groups(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, int], tuple[int, int]]:
    """§4.2 Table :data:`.tables.GPU_GROUPS` (:data:`.sql.GPU_GROUPS`, in `con`): per pool, hour and (tenant,
    product, model, work) the integer weight `w` (computed in the pass of :func:`._prepare`), requests `n` and
    active tokens. Returns {(pool, hour): (W, requests without latency)}.

    It reads only the request groups, a small table already in `con` whatever engine made them, so it runs
    on `con`'s DuckDB for every engine, as the split does (on Spark each was a job and a copy back: 3 s of a
    10M-request month's 33 s, docs/scale.md)."""
    DUCKDB.create(con, GPU_GROUPS, sql.GPU_GROUPS)
    return {(pool, hour): (int(w), int(nl)) for pool, hour, w, nl in con.execute(
        f"SELECT pool, hour, sum(w), sum(no_latency) FROM {GPU_GROUPS} GROUP BY ALL").fetchall()}


# ---- 3. GPU share: coefficients ----------------------------------------------------------------

@dataclass(frozen=True)
class Coefficient:
    """How C_serve of one pool-hour splits: `c` micro-units over request weights summing to `w`
    plus idle slack weight `slack` (denominator `d` = w + slack = max(K, W), or W when K is
    unknown); `slack_gpu_s` the unused serving GPU-seconds."""

    pool: str
    hour: int
    c: int
    w: int
    slack: int
    slack_gpu_s: Decimal

    @property
    def d(self) -> int:
        return self.w + self.slack


def gpu_coefficients(fleet: Mapping[tuple[str, int], PoolHour], weights: Mapping[tuple[str, int], tuple[int, int]],
                     policy: Policy) -> tuple[list[Coefficient], list[Flag], list[str]]:
    """§4.3 For each pool-hour: the split denominators and idle slack, the flags, and problems
    (kv_token_seconds basis with requests lacking latency)."""
    scale = {pool: _scale(w) for pool, w in policy.weights}
    coeffs: list[Coefficient] = []
    flags: list[Flag] = []
    problems: list[str] = []
    no_latency_n: dict[str, int] = defaultdict(int)
    no_latency_first: dict[str, int] = {}
    for key in sorted(set(fleet) | set(weights)):
        pool, hour = key
        ph = fleet.get(key)
        w, no_latency = weights.get(key, (0, 0))
        if policy.basis == "kv_token_seconds" and no_latency:
            no_latency_n[pool] += no_latency
            no_latency_first.setdefault(pool, hour)
        if ph is None or not ph.serving:
            if key in weights:
                flags.append(Flag("no_fleet", pool, _at(hour)))
            continue
        if policy.basis == "kv_token_seconds":
            k = None
        elif ph.k is None:
            k = None
            if w > 0:
                flags.append(Flag("capacity_unknown", pool, _at(hour)))
        else:
            k = int(quantize(ph.k * scale.get(pool, 1), Decimal(1)))
            if w > k:
                flags.append(Flag("over_capacity", pool, _at(hour)))
        c = to_micros(ph.c_serve)
        if w == 0:  # an hour with no usage is all slack
            coeffs.append(Coefficient(pool=pool, hour=hour, c=c, w=0, slack=1, slack_gpu_s=ph.serving_gpu_s))
            continue
        d = max(k, w) if k is not None else w
        with localcontext() as ctx:
            ctx.prec = 60
            slack_gpu_s = quantize(ph.serving_gpu_s * (d - w) / d)
        coeffs.append(Coefficient(pool=pool, hour=hour, c=c, w=w, slack=d - w, slack_gpu_s=slack_gpu_s))
    for pool in sorted(no_latency_n):
        problems.append(Hinted(f"pool {pool}: {no_latency_n[pool]} requests have no latency_ms (first in the hour "
                               f"{iso(_at(no_latency_first[pool]))}); the kv_token_seconds basis needs it (",
                               Hint("basis_active_tokens", "use the active_tokens basis"), ")"))
    return coeffs, flags, problems


# ---- 3. GPU share: applying the coefficients ---------------------------------------------------

def _apply_gpu_split(con: duckdb.DuckDBPyConnection,
                     coeffs: Sequence[Coefficient]) -> tuple[dict[tuple, _Group], dict[tuple[str, int], int]]:
    """Split each pool-hour's C_serve (integer micro-units) over its request groups and idle slack
    by largest remainder (:data:`.sql.SPLIT` over :data:`.tables.GPU_GROUPS`, on `con`): part =
    floor(c × w / d), then the units left go one each by larger remainder, larger weight, request
    groups before slack, then (tenant, product, model, work).

    Returns tenant GPU line groups (day, tenant, product, model, pool, work) with amounts in
    micro-units as Decimal, and the idle slack in micro-units per pool-hour."""
    slack: dict[tuple[str, int], int] = {}
    for c in coeffs:
        if c.w == 0:
            slack[(c.pool, c.hour)] = c.c
    DUCKDB.load(con, COEFF, [(c.pool, c.hour, c.c, c.d, c.slack) for c in coeffs if c.w > 0])
    DUCKDB.create(con, GPU_SPLIT, sql.SPLIT)
    groups: dict[tuple, _Group] = {}
    for day, tenant, product, model, pool, work, part, active in con.execute(f"""
            SELECT day, tenant, product, model, pool, work, part, active FROM {GPU_SPLIT} WHERE is_slack = 0
            ORDER BY ALL""").fetchall():
        groups[(day, tenant, product, model, pool, work)] = _Group(from_micros(int(part)), Decimal(int(active)))
    for pool, hour, part in con.execute(
            f"SELECT pool, slack_hour, part FROM {GPU_SPLIT} WHERE is_slack = 1").fetchall():
        slack[(pool, hour)] = int(part)
    return groups, slack
