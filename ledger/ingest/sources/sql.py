"""SQL pieces the adapters share: paths written in code, whole numbers kept as text, sums of token
parts, durations between two instants. Every value stays text until the plain ingest judges it, so
a bad source value is reported as it was written, never turned into a number here."""
from __future__ import annotations

from ...sqltext import literal as lit
from .mapfile import FieldPath, parse_path


def path(text: str) -> FieldPath:
    """A path written in an adapter's code (always valid)."""
    p = parse_path(text)
    assert p is not None, text
    return p


def whole(text: str, once=None) -> str:
    """SQL: a whole number's text (``12``, ``12.0``) as HUGEINT; NULL for anything else (``12.5``, ``x``).
    With `once` (``Documents.named``: the column computing SQL once per row), that column."""
    t = f"trim(CAST({text} AS VARCHAR))"
    sql = f"(CASE WHEN regexp_full_match({t}, '[+-]?[0-9]+(\\.0*)?') THEN TRY_CAST(split_part({t}, '.', 1) AS HUGEINT) END)"
    return once(sql) if once else sql


def plus(*parts: str, once=None) -> str:
    """SQL: the text of the sum of `parts` (a blank part counts 0, but the first must be given); when
    a part is not a whole number, that part's own text, for the ingest to judge and report. With
    `once`, each part's number is a column computed once per row (:func:`whole`)."""
    first, rest = parts[0], parts[1:]
    bad = " ".join(f"WHEN nullif({p}, '') IS NOT NULL AND {whole(p, once)} IS NULL THEN {p}" for p in rest)
    total = " + ".join([whole(first, once)] + [f"coalesce({whole(p, once)}, 0)" for p in rest])
    return (f"(CASE WHEN {whole(first, once)} IS NULL THEN {first} {bad} ELSE CAST({total} AS VARCHAR) END)")


def first_of(*texts: str) -> str:
    """SQL: the first of `texts` that is not NULL or blank (NULL when none is)."""
    return f"coalesce({', '.join(f'nullif({t}, {chr(39)}{chr(39)})' for t in texts)})"


def millis(start: str, end: str, once=None) -> str:
    """SQL: milliseconds from instant `start` to instant `end` (instants as ISO text with an offset);
    NULL when either is missing or not an instant. With `once` (``Documents.named``), each instant
    is parsed once per row (a start shared by two durations: once)."""
    a, b = f"TRY_CAST({start} AS TIMESTAMPTZ)", f"TRY_CAST({end} AS TIMESTAMPTZ)"
    if once:
        a, b = once(a), once(b)
    return f"CAST((epoch_us({b}) - epoch_us({a})) / 1000.0 AS DOUBLE)"


def cost(src, p: FieldPath) -> str:
    """SQL: a cost at path `p` (a JSON or CSV number, a DOUBLE PRECISION column: LiteLLM's ``spend``,
    Langfuse's ``total_cost``) as DECIMAL(38,12) text, rounded to 12 places here, explicitly
    (docs/adapters.md), from its digits as written: never through a double. A value that is not a
    number, or too large for 12 places, is kept as written for the ingest to refuse."""
    text, dec = src.value(p), src.decimal(p, 12)
    return f"(CASE WHEN {dec} IS NOT NULL THEN CAST({dec} AS VARCHAR) ELSE nullif({text}, '') END)"


def agreed(places: list[tuple[str, str]], name: str, out: dict[str, tuple[str, str]], what: str,
           key=None) -> str:
    """SQL: the value that `places` (``(SQL text, source field)``, where a source writes the same thing
    more than once, e.g. LiteLLM's ``cache_creation_input_tokens`` and
    ``prompt_tokens_details.cache_creation_tokens``) hold: the first one given, counted once. Two that
    hold different values (compared as whole numbers, or by `key`: SQL of a text) are a problem of the
    row (hidden columns ``_NAME_differ`` and its message ``_NAME_differ_said`` in `out`, for the
    adapter's :func:`disagreement` check): which one is right would be a guess."""
    texts = [t for t, _ in places]
    if len(places) < 2:
        out[f"_{name}_differ"] = ("false", places[0][1])
        out[f"_{name}_differ_said"] = ("CAST(NULL AS VARCHAR)", places[0][1])
        return texts[0]
    key = key or whole
    pairs = [(a, b) for i, a in enumerate(texts) for b in texts[i + 1:]]
    differ = "(" + " OR ".join(f"(CASE WHEN {a} IS NULL OR {b} IS NULL THEN false ELSE coalesce({key(a)} <> {key(b)}, "
                               "false) END)" for a, b in pairs) + ")"
    given = ", ".join(f"(CASE WHEN nullif({t}, '') IS NOT NULL THEN {lit(f)} || ' ' || {t} END)" for t, f in places)
    said = f"concat_ws(' and ', {given}) || {lit(f' disagree: the same {what} cannot be two values')}"
    out[f"_{name}_differ"] = (differ, places[0][1])
    out[f"_{name}_differ_said"] = (f"(CASE WHEN _{name}_differ THEN {said} END)", places[0][1])  # the flag, by name
    return first_of(*texts)


def disagreement(name: str, field: str) -> tuple[str, str, str]:
    """The check of :func:`agreed`'s hidden columns for `name`, told on `field`."""
    return (f"_{name}_differ", field, f"_{name}_differ_said")


def mapped(src, m, built_in: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """The ledger columns an adapter gives `built_in` (``{column: (SQL, source field)}``), with the
    map's own columns over them (a map column with a default takes it when the row has nothing there),
    and the map's ``[pool]`` rule: a row whose `from` value is listed was served by that pool and has
    no provider."""
    out = {c: v for c, v in built_in.items() if c not in m.columns}
    for col, cm in m.columns.items():
        v = src.value(cm.path)
        out[col] = (f"coalesce(nullif({v}, ''), {lit(cm.default)})" if cm.default is not None else v, cm.path.text)
    if m.pool_from is not None and m.pool_values:
        key = src.value(m.pool_from)
        cases = " ".join(f"WHEN {lit(k)} THEN {lit(v)}" for k, v in m.pool_values.items())
        out["pool"] = (f"(CASE {key} {cases} END)", m.pool_from.text)
        if "provider" in out:
            prov, pf = out["provider"]
            listed = ", ".join(lit(k) for k in m.pool_values)
            out["provider"] = (f"(CASE WHEN ({key}) IN ({listed}) THEN NULL ELSE {prov} END)", pf)
    return out
