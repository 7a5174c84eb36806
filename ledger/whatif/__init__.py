"""What if: a past month repriced, rerouted or self-hosted, allocated by the same rules and set beside its run.

`records` (the scenario and its result), `parse` (the scenario's TOML, checked at file and line),
`inputs` (the books, the requests rewritten in SQL, the self-hosted fleet), `run` (:func:`run_scenario`:
the allocation over those inputs and the comparison), `store` (results apart from runs), `render`
(JSON, CSV, tables; all say SCENARIO). ``ledger whatif`` is in `cli`; docs/whatif.md.
"""
from .parse import load_scenario, parse_scenario
from .records import SCENARIO, Reroute, Scenario, ScenarioError, ScenarioResult, SelfHost, Sized, Where
from .run import run_scenario

__all__ = ["SCENARIO", "Reroute", "Scenario", "ScenarioError", "ScenarioResult", "SelfHost", "Sized", "Where",
           "load_scenario", "parse_scenario", "run_scenario"]
