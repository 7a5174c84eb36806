"""Drill-down of a run: a tenant's products, models and lines (filtered), the tenant x product matrix,
and the view by product with the shared charges spread over products.

**Shared charges** is the one name of the row with no product: a tenant's lines that carry no
product, which are the charges shared over tenants by their rule (``allocate`` in the charges
file), and, under idle policy ``share``, the idle shared over tenants (and, after a true-up, the
variance put on a tenant with no product). :func:`spread_shared` spreads each tenant's part of that
row over the tenant's own products by the rule it was shared over tenants with, exactly (largest
remainder at 1e-6, so every tenant keeps its cost to the micro-unit and the view adds up to the run
total ``==``):

- a charge ``even``: equally over the tenant's products with direct cost;
- ``by_cost`` and ``tenant:X``: in proportion to the products' direct cost (a charge given to one
  tenant has no rule among its products; its cost is the natural one);
- ``by_tokens``: in proportion to the products' active tokens;
- shared idle of a pool: in proportion to the products' direct GPU cost in that pool (the rule that
  shared it over tenants);
- a true-up's variance on no product, and the charges of a run that did not record its charges'
  rules (made before runs did): by direct cost.

A part whose rule finds no weight among the tenant's products falls back to direct cost; one that
still finds none (a tenant with no product cost at all) stays on the shared charges row.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from .allocate import VARIANCE, Line
from .economics import RunData, unit_economics
from .money import ZERO, split
from .vocab import ChargeRule

#: The one name of the row of a tenant's lines with no product (reports, dashboard, workbook).
SHARED_CHARGES = "shared charges"
#: How that row is shared, as every surface says it.
SHARED_CHARGES_NOTE = ("shared charges: each tenant's lines with no product — the charges shared over tenants by "
                       "their rule (even, by_cost, by_tokens, tenant:X), and under idle policy share the idle "
                       "shared over tenants; spread over products, each tenant's part goes to its own products by "
                       "the same rule (even: equally over its products with direct cost; by_cost and tenant:X: by "
                       "direct cost; by_tokens: by active tokens; shared idle: by direct GPU cost in its pool), "
                       "largest remainder at 1e-6, so every tenant and the run total are unchanged")
BY_COST, EVEN, BY_TOKENS = "by_cost", "even", "by_tokens"


def row_label(by: str, key: str | None) -> str:
    """A report row's name: the key, or for the lines with no `by` :data:`SHARED_CHARGES` (by
    product) or ``no model`` (by model: shared charges and meters, which have no model)."""
    if key is not None:
        return key
    return SHARED_CHARGES if by == "product" else f"no {by}"


def _is_cost(ln: Line) -> bool:
    """A tenant's line: its cost (a tenant's true-up variance counts as its cost)."""
    return ln.tenant is not None and (ln.kind == "tenant" or ln.kind == VARIANCE)


# ---- the spread -------------------------------------------------------------------------------

@dataclass(frozen=True)
class SpreadPart:
    """One piece of a tenant's shared charges spread over its products: `tenant`, the `basis` it was
    spread by (even, by_cost, by_tokens, ``gpu:<pool>``), the `category` and `shared_from` of its
    lines, the `amount`, and `parts` (product -> amount; empty when it stays on the shared row)."""

    tenant: str
    basis: str
    category: str
    shared_from: str | None
    pool: str | None
    amount: Decimal
    parts: dict[str | None, Decimal]


def _basis_of_rule(rule: str) -> str:
    if rule == ChargeRule.EVEN:
        return EVEN
    if rule == ChargeRule.BY_TOKENS:
        return BY_TOKENS
    return BY_COST  # by_cost, tenant:X


def _shared_groups(data: RunData) -> dict[tuple, Decimal]:
    """Each tenant's shared charges by (tenant, basis, category, shared_from, pool): shared idle by
    its pool, variance by cost, charges by the rules the run recorded (the rest by cost)."""
    groups: dict[tuple, Decimal] = defaultdict(Decimal)
    charges: dict[tuple[str, str], Decimal] = defaultdict(Decimal)  # (tenant, category) -> charge lines
    for ln in data.lines:
        if not _is_cost(ln) or ln.product is not None:
            continue
        if ln.shared_from:
            groups[(ln.tenant, f"gpu:{ln.pool}", ln.category, ln.shared_from, ln.pool)] += ln.amount
        elif ln.kind == VARIANCE:
            groups[(ln.tenant, BY_COST, ln.category, None, None)] += ln.amount
        else:
            charges[(ln.tenant, ln.category)] += ln.amount
    recorded: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for c in data.charge_shares:
        if (c.tenant, c.category) in charges:
            groups[(c.tenant, _basis_of_rule(c.rule), c.category, None, None)] += c.amount
            recorded[(c.tenant, c.category)] += c.amount
    for key, amount in charges.items():
        if (rest := amount - recorded.get(key, ZERO)) != 0:  # not recorded (an older run): by cost
            groups[(key[0], BY_COST, key[1], None, None)] += rest
    return {k: v for k, v in groups.items() if v != 0}


def _weights(data: RunData) -> dict[tuple[str, str], dict[str, Decimal]]:
    """Per (tenant, basis): the tenant's products and their weights (only positive ones)."""
    cost: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    gpu: dict[tuple[str, str], dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for ln in data.lines:
        if _is_cost(ln) and ln.product is not None:
            cost[ln.tenant][ln.product] += ln.amount
            if ln.category == "gpu" and ln.pool is not None and not ln.shared_from:
                gpu[(ln.tenant, ln.pool)][ln.product] += ln.amount
    tokens: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for u in data.usage:
        if u.product is not None:
            tokens[u.tenant][u.product] += Decimal(u.active_tokens)
    out: dict[tuple[str, str], dict[str, Decimal]] = {}
    for tenant, products in cost.items():
        out[(tenant, BY_COST)] = {p: c for p, c in products.items() if c > 0}
        out[(tenant, EVEN)] = {p: Decimal(1) for p, c in products.items() if c > 0}
    for tenant, products in tokens.items():
        out[(tenant, BY_TOKENS)] = {p: n for p, n in products.items() if n > 0}
    for (tenant, pool), products in gpu.items():
        out[(tenant, f"gpu:{pool}")] = {p: c for p, c in products.items() if c > 0}
    return out


def spread_parts(data: RunData) -> list[SpreadPart]:
    """Every tenant's shared charges and how they spread over its products (module docstring)."""
    weights = _weights(data)
    out = []
    for (tenant, basis, category, shared_from, pool), amount in sorted(
            _shared_groups(data).items(), key=lambda kv: tuple("" if x is None else x for x in kv[0])):
        w = weights.get((tenant, basis)) or weights.get((tenant, BY_COST)) or {}
        parts = split(amount, sorted(w.items())) if w else {}
        out.append(SpreadPart(tenant=tenant, basis=basis, category=category, shared_from=shared_from, pool=pool,
                              amount=amount, parts={p: a for p, a in parts.items() if a != 0}))
    return out


def spread_shared(data: RunData) -> RunData:
    """The run data with each tenant's shared charges moved onto its products (:func:`spread_parts`):
    its lines with no product are replaced by one line per product and piece, dated the period's
    first day (the report by product reads them; they are not the run's lines). Σ lines, each
    tenant's cost and each category are unchanged, exactly."""
    spread = spread_parts(data)
    kept = [ln for ln in data.lines if not (_is_cost(ln) and ln.product is None)]
    day = data.info.start.date()
    added = []
    for sp in spread:
        pieces = sp.parts or {None: sp.amount}
        for product, amount in sorted(pieces.items(), key=lambda kv: (kv[0] is None, kv[0] or "")):
            added.append(Line(day=day, kind="tenant", tenant=sp.tenant, product=product, model=None, pool=sp.pool,
                              provider=None, category=sp.category, work="succeeded", shared_from=sp.shared_from,
                              quantity=ZERO, unit="second", amount=amount))
    return replace(data, lines=tuple(kept + added))


#: The name of the by-product view with the shared charges spread over products: its JSON's `view`,
#: its CSV's `view` column and its table's title say it.
SPREAD_VIEW = "shared charges spread"


def spread_by_product(data: RunData, *, tenants: Sequence[str] | None = None):
    """The unit economics by product with the shared charges spread over products
    (:func:`spread_shared`): a :class:`ledger.economics.Report` whose rows add up, with the lines of
    no tenant, to the run total; its `view` is :data:`SPREAD_VIEW`."""
    return replace(unit_economics(spread_shared(data), by="product", tenants=tenants), view=SPREAD_VIEW)


# ---- a tenant's drill-down and the matrix -----------------------------------------------------

@dataclass(frozen=True)
class Cell:
    """A group of a tenant's lines: `cost` (exact), `lines` (how many), `failed_work`."""

    cost: Decimal
    lines: int
    failed_work: Decimal


def _group(lines: Iterable[Line], key) -> dict:
    acc: dict = {}
    for ln in lines:
        k = key(ln)
        c = acc.get(k)
        failed = ln.amount if ln.work == "failed" else ZERO
        acc[k] = Cell(ln.amount, 1, failed) if c is None else Cell(c.cost + ln.amount, c.lines + 1,
                                                                   c.failed_work + failed)
    return acc


def tenant_lines(data: RunData, tenant: str, *, product: str | None = None, model: str | None = None,
                 category: str | None = None, shared: bool | None = None) -> list[Line]:
    """The tenant's lines, filtered: `product` (:data:`SHARED_CHARGES` for the lines with no
    product), `model`, `category`; `shared` True for its shared charges only, False for its direct
    lines only."""
    out = []
    for ln in data.lines:
        if not _is_cost(ln) or ln.tenant != tenant:
            continue
        if product is not None and (ln.product if ln.product is not None else SHARED_CHARGES) != product:
            continue
        if model is not None and ln.model != model:
            continue
        if category is not None and ln.category != category:
            continue
        if shared is not None and (ln.product is None) != shared:
            continue
        out.append(ln)
    return out


def by_product(lines: Iterable[Line]) -> dict[str, Cell]:
    """Lines grouped by product (:data:`SHARED_CHARGES` for no product)."""
    return _group(lines, lambda ln: ln.product if ln.product is not None else SHARED_CHARGES)


def by_model(lines: Iterable[Line]) -> dict[tuple[str, str], Cell]:
    """Lines grouped by (product, model); a line with no model is under ``no model`` (meters,
    shared charges)."""
    return _group(lines, lambda ln: (ln.product if ln.product is not None else SHARED_CHARGES,
                                     ln.model if ln.model is not None else "no model"))


def matrix(data: RunData, *, spread: bool = False) -> dict[tuple[str, str], Decimal]:
    """Tenant x product cost: (tenant, product) -> Σ of the tenant's lines on the product
    (:data:`SHARED_CHARGES` for no product, unless `spread`, where they are on the products by
    :func:`spread_shared`). The cells add up to the tenants' cost exactly."""
    src = spread_shared(data) if spread else data
    acc: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for ln in src.lines:
        if _is_cost(ln):
            acc[(ln.tenant, ln.product if ln.product is not None else SHARED_CHARGES)] += ln.amount
    return dict(acc)


__all__ = ["BY_COST", "BY_TOKENS", "EVEN", "SHARED_CHARGES", "SHARED_CHARGES_NOTE", "Cell", "SpreadPart",
           "by_model", "by_product", "matrix", "row_label", "spread_by_product", "spread_parts",
           "spread_shared", "tenant_lines"]
