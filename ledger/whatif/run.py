"""Running a scenario: the same allocation over the scenario's inputs, beside the period's current run.

:func:`run_scenario` reads the period's current run (the actual), builds the scenario's inputs
(:mod:`.inputs`: the books, the requests rewritten, each self-hosted pool sized from its moved
traffic's workload and added to the fleet), calls :func:`ledger.allocate.allocate` with them (the
same engine, rules and conservation as a run), and compares the two by tenant, product and model.
Nothing here writes a run: :mod:`.store` keeps the result apart.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from .. import config, facts, runs, store
from ..allocate import Allocation, Inputs, Policy, Weights, allocate, inputs_in_place
from ..economics import RunData, unit_economics
from ..money import ZERO
from ..pricebook import PriceIndex
from .inputs import fleet_sql, price_index, requests_sql, selects
from .records import CompareRow, Scenario, ScenarioError, ScenarioResult, SelfHost, Sized

_ALLOWED = re.compile(r"pool ([^:]+): \d+ requests? in hours .* accepted by the policy's allow_pool_without_fleet")


def policy_of(data: RunData, summary: dict) -> Policy:
    """The policy a stored run was made with: idle policy, basis, currency, pool weights, and the
    pools it accepted without fleet (its notes name them)."""
    weights = tuple(sorted((pool, Weights(*(Decimal(x) for x in text.split(","))))
                           for pool, text in summary.get("weights", {}).items()))
    allowed = tuple(sorted({m.group(1) for n in data.info.notes if (m := _ALLOWED.match(n))}))
    return Policy(idle=data.info.idle_policy, basis=data.info.basis, currency=data.info.currency, weights=weights,
                  allow_pool_without_fleet=allowed)


def run_scenario(s, *, period: str, scenario: Scenario, home: Path | None = None,
                 progress: Callable[[str], None] | None = None) -> ScenarioResult:
    """`scenario` over the month `period` (``YYYY-MM``), beside its current run. The facts are those
    of the ledger home `home` (default the configured one). ScenarioError, RunError (no run),
    AllocationError (a price missing for the scenario's usage) or SizingError, one line per problem."""
    home = config.ledger_home() if home is None else home
    say = progress or (lambda _m: None)
    start, end = store.month_bounds(period)
    stored = runs.load_run(s, start=start, end=end)
    actual = runs.run_data_of_stored(stored)
    policy = policy_of(actual, stored.summary)
    loaded = store.books_from_store(s)
    index = price_index(loaded, scenario, start)
    batches = facts.committed_batches(s)
    digest = runs.inputs_digest(batches=batches, books=PriceIndex(loaded).books, start=start, end=end, policy=policy)
    con = facts.connect(batches, home, period=(start, end))
    try:
        moved = _moved(con, scenario)
        sized = tuple(_size(con, scenario, i, period, start, end, say) for i, c in enumerate(scenario.changes)
                      if isinstance(c, SelfHost))
        inputs = Inputs(requests=requests_sql(scenario.changes), fleet=fleet_sql(sized, start, end))
        say("allocating the scenario")
        alloc = allocate(con, start=start, end=end, prices=index, policy=policy, progress=progress, inputs=inputs)
    finally:
        con.close()
    return compare(scenario, period=period, actual=actual, allocation=alloc, moved=moved, sized=sized,
                   same_inputs=digest == stored.run.inputs_digest)


def _moved(con: duckdb.DuckDBPyConnection, scenario: Scenario) -> dict[str, int]:
    """Requests each change moves (counted over the facts the period's views read)."""
    out = {}
    for i, change in enumerate(scenario.changes):
        with inputs_in_place(con, Inputs(requests=requests_sql(scenario.changes, moved_by=i))):
            out[change.label] = int(con.execute("SELECT count(*) FROM requests").fetchone()[0])
    return out


def _size(con: duckdb.DuckDBPyConnection, scenario: Scenario, i: int, period: str, start: datetime, end: datetime,
          say: Callable[[str], None]) -> Sized:
    """Size self-host change `i` from the per-minute workload of the requests it moves."""
    from ..sizing import Reserves, SizingError
    from ..sizing.service import SizingJob, run
    from ..sizing.traffic import workload_inputs
    from ..workload import WorkloadError
    from ..workload.compute import workload_of

    c: SelfHost = scenario.changes[i]
    say(f"sizing {c.pool} from the traffic {c.label} moves")
    try:
        with inputs_in_place(con, Inputs(requests=requests_sql(scenario.changes, moved_by=i))):
            w = workload_of(con, period=period, start=start, end=end)
        wi = workload_inputs(w, c.percentile)
        job = SizingJob(curve=c.curve, slas=(c.sla,), gpus_per_replica=c.gpus_per_replica, util=c.util,
                        reserves=Reserves(failure=c.failure_reserve), interpolate=c.interpolate,
                        ttft_limit_ms=c.ttft_ms, workload=wi, tpm=wi.tpm)
        outcome = run(job)
    except (SizingError, WorkloadError) as e:
        raise ScenarioError([f"{scenario.path}: {c.label} (pool {c.pool}): {line}" for line in e.lines()]) from None
    result = outcome.result
    row = result.rows[0]
    if row.capacity_tokens_per_gpu_s is None:
        raise ScenarioError(f"{scenario.path}: {c.label}: the sizing gave no capacity (no ISL/OSL)")
    hours = Decimal(int((end - start).total_seconds())) / 3600
    return Sized(label=c.label, pool=c.pool, device=c.device, region=c.region, purchase_option=c.purchase_option,
                 gpus_per_replica=c.gpus_per_replica, requests=wi.requests, percentile=c.percentile, tpm=wi.tpm,
                 isl=wi.isl, osl=wi.osl, sla=c.sla, util=c.util, curve=c.curve_ref, status=result.status,
                 replicas_serving=row.replicas_serving, replicas_reserve=row.replicas_reserve, gpus=row.gpus,
                 hours=hours, capacity_tokens_per_gpu_s=Decimal(f"{row.capacity_tokens_per_gpu_s:.3f}"),
                 warnings=tuple(str(x) for x in result.warnings))


# ---- the comparison ----------------------------------------------------------------------------

def compare(scenario: Scenario, *, period: str, actual: RunData, allocation: Allocation, moved: dict[str, int],
            sized: tuple[Sized, ...], same_inputs: bool) -> ScenarioResult:
    """The scenario beside the actual run: rows by tenant, product and model, totals by kind and
    category, and the notes that say what the numbers rest on."""
    from ..economics import run_data_of

    sim = run_data_of(allocation, run_id="scenario")
    rows = []
    for by in ("tenant", "product", "model"):
        a, b = unit_economics(actual, by=by), unit_economics(sim, by=by)
        ra, rb = {r.key: r for r in a.rows}, {r.key: r for r in b.rows}
        for key in sorted(set(ra) | set(rb), key=lambda k: (k is None, k or "")):
            x, y = ra.get(key), rb.get(key)
            tasks = None if by == "model" else ((x or y).tasks or {}).get("success", 0)
            rows.append(CompareRow(by=by, key=key, actual_cost=x.cost if x else ZERO,
                                   scenario_cost=y.cost if y else ZERO, successful_tasks=tasks,
                                   actual_cost_per_successful_task=x.cost_per_successful_task if x else None,
                                   scenario_cost_per_successful_task=y.cost_per_successful_task if y else None))
    notes = list(_notes(scenario, actual, same_inputs, sized))
    return ScenarioResult(scenario=scenario, period=period, start=allocation.start, end=allocation.end,
                          currency=allocation.currency, run_id=actual.info.run_id,
                          actual_books=actual.info.price_books, scenario_books=tuple(allocation.price_books),
                          actual=actual, allocation=allocation, rows=tuple(rows),
                          by_kind=_sums(actual.lines, allocation.lines, "kind"),
                          by_category=_sums(actual.lines, allocation.lines, "category"), moved=moved, sized=sized,
                          same_inputs=same_inputs, notes=tuple(notes))


def _sums(actual, scenario, attr: str) -> dict[str, tuple[Decimal, Decimal]]:
    out: dict[str, list[Decimal]] = {}
    for i, lines in enumerate((actual, scenario)):
        for ln in lines:
            out.setdefault(getattr(ln, attr), [ZERO, ZERO])[i] += ln.amount
    return {k: (a, b) for k, (a, b) in sorted(out.items())}


def _notes(scenario: Scenario, actual: RunData, same_inputs: bool, sized: tuple[Sized, ...]):
    if scenario.changes_nothing:
        yield "the scenario changes nothing: it is the period's allocation again"
    if not same_inputs:
        yield (f"the facts, books or policy differ from those of run {actual.info.run_id} (another batch was "
               "ingested or a book loaded since): the difference includes those changes, not only the scenario's")
    if any(ln.kind == "variance" for ln in actual.lines):
        yield (f"run {actual.info.run_id} is a true-up: its variance lines (the bill) have no counterpart in the "
               "scenario, which prices the ledger's own usage")
    if scenario.prices_as_of is not None:
        yield f"every usage is priced at the prices in force at {scenario.prices_as_of.isoformat()}"
    for z in sized:
        yield from z.warnings


def with_id(result: ScenarioResult, scenario_id: str, created_at: datetime) -> ScenarioResult:
    return replace(result, id=scenario_id, created_at=created_at)
