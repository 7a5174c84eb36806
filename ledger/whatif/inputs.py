"""A scenario's inputs to the allocation: the requests rewritten in SQL, the self-hosted fleet, and the books.

Requests are rewritten as DuckDB SQL over the period's facts (never a loop over rows): one step per
change, in order (reroutes, then self-hosts), each a SELECT over the step before it that replaces the
model, provider, pool and token columns of the requests it selects. The relation given to the
allocation is the last step (:class:`ledger.allocate.Inputs`); the facts themselves never change.
"""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from decimal import Decimal

from ..allocate import given
from ..pricebook import Book, PriceIndex
from ..sqltext import literal
from .records import ONE, ScenarioChange, Reroute, Scenario, ScenarioError, SelfHost, Sized

#: The share below 1 is compared with the first 8 hex digits of an md5, an integer below 16^8.
HASH_SPACE = 16 ** 8
_FLOORED_INPUT = ("cached_input_tokens", "cache_write_input_tokens", "cache_write_1h_input_tokens")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(literal(v) for v in values)})"


def selects(change: ScenarioChange) -> str:
    """The SQL condition of the requests `change` moves: provider requests (no pool) matching its
    `where`, and when its share is below 1, those whose hash falls below it (:class:`ScenarioChange`)."""
    parts = ["pool IS NULL"]
    parts += [_in(k, v) for k, v in change.where.as_dict().items()]
    if change.share < ONE:
        threshold = int(change.share * HASH_SPACE)
        parts.append(f"CAST(('0x' || left(md5({literal(change.label + ':')} || request_id), 8)) AS UBIGINT) "
                     f"< {threshold}")
    return " AND ".join(f"({p})" for p in parts)


def _scaled(column: str, ratio: Decimal, how: str) -> str:
    return f"CAST({how}({column} * CAST({literal(str(ratio))} AS DECIMAL(38,9))) AS BIGINT)"


def _assignments(change: ScenarioChange) -> dict[str, str]:
    """Column -> its SQL for a moved request (the others keep theirs)."""
    out: dict[str, str] = {}
    if isinstance(change, Reroute):
        if change.model is not None:
            out["model"] = literal(change.model)
        if change.provider is not None:
            out["provider"] = literal(change.provider)
    elif isinstance(change, SelfHost):
        out["pool"] = literal(change.pool)
        out["provider"] = "CAST(NULL AS VARCHAR)"
        if change.model is not None:
            out["model"] = literal(change.model)
    # Totals are rounded (half away from zero), their parts rounded down, so that cached + cache
    # writes <= input and reasoning <= output still hold after the ratio.
    if change.input_ratio != ONE:
        out["input_tokens"] = _scaled("input_tokens", change.input_ratio, "round")
        out.update({c: _scaled(c, change.input_ratio, "floor") for c in _FLOORED_INPUT})
    if change.output_ratio != ONE:
        out["output_tokens"] = _scaled("output_tokens", change.output_ratio, "round")
        out["reasoning_tokens"] = _scaled("reasoning_tokens", change.output_ratio, "floor")
    return out


def _step(change: ScenarioChange, source: str) -> str:
    sets = ", ".join(f"CASE WHEN _moved THEN {sql} ELSE {col} END AS {col}"
                     for col, sql in _assignments(change).items())
    return (f"SELECT * EXCLUDE (_moved) REPLACE ({sets}) "
            f"FROM (SELECT *, coalesce({selects(change)}, false) AS _moved FROM {source})")


def requests_sql(changes: tuple[ScenarioChange, ...], *, moved_by: int | None = None) -> str | None:
    """The requests after every change (None: no change), as one SELECT over :func:`given` requests.
    With `moved_by` (an index into `changes`), only the requests that change moves, as the changes
    before it left them (the traffic a self-hosted pool is sized from)."""
    if not changes:
        return None
    upto = changes if moved_by is None else changes[:moved_by]
    ctes = [f"_s0 AS (SELECT * FROM {given('requests')})"]
    for i, change in enumerate(upto, 1):
        ctes.append(f"_s{i} AS ({_step(change, f'_s{i - 1}')})")
    last = f"_s{len(upto)}"
    tail = f"SELECT * FROM {last}" if moved_by is None else \
        f"SELECT * FROM {last} WHERE coalesce({selects(changes[moved_by])}, false)"
    return f"WITH {', '.join(ctes)} {tail}"


