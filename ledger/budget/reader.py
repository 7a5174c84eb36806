"""Reading one TOML table of a plan field by field, collecting one problem per bad field."""
from __future__ import annotations

import math
import re
from decimal import Decimal

from ..hints import Hinted
from ..money import MoneyError, to_decimal
from .plan import month_bounds

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class _Reader:
    """Reads one TOML table, collecting one problem per bad field."""

    def __init__(self, problems: list[str], where: str):
        self.problems = problems
        self.where = where
        self.bad = False

    def err(self, msg: str) -> None:
        """One problem of this table: the table, then `msg` (its hints kept, :mod:`ledger.hints`)."""
        self.bad = True
        self.problems.append(Hinted(f"{self.where}: ", msg))

    def unknown(self, table: dict, known: set[str]) -> None:
        for k in sorted(set(table) - known):
            self.err(f"unknown field {k!r} (known: {', '.join(sorted(known))})")

    def text(self, table: dict, key: str, default: str | None = None, *, name: bool = False) -> str | None:
        if key not in table:
            if default is None:
                self.err(f"missing required field {key!r}")
            return default
        v = table[key]
        if not isinstance(v, str) or not v.strip():
            self.err(f"{key} {v!r} is not a non-empty string")
            return default
        if name and not _NAME.match(v):
            self.err(f"{key} {v!r}: use letters, digits, '_', '.', '-' (starting with a letter or digit)")
        return v

    def decimal(self, table: dict, key: str, default: Decimal | None = None, *, lo: Decimal | None = None,
                lo_open: bool = False, hi: Decimal | None = None) -> Decimal | None:
        if key not in table:
            if default is None:
                self.err(f"missing required field {key!r}")
            return default
        v = table[key]
        if isinstance(v, float):
            self.err(f"{key} {v!r} is a TOML float; write it as a string (\"{v}\") so it stays exact")
            return default
        try:
            d = to_decimal(v, what=key)
        except MoneyError as e:
            self.err(str(e))
            return default
        if lo is not None and (d <= lo if lo_open else d < lo):
            self.err(f"{key} must be {'>' if lo_open else '>='} {lo} (got {d})")
            return default
        if hi is not None and d > hi:
            self.err(f"{key} must be <= {hi} (got {d})")
            return default
        return d

    def number(self, table: dict, key: str, default: float | None = None, *, required: bool = False,
               positive: bool = True) -> float | None:
        if key not in table:
            if required:
                self.err(f"missing required field {key!r}")
            return default
        v = table[key]
        try:
            f = float(v) if not isinstance(v, bool) else math.nan
        except (TypeError, ValueError):
            f = math.nan
        if not math.isfinite(f) or (positive and f <= 0):
            self.err(f"{key} {v!r} must be a {'positive ' if positive else ''}number")
            return default
        return f

    def count(self, table: dict, key: str, default: int | None = None, *, minimum: int = 0) -> int | None:
        if key not in table:
            if default is None:
                self.err(f"missing required field {key!r}")
            return default
        v = table[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
            self.err(f"{key} {v!r} must be a whole number >= {minimum}")
            return default
        return v

    def flag(self, table: dict, key: str) -> bool:
        v = table.get(key, False)
        if not isinstance(v, bool):
            self.err(f"{key} {v!r} must be true or false")
            return False
        return v

    def month(self, table: dict, key: str) -> str | None:
        v = table.get(key)
        if v is None:
            return None
        try:
            month_bounds(str(v))
        except ValueError as e:
            self.err(f"{key}: {e}")
            return None
        return str(v)
