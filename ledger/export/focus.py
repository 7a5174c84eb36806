"""Allocation runs as FinOps FOCUS 1.0 rows (CSV): one row per allocation line, cost columns as
decimals, the ledger's dimensions as ``x_`` columns. See docs/exports.md for the column mapping."""
from __future__ import annotations

import json
from datetime import datetime, time, timedelta, timezone

from ..allocate import Line
from ..instants import iso, period_label
from ..money import fmt
from ..reports import RunData
from ..vocab import Category, LineKind
from .safe import csv_text

#: The columns of FOCUS 1.0 (mandatory and conditional), in the specification's order.
FOCUS_COLUMNS = (
    "AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency",
    "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription",
    "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart", "CommitmentDiscountCategory", "CommitmentDiscountId",
    "CommitmentDiscountName", "CommitmentDiscountStatus", "CommitmentDiscountType", "ConsumedQuantity",
    "ConsumedUnit", "ContractedCost", "ContractedUnitPrice", "EffectiveCost", "InvoiceIssuerName", "ListCost",
    "ListUnitPrice", "PricingCategory", "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName",
    "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType", "ServiceCategory", "ServiceName",
    "SkuId", "SkuPriceId", "SubAccountId", "SubAccountName", "Tags",
)
#: focus-validator 1.0.0 still reads some columns under their FOCUS 0.5 names (Provider,
#: Publisher, InvoiceIssuer, ResourceID, and ChargeType in its SkuPriceId rule): the same values
#: are repeated under those names so that the file validates and stays correct FOCUS 1.0.
VALIDATOR_ALIASES = (("InvoiceIssuer", "InvoiceIssuerName"), ("Provider", "ProviderName"),
                     ("Publisher", "PublisherName"), ("ResourceID", "ResourceId"), ("ChargeType", "ChargeCategory"))
#: Our dimensions, as custom columns.
X_COLUMNS = ("x_RunId", "x_Kind", "x_Tenant", "x_Product", "x_Model", "x_Pool", "x_Provider", "x_Category", "x_Work",
             "x_SharedFrom", "x_Quantity", "x_Unit", "x_PriceBooks")
COLUMNS = FOCUS_COLUMNS + tuple(a for a, _ in VALIDATOR_ALIASES) + X_COLUMNS
DECIMAL_COLUMNS = frozenset({"BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "ConsumedQuantity",
                             "x_Quantity"})

SERVICE = {  # category -> (ServiceCategory, ServiceName)
    Category.GPU: ("AI and Machine Learning", "Self-hosted LLM inference"),
    Category.PROVIDER_TOKENS: ("AI and Machine Learning", "LLM API"),
    Category.TOOL: ("AI and Machine Learning", "LLM tool calls"),
    Category.EVALUATION: ("AI and Machine Learning", "Evaluation"),
    Category.EGRESS: ("Networking", "Data egress"),
    Category.NETWORK: ("Networking", "Network"),
    Category.OBSERVABILITY: ("Management and Governance", "Observability"),
    Category.STORAGE: ("Storage", "Storage"),
    Category.ENGINEERING_OPS: ("Other", "Engineering operations"),
    Category.OTHER: ("Other", "Other"),
}


def is_charge(ln: Line) -> bool:
    """A shared or fixed charge's share (booked by the second of its period), not metered usage."""
    return ln.unit == "second" and ln.category not in ("gpu", "provider_tokens")


def charge_period(ln: Line, data: RunData) -> tuple[str, str]:
    """(ChargePeriodStart, ChargePeriodEnd) of a line: its UTC day, clipped to the run's period."""
    day_start = datetime.combine(ln.day, time(0), tzinfo=timezone.utc)
    return iso(max(day_start, data.info.start)), iso(min(day_start + timedelta(days=1), data.info.end))


def describe(ln: Line) -> str:
    """ChargeDescription: what the line is, e.g. ``gpu cost of tenant acme on pool h100-chat,
    product chat, model llama-3.1-8b, succeeded work``."""
    what = {LineKind.TENANT: f"tenant {ln.tenant}", LineKind.IDLE_SLACK: "idle slack",
            LineKind.IDLE_RESERVE: "idle reserve", LineKind.UNALLOCATED: "unallocated",
            LineKind.VARIANCE: f"bill variance of tenant {ln.tenant}" if ln.tenant else "bill variance"}[ln.kind]
    where = f" on pool {ln.pool}" if ln.pool else f" via {ln.provider}" if ln.provider else ""
    share = f" (share of {ln.shared_from})" if ln.shared_from else ""
    of = "".join(f", {k} {v}" for k, v in (("product", ln.product), ("model", ln.model)) if v)
    return f"{ln.category} cost of {what}{share}{where}{of}, {ln.work} work"


