"""Reading a scenario's TOML (reprice, reroute, self-host), checked field by field: one problem per bad field, at its line."""
from __future__ import annotations

import hashlib
import math
import re
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path

from .. import tomlfile
from ..errors import Problem
from ..names import name_problem
from .records import ONE, WHERE_KEYS, Reroute, Scenario, ScenarioError, SelfHost, Where

_TOP = {"name", "description", "pricebooks", "prices_as_of", "reroute", "self_host"}
_CHANGE = {"where", "share", "input_ratio", "output_ratio", "description"}
_REROUTE = _CHANGE | {"to"}
_SELF_HOST = _CHANGE | {"pool", "device", "region", "purchase_option", "gpus_per_replica", "curve", "curve_format",
                        "curve_select", "anchors", "sla", "percentile", "failure_reserve", "util", "interpolate",
                        "ttft_ms", "model"}
_HEADER = re.compile(r"\s*\[\[\s*(reroute|self_host)\s*\]\]\s*(#.*)?")
_ANY_HEADER = re.compile(r"\s*\[")


def load_scenario(path: str | Path) -> Scenario:
    """Read and check the scenario file at `path`; ScenarioError with one problem per bad field."""
    p = Path(path)
    try:
        text = tomlfile.read_text(p)
    except OSError as e:
        raise ScenarioError(Problem(file=str(p), message=f"cannot read the scenario ({e.strerror or e})")) from None
    scenario, problems = parse_scenario(text, str(p), base_dir=p.parent)
    if problems:
        raise ScenarioError(problems)
    return scenario


def parse_scenario(text: str, path: str = "scenario.toml", *,
                   base_dir: str | Path = ".") -> tuple[Scenario | None, list[Problem]]:
    """The scenario of TOML `text` read from `path` (curve and book paths resolve against
    `base_dir`), and its problems, each a Problem at the line of the field it concerns."""
    try:
        doc = tomlfile.loads(text, path)
    except tomlfile.TomlError as e:
        return None, [Problem(file=path, line=e.line, column=e.column, message=e.message)]
    r = _Reader(path, text, Path(base_dir))
    for k in sorted(set(doc) - _TOP):
        r.err(None, k, f"unknown field (known: {', '.join(sorted(_TOP))})")
    name = r.name(doc, None, "name")
    books = r.books(doc)
    as_of = doc.get("prices_as_of")
    if as_of is not None and not (isinstance(as_of, datetime) and as_of.tzinfo is not None):
        r.err(None, "prices_as_of", f"{as_of!r} is not an instant with a UTC offset (2026-12-01T00:00:00Z)")
        as_of = None
    reroutes = tuple(x for i, t in enumerate(r.tables(doc, "reroute"), 1) if (x := r.reroute(t, i)))
    self_hosts = tuple(x for i, t in enumerate(r.tables(doc, "self_host"), 1) if (x := r.self_host(t, i)))
    pools = [s.pool for s in self_hosts]
    for i, pool in enumerate(pools, 1):
        if pool in pools[:i - 1]:
            r.err(("self_host", i), "pool", f"pool {pool!r} is self-hosted by an earlier [[self_host]]: give it once")
    if r.problems:
        return None, r.problems
    return Scenario(name=name, path=path, text=text, digest=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                    description=str(doc.get("description", "")), pricebooks=books,
                    prices_as_of=as_of, reroutes=reroutes, self_hosts=self_hosts), []


