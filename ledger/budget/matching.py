"""What a plan and an allocation run have in common, before their numbers are set side by side.

A forecast is only comparable with a run where they name the same things: the plan's pools with the
pools of the run's GPU lines (the fleet's pool names), the plan's provider models (``[[tokens]]``,
``provider/model``) with the run's provider-token lines, and the categories the plan forecasts for
the month with the categories the run booked. :func:`match` says, per dimension, which keys both
have and which only one side has; `ledger budget compare` warns when some do not match and refuses
when none do (:meth:`Matching.refusal`). The rules are in ``docs/budgets.md`` (Forecast vs actual).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..allocate import CATEGORIES

#: The dimensions matched, in the order they are reported, with the words a person reads.
DIMENSIONS = (("pools", "pools"), ("provider_models", "provider models"), ("categories", "categories"))


@dataclass(frozen=True)
class MatchSet:
    """One dimension's keys: `matched` (in the plan and in the run), `plan_only` (forecast, compared
    with nothing the run booked) and `ledger_only` (booked, with no forecast), each sorted as the
    plan lists them, then by name."""

    matched: tuple[str, ...]
    plan_only: tuple[str, ...]
    ledger_only: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return not (self.plan_only or self.ledger_only)


def _set(plan: Sequence[str], ledger: Iterable[str], order: Sequence[str] = ()) -> MatchSet:
    plan = list(dict.fromkeys(plan))
    theirs = set(ledger)
    rank = {k: i for i, k in enumerate(order)}
    return MatchSet(matched=tuple(k for k in plan if k in theirs), plan_only=tuple(k for k in plan if k not in theirs),
                    ledger_only=tuple(sorted(theirs - set(plan), key=lambda k: (rank.get(k, len(rank)), k))))


@dataclass(frozen=True)
class Matching:
    """What plan `plan` and run `run_id` (month `month`) have in common: `pools`, `provider_models`
    and `categories`, one :class:`MatchSet` each."""

    plan: str
    run_id: str
    month: str
    pools: MatchSet
    provider_models: MatchSet
    categories: MatchSet

    @property
    def complete(self) -> bool:
        """Every pool, provider model and category of either side is on the other."""
        return self.pools.complete and self.provider_models.complete and self.categories.complete

    def warnings(self) -> list[str]:
        """One line per key on one side only, grouped by dimension and side; empty when complete."""
        out = []
        for attr, words in DIMENSIONS:
            s: MatchSet = getattr(self, attr)
            if s.plan_only:
                what = ("compared with 0: the run has no GPU line of them" if attr == "pools" else
                        "compared with 0: the run has no provider-token line of them" if attr == "provider_models"
                        else "forecast for the month, none booked")
                out.append(f"{words} of plan {self.plan} not in the ledger ({what}): {', '.join(s.plan_only)}")
            if s.ledger_only:
                what = ("booked, with no forecast: their error is their cost" if attr != "categories"
                        else "booked, not forecast for the month")
                out.append(f"{words} of the ledger not in plan {self.plan} ({what}): {', '.join(s.ledger_only)}")
        return out

    def refusal(self) -> list[str]:
        """The lines of the error when nothing can be compared, else []. Nothing can be compared when
        the plan has pools or provider models and none of them is in the run, or when it forecasts
        categories for the month and the run booked none of them: one line for what the plan has,
        one for what the ledger has, one saying how to fix it."""
        items = self.pools.matched + self.provider_models.matched
        plan_items = self.pools.plan_only + self.provider_models.plan_only
        if plan_items and not items:
            ledger_pools = ", ".join(self.pools.ledger_only) or "none"
            return [f"plan {self.plan} has {_has(self.pools.plan_only, self.provider_models.plan_only)}: "
                    "none of them is in the ledger",
                    f"the ledger (run {self.run_id} of {self.month}) has "
                    f"{_has(self.pools.ledger_only, self.provider_models.ledger_only)}: none of them is in the plan",
                    f"to compare, name the plan's [[pool]] tables as the ledger's fleet names its pools ({ledger_pools})"
                    " and its [[tokens]] by the provider and model the requests carry, or compare the ledger "
                    "with the plan made for it"]
        if self.categories.plan_only and not self.categories.matched:
            return [f"plan {self.plan} forecasts {', '.join(self.categories.plan_only)} for {self.month}: "
                    "the ledger booked none of them",
                    f"the ledger (run {self.run_id} of {self.month}) booked "
                    f"{', '.join(self.categories.ledger_only) or 'nothing'}: the plan forecasts none of them",
                    "to compare, forecast the categories the ledger books (a [[charge]] category, a [[meter]], "
                    "[[tokens]], a [[pool]]), or compare the ledger with the plan made for it"]
        return []


def _has(pools: Sequence[str], models: Sequence[str]) -> str:
    """``pools a, b and provider models openai/gpt-5``, naming only what there is."""
    parts = [f"{words} {', '.join(keys)}" for words, keys in (("pools", pools), ("provider models", models)) if keys]
    return " and ".join(parts) or "no pool and no provider model"


def match(*, plan: str, run_id: str, month: str, plan_pools: Sequence[str], plan_models: Sequence[str],
          forecast: dict, lines: Iterable) -> Matching:
    """The :class:`Matching` of a plan's month with a run's `lines` (objects with `category`,
    `pool`, `provider`, `model`, `amount`). `plan_pools` and `plan_models` (``provider/model``) are
    the plan's, `forecast` the month's forecast by category; a category is on a side when its amount
    there is not zero, a pool on the run's side when it has a GPU line, a provider model when it
    has a provider-token line."""
    pools: set[str] = set()
    models: set[str] = set()
    booked: dict[str, object] = {}
    for ln in lines:
        booked[ln.category] = booked.get(ln.category, 0) + ln.amount
        if ln.category == "gpu" and ln.pool:
            pools.add(ln.pool)
        if ln.category == "provider_tokens" and ln.provider and ln.model:
            models.add(f"{ln.provider}/{ln.model}")
    return Matching(plan=plan, run_id=run_id, month=month, pools=_set(plan_pools, pools),
                    provider_models=_set(plan_models, models),
                    categories=_set([c for c, v in forecast.items() if v], [c for c, v in booked.items() if v],
                                    order=CATEGORIES))
