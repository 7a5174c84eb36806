"""One pint registry for the whole ledger: tokens, requests, calls, spans and GPUs are dimensions.

The units the ledger's price books and meters name every day (``gpu * hour``, ``1e6 * token``,
``GB * month``, ``8760 hour``: a product of scales and the names of :data:`KNOWN`) are answered
from a small table of their sizes and dimensions, without importing pint (and numpy under it) or
building its registry, about 0.3 s of every command that checks a price book
(docs/scale.md, "Startup"); any other expression is pint's. ``tests/test_units.py`` checks the table
against pint, name by name and on every unit of the shipped price books and examples.
"""
from __future__ import annotations

import re
from decimal import Decimal, Inexact, localcontext
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


#: Unit names the ledger's books and meters use, each as (its size in pint's base units: second,
#: bit and the ledger's own counts of units.txt; its dimension), as pint's registry defines them
#: (pint's ``month`` is a twelfth of its ``year`` of 365.25 days).
KNOWN: dict[str, tuple[Decimal, str]] = {
    **{n: (Decimal(1), "[token]") for n in ("token", "tokens", "tok")},
    **{n: (Decimal(1), "[request]") for n in ("request", "requests", "req")},
    **{n: (Decimal(1), "[call]") for n in ("call", "calls")},
    **{n: (Decimal(1), "[span]") for n in ("span", "spans")},
    **{n: (Decimal(1), "[gpu]") for n in ("gpu", "gpus")},
    **{n: (Decimal(size), "[time]") for n, size in (
        ("second", 1), ("s", 1), ("minute", 60), ("min", 60), ("hour", 3600), ("h", 3600), ("hr", 3600),
        ("day", 86400), ("week", 604800), ("month", 2629800), ("year", 31557600))},
    **{n: (Decimal(size), "[information]") for n, size in (
        ("bit", 1), ("byte", 8), ("B", 8), ("kB", 8 * 10**3), ("MB", 8 * 10**6), ("GB", 8 * 10**9),
        ("TB", 8 * 10**12), ("KiB", 8 * 2**10), ("MiB", 8 * 2**20), ("GiB", 8 * 2**30), ("TiB", 8 * 2**40))},
}
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?")


def known(expr: str) -> tuple[Decimal, tuple[tuple[str, int], ...], Decimal, tuple[str, ...]] | None:
    """An expression of :data:`KNOWN` names and scales only, multiplied (``*`` or a space: ``1e6 *
    token``, ``8760 hour``), as (its scale written, its dimensions with their exponents (sorted), its
    size in base units per unit of scale, its names in order); None for anything else (a division, a
    power, a name the table lacks, no name at all, not text), which pint answers."""
    return _known(expr) if isinstance(expr, str) else None


@lru_cache(maxsize=256)
def _known(expr: str) -> tuple[Decimal, tuple[tuple[str, int], ...], Decimal, tuple[str, ...]] | None:
    try:
        return _product(expr)
    except ArithmeticError:  # a scale beyond what a Decimal holds (1e999999999): pint says what it is
        return None


def _product(expr: str) -> tuple[Decimal, tuple[tuple[str, int], ...], Decimal, tuple[str, ...]] | None:
    scale, size, dims, names = Decimal(1), Decimal(1), {}, []
    for part in expr.split("*"):
        words = part.split()
        if not words:  # "**", a leading or trailing "*": pint's grammar
            return None
        for word in words:
            if _NUMBER.fullmatch(word):
                scale *= Decimal(word)
            elif word in KNOWN:
                unit_size, dim = KNOWN[word]
                size *= unit_size
                dims[dim] = dims.get(dim, 0) + 1
                names.append(word)
            else:
                return None
    if not dims:
        return None
    return scale, tuple(sorted(dims.items())), size, tuple(names)


def dimensions(expr: str) -> dict[str, int]:
    """The dimensions of a unit expression with their exponents (``gpu * hour``: ``{"[gpu]": 1,
    "[time]": 1}``); UnitError as :func:`parse` for one that is not a unit."""
    if (k := known(expr)) is not None:
        return dict(k[1])
    return {d: e for d, e in parse(expr).dimensionality.items()}


def magnitude(expr: str) -> Decimal:
    """The scale written in a unit expression (``1e6 * token``: 1E+6); UnitError as :func:`parse`."""
    if (k := known(expr)) is not None:
        return k[0]
    m = parse(expr).magnitude
    return m if isinstance(m, Decimal) else Decimal(str(m))


def is_dimension(expr: str, dims: str) -> bool:
    """True when `expr` has the dimensionality written in `dims` (a unit expression such as ``gpu*hour``)."""
    return dimensions(expr) == dimensions(dims)


def duration_in(term: str, per: str) -> Decimal:
    """How many of the time part of `per` (its scale and its time units: ``gpu * hour`` -> ``hour``)
    the duration `term` is (``8760 hour`` in ``gpu * hour``: 8760). From :data:`KNOWN` when both are
    known and the quotient is exact, else pint's :func:`factor` (the same value, which pint's context
    may round at its 28th digit on the way: tests/test_units.py).
    UnitError when `term` is not a time of the same dimension."""
    t, p = known(term), known(per)
    if t is not None and p is not None and t[1] == (("[time]", 1),):
        time = [KNOWN[n][0] for n in p[3] if KNOWN[n][1] == "[time]"]
        if len(time) == 1:
            with localcontext() as ctx:
                ctx.traps[Inexact] = True
                try:
                    return (t[0] * t[2]) / (p[0] * time[0])
                except Inexact:
                    pass
    return factor(term, time_part(per))


def time_part(per: str) -> str:
    """The time unit of a per-time expression, by pint: ``gpu * hour`` -> ``hour ** 1`` (with its scale)."""
    q = parse(per)
    time_units = [(u, e) for u, e in q.unit_items() if registry().parse_units(u).dimensionality.get("[time]")]
    expr = " * ".join(f"{u} ** {e}" for u, e in time_units)
    return f"{q.magnitude} * {expr}" if q.magnitude != 1 else expr


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
