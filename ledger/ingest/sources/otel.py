"""OpenTelemetry: GenAI inference spans of an OTLP JSON file (as the Collector's file exporter writes it)
as ledger requests.

Each line of the file is one ``ExportTraceServiceRequest`` in OTLP's JSON encoding: ``resourceSpans``
→ ``scopeSpans`` → ``spans``, attributes as ``{"key", "value": {"stringValue" | "intValue" | ...}}``
(64-bit integers as JSON strings, times as ``...UnixNano`` strings). DuckDB unnests them; a request is
a span whose ``gen_ai.operation.name`` is an inference operation (``chat``, ``text_completion``,
``generate_content``, ``embeddings`` unless the map's ``[spans] operations`` says otherwise): agent
and tool spans are not read, as an ``invoke_agent`` span may sum its children's usage. A file with
no inference span is refused, naming the operations read and how many spans it has.

The token rule (OpenTelemetry GenAI semantic conventions): ``gen_ai.usage.input_tokens`` "SHOULD
include all types of input tokens, including cached tokens", and ``gen_ai.usage.cache_read.input_tokens``
and ``gen_ai.usage.cache_creation.input_tokens`` "SHOULD be included in gen_ai.usage.input_tokens":
they are parts of our ``input_tokens``, never added. ``gen_ai.usage.reasoning.output_tokens`` is a part
of ``gen_ai.usage.output_tokens``. A map may say ``[tokens] input_includes_cache = false`` for an
instrumentation that reports Anthropic's raw (uncached) count. A span is an error when it has
``error.type`` or its status code is ERROR.

Ids are checked and kept in one spelling: ``traceId`` 32 hex digits and ``spanId`` 16 (OTLP/JSON writes
them hex-encoded, case-insensitive; all zeros is invalid), in lower case, so that they join with other
tools' ids. A repeated attribute key (in a span, its resource or its scope: OTLP forbids it) and an
``arrayValue`` or ``kvlistValue`` where one value goes are refused, naming the row.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from ...errors import Problem
from ...sqltext import literal as lit
from ..records import IngestError
from .jsondocs import Documents
from .mapfile import FieldPath, SourceMap
from .reading import SourceFile, kept, open_source, unreadable
from .sql import first_of, mapped, path, plus

KIND = "requests"
TABLES = ("tokens", "spans")
OPERATIONS = ("chat", "text_completion", "generate_content", "embeddings")
#: Ledger columns this adapter gives when the map does not, and where from.
BUILT_IN = {"request_id": "traceId-spanId", "occurred_at": "startTimeUnixNano",
            "model": "attributes.gen_ai.request.model", "provider": "attributes.gen_ai.provider.name",
            "task_id": "traceId", "status": "attributes.error.type / status.code"}
MAPPABLE = {"request_id", "tenant", "product", "model", "provider", "task_id", "service_tier", "region", "status"}
_NANOS = "'[0-9]{1,19}'"
#: An OTLP AnyValue's kinds; the structured ones are not a single value.
KINDS = ("stringValue", "intValue", "doubleValue", "boolValue", "arrayValue", "kvlistValue", "bytesValue")
STRUCTURED = ("arrayValue", "kvlistValue")
#: The span's ids (hex in OTLP/JSON): field -> hex digits. The checked ones are a span's own.
IDS = {"traceId": 32, "spanId": 16, "parentSpanId": 16}
CHECKED_IDS = ("traceId", "spanId")
#: Where attributes are: a map path's beginning -> the column of the row's attribute list.
ATTRIBUTES = {"attributes": "_attrs", "resource.attributes": "_rattrs", "scope.attributes": "_sattrs"}


def _attrs(obj: str) -> str:
    """SQL: an OTLP object's ``attributes`` as a list of {k, v, t}: the key, the value as text (arrays and
    key-value lists as their JSON) and the value's kind (``stringValue``, ...)."""
    v = ", ".join(f"json_extract_string(a, '$.value.{k}')" for k in KINDS)
    return (f"list_transform(coalesce(json_extract({obj}, '$.attributes[*]'), []), "
            f"lambda a: {{'k': json_extract_string(a, '$.key'), 'v': coalesce({v}), "
            f"'t': json_keys(a, '$.value')[1]}})")


