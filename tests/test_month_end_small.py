"""Issue 28 item 10, the smaller things: units in prose, the heatmap's colour clip."""
from __future__ import annotations

import pytest

from ledger.dashboard.workload import color_clip
from ledger.units import prose


@pytest.mark.parametrize("expr, said", [
    ("gpu * hour", "GPU-hour"), ("gpu*second", "GPU-second"), ("1e6 * token", "1M tokens"),
    ("1000 * request", "1K requests"), ("GiB * day", "GiB-day"), ("GB", "GB"), ("token", "token"),
    ("500 * token", "500 tokens"), ("1e9 * token", "1B tokens"),
    ("token / second", "token / second"),  # not a product: as written
])
def test_units_in_prose(expr, said):
    assert prose(expr) == said


def test_the_heatmap_clips_one_washing_hour_at_p99():
    # 167 hours at 10 TPM and a Sunday re-index hour at 1,000: p99 (linear) is 10, so 1,000 no
    # longer sets the scale
    assert color_clip([10.0] * 167 + [1000.0]) == 10.0
    # 0, 1, ..., 99: p99 = 98 + 0.01 × (99 - 98) = 98.01, below the maximum 99
    assert color_clip([float(v) for v in range(100)]) == pytest.approx(98.01)
    # nothing to clip: all equal, or no traffic (None for hours the series does not have)
    assert color_clip([5.0] * 168) is None and color_clip([None] * 168) is None and color_clip([0.0] * 168) is None


def test_the_prices_table_says_units_and_instants_for_people():
    from datetime import datetime, timezone

    from rich.console import Console

    from ledger.pricebook.cli import prices_as_table

    rows = [{"meter": m, "sku": s, "region": "us-east-1", "purchase_option": "on_demand", "provider": "*",
             "price": price, "currency": "USD", "per": per, "effective_from": "2026-10-01T00:00:00Z",
             "effective_to": None, "book": "b", "version": "1"}
            for m, s, price, per in (("gpu_time", "H100", "3.00", "gpu * hour"),
                                     ("input_tokens", "gpt-5", "1.25", "1e6 * token"))]
    console = Console(width=200, record=True)
    console.print(prices_as_table(rows, datetime(2026, 10, 15, 12, 0, 0, tzinfo=timezone.utc)))
    text = console.export_text()
    assert "prices in force at 2026-10-15T12:00:00Z (2)" in text
    assert "GPU-hour" in text and "1M tokens" in text and "gpu * hour" not in text
