"""Exact money: Decimal parsing, the ledger precision, the largest-remainder split, and the one plain
text of a decimal number written any way (in SQL, for quantities kept as exact text)."""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation, localcontext
from typing import TypeVar

from .errors import LedgerError

#: The ledger precision: every stored amount is a whole number of micro-units (1e-6) of its currency.
PRECISION = Decimal("0.000001")
MICROS_PER_UNIT = 10**6
ZERO = Decimal(0)

K = TypeVar("K", bound=Hashable)


class MoneyError(LedgerError, ValueError):
    """A value that cannot be money (not a decimal, a float, NaN, infinite)."""


def to_decimal(value: object, *, what: str = "amount") -> Decimal:
    """Parse `value` exactly. Strings and ints are taken as written; floats are refused.

    A float has already lost the number a person wrote (0.1 is 0.1000000000000000055...), so
    money must arrive as text or an integer.
    """
    if isinstance(value, Decimal):
        d = value
    elif isinstance(value, bool):
        raise MoneyError(f"{what}: {value!r} is a boolean, not a decimal")
    elif isinstance(value, int):
        d = Decimal(value)
    elif isinstance(value, float):
        raise MoneyError(f"{what}: {value!r} is a float; write it as a decimal string such as \"{value}\"")
    elif isinstance(value, str):
        text = value.strip().replace("_", "")
        try:
            d = Decimal(text)
        except InvalidOperation:
            raise MoneyError(f"{what}: {value!r} is not a decimal number") from None
    else:
        raise MoneyError(f"{what}: {value!r} is not a decimal number")
    if not d.is_finite():
        raise MoneyError(f"{what}: {value!r} is not a finite number")
    return d


def quantize(amount: Decimal, exp: Decimal = PRECISION) -> Decimal:
    """Round to the ledger precision, half to even (banker's rounding), exactly."""
    with localcontext() as ctx:
        ctx.prec = 60
        return amount.quantize(exp, rounding=ROUND_HALF_EVEN)


def to_micros(amount: Decimal) -> int:
    """The amount as an integer count of micro-units; it must already be at the ledger precision."""
    q = quantize(amount)
    if q != amount:
        raise MoneyError(f"{amount} has more precision than the ledger's 1e-6")
    return int(q.scaleb(6))


def from_micros(micros: int) -> Decimal:
    """Inverse of :func:`to_micros`."""
    return Decimal(micros).scaleb(-6).quantize(PRECISION)


def fmt(amount: Decimal) -> str:
    """A decimal string for JSON and CSV: plain notation, at the ledger precision."""
    q = quantize(amount)
    return format(q.copy_abs() if q == 0 else q, "f")  # never "-0.000000"


def split(amount: Decimal, weights: Mapping[K, object] | Sequence[tuple[K, object]],
          exp: Decimal = PRECISION) -> dict[K, Decimal]:
    """Split `amount` over keys in proportion to non-negative `weights`, exactly.

    Largest remainder at `exp`: each key first gets its share rounded toward zero, then the
    units left over go one each to the keys with the largest remainders. Ties on the remainder
    go to the larger weight, then to the smaller key (``sorted`` order of ``repr`` for keys that
    do not compare), so the result never depends on the order of the input. Zero weights get
    zero. The parts always sum to `amount` (``==``). `amount` must be a multiple of `exp`;
    negative amounts split symmetrically. With every weight zero (or no keys) there is nothing to
    split into and a ValueError is raised.
    """
    amount = to_decimal(amount)  # a float amount is refused here with a clear MoneyError
    items = list(weights.items()) if isinstance(weights, Mapping) else list(weights)
    ws: dict[K, Decimal] = {}
    for k, w in items:
        # str, not repr: a numpy float's repr is "np.float64(0.5)"; its str is the number.
        dw = w if isinstance(w, Decimal) else to_decimal(w if not isinstance(w, float) else str(w), what="weight")
        if dw < 0:
            raise ValueError(f"split: negative weight {dw} for {k!r}")
        if k in ws:
            raise ValueError(f"split: key {k!r} given twice")
        ws[k] = dw
    total_w = sum(ws.values(), ZERO)
    if total_w == 0:
        raise ValueError("split: all weights are zero; there is nothing to split the amount over")
    units_dec = amount.scaleb(-exp.as_tuple().exponent)
    if units_dec != units_dec.to_integral_value():
        raise ValueError(f"split: {amount} is not a multiple of {exp}")
    units = int(units_dec)
    sign = -1 if units < 0 else 1
    units = abs(units)

    # Integer arithmetic on scaled weights: exact, whatever the weights' precision.
    scale = max((-(w.as_tuple().exponent) for w in ws.values() if w.as_tuple().exponent < 0), default=0)
    iw = {k: int(w.scaleb(scale)) for k, w in ws.items()}
    itotal = sum(iw.values())
    base: dict[K, int] = {}
    rema: dict[K, int] = {}
    for k, w in iw.items():
        q, r = divmod(units * w, itotal)
        base[k] = q
        rema[k] = r
    left = units - sum(base.values())

    if left:
        candidates = [k for k in iw if iw[k] > 0]
        try:
            ranked = sorted(candidates, key=lambda k: (-rema[k], -iw[k], k))
        except TypeError:  # keys that do not compare with each other: order by their repr
            ranked = sorted(candidates, key=lambda k: (-rema[k], -iw[k], repr(k)))
        for k in ranked[:left]:
            base[k] += 1
    return {k: Decimal(sign * base[k]) * exp for k, _ in items}


