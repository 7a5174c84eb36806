"""LiteLLM: rows of the proxy's ``LiteLLM_SpendLogs`` table (CSV, JSON Lines or Parquet) as ledger requests.

The token rule (docs/adapters.md, with the LiteLLM code and issues it was checked against):

- ``prompt_tokens`` is all of the input, cache reads and cache writes included: LiteLLM normalizes
  every provider to OpenAI's convention (Anthropic's uncached ``input_tokens`` + cache reads + cache
  writes). It is our ``input_tokens`` as it is. A map may say ``[tokens] prompt_includes_cache =
  false`` for logs of a LiteLLM that wrote Anthropic's uncached count there: then the reads and
  writes are added to it.
- the cache reads are ``prompt_tokens_details.cached_tokens`` = ``cache_read_input_tokens`` of the
  usage object LiteLLM keeps in ``metadata.usage_object``; the cache writes are its
  ``cache_creation_input_tokens`` = ``prompt_tokens_details.cache_creation_tokens``, of which
  ``cache_creation_token_details.ephemeral_1h_input_tokens`` (at the top, or under
  ``prompt_tokens_details``) had a 1-hour TTL (the rest: 5 minutes). LiteLLM's ``Usage`` writes the
  same tokens in both places: each is counted once, and two places with two numbers are refused
  (:func:`checks`). They are parts of ``input_tokens``, never added again.
- ``completion_tokens`` includes reasoning (``completion_tokens_details.reasoning_tokens``).
- ``status`` ``success`` is ok, ``failure`` is error; ``spend`` (USD, a DOUBLE PRECISION column) is
  kept as ``reported_cost``, rounded to 12 decimal places here, explicitly, from its digits as
  written (never through a double).
"""
from __future__ import annotations

