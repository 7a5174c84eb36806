"""Every request and task of the demo month, replayed from the Azure trace with deterministic uniforms."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from .month import (CONV_PRODUCTS, DATA_DIR, GROWTH, HOUR_US, OCTOBER, PRODUCT_NAMES, RATE, SEED, STATUS,
                    STREAM_TENANTS, TASKS, TENANT_NAMES, TRACE_FILES, WEEKEND, Month)

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


def hourly_rate(stream: str, month: Month = OCTOBER) -> np.ndarray:
    """Per hour of the month, the fraction of the trace hour replayed as interactive traffic."""
    hod = np.arange(24)

    def bump(center: float, width: float) -> np.ndarray:
        d = np.minimum(np.abs(hod - center), 24 - np.abs(hod - center))
        return np.exp(-(d / width) ** 2)

    shape = 0.25 + 0.55 * bump(11, 3.5) + 0.9 * bump(18.5, 3.5)
    shape = shape / shape.mean()
    hours = np.arange(month.hours)
    weekday = np.array([(month.start + timedelta(hours=int(h))).weekday() for h in hours])
    day_factor = np.where(weekday >= 5, WEEKEND, 1.0)
    trend = 1.0 - GROWTH / 2 + GROWTH * hours / (month.hours - 1)
    return RATE[stream] * month.level * shape[hours % 24] * day_factor * trend


# ---- requests ----------------------------------------------------------------------------------

_STREAM_ID = {"conv": 0, "code": 1, "reindex": 2, "ci": 3}


def _thin(trace: Trace, stream_id: int, hour: int, share: float, salt: int = 0) -> np.ndarray:
    keys = (np.uint64(salt) << np.uint64(48)) | (np.uint64(stream_id) << np.uint64(40)) | \
        (np.uint64(hour) << np.uint64(20)) | np.arange(len(trace), dtype=np.uint64)
    return np.flatnonzero(uniform(SELECT, keys) < share)


def _requests(traces: dict[str, Trace], month: Month = OCTOBER) -> pd.DataFrame:
    """Every request of the month as a frame (numeric codes and token counts), sorted by time. The
    keys of its random choices carry the month's salt (0 for October: the draws it always had)."""
    parts = []
    batches = month.batches
    for stream, trace in traces.items():
        rate = hourly_rate(stream, month)
        for h in range(month.hours):
            rows = _thin(trace, _STREAM_ID[stream], h, rate[h], month.salt)
            parts.append((stream, stream, h, rows, None))
    for b in batches:
        h = int((b.hour - month.start).total_seconds() // 3600)
        parts.append((b.source, b.stream, h, _thin(traces[b.stream], _STREAM_ID[b.source], h, b.share, month.salt),
                      b))
    cols: dict[str, list] = {k: [] for k in ("source", "hour", "row", "at_us", "input", "output", "batch")}
    for source, stream, h, rows, batch in parts:
        t = traces[stream]
        cols["source"].append(np.full(len(rows), _STREAM_ID[source], dtype=np.int64))
        cols["hour"].append(np.full(len(rows), h, dtype=np.int64))
        cols["row"].append(rows.astype(np.int64))
        cols["at_us"].append(h * HOUR_US + t.offset_us[rows])
        cols["input"].append(t.input[rows])
        cols["output"].append(t.output[rows])
        cols["batch"].append(np.full(len(rows), -1 if batch is None else batches.index(batch), dtype=np.int64))
    df = pd.DataFrame({k: np.concatenate(v) for k, v in cols.items()})
    key = (np.uint64(month.salt) << np.uint64(48)) | (df["source"].to_numpy().astype(np.uint64) << np.uint64(40)) | \
        (df["hour"].to_numpy().astype(np.uint64) << np.uint64(20)) | df["row"].to_numpy().astype(np.uint64)
    df["key"] = key

    # tenants and products: interactive rows by share, batch rows by their job
    tenant = np.empty(len(df), dtype=np.int64)
    product = np.empty(len(df), dtype=np.int64)
    u_t, u_p = uniform(TENANT, key), uniform(PRODUCT, key)
    src = df["source"].to_numpy()
    conv, code = src == _STREAM_ID["conv"], src == _STREAM_ID["code"]
    shares = {s: {t: v for t, v in STREAM_TENANTS[s].items() if t in month.tenants} for s in STREAM_TENANTS}
    tenant[conv] = _pick(u_t[conv], TENANT_NAMES, shares["conv"])
    tenant[code] = _pick(u_t[code], TENANT_NAMES, shares["code"])
    product[code] = PRODUCT_NAMES.index("code-assist")
    for name, shares in CONV_PRODUCTS.items():
        m = conv & (tenant == TENANT_NAMES.index(name))
        product[m] = _pick(u_p[m], PRODUCT_NAMES, shares)
    bidx = df["batch"].to_numpy()
    for i, b in enumerate(batches):
        m = bidx == i
        tenant[m] = TENANT_NAMES.index(b.tenant)
        product[m] = PRODUCT_NAMES.index(b.product)
    df["tenant"], df["product"] = tenant, product

    # status: a small rate of errors, timeouts and cancellations; batch hours carry their own timeout rate
    u_s = uniform(STATUS_U, key)
    timeout = np.full(len(df), STATUS[1][1])
    for i, b in enumerate(batches):
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