def focus_row(ln: Line, data: RunData, *, billing_account_id: str, billing_account_name: str) -> dict[str, str]:
    """The FOCUS columns of one allocation line (values as text, not yet neutralized)."""
    info = data.info
    charge_start, charge_end = charge_period(ln, data)
    service_category, service_name = SERVICE.get(ln.category, ("Other", ln.category))
    charge = is_charge(ln)
    if ln.category == "provider_tokens" and ln.provider:
        provider = ln.provider
        service_name = f"{ln.provider} API"
    else:
        provider = billing_account_name
    if ln.pool:
        resource, resource_type = ln.pool, "GPU pool"
    elif ln.provider and ln.model:
        resource, resource_type = f"{ln.provider}/{ln.model}", "Model endpoint"
    else:
        resource = resource_type = ""
    sku = ln.category + (f":{ln.pool or ln.provider}" if (ln.pool or ln.provider) else "")
    owner = ln.tenant if ln.kind == "tenant" else ""
    description = describe(ln)
    tags = {k: v for k, v in (("tenant", ln.tenant), ("product", ln.product), ("model", ln.model), ("pool", ln.pool),
                              ("provider", ln.provider), ("work", ln.work), ("kind", ln.kind)) if v}
    amount = fmt(ln.amount)
    period = period_label(info.start, info.end)
    row = {c: "" for c in COLUMNS}
    row.update({
        "BilledCost": amount, "EffectiveCost": amount, "ListCost": amount, "ContractedCost": amount,
        "BillingAccountId": billing_account_id, "BillingAccountName": billing_account_name,
        "BillingCurrency": info.currency, "BillingPeriodStart": period["start"], "BillingPeriodEnd": period["end"],
        "ChargePeriodStart": charge_start, "ChargePeriodEnd": charge_end, "ChargeCategory": "Usage",
        "ChargeDescription": description, "ChargeFrequency": "Recurring" if charge else "Usage-Based",
        "ConsumedQuantity": "" if charge else fmt(ln.quantity), "ConsumedUnit": "" if charge else ln.unit,
        "InvoiceIssuerName": billing_account_name, "ProviderName": provider, "PublisherName": provider,
        "PricingCategory": "Standard" if ln.category not in ("gpu",) and not charge else "Other",
        "ResourceId": resource, "ResourceName": resource, "ResourceType": resource_type,
        "ServiceCategory": service_category, "ServiceName": service_name,
        "SkuId": sku, "SkuPriceId": f"{sku}@{info.run_id}",
        "SubAccountId": owner or "", "SubAccountName": owner or "",
        "Tags": json.dumps(tags, sort_keys=True, ensure_ascii=False),
        "x_RunId": info.run_id, "x_Kind": ln.kind, "x_Tenant": ln.tenant or "", "x_Product": ln.product or "",
        "x_Model": ln.model or "", "x_Pool": ln.pool or "", "x_Provider": ln.provider or "", "x_Category": ln.category,
        "x_Work": ln.work, "x_SharedFrom": ln.shared_from or "", "x_Quantity": fmt(ln.quantity), "x_Unit": ln.unit,
        "x_PriceBooks": " ".join(info.price_books),
    })
    for alias, name in VALIDATOR_ALIASES:
        row[alias] = row[name]
    return row


def allocation_as_focus(data: RunData, *, billing_account_id: str = "inference-ledger",
                        billing_account_name: str = "Inference platform") -> str:
    """FOCUS 1.0 CSV of a run: every line a row, cost columns as decimals at the ledger precision,
    timestamps in UTC ISO 8601 with ``Z``, every field quoted and every text value neutralized
    against formulas (:func:`ledger.outputs.csv_text`)."""
    rows = (focus_row(ln, data, billing_account_id=billing_account_id, billing_account_name=billing_account_name)
            for ln in data.lines)
    return csv_text(COLUMNS, rows, numeric=DECIMAL_COLUMNS)