def split_micros(total_micros: int, weights: Sequence[int]) -> list[int]:
    """Largest-remainder split of an integer over integer weights, positional (vectorizable core).

    Ties: larger remainder, then larger weight, then lower index. Used where the keys are rows
    of a frame already in a deterministic order.
    """
    if any(w < 0 for w in weights):
        raise ValueError("split_micros: negative weight")
    tw = sum(weights)
    if tw == 0:
        raise ValueError("split_micros: all weights are zero")
    sign = -1 if total_micros < 0 else 1
    units = abs(total_micros)
    parts = []
    rems = []
    for w in weights:
        q, r = divmod(units * w, tw)
        parts.append(q)
        rems.append(r)
    left = units - sum(parts)
    order = sorted(range(len(weights)), key=lambda i: (-rems[i], -weights[i], i))
    for i in order[:left]:
        parts[i] += 1
    return [sign * p for p in parts]


#: The widest exponent a decimal written as text may have to be kept as plain text (a DOUBLE's
#: smallest, 5e-324, has 324 places).
MAX_DECIMAL_EXPONENT = 400


def decimal_text_sql(x: str) -> str:
    """SQL: the text `x` of a decimal number in its one plain form, exactly (no exponent, no ``+``,
    no leading zeros, no trailing zeros after the point, ``0`` for any zero): ``3.36E-7`` is
    ``0.000000336``, ``1.50`` and ``15e-1`` are ``1.5``, ``2.000000000000000`` is ``2``. Text that is
    not a decimal number, or whose exponent is beyond ±:data:`MAX_DECIMAL_EXPONENT`, is given back
    as it is (a check then refuses it); NULL stays NULL. String operations only: no rounding."""
    t = f"lower(trim({x}))"
    ok = f"regexp_full_match({t}, '[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)(e[+-]?[0-9]+)?')"
    body = f"ltrim({t}, '+-')"
    exp_text = f"split_part({body}, 'e', 2)"
    exp = f"coalesce(TRY_CAST(nullif({exp_text}, '') AS BIGINT), 0)"
    sane = f"({exp_text} = '' OR abs(TRY_CAST({exp_text} AS BIGINT)) <= {MAX_DECIMAL_EXPONENT})"
    mant = f"split_part({body}, 'e', 1)"
    ip, fp = f"split_part({mant}, '.', 1)", f"split_part({mant}, '.', 2)"
    digits = f"({ip} || {fp})"
    point = f"(length({ip}) + {exp})"  # where the point falls among the digits
    padded = (f"(repeat('0', greatest(0, -{point})::BIGINT) || {digits} || "
              f"repeat('0', greatest(0, {point} - length({digits}))::BIGINT))")
    at = f"greatest({point}, 0)"
    whole, frac = f"ltrim(left({padded}, {at}), '0')", f"rtrim(substr({padded}, {at} + 1), '0')"
    plain = (f"((CASE WHEN {whole} = '' THEN '0' ELSE {whole} END) || "
             f"(CASE WHEN {frac} = '' THEN '' ELSE '.' || {frac} END))")
    signed = f"((CASE WHEN starts_with({t}, '-') AND {plain} <> '0' THEN '-' ELSE '' END) || {plain})"
    return f"(CASE WHEN {ok} AND {sane} THEN {signed} ELSE {x} END)"
