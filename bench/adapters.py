"""Benchmark: ingest N LiteLLM spend-log rows (`ledger ingest requests --source litellm`, the adapter's
`ingest_from`) beside the plain CSV ingest of the same requests, and DuckDB's bare read + hourly
group-by of the LiteLLM file.

    python bench/adapters.py --rows 1000000 --repeat 3

The seeded synthetic requests of bench/synth.py are written twice (bench/out/, reused when present):
as the ledger's own CSV, and as a LiteLLM ``LiteLLM_SpendLogs`` CSV export of the same requests
(``startTime`` naive UTC, ``prompt_tokens``/``completion_tokens``, ``metadata`` JSON text holding the
team alias and the ``usage_object`` with the cached and reasoning parts, ``request_tags`` JSON, the
self-hosted requests told by ``api_base``, ``spend`` as a double). Each repeat, in a fresh ledger home
and a child process each (own peak RSS, read with wait4): the reference, the plain ingest, then, in
another fresh home, the reference and the adapter's ingest. Figures are medians; ratios are against
the reference (the ratio of medians) and adapter/plain: the ratio of the medians, and the median of
each repeat's own ratio (its adapter run over the plain run just before it; target 1.5x at 1M rows).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from ingest import child, make_files, uptime  # noqa: E402  (bench/ingest.py: the child runner, the seeded files)

ROOT = HERE.parent
MAP = """naive_times = "UTC"
[columns]
tenant = "metadata.user_api_key_team_alias"
product = "request_tags[0]"
task_id = "session_id"
region = "metadata.region"
[pool]
from = "api_base"
values = { "http://vllm-h100:8000/v1" = "h100-chat", "http://vllm-l40s:8000/v1" = "l40s-batch" }
"""

PLAIN = """
import json, os, sys, time
from ledger.ingest import ingest
cpu = lambda: sum(os.times()[:2])
t, c = time.perf_counter(), cpu()
r = ingest("requests", [sys.argv[1]], register_new=True)
print(json.dumps({"seconds": time.perf_counter() - t, "cpu": cpu() - c, "new": r.rows_new}))
"""

ADAPTER = """
import json, os, sys, time
from ledger.ingest.sources import ingest_from
cpu = lambda: sum(os.times()[:2])
t, c = time.perf_counter(), cpu()
r = ingest_from("litellm", "requests", [sys.argv[1]], sys.argv[1] + ".map.toml", register_new=True)
print(json.dumps({"seconds": time.perf_counter() - t, "cpu": cpu() - c, "new": r.rows_new}))
"""

# The conversion's own floor: the LiteLLM file read as the adapter reads it (every field as text, strict
# CSV), each JSON document of the row parsed once for every leaf the map and the adapter ask of it
# (the leaves are the adapter's own: ``litellm.columns`` over the opened file), the other fields as read,
# written to Parquet with the fact files' options. No check, no type, no layer: any conversion of this
# file does at least this much before the plain ingest reads what it wrote.
FLOOR = """
import json, os, sys, tempfile, time
from pathlib import Path
from ledger import duck
from ledger.ingest.records import PARQUET_OPTIONS
from ledger.ingest.sources import litellm, mapfile
from ledger.ingest.sources.reading import open_source
from ledger.sqltext import literal as lit
cpu = lambda: sum(os.times()[:2])
t, c = time.perf_counter(), cpu()
con = duck.connect("bench", ordered=True)
with tempfile.TemporaryDirectory() as work:
    m = mapfile.load(Path(sys.argv[1] + ".map.toml"), litellm.MAPPABLE, litellm.TABLES)
    src = open_source(con, Path(sys.argv[1]), None, Path(work))
    cols = litellm.columns(src, m)
    docs = [d for d in src.docs.roots.values() if d.leaves]
    roots = {d.source for d in docs}
    said = " ".join([sql for sql, _ in cols.values()] + list(src.docs.values))  # the fields the adapter reads
    plain = [f'"{f}"' for f in src.types if f'"{f}"' in said and not any(f'"{f}"' in r for r in roots)]
    leaves = [f"json_extract({d.source}, [{', '.join(lit(p) for p in d.leaves)}]) AS d{i}" for i, d in enumerate(docs)]
    con.execute(f"COPY (SELECT {', '.join(plain + leaves)} FROM ({src.scan})) TO {lit(work + '/floor.parquet')} "
                f"({PARQUET_OPTIONS})")
