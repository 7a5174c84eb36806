"""Deliver one alerts run to a webhook: one JSON POST (a Slack-compatible ``text`` plus the
structured alerts), with a timeout per attempt and retries, or one WebhookError line.

Python's own ``urllib.request``: one POST of a small JSON body needs no client library (the ledger
gains no dependency, and no pool, session or async machinery for a request made once per run).
The URL's path and query are never printed (a Slack incoming-webhook URL carries its secret
there): messages name the scheme, host and port only."""
from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

from .records import WebhookError


@dataclass(frozen=True)
class Delivery:
    """What delivering did: the `status` the receiver answered, after `attempts` attempts."""

    status: int
    attempts: int


def shown_url(url: str) -> str:
    """The URL as messages name it: scheme, host and port, never the path or query (secrets)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}"


def check_url(url: str) -> None:
    """Refuse a URL that is not http(s) with a host, before any work is done (WebhookError)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (a bad port raises ValueError here)
    except ValueError as e:
        raise WebhookError(f"webhook URL is not valid: {e}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookError(f"webhook URL must be http:// or https:// with a host, not {parts.scheme or 'no scheme'}://")


def post(url: str, body: dict, *, timeout: float = 10.0, attempts: int = 3, backoff: float = 0.5) -> Delivery:
    """POST `body` as JSON to `url`; retry (after `backoff`, then twice as long, ...) on a refused
    or failed connection, a timeout, HTTP 429 and 5xx; any other 4xx is final. WebhookError, one
    line naming the receiver and the last failure, when no attempt is answered with 2xx or 3xx."""
    check_url(url)
    data = json.dumps(body, default=str).encode("utf-8")
    last = ""
    for attempt in range(1, attempts + 1):
        req = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json; charset=utf-8",
                                              "User-Agent": "ledger-alerts"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return Delivery(resp.status, attempt)
        except urllib.error.HTTPError as e:
            last = f"HTTP {e.code} {e.reason}"
            if e.code != 429 and e.code < 500:
                break
        except urllib.error.URLError as e:
            reason = e.reason
            last = "timed out" if isinstance(reason, (socket.timeout, TimeoutError)) else str(reason)
        except (TimeoutError, socket.timeout):
            last = f"timed out after {timeout:g} s"
        except OSError as e:  # a connection reset mid-answer, ...
            last = str(e)
        if attempt < attempts:
            time.sleep(backoff * 2 ** (attempt - 1))
    raise WebhookError(f"webhook {shown_url(url)} not delivered after {attempt} attempt{'s' * (attempt != 1)}: {last}")
