"""The fleet and charge rows of the demo month, and :func:`build_inputs`, which writes all five input files."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..instants import iso
from .month import DATA_DIR, KINDS, MONTHS, OCTOBER, POOLS, REGION, Month, Pool
from .traffic import _requests, _tasks, load_traces
from .writers import _copy_rows, _write_meters, _write_outcomes, _write_requests, month_us


@dataclass(frozen=True)
class DemoInputs:
    """The files :func:`build_inputs` wrote: `paths` and data `rows` per kind, and `digest` (SHA-256
    over the files' names and bytes, in kind order)."""

    folder: Path
    paths: dict[str, Path]
    rows: dict[str, int]
    digest: str


CANARY_START = datetime(2026, 10, 20, 9, tzinfo=timezone.utc)
CANARY_HOURS = 72


def fleet_rows(month: Month = OCTOBER) -> list[dict]:
    """Fleet intervals of both pools in `month`: serving (with capacity) and reserves (without); the
    canary only in a month that has one (October)."""
    s, e = iso(month.start), iso(month.end)
    h1, h2 = POOLS["h100-chat"], POOLS["h200-code"]

    def row(iid: str, pool: Pool, start: str, end: str, gpus: int, role: str) -> dict:
        return {"interval_id": month.ident(iid), "pool": pool.name, "start": start, "end": end, "device": pool.device,
                "gpus": gpus, "region": REGION, "purchase_option": pool.purchase_option, "role": role,
                "capacity_tokens_per_gpu_s": pool.capacity if role == "serving" else ""}

    rows = [row("h100-chat-serve", h1, s, e, h1.replica, "serving")]
    for d in month.sundays:
        if d != month.overloaded_sunday:  # pre-scaled for the re-index, 13:00 to 16:00
            rows.append(row(f"h100-chat-reindex-{d:%m%d}", h1, iso(d + timedelta(hours=13)),
                            iso(d + timedelta(hours=16)), h1.replica, "serving"))
    rows.append(row("h100-chat-failure-reserve", h1, s, e, h1.replica, "failure_reserve"))
    rows.append(row("h200-code-serve", h2, s, e, h2.replica, "serving"))
    if month.canary:
        rows.append(row("h200-code-canary", h2, iso(CANARY_START), iso(CANARY_START + timedelta(hours=CANARY_HOURS)),
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


def charge_rows(month: Month = OCTOBER) -> list[dict]:
    """Invoice charges of `month`: the monthly ones under each rule (dated and named in their month),
    and, from October, a Q4 charge of which October takes 31/92."""
    name = f"{month.start:%B}"
    return [{"charge_id": cid.replace(OCTOBER.label, month.label), "period_start": iso(month.start),
             "period_end": iso(QUARTER_END if cid.startswith("C-2026-Q4") else month.end), "category": cat,
             "description": desc.replace(f"{OCTOBER.start:%B}", name), "amount": amount, "currency": "USD",
             "allocate": rule}
            for cid, cat, desc, amount, rule in CHARGES if month.start >= OCTOBER.start or
            not cid.startswith("C-2026-Q4")]


def requests_frame(traces, months: tuple[Month, ...] = MONTHS):
    """Every request of `months` in one frame, oldest month first, with its tasks (``_tasks``) and,
    per row, its month's start (`base_us`), length (`month_us`, µs) and id `tag`. Task keys are
    unique over the months: October's are the ones it always had, an earlier month's are offset by
    its salt."""
    import pandas as pd

    frames = []
    for m in months:
        df = _requests(traces, m)
        _tasks(df)
        df["task_key"] = df["task_key"].where(df["task_key"] < 0, df["task_key"] + (m.salt << 40))
        df["base_us"] = month_us(m)
        df["month_us"] = int((m.end - m.start).total_seconds()) * 1_000_000
        df["tag"] = m.tag
        frames.append(df)
    return pd.concat(frames, ignore_index=True)



def build_inputs(folder: str | Path, *, data_dir: Path = DATA_DIR, home: Path | None = None,
                 months: tuple[Month, ...] = MONTHS) -> DemoInputs:
    """Write the input files (CSV) of the demo's `months` (August to October 2026) into `folder`
    (created if needed), one file per kind holding every month, oldest first, and return them.
    DuckDB spills into the ledger home `home` (its folder) when one is given (``ledger.duck``)."""
    from .. import duck

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    df = requests_frame(load_traces(data_dir), months)
    paths = {k: folder / f"{k}.csv" for k in KINDS}
    con = duck.connect("demo", home=home, ordered=True)
    try:
        rows = {"fleet": _copy_rows([r for m in months for r in fleet_rows(m)], paths["fleet"]),
                "requests": _write_requests(con, df, paths["requests"]),
                "outcomes": _write_outcomes(con, df, paths["outcomes"]),
                "meters": _write_meters(con, df, paths["meters"]),
                "charges": _copy_rows([r for m in months for r in charge_rows(m)], paths["charges"])}
    finally:
        con.close()
    h = hashlib.sha256()
    for kind in KINDS:
        h.update(paths[kind].name.encode() + b"\0")
        with paths[kind].open("rb") as fh:
            while chunk := fh.read(1 << 22):
                h.update(chunk)
    return DemoInputs(folder, paths, rows, h.hexdigest())

