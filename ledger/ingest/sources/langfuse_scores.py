"""Langfuse scores (the export's ``scores/`` rows: ``id, timestamp, trace_id, observation_id,
session_id, name, value, data_type, string_value, source, ...``; or the public API's scores, camelCase:
``traceId, stringValue, dataType``, response pages ``{"data": [...]}`` too) as task outcomes.

The map's ``[outcome]`` names the score (``score``), the rule that means success (``success``: a
comparison of the numeric ``value`` such as ``">= 1"``, or a list of ``string_value`` categories) and
the criteria text reports show (``criteria``, default the score's name). Scores of other names are
not read. The task is the score's ``trace_id`` (the map may say ``session_id``; 32 hex digits are read
in lower case, as the requests' trace ids), decided at its ``timestamp`` (UTC); each score is one
outcome and the latest per task counts, as for any outcomes file. Scores carry no tenant or product:
unless the map gives them, they are the ledger's own, from the requests of the same task already
ingested (a task with none, or with requests of two tenants, is a problem naming the row).

A comparison is exact, on the value's digits as written (never through a double): at the widest scale
DuckDB's DECIMAL(38) gives a value of its size (37 places below 10, 28 below 10^10, 18 below 10^20),
so ``0.99999999999999999999`` is below 1. A value written as text with more places than that is
refused (it cannot be compared exactly), as is one of 10^20 or more.
"""
from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

from ... import facts
from ...config import Home
from ...sqltext import literal as lit
from ..checks import DECIMAL_RE, places_sql
from .langfuse import shaped, trace_id
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
#: The fields read, as each shape spells them (the export's scores/ rows; the public API's scores).
EXPORT = {"trace_id": "trace_id", "timestamp": "timestamp", "name": "name", "value": "value",
          "string_value": "string_value"}
API = {"trace_id": "traceId", "timestamp": "timestamp", "name": "name", "value": "value",
       "string_value": "stringValue"}
#: (scale, the bound below which a DECIMAL(38, scale) holds a value): the widest exact reading first.
SCALES = ((37, Decimal(10)), (28, Decimal(10) ** 10), (18, Decimal(10) ** 20))
#: The most decimal places a rule's number may have (it is compared at every scale above).
MAX_RULE_PLACES = 18


def table_problems(m: SourceMap) -> list[tuple[str, str]]:
    """(key, message) for an ``[outcome]`` table that is missing or not understood."""
    o = m.extra.get("outcome", {})
    out = [(f"outcome.{k}", "unknown key (expected: score, success, criteria)") for k in o
           if k not in ("score", "success", "criteria")]
    if not isinstance(o.get("score"), str) or not o.get("score"):
        out.append(("outcome.score", "give the score's name (e.g. score = \"task_success\")"))
    rule = o.get("success")
    if isinstance(rule, str):
        found = COMPARISON.match(rule)
        if not found:
            out.append(("outcome.success", f"{rule!r} is not a comparison such as \">= 1\" (>=, >, <=, <, ==, !=)"))
        else:
            t = Decimal(found.group(2))
            if -t.as_tuple().exponent > MAX_RULE_PLACES or abs(t) >= SCALES[-1][1]:
                out.append(("outcome.success", f"{found.group(2)!r}: the number must have at most {MAX_RULE_PLACES} "
                                               "decimal places and be below 10^20"))
    elif not (isinstance(rule, list) and rule and all(isinstance(v, str) and v for v in rule)):
        out.append(("outcome.success", "give a comparison of the value (\">= 1\") or a list of categories"))
    if "criteria" in o and (not isinstance(o["criteria"], str) or not o["criteria"].strip()):
        out.append(("outcome.criteria", "must be text"))
    return out


def open_file(con, p: Path, fmt: str | None, link_dir: Path, m: SourceMap) -> SourceFile:
    """The scores file (the export's or the API's), keeping only the scores of the map's name."""
    src = shaped(con, open_source(con, p, fmt, link_dir), EXPORT, API,
                 lambda n: [(n["value"], tuple(scale for scale, _ in SCALES))])
    return kept(src, f"{src.value(path(src.names['name']))} = {lit(m.extra['outcome']['score'])}")


def prepare(con, m: SourceMap, home: Home) -> None:
    """Table ``_ledger_tasks``: each task of the requests of the ledger `home` with its tenant and
    product (NULL when its requests have more than one), for the columns the map does not give."""
    from ... import store

    with store.session(home.database_url) as s:
        files = facts.committed_files(s, "requests", home.path)
    rel = facts.files_sql("requests", files, con=con) if files else facts.empty_select("requests")
    con.execute(f"CREATE TEMP TABLE {TASKS} AS SELECT task_id, count(DISTINCT tenant) AS tenants, "
                "count(DISTINCT product) AS products, min(tenant) AS tenant, min(product) AS product "
                f"FROM ({rel}) WHERE task_id IS NOT NULL GROUP BY task_id")


