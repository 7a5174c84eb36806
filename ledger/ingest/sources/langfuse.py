"""Langfuse: GENERATION observations of a Langfuse export or of its public API (JSON Lines, JSON, CSV
or Parquet) as ledger requests.

Two shapes are read, told apart by their field names (a file is one or the other):

- the blob-storage export's observation rows (``observations_v2/``, the enriched export, or the
  legacy ``observations/``), snake_case: ``id, trace_id, type, start_time, end_time,
  completion_start_time, provided_model_name, usage_details, cost_details, total_cost, level,
  metadata, user_id, session_id, tags, ...`` (docs/adapters.md cites the field reference);
- the public API's observations, camelCase (``GET /api/public/v2/observations`` and the older
  ``GET /api/public/observations``, langfuse/langfuse ``fern/apis/server/definition/observations.yml``
  and ``legacy/observations-v1.yml``): ``id, traceId, type, startTime, endTime, completionStartTime,
  providedModelName`` (v1: ``model``), ``usageDetails, costDetails, totalCost`` (v1:
  ``calculatedTotalCost``), ``level, metadata``; a response page ``{"data": [...], "meta": {...}}``
  is read for the observations of its ``data``, as is an array or JSON Lines of observations.

Rows of another ``type`` (spans, events, tools, ...) are not LLM requests and are not read.

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
Times are UTC (the export writes no offset, the API a ``Z``); ``level`` ERROR is an error; the total
cost (USD) is kept as ``reported_cost``. A trace id of 32 hex digits (a W3C/OpenTelemetry trace id)
is the task id in lower case, so it joins with the same trace read from OpenTelemetry and its scores.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...errors import Problem
from ...sqltext import literal as lit
from ..checks import DECIMAL_RE
from ..records import IngestError
from .mapfile import SourceMap
from .reading import SourceFile, instant, kept, open_source
from .sql import agreed, cost, disagreement, mapped, millis, path, plus, whole

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
#: The fields read, as each shape spells them (a tuple: the same value under an older API's name too).
EXPORT = {"id": "id", "trace_id": "trace_id", "type": "type", "start_time": "start_time", "end_time": "end_time",
          "completion_start_time": "completion_start_time", "model": ("provided_model_name",),
          "usage": "usage_details", "cost": "cost_details", "total_cost": ("total_cost",), "level": "level"}
API = {"id": "id", "trace_id": "traceId", "type": "type", "start_time": "startTime", "end_time": "endTime",
       "completion_start_time": "completionStartTime", "model": ("providedModelName", "model"),
       "usage": "usageDetails", "cost": "costDetails", "total_cost": ("totalCost", "calculatedTotalCost"),
       "level": "level"}
HEX_TRACE = "[0-9A-Fa-f]{32}"


@dataclass
class Shaped(SourceFile):
    """A Langfuse file with the field `names` of its shape (:data:`EXPORT` or :data:`API`), whether its
    records are API response `pages` (``{"data": [...]}``, several observations a line), and for pages
    the `exact` readings of the adapter's numbers: (path, scale) -> SQL of the DECIMAL, read once per
    page from the page's own digits (DuckDB takes an observation out of its page as JSON it writes
    again, a number's digits as a double's)."""

    names: dict = field(default_factory=lambda: dict(EXPORT))
    pages: bool = False
    exact: dict = field(default_factory=dict)

    def decimal(self, path, scale: int) -> str:
        """SQL: as :meth:`SourceFile.decimal`; in a page, from the page's digits (see the class)."""
        col = self.exact.get((path.text, scale))
        if col is None:
            return super().decimal(path, scale)
        text = self.value(path)
        return f"(CASE WHEN regexp_full_match(trim({text}), {lit(DECIMAL_RE)}) THEN {col} END)"


