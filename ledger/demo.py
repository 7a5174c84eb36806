"""The demo month: October 2026 of a small inference fleet, built from the Azure LLM inference trace.

:func:`build_inputs` writes the five input files of DESIGN §3 (fleet, requests, outcomes, meters,
charges) as CSV into a folder. It is a pure function of the shipped trace (``ledger/data``, see
``ATTRIBUTION.md`` there) and the constants below: the same files, byte for byte, on every run and
every machine. Random choices are splitmix64 hashes of (purpose, row key), not a library RNG whose
stream could change between versions, and all row work is vectorized (numpy, pandas).

The month:

- **Traffic.** Each hour of the month replays the one-hour trace thinned to a fraction of its rows
  (Bernoulli thinning keeps the trace's burstiness, offsets within the hour and token counts). The
  fraction follows a diurnal curve (an EU and a US peak), is lower on weekends and grows 10% over
  the month. The conversation trace feeds chat, search and agent; the code trace feeds code-assist.
- **Batch jobs.** umbrella re-indexes search every Sunday at 14:00 UTC (40% of the conversation
  trace hour, requests without tasks); initech runs a code-assist CI job every weekday at 02:00 UTC
  (18% of the code trace hour, tasks judged by ``tests-pass``).
- **Pools.** ``h100-chat`` serves llama-3.1-8b on one H100 (on-demand), pre-scaled to two GPUs for
  the first three Sunday re-index windows; on 2026-10-25 the scale-up did not happen, so that hour
  is over capacity (timeouts rise). One H100 is held as ``failure_reserve`` all month.
  ``h200-code`` serves llama-3.3-70b on one 4×H200 replica (on-demand); a second replica is a
  ``canary`` for three days. Nights and weekends leave idle slack; the batch hours run near capacity.
- **Provider.** The agent product calls gpt-5 through openai, with cached input on follow-up turns
  and reasoning tokens, plus web-search and file-search tool calls.
- **Meters and charges.** Egress (GB), Langfuse spans and CloudWatch log GB per day, tenant and
  product; hooli's file-search vector store (GiB-days); invoice charges under every allocation rule.

Capacity (``capacity_tokens_per_gpu_s``, active tokens per GPU-second):

- ``h200-code``: 268.7, the sizing engine's figure for Llama-3.3-70B bf16 on a 4×H200 replica at an
  SLA of 70 output tok/s per user, from the measured SGLang curve of
  datacrunch-research/h200-benchmarks (ISL 1024, OSL 1024): c* = 7.8, 537.4 output tok/s per
  replica, so 537.4 × (1024 + 1024) / 1024 / 4 GPUs = 268.7.
- ``h100-chat``: 1695.8, measured: a vLLM ``benchmark_serving.py`` run of Llama-3.1-8B FP8 on one
  H100 (LambdaLabsML/vllm-benchmark) served 1,369 input + 442 output tokens in 1.068 s. It is a
  10-prompt run, so a low figure for that GPU; it is the measurement we have.

No price book shipped with the project carries an FX rate, so every charge is in USD.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd

PERIOD = "2026-10"
MONTH_START = datetime(2026, 10, 1, tzinfo=timezone.utc)
MONTH_END = datetime(2026, 11, 1, tzinfo=timezone.utc)
HOURS = int((MONTH_END - MONTH_START).total_seconds() // 3600)
HOUR_US = 3_600_000_000
DATA_DIR = Path(__file__).resolve().parent / "data"
TRACE_FILES = {"conv": "AzureLLMInferenceTrace_conv.csv", "code": "AzureLLMInferenceTrace_code.csv"}
KINDS = ("fleet", "requests", "outcomes", "meters", "charges")
REGION = "us-east-1"
SEED = 20261001

# name, display name, owner
TENANTS = (("acme", "Acme Corp", "finance@acme.example"),
           ("globex", "Globex", "platform@globex.example"),
           ("hooli", "Hooli", "ai-apps@hooli.example"),
           ("initech", "Initech", "devex@initech.example"),
           ("umbrella", "Umbrella Health", "search@umbrella.example"))
PRODUCTS = (("chat", "Chat assistant", "product-chat"),
            ("search", "Search answers", "product-search"),
            ("agent", "Agent (gpt-5 with tools)", "product-agent"),
            ("code-assist", "Code assistant", "product-code"))
TENANT_NAMES = tuple(t[0] for t in TENANTS)
PRODUCT_NAMES = tuple(p[0] for p in PRODUCTS)


@dataclass(frozen=True)
class Pool:
    """A self-hosted pool of the demo: `name`, the `model` it serves, GPU `device` sku, `purchase_option`,
    GPUs per `replica`, and `capacity` in active tokens per GPU-second with its `capacity_source`."""

    name: str
    model: str
    device: str
    purchase_option: str
    replica: int
    capacity: str
    capacity_source: str


POOLS = {
    "h100-chat": Pool("h100-chat", "llama-3.1-8b", "H100-SXM-80GB", "on_demand", 1, "1695.8",
                      "measured: vLLM benchmark_serving, Llama-3.1-8B FP8 on 1xH100, 1,811 tokens in 1.068 s"),
    "h200-code": Pool("h200-code", "llama-3.3-70b", "H200-SXM-141GB", "on_demand", 4, "268.7",
                      "sizing engine: Llama-3.3-70B on 4xH200 at SLA 70 tok/s/user (SGLang curve)"),
}
PROVIDER_MODEL, PROVIDER = "gpt-5", "openai"
# product -> (pool or None, model, provider or None)
ROUTES = {"chat": ("h100-chat", "llama-3.1-8b", None), "search": ("h100-chat", "llama-3.1-8b", None),
          "code-assist": ("h200-code", "llama-3.3-70b", None), "agent": (None, PROVIDER_MODEL, PROVIDER)}

# Interactive traffic: fraction of the trace hour replayed at the diurnal mean, per stream.
RATE = {"conv": 0.020, "code": 0.026}
WEEKEND = 0.45
GROWTH = 0.10
# Tenant shares of each stream, and product shares of the conversation stream per tenant.
STREAM_TENANTS = {"conv": {"acme": 0.38, "umbrella": 0.24, "hooli": 0.16, "globex": 0.14, "initech": 0.08},
                  "code": {"globex": 0.45, "initech": 0.35, "acme": 0.20}}
CONV_PRODUCTS = {"acme": {"chat": 0.65, "search": 0.25, "agent": 0.10},
                 "umbrella": {"search": 0.70, "chat": 0.30},
                 "hooli": {"agent": 0.75, "chat": 0.25},
                 "globex": {"chat": 0.45, "agent": 0.35, "search": 0.20},
                 "initech": {"chat": 1.0}}
# Per product: mean requests per task, share of tasks that get an outcome, criteria, max decision delay (s).
TASKS = {"chat": (3.2, 0.90, "user-accepted", 1200), "search": (1.6, 0.85, "user-accepted", 600),
         "agent": (6.5, 0.97, "user-accepted", 900), "code-assist": (4.5, 0.95, "tests-pass", 900),
         "ci": (4.0, 1.00, "tests-pass", 600)}
SUCCESS = {("acme", "chat"): 0.88, ("umbrella", "chat"): 0.84, ("hooli", "chat"): 0.80, ("globex", "chat"): 0.86,
           ("initech", "chat"): 0.78, ("acme", "search"): 0.91, ("umbrella", "search"): 0.93,
           ("globex", "search"): 0.89, ("acme", "agent"): 0.70, ("hooli", "agent"): 0.66, ("globex", "agent"): 0.72,
           ("acme", "code-assist"): 0.74, ("globex", "code-assist"): 0.81, ("initech", "code-assist"): 0.69,
           ("initech", "ci"): 0.61}
STATUS = (("error", 0.012), ("timeout", 0.006), ("cancelled", 0.004))
OVERLOAD_TIMEOUT = 0.09
# Meter shapes per product: response payload bytes beyond the streamed tokens, Langfuse spans per request.
PAYLOAD_BYTES = {"chat": 1_500, "search": 180_000, "agent": 25_000, "code-assist": 6_000}
STREAM_BYTES_PER_TOKEN = 150  # one server-sent event per generated token
SPANS = {"chat": 3, "search": 4, "agent": 8, "code-assist": 5}
LOG_BYTES_PER_REQUEST = 3_200


@dataclass(frozen=True)
class Batch:
    """A scheduled job: replays `share` of the `stream` trace hour at `hour` for `tenant`/`product`.
    `source` names it in request ids; `tasks` whether its requests belong to tasks; `timeout` the
    timeout rate of its requests."""

    source: str
    stream: str
    hour: datetime
    share: float
    tenant: str
    product: str
    tasks: bool
    timeout: float


def _days() -> list[datetime]:
    return [MONTH_START + timedelta(days=i) for i in range((MONTH_END - MONTH_START).days)]


SUNDAYS = [d for d in _days() if d.weekday() == 6]
WEEKDAYS = [d for d in _days() if d.weekday() < 5]
OVERLOADED_SUNDAY = SUNDAYS[-1]  # the re-index ran without its pre-scaled GPU
BATCHES = tuple(
    [Batch("reindex", "conv", d + timedelta(hours=14), 0.40, "umbrella", "search", False,
           OVERLOAD_TIMEOUT if d == OVERLOADED_SUNDAY else STATUS[1][1]) for d in SUNDAYS]
    + [Batch("ci", "code", d + timedelta(hours=2), 0.18, "initech", "code-assist", True, STATUS[1][1])
       for d in WEEKDAYS])


@dataclass(frozen=True)
class DemoInputs:
    """The files :func:`build_inputs` wrote: `paths` and data `rows` per kind, and `digest` (SHA-256
    over the files' names and bytes, in kind order)."""

    folder: Path
    paths: dict[str, Path]
    rows: dict[str, int]
    digest: str


# ---- deterministic uniforms --------------------------------------------------------------------

_MASK = (1 << 64) - 1


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finalizer over uint64 (arithmetic wraps)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def uniform(purpose: int, keys: np.ndarray) -> np.ndarray:
    """One deterministic uniform in [0, 1) per key (non-negative ints) for a purpose."""
    salt = np.uint64((SEED * 0x9E3779B97F4A7C15 + purpose * 0xD1B54A32D192ED03) & _MASK)
    with np.errstate(over="ignore"):
        x = _mix(np.asarray(keys, dtype=np.uint64) + salt)
    return (x >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


SELECT, TENANT, PRODUCT, STATUS_U, TASK, DECIDED, OUTCOME, DELAY = range(1, 9)


def _pick(u: np.ndarray, names: tuple[str, ...], shares: dict[str, float]) -> np.ndarray:
    """Categorical choice by cumulative shares: index into `names` for each uniform."""
    keys = list(shares)
    cum = np.cumsum([shares[k] for k in keys])
    idx = np.minimum(np.searchsorted(cum / cum[-1], u, side="right"), len(keys) - 1)
    return np.array([names.index(k) for k in keys])[idx]


# ---- the trace ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Trace:
    """One trace file: per row, `offset_us` from the start of the trace hour, `input` and `output` tokens."""

    offset_us: np.ndarray
    input: np.ndarray
    output: np.ndarray

    def __len__(self) -> int:
        return len(self.offset_us)


def load_traces(data_dir: Path = DATA_DIR) -> dict[str, Trace]:
    """Both trace files, with offsets measured from the earliest timestamp of the two (all < 1 h)."""
    frames = {k: pd.read_csv(data_dir / f, dtype={"ContextTokens": "int64", "GeneratedTokens": "int64"})
              for k, f in TRACE_FILES.items()}
    stamps = {k: pd.to_datetime(df["TIMESTAMP"], format="%Y-%m-%d %H:%M:%S.%f") for k, df in frames.items()}
    origin = min(s.min() for s in stamps.values())
    out = {}
    for k, df in frames.items():
        off = ((stamps[k] - origin).to_numpy().astype("timedelta64[us]")).astype(np.int64)
        if off.max() >= HOUR_US:
            raise ValueError(f"{TRACE_FILES[k]}: the trace spans more than an hour")
        out[k] = Trace(off, df["ContextTokens"].to_numpy(), df["GeneratedTokens"].to_numpy())
    return out


def hourly_rate(stream: str) -> np.ndarray:
    """Per hour of the month, the fraction of the trace hour replayed as interactive traffic."""
    hod = np.arange(24)

    def bump(center: float, width: float) -> np.ndarray:
        d = np.minimum(np.abs(hod - center), 24 - np.abs(hod - center))
        return np.exp(-(d / width) ** 2)

    shape = 0.25 + 0.55 * bump(11, 3.5) + 0.9 * bump(18.5, 3.5)
    shape = shape / shape.mean()
    hours = np.arange(HOURS)
    weekday = np.array([(MONTH_START + timedelta(hours=int(h))).weekday() for h in hours])
    day_factor = np.where(weekday >= 5, WEEKEND, 1.0)
    trend = 1.0 - GROWTH / 2 + GROWTH * hours / (HOURS - 1)
    return RATE[stream] * shape[hours % 24] * day_factor * trend


# ---- requests ----------------------------------------------------------------------------------

_STREAM_ID = {"conv": 0, "code": 1, "reindex": 2, "ci": 3}


def _thin(trace: Trace, stream_id: int, hour: int, share: float) -> np.ndarray:
    keys = (np.uint64(stream_id) << np.uint64(40)) | (np.uint64(hour) << np.uint64(20)) | \
        np.arange(len(trace), dtype=np.uint64)
    return np.flatnonzero(uniform(SELECT, keys) < share)


def _requests(traces: dict[str, Trace]) -> pd.DataFrame:
    """Every request of the month as a frame (numeric codes and token counts), sorted by time."""
    parts = []
    for stream, trace in traces.items():
        rate = hourly_rate(stream)
        for h in range(HOURS):
            rows = _thin(trace, _STREAM_ID[stream], h, rate[h])
            parts.append((stream, stream, h, rows, None))
    for b in BATCHES:
        h = int((b.hour - MONTH_START).total_seconds() // 3600)
        parts.append((b.source, b.stream, h, _thin(traces[b.stream], _STREAM_ID[b.source], h, b.share), b))
    cols: dict[str, list] = {k: [] for k in ("source", "hour", "row", "at_us", "input", "output", "batch")}
    for source, stream, h, rows, batch in parts:
        t = traces[stream]
        cols["source"].append(np.full(len(rows), _STREAM_ID[source], dtype=np.int64))
        cols["hour"].append(np.full(len(rows), h, dtype=np.int64))
        cols["row"].append(rows.astype(np.int64))
        cols["at_us"].append(h * HOUR_US + t.offset_us[rows])
        cols["input"].append(t.input[rows])
        cols["output"].append(t.output[rows])
        cols["batch"].append(np.full(len(rows), -1 if batch is None else BATCHES.index(batch), dtype=np.int64))
    df = pd.DataFrame({k: np.concatenate(v) for k, v in cols.items()})
    key = (df["source"].to_numpy().astype(np.uint64) << np.uint64(40)) | \
        (df["hour"].to_numpy().astype(np.uint64) << np.uint64(20)) | df["row"].to_numpy().astype(np.uint64)
    df["key"] = key

    # tenants and products: interactive rows by share, batch rows by their job
    tenant = np.empty(len(df), dtype=np.int64)
    product = np.empty(len(df), dtype=np.int64)
    u_t, u_p = uniform(TENANT, key), uniform(PRODUCT, key)
    src = df["source"].to_numpy()
    conv, code = src == _STREAM_ID["conv"], src == _STREAM_ID["code"]
    tenant[conv] = _pick(u_t[conv], TENANT_NAMES, STREAM_TENANTS["conv"])
    tenant[code] = _pick(u_t[code], TENANT_NAMES, STREAM_TENANTS["code"])
    product[code] = PRODUCT_NAMES.index("code-assist")
    for name, shares in CONV_PRODUCTS.items():
        m = conv & (tenant == TENANT_NAMES.index(name))
        product[m] = _pick(u_p[m], PRODUCT_NAMES, shares)
    bidx = df["batch"].to_numpy()
    for i, b in enumerate(BATCHES):
        m = bidx == i
        tenant[m] = TENANT_NAMES.index(b.tenant)
        product[m] = PRODUCT_NAMES.index(b.product)
    df["tenant"], df["product"] = tenant, product

    # status: a small rate of errors, timeouts and cancellations; batch hours carry their own timeout rate
    u_s = uniform(STATUS_U, key)
    timeout = np.full(len(df), STATUS[1][1])
    for i, b in enumerate(BATCHES):
        timeout[bidx == i] = b.timeout
    err, canc = STATUS[0][1], STATUS[2][1]
    df["status"] = np.select([u_s < err, u_s < err + timeout, u_s < err + timeout + canc], [1, 2, 3], 0)
    return df.sort_values(["at_us", "source", "row"], kind="stable").reset_index(drop=True)


def _tasks(df: pd.DataFrame) -> None:
    """Add `task_key` (unique per task, -1 for none), `task` (its number within its stream) and
    `first` (first request of its task). Each stream, one per (tenant, product) plus initech's CI
    and umbrella's re-index (no tasks), is cut in time order into tasks of geometric length."""
    src = df["source"].to_numpy()
    ci, reindex = src == _STREAM_ID["ci"], src == _STREAM_ID["reindex"]
    group = np.where(ci, 98, np.where(reindex, 99, df["tenant"].to_numpy() * 10 + df["product"].to_numpy()))
    order = np.lexsort((np.arange(len(df)), group))  # by stream, then time (df is in time order)
    g = group[order]
    mean_len = np.where(ci, TASKS["ci"][0],
                        np.array([TASKS[p][0] for p in PRODUCT_NAMES])[df["product"].to_numpy()])[order]
    stream_start = np.r_[True, g[1:] != g[:-1]]
    starts = (uniform(TASK, df["key"].to_numpy()[order]) < 1.0 / mean_len) | stream_start
    starts &= ~reindex[order]
    key = np.cumsum(starts) - 1
    number = key - np.maximum.accumulate(np.where(stream_start, key, -1))
    none = reindex[order]
    task_key = np.empty(len(df), dtype=np.int64)
    task = np.empty(len(df), dtype=np.int64)
    first = np.empty(len(df), dtype=bool)
    task_key[order] = np.where(none, -1, key)
    task[order] = np.where(none, -1, number)
    first[order] = starts
    df["task_key"], df["task"], df["first"], df["ci"] = task_key, task, first, ci


# ---- fleet and charges ------------------------------------------------------------------------

def _iso1(at: datetime) -> str:
    return at.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


CANARY_START = datetime(2026, 10, 20, 9, tzinfo=timezone.utc)
CANARY_HOURS = 72


def fleet_rows() -> list[dict]:
    """Fleet intervals of both pools: serving (with capacity) and reserves (without)."""
    s, e = _iso1(MONTH_START), _iso1(MONTH_END)
    h1, h2 = POOLS["h100-chat"], POOLS["h200-code"]

    def row(iid: str, pool: Pool, start: str, end: str, gpus: int, role: str) -> dict:
        return {"interval_id": iid, "pool": pool.name, "start": start, "end": end, "device": pool.device,
                "gpus": gpus, "region": REGION, "purchase_option": pool.purchase_option, "role": role,
                "capacity_tokens_per_gpu_s": pool.capacity if role == "serving" else ""}

    rows = [row("h100-chat-serve", h1, s, e, h1.replica, "serving")]
    for d in SUNDAYS:
        if d != OVERLOADED_SUNDAY:  # pre-scaled for the re-index, 13:00 to 16:00
            rows.append(row(f"h100-chat-reindex-{d:%m%d}", h1, _iso1(d + timedelta(hours=13)),
                            _iso1(d + timedelta(hours=16)), h1.replica, "serving"))
    rows.append(row("h100-chat-failure-reserve", h1, s, e, h1.replica, "failure_reserve"))
    rows.append(row("h200-code-serve", h2, s, e, h2.replica, "serving"))
    rows.append(row("h200-code-canary", h2, _iso1(CANARY_START), _iso1(CANARY_START + timedelta(hours=CANARY_HOURS)),
                    h2.replica, "canary"))
    return rows


# charge_id, category, description, amount (USD), allocation rule; October unless dated otherwise
CHARGES = (
    ("C-2026-10-OBS-LANGFUSE", "observability", "Langfuse Pro plan, October", "199.00", "even"),
    ("C-2026-10-ENG-ONCALL", "engineering_ops", "Inference platform on-call and upgrades (0.4 FTE)", "7200.00",
     "by_cost"),
    ("C-2026-10-EVAL", "evaluation", "Offline evaluation runs and human review", "2450.00", "by_tokens"),
    ("C-2026-10-NET", "network", "NAT gateways and load balancers", "412.80", "by_tokens"),
    ("C-2026-10-STORAGE", "storage", "Model weights and checkpoints (S3, EBS snapshots)", "318.40", "by_cost"),
    ("C-2026-10-TOOLS-INITECH", "tools", "Code-search index licence for initech's CI", "1500.00", "tenant:initech"),
    ("C-2026-Q4-SECURITY-AUDIT", "other", "Penetration test and security audit, Q4", "15000.00", "none"),
)
QUARTER_END = datetime(2027, 1, 1, tzinfo=timezone.utc)


def charge_rows() -> list[dict]:
    """Invoice charges: October's under each rule, and a Q4 charge of which October takes 31/92."""
    return [{"charge_id": cid, "period_start": _iso1(MONTH_START),
             "period_end": _iso1(QUARTER_END if cid.startswith("C-2026-Q4") else MONTH_END), "category": cat,
             "description": desc, "amount": amount, "currency": "USD", "allocate": rule}
            for cid, cat, desc, amount, rule in CHARGES]


# ---- writing (DuckDB formats and writes the CSV) -----------------------------------------------

def _list(values) -> str:
    return "[" + ", ".join("NULL" if v is None else "'" + v.replace("'", "''") + "'" for v in values) + "]"


_BASE_US = int(MONTH_START.timestamp()) * 1_000_000
_DAY_US = 24 * HOUR_US
_TENANTS_SQL = _list(TENANT_NAMES)
_PRODUCTS_SQL = _list(PRODUCT_NAMES)


def _at_sql(col: str) -> str:
    """SQL: microseconds since the month start as an ISO 8601 instant with a Z offset."""
    return f"strftime(make_timestamp({_BASE_US} + {col}), '%Y-%m-%dT%H:%M:%S.%fZ')"


def _day_sql(col: str) -> str:
    return f"strftime(make_timestamp({_BASE_US} + {col} * {_DAY_US}), '%Y%m%d')"


def _task_id_sql() -> str:
    """SQL: tenant-product-000123 (tenant-ci-000123 for initech's CI job); NULL without a task."""
    return (f"CASE WHEN task >= 0 THEN {_TENANTS_SQL}[tenant + 1] || '-' || "
            f"(CASE WHEN ci THEN 'ci' ELSE {_PRODUCTS_SQL}[product + 1] END) || '-' || "
            "lpad(CAST(task AS VARCHAR), 6, '0') END")


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
        "_i": np.arange(len(df)), "source": df["source"], "hour": df["hour"], "row": df["row"], "at_us": df["at_us"],
        "tenant": df["tenant"], "product": df["product"], "task": df["task"], "ci": df["ci"], "input": inp,
        "cached": np.where(follow_up, np.floor(inp * cached_share), 0).astype(np.int64), "output": out,
        "reasoning": np.where(is_agent, np.floor(out * 0.45), 0).astype(np.int64), "status": df["status"]})
    sources = _list(sorted(_STREAM_ID, key=_STREAM_ID.get))
    route = {i: ROUTES[p] for i, p in enumerate(PRODUCT_NAMES)}
    select = f"""
        {sources}[source + 1] || '-' || strftime(TIMESTAMP '{MONTH_START:%Y-%m-%d} 00:00:00' + to_hours(hour),
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
    is likelier to fail. Some tasks never get an outcome (no feedback)."""
    t = df[df["task_key"] >= 0].assign(bad=df["status"] != 0)
    g = t.groupby("task_key", sort=True).agg(tenant=("tenant", "first"), product=("product", "first"),
                                             ci=("ci", "first"), task=("task", "first"), last=("at_us", "max"),
                                             bad=("bad", "any")).reset_index()
    keys = g["task_key"].to_numpy().astype(np.uint64)
    ten = np.array(TENANT_NAMES, dtype=object)[g["tenant"].to_numpy()]
    kind = np.where(g["ci"].to_numpy(), "ci", np.array(PRODUCT_NAMES, dtype=object)[g["product"].to_numpy()])
    decided_share = np.array([TASKS[k][1] for k in kind])
    delay_max = np.array([TASKS[k][3] for k in kind])
    p_success = np.array([SUCCESS[(a, b)] for a, b in zip(ten, kind)]) * np.where(g["bad"].to_numpy(), 0.4, 1.0)
    g["success"] = uniform(OUTCOME, keys) < p_success
    g["decided_us"] = g["last"].to_numpy() + ((60 + uniform(DELAY, keys) * delay_max) * 1_000_000).astype(np.int64)
    g["criteria"] = [TASKS[k][2] for k in kind]
    g = g[uniform(DECIDED, keys) < decided_share].reset_index(drop=True)
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
                                                     n=("at_us", "size"), last=("at_us", "max")).reset_index()
    for sku, per_request, who in (("openai-web-search", 1.4, None), ("openai-file-search", 2.0, "hooli")):
        t = tasks if who is None else tasks[tasks["tenant"] == TENANT_NAMES.index(who)]
        t = t.assign(qty=np.ceil(t["n"].to_numpy() * per_request).astype(np.int64), _i=np.arange(len(t)))
        out.append((t, f"""'tool-{sku.removeprefix("openai-")}-' || {_task_id_sql()} AS event_id,
            {_at_sql('last')} AS occurred_at, {_TENANTS_SQL}[tenant + 1] AS tenant,
            {_PRODUCTS_SQL}[product + 1] AS product, {_task_id_sql()} AS task_id, 'tool_call' AS meter,
            '{sku}' AS sku, CAST(qty AS VARCHAR) AS quantity, 'call' AS unit, NULL AS region"""))

    prod = df["product"].to_numpy()
    daily = pd.DataFrame({
        "day": df["at_us"].to_numpy() // _DAY_US, "tenant": df["tenant"], "product": prod, "n": 1,
        "bytes": df["output"].to_numpy() * STREAM_BYTES_PER_TOKEN
        + np.array([PAYLOAD_BYTES[p] for p in PRODUCT_NAMES])[prod],
        "spans": np.array([SPANS[p] for p in PRODUCT_NAMES])[prod]})
    g = daily.groupby(["day", "tenant", "product"], sort=True).sum().reset_index()
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

    days = np.arange((MONTH_END - MONTH_START).days)
    store = pd.DataFrame({"_i": days, "day": days, "milli_gib": 12_000 + 100 * days})
    out.append((store, f"""'store-file-search-hooli-agent-' || {_day_sql('day')} AS event_id,
        {_at_sql(f'day * {_DAY_US}')} AS occurred_at, 'hooli' AS tenant, 'agent' AS product, NULL AS task_id,
        'storage' AS meter, 'openai-file-search-storage' AS sku,
        CAST(milli_gib // 1000 AS VARCHAR) || '.' || lpad(CAST(milli_gib % 1000 AS VARCHAR), 3, '0') AS quantity,
        'GiB * day' AS unit, NULL AS region"""))
    return out