from .mapfile import SourceMap, parse_path
from .reading import SourceFile, instant
from .sql import agreed, cost, disagreement, mapped, millis, path, plus, whole

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

    once = src.docs.named  # SQL computed once per row, in a column of its own (the start instant: three times)
    out = mapped(src, m, {col: (at(field), field) for col, field in BUILT_IN.items()})
    out["occurred_at"] = (once(instant(out["occurred_at"][0], naive)), out["occurred_at"][1])
    status, field = out["status"]
    out["status"] = (f"(CASE {status} WHEN 'success' THEN 'ok' WHEN 'failure' THEN 'error' ELSE {status} END)", field)
    # The same tokens, where LiteLLM's Usage writes them more than once (litellm/types/utils.py: Usage.__init__
    # copies cache_read_input_tokens into prompt_tokens_details.cached_tokens and cache_creation_input_tokens
    # into prompt_tokens_details.cache_creation_tokens; the 5-minute/1-hour split is the wrapper's
    # cache_creation_token_details): counted once; two places holding two numbers are refused.
    # each part once per row, in a layer of its own (``Documents.named``), then the sums over them

    def wh(t: str) -> str:
        return whole(t, once)

    reads = once(agreed([u("prompt_tokens_details.cached_tokens"), u("cache_read_input_tokens"),
                         u("prompt_cache_hit_tokens")], "reads", out, "cache reads", key=wh))
    writes = once(agreed([u("cache_creation_input_tokens"), u("prompt_tokens_details.cache_creation_tokens")],
                         "writes", out, "cache writes", key=wh))
    w5 = once(agreed([u("cache_creation_token_details.ephemeral_5m_input_tokens"),
                      u("prompt_tokens_details.cache_creation_token_details.ephemeral_5m_input_tokens")],
                     "writes_5m", out, "5-minute cache writes", key=wh))
    w1h = once(agreed([u("cache_creation_token_details.ephemeral_1h_input_tokens"),
                       u("prompt_tokens_details.cache_creation_token_details.ephemeral_1h_input_tokens")],
                      "writes_1h", out, "1-hour cache writes", key=wh))
    w, f5, h1 = wh(writes), wh(w5), wh(w1h)
    given = lambda t: f"nullif({t}, '') IS NOT NULL"  # noqa: E731
    # all the writes: as written, else the sum of their 5-minute and 1-hour parts
    parts = plus("'0'", w5, w1h, once=once)
    total = once(f"(CASE WHEN {given(writes)} THEN {writes} WHEN {given(w5)} OR {given(w1h)} THEN {parts} END)")
    one_h = once(f"(CASE WHEN {given(w1h)} THEN {w1h} WHEN {f5} IS NOT NULL AND {w} IS NOT NULL "
                 f"THEN CAST({w} - {f5} AS VARCHAR) END)")
    five = (f"(CASE WHEN {wh(total)} IS NOT NULL AND {wh(one_h)} IS NOT NULL "
            f"THEN CAST({wh(total)} - {wh(one_h)} AS VARCHAR) ELSE {total} END)")
    out["_split_bad"] = (f"({w} IS NOT NULL AND ({f5} > {w} OR {h1} > {w} OR ({f5} IS NOT NULL AND {h1} IS NOT NULL "
                         f"AND {f5} + {h1} <> {w})))", u("cache_creation_input_tokens")[1])
    out["_split_said"] = (f"(CASE WHEN _split_bad THEN 'the cache writes ' || {writes} || ' are not their "
                          f"5-minute part ' || coalesce({w5}, '-') || ' + their 1-hour part ' || coalesce({w1h}, '-') END)",
                          u("cache_creation_input_tokens")[1])
    prompt = at("prompt_tokens")
    out["input_tokens"] = ((prompt, "prompt_tokens") if inclusive else
                           (plus(prompt, reads, total, once=once),
                            "prompt_tokens + cache_read_input_tokens + cache_creation_input_tokens"))
    out["cached_input_tokens"] = (reads, " or ".join(f for _, f in (u("prompt_tokens_details.cached_tokens"),
                                                                     u("cache_read_input_tokens"))))
    out["cache_write_input_tokens"] = (five, f"{u('cache_creation_input_tokens')[1]} - "
                                             f"{u('cache_creation_token_details.ephemeral_1h_input_tokens')[1]}")
    out["cache_write_1h_input_tokens"] = (one_h, u("cache_creation_token_details.ephemeral_1h_input_tokens")[1])
    out["output_tokens"] = (at("completion_tokens"), "completion_tokens")
    out["reasoning_tokens"] = u("completion_tokens_details.reasoning_tokens")
    start, first, end = (once(instant(at(f), naive)) for f in ("startTime", "completionStartTime", "endTime"))
    out["ttft_ms"] = (millis(start, first, once), "completionStartTime - startTime")
    out["latency_ms"] = (millis(start, end, once), "endTime - startTime")
    spend = at("spend")
    out["reported_cost"] = (cost(src, path("spend")), "spend")
    if "reported_currency" not in out:
        out["reported_currency"] = (f"(CASE WHEN nullif({spend}, '') IS NOT NULL THEN 'USD' END)", "spend")
    return out


def checks(m: SourceMap, src: SourceFile | None = None) -> list[tuple[str, str, str]]:
    """Row problems of this source: the same tokens written in two places of the usage object with two
    numbers (which is right would be a guess), and cache writes that are not their two parts."""
    usage = m.extra.get("tokens", {}).get("usage", USAGE)
    return [disagreement("reads", f"{usage}.prompt_tokens_details.cached_tokens (cached_input_tokens)"),
            disagreement("writes", f"{usage}.cache_creation_input_tokens (cache_write_input_tokens)"),
            disagreement("writes_5m", f"{usage}.cache_creation_token_details.ephemeral_5m_input_tokens "
                                      "(cache_write_input_tokens)"),
            disagreement("writes_1h", f"{usage}.cache_creation_token_details.ephemeral_1h_input_tokens "
                                      "(cache_write_1h_input_tokens)"),
            ("_split_bad", f"{usage}.cache_creation_input_tokens (cache_write_input_tokens)", "_split_said")]
