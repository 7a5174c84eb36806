"""The usage files of the demo month (requests, outcomes, meters): DuckDB formats and writes the CSV."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from ..sqltext import literal
from .month import (HOUR_US, LOG_BYTES_PER_REQUEST, MONTH_START, PAYLOAD_BYTES, PRODUCT_NAMES, REGION, ROUTES, SPANS,
                    STREAM_BYTES_PER_TOKEN, SUCCESS, TASKS, TENANT_NAMES, Month)
from .traffic import _STREAM_ID, DECIDED, DELAY, OUTCOME, uniform

def _list(values) -> str:
    return "[" + ", ".join("NULL" if v is None else literal(v) for v in values) + "]"


# Every frame written carries, per row, its month's start (`base_us`, µs since the epoch) and `tag`
# (what the month's ids carry: empty for October, see ledger.demo.month.Month); times are µs
# since the month's start.
_DAY_US = 24 * HOUR_US
_OCTOBER_US = int(MONTH_START.timestamp()) * 1_000_000
_TENANTS_SQL = _list(TENANT_NAMES)
_PRODUCTS_SQL = _list(PRODUCT_NAMES)


def month_us(month: Month) -> int:
    """The month's start in µs since the epoch (the `base_us` of its rows)."""
    return int(month.start.timestamp()) * 1_000_000


def _at_sql(col: str) -> str:
    """SQL: microseconds since the row's month start as an ISO 8601 instant with a Z offset."""
    return f"strftime(make_timestamp(base_us + {col}), '%Y-%m-%dT%H:%M:%S.%fZ')"


def _day_sql(col: str) -> str:
    return f"strftime(make_timestamp(base_us + {col} * {_DAY_US}), '%Y%m%d')"


def _task_id_sql() -> str:
    """SQL: tenant-product-000123 (tenant-ci-000123 for initech's CI job; tenant-product-2026-08-000123
    in a month whose ids carry it); NULL without a task."""
    return (f"CASE WHEN task >= 0 THEN {_TENANTS_SQL}[tenant + 1] || '-' || "
            f"(CASE WHEN ci THEN 'ci' ELSE {_PRODUCTS_SQL}[product + 1] END) || '-' || "
            "(CASE WHEN tag <> '' THEN tag || '-' ELSE '' END) || lpad(CAST(task AS VARCHAR), 6, '0') END")


def _gb_sql(col: str) -> str:
    """SQL: an integer count of bytes as exact decimal GB (10^9 bytes), nine places."""
    return f"CAST({col} // 1000000000 AS VARCHAR) || '.' || lpad(CAST({col} % 1000000000 AS VARCHAR), 9, '0')"


def _copy(con, frame: pd.DataFrame, select: str, path: Path) -> int:
    con.register("src", frame)
    try:
        con.execute(f"COPY (SELECT {select} FROM src ORDER BY _i) TO '{str(path).replace(chr(39), chr(39) * 2)}' "
                    "(HEADER, DELIMITER ',')")
    finally:
        con.unregister("src")
    return len(frame)


def _copy_rows(rows: list[dict], path: Path) -> int:
    pd.DataFrame(rows).to_csv(path, index=False, lineterminator="\n")
    return len(rows)


def _write_requests(con, df: pd.DataFrame, path: Path) -> int:
    prod = df["product"].to_numpy()
    is_agent = prod == PRODUCT_NAMES.index("agent")
    cached_share = np.where(is_agent, 0.72, np.where(prod == PRODUCT_NAMES.index("code-assist"), 0.30, 0.50))
    inp, out = df["input"].to_numpy(), df["output"].to_numpy()
    follow_up = ~df["first"].to_numpy() & (df["task"].to_numpy() >= 0)
    frame = pd.DataFrame({
        "_i": np.arange(len(df)), "base_us": df["base_us"], "tag": df["tag"], "source": df["source"],
        "hour": df["hour"], "row": df["row"], "at_us": df["at_us"],
        "tenant": df["tenant"], "product": df["product"], "task": df["task"], "ci": df["ci"], "input": inp,
        "cached": np.where(follow_up, np.floor(inp * cached_share), 0).astype(np.int64), "output": out,
        "reasoning": np.where(is_agent, np.floor(out * 0.45), 0).astype(np.int64), "status": df["status"]})
    sources = _list(sorted(_STREAM_ID, key=_STREAM_ID.get))
    route = {i: ROUTES[p] for i, p in enumerate(PRODUCT_NAMES)}
    select = f"""
        {sources}[source + 1] || '-' || strftime(make_timestamp(base_us + hour * {HOUR_US}),
            '%Y%m%d%H') || '-' || lpad(CAST("row" AS VARCHAR), 5, '0') AS request_id,
        {_at_sql('at_us')} AS occurred_at,
        {_TENANTS_SQL}[tenant + 1] AS tenant, {_PRODUCTS_SQL}[product + 1] AS product,
        {_list(route[i][1] for i in route)}[product + 1] AS model,
        {_list(route[i][0] for i in route)}[product + 1] AS pool,
        {_list(route[i][2] for i in route)}[product + 1] AS provider,
        {_task_id_sql()} AS task_id,
        input AS input_tokens, cached AS cached_input_tokens, output AS output_tokens,
        reasoning AS reasoning_tokens, ['ok', 'error', 'timeout', 'cancelled'][status + 1] AS status,
        '{REGION}' AS region"""
    return _copy(con, frame, select, path)


