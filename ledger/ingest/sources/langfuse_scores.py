"""Langfuse scores (the export's ``scores/`` rows: ``id, timestamp, trace_id, observation_id,
session_id, name, value, data_type, string_value, source, ...``) as task outcomes.

The map's ``[outcome]`` names the score (``score``), the rule that means success (``success``: a
comparison of the numeric ``value`` such as ``">= 1"``, or a list of ``string_value`` categories) and
the criteria text reports show (``criteria``, default the score's name). Scores of other names are
not read. The task is the score's ``trace_id`` (the map may say ``session_id``), decided at its
``timestamp`` (UTC, the export's format); each score is one outcome and the latest per task counts,
as for any outcomes file. Scores carry no tenant or product: unless the map gives them, they are the
ledger's own, from the requests of the same task already ingested (a task with none, or with
requests of two tenants, is a problem naming the row).
"""
from __future__ import annotations

import re
from pathlib import Path

from ... import config, facts
from ..checks import lit
from .mapfile import SourceMap
from .reading import SourceFile, instant, kept, open_source
from .sql import mapped, path

KIND = "outcomes"
TABLES = ("outcome",)
BUILT_IN = {"task_id": "trace_id", "decided_at": "timestamp"}
MAPPABLE = {"task_id", "tenant", "product", "decided_at"}
LOOKED_UP = ("tenant", "product")
COMPARISON = re.compile(r"^\s*(>=|<=|==|!=|>|<|=)\s*([+-]?[0-9]+(?:\.[0-9]+)?)\s*$")
TASKS = "_ledger_tasks"


def table_problems(m: SourceMap) -> list[tuple[str, str]]:
    """(key, message) for an ``[outcome]`` table that is missing or not understood."""
    o = m.extra.get("outcome", {})
    out = [(f"outcome.{k}", "unknown key (expected: score, success, criteria)") for k in o
           if k not in ("score", "success", "criteria")]
    if not isinstance(o.get("score"), str) or not o.get("score"):
        out.append(("outcome.score", "give the score's name (e.g. score = \"task_success\")"))
    rule = o.get("success")
    if isinstance(rule, str):
        if not COMPARISON.match(rule):
            out.append(("outcome.success", f"{rule!r} is not a comparison such as \">= 1\" (>=, >, <=, <, ==, !=)"))
    elif not (isinstance(rule, list) and rule and all(isinstance(v, str) and v for v in rule)):
        out.append(("outcome.success", "give a comparison of the value (\">= 1\") or a list of categories"))
    if "criteria" in o and (not isinstance(o["criteria"], str) or not o["criteria"].strip()):
        out.append(("outcome.criteria", "must be text"))
    return out


def open_file(con, p: Path, fmt: str | None, link_dir: Path, m: SourceMap) -> SourceFile:
    """The scores file, keeping only the scores of the map's name."""
    src = open_source(con, p, fmt, link_dir)
    return kept(src, f"{src.value(path('name'))} = {lit(m.extra['outcome']['score'])}")


def prepare(con, m: SourceMap) -> None:
    """Table ``_ledger_tasks``: each task of the ledger's requests with its tenant and product (NULL
    when its requests have more than one), for the columns the map does not give."""
    from ... import store

    with store.session() as s:
        files = facts.committed_files(s, "requests", config.ledger_home())
    rel = facts.files_sql("requests", files) if files else facts.empty_select("requests")
    con.execute(f"CREATE TEMP TABLE {TASKS} AS SELECT task_id, count(DISTINCT tenant) AS tenants, "
                "count(DISTINCT product) AS products, min(tenant) AS tenant, min(product) AS product "
                f"FROM ({rel}) WHERE task_id IS NOT NULL GROUP BY task_id")


def columns(src: SourceFile, m: SourceMap) -> dict[str, tuple[str, str]]:
    """``{ledger column: (SQL text over the score row, the source field it comes from)}``."""
    o = m.extra["outcome"]

    def at(p: str) -> str:
        return src.value(path(p))

    out = mapped(src, m, {col: (at(field), field) for col, field in BUILT_IN.items()})
    out["decided_at"] = (instant(out["decided_at"][0], True), out["decided_at"][1])
    task, task_field = out["task_id"]
    for col in LOOKED_UP:
        if col not in out:
            out[col] = (f"(SELECT t.{col} FROM {TASKS} t WHERE t.task_id = {task} AND t.{col}s = 1)", task_field)
            out[f"_{col}s"] = (f"coalesce((SELECT t.{col}s FROM {TASKS} t WHERE t.task_id = {task}), 0)", task_field)
    rule = o["success"]
    if isinstance(rule, str):
        op, number = COMPARISON.match(rule).groups()
        op = {"=": "=", "==": "="}.get(op, op)
        value = at("value")
        num = f"TRY_CAST(trim({value}) AS DECIMAL(38,12))"
        out["outcome"] = (f"(CASE WHEN {num} {op} {number} THEN 'success' WHEN {num} IS NOT NULL THEN 'failure' END)",
                          "value")
        out["_value"] = (f"coalesce({value}, '')", "value")
        out["_number"] = (f"({num} IS NOT NULL)", "value")
    else:
        cats = ", ".join(lit(v) for v in rule)
        label = at("string_value")
        out["outcome"] = (f"(CASE WHEN {label} IN ({cats}) THEN 'success' WHEN {label} IS NOT NULL THEN 'failure' END)",
                          "string_value")
    out["criteria"] = (lit(o.get("criteria", o["score"]).strip()), "[outcome] criteria")
    out["_task"] = (f"coalesce({task}, '')", task_field)
    return out


def checks(m: SourceMap) -> list[tuple[str, str, str]]:
    """Row problems of this source: a value the rule cannot compare; a task whose tenant or product
    the ledger cannot tell (no request of it, or requests of two)."""
    out = []
    if isinstance(m.extra["outcome"]["success"], str):
        out.append(("(NOT _number AND _value <> '')", "value",
                    "'''' || _value || " + lit("' is not a number, and [outcome] success compares numbers")))
    for col in LOOKED_UP:
        if col not in m.columns:
            field = f"{m.columns['task_id'].path.text if 'task_id' in m.columns else 'trace_id'} ({col})"
            out.append((f"(_{col}s = 0 AND _task <> '')", field,
                        f"'no request of task ' || _task || {lit(f' in the ledger to take its {col} from: ingest the requests first, or map {col}')}"))
            out.append((f"(_{col}s > 1)", field,
                        f"'the requests of task ' || _task || ' have ' || _{col}s || {lit(f' {col}s: map {col}')}"))
    return out
