"""Benchmark: the official OpenTelemetry SDK's OTLP/HTTP exporter sends N GenAI spans over loopback to
`ledger otlp serve`, beside a floor measured in the same process: the plain ingest of the same spans
as an OTLP JSON file with the otel adapter (`ingest requests --source otel`).

    python bench/otlp.py --spans 1000000 --repeat 3

Each repeat, in a fresh ledger home (SQLite): a receiver subprocess on 127.0.0.1 (a free port,
`--flush-spans 50000`, `--flush-every 2`); a TracerProvider with a BatchSpanProcessor (batches of 512,
the SDK's default) and the OTLPSpanExporter (protobuf), the spans made as fast as the exporter takes
them (the generator waits while more than half the queue is unsent, so nothing is dropped); timed
from the first span made to the last span committed in the ledger. Printed: spans/s end to end, the
exporter's p50/p99 export latency (each `export()` call: one request of up to 512 spans, until its
200), the receiver's peak RSS (VmHWM), and the floor's spans/s. Figures are medians of the repeats.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.otlp_support import MAP, Receiver, expected_tokens, genai_span  # noqa: E402

START = 1790849100_000_000_000


class Timed:
    """An exporter that times each export() of the one it wraps and counts the spans sent."""

    def __init__(self, inner):
        self.inner, self.times, self.sent, self.failed = inner, [], 0, 0
        self.lock = threading.Lock()

    def export(self, spans):
        t = time.perf_counter()
        result = self.inner.export(spans)
        with self.lock:
            self.times.append(time.perf_counter() - t)
            if result.name == "SUCCESS":
                self.sent += len(spans)
            else:
                self.failed += len(spans)
        return result

    def shutdown(self):
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def committed(home: Path) -> int:
    from ledger import store
    from ledger.models import SyncWatermark

    with store.session(f"sqlite:///{home / 'ledger.db'}") as s:
        row = s.get(SyncWatermark, "otlp")
        return json.loads(row.position).get("spans", 0) if row else 0


def rss_peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def one_run(n: int) -> dict:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from ledger import store

    with tempfile.TemporaryDirectory(prefix="bench-otlp-") as tmp:
        home = Path(tmp)
        store.init_store(f"sqlite:///{home / 'ledger.db'}", home=home)
        store.dispose_engines()
        rx = Receiver(home, "--flush-spans", "50000", "--flush-every", "2", "--max-pending-spans", "2000000").start()
        queue = 1 << 16
        timed = Timed(OTLPSpanExporter(endpoint=rx.url, timeout=60))
        tp = TracerProvider(resource=Resource.create({"service.name": "chat-api", "tenant.id": "acme"}))
        tp.add_span_processor(BatchSpanProcessor(timed, max_queue_size=queue, max_export_batch_size=512,
                                                 schedule_delay_millis=100))
        tracer = tp.get_tracer("bench")
        t0 = time.perf_counter()
        for i in range(n):
            genai_span(tracer, i, start_ns=START + i * 1000)
            if i % 512 == 511:
                while i + 1 - timed.sent - timed.failed > queue // 2:
                    time.sleep(0.002)
        tp.force_flush(600_000)
        sent_at = time.perf_counter() - t0
        while committed(home) < n:
            time.sleep(0.05)
        total = time.perf_counter() - t0
        peak = rss_peak_kib(rx.proc.pid)
        tp.shutdown()
        rx.stop()
        times = sorted(timed.times)
        p = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
        return {"spans_per_s": n / total, "sent_s": sent_at, "total_s": total, "p50_ms": p(0.50) * 1000,
                "p99_ms": p(0.99) * 1000, "rss_mib": peak / 1024, "failed": timed.failed, "exports": len(times)}


def floor(n: int) -> float:
    """Spans/s of `ingest requests --source otel` over the same spans as one OTLP JSON file (the
    conversion the receiver makes, done before the clock starts)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ledger import store
    from ledger.config import Home
    from ledger.ingest.sources import ingest_from
    from ledger.sync import otlp_codec as codec

    with tempfile.TemporaryDirectory(prefix="bench-otlp-floor-") as tmp:
        home = Path(tmp)
        store.init_store(f"sqlite:///{home / 'ledger.db'}", home=home)
        mem = InMemorySpanExporter()
        tp = TracerProvider(resource=Resource.create({"service.name": "chat-api", "tenant.id": "acme"}))
        tp.add_span_processor(SimpleSpanProcessor(mem))
        tracer = tp.get_tracer("bench")
        path = home / "spans.jsonl"
        ops = ("chat", "text_completion", "generate_content", "embeddings")
        with open(path, "wb") as fh:
            for lo in range(0, n, 512):
                for i in range(lo, min(n, lo + 512)):
                    genai_span(tracer, i, start_ns=START + i * 1000)
                spans = mem.get_finished_spans()
                mem.clear()
                fh.write(codec.decode(encode_spans(spans).SerializeToString(), codec.PROTOBUF, ops).line + b"\n")
        t = time.perf_counter()
        r = ingest_from("otel", "requests", [path], MAP, register_new=True,
                        home=Home.at(home, f"sqlite:///{home / 'ledger.db'}"))
        took = time.perf_counter() - t
        store.dispose_engines()
        assert r.rows_new == n
        return n / took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spans", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    runs, floors = [], []
    for k in range(a.repeat):
        runs.append(one_run(a.spans))
        floors.append(floor(a.spans))
        print(f"run {k + 1}: {json.dumps({**runs[-1], 'floor_spans_per_s': floors[-1]}, default=round)}", flush=True)
    med = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    inputs, outputs = expected_tokens(a.spans)
    print(f"spans {a.spans}, repeats {a.repeat} (medians); tokens sent: input {inputs}, output {outputs}")
    print(f"receiver: {med['spans_per_s']:.0f} spans/s end to end (first span made -> last committed, "
          f"{med['total_s']:.1f} s; exporter done at {med['sent_s']:.1f} s), exporter p50 {med['p50_ms']:.1f} ms, "
          f"p99 {med['p99_ms']:.1f} ms per export of <=512 spans ({med['exports']:.0f} exports, "
          f"{med['failed']:.0f} spans failed), receiver peak RSS {med['rss_mib']:.0f} MiB")
    print(f"floor (ingest --source otel of the same spans as one OTLP JSON file): "
          f"{statistics.median(floors):.0f} spans/s")


if __name__ == "__main__":
    main()