class Spans(SourceFile):
    """An OTLP JSON file's spans: `relation` has ``_line`` (the file's JSON line), ``_span`` (the span
    as JSON), ``_scope`` (its scope) and ``_attrs`` / ``_rattrs`` / ``_sattrs`` (span, resource and scope
    attributes)."""

    def value(self, path: FieldPath) -> str:
        """SQL: ``attributes.NAME`` is the span attribute NAME (dots and all), ``resource.attributes.NAME``
        the resource's and ``scope.attributes.NAME`` the scope's; ``scope.name`` and ``scope.version``
        the scope's own; any other path goes into the span object (``traceId``, ``status.code``), its
        ids in lower case."""
        for root, column in ATTRIBUTES.items():
            if path.text.startswith(root + ".") and len(path.text) > len(root) + 1:
                name = path.text[len(root) + 1:]
                kind = _attr(column, name, "t")
                self.docs.flags.setdefault(f"{path.text}\x00kind", (
                    f"({kind} IN ({', '.join(lit(k) for k in STRUCTURED)}))",
                    f"'is an OTLP ' || {kind} || {lit(', not a single value')}"))
                return _attr(column, name)
        if path.root == "scope":
            return self.docs.text(self.docs.root("_scope"), path.segments(), path.text)
        text = self.as_written(path)
        return f"lower({text})" if path.text in IDS else text

    def as_written(self, path: FieldPath) -> str:
        """SQL: the text at `path` in the span object, as written (an id not lower-cased)."""
        return self.docs.text(self.docs.root("_span"), path.segments(with_root=True), path.text)


def _attr(column: str, name: str, part: str = "v") -> str:
    return f"struct_extract(list_filter({column}, lambda a: a.k = {lit(name)})[1], {lit(part)})"


def _dupes(column: str) -> str:
    return f"(len(list_distinct(list_transform({column}, lambda a: a.k))) < len({column}))"


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
    """The file's inference spans, one row each, with the JSON line that holds them. A file with none is
    refused, naming the operations read and how many spans it has (a wrong file, or a wrong
    ``[spans] operations``: never an empty batch)."""
    label = str(p)
    if not Path(p).is_file():
        raise IngestError([Problem(file=label, message="no such file")])
    if (fmt or "jsonl") not in ("jsonl", "json"):
        raise IngestError([Problem(file=label, message="OTLP traces are read as JSON (JSON Lines as the file exporter "
                                                       "writes them, or one OTLP/HTTP JSON document)")])
    whole = open_source(con, Path(p), "jsonl", link_dir)  # every JSON shape, gzip too (ingest.shapes)
    docs = whole.relation
    resources = f"SELECT _line, unnest(json_extract(_j, '$.resourceSpans[*]')) AS _r FROM ({docs})"
    scopes = (f"SELECT _line, unnest(json_extract(_r, '$.scopeSpans[*]')) AS _s, {_attrs('json_extract(_r, ' + lit('$.resource') + ')')} "
              f"AS _rattrs FROM ({resources})")
    spans = (f"SELECT _line, unnest(json_extract(_s, '$.spans[*]')) AS _span, _rattrs, "
             f"json_extract(_s, '$.scope') AS _scope FROM ({scopes})")
    rel = (f"SELECT _line, _span, {_attrs('_span')} AS _attrs, _rattrs, _scope, {_attrs('_scope')} AS _sattrs "
           f"FROM ({spans})")
    ops = m.extra.get("spans", {}).get("operations", list(OPERATIONS))
    listed = ", ".join(lit(o) for o in ops)
    op = _attr("_attrs", "gen_ai.operation.name")
    try:
        n, inference, seen = con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE {op} IN ({listed})), "
            f"list_sort(list(DISTINCT {op}) FILTER (WHERE {op} IS NOT NULL)) FROM ({rel})").fetchone()
    except duckdb.Error as e:  # not JSON: the place, in the ledger's words (reading.unreadable)
        raise IngestError([unreadable(label, "jsonl", whole.read_path, e, whole.shape)]) from None
    if not inference:
        what = (f"{n} span{'s' * (n != 1)} read" if n else
                "0 spans read (OTLP JSON has resourceSpans[].scopeSpans[].spans[])")
        seen = seen or []
        others = f"; their operations: {', '.join(seen[:10])}{', ...' * (len(seen) > 10)}" if seen else ""
        raise IngestError([Problem(file=label, message=f"no GenAI inference span (gen_ai.operation.name "
                                                       f"{', '.join(ops)}): {what}{others}")])
    src = Spans(**{**vars(whole), "relation": rel, "types": {}, "base": docs, "docs": Documents()})
    return kept(src, f"{op} IN ({listed})")


