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
from otlp_support import Receiver, expected_tokens, genai_span, provider

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


#: A ledger DB that cannot be reached (nothing listens on port 1): every commit fails at once.
DB_DOWN = {"LEDGER_DATABASE_URL": "postgresql+psycopg://ledger@127.0.0.1:1/down"}


def spool_files(home) -> list[str]:
    return sorted(p.name for p in (home / "spool" / "otlp" / "otlp").glob("seg-*.jsonl"))


def test_429_with_retry_after_while_spans_wait_and_the_sdk_exporter_retries_after_it(ledger_home, caplog):
    """More spans wait than --max-pending-spans: 429 with Retry-After (the flush interval); the SDK's
    exporter waits that long, sends again, and every span lands once."""
    import logging

    rx = Receiver(ledger_home, "--flush-every", "1", "--max-pending-spans", "50").start()
    try:
        many = [span_json("0af7651916cd43dd8448eb211c80319c", f"{i + 1:016x}") for i in range(60)]
        assert post(rx.url, doc(*many))[0] == 200  # 60 spans wait now, more than 50
        status, headers, body = post(rx.url, doc(span_json("1af7651916cd43dd8448eb211c80319c", "c7ad6b7169203331")))
        assert status == 429, body
        assert headers["Retry-After"] == "1"
        answer = json.loads(body)
        assert answer["code"] == 8 and "60 spans wait to be committed" in answer["message"]
        wait_for(lambda: watermark().get("spans") == 60)  # committed: it keeps up again
        # the official exporter, batches of 100 spans: after the first, each waits for a commit
        with caplog.at_level(logging.WARNING):
            tp = provider(rx.url, batch=100, delay_ms=50, timeout=30)
            tracer = tp.get_tracer("app")
            for i in range(200):
                genai_span(tracer, i, start_ns=START + i * 10**6)
            assert tp.force_flush(60_000)
            tp.shutdown()
        wait_for(lambda: watermark().get("spans") == 260)
    finally:
        assert rx.stop() == 0
    retried = [r.getMessage() for r in caplog.records if "retrying in" in r.getMessage()]
    assert retried and all("Too Many Requests" in m for m in retried), retried
    inputs, outputs = expected_tokens(200)
    assert ledger_rows(ledger_home) == (260, 260, inputs + 600, outputs + 300)
    assert not spool_files(ledger_home)


def test_503_while_the_ledger_is_down_then_a_bounded_stop_names_the_spool_files_and_the_next_start_commits_them(
        ledger_home):
    good = span_json("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
    tools = [span_json("0af7651916cd43dd8448eb211c80319c", f"d7ad6b716920333{i}", op="execute_tool")
             for i in range(2)]
    rx = Receiver(ledger_home, "--flush-every", "0.2", "--stop-grace", "1", env=DB_DOWN).start()
    try:
        assert post(rx.url, doc(good, *tools))[0] == 200  # durable in the spool, not yet committed
        spans = 3  # the spans of the requests answered 200

        def refused():
            nonlocal spans
            got = post(rx.url, doc(good))
            spans += got[0] == 200
            return got if got[0] == 503 else None

        status, headers, body = wait_for(refused)
        assert headers["Retry-After"] == "5"
        answer = json.loads(body)
        assert answer["code"] == 14 and answer["message"].startswith("the ledger cannot commit now (")
    finally:
        rc = rx.stop()  # SIGTERM while the ledger is down: tries for --stop-grace, then gives up
    left = spool_files(ledger_home)
    assert rc == 1 and left, rx.stderr
    assert "stay uncommitted" in rx.stderr and "the next start commits them" in rx.stderr
    assert all(name in rx.stderr for name in left)
    assert watermark() == {}

    rx = Receiver(ledger_home, "--flush-every", "0.2").start()  # the ledger is back
    try:
        wait_for(lambda: watermark().get("spans") == spans)
    finally:
        assert rx.stop() == 0
    assert ledger_rows(ledger_home) == (1, 1, 10, 5)
    w = watermark()
    assert (w["spans"], w["dropped"], w["rejected"]) == (spans, 2, 0)
    assert not spool_files(ledger_home)


def test_counts_of_non_genai_spans_survive_kill_9_and_a_segment_read_again_counts_once(ledger_home):
    import shutil

    good = span_json("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
    tools = [span_json("0af7651916cd43dd8448eb211c80319c", f"d7ad6b716920333{i}", op="execute_tool")
             for i in range(4)]
    rx = Receiver(ledger_home, "--flush-every", "3600").start()  # no micro-batch before the kill
    assert post(rx.url, doc(*tools[:3]))[0] == 200  # non-GenAI spans only: counted, nothing kept
    assert post(rx.url, doc(good, tools[3]))[0] == 200
    rx.kill()
    [name] = spool_files(ledger_home)
    seg = ledger_home / "spool" / "otlp" / "otlp" / name
    assert seg.read_bytes().count(b'{"ledgerOtlp":') == 2  # each request's tally, durable with it
    with open(seg, "ab") as fh:  # a request cut off in its write: never answered, so never counted
        fh.write(doc(good)[:80])
    kept = seg.with_suffix(".copy")
    shutil.copy(seg, kept)

    rx = Receiver(ledger_home, "--flush-every", "0.2").start()
    try:
        wait_for(lambda: watermark().get("spans") == 5)
    finally:
        assert rx.stop() == 0
    w = watermark()
    assert (w["spans"], w["dropped"], w["rejected"], w["segment"]) == (5, 4, 0, name)
    # the segment committed but not removed (a kill between the two): read again, counted once
    kept.replace(seg)
    rx = Receiver(ledger_home, "--flush-every", "0.2").start()
    try:
        wait_for(lambda: not spool_files(ledger_home))
    finally:
        assert rx.stop() == 0
    assert watermark() == w
    assert ledger_rows(ledger_home) == (1, 1, 10, 5)