def _write_outcomes(con, df: pd.DataFrame, path: Path) -> int:
    """One outcome per decided task, a while after its last request; a task with a failed request
    is likelier to fail. Some tasks never get an outcome (no feedback), and a task of a month whose
    ids carry it (one before October) gets none when it would be decided after its month's end."""
    t = df[df["task_key"] >= 0].assign(bad=df["status"] != 0)
    g = t.groupby("task_key", sort=True).agg(tenant=("tenant", "first"), product=("product", "first"),
                                             ci=("ci", "first"), task=("task", "first"), last=("at_us", "max"),
                                             bad=("bad", "any"), base_us=("base_us", "first"), tag=("tag", "first"),
                                             month_us=("month_us", "first")).reset_index()
    keys = g["task_key"].to_numpy().astype(np.uint64)
    ten = np.array(TENANT_NAMES, dtype=object)[g["tenant"].to_numpy()]
    kind = np.where(g["ci"].to_numpy(), "ci", np.array(PRODUCT_NAMES, dtype=object)[g["product"].to_numpy()])
    decided_share = np.array([TASKS[k][1] for k in kind])
    delay_max = np.array([TASKS[k][3] for k in kind])
    p_success = np.array([SUCCESS[(a, b)] for a, b in zip(ten, kind)]) * np.where(g["bad"].to_numpy(), 0.4, 1.0)
    g["success"] = uniform(OUTCOME, keys) < p_success
    g["decided_us"] = g["last"].to_numpy() + ((60 + uniform(DELAY, keys) * delay_max) * 1_000_000).astype(np.int64)
    g["criteria"] = [TASKS[k][2] for k in kind]
    in_month = (g["tag"].to_numpy() == "") | (g["decided_us"].to_numpy() < g["month_us"].to_numpy())
    g = g[(uniform(DECIDED, keys) < decided_share) & in_month].reset_index(drop=True)
    g["_i"] = np.arange(len(g))
    select = f"""{_task_id_sql()} AS task_id, {_TENANTS_SQL}[tenant + 1] AS tenant,
        {_PRODUCTS_SQL}[product + 1] AS product, CASE WHEN success THEN 'success' ELSE 'failure' END AS outcome,
        {_at_sql('decided_us')} AS decided_at, criteria"""
    return _copy(con, g, select, path)


