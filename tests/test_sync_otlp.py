"""`ledger otlp serve`: the OTLP/HTTP receiver, against the official OpenTelemetry SDK's exporter.

A receiver subprocess on 127.0.0.1 (a free port); GenAI spans sent by `OTLPSpanExporter`
(opentelemetry-exporter-otlp-proto-http) through a `BatchSpanProcessor`, as an application sends them;
what arrives is the ledger's requests as `ingest requests --source otel` makes them. Small scale
(hundreds to a few thousand spans): seconds, not minutes. The kill test SIGKILLs the receiver in the
middle, restarts it on the same port and lets the exporter retry: every span once, counts and token
sums equal to what was sent.
"""
from __future__ import annotations

import gzip
import http.client
import json
import time

import pytest

from ledger import facts, store
from tests.otlp_support import Receiver, expected_tokens, genai_span, provider

pytestmark = pytest.mark.store
START = 1790849100_000_000_000  # 2026-10-01T08:05:00Z in nanoseconds


def ledger_rows(home) -> tuple[int, int, int, int]:
    """(requests, distinct request ids, Σ input tokens, Σ output tokens) in the ledger."""
    with store.session() as s:
        if not facts.committed_batches(s):
            return 0, 0, 0, 0
        con = facts.open_ledger_facts(s, home)
        try:
            got = con.execute("SELECT count(*), count(DISTINCT request_id), sum(input_tokens), sum(output_tokens) "
                              "FROM requests").fetchone()
        except Exception:  # noqa: BLE001 - no requests view yet
            return 0, 0, 0, 0
        return tuple(int(x or 0) for x in got)


def watermark(name: str = "otlp") -> dict:
    from ledger.models import SyncWatermark

    with store.session() as s:
        row = s.get(SyncWatermark, name)
        return json.loads(row.position) if row else {}


def wait_for(check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError("timed out")


def post(url: str, body: bytes, ctype: str = "application/json", **headers) -> tuple[int, dict, bytes]:
    host, port = url.split("//")[1].split("/")[0].split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    c.request("POST", "/v1/traces", body=body, headers={"Content-Type": ctype, **headers})
    r = c.getresponse()
    out = (r.status, dict(r.getheaders()), r.read())
    c.close()
    return out


def span_json(trace: str, span: str, op: str = "chat", tokens: object = 10) -> dict:
    return {"traceId": trace, "spanId": span, "name": f"{op} m", "kind": 3, "startTimeUnixNano": str(START),
            "endTimeUnixNano": str(START + 10**9), "status": {},
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": op}},
                           {"key": "gen_ai.provider.name", "value": {"stringValue": "openai"}},
                           {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-5"}},
                           {"key": "gen_ai.usage.input_tokens", "value": {"intValue": str(tokens)}},
                           {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "5"}}]}


def doc(*spans: dict) -> bytes:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "chat-api"}},
        {"key": "tenant.id", "value": {"stringValue": "acme"}}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": list(spans)}]}]}).encode()


def test_the_sdk_exporter_s_genai_spans_become_requests_and_other_spans_are_dropped(ledger_home):
    from opentelemetry import trace

    rx = Receiver(ledger_home, "--flush-every", "0.5").start()
    try:
        tp = provider(rx.url, batch=100, delay_ms=50)
        tracer = tp.get_tracer("app")
        for i in range(300):
            genai_span(tracer, i, start_ns=START + i * 10**6)
            if i % 3 == 0:  # an HTTP server span around it: not a GenAI span, counted and dropped
                with tracer.start_as_current_span("GET /chat", kind=trace.SpanKind.SERVER):
                    pass
        assert tp.force_flush(30_000)
        tp.shutdown()
        wait_for(lambda: watermark().get("spans") == 400)
    finally:
        assert rx.stop() == 0
    inputs, outputs = expected_tokens(300)
    assert ledger_rows(ledger_home) == (300, 300, inputs, outputs)
    w = watermark()
    assert (w["spans"], w["dropped"], w["rejected"]) == (400, 100, 0)


def test_json_gzip_partial_success_and_refusals(ledger_home, tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret\n", encoding="utf-8")
    rx = Receiver(ledger_home, "--flush-every", "0.3", "--token-file", str(token), "--max-body-bytes", "4096").start()
    auth = {"Authorization": "Bearer s3cret"}
    try:
        good = span_json("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
        bad_id = span_json("0" * 32, "b7ad6b7169203332")
        bad_tokens = span_json("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203333", tokens="-3")
        tool = span_json("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203334", op="execute_tool")
        status, headers, body = post(rx.url, gzip.compress(doc(good, bad_id, bad_tokens, tool)),
                                     **{"Content-Encoding": "gzip"}, **auth)
        assert status == 200, body
        answer = json.loads(body)
        # two spans rejected (all-zero trace id, negative tokens), told as OTLP's partial success
        assert answer["partialSuccess"]["rejectedSpans"] == "2"
        assert "traceId '00000000000000000000000000000000' is not 32 hex digits" in \
            answer["partialSuccess"]["errorMessage"]
        # the same span again (an exporter's retry): accepted, never counted twice
        assert post(rx.url, doc(good), **auth)[0] == 200
        assert post(rx.url, doc(good))[0] == 401  # no token
        assert post(rx.url, doc(good), Authorization="Bearer wrong")[0] == 401
        status, _, body = post(rx.url, b'{"resourceSpans": [', **auth)
        assert status == 400 and "the body is not JSON" in json.loads(body)["message"]
        status, _, body = post(rx.url, b"\x0a\x05junk", "application/x-protobuf", **auth)
        assert status == 400
        from google.rpc.status_pb2 import Status

        assert "ExportTraceServiceRequest" in Status.FromString(body).message
        assert post(rx.url, b"x" * 5000, **auth)[0] == 413  # over --max-body-bytes
        assert post(rx.url, gzip.compress(b" " * 10_000), **{"Content-Encoding": "gzip"}, **auth)[0] == 413
        assert post(rx.url, doc(good), "text/plain", **auth)[0] == 415
        wait_for(lambda: watermark().get("spans") == 5)
    finally:
        assert rx.stop() == 0
    assert ledger_rows(ledger_home)[:2] == (1, 1)
    w = watermark()
    assert (w["spans"], w["dropped"], w["rejected"]) == (5, 1, 2)


def test_kill_9_in_the_middle_then_the_exporter_s_retries_leave_every_span_once(ledger_home):
    n = 3000
    rx = Receiver(ledger_home, "--flush-every", "0.3").start()
    port = rx.port
    tp = provider(rx.url, batch=100, queue=n * 2, delay_ms=20, timeout=60)
    tracer = tp.get_tracer("app")
    killed = False
    for i in range(n):
        genai_span(tracer, i, start_ns=START + i * 10**6)
        if i % 100 == 99:
            time.sleep(0.02)
        if not killed and i == n // 2:
            # some spans are spooled (answered 200) and some committed; kill -9 now
            wait_for(lambda: any((ledger_home / "spool" / "otlp" / "otlp").glob("seg-*.jsonl"))
                     or watermark().get("spans"), timeout=30)
            rx.kill()
            killed = True
            time.sleep(0.5)
            rx = Receiver(ledger_home, "--flush-every", "0.3", port=port).start()
    assert tp.force_flush(120_000)
    tp.shutdown()
    inputs, outputs = expected_tokens(n)
    wait_for(lambda: ledger_rows(ledger_home)[0] >= n, timeout=60)
    assert rx.stop() == 0
    assert ledger_rows(ledger_home) == (n, n, inputs, outputs)
