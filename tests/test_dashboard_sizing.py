"""The sizing page's inputs follow the curve source (issue: a plan pool's util and reserves were
carried over to an uploaded curve, 40 GPUs where `ledger size` gives 28): a pool brings its own
parameters, anchors and uploaded files start from what `ledger size` assumes when an option is not
given, and the GPUs shown are `ledger size`'s for the same curve."""
from __future__ import annotations

from pathlib import Path

import pytest
from dashboard_support import PLAN, cli, demo_month, page, shown, table
from test_dashboard_apptest import _curve_csv


@pytest.fixture
def demo(tmp_path_factory, monkeypatch) -> Path:
    from ledger import store

    home = demo_month(tmp_path_factory)
    monkeypatch.setenv("LEDGER_HOME", str(home))
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    yield home
    store.dispose_engines()


def inputs(at) -> dict:
    return {k: at.session_state[k] for k in ("sz_tpm", "sz_gpr", "sz_slas", "sz_util", "sz_failure", "sz_canary",
                                             "sz_warm", "sz_interpolate", "sz_repair", "sz_ttft", "sz_device")}


def test_a_curve_without_a_plan_starts_from_the_cli_defaults_not_from_the_last_pool(demo, tmp_path):
    from ledger.budget import load_plan

    pool = load_plan(PLAN).pools[0]
    at = page("pages/sizing_budget.py")
    at.selectbox(key="sz_plan").set_value(PLAN.name).run()
    assert at.selectbox(key="sz_pool").value == pool.name == "h100-chat"
    # the pool's own parameters (examples/plan.toml: util 0.6, one failure replica), not the defaults
    was = inputs(at)
    assert (was["sz_util"], was["sz_failure"], was["sz_tpm"]) == (0.6, 1, 6000.0)

    # the same measured points, uploaded as a curve file: the inputs start afresh
    curve = _curve_csv(pool.curve, tmp_path / "h100-chat.csv")
    at.radio(key="sz_source").set_value("upload result files").run()
    at.file_uploader(key="sz_upload").set_value((curve.name, curve.read_bytes(), "text/csv")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    now = inputs(at)
    # `ledger size` without --util, --failure-reserve, --canary, --warm, --interpolate, --repair, --ttft-ms
    # or --device: util 0.7, no reserve, measured points only, no repair, no TTFT limit, not priced
    assert {k: now[k] for k in ("sz_util", "sz_failure", "sz_canary", "sz_warm", "sz_interpolate", "sz_repair",
                                "sz_ttft", "sz_device")} == \
        {"sz_util": 0.7, "sz_failure": 0, "sz_canary": 0, "sz_warm": 0, "sz_interpolate": False,
         "sz_repair": False, "sz_ttft": 0.0, "sz_device": "(not priced)"}
    assert now["sz_gpr"] == 1  # the curve file's gpus_per_replica
    base = ["size", "--curve", str(curve), "--tpm", f"{now['sz_tpm']}", "--sla", now["sz_slas"],
            "--gpus-per-replica", str(now["sz_gpr"])]
    doc = cli(demo, *base)
    gpus = [int(shown(g)) for g in table(at, "sz_table")["GPUs"]]
    assert gpus == [r["gpus"] for r in doc["rows"]]
    # what carrying the pool's util and failure reserve over would have shown instead: more GPUs
    carried = cli(demo, *base, "--util", "0.6", "--failure-reserve", "1")
    assert all(c["gpus"] > r["gpus"] for c, r in zip(carried["rows"], doc["rows"], strict=True))

    # back to the pool: its parameters again; then anchors: the defaults again
    at.radio(key="sz_source").set_value("a plan's pool").run()
    assert {k: inputs(at)[k] for k in ("sz_util", "sz_failure", "sz_tpm")} == \
        {"sz_util": 0.6, "sz_failure": 1, "sz_tpm": 6000.0}
    at.radio(key="sz_source").set_value("anchors").run()
    assert not at.exception
    assert (inputs(at)["sz_util"], inputs(at)["sz_failure"], inputs(at)["sz_device"]) == (0.7, 0, "(not priced)")


def test_inputs_changed_by_hand_stay_while_the_source_stays(demo):
    at = page("pages/sizing_budget.py")
    at.radio(key="sz_source").set_value("anchors").run()
    at.number_input(key="sz_failure").set_value(2).run()
    at.text_input(key="sz_anchors").set_value("1:215.5,10:122.2,256:41.8").run()  # another curve, same source
    assert not at.exception and at.session_state["sz_failure"] == 2
