"""One pint registry for the whole ledger: tokens, requests, calls, spans and GPUs are dimensions."""
from __future__ import annotations

from decimal import Decimal
from functools import lru_cache
from pathlib import Path
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pint (and numpy under it) is imported when a unit is first parsed, not with the ledger
    import pint

from .errors import LedgerError
from .money import quantize

_DEFS = Path(__file__).with_name("units.txt")


class UnitError(LedgerError, ValueError):
    """A unit expression pint does not know, or one of the wrong dimension."""


@lru_cache(maxsize=1)
def registry() -> pint.UnitRegistry:
    """The single registry. Decimal magnitudes keep conversions exact (GB -> GiB is 0.9313225746...).

    pint counts information as dimensionless (``bit = []``); the ledger makes it a dimension of
    its own so that a GB price can never apply to a call count. GB (1e9 bytes) and GiB (2**30
    bytes) stay distinct. The change is made in pint's own definitions before they are parsed.
    """
    import pint

    pint_dir = Path(pint.__file__).parent
    with tempfile.TemporaryDirectory(prefix="ledger-units-") as tmp:
        for name in ("default_en.txt", "constants_en.txt"):
            text = (pint_dir / name).read_text(encoding="utf-8")
            if name == "default_en.txt":
                text = text.replace("\nbit = []\n", "\nbit = [information]\n", 1)
            Path(tmp, name).write_text(text, encoding="utf-8")
        ureg = pint.UnitRegistry(str(Path(tmp, "default_en.txt")), non_int_type=Decimal, cache_folder=None)
        ureg.load_definitions(str(_DEFS))
    return ureg


def parse(expr: str) -> pint.Quantity:
    """Parse a unit expression such as ``"gpu * hour"``, ``"1e6 * token"`` or ``"GiB"``.

    Returns a Quantity: the magnitude is the scale written (1e6 for "1e6 * token").
    """
    import pint

    if not isinstance(expr, str) or not expr.strip():
        raise UnitError("empty unit expression")
    try:
        q = registry().parse_expression(expr)
    except (pint.UndefinedUnitError, pint.DefinitionSyntaxError, AttributeError, TypeError, SyntaxError) as e:
        raise UnitError(f"unknown unit {expr!r} ({e})") from None
    except Exception as e:  # pint raises a variety of parse errors
        raise UnitError(f"cannot parse unit {expr!r} ({e})") from None
    if not isinstance(q, pint.Quantity):
        q = registry().Quantity(Decimal(q), "dimensionless")
    if not q.dimensionality and expr.strip() not in ("1", "dimensionless"):
        raise UnitError(f"unit {expr!r} has no dimension")
    return q


def dimensionality(expr: str) -> str:
    """The dimensionality of an expression as text, e.g. ``[gpu] * [time]``."""
    return str(parse(expr).dimensionality)


def is_dimension(expr: str, dims: str) -> bool:
    """True when `expr` has the dimensionality written in `dims` (a unit expression such as ``gpu*hour``)."""
    return parse(expr).dimensionality == parse(dims).dimensionality


def factor(from_expr: str, to_expr: str) -> Decimal:
    """Exact Decimal factor f such that ``x [from_expr] == x * f [to_expr]``.

    Raises UnitError when the two have different dimensions (a GB is never a call).
    """
    a, b = parse(from_expr), parse(to_expr)
    if a.dimensionality != b.dimensionality:
        raise UnitError(f"cannot convert {from_expr!r} ({a.dimensionality}) to {to_expr!r} ({b.dimensionality})")
    r = a.to(b.units).magnitude / b.magnitude
    return r if isinstance(r, Decimal) else Decimal(str(r))


def convert(quantity: Decimal, from_expr: str, to_expr: str, exp: Decimal | None = None) -> Decimal:
    """Convert a Decimal quantity between units; rounded explicitly to `exp` when given."""
    v = quantity * factor(from_expr, to_expr)
    return quantize(v, exp) if exp is not None else v


#: How people name a unit (the prose of tables and sentences): GPU in capitals.
_SPOKEN = {"gpu": "GPU"}
#: Units counted in the plural after a scale ("1M tokens"); abbreviations (GB, GiB, s) stay as they are.
_COUNTED = frozenset({"token", "request", "call", "span", "event", "image", "character", "second", "minute", "hour",
                      "day", "month", "year", "gpu"})
_SCALES = ((Decimal(10) ** 12, "T"), (Decimal(10) ** 9, "B"), (Decimal(10) ** 6, "M"), (Decimal(10) ** 3, "K"))


def prose(expr: str) -> str:
    """A unit expression as people read it, for tables and sentences (never for JSON, CSV or
    stored values, which keep the expression as written): ``gpu * hour`` is ``GPU-hour``,
    ``1e6 * token`` is ``1M tokens``, ``GiB * day`` is ``GiB-day``, ``1000 * request`` is ``1K
    requests``. A product of a scale and names only; anything else (a division, a power) is given
    back as it is written."""
    if not isinstance(expr, str) or not expr.strip() or any(c in expr for c in "/^()"):
        return expr
    scale, names = Decimal(1), []
    for part in (p.strip() for p in expr.split("*")):
        if not part:
            return expr
        try:
            scale *= Decimal(part.replace("_", ""))
            continue
        except ArithmeticError:
            pass
        if not part.replace("_", "").isalnum():
            return expr
        names.append(part)
    if not names:
        return expr
    words = [_SPOKEN.get(n, n) for n in names]
    if scale == 1:
        return "-".join(words)
    last = names[-1]
    words[-1] = words[-1] + ("s" if last in _COUNTED else "")
    text = "-".join(words)
    for size, letter in _SCALES:
        if scale >= size and scale % size == 0:
            return f"{scale // size:,}{letter} {text}"
    return f"{scale.normalize():,f} {text}"
