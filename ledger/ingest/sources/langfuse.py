"""Langfuse: GENERATION observations of a Langfuse export (JSON Lines, CSV or Parquet) as ledger requests.

What is read is the blob-storage export's observation rows (``observations_v2/``, the enriched
export, or the legacy ``observations/``): ``id, trace_id, type, start_time, end_time,
completion_start_time, provided_model_name, usage_details, cost_details, total_cost, level,
metadata, user_id, session_id, tags, ...`` (docs/adapters.md cites the field reference). Rows of
another ``type`` (spans, events, tools, ...) are not LLM requests and are not read.

The token rule: Langfuse prices an observation as the sum, over the keys of ``usage_details``, of
units times that key's price, so its keys are disjoint buckets: ``input`` is the uncached input,
beside the cache reads (``input_cached_tokens``, ``input_cache_read``, ``cache_read_input_tokens``)
and the cache writes (``cache_creation_input_tokens``, ``input_cache_creation``,
``input_cache_creation_5m``; ``input_cache_creation_1h`` for a 1-hour TTL), and ``output`` is beside
the reasoning (``output_reasoning_tokens``, ``output_reasoning``, ``reasoning_tokens``). The ledger's
``input_tokens`` is the sum of the input buckets and its cache columns are parts of it, counted once.
When the row has a ``total``, the buckets must add up to it, or the row is refused (an export that
wrote the inclusive count in ``input`` as well as the cached part: langfuse/langfuse#10592). A map may
say ``[tokens] inclusive = true`` for an exporter that writes OpenAI's inclusive ``input``/``output``.
Times are UTC without an offset (the export's format); ``level`` ERROR is an error; ``total_cost``
(USD) is kept as ``reported_cost``.
"""
from __future__ import annotations

from pathlib import Path

from ..checks import lit
from .mapfile import SourceMap
from .reading import SourceFile, instant, kept, open_source
from .sql import cost, first_of, mapped, millis, path, plus, whole

KIND = "requests"
TABLES = ("tokens",)
BUILT_IN = {"request_id": "id", "occurred_at": "start_time", "model": "provided_model_name", "task_id": "trace_id",
            "status": "level"}
MAPPABLE = {"request_id", "occurred_at", "tenant", "product", "model", "provider", "task_id", "service_tier",
            "region", "status", "reported_currency"}
USAGE = "usage_details"
READS = ("input_cached_tokens", "input_cache_read", "cache_read_input_tokens")
WRITES_5M = ("cache_creation_input_tokens", "input_cache_creation", "input_cache_creation_5m")
WRITES_1H = ("input_cache_creation_1h",)
REASONING = ("output_reasoning_tokens", "output_reasoning", "reasoning_tokens")


def table_problems(m: SourceMap) -> list[tuple[str, str]]:
    """(key, message) for a ``[tokens]`` table this adapter does not understand."""
    t = m.extra.get("tokens", {})
    out = [(f"tokens.{k}", "unknown key (expected: inclusive)") for k in t if k != "inclusive"]
    if "inclusive" in t and not isinstance(t["inclusive"], bool):
        out.append(("tokens.inclusive", "must be true or false"))
    return out


def open_file(con, p: Path, fmt: str | None, link_dir: Path, m: SourceMap) -> SourceFile:
    """The export file, keeping only its GENERATION observations (line numbers of the whole file)."""
    src = open_source(con, p, fmt, link_dir)
    return kept(src, f"{src.value(path('type'))} = 'GENERATION'")


def _sum(src: SourceFile, keys: tuple[str, ...]) -> str:
    """SQL: the sum of the usage keys present (NULL when none is; a key's text kept when not whole)."""
    values = [src.value(path(f"{USAGE}.{k}")) for k in keys]
    any_given = " OR ".join(f"{v} IS NOT NULL" for v in values)
    total = plus("'0'", *values)
    return f"(CASE WHEN {any_given} THEN {total} END)"


def columns(src: SourceFile, m: SourceMap) -> dict[str, tuple[str, str]]:
    """``{ledger column: (SQL text over the source row, the source field it comes from)}``."""
    inclusive = m.extra.get("tokens", {}).get("inclusive", False)

    def at(p: str) -> str:
        return src.value(path(p))

    out = mapped(src, m, {col: (at(field), field) for col, field in BUILT_IN.items()})
    out["occurred_at"] = (instant(out["occurred_at"][0], True), out["occurred_at"][1])
    status, field = out["status"]
    out["status"] = (f"(CASE WHEN {status} = 'ERROR' THEN 'error' WHEN {status} IN ('DEBUG', 'DEFAULT', 'WARNING') "
                     f"THEN 'ok' ELSE {status} END)", field)
    u = f"{USAGE}."
    fresh = first_of(at(u + "input"), at(u + "input_tokens"))
    reads, w5, w1h = _sum(src, READS), _sum(src, WRITES_5M), _sum(src, WRITES_1H)
    out_own = first_of(at(u + "output"), at(u + "output_tokens"))
    reasoning = _sum(src, REASONING)
    if inclusive:
        out["input_tokens"] = (fresh, u + "input")
        out["output_tokens"] = (out_own, u + "output")
    else:
        out["input_tokens"] = (plus(fresh, reads, w5, w1h), f"{u}input + cache reads + cache writes")
        out["output_tokens"] = (plus(out_own, reasoning), f"{u}output + reasoning")
    out["cached_input_tokens"] = (reads, " + ".join(u + k for k in READS))
    out["cache_write_input_tokens"] = (w5, " + ".join(u + k for k in WRITES_5M))
    out["cache_write_1h_input_tokens"] = (w1h, u + WRITES_1H[0])
    out["reasoning_tokens"] = (reasoning, " + ".join(u + k for k in REASONING))
    start, first, end = (instant(at(f), True) for f in ("start_time", "completion_start_time", "end_time"))
    out["ttft_ms"] = (millis(start, first), "completion_start_time - start_time")
    out["latency_ms"] = (millis(start, end), "end_time - start_time")
    spent = first_of(at("total_cost"), at("cost_details.total"))
    out["reported_cost"] = (cost(spent), "total_cost")
    if "reported_currency" not in out:
        out["reported_currency"] = (f"(CASE WHEN {spent} IS NOT NULL THEN 'USD' END)", "total_cost")
    out["_total"] = (at(u + "total"), u + "total")
    return out


def checks(m: SourceMap) -> list[tuple[str, str, str]]:
    """Row problems of this source: the usage buckets must add up to the row's own ``total``."""
    both = f"{whole('input_tokens')} + {whole('output_tokens')}"
    flag = f"(_total IS NOT NULL AND {whole('_total')} IS NOT NULL AND ({both}) IS DISTINCT FROM {whole('_total')})"
    rule = "input + output" if m.extra.get("tokens", {}).get("inclusive", False) else "the disjoint usage buckets"
    msg = (f"'{rule} add up to ' || coalesce(CAST({both} AS VARCHAR), '?') || ', not to the total ' || _total || "
           f"{lit(': the cached tokens are counted twice, or [tokens] inclusive is wrong for this export (docs/adapters.md)')}")
    return [(flag, f"{USAGE}.total", msg)]
