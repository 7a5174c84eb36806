"""What a month actually used, read from the facts for the forecast-error drivers: each plan pool's
traffic (its workload) and fleet GPU-seconds, and the provider models' tokens."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from .. import config, facts
from ..hints import Hinted
from ..sizing.traffic import PERCENTILE
from ..workload import WorkloadError, workload_of
from .drivers import STATISTICS, Actuals, PoolActual, TokenActual
from .forecast import Budget
from .plan import BudgetError, month_bounds


def _gpu_seconds(con, pool: str, a, b) -> Decimal:
    """GPU-seconds of the pool's fleet intervals (every role: the allocation prices them all) inside [a, b)."""
    (us,) = con.execute("""
        SELECT coalesce(sum(CAST(gpus AS HUGEINT) * (epoch_us(least("end", $b)) - epoch_us(greatest("start", $a)))), 0)
        FROM fleet WHERE pool = $pool AND "start" < $b AND "end" > $a AND role IN (SELECT unnest($roles))""",
                        {"pool": pool, "a": a, "b": b, "roles": list(facts.FLEET_ROLES)}).fetchone()
    return Decimal(int(us)) / Decimal(1_000_000)


def month_actuals(session, b: Budget, *, month: str, scenario: str, statistic: str = "p99",
                  home: Path | None = None) -> Actuals:
    """The usage of `month` the drivers set beside the plan: per plan pool the TPM at `statistic`,
    the mean output tokens per request and the fleet's GPU-seconds in each forecast segment (requests
    by when they occurred); per provider model (requests without a pool, by when they are booked, as
    the allocation prices them) input, cached input and output tokens."""
    if statistic not in STATISTICS:
        raise BudgetError(Hinted(PERCENTILE, f" {statistic!r}: expected one of {', '.join(STATISTICS)}"))
    start, end = month_bounds(month)
    con = facts.open_ledger_facts(session, config.ledger_home() if home is None else home)  # resolved here, once
    try:
        pools = []
        for pool in b.plan.pools:
            try:
                w = workload_of(con, period=month, start=start, end=end, pool=pool.name, ramp_minutes=1)
                tpm, osl, n = w.tpm[statistic], w.osl_mean, w.requests
            except WorkloadError:
                tpm, osl, n = 0.0, None, 0
            segs = [(g.start, g.end) for g in b.gpu if g.scenario == scenario and g.month == month
                    and g.pool == pool.name]
            pools.append(PoolActual(pool=pool.name, tpm=tpm, osl=osl, requests=n,
                                    gpu_seconds=tuple((s, _gpu_seconds(con, pool.name, *s)) for s in segs)))
        rows = con.execute("""
            SELECT provider, model, CAST(sum(input_tokens) AS BIGINT), CAST(sum(cached_input_tokens) AS BIGINT),
                   CAST(sum(output_tokens) AS BIGINT)
            FROM requests WHERE pool IS NULL AND provider IS NOT NULL AND booked_at >= $start AND booked_at < $end
            GROUP BY ALL ORDER BY ALL""", {"start": start, "end": end}).fetchall()
    finally:
        con.close()
    tokens = tuple(TokenActual(provider=p, model=m, input_tokens=int(i), cached_input_tokens=int(c),
                               output_tokens=int(o)) for p, m, i, c, o in rows)
    return Actuals(statistic=statistic, pools=tuple(pools), tokens=tokens)