def _write_meters(con, df: pd.DataFrame, path: Path) -> int:
    parts = _meter_frames(df)
    n = 0
    for i, (frame, select) in enumerate(parts):
        con.register(f"m{i}", frame)
        n += len(frame)
    union = " UNION ALL ".join(f"SELECT {i} AS _part, _i, {select} FROM m{i}" for i, (_f, select) in
                               enumerate(parts))
    cols = "event_id, occurred_at, tenant, product, task_id, meter, sku, quantity, unit, region"
    target = str(path).replace("'", "''")
    con.execute(f"COPY (SELECT {cols} FROM ({union}) ORDER BY _part, _i) TO '{target}' (HEADER, DELIMITER ',')")
    for i in range(len(parts)):
        con.unregister(f"m{i}")
    return n


def build_inputs(folder: str | Path, *, data_dir: Path = DATA_DIR) -> DemoInputs:
    """Write the demo month's input files (CSV) into `folder` (created if needed) and return them."""
    import duckdb

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    df = _requests(load_traces(data_dir))
    _tasks(df)
    paths = {k: folder / f"{k}.csv" for k in KINDS}
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        rows = {"fleet": _copy_rows(fleet_rows(), paths["fleet"]),
                "requests": _write_requests(con, df, paths["requests"]),
                "outcomes": _write_outcomes(con, df, paths["outcomes"]),
                "meters": _write_meters(con, df, paths["meters"]),
                "charges": _copy_rows(charge_rows(), paths["charges"])}
    finally:
        con.close()
    h = hashlib.sha256()
    for kind in KINDS:
        h.update(paths[kind].name.encode() + b"\0")
        with paths[kind].open("rb") as fh:
            while chunk := fh.read(1 << 22):
                h.update(chunk)
    return DemoInputs(folder, paths, rows, h.hexdigest())


