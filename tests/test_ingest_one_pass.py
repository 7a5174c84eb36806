"""Ingest names every problem of a batch in one run (issue 28 item 10): a bad timestamp no longer
hides an unknown product until the next run; an unknown name near a known one is named as a likely
typo before registering is offered."""
from __future__ import annotations

import pytest

from ledger.ingest.rows import nearest_known
from test_cli_surface import REQ, fails, ok, write

pytestmark = pytest.mark.store


def test_a_bad_timestamp_an_unknown_product_and_a_closed_month_come_in_one_run(ledger_home, tmp_path):
    from ledger import store

    ok("dims", "add", "tenant", "acme")
    ok("dims", "add", "product", "chat")
    with store.session() as s:
        store.close_period(s, name="2026-09")
    f = write(tmp_path / "r.csv", REQ + "r1,2026-13-01T00:00:00Z,acme,chat,m,p,,t1,10,0,5,ok\n"
              "r2,2026-10-01T00:00:00Z,acme,chatt,m,p,,t1,10,0,5,ok\n"
              "r3,2026-09-30T00:00:00Z,acme,chat,m,p,,t1,10,0,5,ok\n")
    lines = fails("ingest", "requests", str(f)).splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"{f}:2: occurred_at: ")  # the bad timestamp, as before
    assert lines[1] == (f"{f}:3: product: unknown product: chatt (chatt: did you mean chat? Correct a misspelt name in "
                        "the file; register only a product that is truly new, with `ledger dims add product NAME` "
                        "or `ledger dims import`, or ingest with --register-new)")
    assert lines[2].startswith(f"{f}:4: occurred_at: touches closed period 2026-09: refused")


def test_an_unknown_name_with_no_near_known_name_reads_as_before(ledger_home, tmp_path):
    ok("dims", "add", "tenant", "acme")
    ok("dims", "add", "product", "chat")
    f = write(tmp_path / "r.csv", REQ + "r1,2026-10-01T00:00:00Z,zeta,chat,m,p,,t1,10,0,5,ok\n")
    assert fails("ingest", "requests", str(f)) == (
        f"{f}:2: tenant: unknown tenant: zeta (register with `ledger dims add tenant zeta` or `ledger dims import`, "
        "or ingest with --register-new)")


def test_nearest_known():
    known = ["acme", "acme-eu", "beta", "globex"]
    # difflib ratio: "acmee"/"acme" 0.89, "acmee"/"acme-eu" 0.83; "globx"/"globex" 0.91; "zeta"/"beta" 0.75
    # (one letter of four); "initech" none
    assert nearest_known(["acmee", "globx", "zeta", "initech"], known) == [
        ("acmee", ["acme", "acme-eu"]), ("globx", ["globex"]), ("zeta", ["beta"])]
    assert nearest_known(["x"], []) == []