def shaped(con, src: SourceFile, export: dict, api: dict, numbers=lambda names: []) -> Shaped:
    """`src` with the field names of the shape its records have: the export's snake_case or the API's
    camelCase (told by `export` and `api`'s ``trace_id`` and ``start_time``-like fields). API response
    pages (``{"data": [...], "meta": {...}}``) are read for the objects of their ``data``, the numbers
    `numbers(names)` gives (``[(path, scales)]``) exactly (:class:`Shaped`). A file whose records mix
    both shapes is refused (which field means what would be a guess)."""
    keys = [k for k in ("trace_id", "start_time", "timestamp", "string_value") if k in export and export[k] != api[k]]
    page = "json_type(_j, '$.data') = 'ARRAY'"
    pages = src.fmt == "jsonl" and con.execute(f"SELECT count(*) FILTER (WHERE {page}) FROM ({src.relation})").fetchone()[0] > 0
    elems = f"(CASE WHEN {page} THEN json_extract(_j, '$.data[*]') ELSE [_j] END)"

    def has(names: dict) -> int:
        if src.fmt != "jsonl":
            return int(any(names[k] in src.types for k in keys))
        cond = " OR ".join(f"json_exists(e, {lit('$.' + chr(34) + names[k] + chr(34))})" for k in keys)
        return con.execute(f"SELECT count(*) FILTER (WHERE len(list_filter({elems}, lambda e: {cond})) > 0) "
                           f"FROM ({src.relation})").fetchone()[0]

    snake, camel = has(export), has(api)
    if snake and camel:
        raise IngestError([Problem(file=src.label,
                                   message=f"mixes the export's fields ({export[keys[0]]}) and the API's "
                                           f"({api[keys[0]]}): a file is one shape or the other")])
    names = dict(api if camel else export)
    exact: dict = {}
    if pages:
        by_scale: dict[int, list] = {}
        for text, scales in numbers(names):
            for scale in scales:
                by_scale.setdefault(scale, []).append(path(text))
        cols = [f"unnest({elems}) AS _j"]
        for scale, paths in by_scale.items():
            shape: dict = {}
            for p in paths:
                steps, node = p.segments(with_root=True), shape
                if not all(isinstance(s, str) for s in steps):
                    continue
                for s in steps[:-1]:
                    node = node.setdefault(s, {})
                    if not isinstance(node, dict):
                        break
                else:
                    node[steps[-1]] = f"DECIMAL(38,{scale})"
                    exact[(p.text, scale)] = (f"_exact{scale}" + "".join(f"[{lit(s)}]" for s in steps))
            one = lit(json.dumps(shape))
            cols.append(f"unnest(CASE WHEN {page} THEN json_transform(_j, {lit(json.dumps({'data': [shape]}))}).data "
                        f"ELSE [json_transform(_j, {one})] END) AS _exact{scale}")
        rel = f"SELECT _line, {', '.join(cols)} FROM ({src.relation})"
        src = replace(src, relation=rel, base=src.base or src.relation)
    fields = {k: v for k, v in vars(src).items() if k in SourceFile.__dataclass_fields__}
    return Shaped(**fields, names=names, pages=pages, exact=exact)


def trace_id(text: str) -> str:
    """SQL: a trace id as the task id: 32 hex digits (a W3C trace id: Langfuse's own since its SDKs
    run on OpenTelemetry) in lower case, so that it joins with OpenTelemetry's and the scores' ids;
    any other id as written."""
    return f"(CASE WHEN regexp_full_match({text}, {lit(HEX_TRACE)}) THEN lower({text}) ELSE {text} END)"


def table_problems(m: SourceMap) -> list[tuple[str, str]]:
    """(key, message) for a ``[tokens]`` table this adapter does not understand."""
    t = m.extra.get("tokens", {})
    out = [(f"tokens.{k}", "unknown key (expected: inclusive)") for k in t if k != "inclusive"]
    if "inclusive" in t and not isinstance(t["inclusive"], bool):
        out.append(("tokens.inclusive", "must be true or false"))
    return out


def open_file(con, p: Path, fmt: str | None, link_dir: Path, m: SourceMap) -> SourceFile:
    """The export or API file, keeping only its GENERATION observations (line numbers of the whole file)."""
    src = shaped(con, open_source(con, p, fmt, link_dir), EXPORT, API, numbers)
    return kept(src, f"{src.value(path(src.names['type']))} = 'GENERATION'")


def numbers(n: dict) -> list[tuple[str, tuple[int, ...]]]:
    """The numbers this adapter reads exactly (its costs, to 12 places), by the shape's names `n`."""
    return [(f, (12,)) for f in (*n["total_cost"], f"{n['cost']}.total")]


def _sum(src: SourceFile, usage: str, keys: tuple[str, ...]) -> str:
    """SQL: the sum of the usage keys present (NULL when none is; a key's text kept when not whole)."""
    values = [src.value(path(f"{usage}.{k}")) for k in keys]
    any_given = " OR ".join(f"{v} IS NOT NULL" for v in values)
    total = plus("'0'", *values)
    return f"(CASE WHEN {any_given} THEN {total} END)"


