"""Allocation runs as FinOps FOCUS 1.2 cost-and-usage rows (CSV), the default of ``ledger export --focus``.

One row per allocation line, every FOCUS 1.2 column, checked by focus-validator 2.2.1 (its bundled
rules are FOCUS 1.2). Beyond 1.2, following the newer drafts, with ``x_`` prefixes until a
validator knows them:

- the split is described as FOCUS 1.3 describes a data generator's split cost allocation, in
  ``x_AllocatedMethodId``, ``x_AllocatedMethodDetails``, ``x_AllocatedResourceId``,
  ``x_AllocatedResourceName`` and ``x_AllocatedTags``;
- tokens are ``ConsumedUnit`` "Tokens" and ``PricingUnit`` "1000000 Tokens";
- the model is named in ``SkuPriceDetails`` (``x_ModelId``, the FOCUS 1.5 draft's ``ModelId``).

Money stays Decimal text at the ledger precision, a null is an empty unquoted field (a quoted empty
field is an empty string, which FOCUS forbids), and every other field is quoted and neutralized
against formulas. See docs/exports.md for the column mapping and a worked row.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal

from ..allocate import Line
from ..instants import period_label
from ..money import ZERO, fmt, quantize, split
from ..reports import RunData
from ..vocab import Category, LineKind
from .focus import X_COLUMNS, charge_period, describe, is_charge
from .safe import csv_cell

#: FOCUS 1.2 columns the ledger fills (a row may still hold a null where a column does not apply).
FILLED_COLUMNS = (
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingAccountType", "BillingCurrency",
    "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeDescription", "ChargeFrequency",
    "ChargePeriodEnd", "ChargePeriodStart", "ConsumedQuantity", "ConsumedUnit", "ContractedCost", "EffectiveCost",
    "InvoiceId", "InvoiceIssuerName", "ListCost", "PricingCategory", "PricingCurrency", "PricingCurrencyEffectiveCost",
    "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ResourceId", "ResourceName",
    "ResourceType", "ServiceCategory", "ServiceName", "ServiceSubcategory", "SkuId", "SkuMeter",
    "SkuPriceDetails", "SkuPriceId", "SubAccountId", "SubAccountName", "SubAccountType", "Tags",
)
#: FOCUS 1.2 columns that never apply to an internal chargeback, always null: no availability zones,
#: no capacity reservations, no corrections of an invoiced period (a new run replaces a run), no
#: commitment discounts, no unit price the line's cost is the product of (an allocated share is not
#: quantity × price), no regions on a line.
NULL_COLUMNS = (
    "AvailabilityZone", "CapacityReservationId", "CapacityReservationStatus", "ChargeClass",
    "CommitmentDiscountCategory", "CommitmentDiscountId", "CommitmentDiscountName", "CommitmentDiscountQuantity",
    "CommitmentDiscountStatus", "CommitmentDiscountType", "CommitmentDiscountUnit", "ContractedUnitPrice",
    "ListUnitPrice", "PricingCurrencyContractedUnitPrice", "PricingCurrencyListUnitPrice", "RegionId", "RegionName",
)
FOCUS12_COLUMNS = FILLED_COLUMNS + NULL_COLUMNS
#: FOCUS 1.3's split cost allocation columns, prefixed until the validator knows FOCUS 1.3.
ALLOCATED_COLUMNS = ("x_AllocatedMethodId", "x_AllocatedMethodDetails", "x_AllocatedResourceId",
                     "x_AllocatedResourceName", "x_AllocatedTags")
COLUMNS = FOCUS12_COLUMNS + ALLOCATED_COLUMNS + X_COLUMNS
DECIMAL_COLUMNS = frozenset({"BilledCost", "EffectiveCost", "ListCost", "ContractedCost",
                             "PricingCurrencyEffectiveCost", "ConsumedQuantity", "PricingQuantity", "x_Quantity"})
#: The FOCUS 1.2 applicability criteria that hold for the ledger's export (focus-validator
#: ``--applicability-criteria``): named billing account, tenants as sub accounts, tags, measured
#: usage, typed resources billed by their provisioned time (GPU pools), more than one pricing category.
APPLICABILITY_CRITERIA = ("ACCOUNT_NAMING_SUPPORTED", "SUB_ACCOUNT_SUPPORTED", "TAGGING_SUPPORTED",
                          "USAGE_MEASUREMENT_SUPPORTED", "RESOURCE_TYPE_ASSIGNMENT_SUPPORTED",
                          "BILLING_BASED_ON_PROVISIONED_RESOURCES_SUPPORTED", "MULTIPLE_PRICING_CATEGORIES_SUPPORTED")

#: category -> (ServiceCategory, ServiceSubcategory from FOCUS 1.2's allowed values, ServiceName)
SERVICE = {
    Category.GPU: ("AI and Machine Learning", "Generative AI", "Self-hosted LLM inference"),
    Category.PROVIDER_TOKENS: ("AI and Machine Learning", "Generative AI", "LLM API"),
    Category.TOOL: ("AI and Machine Learning", "Other (AI and Machine Learning)", "LLM tool calls"),
    Category.EVALUATION: ("AI and Machine Learning", "Other (AI and Machine Learning)", "Evaluation"),
    Category.EGRESS: ("Networking", "Network Connectivity", "Data egress"),
    Category.NETWORK: ("Networking", "Network Infrastructure", "Network"),
    Category.OBSERVABILITY: ("Management and Governance", "Observability", "Observability"),
    Category.STORAGE: ("Storage", "Other (Storage)", "Storage"),
    Category.ENGINEERING_OPS: ("Other", "Other (Other)", "Engineering operations"),
    Category.OTHER: ("Other", "Other (Other)", "Other"),
}
#: Precision of an AllocatedRatio (a share of its origin charge).
RATIO = Decimal("1e-9")
#: Precision of a PricingQuantity converted from seconds (GPU-Hours, Days).
CONVERTED = Decimal("1e-9")
MILLION = Decimal(10**6)

_COUNT_UNITS = {"token": "Token", "request": "Request", "call": "Call", "span": "Span", "gpu": "GPU"}
_TIME_UNITS = {"second": "Second", "minute": "Minute", "hour": "Hour", "day": "Day", "month": "Month",
               "year": "Year"}
_DATA_UNITS = frozenset({"b", "Kb", "Mb", "Gb", "Tb", "Pb", "B", "KB", "MB", "GB", "TB", "PB", "Kib", "Mib", "Gib",
                         "Tib", "Pib", "KiB", "MiB", "GiB", "TiB", "PiB"})
#: pint's long names of data sizes, as FOCUS writes them
_DATA_NAMES = {"bit": "b", "byte": "B", "kilobyte": "KB", "megabyte": "MB", "gigabyte": "GB", "terabyte": "TB",
               "petabyte": "PB", "kibibyte": "KiB", "mebibyte": "MiB", "gibibyte": "GiB", "tebibyte": "TiB",
               "pebibyte": "PiB"}


def focus_unit(unit: str) -> str:
    """A ledger unit as a FOCUS UnitFormat unit: ``token`` -> ``Tokens``, ``GB`` -> ``GB``,
    ``GiB * day`` -> ``GiB-Days``, ``gpu * second`` -> ``GPU-Seconds``, ``1e6 * token`` ->
    ``1000000 Tokens``; other words capitalized (``kWh`` -> ``KWh``), and ``Units`` for anything
    else (``2.5 * GB``: the ledger's own unit is in x_Unit)."""
    parts = [_DATA_NAMES.get(p.strip().rstrip("s"), p.strip()) for p in unit.split("*")]

    def plural(p: str) -> str | None:
        if p in _DATA_UNITS:
            return p
        word = _COUNT_UNITS.get(p.rstrip("s")) or _TIME_UNITS.get(p.rstrip("s"))
        return word + "s" if word else None

    if len(parts) == 1 and (one := plural(parts[0])):
        return one
    if len(parts) == 2 and re.fullmatch(r"\d+(?:\.0*)?(?:[eE]\+?\d+)?", parts[0]) and (unit_of := plural(parts[1])):
        return f"{int(Decimal(parts[0]))} {unit_of}"  # "1e6 * token" -> "1000000 Tokens"
    if len(parts) == 2 and parts[1].rstrip("s") in _TIME_UNITS:
        first = parts[0] if parts[0] in _DATA_UNITS else _COUNT_UNITS.get(parts[0].rstrip("s"))
        if first:
            return f"{first}-{_TIME_UNITS[parts[1].rstrip('s')]}s"
    if not re.fullmatch(r"[A-Za-z]+(?: [A-Za-z]+)*", unit.strip()):
        return "Units"  # a scale or an operator FOCUS cannot write: the unit itself is in x_Unit
    return " ".join(w[0].upper() + w[1:] for w in unit.split())


def decimal_text(value: Decimal) -> str:
    """A quantity exactly, in plain notation with at least one decimal (``86400.0``), so that a
    column of whole numbers still reads as decimals."""
    text = format(value.normalize() if value != 0 else Decimal(0), "f")
    return text if "." in text else text + ".0"


def json_text(value: object) -> str:
    """Compact JSON with keys in order given and Decimals as exact JSON numbers (never floats)."""
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{json_text(v)}"
                              for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(json_text(v) for v in value) + "]"
    if isinstance(value, Decimal):
        return format(value.normalize() if value != 0 else Decimal(0), "f")
    return json.dumps(value, ensure_ascii=False)


# ---- the split: origin charges and allocated ratios ---------------------------------------------

def origin(ln: Line) -> tuple | None:
    """The origin charge a line is a part of in the ledger's split, or None for a line that is not a
    split (provider tokens and meters are each tenant's own usage): a pool's GPU time of the day
    (tenant shares, idle slack, idle reserve, tenants' shares of idle) or the day's shared charges
    of one category (tenants' shares and the unallocated rest)."""
    if ln.category == "gpu" and ln.pool:
        return ("pool", ln.day, ln.pool)
    if is_charge(ln):
        return ("charges", ln.day, ln.category)
    return None


def allocated_ratios(lines: Sequence[Line]) -> dict[int, Decimal]:
    """AllocatedRatio of every split line (by index in `lines`): its share of its origin charge at
    1e-9. When the origin's lines all have one sign the ratios are a largest-remainder split of 1,
    so they add up to exactly 1; with credits and costs mixed each is rounded on its own. An origin
    that adds up to 0 has no ratios."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, ln in enumerate(lines):
        if (key := origin(ln)) is not None:
            groups[key].append(i)
    out: dict[int, Decimal] = {}
    for members in groups.values():
        total = sum((lines[i].amount for i in members), ZERO)
        if total == 0:
            continue
        if all(lines[i].amount >= 0 for i in members) or all(lines[i].amount <= 0 for i in members):
            out.update(split(Decimal(1), [(i, abs(lines[i].amount)) for i in members], exp=RATIO))
        else:
            out.update({i: quantize(lines[i].amount / total, RATIO) for i in members})
    return out


def method_id(ln: Line, basis: str) -> str | None:
    """x_AllocatedMethodId, one id per documented rule (docs/exports.md): ``gpu-by-<basis>`` for the
    GPU split of a pool-hour and its idle rest, ``idle-by-direct-gpu-cost`` for a tenant's share of
    idle (policy share), ``charge-by-rule`` for a shared charge's shares and its unallocated rest."""
    if origin(ln) is None:
        return None
    if ln.category == "gpu":
        return "idle-by-direct-gpu-cost" if ln.shared_from else f"gpu-by-{basis}"
    return "charge-by-rule"


def allocated(ln: Line, basis: str, ratio: Decimal | None) -> dict[str, str | None]:
    """The five x_Allocated* columns of a line (FOCUS 1.3 semantics): the method, its details
    (AllocatedRatio; for a GPU share under the active_tokens basis also the tokens it weighed), the
    object the cost is allocated to (a tenant's product and model for a GPU share, the tenant for a
    share of idle or of a charge; null for the unallocated rest: idle slack, idle reserve,
    unallocated charges) and the tags the split adds (its origin; the idle a share comes from)."""
    method = method_id(ln, basis)
    if method is None:
        return dict.fromkeys(ALLOCATED_COLUMNS)
    element: dict[str, object] = {}
    if ratio is not None:
        element["AllocatedRatio"] = ratio
        if ln.category == "gpu" and not ln.shared_from and ln.kind == "tenant" and basis == "active_tokens":
            element.update({"UsageUnit": "Tokens", "UsageQuantity": ln.quantity})
    details = json_text({"Elements": [element]}) if element else None
    if ln.kind != "tenant":
        return {"x_AllocatedMethodId": method, "x_AllocatedMethodDetails": details, "x_AllocatedResourceId": None,
                "x_AllocatedResourceName": None, "x_AllocatedTags": None}
    if ln.category == "gpu" and not ln.shared_from:
        parts = [p for p in (ln.tenant, ln.product, ln.model) if p]
        resource_id = "/".join(parts)
        name = ", ".join(f"{k} {v}" for k, v in (("tenant", ln.tenant), ("product", ln.product),
                                                  ("model", ln.model)) if v)
    else:
        resource_id, name = ln.tenant, f"tenant {ln.tenant}"
    source = f"pool/{ln.pool}" if ln.category == "gpu" else f"charges/{ln.category}"
    tags = {"ledger/origin": source} | ({"ledger/shared-from": ln.shared_from} if ln.shared_from else {})
    return {"x_AllocatedMethodId": method, "x_AllocatedMethodDetails": details, "x_AllocatedResourceId": resource_id,
            "x_AllocatedResourceName": name, "x_AllocatedTags": json_text(tags)}


# ---- one row ---------------------------------------------------------------------------------------

def quantities(ln: Line) -> tuple[str, str, str, str]:
    """(ConsumedQuantity, ConsumedUnit, PricingQuantity, PricingUnit) of a line. Tokens are consumed
    in Tokens and priced per 1000000 Tokens; GPU time is consumed in GPU-Seconds and priced in
    GPU-Hours; a charge's share is its seconds of the day, priced in Days (both conversions at
    1e-9); a meter is priced in the unit it is measured in."""
    if ln.unit == "token":
        return decimal_text(ln.quantity), "Tokens", decimal_text(ln.quantity / MILLION), "1000000 Tokens"
    if ln.unit == "gpu * second":
        hours = quantize(ln.quantity / 3600, CONVERTED)
        return decimal_text(ln.quantity), "GPU-Seconds", decimal_text(hours), "GPU-Hours"
    if is_charge(ln):
        days = quantize(ln.quantity / 86400, CONVERTED)
        return decimal_text(ln.quantity), "Seconds", decimal_text(days), "Days"
    unit = focus_unit(ln.unit)
    return decimal_text(ln.quantity), unit, decimal_text(ln.quantity), unit


def sku(ln: Line) -> tuple[str, str, str, str | None]:
    """(SkuId, SkuPriceId, SkuMeter, SkuPriceDetails) of a line. A SKU is one meter of one thing:
    a pool's GPU time (by model: the model is in SkuPriceDetails), its idle slack or idle reserve,
    a provider's model, a category's meter in one unit, or a category's shared charges. The ids stay
    the same from run to run (the run is in InvoiceId and x_RunId)."""
    details = json_text({"x_ModelId": ln.model}) if ln.model else None
    if ln.category == "gpu" and ln.pool:
        idle = ln.shared_from or (ln.kind if ln.kind in (LineKind.IDLE_SLACK, LineKind.IDLE_RESERVE) else None)
        if idle:
            sku_id = f"gpu:{ln.pool}:{idle}"
            return sku_id, sku_id, "Idle GPU Time" if idle == "idle_slack" else "Reserve GPU Time", None
        sku_id = f"gpu:{ln.pool}"
        return sku_id, f"{sku_id}:{ln.model}" if ln.model else sku_id, "GPU Time", details
    if ln.category == "provider_tokens":
        sku_id = ":".join(p for p in ("provider_tokens", ln.provider, ln.model) if p)
        return sku_id, sku_id, "Tokens", details
    sku_id = f"{ln.category}:charge" if is_charge(ln) else f"{ln.category}:{ln.unit}"
    return sku_id, sku_id, "Shared Charge" if is_charge(ln) else focus_unit(ln.unit), details


def focus12_row(ln: Line, data: RunData, *, billing_account_id: str, billing_account_name: str,
                ratio: Decimal | None = None) -> dict[str, str | None]:
    """The FOCUS 1.2 columns of one allocation line (text, None for null, not yet neutralized).
    `ratio` is its AllocatedRatio (:func:`allocated_ratios`)."""
    info = data.info
    charge_start, charge_end = charge_period(ln, data)
    service_category, subcategory, service_name = SERVICE.get(ln.category, ("Other", "Other (Other)", ln.category))
    if ln.category == "provider_tokens" and ln.provider:
        service_name = f"{ln.provider} API"
    if ln.pool:  # the pool's name is its id
        resource, resource_name, resource_type = ln.pool, ln.pool, "GPU pool"
    elif ln.provider and ln.model:
        resource, resource_name, resource_type = f"{ln.provider}/{ln.model}", ln.model, "Model endpoint"
    else:
        resource = resource_name = resource_type = None
    tenant = ln.tenant if ln.kind == "tenant" else None
    consumed, consumed_unit, pricing, pricing_unit = quantities(ln)
    sku_id, sku_price_id, meter, sku_details = sku(ln)
    tags = {k: v for k, v in (("tenant", ln.tenant), ("product", ln.product), ("model", ln.model), ("pool", ln.pool),
                              ("provider", ln.provider), ("ledger/kind", ln.kind), ("ledger/work", ln.work)) if v}
    amount = fmt(ln.amount)
    period = period_label(info.start, info.end)
    row: dict[str, str | None] = dict.fromkeys(COLUMNS)
    row.update({
        "BilledCost": amount, "EffectiveCost": amount, "ListCost": amount, "ContractedCost": amount,
        "PricingCurrencyEffectiveCost": amount, "PricingCurrency": info.currency,
        "BillingAccountId": billing_account_id, "BillingAccountName": billing_account_name,
        "BillingAccountType": "Chargeback", "BillingCurrency": info.currency,
        "BillingPeriodStart": period["start"], "BillingPeriodEnd": period["end"],
        "ChargePeriodStart": charge_start, "ChargePeriodEnd": charge_end, "ChargeCategory": "Usage",
        "ChargeDescription": describe(ln), "ChargeFrequency": "Recurring" if is_charge(ln) else "Usage-Based",
        "ConsumedQuantity": consumed, "ConsumedUnit": consumed_unit,
        "PricingQuantity": pricing, "PricingUnit": pricing_unit,
        "PricingCategory": "Other" if ln.category == "gpu" or is_charge(ln) else "Standard",
        "InvoiceId": info.run_id, "InvoiceIssuerName": billing_account_name, "ProviderName": billing_account_name,
        "PublisherName": ln.provider if ln.category == "provider_tokens" and ln.provider else billing_account_name,
        "ResourceId": resource, "ResourceName": resource_name, "ResourceType": resource_type,
        "ServiceCategory": service_category, "ServiceSubcategory": subcategory, "ServiceName": service_name,
        "SkuId": sku_id, "SkuPriceId": sku_price_id, "SkuMeter": meter, "SkuPriceDetails": sku_details,
        "SubAccountId": tenant, "SubAccountName": tenant, "SubAccountType": "Tenant" if tenant else None,
        "Tags": json_text(dict(sorted(tags.items()))),
        "x_RunId": info.run_id, "x_Kind": ln.kind, "x_Tenant": ln.tenant, "x_Product": ln.product,
        "x_Model": ln.model, "x_Pool": ln.pool, "x_Provider": ln.provider, "x_Category": ln.category,
        "x_Work": ln.work, "x_SharedFrom": ln.shared_from, "x_Quantity": decimal_text(ln.quantity), "x_Unit": ln.unit,
        "x_PriceBooks": " ".join(info.price_books) or None,
    })
    row.update(allocated(ln, info.basis, ratio))
    return {k: (v if v != "" else None) for k, v in row.items()}


# ---- the file --------------------------------------------------------------------------------------

def _field(value: str | None, numeric: bool) -> str:
    if value is None:
        return ""
    return '"' + csv_cell(value, numeric=numeric).replace('"', '""') + '"'


def focus12_csv(rows: Iterable[Mapping[str, str | None]]) -> str:
    """CSV text of FOCUS 1.2 rows: the header, then a line per row; a null is an empty unquoted field
    and every other field is quoted (a line break inside a value stays in its row) and goes through
    :func:`ledger.outputs.csv_cell` (text neutralized, numbers kept numbers in DECIMAL_COLUMNS)."""
    flags = [c in DECIMAL_COLUMNS for c in COLUMNS]
    out = [",".join(_field(c, False) for c in COLUMNS)]
    for row in rows:
        out.append(",".join(_field(row.get(c), f) for c, f in zip(COLUMNS, flags, strict=True)))
    return "\n".join(out) + "\n"


def allocation_as_focus12(data: RunData, *, billing_account_id: str = "inference-ledger",
                          billing_account_name: str = "Inference platform") -> str:
    """FOCUS 1.2 CSV of a run: every line a row, cost columns as decimals at the ledger precision
    (``Σ BilledCost`` is the run total exactly), timestamps in UTC ISO 8601 with ``Z``, nulls as
    empty unquoted fields, every other field quoted and neutralized against formulas."""
    ratios = allocated_ratios(data.lines)
    return focus12_csv(focus12_row(ln, data, billing_account_id=billing_account_id,
                                   billing_account_name=billing_account_name, ratio=ratios.get(i))
                       for i, ln in enumerate(data.lines))