print(json.dumps({"seconds": time.perf_counter() - t, "cpu": cpu() - c, "leaves": sum(len(d.leaves) for d in docs),
                  "fields": plain}))
"""

REFERENCE = """
import json, sys, time
import duckdb
t = time.perf_counter()
con = duckdb.connect()
con.execute("SET TimeZone = 'UTC'")
con.execute("SET enable_progress_bar = false")
rows = con.execute(f"SELECT date_trunc('hour', CAST(startTime AS TIMESTAMP)) AS h, count(*), sum(prompt_tokens), "
                   f"sum(completion_tokens) FROM read_csv('{sys.argv[1]}') GROUP BY 1").fetchall()
print(json.dumps({"seconds": time.perf_counter() - t, "groups": len(rows)}))
"""


def litellm_file(plain: Path) -> Path:
    """The same requests as a LiteLLM spend-log CSV (written once, by DuckDB)."""
    out = plain.with_name(plain.stem + "_litellm.csv")
    if out.exists():
        return out
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    pools = "CASE pool WHEN 'h100-chat' THEN 'http://vllm-h100:8000/v1' WHEN 'l40s-batch' THEN 'http://vllm-l40s:8000/v1'"
    con.execute(f"""COPY (SELECT request_id, 'acompletion' AS call_type,
        round((input_tokens * 1.25 + output_tokens * 10.0) / 1e6, 9) AS spend,
        input_tokens + output_tokens AS total_tokens, input_tokens AS prompt_tokens, output_tokens AS completion_tokens,
        strftime(CAST(occurred_at AS TIMESTAMPTZ), '%Y-%m-%d %H:%M:%S.%g') AS startTime,
        strftime(CAST(occurred_at AS TIMESTAMPTZ) + to_microseconds(CAST(latency_ms * 1000 AS BIGINT)), '%Y-%m-%d %H:%M:%S.%g') AS endTime,
        strftime(CAST(occurred_at AS TIMESTAMPTZ) + to_microseconds(CAST(ttft_ms * 1000 AS BIGINT)), '%Y-%m-%d %H:%M:%S.%g') AS completionStartTime,
        model, model AS model_group, coalesce(provider, 'hosted_vllm') AS custom_llm_provider,
        {pools} ELSE 'https://api.' || provider || '.com/v1' END AS api_base,
        to_json({{'user_api_key_team_alias': tenant, 'region': region, 'usage_object': {{'prompt_tokens': input_tokens,
          'completion_tokens': output_tokens, 'total_tokens': input_tokens + output_tokens,
          'prompt_tokens_details': {{'cached_tokens': cached_input_tokens}},
          'completion_tokens_details': {{'reasoning_tokens': reasoning_tokens}}}}}}) AS metadata,
        to_json([product]) AS request_tags, task_id AS session_id,
        CASE status WHEN 'ok' THEN 'success' ELSE 'failure' END AS status
        FROM read_csv('{plain}', all_varchar=false)) TO '{out}.tmp' (HEADER, DELIMITER ',')""")
    os.replace(f"{out}.tmp", out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    plain = make_files(args.rows, args.seed)["csv"]
    lite = litellm_file(plain)
    Path(f"{lite}.map.toml").write_text(MAP)
    runs = {"reference": [], "plain": [], "adapter": [], "floor": []}
    load = [uptime()]
    for _ in range(args.repeat):
        for kind, code, path in (("plain", PLAIN, plain), ("adapter", ADAPTER, lite)):
            with tempfile.TemporaryDirectory(prefix="ledger-bench-") as home:
                env = dict(os.environ, LEDGER_HOME=home)
                env.pop("LEDGER_DATABASE_URL", None)
                subprocess.run([sys.executable, "-c", "from ledger.store import init_store; init_store()"], env=env,
                               check=True)
                runs["reference"].append(child(REFERENCE, str(lite), env))
                got = child(code, str(path), env)
                assert got[0]["new"] == args.rows, got
                runs[kind].append(got)
                if kind == "adapter":  # in the same fresh home, while it exists
                    runs["floor"].append(child(FLOOR, str(lite), env))
    load.append(uptime())
    med = {k: statistics.median(r[0]["seconds"] for r in v) for k, v in runs.items()}
    paired = [a[0]["seconds"] / p[0]["seconds"] for p, a in zip(runs["plain"], runs["adapter"])]
    # CPU-seconds (user + system, every thread of the child) of the same runs: on a shared machine the
    # wall-clock ratio swings with the load, the CPU ratio much less
    cpu = {k: statistics.median(r[0]["cpu"] for r in runs[k]) for k in ("plain", "adapter", "floor")}
    paired_cpu = [a[0]["cpu"] / p[0]["cpu"] for p, a in zip(runs["plain"], runs["adapter"])]
    rss = {k: max(r[1] for r in v) for k, v in runs.items()}
    result = {
        "rows": args.rows, "repeat": args.repeat, "litellm_file_mib": round(lite.stat().st_size / 2**20, 1),
        "plain_file_mib": round(plain.stat().st_size / 2**20, 1),
        **{f"{k}_seconds": round(v, 3) for k, v in med.items()},
        **{f"{k}_peak_rss_mib": round(v, 1) for k, v in rss.items()},
        "adapter_rows_per_s": round(args.rows / med["adapter"]),
        "plain_vs_reference": round(med["plain"] / med["reference"], 2),
        "adapter_vs_reference": round(med["adapter"] / med["reference"], 2),
        "adapter_vs_plain": round(med["adapter"] / med["plain"], 2),
        "adapter_vs_plain_paired": round(statistics.median(paired), 2), "paired": [round(x, 2) for x in paired],
        **{f"{k}_cpu_seconds": round(v, 3) for k, v in cpu.items()},
        "adapter_vs_plain_cpu_paired": round(statistics.median(paired_cpu), 2),
        "paired_cpu": [round(x, 2) for x in paired_cpu],
        "floor_vs_plain": round(med["floor"] / med["plain"], 2), "floor_leaves": runs["floor"][0][0]["leaves"],
        "adapter_vs_floor": round(med["adapter"] / med["floor"], 2),
        "load": load,
        "all_seconds": {k: [round(r[0]["seconds"], 3) for r in v] for k, v in runs.items()},
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    r = result
    print(f"{r['rows']:,} requests, median of {r['repeat']}: LiteLLM CSV {r['litellm_file_mib']} MiB, "
          f"ledger CSV {r['plain_file_mib']} MiB")
    print(f"  reference (DuckDB read of the LiteLLM file + hourly group-by): {r['reference_seconds']:.2f} s, "
          f"peak RSS {r['reference_peak_rss_mib']:.0f} MiB")
    print(f"  plain CSV ingest:        {r['plain_seconds']:.2f} s, peak RSS {r['plain_peak_rss_mib']:.0f} MiB, "
          f"{r['plain_vs_reference']}x the reference")
    print(f"  --source litellm ingest: {r['adapter_seconds']:.2f} s = {r['adapter_rows_per_s']:,} rows/s, peak RSS "
          f"{r['adapter_peak_rss_mib']:.0f} MiB, {r['adapter_vs_reference']}x the reference, "
          f"{r['adapter_vs_plain']}x the plain ingest")
    print(f"  ratio to the plain ingest of the same rows, each repeat's own (run back to back): "
          f"{r['adapter_vs_plain_paired']}x (median of {r['paired']}; target 1.5x)")
    print(f"  CPU-seconds (user + system): plain {r['plain_cpu_seconds']:.2f}, --source litellm "
          f"{r['adapter_cpu_seconds']:.2f}; each repeat's own ratio {r['adapter_vs_plain_cpu_paired']}x "
          f"(median of {r['paired_cpu']})")
    print(f"  the conversion's floor (the file read as text, its {r['floor_leaves']} JSON leaves parsed once a row, "
          f"written to Parquet; no check): {r['floor_seconds']:.2f} s, {r['floor_cpu_seconds']:.2f} CPU-seconds, "
          f"= {r['floor_vs_plain']}x the plain ingest before any ingest of what it wrote; the adapter is "
          f"{r['adapter_vs_floor']}x this floor")
    print(f"  all runs (s): {r['all_seconds']}")
    print("load: " + " | ".join(load))


if __name__ == "__main__":
    main()
