"""Measured serving curves (tok/s/user against concurrency) and the checks that make them usable."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..errors import LedgerError
from ..hints import Hint, Hinted

#: The library's words for the repair a command offers (`ledger size --repair`, a plan's `repair`).
REPAIR = Hint("repair", "repair the curve")
#: How a note names the repair that was made.
REPAIRED = Hint("repaired", "the repair")


class SizingError(LedgerError, ValueError):
    """Sizing cannot go on. `problems` holds one line per problem, each naming what it concerns."""

    def __init__(self, problems: list[str] | tuple[str, ...] | str):
        super().__init__(problems)
        self.problems = tuple(self.problems)


@dataclass(frozen=True)
class CurvePoint:
    """One measured operating point of one replica.

    Fields:
    - `concurrency`: requests in flight on the replica (count). Set by the load tester (closed loop)
      or derived by Little's law (request throughput [req/s] x mean end-to-end latency [s]), so it
      may be fractional.
    - `tok_s_user`: output tokens per second seen by one user [token/s/user] = 1000 / TPOT [ms]
      (TPOT = time per output token after the first one; GuideLLM calls it ITL).
    - `output_tok_s`: measured aggregate output tokens per second of the replica [token/s], or None.
    - `ttft_ms`: time to first token [ms] (the statistic is named in the curve's `metrics`), or None.
    - `label`: where the point came from (``file:line``, ``anchor 2``, ``benchmark 3``).
    """

    concurrency: float
    tok_s_user: float
    output_tok_s: float | None = None
    ttft_ms: float | None = None
    label: str = ""

    @property
    def replica_output_tok_s(self) -> float:
        """Aggregate output tok/s of the replica: measured when the point has it, else c x tok/s/user."""
        return self.output_tok_s if self.output_tok_s is not None else self.concurrency * self.tok_s_user

    def describe(self) -> str:
        where = f" ({self.label})" if self.label else ""
        return f"c={fmt_num(self.concurrency)}: {fmt_num(self.tok_s_user)} tok/s/user{where}"


@dataclass(frozen=True)
class CurveContext:
    """What a curve was measured on; every sizing number inherits it (no bare numbers).

    Fields (None when the source does not say):
    - `source`: where the numbers come from (URL, file name, ``anchors``).
    - `model`, `precision`, `hardware`, `engine`: what was served, and how.
    - `gpus_per_replica`: GPUs of the measured replica (count).
    - `isl`, `osl`: mean input and output tokens per request of the measured workload [token].
    - `workload`: the load generator's workload settings (dataset, nominal lengths).
    - `tool`: the load tester and its version.
    - `date`: when it was measured (ISO 8601 text, as precise as the source).
    - `metrics`: how tok/s/user, concurrency and TTFT were read from the source.
    - `format`: the loader that read it (``anchors``, ``csv``, ``vllm``, ``sglang``, ``guidellm``, ``aiperf``).
    - `notes`: free-text notes carried by the source.
    """

    source: str
    model: str | None = None
    hardware: str | None = None
    gpus_per_replica: int | None = None
    isl: float | None = None
    osl: float | None = None
    engine: str | None = None
    precision: str | None = None
    workload: str | None = None
    tool: str | None = None
    date: str | None = None
    metrics: str | None = None
    format: str = ""
    notes: str | None = None


@dataclass(frozen=True)
class Curve:
    """A measured curve for one workload shape and one replica size: `points` sorted by concurrency,
    and the `context` they were measured in. `dropped` lists the points a repair removed."""

    points: tuple[CurvePoint, ...]
    context: CurveContext
    dropped: tuple[CurvePoint, ...] = field(default=())

    @property
    def label(self) -> str:
        c = self.context
        return " | ".join(x for x in (c.source, c.model, c.workload) if x)


def make_curve(points, context: CurveContext) -> Curve:
    """A curve with its points sorted by concurrency (stable: the input order never matters otherwise)."""
    return Curve(tuple(sorted(points, key=lambda p: p.concurrency)), context)


def fmt_num(x: float | None, digits: int = 2) -> str:
    """A physical number for messages and tables: thousands separated, integers without decimals."""
    if x is None:
        return "-"
    if math.isfinite(x) and float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.{digits}f}"


def _finite_positive(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def curve_problems(curve: Curve) -> list[str]:
    """Everything wrong with a curve, one line each naming the points: empty, bad numbers,
    duplicate concurrency, tok/s/user rising with concurrency, throughput falling with concurrency.

    Rising tok/s/user: a point whose tok/s/user is below that of a higher concurrency cannot be
    measured truth for an SLA-first sizing (the server got faster per user under more load: noise).
    Falling throughput: a point on the tok/s/user envelope that serves fewer output tok/s than a
    lower concurrency on it (which also gives each user at least as many tok/s) is past the knee;
    it can never be the right operating point. Both are dominated points; `repair_curve` removes
    them (see `_envelope`).
    """
    return [msg for _, msg in _problems(curve)]


_REPAIRABLE = ("rising", "falling")


def _problems(curve: Curve) -> list[tuple[str, str]]:
    pts = curve.points
    src = curve.context.source
    if not pts:
        return [("empty", f"{src}: the curve has no points")]
    out: list[tuple[str, str]] = []
    for p in pts:
        if not _finite_positive(p.concurrency):
            out.append(("value", f"{src}: point {p.describe()} has concurrency {p.concurrency!r}; it must be > 0"))
        if not _finite_positive(p.tok_s_user):
            out.append(("value", f"{src}: point {p.describe()} has tok/s/user {p.tok_s_user!r}; it must be > 0"))
        if p.output_tok_s is not None and not _finite_positive(p.output_tok_s):
            out.append(("value", f"{src}: point {p.describe()} has output tok/s {p.output_tok_s!r}; it must be > 0"))
        if p.ttft_ms is not None and not (math.isfinite(p.ttft_ms) and p.ttft_ms >= 0):
            out.append(("value", f"{src}: point {p.describe()} has TTFT {p.ttft_ms!r} ms; it must be >= 0"))
    if out:
        return out
    ordered = sorted(pts, key=lambda p: p.concurrency)
    for a, b in zip(ordered, ordered[1:]):
        if a.concurrency == b.concurrency:
            out.append(("duplicate", f"{src}: concurrency {fmt_num(a.concurrency)} appears twice: "
                                     f"{a.describe()} and {b.describe()}"))
    if out:
        return out
    for p, kind, q in _envelope(ordered)[1]:
        if kind == "rising":
            msg = f"tok/s/user rises with concurrency: {p.describe()} is below {q.describe()}"
        else:
            msg = (f"output tok/s falls as concurrency rises: {p.describe()} serves {fmt_num(p.replica_output_tok_s)} "
                   f"output tok/s, less than {fmt_num(q.replica_output_tok_s)} at {q.describe()}")
        out.append((kind, Hinted(f"{src}: {msg} (", REPAIR, " to keep the upper envelope)")))
    return out


def _envelope(ordered: list[CurvePoint]) -> tuple[list[CurvePoint], list[tuple[CurvePoint, str, CurvePoint]]]:
    """The upper envelope of points sorted by concurrency, and each other point with why it is off it.

    Stage 1, tok/s/user: a point goes when a higher concurrency gives more tok/s/user ("rising";
    its dominator is the fastest such point). What stays has tok/s/user non-increasing in c.
    Stage 2, throughput, over what stage 1 kept: a point goes when a lower concurrency (which gives
    at least its tok/s/user) serves more output tok/s ("falling"; its dominator is the running
    best). What stays also has output tok/s non-decreasing in c. Each stage keeps a running extreme,
    so the result never depends on the order in which points are examined.
    """
    stage1: list[CurvePoint] = []
    drops: list[tuple[CurvePoint, str, CurvePoint]] = []
    for i, p in enumerate(ordered):
        faster = [q for q in ordered[i + 1:] if q.tok_s_user > p.tok_s_user]
        if faster:
            drops.append((p, "rising", max(faster, key=lambda q: q.tok_s_user)))
        else:
            stage1.append(p)
    kept: list[CurvePoint] = []
    for p in stage1:
        best = kept[-1] if kept else None  # kept throughputs are non-decreasing: the last is the best so far
        if best is not None and best.replica_output_tok_s > p.replica_output_tok_s:
            drops.append((p, "falling", best))
        else:
            kept.append(p)
    drops.sort(key=lambda d: d[0].concurrency)
    return kept, drops


def repair_curve(curve: Curve) -> tuple[Curve, tuple[str, ...]]:
    """The upper envelope (see `_envelope`): keep only undominated points; say why each other went.

    A point below the tok/s/user envelope is never a measured c* (the faster point above it meets
    every SLA it meets), so dropping it changes no answer; dropping a point past the knee moves c*
    to the lower concurrency that serves more tok/s at no worse tok/s/user (never more GPUs).
    Returns the curve (its `dropped` extended) and one note per dropped point.
    """
    kept, drops = _envelope(sorted(curve.points, key=lambda p: p.concurrency))
    notes = []
    for p, kind, q in drops:
        why = (f"its tok/s/user is below {q.describe()} at a higher concurrency" if kind == "rising" else
               f"it serves {fmt_num(p.replica_output_tok_s)} output tok/s, less than {q.describe()} "
               f"with {fmt_num(q.replica_output_tok_s)} at a lower concurrency")
        notes.append(Hinted(f"{curve.context.source}: ", REPAIRED, f" dropped {p.describe()}: {why}"))
    dropped = tuple(p for p, _, _ in drops)
    return replace(curve, points=tuple(kept), dropped=curve.dropped + dropped), tuple(notes)


def validate_curve(curve: Curve, *, repair: bool = False) -> tuple[Curve, tuple[str, ...]]:
    """The curve ready for sizing and what was done to it, or SizingError naming every bad point.

    Without `repair`, any problem fails. With it, dominated points are dropped (and reported in the
    returned notes); problems a repair cannot fix (no points, bad numbers, duplicates) still fail.
    """
    problems = _problems(curve)
    if not problems:
        return curve, ()
    if not repair or any(k not in _REPAIRABLE for k, _ in problems):
        raise SizingError([m for k, m in problems if not repair or k not in _REPAIRABLE])
    fixed, notes = repair_curve(curve)
    left = curve_problems(fixed)
    if left:  # the envelope of distinct finite points is always clean: an invariant checked every time
        raise SizingError(left)
    return fixed, notes
