"""Guardrails benchmark (issue 31): the anomaly detector's precision and recall on planted anomalies
of known size, and the run time of the alerts over a 10M-request month.

1. **Detector.** Seeded synthetic daily spend per (tenant, model): a weekday profile (weekends at
   45%), a level drawn per pair (1 to 2,000 a day, log-uniform), a slow trend and log-normal day
   noise (sigma 0.12); 8 weeks of history, then 4 judged weeks in which anomalies are planted on
   random days at known multiples of the day's expected spend (1.5x, 2x, 3x, 5x). The detector of
   ``ledger.guardrails.anomalies`` with the default rule (docs/alerts.md) judges every day of the 4
   weeks; precision = flagged days that were planted / flagged days, recall = planted days flagged /
   planted days (overall and per size).
2. **Run time.** The month of ``bench/synth.py`` (10M requests by default, its fleet, outcomes and
   charges, as ``bench/allocate.py`` writes them), the alerts as of 2026-10-29T12:00Z: the
   allocation of [2026-09-03, as-of) that prices the month so far (the spend to date and the
   baselines' history), then the projection of one budget per tenant and the anomalies. Wall time
   of each part, in a fresh process, with the ledger's default DuckDB memory limit.

    python bench/alerts.py                       # both, 10M requests
    python bench/alerts.py --requests 1000000    # a smaller month
    python bench/alerts.py --detector-only
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

SIZES = (Decimal("1.5"), Decimal(2), Decimal(3), Decimal(5))


def detector(pairs: int, seed: int) -> dict:
    import numpy as np

    from ledger.guardrails import Rule
    from ledger.guardrails.anomalies import find_anomalies

    rng = np.random.default_rng(seed)
    first, judged_from, days = date(2026, 8, 3), date(2026, 9, 28), 12 * 7  # Monday Aug 3: 8 weeks, then 4
    daily, planted = {}, {}
    for p in range(pairs):
        level = float(np.exp(rng.uniform(np.log(1), np.log(2000))))
        trend = rng.uniform(-0.002, 0.004)
        series = {}
        for i in range(days):
            d = first + timedelta(days=i)
            expected = level * (0.45 if d.weekday() >= 5 else 1.0) * (1 + trend) ** i
            amount = expected * float(np.exp(rng.normal(0, 0.12)))
            if d >= judged_from and rng.random() < 0.05:
                size = SIZES[int(rng.integers(0, len(SIZES)))]
                amount = expected * float(size)
                planted[(f"t{p}", "m", d)] = size
            series[d] = Decimal(f"{amount:.6f}")
        daily[(f"t{p}", "m")] = series
    judged = [judged_from + timedelta(days=i) for i in range(28)]
    found = find_anomalies(daily, days=judged, partial=None, data_from=first, rule=Rule(), currency="USD")
    flagged = {(a.tenant, a.model, a.day) for a in found}
    hits = flagged & set(planted)
    out = {"pairs": pairs, "judged_days": pairs * len(judged), "planted": len(planted), "flagged": len(flagged),
           "precision": len(hits) / len(flagged) if flagged else 1.0, "recall": len(hits) / len(planted)}
    for size in SIZES:
        of = {k for k, v in planted.items() if v == size}
        out[f"recall_{size}x"] = len(of & flagged) / len(of) if of else None
    return out


def run_time(requests: int, seed: int, data: Path | None) -> dict:
    import allocate as bench_allocate  # bench/allocate.py: the month's Parquet facts and their views
    import synth

    from ledger.guardrails import Budget, Rule
    from ledger.guardrails.alerts import alerts_from, spend_by_day
    from ledger.pricebook import PriceIndex, parse_book

    folder = data or Path(tempfile.mkdtemp(prefix="ledger-bench-alerts-"))
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if not (folder / "complete").exists():
        bench_allocate.prepare(requests, seed, folder)
    generated = time.perf_counter() - t0
    book, problems = parse_book(bench_allocate.BOOK, "bench.toml")  # the prices bench/allocate.py uses
    assert not problems, problems
    books = [book]
    as_of = datetime(2026, 10, 29, 12, tzinfo=timezone.utc)
    rule = Rule()
    start = datetime(2026, 10, 1, tzinfo=timezone.utc) - timedelta(weeks=rule.weeks)
    budgets = [Budget(tenant=t, product=None, model=None, monthly=Decimal(10_000), currency="USD", owner="bench",
                      effective_from=start, effective_to=None, book="bench", version="1", entry=i)
               for i, t in enumerate(synth.TENANTS, start=1)]
    con = bench_allocate.facts_connection(folder)
    try:
        t1 = time.perf_counter()
        daily, data_from, refs = spend_by_day(con, start=start, end=as_of, prices=PriceIndex(books), currency="USD")
        t2 = time.perf_counter()
        alerts = alerts_from(daily, data_from, budgets=budgets, as_of=as_of, rule=rule, currency="USD")
        t3 = time.perf_counter()
    finally:
        con.close()
    return {"requests": requests, "generate_s": round(generated, 2), "spend_to_date_s": round(t2 - t1, 2),
            "projection_and_anomalies_s": round(t3 - t2, 3), "alerts_total_s": round(t3 - t1, 2),
            "budgets": len(alerts.budgets), "anomalies": len(alerts.anomalies), "data": str(folder)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--pairs", type=int, default=400, help="(tenant, model) pairs of the detector's traces")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--data", type=Path, help="keep the generated month here (reused when complete)")
    ap.add_argument("--detector-only", action="store_true")
    args = ap.parse_args()
    d = detector(args.pairs, args.seed)
    print(f"detector: {d['pairs']} pairs, {d['judged_days']:,} days judged, {d['planted']} planted, "
          f"{d['flagged']} flagged: precision {d['precision']:.3f}, recall {d['recall']:.3f}")
    print("  recall by planted size: " + ", ".join(f"{s}x {d[f'recall_{s}x']:.3f}" for s in SIZES))
    if args.detector_only:
        return
    r = run_time(args.requests, args.seed, args.data)
    print(f"alerts over a {r['requests']:,}-request month (as of 2026-10-29T12:00Z): {r['alerts_total_s']} s "
          f"(spend to date, the allocation: {r['spend_to_date_s']} s; projection and anomalies: "
          f"{r['projection_and_anomalies_s']} s); {r['budgets']} budgets, {r['anomalies']} anomalies; "
          f"generating the month took {r['generate_s']} s")


if __name__ == "__main__":
    main()
