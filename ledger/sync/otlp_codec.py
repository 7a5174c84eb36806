"""The OTLP/HTTP trace requests and responses of ``ledger otlp serve``, with the official
``opentelemetry-proto`` messages (``ExportTraceServiceRequest``/``Response``) and ``google.rpc.Status``.

A request body (``application/x-protobuf`` or ``application/json``, gzip or not) becomes one line of
OTLP JSON as the Collector's file exporter writes it (ids in hex, 64-bit integers as strings), which
is what the ``otel`` adapter reads (docs/adapters.md): only the GenAI inference spans of the map's
operations are kept (the others are counted and dropped), and a kept span the ingest would refuse
for what it is alone (an id that is not hex of its length or is all zeros, an attribute key written
twice, a token count that is not a whole number ≥ 0) is rejected here, one by one, and told to the
client as OTLP's partial success, so that one bad span never holds back the micro-batch of others.
"""
from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass

from ..errors import LedgerError

PROTOBUF, JSON = "application/x-protobuf", "application/json"
TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cache_read.input_tokens",
          "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.reasoning.output_tokens")
OPERATION = "gen_ai.operation.name"
#: Spans per OTLP JSON document written: the otel adapter unnests each document in DuckDB, whose memory
#: grows with a document's size (a request of 512 spans as one document ran out of the ingest's 1.2 GB
#: at 2,000 spans), so a request is written as documents of at most this many spans, each with its
#: resource and scope.
LINE_SPANS = 64