class _Reader:
    """Reads a scenario document, one problem per bad field, each at the line it is written on."""

    def __init__(self, path: str, text: str, base: Path):
        self.path, self.base, self.problems = path, base, []
        self.lines = text.split("\n")
        self.headers: dict[str, list[int]] = {"reroute": [], "self_host": []}
        for n, raw in enumerate(self.lines, 1):
            if m := _HEADER.fullmatch(raw.rstrip("\r")):
                self.headers[m.group(1)].append(n)

    # ---- where a field is written -------------------------------------------------------------

    def line_of(self, table: tuple[str, int] | None, key: str | None) -> int | None:
        """The line of `key` in the table (``("reroute", 2)``: the second ``[[reroute]]``; None: the
        top), else the table's header line."""
        if table is None:
            start, header = 0, None
        else:
            found = self.headers[table[0]]
            if not 0 < table[1] <= len(found):
                return None  # an inline array of tables: no header to point at
            header = found[table[1] - 1]
            start = header
        if key is not None:
            pattern = re.compile(rf"\s*{re.escape(key)}\s*=")
            for n in range(start + 1, len(self.lines) + 1):
                raw = self.lines[n - 1]
                if _ANY_HEADER.match(raw):
                    break
                if pattern.match(raw):
                    return n
        return header

    def err(self, table: tuple[str, int] | None, key: str | None, message: str) -> None:
        entry = "" if table is None else f"{table[0]}[{table[1]}]"
        entry = " ".join(x for x in (entry, key or "") if x)
        self.problems.append(Problem(file=self.path, line=self.line_of(table, (key or "").split(".")[0] or None),
                                     entry=entry or None, message=message))

    # ---- fields -------------------------------------------------------------------------------

    def name(self, t: dict, at, key: str, *, required: bool = True) -> str | None:
        if key not in t:
            if required:
                self.err(at, key, "missing required field")
            return None
        v = t[key]
        why = name_problem(v) if isinstance(v, str) else f"is {type(v).__name__}, not text"
        if why:
            self.err(at, key, f"{v!r} {why}")
            return None
        return v

    def number(self, t: dict, at, key: str, default, *, low: float, low_open: bool, high: float | None = None,
               whole: bool = False):
        if key not in t:
            return default
        v = t[key]
        ok = isinstance(v, int) if whole else isinstance(v, (int, float))
        if isinstance(v, bool) or not ok or not math.isfinite(v) or (v <= low if low_open else v < low) or \
                (high is not None and v > high):
            kind = "a whole number" if whole else "a number"
            bound = f"{'>' if low_open else '>='} {low:g}" + ("" if high is None else f" and <= {high:g}")
            self.err(at, key, f"{v!r} is not {kind} {bound}")
            return default
        return v

    def ratio(self, t: dict, at, key: str, *, high: Decimal | None = None) -> Decimal:
        """A decimal > 0 (a string or a number; a TOML float is read by its shortest text)."""
        if key not in t:
            return ONE
        v = t[key]
        try:
            if isinstance(v, bool) or not isinstance(v, (int, float, str)):
                raise InvalidOperation
            d = Decimal(str(v).strip())
        except InvalidOperation:
            d = None
        if d is None or not d.is_finite() or d <= 0 or (high is not None and d > high):
            self.err(at, key, f"{v!r} is not a decimal number > 0" + ("" if high is None else f" and <= {high}"))
            return ONE
        return d

    def books(self, doc: dict) -> tuple[str, ...]:
        v = doc.get("pricebooks", [])
        items = [v] if isinstance(v, str) else v
        if not isinstance(items, list) or not all(isinstance(x, str) and x.strip() for x in items):
            self.err(None, "pricebooks", "give a book file or folder (relative to the scenario's folder), or a "
                                         "loaded book as name@version, or a list of them")
            return ()
        out = []
        for x in items:
            path = self.base / x
            if path.exists():
                out.append(str(path))
            elif "@" in x and "/" not in x:
                out.append(x)
            else:
                self.err(None, "pricebooks", f"{x!r}: no such file or folder (paths are relative to the scenario's "
                                             "folder), nor a loaded book name@version")
        return tuple(out)

    def tables(self, doc: dict, key: str) -> list[dict]:
        v = doc.get(key, [])
        if not isinstance(v, list) or not all(isinstance(t, dict) for t in v):
            self.err(None, key, f"must be an array of tables ([[{key}]])")
            return []
        return v

    def unknown(self, t: dict, at, known: set[str]) -> None:
        for k in sorted(set(t) - known):
            self.err(at, k, f"unknown field (known: {', '.join(sorted(known))})")

    def where(self, t: dict, at) -> Where | None:
        w = t.get("where")
        if not isinstance(w, dict) or not w:
            self.err(at, "where", "give the requests to move, as where = { model = \"gpt-5\", product = \"chat\" } "
                                  f"(fields: {', '.join(WHERE_KEYS)})")
            return None
        fields = {}
        for k, v in w.items():
            if k not in WHERE_KEYS:
                self.err(at, f"where.{k}", f"unknown field (known: {', '.join(WHERE_KEYS)})")
                continue
            values = [v] if isinstance(v, str) else v
            if not isinstance(values, list) or not values or any(not isinstance(x, str) or name_problem(x)
                                                                 for x in values):
                self.err(at, f"where.{k}", f"{v!r} is not a name or a list of names")
                continue
            fields[k] = tuple(values)
        return Where(**fields) if len(fields) == len(w) else None

    def change(self, t: dict, at) -> dict:
        return {"label": f"{at[0]}[{at[1]}]", "where": self.where(t, at),
                "share": self.ratio(t, at, "share", high=ONE), "input_ratio": self.ratio(t, at, "input_ratio"),
                "output_ratio": self.ratio(t, at, "output_ratio"), "description": str(t.get("description", ""))}

    def reroute(self, t: dict, i: int) -> Reroute | None:
        at = ("reroute", i)
        before = len(self.problems)
        self.unknown(t, at, _REROUTE)
        common = self.change(t, at)
        to = t.get("to")
        target = {}
        if not isinstance(to, dict) or not to or set(to) - {"model", "provider"}:
            self.err(at, "to", "give where the requests go, as to = { model = \"gpt-5-mini\" } and/or "
                               "to = { provider = \"azure\" } (fields: model, provider)")
        else:
            target = {k: self.name(to, at, k, required=False) for k in ("model", "provider") if k in to}
        if len(self.problems) > before:
            return None
        return Reroute(**common, **target)

    def self_host(self, t: dict, i: int) -> SelfHost | None:
        at = ("self_host", i)
        before = len(self.problems)
        self.unknown(t, at, _SELF_HOST)
        common = self.change(t, at)
        names = {k: self.name(t, at, k) for k in ("pool", "device", "region", "purchase_option")}
        model = self.name(t, at, "model", required=False)
        gpr = self.number(t, at, "gpus_per_replica", None, low=1, low_open=False, whole=True)
        if gpr is None and "gpus_per_replica" not in t:
            self.err(at, "gpus_per_replica", "missing required field")
        sla = self.number(t, at, "sla", None, low=0, low_open=True)
        if "sla" not in t:
            self.err(at, "sla", "missing required field (output tok/s per user)")
        from ..sizing.traffic import PERCENTILES

        pct = t.get("percentile", "p95")
        if pct not in PERCENTILES:
            self.err(at, "percentile", f"{pct!r} is not one of {', '.join(PERCENTILES)}")
        reserve = self.number(t, at, "failure_reserve", 0, low=0, low_open=False, whole=True)
        util = self.number(t, at, "util", 0.7, low=0, low_open=True, high=1)
        ttft = self.number(t, at, "ttft_ms", None, low=0, low_open=True)
        interpolate = t.get("interpolate", False)
        if not isinstance(interpolate, bool):
            self.err(at, "interpolate", f"{interpolate!r} is not true or false")
        curve, ref = self.curve(t, at)
        if len(self.problems) > before:
            return None
        return SelfHost(**common, **names, model=model, gpus_per_replica=gpr, sla=float(sla), percentile=pct,
                        failure_reserve=reserve, util=float(util), ttft_ms=ttft, interpolate=interpolate,
                        curve=curve, curve_ref=ref)

    def curve(self, t: dict, at) -> tuple[object, str]:
        """The measured curve: ``curve = "file"`` (any curve ``ledger size`` reads, relative to the
        scenario's folder; `curve_format`, `curve_select`) or ``anchors = "c:tok_s_user,..."``."""
        from ..sizing import SizingError, load_curve, parse_anchors

        given = [k for k in ("curve", "anchors") if k in t]
        if len(given) != 1 or not all(isinstance(t[k], str) and t[k].strip() for k in given):
            self.err(at, given[0] if given else "curve", "give the measured curve as exactly one of "
                                                         "curve = \"file\" or anchors = \"c:tok_s_user,...\"")
            return None, ""
        try:
            if given == ["anchors"]:
                return parse_anchors(t["anchors"], source=f"anchors {t['anchors']}"), f"anchors {t['anchors']}"
            path = self.base / t["curve"]
            if not path.is_file():
                self.err(at, "curve", f"{t['curve']!r}: no such file (paths are relative to the scenario's folder)")
                return None, ""
            curve = load_curve(path, str(t.get("curve_format", "auto")), t.get("curve_select"))
            return curve, t["curve"]
        except SizingError as e:
            for p in e.problems:
                self.err(at, given[0], str(p))
            return None, ""

