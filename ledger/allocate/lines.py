"""Lines and conservation: direct lines of the priced groups, direct costs, the merge and the check Σ lines == total."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from decimal import Decimal

from ..money import ZERO, quantize
from .charges import ChargeDay
from .pricing import PoolHour, _Group
from ..vocab import Category, LineKind
from .records import AllocationError, Line


def _direct_lines(gpu_groups: Mapping[tuple, _Group], provider: Mapping[tuple, _Group],
                  meters: Mapping[tuple, _Group]) -> tuple[list[Line], dict[tuple, Decimal], dict[tuple, Decimal]]:
    """Tenant lines of the GPU split, of provider tokens and of meters, with the quantized provider and
    meter amounts per line group (priced resources of the total)."""
    lines: list[Line] = []
    for (day, tenant, product, model, pool, work), g in gpu_groups.items():
        lines.append(Line(day=day, kind=LineKind.TENANT, tenant=tenant, product=product, model=model, pool=pool,
                          provider=None, category=Category.GPU, work=work, shared_from=None, quantity=g.quantity,
                          unit="token", amount=g.amount))
    provider_amounts = {k: quantize(g.amount) for k, g in provider.items()}
    for (day, tenant, product, model, prov, work), g in provider.items():
        lines.append(Line(day=day, kind=LineKind.TENANT, tenant=tenant, product=product, model=model, pool=None,
                          provider=prov, category=Category.PROVIDER_TOKENS, work=work, shared_from=None,
                          quantity=g.quantity, unit="token",
                          amount=provider_amounts[(day, tenant, product, model, prov, work)]))
    meter_amounts = {k: quantize(g.amount) for k, g in meters.items()}
    for (day, tenant, product, category, work, unit), g in meters.items():
        lines.append(Line(day=day, kind=LineKind.TENANT, tenant=tenant, product=product, model=None, pool=None,
                          provider=None, category=category, work=work, shared_from=None, quantity=g.quantity,
                          unit=unit, amount=meter_amounts[(day, tenant, product, category, work, unit)]))
    return lines, provider_amounts, meter_amounts


def _direct_costs(lines: Sequence[Line]) -> tuple[dict[tuple[str, str], Decimal], dict[str, Decimal]]:
    """Direct cost per (pool, tenant) of the GPU lines (idle shares) and per tenant of all lines (charge rules)."""
    gpu_direct: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    direct: dict[str, Decimal] = defaultdict(Decimal)
    for ln in lines:
        direct[ln.tenant] += ln.amount
        if ln.category == Category.GPU:
            gpu_direct[(ln.pool, ln.tenant)] += ln.amount
    return gpu_direct, direct


def _total(fleet: Mapping[tuple[str, int], PoolHour], provider_amounts: Mapping[tuple, Decimal],
           meter_amounts: Mapping[tuple, Decimal], charge_days: Sequence[ChargeDay]) -> Decimal:
    """Σ priced resources: C_serve and C_reserve of the fleet, provider tokens, meters and charge days."""
    return (sum((ph.c_serve + ph.c_reserve for ph in fleet.values()), ZERO)
            + sum(provider_amounts.values(), ZERO) + sum(meter_amounts.values(), ZERO)
            + sum((cd.amount for cd in charge_days), ZERO))


def merge(lines: Sequence[Line]) -> tuple[Line, ...]:
    """Lines with the same key become one (amounts and quantities add); sorted; empty lines dropped."""
    acc: dict[tuple, list] = {}
    for ln in lines:
        key = (ln.day, ln.kind, ln.tenant, ln.product, ln.model, ln.pool, ln.provider, ln.category, ln.work,
               ln.shared_from, ln.unit)
        if key in acc:
            acc[key][0] += ln.quantity
            acc[key][1] += ln.amount
        else:
            acc[key] = [ln.quantity, ln.amount]
    out = [Line(day=k[0], kind=k[1], tenant=k[2], product=k[3], model=k[4], pool=k[5], provider=k[6],
                category=k[7], work=k[8], shared_from=k[9], quantity=q, unit=k[10], amount=a)
           for k, (q, a) in acc.items() if a != 0 or q != 0]
    return tuple(sorted(out, key=Line.sort_key))


def check_conservation(merged: Sequence[Line], total: Decimal) -> None:
    """Raise :class:`AllocationError` unless Σ lines == total and every line is exact at 1e-6."""
    lines_total = sum((ln.amount for ln in merged), ZERO)
    if lines_total != total:
        raise AllocationError([f"conservation failed: lines sum to {lines_total}, priced resources to {total} "
                               f"(difference {lines_total - total}); the run is not written"])
    if any(ln.amount != quantize(ln.amount) for ln in merged):
        raise AllocationError(["a line has more precision than the ledger's 1e-6; the run is not written"])
