"""Seeded synthetic usage for benchmarks: a month of requests with a realistic mix, plus its fleet.

The mix: tenants with a Zipf-like share of traffic, products per tenant, two self-hosted pools
(an 8B model on H100s, a 70B model on H200s) and two provider models; input and output tokens
log-normal around the Azure LLM inference trace means (conversation: 1,155 in / 211 out; code:
2,048 in / 28 out); a diurnal arrival curve; ~3% failed requests; ~3 requests per task.
Everything is vectorized with numpy: 10M rows take seconds.
"""
from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pyarrow as pa

MONTH_START = datetime(2026, 10, 1, tzinfo=timezone.utc)
MONTH_END = datetime(2026, 11, 1, tzinfo=timezone.utc)

TENANTS = ["acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "tyrell"]
PRODUCTS = ["chat", "code-assist", "search", "summarize", "agent"]
# model, pool, provider, share of traffic
ROUTES = [
    ("llama-3.1-8b", "h100-pool", None, 0.45),
    ("llama-3.3-70b", "h200-pool", None, 0.35),
    ("gpt-5", None, "openai", 0.12),
    ("claude-sonnet-4-5", None, "anthropic", 0.08),
]
STATUSES = ["ok", "error", "timeout", "cancelled"]
STATUS_P = [0.97, 0.015, 0.01, 0.005]


def generate_requests(n: int, seed: int = 7, start: datetime = MONTH_START, end: datetime = MONTH_END) -> pa.Table:
    """`n` request rows over ``[start, end)`` as an Arrow table with the requests input columns."""
    rng = np.random.default_rng(seed)
    span_us = int((end - start).total_seconds() * 1_000_000)
    # diurnal arrivals: accept-reject on a sine over the day, done in one vectorized draw
    t = rng.integers(0, span_us, size=int(n * 1.6))
    hour = (t // 3_600_000_000) % 24
    keep = rng.random(t.size) < (0.55 + 0.45 * np.sin((hour - 8) / 24 * 2 * np.pi))
    t = np.sort(t[keep][:n])
    if t.size < n:  # extremely unlikely; top up uniformly
        t = np.sort(np.concatenate([t, rng.integers(0, span_us, size=n - t.size)]))
    occurred = pa.array(t + int(start.timestamp() * 1_000_000), type=pa.timestamp("us", tz="UTC"))

    zipf = 1.0 / np.arange(1, len(TENANTS) + 1) ** 1.1
    tenant_idx = rng.choice(len(TENANTS), size=n, p=zipf / zipf.sum())
    product_idx = (tenant_idx * 3 + rng.choice(3, size=n, p=[0.6, 0.3, 0.1])) % len(PRODUCTS)
    route_idx = rng.choice(len(ROUTES), size=n, p=[r[3] for r in ROUTES])
    code_like = product_idx == PRODUCTS.index("code-assist")
    inp = np.where(code_like, rng.lognormal(np.log(2048) - 0.5, 1.0, n), rng.lognormal(np.log(1155) - 0.5, 1.0, n))
    out = np.where(code_like, rng.lognormal(np.log(28) - 0.3, 0.8, n), rng.lognormal(np.log(211) - 0.3, 0.8, n))
    inp = np.clip(inp, 1, 190_000).astype(np.int64)
    out = np.clip(out, 1, 16_000).astype(np.int64)
    cached = (inp * rng.choice([0.0, 0.5, 0.9], size=n, p=[0.5, 0.3, 0.2])).astype(np.int64)
    reasoning = np.where(route_idx == 2, (out * 0.3).astype(np.int64), 0)
    status_idx = rng.choice(len(STATUSES), size=n, p=STATUS_P)
    ttft = rng.gamma(2.0, 120.0, n) + inp * 0.02
    latency = ttft + out * rng.uniform(8, 30, n)
    task = rng.integers(0, max(1, n // 3), size=n)

    ids = np.char.add("r", np.arange(n).astype("U12"))
    models = np.array([r[0] for r in ROUTES], dtype=object)
    pools = np.array([r[1] for r in ROUTES], dtype=object)
    providers = np.array([r[2] for r in ROUTES], dtype=object)
    tenants = np.array(TENANTS, dtype=object)
    return pa.table({
        "request_id": pa.array(ids),
        "occurred_at": occurred,
        "tenant": pa.array(tenants[tenant_idx]).dictionary_encode().cast(pa.string()),
        "product": pa.array(np.array(PRODUCTS, dtype=object)[product_idx]),
        "model": pa.array(models[route_idx]),
        "pool": pa.array(pools[route_idx], type=pa.string()),
        "provider": pa.array(providers[route_idx], type=pa.string()),
        "task_id": pa.array(np.char.add("t", task.astype("U12"))),
        "input_tokens": pa.array(inp),
        "cached_input_tokens": pa.array(cached),
        "output_tokens": pa.array(out),
        "reasoning_tokens": pa.array(reasoning),
        "status": pa.array(np.array(STATUSES, dtype=object)[status_idx]),
        "ttft_ms": pa.array(np.round(ttft, 1)),
        "latency_ms": pa.array(np.round(latency, 1)),
        "region": pa.array(np.full(n, "us-east-1", dtype=object)),
    })


def write_requests(table: pa.Table, path: str, fmt: str) -> None:
    """Write the table as CSV (timestamps ISO 8601 with a Z offset) or Parquet."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    con.register("t", table)
    if fmt == "csv":
        con.execute(f"""COPY (SELECT * REPLACE (strftime(occurred_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS occurred_at) FROM t)
                        TO '{path}' (HEADER, DELIMITER ',')""")
    else:
        con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    con.close()


def fleet_rows(start: datetime = MONTH_START, end: datetime = MONTH_END) -> list[dict]:
    """Fleet intervals for the two pools: serving plus reserve GPUs for the whole span."""
    s, e = start.isoformat().replace("+00:00", "Z"), end.isoformat().replace("+00:00", "Z")
    return [
        {"interval_id": "f-h100-serve", "pool": "h100-pool", "start": s, "end": e, "device": "H100-SXM-80GB",
         "gpus": 64, "region": "us-east-1", "purchase_option": "on_demand", "role": "serving",
         "capacity_tokens_per_gpu_s": "9000"},
        {"interval_id": "f-h100-reserve", "pool": "h100-pool", "start": s, "end": e, "device": "H100-SXM-80GB",
         "gpus": 8, "region": "us-east-1", "purchase_option": "on_demand", "role": "failure_reserve",
         "capacity_tokens_per_gpu_s": ""},
        {"interval_id": "f-h200-serve", "pool": "h200-pool", "start": s, "end": e, "device": "H200-SXM-141GB",
         "gpus": 96, "region": "us-east-1", "purchase_option": "capacity_block", "role": "serving",
         "capacity_tokens_per_gpu_s": "3000"},
        {"interval_id": "f-h200-warm", "pool": "h200-pool", "start": s, "end": e, "device": "H200-SXM-141GB",
         "gpus": 8, "region": "us-east-1", "purchase_option": "capacity_block", "role": "warm_reserve",
         "capacity_tokens_per_gpu_s": ""},
    ]