# ---- running the demo: a fresh ledger home, books, dims, ingest, allocate ------------------------

class DemoError(Exception):
    """The demo cannot run here; the message says why and what to do."""


@dataclass(frozen=True)
class DemoResult:
    """What :func:`run_demo` did: the ledger `home`, the `inputs` it built, rows ingested per kind
    (`ingested`), the allocation run's `summary` (the ``allocate --json`` document, conserved),
    the price books it loaded (`books`, ``name@version``), whether any of them has an FX rate
    (`fx_in_books`; the demo's charges are all in USD either way) and the wall time in `seconds`."""

    home: Path
    inputs: DemoInputs
    ingested: dict[str, int]
    summary: dict
    books: tuple[str, ...]
    fx_in_books: bool
    seconds: float


def display_path(path: Path) -> str:
    """A path as a person at this working directory would type it (relative when possible)."""
    import os

    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _sqlite_file(url: str) -> Path | None:
    return Path(url[len("sqlite:///"):]).resolve() if url.startswith("sqlite:///") else None


def existing_data(home: Path, url: str) -> list[str]:
    """What the ledger at `home` / `url` already holds (empty: nothing, the demo may run). Looks
    without creating anything: a missing SQLite file or an unmigrated DB holds nothing."""
    import sqlalchemy as sa

    found = []
    for sub in ("facts", "demo"):
        d = home / sub
        if d.is_dir() and any(p.is_file() and not p.name.startswith(".") for p in d.rglob("*")):
            found.append(f"{sub}/ has files")
    db = _sqlite_file(url)
    if db is not None and not db.exists():
        return found
    eng = sa.create_engine(url)
    try:
        with eng.connect() as c:
            for table in sorted(sa.inspect(c).get_table_names()):
                if table != "alembic_version" and c.execute(sa.text(f'SELECT 1 FROM "{table}" LIMIT 1')).first():
                    found.append(f"table {table} has rows")
    finally:
        eng.dispose()
    return found


