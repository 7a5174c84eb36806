"""LiteLLM: rows of the proxy's ``LiteLLM_SpendLogs`` table (CSV, JSON Lines or Parquet) as ledger requests.

The token rule (docs/adapters.md, with the LiteLLM code and issues it was checked against):

- ``prompt_tokens`` is all of the input, cache reads and cache writes included: LiteLLM normalizes
  every provider to OpenAI's convention (Anthropic's uncached ``input_tokens`` + cache reads + cache
  writes). It is our ``input_tokens`` as it is. A map may say ``[tokens] prompt_includes_cache =
  false`` for logs of a LiteLLM that wrote Anthropic's uncached count there: then the reads and
  writes are added to it.
- the cache reads are ``prompt_tokens_details.cached_tokens`` (else ``cache_read_input_tokens``) of
  the usage object LiteLLM keeps in ``metadata.usage_object``; the cache writes are its
  ``cache_creation_input_tokens``, of which ``cache_creation_token_details.ephemeral_1h_input_tokens``
  had a 1-hour TTL (the rest: 5 minutes). They are parts of ``input_tokens``, never added again.
- ``completion_tokens`` includes reasoning (``completion_tokens_details.reasoning_tokens``).
- ``status`` ``success`` is ok, ``failure`` is error; ``spend`` (USD, a DOUBLE PRECISION column) is
  kept as ``reported_cost``, rounded to 12 decimal places here, explicitly.
"""
from __future__ import annotations

from .mapfile import SourceMap, parse_path
from .reading import SourceFile, instant
from .sql import cost, mapped, millis, path, plus, whole

KIND = "requests"
TABLES = ("tokens",)
#: Ledger columns a map may set, and the source path each has when the map does not set it.
BUILT_IN = {"request_id": "request_id", "occurred_at": "startTime", "model": "model",
            "provider": "custom_llm_provider", "status": "status"}
MAPPABLE = {"request_id", "occurred_at", "tenant", "product", "model", "provider", "task_id", "service_tier",
            "region", "status", "reported_currency"}
USAGE = "metadata.usage_object"


def table_problems(m: SourceMap) -> list[tuple[str, str]]:
    """(key, message) for a ``[tokens]`` table this adapter does not understand."""
    t = m.extra.get("tokens", {})
    out = [(f"tokens.{k}", "unknown key (expected: usage, prompt_includes_cache)") for k in t
           if k not in ("usage", "prompt_includes_cache")]
    if "prompt_includes_cache" in t and not isinstance(t["prompt_includes_cache"], bool):
        out.append(("tokens.prompt_includes_cache", "must be true or false"))
    if "usage" in t and parse_path(t["usage"]) is None:
        out.append(("tokens.usage", f"{t['usage']!r} is not a path"))
    return out


def columns(src: SourceFile, m: SourceMap) -> dict[str, tuple[str, str]]:
    """``{ledger column: (SQL text over the source row, the source field it comes from)}``."""
    naive = m.naive_times == "UTC"
    t = m.extra.get("tokens", {})
    usage = t.get("usage", USAGE)
    inclusive = t.get("prompt_includes_cache", True)

    def at(p: str) -> str:
        return src.value(path(p))

    def u(sub: str) -> tuple[str, str]:
        return at(f"{usage}.{sub}"), f"{usage}.{sub}"

    out = mapped(src, m, {col: (at(field), field) for col, field in BUILT_IN.items()})
    out["occurred_at"] = (instant(out["occurred_at"][0], naive), out["occurred_at"][1])
    status, field = out["status"]
    out["status"] = (f"(CASE {status} WHEN 'success' THEN 'ok' WHEN 'failure' THEN 'error' ELSE {status} END)", field)
    cached_a, cached_b = u("prompt_tokens_details.cached_tokens"), u("cache_read_input_tokens")
    cached = f"coalesce({cached_a[0]}, {cached_b[0]})"
    writes, writes_f = u("cache_creation_input_tokens")
    w1h, w1h_f = u("cache_creation_token_details.ephemeral_1h_input_tokens")
    prompt = at("prompt_tokens")
    out["input_tokens"] = ((prompt, "prompt_tokens") if inclusive else
                           (plus(prompt, cached, writes),
                            "prompt_tokens + cache_read_input_tokens + cache_creation_input_tokens"))
    out["cached_input_tokens"] = (cached, f"{cached_a[1]} or {cached_b[1]}")
    five = (f"(CASE WHEN {whole(writes)} IS NOT NULL AND {whole(w1h)} IS NOT NULL "
            f"THEN CAST({whole(writes)} - {whole(w1h)} AS VARCHAR) ELSE {writes} END)")
    out["cache_write_input_tokens"] = (five, f"{writes_f} - {w1h_f}")
    out["cache_write_1h_input_tokens"] = (w1h, w1h_f)
    out["output_tokens"] = (at("completion_tokens"), "completion_tokens")
    out["reasoning_tokens"] = u("completion_tokens_details.reasoning_tokens")
    start, first, end = (instant(at(f), naive) for f in ("startTime", "completionStartTime", "endTime"))
    out["ttft_ms"] = (millis(start, first), "completionStartTime - startTime")
    out["latency_ms"] = (millis(start, end), "endTime - startTime")
    spend = at("spend")
    out["reported_cost"] = (cost(spend), "spend")
    if "reported_currency" not in out:
        out["reported_currency"] = (f"(CASE WHEN nullif({spend}, '') IS NOT NULL THEN 'USD' END)", "spend")
    return out
