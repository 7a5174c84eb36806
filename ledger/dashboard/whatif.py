"""The What if page's frames: a scenario (a shipped one, an upload, or one built in the page) run over a
month beside its run, as DataFrames of the comparison. The page never stores the result (the dashboard
never writes to the ledger); ``ledger whatif`` does."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import config
from ..whatif import ScenarioError, ScenarioResult, parse_scenario, run_scenario
from ..whatif.render import CSV_COLUMNS, whatif_rows

#: The scenarios shipped beside the demo (``scenarios/``).
SCENARIOS_DIR = config.project_root() / "scenarios"
COMPARE_COLUMNS = ["by", "key", "actual_cost", "scenario_cost", "difference", "difference_share",
                   "successful_tasks", "actual_cost_per_successful_task", "scenario_cost_per_successful_task"]


def shipped_scenarios() -> list[Path]:
    """The scenario files shipped in ``scenarios/`` (those with a name)."""
    if not SCENARIOS_DIR.is_dir():
        return []
    return [p for p in sorted(SCENARIOS_DIR.glob("*.toml")) if "name" in p.read_text(encoding="utf-8")]


def built_scenario(name: str, kind: str, where: dict[str, str], change: dict[str, object]) -> str:
    """The TOML of a one-change scenario built in the page: `kind` ``reroute`` or ``self_host``,
    `where` (field -> name; empty values left out) and the change's fields (``to_model`` and
    ``to_provider`` of a reroute become its ``to``; any other field is written as it is). The same
    text a file would hold, read and checked by the same parser."""
    where_text = ", ".join(f"{k} = {_q(v)}" for k, v in where.items() if v)
    lines = [f"name = {_q(name)}", "", f"[[{kind}]]", f"where = {{ {where_text} }}"]
    fields = dict(change)
    to = {k[3:]: fields.pop(k) for k in ("to_model", "to_provider") if k in fields}
    if kind == "reroute":
        lines.append("to = { " + ", ".join(f"{k} = {_q(v)}" for k, v in to.items() if v) + " }")
    for k, v in fields.items():
        lines.append(f"{k} = {_q(v) if isinstance(v, str) else repr(v)}")
    return "\n".join(lines) + "\n"


def _q(text: str) -> str:
    """A TOML basic string (JSON's string escapes are TOML's)."""
    import json

    return json.dumps(str(text))


def whatif_of(session, period: str, text: str, name: str, *, base_dir: str | Path,
              home: Path | None = None) -> ScenarioResult:
    """The scenario of TOML `text` (named `name`; paths relative to `base_dir`) over `period`,
    beside its current run. ScenarioError (one line per problem), RunError, AllocationError."""
    scenario, problems = parse_scenario(text, name, base_dir=base_dir)
    if problems:
        raise ScenarioError(problems)
    return run_scenario(session, period=period, scenario=scenario, home=home)


def comparison_frame(result: ScenarioResult) -> pd.DataFrame:
    """The comparison as ``ledger whatif --csv``: one row per tenant, product and model, then the
    total; money as floats of the exact decimals (the frame is for display and charts)."""
    rows = whatif_rows(result)
    frame = pd.DataFrame(rows, columns=CSV_COLUMNS)[COMPARE_COLUMNS]
    for c in COMPARE_COLUMNS[2:]:
        if c != "successful_tasks":
            frame[c] = pd.to_numeric(frame[c])
    return frame


def kinds_frame(result: ScenarioResult) -> pd.DataFrame:
    """Actual and scenario per line kind (tenant, idle_slack, idle_reserve, unallocated)."""
    return pd.DataFrame([{"kind": k, "actual": float(a), "scenario": float(b)} for k, (a, b) in result.by_kind.items()])


__all__ = ["COMPARE_COLUMNS", "SCENARIOS_DIR", "built_scenario", "comparison_frame", "kinds_frame", "shipped_scenarios", "whatif_of",
           "whatif_rows"]
