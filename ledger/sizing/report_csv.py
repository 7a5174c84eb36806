"""`ledger size --csv`: the sizing report as CSV, made from the JSON report (`sizing_as_dict`,
`pool_as_dict`) so that the two never disagree. A plain sizing is one row per SLA; a pool in parts
(tiers, prefill/decode) one row per part, one per reserve and one for the sum."""
from __future__ import annotations

from ledger.outputs import csv_text

#: `size --csv` of a plain sizing: one row per SLA (the `*_compare` and `delta_*` columns are filled
#: with --compare-curve).
SIZING_COLUMNS = ("status", "sla_tok_s_user", "c_star", "c_star_measured", "tok_s_user", "replica_output_tok_s",
                  "throughput_basis", "limited_by", "replicas_serving", "replicas_reserve", "replicas", "gpus",
                  "monthly_cost", "currency", "capacity_tokens_per_gpu_s", "ttft_ms", "reserve_failure",
                  "reserve_canary", "reserve_warm", "gpus_compare", "delta_gpus", "monthly_cost_compare",
                  "delta_monthly_cost")
#: `size --csv` of a pool in parts: `row` is part, reserve (of `reserve_kind`: failure, canary, warm) or sum.
POOL_COLUMNS = ("status", "mode", "row", "tier", "role", "reserve_kind", "share", "tpm", "rate_tok_s", "rate_unit",
                "sla_tok_s_user", "ttft_limit_ms", "c_star", "measured", "replica_tok_s", "limited_by", "replicas",
                "gpus_per_replica", "gpus", "monthly_cost", "currency", "reason")
_NUMERIC = ("monthly_cost", "monthly_cost_compare", "delta_monthly_cost", "share")


def _text(rows: list[dict]) -> list[dict]:
    """Booleans as true/false (as in the JSON report)."""
    return [{k: ("true" if v else "false") if isinstance(v, bool) else v for k, v in r.items()} for r in rows]


def _currency(doc: dict) -> str | None:
    return doc["pricing"]["currency"] if doc.get("pricing") else None


def sizing_as_csv(doc: dict) -> str:
    """The rows of a plain sizing's JSON report (:func:`ledger.sizing.report.sizing_as_dict`) as CSV."""
    deltas = {d["sla_tok_s_user"]: d for d in (doc.get("compare") or {}).get("deltas", [])}
    rows = []
    for r in doc["rows"]:
        d = deltas.get(r["sla_tok_s_user"], {})
        res = r["reserves"]
        rows.append({**{k: r.get(k) for k in SIZING_COLUMNS}, "status": doc["status"], "currency": _currency(doc),
                     "reserve_failure": res["failure"], "reserve_canary": res["canary"], "reserve_warm": res["warm"],
                     "gpus_compare": d.get("gpus_compare"), "delta_gpus": d.get("delta_gpus"),
                     "monthly_cost_compare": d.get("monthly_cost_compare"),
                     "delta_monthly_cost": d.get("delta_monthly_cost")})
    return csv_text(SIZING_COLUMNS, _text(rows), numeric=_NUMERIC)


def pool_as_csv(doc: dict) -> str:
    """A pool in parts (:func:`ledger.sizing.pool_report.pool_as_dict`) as CSV: its parts, its
    reserves (with their reasons) and the sum of replicas, GPUs and money."""
    head = {"status": doc["status"], "mode": doc["mode"], "currency": _currency(doc)}
    rows = [{**head, **{k: p.get(k) for k in POOL_COLUMNS if k in p}, "row": "part", "measured": p["measured"]}
            for p in doc["parts"]]
    rows += [{**head, "row": "reserve", "role": r["role"], "reserve_kind": r["kind"], "replicas": r["replicas"],
              "gpus_per_replica": r["gpus_per_replica"], "gpus": r["gpus"], "monthly_cost": r["monthly_cost"],
              "reason": r["reason"]} for r in doc["reserves"]]
    t = doc["totals"]
    rows.append({**head, "row": "sum", "share": "1", "tpm": doc["tpm"], "replicas": t["replicas"], "gpus": t["gpus"],
                 "monthly_cost": t["monthly_cost"]})
    return csv_text(POOL_COLUMNS, _text(rows), numeric=_NUMERIC)