class Refused(LedgerError):
    """A request refused whole: `status` is the HTTP status (400 malformed, 413 too large, 415 not a
    content type of OTLP/HTTP), the message says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


@dataclass(frozen=True)
class Decoded:
    """A request decoded. Fields: `line` (the kept spans as OTLP JSON documents of at most
    :data:`LINE_SPANS` spans, one a line, UTF-8, no final line break; None when no span was kept), `spans` (spans in the request), `kept` (GenAI inference spans
    kept), `dropped` (other spans: counted, not read), `rejected` (inference spans refused) and `why`
    (the first rejection's reason, for the partial success' message)."""

    line: bytes | None
    spans: int
    kept: int
    dropped: int
    rejected: int
    why: str = ""


def media(content_type: str | None) -> str:
    """The media type of a Content-Type header (``application/json; charset=utf-8`` -> JSON)."""
    return (content_type or "").split(";")[0].strip().lower()


def unpack(body: bytes, encoding: str | None, limit: int) -> bytes:
    """The body, gunzipped when its Content-Encoding says gzip, never more than `limit` bytes (a gzip
    bomb is a 413, found before it is unpacked whole)."""
    enc = (encoding or "identity").strip().lower()
    if enc in ("", "identity"):
        return body
    if enc != "gzip":
        raise Refused(415, f"Content-Encoding {enc!r} is not supported (gzip or none)")
    d = zlib.decompressobj(wbits=31)
    try:
        raw = d.decompress(body, limit + 1)
        if len(raw) > limit:
            raise Refused(413, f"the body unpacks to more than {limit} bytes")
        if not d.eof:
            raise Refused(400, "the gzip body is truncated")
    except zlib.error as e:
        raise Refused(400, f"the body is not gzip: {e}") from None
    return raw


def decode(raw: bytes, kind: str, operations: tuple[str, ...]) -> Decoded:
    """A request's spans in OTLP JSON (`kind`: PROTOBUF or JSON), kept, dropped or rejected. Refused
    (400, with the parser's message) when the body is not an ExportTraceServiceRequest."""
    if kind == PROTOBUF:
        doc = _from_protobuf(raw)
    else:
        try:
            doc = json.loads(raw)
        except (UnicodeDecodeError, ValueError) as e:
            raise Refused(400, f"the body is not JSON: {e}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("resourceSpans", []), list):
            raise Refused(400, "the body is not an OTLP ExportTraceServiceRequest (resourceSpans[] of scopeSpans[])")
    return _keep(doc, frozenset(operations))


def _from_protobuf(raw: bytes) -> dict:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    msg = ExportTraceServiceRequest()
    try:
        msg.ParseFromString(raw)
    except DecodeError as e:
        raise Refused(400, f"the body is not an OTLP ExportTraceServiceRequest: {e}") from None
    return {"resourceSpans": [{"resource": {"attributes": _attrs(rs.resource.attributes)},
                               "scopeSpans": [{"scope": _scope(ss.scope), "spans": [_span(sp) for sp in ss.spans]}
                                              for ss in rs.scope_spans]}
                              for rs in msg.resource_spans]}


def _scope(scope) -> dict:
    return {"name": scope.name, "version": scope.version, "attributes": _attrs(scope.attributes)}


def _span(sp) -> dict:
    """A protobuf Span as OTLP JSON writes it: ids in hex, nanoseconds as strings, enums as numbers."""
    out = {"traceId": sp.trace_id.hex(), "spanId": sp.span_id.hex(), "parentSpanId": sp.parent_span_id.hex(),
           "name": sp.name, "kind": sp.kind, "startTimeUnixNano": str(sp.start_time_unix_nano),
           "endTimeUnixNano": str(sp.end_time_unix_nano), "attributes": _attrs(sp.attributes),
           "status": {"code": sp.status.code}}
    if sp.status.message:
        out["status"]["message"] = sp.status.message
    return out


def _attrs(kvs) -> list[dict]:
    return [{"key": kv.key, "value": _value(kv.value)} for kv in kvs]


def _value(v) -> dict:
    which = v.WhichOneof("value")
    if which == "string_value":
        return {"stringValue": v.string_value}
    if which == "int_value":
        return {"intValue": str(v.int_value)}
    if which == "double_value":
        return {"doubleValue": v.double_value}
    if which == "bool_value":
        return {"boolValue": v.bool_value}
    if which == "array_value":
        return {"arrayValue": {"values": [_value(x) for x in v.array_value.values]}}
    if which == "kvlist_value":
        return {"kvlistValue": {"values": _attrs(v.kvlist_value.values)}}
    if which == "bytes_value":
        return {"bytesValue": base64.b64encode(v.bytes_value).decode()}
    return {}


def _keep(doc: dict, operations: frozenset[str]) -> Decoded:
    """Keep the inference spans (`operations`) that the ingest can take, in their resource and scope."""
    spans = kept = dropped = rejected = 0
    why = ""
    out = []
    try:
        for rs in doc.get("resourceSpans") or []:
            scopes = []
            for ss in rs.get("scopeSpans") or []:
                mine = []
                for sp in ss.get("spans") or []:
                    spans += 1
                    attrs = {a.get("key"): a.get("value") for a in sp.get("attributes") or []}
                    if _text(attrs.get(OPERATION)) not in operations:
                        dropped += 1
                        continue
                    bad = _bad(sp, attrs)
                    if bad:
                        rejected += 1
                        why = why or bad
                        continue
                    kept += 1
                    mine.append(sp)
                if mine:
                    scopes.append({**ss, "spans": mine})
            if scopes:
                out.append({**rs, "scopeSpans": scopes})
    except (AttributeError, TypeError) as e:
        raise Refused(400, f"the body is not an OTLP ExportTraceServiceRequest: {e}") from None
    docs = [json.dumps({"resourceSpans": [{**rs, "scopeSpans": [{**ss, "spans": ss["spans"][i:i + LINE_SPANS]}]}]},
                       separators=(",", ":"), ensure_ascii=False).encode()
            for rs in out for ss in rs["scopeSpans"] for i in range(0, len(ss["spans"]), LINE_SPANS)]
    return Decoded(line=b"\n".join(docs) if docs else None, spans=spans, kept=kept, dropped=dropped, rejected=rejected, why=why)


def _text(value) -> str | None:
    return value.get("stringValue") if isinstance(value, dict) else None


def _bad(sp: dict, attrs: dict) -> str:
    """Why the ingest would refuse this span for what it is alone, or ''."""
    for field, digits in (("traceId", 32), ("spanId", 16)):
        v = sp.get(field)
        if not isinstance(v, str) or len(v) != digits or v.strip("0") == "" or not _hex(v):
            return f"span {sp.get('spanId')!r}: {field} {v!r} is not {digits} hex digits, not all zero"
    if len(attrs) != len(sp.get("attributes") or []):
        return f"span {sp['spanId']}: an attribute key appears twice"
    for name in TOKENS:
        v = attrs.get(name)
        if v is None:
            continue
        n = v.get("intValue") if isinstance(v, dict) else None
        if n is None or not str(n).isdigit():
            return f"span {sp['spanId']}: {name} {json.dumps(v)} is not a whole number of tokens"
    return ""


def _hex(v: str) -> bool:
    try:
        binascii.unhexlify(v)
        return True
    except (binascii.Error, ValueError):
        return False


def response(kind: str, decoded: Decoded | None) -> bytes:
    """The 200 body: an ExportTraceServiceResponse, with a partial success when spans were rejected."""
    rejected, why = (decoded.rejected, decoded.why) if decoded else (0, "")
    if kind == PROTOBUF:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTracePartialSuccess,
                                                                              ExportTraceServiceResponse)

        msg = ExportTraceServiceResponse()
        if rejected:
            msg.partial_success.CopyFrom(ExportTracePartialSuccess(rejected_spans=rejected, error_message=why))
        return msg.SerializeToString()
    body = {"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": why}} if rejected else {}
    return json.dumps(body).encode()


#: HTTP status -> google.rpc.Code of the Status an error body carries.
RPC_CODES = {400: 3, 401: 16, 404: 5, 405: 12, 411: 3, 413: 8, 415: 3, 429: 8, 500: 13, 503: 14}


def status(kind: str, http_status: int, message: str) -> bytes:
    """An error body: a ``google.rpc.Status`` (OTLP/HTTP: "the response body ... MUST be a Status"), in
    the request's encoding (JSON when the request's was not one of OTLP's)."""
    code = RPC_CODES.get(http_status, 2)
    if kind == PROTOBUF:
        from google.rpc.status_pb2 import Status

        return Status(code=code, message=message).SerializeToString()
    return json.dumps({"code": code, "message": message}).encode()