def _meter_frames(df: pd.DataFrame) -> list[tuple[pd.DataFrame, str]]:
    """(frame, SELECT) pairs: tool calls per agent task; egress, Langfuse spans and CloudWatch log GB
    per day, tenant and product; hooli's file-search vector store in GiB-days."""
    out = []
    agent = df[df["product"] == PRODUCT_NAMES.index("agent")]
    tasks = agent.groupby("task_key", sort=True).agg(tenant=("tenant", "first"), product=("product", "first"),
                                                     ci=("ci", "first"), task=("task", "first"),
                                                     n=("at_us", "size"), last=("at_us", "max"),
                                                     base_us=("base_us", "first"), tag=("tag", "first")).reset_index()
    for sku, per_request, who in (("openai-web-search", 1.4, None), ("openai-file-search", 2.0, "hooli")):
        t = tasks if who is None else tasks[tasks["tenant"] == TENANT_NAMES.index(who)]
        t = t.assign(qty=np.ceil(t["n"].to_numpy() * per_request).astype(np.int64), _i=np.arange(len(t)))
        out.append((t, f"""'tool-{sku.removeprefix("openai-")}-' || {_task_id_sql()} AS event_id,
            {_at_sql('last')} AS occurred_at, {_TENANTS_SQL}[tenant + 1] AS tenant,
            {_PRODUCTS_SQL}[product + 1] AS product, {_task_id_sql()} AS task_id, 'tool_call' AS meter,
            '{sku}' AS sku, CAST(qty AS VARCHAR) AS quantity, 'call' AS unit, NULL AS region"""))

    prod = df["product"].to_numpy()
    daily = pd.DataFrame({
        "base_us": df["base_us"], "day": df["at_us"].to_numpy() // _DAY_US, "tenant": df["tenant"], "product": prod,
        "n": 1,
        "bytes": df["output"].to_numpy() * STREAM_BYTES_PER_TOKEN
        + np.array([PAYLOAD_BYTES[p] for p in PRODUCT_NAMES])[prod],
        "spans": np.array([SPANS[p] for p in PRODUCT_NAMES])[prod]})
    g = daily.groupby(["base_us", "day", "tenant", "product"], sort=True).sum().reset_index()
    g["logs"] = g["n"] * LOG_BYTES_PER_REQUEST
    g["_i"] = np.arange(len(g))
    for meter, sku, qty, unit, region in (
            ("egress", "internet-out", _gb_sql("bytes"), "GB", f"'{REGION}'"),
            ("observability", "langfuse-cloud-units", "CAST(spans AS VARCHAR)", "span", "NULL"),
            ("observability", "cloudwatch-logs-ingestion", _gb_sql("logs"), "GB", f"'{REGION}'")):
        out.append((g, f"""'{sku}-' || {_TENANTS_SQL}[tenant + 1] || '-' || {_PRODUCTS_SQL}[product + 1] || '-'
            || {_day_sql('day')} AS event_id, {_at_sql(f'day * {_DAY_US}')} AS occurred_at,
            {_TENANTS_SQL}[tenant + 1] AS tenant, {_PRODUCTS_SQL}[product + 1] AS product, NULL AS task_id,
            '{meter}' AS meter, '{sku}' AS sku, {qty} AS quantity, '{unit}' AS unit, {region} AS region"""))

    # hooli's vector store, from the first month hooli has requests: 12 GiB on October 1, 0.1 GiB more a day
    base = np.unique(df.loc[df["tenant"] == TENANT_NAMES.index("hooli"), "base_us"].to_numpy())
    base_us = np.concatenate([np.full(_month_days(b), b, dtype=np.int64) for b in base]) if len(base) else \
        np.zeros(0, dtype=np.int64)
    days = np.concatenate([np.arange(_month_days(b)) for b in base]) if len(base) else np.zeros(0, dtype=np.int64)
    since_october = (base_us - _OCTOBER_US) // _DAY_US + days
    store = pd.DataFrame({"_i": np.arange(len(days)), "base_us": base_us, "day": days,
                          "milli_gib": 12_000 + 100 * since_october})
    out.append((store, f"""'store-file-search-hooli-agent-' || {_day_sql('day')} AS event_id,
        {_at_sql(f'day * {_DAY_US}')} AS occurred_at, 'hooli' AS tenant, 'agent' AS product, NULL AS task_id,
        'storage' AS meter, 'openai-file-search-storage' AS sku,
        CAST(milli_gib // 1000 AS VARCHAR) || '.' || lpad(CAST(milli_gib % 1000 AS VARCHAR), 3, '0') AS quantity,
        'GiB * day' AS unit, NULL AS region"""))
    return out


def _month_days(base_us: int) -> int:
    """Days in the month starting at `base_us` (µs since the epoch, the first of a month, UTC)."""
    start = datetime.fromtimestamp(base_us // 1_000_000, tz=timezone.utc)
    end = start.replace(year=start.year + (start.month == 12), month=start.month % 12 + 1)
    return (end - start).days


def _write_meters(con, df: pd.DataFrame, path: Path) -> int:
    parts = _meter_frames(df)
    n = 0
    for i, (frame, select) in enumerate(parts):
        con.register(f"m{i}", frame)
        n += len(frame)
    union = " UNION ALL ".join(f"SELECT {i} AS _part, _i, {select} FROM m{i}" for i, (_f, select) in
                               enumerate(parts))
    cols = "event_id, occurred_at, tenant, product, task_id, meter, sku, quantity, unit, region"
    target = literal(str(path))
    con.execute(f"COPY (SELECT {cols} FROM ({union}) ORDER BY _part, _i) TO {target} (HEADER, DELIMITER ',')")
    for i in range(len(parts)):
        con.unregister(f"m{i}")
    return n

