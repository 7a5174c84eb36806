"""OpenTelemetry: GenAI inference spans of an OTLP JSON file (as the Collector's file exporter writes it)
as ledger requests.

Each line of the file is one ``ExportTraceServiceRequest`` in OTLP's JSON encoding: ``resourceSpans``
→ ``scopeSpans`` → ``spans``, attributes as ``{"key", "value": {"stringValue" | "intValue" | ...}}``
(64-bit integers as JSON strings, times as ``...UnixNano`` strings). DuckDB unnests them; a request is
a span whose ``gen_ai.operation.name`` is an inference operation (``chat``, ``text_completion``,
``generate_content``, ``embeddings`` unless the map's ``[spans] operations`` says otherwise): agent
and tool spans are not read, as an ``invoke_agent`` span may sum its children's usage.

The token rule (OpenTelemetry GenAI semantic conventions): ``gen_ai.usage.input_tokens`` "SHOULD
include all types of input tokens, including cached tokens", and ``gen_ai.usage.cache_read.input_tokens``
and ``gen_ai.usage.cache_creation.input_tokens`` "SHOULD be included in gen_ai.usage.input_tokens":
they are parts of our ``input_tokens``, never added. ``gen_ai.usage.reasoning.output_tokens`` is a part
of ``gen_ai.usage.output_tokens``. A map may say ``[tokens] input_includes_cache = false`` for an
instrumentation that reports Anthropic's raw (uncached) count. A span is an error when it has
``error.type`` or its status code is ERROR.
"""
from __future__ import annotations

from pathlib import Path

from ..checks import lit
from ..opening import readable_path
from ..records import IngestError, Problem
from .mapfile import FieldPath, SourceMap
from .reading import SourceFile, kept
from .sql import first_of, mapped, plus

KIND = "requests"
TABLES = ("tokens", "spans")
OPERATIONS = ("chat", "text_completion", "generate_content", "embeddings")
#: Ledger columns this adapter gives when the map does not, and where from.
BUILT_IN = {"request_id": "traceId-spanId", "occurred_at": "startTimeUnixNano",
            "model": "attributes.gen_ai.request.model", "provider": "attributes.gen_ai.provider.name",
            "task_id": "traceId", "status": "attributes.error.type / status.code"}
MAPPABLE = {"request_id", "tenant", "product", "model", "provider", "task_id", "service_tier", "region", "status"}
_NANOS = "'[0-9]{1,19}'"


def _attrs(obj: str) -> str:
    """SQL: an OTLP object's ``attributes`` as a list of {k, v}, each value as text (arrays and key-value
    lists as their JSON)."""
    kinds = ("stringValue", "intValue", "doubleValue", "boolValue", "arrayValue", "kvlistValue", "bytesValue")
    v = ", ".join(f"json_extract_string(a, '$.value.{k}')" for k in kinds)
    return (f"list_transform(coalesce(json_extract({obj}, '$.attributes[*]'), []), "
            f"lambda a: {{'k': json_extract_string(a, '$.key'), 'v': coalesce({v})}})")


class Spans(SourceFile):
    """An OTLP JSON file's spans: `relation` has ``_line`` (the file's JSON line), ``_span`` (the span
    as JSON) and ``_attrs`` / ``_rattrs`` (span and resource attributes)."""

    def value(self, path: FieldPath) -> str:
        """SQL: ``attributes.NAME`` is the span attribute NAME (dots and all), ``resource.attributes.NAME``
        the resource's; any other path goes into the span object (``traceId``, ``status.code``)."""
        if path.root == "attributes" and path.rest.startswith("."):
            return _attr("_attrs", path.rest[1:])
        if path.root == "resource" and path.rest.startswith(".attributes."):
            return _attr("_rattrs", path.rest[len(".attributes."):])
        return f"json_extract_string(_span, {lit(path.json_path(with_root=True))})"



def _attr(column: str, name: str) -> str:
    return f"struct_extract(list_filter({column}, lambda a: a.k = {lit(name)})[1], 'v')"


def table_problems(m: SourceMap) -> list[tuple[str, str]]:
    """(key, message) for ``[tokens]`` or ``[spans]`` tables this adapter does not understand."""
    t, s = m.extra.get("tokens", {}), m.extra.get("spans", {})
    out = [(f"tokens.{k}", "unknown key (expected: input_includes_cache)") for k in t if k != "input_includes_cache"]
    if "input_includes_cache" in t and not isinstance(t["input_includes_cache"], bool):
        out.append(("tokens.input_includes_cache", "must be true or false"))
    out += [(f"spans.{k}", "unknown key (expected: operations)") for k in s if k != "operations"]
    ops = s.get("operations", list(OPERATIONS))
    if not isinstance(ops, list) or not ops or not all(isinstance(o, str) and o for o in ops):
        out.append(("spans.operations", "must be a list of gen_ai.operation.name values"))
    return out


