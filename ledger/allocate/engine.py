"""The run: :func:`allocate` follows the numbered order of operations of DESIGN §4 over the period's facts."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import datetime

import duckdb

from ..hints import Hint, Hinted
from ..instants import iso
from ..pricebook import PriceIndex
from .charges import ChargeShare, _charge_lines, price_charges
from .engines import DUCKDB, Engine
from .gpu import _apply_gpu_split, _gpu_groups, gpu_coefficients
from .idle import _idle_lines
from .lines import _direct_costs, _direct_lines, _total, check_conservation, merge
from .period import Inputs, _prepare, _regions, _tasks, _usage, inputs_in_place
from .pricing import _Pricer, cache_write_notes, price_fleet, price_meters, price_provider
from .records import Allocation, AllocationError, Policy, _at
from .tables import GPU_GROUPS

# The engine is a pure function of the facts (DuckDB relations ``requests, meters, outcomes, fleet,
# charges`` with the columns of ledger.facts), a PriceIndex and a Policy. It returns an Allocation:
# exact lines whose sum equals the sum of the priced resources (checked with ``==``), plus flags,
# notes and usage counts. Per-request work is SQL (ledger.allocate.sql: group-bys) run by an engine
# (engines.DuckEngine on `con` itself by default, or spark.SparkEngine), whose small results are temp
# tables of `con` (each declared once in ledger.allocate.tables); what reads only those small tables
# (the GPU groups and the largest-remainder GPU split in integer micro-units, with window functions)
# runs on `con` whatever the engine. Python only prices aggregates (fleet interval-hours, token
# buckets, meter groups, charge days) read from `con` and never loops over requests.
#
# Order of operations (each step is a function of the module named):
#
# 1. price resources: price_fleet (C_serve, C_reserve per pool and hour), price_provider,
#    price_meters (pricing), price_charges (charges);
# 2. active tokens: _gpu_groups (gpu: weights per request group and pool-hour);
# 3. GPU share: gpu_coefficients (gpu: rate denominators, idle slack weights, flags) apart from
#    _apply_gpu_split (gpu: the largest-remainder split);
# 4. idle: _idle_lines (idle: separate, or shared over tenants by direct GPU cost);
# 5. failed work: the ``work`` column of every request and meter group (_prepare in period);
# 6. shared charges: _charge_lines (charges);
# 7. lines and conservation: merge, then check_conservation asserts ``sum(lines) == total`` (lines).


def allocate(con: duckdb.DuckDBPyConnection, *, start: datetime, end: datetime, prices: PriceIndex,
             policy: Policy = Policy(), progress: Callable[[str], None] | None = None,
             engine: Engine | None = None, inputs: Inputs | None = None) -> Allocation:
    """Allocate ``[start, end)`` (end exclusive, UTC) over the facts visible in `con`.

    `inputs` (a scenario, ``ledger.whatif``) replaces the requests and fleet relations the allocation
    reads with SELECTs over them, for this allocation only (:class:`~.period.Inputs`; DuckDB engine).

    `engine` runs the per-request SQL (default: DuckDB, on `con`); with
    :class:`ledger.allocate.spark.SparkEngine` the requests, meters and outcomes are Spark's and
    `con` needs only the fleet and charges. Either way the result is the same, line for line.

    Raises :class:`AllocationError` listing every problem (a missing price or FX rate names meter,
    sku, region and time; a unit that cannot convert names the meter; a pool with requests and no
    serving fleet interval names the pool, its first and last hour and the request count, unless
    ``policy.allow_pool_without_fleet`` lists it) and when Σ lines != total.
    """
    problems = policy.problems()
    if start.tzinfo is None or end.tzinfo is None:
        problems.append("the period bounds must be aware UTC instants")
    elif not start < end:
        problems.append(f"the period is empty: {iso(start)} is not before {iso(end)}")
    if problems:
        raise AllocationError(problems)
    engine = engine or DUCKDB
    if inputs is not None and inputs.changed() and engine.name != DUCKDB.name:
        raise AllocationError(["changed inputs (a scenario) are read on the DuckDB engine only"])
    try:
        with inputs_in_place(con, inputs):
            return _allocate(con, start, end, prices, policy, progress or (lambda _stage: None), engine)
    finally:
        engine.release()


def _allocate(con: duckdb.DuckDBPyConnection, start: datetime, end: datetime, prices: PriceIndex, policy: Policy,
              say: Callable[[str], None], engine: Engine) -> Allocation:
    pricer = _Pricer(prices, policy.currency)

    say("reading the period's facts")                                                     # 2, 5
    _prepare(con, start, end, policy, pricer, engine)

    say("pricing the fleet, provider tokens, meters and charges")                        # 1
    fleet = price_fleet(con, pricer, start, end)
    write_fallbacks: set[tuple[str, str, str]] = set()   # cache writes priced at the input price
    provider = price_provider(con, pricer, write_fallbacks)
    meters = price_meters(con, pricer)
    charge_days = price_charges(con, pricer, start, end)

    say("weighing requests")                                                              # 2
    weights = _gpu_groups(con)

    say("splitting GPU cost")                                                             # 3
    coeffs, flags, weight_problems = gpu_coefficients(fleet, weights, policy)
    unserved = _pools_without_fleet(con, fleet)
    problems = sorted(pricer.problems.values()) + weight_problems + [
        Hinted(f"pool {pool}: {n} request{'s' * (n != 1)} in hours {iso(_at(first))} to {iso(_at(last))} but no "
               f"serving fleet interval in the period, so their GPU cost would be $0; ingest the pool's fleet, or "
               f"accept it ", Hint("allow_no_fleet", "with the policy's allow_pool_without_fleet"), f" {pool}")
        for pool, first, last, n in unserved if pool not in policy.allow_pool_without_fleet]
    if problems:
        raise AllocationError(problems)
    gpu_groups, slack = _apply_gpu_split(con, coeffs)
    lines, provider_amounts, meter_amounts = _direct_lines(gpu_groups, provider, meters)

    say("booking idle")                                                                   # 4
    gpu_direct, direct = _direct_costs(lines)
    lines += _idle_lines(fleet, coeffs, slack, gpu_direct, policy)

    say("allocating shared charges")                                                      # 6
    usage = _usage(con)
    tokens: dict[str, int] = defaultdict(int)
    for u in usage:
        tokens[u.tenant] += u.active_tokens
    charge_problems: dict[tuple, str] = {}
    charge_shares: list[ChargeShare] = []
    charge_lines, notes = _charge_lines(charge_days, direct, tokens, charge_problems, charge_shares)
    if charge_problems:
        raise AllocationError(sorted(charge_problems.values()))
    lines += charge_lines

    say("checking conservation")                                                          # 7
    total = _total(fleet, provider_amounts, meter_amounts, charge_days)
    merged = merge(lines)
    check_conservation(merged, total)

    notes = list(notes) + _notes(unserved, flags, policy) + cache_write_notes(write_fallbacks)
    return Allocation(start=start, end=end, policy=policy, price_books=tuple(prices.refs), total=total,
                      lines=merged, flags=tuple(sorted(flags, key=lambda f: (f.kind, f.pool, f.hour))),
                      notes=tuple(notes), usage=usage, tasks=_tasks(con),
                      regions=_regions(con, start, end), charge_shares=tuple(charge_shares))


def _pools_without_fleet(con: duckdb.DuckDBPyConnection, fleet) -> list[tuple[str, int, int, int]]:
    """Pools with requests in the period and no serving fleet interval in it: (pool, first hour,
    last hour (µs), requests). Their GPU cost would be $0, so they fail the run unless allowed."""
    served = {pool for (pool, _), ph in fleet.items() if ph.serving}
    rows = con.execute(f"SELECT pool, min(hour), max(hour), sum(n) FROM {GPU_GROUPS} GROUP BY pool ORDER BY pool")
    return [(pool, int(first), int(last), int(n)) for pool, first, last, n in rows.fetchall() if pool not in served]


def _notes(unserved, flags, policy: Policy) -> list[str]:
    notes = []
    if policy.basis == "kv_token_seconds":
        notes.append("basis kv_token_seconds: capacity in tokens/s does not apply, so each serving hour's cost "
                     "goes wholly to its requests (r = C_serve / W); hours without requests are idle slack")
    accepted = {pool for pool, *_ in unserved}
    for pool, first, last, n in unserved:
        notes.append(f"pool {pool}: {n} request{'s' * (n != 1)} in hours {iso(_at(first))} to {iso(_at(last))} "
                     "with no serving fleet interval in the period; accepted by the policy's allow_pool_without_fleet: "
                     "no GPU cost exists for them, so none is allocated (their requests and tokens still count in "
                     "unit economics)")
    for pool in policy.allow_pool_without_fleet:
        if pool not in accepted:
            notes.append(f"the policy's allow_pool_without_fleet {pool}: pool {pool} has no request without serving "
                         "fleet in the period; nothing to accept")
    by_kind: dict[tuple[str, str], int] = defaultdict(int)
    for f in flags:
        by_kind[(f.kind, f.pool)] += 1
    for (kind, pool), n in sorted(by_kind.items()):
        notes.append(f"pool {pool}: {n} hour{'s' * (n != 1)} flagged {kind}")
    return notes
