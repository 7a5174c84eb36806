"""How the ledger writes an instant: in UTC, ISO 8601 with ``Z`` (``2026-10-01T00:00:00Z``; the
microseconds when there are any), in JSON, CSV, SQL literals, problems and the files it writes.
Below every stage: it imports nothing of the ledger."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import overload


@overload
def iso(at: datetime) -> str: ...


@overload
def iso(at: None) -> None: ...


def iso(at: datetime | None) -> str | None:
    """An aware instant in UTC, ISO 8601 with ``Z`` (``2026-10-01T00:00:00Z``); None as None."""
    return None if at is None else at.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def period_label(start: datetime, end: datetime) -> dict[str, str]:
    """``{"start": ISO, "end": ISO}`` of a period (end exclusive), as every report and JSON document
    says one: the only one (the allocation, the exports and the reports import it from here)."""
    return {"start": iso(start), "end": iso(end)}