def wipe_home(home: Path, url: str) -> None:
    """Delete the ledger in `home`: its SQLite DB and fact and demo folders, nothing else. Refuses
    when the DB lives elsewhere (LEDGER_DATABASE_URL): the demo never wipes a shared database."""
    import shutil

    from . import store

    db = _sqlite_file(url)
    if db is None or db.parent != home.resolve():
        raise DemoError("the ledger DB is not in the ledger home (LEDGER_DATABASE_URL points elsewhere): the demo "
                        "does not wipe it; point LEDGER_DATABASE_URL at an empty database, or unset it")
    store.dispose_engines()
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    for sub in ("facts", "demo"):
        shutil.rmtree(home / sub, ignore_errors=True)


def run_demo(*, force: bool = False, on_step=None) -> DemoResult:
    """Build the demo month in the configured ledger home (LEDGER_HOME, LEDGER_DATABASE_URL):
    initialize the store, load the shipped price books, register tenants and products, write and
    ingest the inputs, allocate October 2026 and check that the lines add up to the total.
    Refuses (DemoError) when the ledger already holds data, unless `force` wipes it first."""
    import time

    from . import config, runs, store
    from .allocate import AllocationError, Policy
    from .ingest import IngestError, ingest
    from .pricebook import load_books

    step = on_step or (lambda _m: None)
    t0 = time.perf_counter()
    home, url = config.ledger_home(), config.database_url()
    found = existing_data(home, url)
    if found and not force:
        shown = "; ".join(found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
        raise DemoError(f"the ledger home {display_path(home)} already holds data ({shown}): the demo needs a "
                        "fresh one; use --home PATH for another, or --force to wipe this one")
    if found:
        step("wiping the ledger home")
        wipe_home(home, url)
    home.mkdir(parents=True, exist_ok=True)
    step("initializing the store")
    store.init_store()
    config.facts_dir().mkdir(parents=True, exist_ok=True)

    step("loading the shipped price books")
    books, problems = load_books([config.project_root() / "pricebooks"])
    if problems:
        raise DemoError("the shipped price books have problems:\n" + "\n".join(map(str, problems)))
    with store.session() as s:
        for b in books:
            store.store_book(s, book=b)
        for kind, dims in (("tenant", TENANTS), ("product", PRODUCTS)):
            for name, display, owner in dims:
                store.add_dim(s, kind=kind, name=name, display_name=display, owner=owner)

    step("building the demo month from the Azure trace")
    inputs = build_inputs(home / "demo")
    ingested = {}
    for kind in KINDS:
        step(f"ingesting {kind} ({inputs.rows[kind]:,} rows)")
        try:
            ingested[kind] = ingest(kind, [inputs.paths[kind]]).rows_new
        except IngestError as e:
            raise DemoError(f"ingest {kind} failed:\n" + "\n".join(e.lines())) from e

    step("allocating 2026-10")
    start, end = store.month_bounds(PERIOD)
    try:
        with store.session() as s:
            run, alloc = runs.allocate_period(s, start=start, end=end, policy=Policy())
            summary = runs.load_summary(run)
    except AllocationError as e:
        raise DemoError("allocation failed:\n" + "\n".join(e.problems)) from e
    if alloc.lines_total != alloc.total or Decimal(summary["lines_total"]) != Decimal(summary["total"]):
        raise DemoError(f"conservation failed: lines {summary['lines_total']} != total {summary['total']}")
    return DemoResult(home, inputs, ingested, summary, tuple(b.ref for b in books), any(b.fx for b in books),
                      time.perf_counter() - t0)
