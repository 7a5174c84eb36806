"""What if: a past month repriced, rerouted or self-hosted, allocated by the same rules and set beside its run.

`records` (the scenario and its result), `parse` (the scenario's TOML, checked at file and line),
`inputs` (the books, the requests rewritten in SQL, the self-hosted fleet), `run` (:func:`run_scenario`:
the allocation over those inputs and the comparison), `store` (results apart from runs), `render`
(JSON, CSV, tables; all say SCENARIO). ``ledger whatif`` is in `cli`; docs/whatif.md.

The names below are imported from their module when first used, so that ``ledger whatif --help``
(its ``cli``) starts without the package's stack (docs/scale.md, "Startup").
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    ".parse": ("load_scenario", "parse_scenario"),
    ".records": ("SCENARIO", "Reroute", "Scenario", "ScenarioError", "ScenarioResult", "SelfHost", "Sized", "Where"),
    ".run": ("run_scenario",),
})


if TYPE_CHECKING:
    from .parse import load_scenario, parse_scenario
    from .records import SCENARIO, Reroute, Scenario, ScenarioError, ScenarioResult, SelfHost, Sized, Where
    from .run import run_scenario
