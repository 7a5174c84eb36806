"""The targets a bill map names, against what the ledger knows: a rule that places bill rows on a
pool or a provider the ledger has never heard of (a typo: ``h100-chta``) is named, with the map, its
line and the rule. ``ledger reconcile`` warns (the rows show on a resource no line of the run is
priced on); ``allocate --true-up`` refuses (it would book the bill's money on a pool that does not
exist). A category rule naming a category the ledger does not have is refused when the map is read
(:mod:`ledger.reconcile.billmap`).

What the ledger knows:

- **pools**: the pools a fleet file registered (the ``pool`` table of the ledger DB);
- **providers**: the providers of the period's requests (the resources priced in the period, which
  reconcile and the true-up compute anyway for coverage), and those the loaded price books name (a
  token price's ``provider``). No scan of the ledger's whole request history.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from sqlmodel import select

from ..models import Pool
from ..pricebook import Book
from .billmap import BillMap
from .bills import Resource

#: How many known names a problem lists.
SHOWN = 10


def known_targets(s, books: Iterable[Book], priced: Mapping[Resource, object]) -> dict[str, set[str]]:
    """``{"pool": names, "provider": names}``: the pools the ledger DB (session `s`) registered, and the
    providers the loaded price books `books` name or the period's requests use (the provider
    resources of `priced`, :func:`ledger.reconcile.coverage.priced_hours`)."""
    pools = set(s.exec(select(Pool.name)))
    providers = {p.provider for b in books for p in b.prices if p.provider not in ("*", "")}
    providers |= {r.name for r in priced if r.kind == "provider"}
    return {"pool": pools, "provider": providers}


def unknown_targets(bill_map: BillMap, known: dict[str, set[str]]) -> list[tuple[str, str]]:
    """``(where, what)`` for each rule of `bill_map` whose pool or provider the ledger does not know:
    `where` is ``map.toml:LINE: pools[N]``, `what` names the target, the nearest known name and the
    known names."""
    out = []
    for r in bill_map.rules:
        names = known.get(r.kind)
        if names is None or r.target in names:
            continue
        near = difflib.get_close_matches(r.target, sorted(names), n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        listed = sorted(names)
        have = (f"the ledger's {r.kind}s: {', '.join(listed[:SHOWN])}"
                f"{f' and {len(listed) - SHOWN} more' if len(listed) > SHOWN else ''}" if listed
                else f"the ledger knows no {r.kind}")
        how = ("a pool is known once a fleet file names it" if r.kind == "pool" else
               "a provider is known from the requests or a price book")
        out.append((r.where(bill_map.path), f"{r.kind} {r.target!r} is not a {r.kind} of the ledger{hint} "
                                            f"({have}; {how})"))
    return out
