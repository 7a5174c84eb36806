"""``ledger otlp serve``: an OTLP/HTTP receiver of traces (``POST /v1/traces``, the OTLP specification's
"OTLP/HTTP" section) that writes GenAI inference spans into the ledger.

The server is the standard library's ``ThreadingHTTPServer``: a request's work is blocking (unpack,
decode with the protobuf runtime, write and fsync the spool), which a thread per connection does
plainly, and an OTLP exporter sends one request at a time per connection, so an event loop (uvicorn
and an ASGI app) would add a dependency and nothing the receiver needs; HTTP/1.1 keep-alive is on.

Per request, in order: the path (404) and method (405); the bearer token when one is set (401,
compared in constant time); the Content-Type (``application/x-protobuf`` or ``application/json``,
else 415); Content-Length (411 without; 413 above the limit, the body left unread and the connection
closed); the spool behind (429 while too many spans wait, 503 while the ledger cannot commit, both
with ``Retry-After``); the body unpacked (``Content-Encoding: gzip``; 413 when it unpacks past the
limit) and decoded (400 with the parser's message); then the kept spans written durably to the spool
and 200 with an ``ExportTraceServiceResponse`` (a partial success when spans were rejected). An error
body is a ``google.rpc.Status`` in the request's encoding. Nothing a client sends ends the server: an
unexpected failure of one request is a 500 for it.

SIGTERM or SIGINT stops accepting and commits what is spooled; while the ledger cannot commit, it
tries for ``stop_grace`` seconds, then ends with :class:`Uncommitted`, naming the spool files left
(they are committed at the next start).
"""
from __future__ import annotations

import hmac
import math
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..config import Home
from ..errors import LedgerError
from . import otlp_codec as codec
from .otlp_spool import Settings, Spool

PATH = "/v1/traces"


class Uncommitted(LedgerError):
    """A receiver stopped while the ledger could not commit, its grace over: the spool files it leaves
    (durable, answered 200, committed at the next start)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ledger-otlp"
    spool: Spool  # set on the subclass made by serve()

    def log_message(self, format, *args):  # noqa: A002 - the signature of BaseHTTPRequestHandler
        pass  # one line per request would be the whole log; the committer says what was committed

    def _send(self, status: int, body: bytes, kind: str, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", codec.PROTOBUF if kind == codec.PROTOBUF else codec.JSON)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str, kind: str, headers: dict | None = None) -> None:
        self._send(status, codec.status(kind, status, message), kind, headers)

    def do_GET(self):  # noqa: N802 - http.server's name
        self.close_connection = True
        self._error(405 if self.path == PATH else 404, "only POST /v1/traces", codec.JSON, {"Allow": "POST"})

    do_PUT = do_DELETE = do_PATCH = do_GET

    def do_POST(self):  # noqa: N802 - http.server's name
        kind = codec.media(self.headers.get("Content-Type"))
        try:
            self._post(kind)
        except Exception as e:  # noqa: BLE001 - never a crash: the request gets a 500 saying why
            self.close_connection = True
            self._error(500, f"internal error: {type(e).__name__}: {e}", kind)

    def _post(self, kind: str) -> None:
        s = self.spool.s
        if self.path.split("?")[0] != PATH:
            self.close_connection = True
            return self._error(404, f"no such path {self.path} (traces go to {PATH})", kind)
        if s.token is not None and not _authorized(self.headers.get("Authorization"), s.token):
            self.close_connection = True
            return self._error(401, "missing or wrong bearer token", kind, {"WWW-Authenticate": "Bearer"})
        if kind not in (codec.PROTOBUF, codec.JSON):
            self.close_connection = True
            return self._error(415, f"Content-Type {kind or 'none'!r}: send {codec.PROTOBUF} or {codec.JSON}",
                               codec.JSON)
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            return self._error(411, "Content-Length is required", kind)
        if int(length) > s.max_body_bytes:
            self.close_connection = True  # the body is not read: the connection cannot be used again
            return self._error(413, f"the body has {length} bytes, more than {s.max_body_bytes}", kind)
        body = self.rfile.read(int(length))
        behind = self.spool.behind()
        if behind:
            status, why = behind
            wait = max(1, math.ceil(s.flush_every)) if status == 429 else 5
            return self._error(status, why, kind, {"Retry-After": str(wait)})
        try:
            raw = codec.unpack(body, self.headers.get("Content-Encoding"), s.max_body_bytes)
            decoded = codec.decode(raw, kind, s.operations)
        except codec.Refused as e:
            return self._error(e.status, e.message, kind)
        self.spool.append(decoded.line, decoded.spans, decoded.dropped, decoded.rejected, decoded.kept)
        self._send(200, codec.response(kind, decoded), kind)


def _authorized(header: str | None, token: str) -> bool:
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def serve(settings: Settings, home: Home, host: str, port: int, *, ready=None) -> None:
    """Receive on `host`:`port` until SIGTERM or SIGINT, then commit what is spooled and return. The
    spool a killed receiver left is committed first. `ready(url)` is told the address once it listens
    (the port chosen when `port` is 0). Raises Uncommitted when the ledger could not commit within
    ``settings.stop_grace`` seconds of the stop."""
    spool = Spool(settings, home)
    handler = type("Handler", (_Handler,), {"spool": spool})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    spool.start()
    url = f"http://{host}:{server.server_address[1]}{PATH}"

    def stop(_sig, _frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    (ready or (lambda u: print(f"ledger otlp serve: listening on {u}", file=sys.stderr, flush=True)))(url)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        left = spool.stop()
    if left:
        where = spool.dir.relative_to(home.path) if spool.dir.is_relative_to(home.path) else spool.dir
        raise Uncommitted([f"ledger otlp serve: stopped after {settings.stop_grace:g}s of trying to commit "
                           f"({spool.failing or 'the commit did not finish'}); {len(left)} spool "
                           f"file{'s' * (len(left) != 1)} in {where} of the ledger home stay uncommitted "
                           "(durable: the next start commits them first):", *left])