def _instant(nanos: str) -> str:
    """SQL: a ``...UnixNano`` string as an ISO instant (UTC); its own text when it is not one."""
    return (f"(CASE WHEN regexp_full_match({nanos}, {_NANOS}) THEN strftime(make_timestamp(CAST(CAST({nanos} AS HUGEINT) "
            f"// 1000 AS BIGINT)), '%Y-%m-%dT%H:%M:%S.%fZ') ELSE {nanos} END)")


def columns(src: SourceFile, m: SourceMap) -> dict[str, tuple[str, str]]:
    """``{ledger column: (SQL text over the span row, the source field it comes from)}``."""
    inclusive = m.extra.get("tokens", {}).get("input_includes_cache", True)

    def at(p: str) -> str:
        return src.value(path(p))

    def attr(name: str) -> str:
        return at("attributes." + name)

    trace, span = at("traceId"), at("spanId")
    start, end = at("startTimeUnixNano"), at("endTimeUnixNano")
    error = (f"(CASE WHEN nullif({attr('error.type')}, '') IS NOT NULL OR {at('status.code')} "
             "IN ('2', 'STATUS_CODE_ERROR') THEN 'error' ELSE 'ok' END)")
    built = {
        "request_id": (f"{trace} || '-' || {span}", "traceId-spanId"),
        "occurred_at": (_instant(start), "startTimeUnixNano"),
        "model": (first_of(attr("gen_ai.request.model"), attr("gen_ai.response.model")),
                  "attributes.gen_ai.request.model"),
        "provider": (first_of(attr("gen_ai.provider.name"), attr("gen_ai.system")), "attributes.gen_ai.provider.name"),
        "task_id": (trace, "traceId"),
        "status": (error, "attributes.error.type / status.code"),
    }
    out = mapped(src, m, built)
    u = "gen_ai.usage."
    given, reads, writes = attr(u + "input_tokens"), attr(u + "cache_read.input_tokens"), attr(u + "cache_creation.input_tokens")
    out["input_tokens"] = ((given, "attributes." + u + "input_tokens") if inclusive else
                           (plus(given, reads, writes), f"attributes.{u}input_tokens + cache reads + cache writes"))
    out["cached_input_tokens"] = (reads, f"attributes.{u}cache_read.input_tokens")
    out["cache_write_input_tokens"] = (writes, f"attributes.{u}cache_creation.input_tokens")
    out["output_tokens"] = (attr(u + "output_tokens"), f"attributes.{u}output_tokens")
    out["reasoning_tokens"] = (attr(u + "reasoning.output_tokens"), f"attributes.{u}reasoning.output_tokens")
    both = f"regexp_full_match({start}, {_NANOS}) AND regexp_full_match({end}, {_NANOS})"
    out["latency_ms"] = (f"(CASE WHEN {both} THEN CAST((CAST({end} AS HUGEINT) - CAST({start} AS HUGEINT)) / 1000000.0 "
                         "AS DOUBLE) END)", "endTimeUnixNano - startTimeUnixNano")
    out["_where"] = (f"'span ' || coalesce({src.as_written(path('spanId'))}, '?')", "spanId")
    out["_dupes"] = (_dupes("_attrs"), "attributes")
    out["_rdupes"] = (_dupes("_rattrs"), "resource.attributes")
    out["_sdupes"] = (_dupes("_sattrs"), "scope.attributes")
    for fld in CHECKED_IDS:
        digits, v = IDS[fld], at(fld)
        out[f"_{fld}"] = (f"coalesce({src.as_written(path(fld))}, '')", fld)
        out[f"_{fld}_bad"] = (f"(NOT regexp_full_match(coalesce({v}, ''), '[0-9a-f]{{{digits}}}') "
                              f"OR {v} = {lit('0' * digits)})", fld)
    return out


def checks(m: SourceMap, src: SourceFile | None = None) -> list[tuple[str, str, str]]:
    """Row problems of this source: a span whose attributes (or its resource's, or its scope's) repeat a
    key (OTLP forbids it; which one counts would be a guess); a trace or span id that is not hex of its
    length (OTLP/JSON writes ids hex-encoded) or is all zeros (invalid)."""
    out = [("_dupes", "attributes", "'an attribute key appears twice (' || _where || ')'"),
           ("_rdupes", "resource.attributes", "'a resource attribute key appears twice (' || _where || ')'"),
           ("_sdupes", "scope.attributes", "'a scope attribute key appears twice (' || _where || ')'")]
    for fld in CHECKED_IDS:
        what, digits = ("trace" if fld == "traceId" else "span"), IDS[fld]
        out.append((f"_{fld}_bad", fld, f"'''' || _{fld} || ''' is not a {what} id ({digits} hex digits, not all zero) "
                                        "(' || _where || ')'"))
    return out
