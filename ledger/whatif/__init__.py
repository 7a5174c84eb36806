"""What if: a past month repriced, rerouted or self-hosted, allocated by the same rules and set beside its run.

`records` (the scenario and its result), `parse` (the scenario's TOML, checked at file and line),
`inputs` (the books, the requests rewritten in SQL, the self-hosted fleet), `run` (:func:`run_scenario`:
the allocation over those inputs and the comparison), `store` (results apart from runs), `render`
(JSON, CSV, tables; all say SCENARIO). ``ledger whatif`` is in `cli`; docs/whatif.md.

The names below are imported from their module when first used, so that ``ledger whatif --help``
(its ``cli``) starts without the package's stack (docs/scale.md, "Startup").
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

#: name -> the module of this package that defines it
_WHERE = {
    **dict.fromkeys(("load_scenario", "parse_scenario"), "parse"),
    **dict.fromkeys(("SCENARIO", "Reroute", "Scenario", "ScenarioError", "ScenarioResult", "SelfHost", "Sized",
                    "Where"), "records"),
    "run_scenario": "run",
}

__all__ = ["SCENARIO", "Reroute", "Scenario", "ScenarioError", "ScenarioResult", "SelfHost", "Sized", "Where",
           "load_scenario", "parse_scenario", "run_scenario"]


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


if TYPE_CHECKING:
    from .parse import load_scenario, parse_scenario
    from .records import SCENARIO, Reroute, Scenario, ScenarioError, ScenarioResult, SelfHost, Sized, Where
    from .run import run_scenario