def columns(src: SourceFile, m: SourceMap) -> dict[str, tuple[str, str]]:
    """``{ledger column: (SQL text over the source row, the source field it comes from)}``."""
    inclusive = m.extra.get("tokens", {}).get("inclusive", False)
    n = getattr(src, "names", EXPORT)

    def at(p: str) -> str:
        return src.value(path(p))

    out: dict[str, tuple[str, str]] = {}
    model = agreed([(at(f), f) for f in n["model"]], "model", out, "model", key=lambda t: t)
    built = {"request_id": (at(n["id"]), n["id"]), "occurred_at": (at(n["start_time"]), n["start_time"]),
             "model": (model, n["model"][0]), "task_id": (at(n["trace_id"]), n["trace_id"]),
             "status": (at(n["level"]), n["level"])}
    out.update(mapped(src, m, built))
    if out["task_id"][1] == n["trace_id"]:
        out["task_id"] = (trace_id(out["task_id"][0]), n["trace_id"])
    out["occurred_at"] = (instant(out["occurred_at"][0], True), out["occurred_at"][1])
    status, fld = out["status"]
    out["status"] = (f"(CASE WHEN {status} = 'ERROR' THEN 'error' WHEN {status} IN ('DEBUG', 'DEFAULT', 'WARNING') "
                     f"THEN 'ok' ELSE {status} END)", fld)
    usage = n["usage"]
    u = f"{usage}."
    fresh = agreed([(at(u + "input"), u + "input"), (at(u + "input_tokens"), u + "input_tokens")], "input", out,
                   "input tokens")
    reads, w5, w1h = _sum(src, usage, READS), _sum(src, usage, WRITES_5M), _sum(src, usage, WRITES_1H)
    out_own = agreed([(at(u + "output"), u + "output"), (at(u + "output_tokens"), u + "output_tokens")], "output", out,
                     "output tokens")
    reasoning = _sum(src, usage, REASONING)
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
    start, first, end = (instant(at(n[f]), True) for f in ("start_time", "completion_start_time", "end_time"))
    out["ttft_ms"] = (millis(start, first), f"{n['completion_start_time']} - {n['start_time']}")
    out["latency_ms"] = (millis(start, end), f"{n['end_time']} - {n['start_time']}")
    costs = [(cost(src, path(f)), f) for f in (*n["total_cost"], f"{n['cost']}.total")]
    spent = agreed(costs, "cost", out, "cost", key=lambda t: f"TRY_CAST({t} AS DECIMAL(38,12))")
    out["reported_cost"] = (spent, n["total_cost"][0])
    if "reported_currency" not in out:
        out["reported_currency"] = (f"(CASE WHEN {spent} IS NOT NULL THEN 'USD' END)", n["total_cost"][0])
    out["_total"] = (at(u + "total"), u + "total")
    if getattr(src, "pages", False):
        out["_where"] = (f"'observation ' || coalesce({at(n['id'])}, '?')", n["id"])
    return out


def checks(m: SourceMap, src: SourceFile | None = None) -> list[tuple[str, str, str]]:
    """Row problems of this source: the usage buckets must add up to the row's own ``total``; the same
    value written twice (``input`` and ``input_tokens``, the total cost and ``cost_details.total``, an
    API's two names of the model) must be one value."""
    n = getattr(src, "names", EXPORT)
    u = f"{n['usage']}."
    both = f"{whole('input_tokens')} + {whole('output_tokens')}"
    flag = f"(_total IS NOT NULL AND {whole('_total')} IS NOT NULL AND ({both}) IS DISTINCT FROM {whole('_total')})"
    rule = "input + output" if m.extra.get("tokens", {}).get("inclusive", False) else "the disjoint usage buckets"
    where = " || coalesce(' (' || _where || ')', '')" if getattr(src, "pages", False) else ""
    msg = (f"'{rule} add up to ' || coalesce(CAST({both} AS VARCHAR), '?') || ', not to the total ' || _total || "
           f"{lit(': the cached tokens are counted twice, or [tokens] inclusive is wrong for this export (docs/adapters.md)')}"
           f"{where}")
    return [(flag, f"{u}total", msg),
            disagreement("input", f"{u}input (input_tokens)"), disagreement("output", f"{u}output (output_tokens)"),
            disagreement("cost", f"{n['total_cost'][0]} (reported_cost)"), disagreement("model", f"{n['model'][0]} (model)")]