def fleet_sql(sized: tuple[Sized, ...], start: datetime, end: datetime) -> str | None:
    """The fleet given, and per self-hosted pool a serving interval of its serving replicas' GPUs
    and a failure_reserve interval of its reserve's over the whole period (None: no pool)."""
    if not sized:
        return None
    rows = []
    for z in sized:
        for role, replicas in (("serving", z.replicas_serving), ("failure_reserve", z.replicas_reserve)):
            if replicas <= 0:
                continue
            cap = literal(str(z.capacity_tokens_per_gpu_s)) if role == "serving" else "NULL"
            rows.append(
                f"SELECT {literal(f'scenario:{z.label}:{role}')} AS interval_id, {literal(z.pool)} AS pool, "
                f"TIMESTAMPTZ {literal(start.isoformat())} AS \"start\", TIMESTAMPTZ {literal(end.isoformat())} AS \"end\", "
                f"{literal(z.device)} AS device, CAST({replicas * z.gpus_per_replica} AS BIGINT) AS gpus, "
                f"{literal(z.region)} AS region, {literal(z.purchase_option)} AS purchase_option, "
                f"{literal(role)} AS role, CAST({cap} AS DECIMAL(38,9)) AS capacity_tokens_per_gpu_s, "
                f"TIMESTAMPTZ {literal(start.isoformat())} AS booked_at")
    return " UNION ALL BY NAME ".join([f"SELECT * FROM {given('fleet')}", *rows])


# ---- the books ---------------------------------------------------------------------------------

def scenario_books(loaded: list[Book], scenario: Scenario) -> list[Book]:
    """The books a scenario prices with: the loaded ones, each book name the scenario gives replaced
    (every loaded version of it) by the scenario's, which it names as files, folders or loaded
    ``name@version``. ScenarioError with the book's problems."""
    if not scenario.pricebooks:
        return list(loaded)
    from ..pricebook import load_books

    paths = [b for b in scenario.pricebooks if "@" not in b or _is_path(b)]
    refs = [b for b in scenario.pricebooks if b not in paths]
    books, problems = load_books(paths) if paths else ([], [])
    if problems:
        raise ScenarioError(problems)
    by_ref = {b.ref: b for b in loaded}
    missing = [r for r in refs if r not in by_ref]
    if missing:
        raise ScenarioError([f"{scenario.path}: pricebooks: {r!r} is not a loaded book (loaded: "
                             f"{', '.join(sorted(by_ref)) or 'none'})" for r in missing])
    chosen = books + [by_ref[r] for r in refs]
    names = {b.name for b in chosen}
    return [b for b in loaded if b.name not in names] + chosen


def _is_path(text: str) -> bool:
    from pathlib import Path

    return Path(text).exists()


def as_of(books: list[Book], at: datetime, start: datetime) -> list[Book]:
    """`books` with only the prices and FX rates in force at `at`, each in force from `start` on
    (no end): the period priced at the list of that instant."""
    out = []
    for b in books:
        prices = tuple(replace(p, effective_from=start, effective_to=None) for p in b.prices if p.in_force(at))
        fx = tuple(replace(r, effective_from=start, effective_to=None) for r in b.fx
                   if r.effective_from <= at and (r.effective_to is None or at < r.effective_to))
        out.append(replace(b, prices=prices, fx=fx))
    return out


def price_index(loaded: list[Book], scenario: Scenario, start: datetime) -> PriceIndex:
    books = scenario_books(loaded, scenario)
    if scenario.prices_as_of is not None:
        books = as_of(books, scenario.prices_as_of, start)
    return PriceIndex(books)
