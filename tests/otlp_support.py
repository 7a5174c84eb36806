"""Helpers of the OTLP receiver's tests and benchmark: a receiver subprocess (`ledger otlp serve`) on
127.0.0.1, and GenAI spans sent by the official OpenTelemetry SDK with its OTLP/HTTP exporter."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "tests" / "data" / "adapters" / "otel_map.toml"
#: `ledger otlp serve` in a process of its own, whatever the root command lists
SERVE = ("import sys, typer; from ledger.sync import cli; app = typer.Typer(add_completion=False); "
         "cli.register(app); app(sys.argv[1:], prog_name='ledger')")


class Receiver:
    """A `ledger otlp serve` subprocess; `url` once it listens."""

    def __init__(self, home: Path, *args: str, port: int = 0, env: dict | None = None):
        self.home, self.args, self.port = home, args, port
        self.env = {**os.environ, "LEDGER_HOME": str(home), **(env or {})}
        self.proc = None
        self.url = None
        self.stderr = ""

    def start(self, timeout: float = 60) -> "Receiver":
        cmd = [sys.executable, "-c", SERVE, "otlp", "serve", "--port", str(self.port), "--map", str(MAP),
               "--register-new", *self.args]
        self.proc = subprocess.Popen(cmd, env=self.env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                     cwd=ROOT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                raise RuntimeError(f"the receiver ended: {self.proc.returncode}")
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                self.port = int(re.search(r":(\d+)/", self.url).group(1))
                return self
        raise RuntimeError("the receiver did not start")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def stop(self, timeout: float = 120) -> int:
        """SIGTERM: it commits what it holds and ends; what it wrote to stderr since it listened is
        `stderr`."""
        self.proc.terminate()
        _, self.stderr = self.proc.communicate(timeout=timeout)
        return self.proc.returncode


def provider(url: str, *, batch: int = 512, queue: int = 2048, delay_ms: int = 200, timeout: float = 10,
             headers: dict | None = None, tenant: str = "acme"):
    """A TracerProvider exporting over OTLP/HTTP (protobuf) to `url` with a BatchSpanProcessor."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    tp = TracerProvider(resource=Resource.create({"service.name": "chat-api", "tenant.id": tenant}))
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout, headers=headers)
    tp.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=queue, max_export_batch_size=batch,
                                             schedule_delay_millis=delay_ms))
    return tp


def genai_span(tracer, i: int, *, start_ns: int) -> None:
    """One inference span as the GenAI semantic conventions write it (input i % 1000 + 100 tokens,
    of which i % 50 cache reads; output i % 300 + 1)."""
    s = tracer.start_span("chat gpt-5", start_time=start_ns, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-5",
        "gen_ai.usage.input_tokens": i % 1000 + 100, "gen_ai.usage.cache_read.input_tokens": i % 50,
        "gen_ai.usage.output_tokens": i % 300 + 1, "server.address": "api.openai.com"})
    s.end(end_time=start_ns + 1_500_000_000)


def expected_tokens(n: int) -> tuple[int, int]:
    return sum(i % 1000 + 100 for i in range(n)), sum(i % 300 + 1 for i in range(n))
