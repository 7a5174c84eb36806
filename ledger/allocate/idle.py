"""Idle: idle slack and idle reserve lines per day and pool, kept separate or shared over tenants (§4.4)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import date
from decimal import Decimal, localcontext

from ..money import ZERO, from_micros, quantize, split
from .gpu import Coefficient
from .pricing import PoolHour, _Group
from ..vocab import Category, LineKind
from .records import Line, Policy, _at


def _idle_lines(fleet: Mapping[tuple[str, int], PoolHour], coeffs: Sequence[Coefficient],
                slack: Mapping[tuple[str, int], int], gpu_direct: Mapping[tuple[str, str], Decimal],
                policy: Policy) -> list[Line]:
    """§4.4 Idle slack and idle reserve lines per day and pool; under policy ``share`` each is split
    over the pool's tenants in proportion to their direct GPU cost in that pool over the period."""
    per_day: dict[tuple[date, str, str], _Group] = defaultdict(_Group)
    slack_gpu_s = {(c.pool, c.hour): c.slack_gpu_s for c in coeffs}
    for (pool, hour), micros in slack.items():
        g = per_day[(_at(hour).date(), pool, LineKind.IDLE_SLACK)]
        g.amount += from_micros(micros)
        g.quantity += slack_gpu_s.get((pool, hour), ZERO)
    for (pool, hour), ph in fleet.items():
        if ph.reserve_gpu_s or ph.c_reserve:
            g = per_day[(_at(hour).date(), pool, LineKind.IDLE_RESERVE)]
            g.amount += ph.c_reserve
            g.quantity += ph.reserve_gpu_s
    tenants_of: dict[str, dict[str, Decimal]] = defaultdict(dict)
    for (pool, tenant), cost in gpu_direct.items():
        if cost > 0:
            tenants_of[pool][tenant] = cost
    lines: list[Line] = []
    for (day, pool, kind), g in sorted(per_day.items()):
        if g.amount == 0 and g.quantity == 0:
            continue
        weights = tenants_of.get(pool)
        if policy.idle == "share" and weights:
            total_w = sum(weights.values(), ZERO)
            for tenant, part in split(g.amount, sorted(weights.items())).items():
                if part == 0:
                    continue
                with localcontext() as ctx:
                    ctx.prec = 60
                    q = quantize(g.quantity * weights[tenant] / total_w)
                lines.append(Line(day=day, kind=LineKind.TENANT, tenant=tenant, product=None, model=None, pool=pool,
                                  provider=None, category=Category.GPU, work="succeeded", shared_from=kind, quantity=q,
                                  unit="gpu * second", amount=part))
        else:
            lines.append(Line(day=day, kind=kind, tenant=None, product=None, model=None, pool=pool, provider=None,
                              category=Category.GPU, work="succeeded", shared_from=None, quantity=g.quantity,
                              unit="gpu * second", amount=g.amount))
    return lines