def open_file(con, p: Path, fmt: str | None, link_dir: Path, m: SourceMap) -> SourceFile:
    """The file's inference spans, one row each, with the JSON line that holds them."""
    label = str(p)
    if not Path(p).is_file():
        raise IngestError([Problem(label, None, None, "no such file")])
    if (fmt or "jsonl") not in ("jsonl", "json"):
        raise IngestError([Problem(label, None, None, "OTLP traces are read as JSON Lines (the file exporter's format)")])
    read = lit(str(readable_path(Path(p), link_dir)))
    docs = f"SELECT row_number() OVER () AS _line, json AS _j FROM read_ndjson_objects({read})"
    resources = f"SELECT _line, unnest(json_extract(_j, '$.resourceSpans[*]')) AS _r FROM ({docs})"
    scopes = (f"SELECT _line, unnest(json_extract(_r, '$.scopeSpans[*]')) AS _s, {_attrs('json_extract(_r, ' + lit('$.resource') + ')')} "
              f"AS _rattrs FROM ({resources})")
    spans = f"SELECT _line, unnest(json_extract(_s, '$.spans[*]')) AS _span, _rattrs FROM ({scopes})"
    rel = f"SELECT _line, _span, {_attrs('_span')} AS _attrs, _rattrs FROM ({spans})"
    try:
        con.execute(f"DESCRIBE {rel}")
    except Exception as e:  # duckdb.Error: not JSON
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise IngestError([Problem(label, None, None, f"cannot read as OTLP JSON: {first}")]) from None
    src = Spans(path=Path(p), label=label, fmt="jsonl", relation=rel, types={}, base=docs)
    ops = ", ".join(lit(o) for o in m.extra.get("spans", {}).get("operations", OPERATIONS))
    return kept(src, f"{_attr('_attrs', 'gen_ai.operation.name')} IN ({ops})")


def _instant(nanos: str) -> str:
    """SQL: a ``...UnixNano`` string as an ISO instant (UTC); its own text when it is not one."""
    return (f"(CASE WHEN regexp_full_match({nanos}, {_NANOS}) THEN strftime(make_timestamp(CAST(CAST({nanos} AS HUGEINT) "
            f"// 1000 AS BIGINT)), '%Y-%m-%dT%H:%M:%S.%fZ') ELSE {nanos} END)")


def columns(src: SourceFile, m: SourceMap) -> dict[str, tuple[str, str]]:
    """``{ledger column: (SQL text over the span row, the source field it comes from)}``."""
    inclusive = m.extra.get("tokens", {}).get("input_includes_cache", True)

    def at(name: str) -> str:
        return _attr("_attrs", name)

    trace, span = "json_extract_string(_span, '$.traceId')", "json_extract_string(_span, '$.spanId')"
    start, end = "json_extract_string(_span, '$.startTimeUnixNano')", "json_extract_string(_span, '$.endTimeUnixNano')"
    error = (f"(CASE WHEN nullif({at('error.type')}, '') IS NOT NULL OR json_extract_string(_span, '$.status.code') "
             "IN ('2', 'STATUS_CODE_ERROR') THEN 'error' ELSE 'ok' END)")
    built = {
        "request_id": (f"{trace} || '-' || {span}", "traceId-spanId"),
        "occurred_at": (_instant(start), "startTimeUnixNano"),
        "model": (first_of(at("gen_ai.request.model"), at("gen_ai.response.model")),
                  "attributes.gen_ai.request.model"),
        "provider": (first_of(at("gen_ai.provider.name"), at("gen_ai.system")), "attributes.gen_ai.provider.name"),
        "task_id": (trace, "traceId"),
        "status": (error, "attributes.error.type / status.code"),
    }
    out = mapped(src, m, built)
    u = "gen_ai.usage."
    given, reads, writes = at(u + "input_tokens"), at(u + "cache_read.input_tokens"), at(u + "cache_creation.input_tokens")
    out["input_tokens"] = ((given, "attributes." + u + "input_tokens") if inclusive else
                           (plus(given, reads, writes), f"attributes.{u}input_tokens + cache reads + cache writes"))
    out["cached_input_tokens"] = (reads, f"attributes.{u}cache_read.input_tokens")
    out["cache_write_input_tokens"] = (writes, f"attributes.{u}cache_creation.input_tokens")
    out["output_tokens"] = (at(u + "output_tokens"), f"attributes.{u}output_tokens")
    out["reasoning_tokens"] = (at(u + "reasoning.output_tokens"), f"attributes.{u}reasoning.output_tokens")
    both = f"regexp_full_match({start}, {_NANOS}) AND regexp_full_match({end}, {_NANOS})"
    out["latency_ms"] = (f"(CASE WHEN {both} THEN CAST((CAST({end} AS HUGEINT) - CAST({start} AS HUGEINT)) / 1000000.0 "
                         "AS DOUBLE) END)", "endTimeUnixNano - startTimeUnixNano")
    out["_where"] = (f"'span ' || coalesce({span}, '?')", "spanId")
    out["_dupes"] = ("(len(list_distinct(list_transform(_attrs, lambda a: a.k))) < len(_attrs))", "attributes")
    return out


def checks(m: SourceMap) -> list[tuple[str, str, str]]:
    """Row problems of this source: a span whose attributes repeat a key (OTLP forbids it; which one
    counts would be a guess)."""
    return [("_dupes", "attributes", "'an attribute key appears twice (' || _where || ')'")]
