"""Sync from where the data lives (docs/sync.md): live sources read into the usual atomic, idempotent
batches, each with its watermark committed in the batch's transaction.

- `config`: the sync file (``sync.toml``): its ``[[source]]`` tables, checked;
- `state`: the watermarks (``sync_watermark``, written through the ingest's ``CommitHook``) and the
  sync lock of the ledger home;
- `litellm_pg`: LiteLLM's ``LiteLLM_SpendLogs`` read from its PostgreSQL, incrementally
  (``litellm-postgres``);
- `bills`: a folder of FOCUS bills, each new or changed file once (``bill-folder``);
- `runner`: one ``ledger sync`` over the sources, a report each;
- `otlp_codec`, `otlp_spool`, `otlp_server`: the OTLP/HTTP receiver (``ledger otlp serve``): requests
  decoded with the official ``opentelemetry-proto`` messages, spans spooled durably in the home,
  committed in micro-batches through the ``otel`` adapter.

It sits beside ingest, to its right: it imports ingest (and the store, the facts), never the other
way round.

The names below are imported from their module when first used, so that ``ledger sync --help``
and ``ledger otlp serve --help`` (its ``cli``) start without the package's stack (docs/scale.md, "Startup").
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    ".config": ("Source", "SyncConfigError", "load"),
    ".runner": ("SourceReport", "run"),
    ".state": ("Busy",),
})


if TYPE_CHECKING:
    from .config import Source, SyncConfigError, load
    from .runner import SourceReport, run
    from .state import Busy