def _compare(value: str, op: str, t: Decimal, scale: int, bound: Decimal) -> str:
    """SQL: `value` (DECIMAL(38,`scale`), a number below `bound`) `op` the rule's number `t`, exactly."""
    if abs(t) < bound and -t.as_tuple().exponent <= scale:
        return f"({value} {op} CAST({lit(str(t))} AS DECIMAL(38,{scale})))"
    below = t > 0  # |value| < bound <= |t|: the value is below a positive t, above a negative one
    holds = {"<": below, "<=": below, ">": not below, ">=": not below, "=": False, "!=": True}[op]
    return "true" if holds else "false"


def columns(src: SourceFile, m: SourceMap) -> dict[str, tuple[str, str]]:
    """``{ledger column: (SQL text over the score row, the source field it comes from)}``."""
    o = m.extra["outcome"]
    n = getattr(src, "names", EXPORT)

    def at(p: str) -> str:
        return src.value(path(p))

    out = mapped(src, m, {"task_id": (at(n["trace_id"]), n["trace_id"]),
                          "decided_at": (at(n["timestamp"]), n["timestamp"])})
    if out["task_id"][1] == n["trace_id"]:
        out["task_id"] = (trace_id(out["task_id"][0]), n["trace_id"])
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
        t = Decimal(number)
        vp = path(n["value"])
        value = src.value(vp)
        readings = [(scale, src.decimal(vp, scale), bound) for scale, bound in SCALES]
        decided = " ".join(f"WHEN {v} IS NOT NULL THEN (CASE WHEN {_compare(v, op, t, scale, bound)} "
                           "THEN 'success' ELSE 'failure' END)" for scale, v, bound in readings)
        scale = "(CASE " + " ".join(f"WHEN {v} IS NOT NULL THEN {s}" for s, v, _ in readings) + " END)"
        out["outcome"] = (f"(CASE {decided} END)", n["value"])
        out["_value"] = (f"coalesce({value}, '')", n["value"])
        out["_number"] = (f"coalesce(regexp_full_match(trim({value}), {lit(DECIMAL_RE)}), false)", n["value"])
        out["_fits"] = (f"({readings[-1][1]} IS NOT NULL)", n["value"])
        out["_scale"] = (scale, n["value"])
        # a value written as text shows its places; a JSON number is read from its digits to the scale
        out["_places"] = ("false" if src.is_json(vp) else f"coalesce({places_sql(value)} > {scale}, false)", n["value"])
    else:
        cats = ", ".join(lit(v) for v in rule)
        label = at(n["string_value"])
        out["outcome"] = (f"(CASE WHEN {label} IN ({cats}) THEN 'success' WHEN {label} IS NOT NULL THEN 'failure' END)",
                          n["string_value"])
    out["criteria"] = (lit(o.get("criteria", o["score"]).strip()), "[outcome] criteria")
    out["_task"] = (f"coalesce({task}, '')", task_field)
    return out


def checks(m: SourceMap, src: SourceFile | None = None) -> list[tuple[str, str, str]]:
    """Row problems of this source: a value the rule cannot compare exactly (not a number, too large,
    more places than can be held); a task whose tenant or product the ledger cannot tell (no request
    of it, or requests of two)."""
    n = getattr(src, "names", EXPORT)
    out = []
    if isinstance(m.extra["outcome"]["success"], str):
        quoted = "'''' || _value || "
        out += [("(NOT _number AND _value <> '')", n["value"],
                 quoted + lit("' is not a number, and [outcome] success compares numbers")),
                ("(_number AND NOT _fits)", n["value"], quoted + lit("' is too large to compare (below 10^20)")),
                ("(_number AND _fits AND _places)", n["value"],
                 quoted + "''' has more than ' || _scale || "
                 + lit(" decimal places: it cannot be compared exactly (a DECIMAL holds 38 digits)"))]
    for col in LOOKED_UP:
        if col not in m.columns:
            field = f"{m.columns['task_id'].path.text if 'task_id' in m.columns else n['trace_id']} ({col})"
            out.append((f"(_{col}s = 0 AND _task <> '')", field,
                        f"'no request of task ' || _task || {lit(f' in the ledger to take its {col} from: ingest the requests first, or map {col}')}"))
            out.append((f"(_{col}s > 1)", field,
                        f"'the requests of task ' || _task || ' have ' || _{col}s || {lit(f' {col}s: map {col}')}"))
    return out
