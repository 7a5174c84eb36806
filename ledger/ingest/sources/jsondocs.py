"""Values at map paths in the JSON documents of a source's rows, as DuckDB SQL (no per-row Python).

A *document* is JSON in a row: a JSON Lines record, a CSV cell or Parquet text column holding JSON, a
nested Parquet column (read as its JSON), and a string inside any of those that holds JSON itself
(LiteLLM's ``metadata`` written as text inside a JSON record: ``"metadata": "{\\"team\\": ...}"``). A
path goes through objects (``.name``) and lists (``[n]``); where it meets a string holding JSON, it
goes on inside that JSON, at any depth (up to :data:`MAX_TEXT_DEPTH` documents one inside another).

Per document and row, two parses: one ``json_extract`` of the list of all the leaf paths asked of
it, one ``json_keys`` of the list of the objects on the way (``$`` and every prefix). The keys tell
two things: a key written twice in one object (JSON allows it; DuckDB would take the first, and which
value counts would be a guess: refused, :meth:`Documents.problems`), and a prefix that is not an
object (a string that may hold JSON: that text is read as a document of its own, only in the rows
whose leaf was not found, so an export without JSON text pays nothing for it).

What a path gives (:meth:`Documents.text`): a string's text, a number's or true/false's JSON text,
NULL for JSON null or nothing there. An object or a list where a single value goes is refused. A
number is read exactly, from its digits as written (:meth:`Documents.decimal`, DuckDB's
``json_transform`` to DECIMAL, never through a double: ``0.99999999999999999999`` is not 1).
"""
from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field

from ...sqltext import literal as lit
from ..checks import DECIMAL_RE
from .mapfile import json_path

#: A document, JSON text inside it, and JSON text inside that: paths go no deeper into text.
MAX_TEXT_DEPTH = 3
Steps = list  # of str (a key) or int (a list index)


@dataclass(eq=False)
class Doc:
    """A JSON document of a row: its column `name` (the text; ``{name}_v`` the list of leaf values,
    ``{name}_k`` the list of key lists of the objects on the way), its `level` (1: over the file's
    columns; n: JSON text found in a level n-1 document) and where it comes from: `source` (SQL over
    the file's row), or the `outer` document and the JSON path `at` of the string holding it."""

    name: str
    level: int
    source: str | None = None
    outer: "Doc | None" = None
    at: str | None = None
    leaves: list[str] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)
    #: leaf values of `outer`: this document is read only in rows where one of them is missing
    needs: list[str] = field(default_factory=list)

    def leaf(self, steps: Steps) -> str:
        """SQL: the JSON value at `steps` (NULL when nothing is there)."""
        p = json_path(steps)
        if p not in self.leaves:
            self.leaves.append(p)
        return f"{self.name}_v[{self.leaves.index(p) + 1}]"

    def keys(self, steps: Steps) -> str:
        """SQL: the keys of the object at `steps` (an empty list for any other value, NULL for nothing)."""
        p = json_path(steps)
        if p not in self.parents:
            self.parents.append(p)
        return f"{self.name}_k[{self.parents.index(p) + 1}]"


@dataclass(frozen=True)
class Found:
    """One place a path's leaf may be: its JSON value `elem` (SQL), in document `doc` at `steps`."""

    elem: str
    doc: Doc
    steps: tuple


@dataclass
class Documents:
    """The documents asked of one source, and the problems its paths found (`flags`: path text ->
    (condition SQL, message SQL))."""

    roots: dict[str, Doc] = field(default_factory=dict)
    inner: dict[tuple[str, str], Doc] = field(default_factory=dict)
    flags: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: values asked (SQL over the documents' columns -> the column it is computed in, once per row)
    values: dict[str, str] = field(default_factory=dict)
    #: how many documents deep paths go (1: only the documents of the file's fields, no JSON text
    #: inside them; :meth:`deeper` then tells the rows where a deeper one could have held a value)
    depth: int = MAX_TEXT_DEPTH
    #: the places where a document deeper than `depth` could start: (its keys list SQL, the document's
    #: column, the JSON path of the place)
    below: list[tuple[str, str, str]] = field(default_factory=list)
    #: the column true when some key on the asked paths, in any document of the row, is written twice
    #: in its object: the gate of every path's own test (nearly always false: one test a row, not one a path)
    twice: str = field(default_factory=lambda: f"_twice_{uuid.uuid4().hex[:8]}")
    #: the tests the gate is made of: SQL true when a key on a path is written twice in its object
    #: (the key counted in the object's key list), one per (object, key) of every path asked
    repeats: dict[str, None] = field(default_factory=dict)

    def named(self, sql: str) -> str:
        """The column that holds `sql` (computed once per row, after the documents)."""
        if sql not in self.values:
            self.values[sql] = f"_val_{uuid.uuid4().hex[:8]}"
        return self.values[sql]

    def root(self, source: str) -> Doc:
        """The level-1 document whose text is the SQL `source` (one per distinct source)."""
        if source not in self.roots:
            self.roots[source] = Doc(name=_name(), level=1, source=source)
        return self.roots[source]

    def _inside(self, outer: Doc, steps: Steps) -> Doc:
        key = (outer.name, json_path(steps))
        if key not in self.inner:
            self.inner[key] = Doc(name=_name(), level=outer.level + 1, outer=outer, at=json_path(steps))
        return self.inner[key]

    def find(self, doc: Doc, steps: Steps) -> tuple[list[Found], list[tuple[str, str]]]:
        """The places the leaf at `steps` of `doc` may be (directly, or inside JSON text at a prefix),
        and the (keys SQL, key) of every object passed on the way (for duplicate keys)."""
        leaf = doc.leaf(steps)
        found = [Found(leaf, doc, tuple(steps))]
        dups = [(doc.keys(steps[:k]), s) for k, s in enumerate(steps) if isinstance(s, str)]
        if doc.level >= self.depth and doc.level < MAX_TEXT_DEPTH:  # not followed here: say where it would be
            for k in range(len(steps) - 1, 0, -1):
                place = (doc.keys(steps[:k]), doc.name, json_path(steps[:k]))
                if place not in self.below:
                    self.below.append(place)
        if doc.level < min(self.depth, MAX_TEXT_DEPTH):
            for k in range(len(steps) - 1, 0, -1):
                doc.keys(steps[:k])
                inner = self._inside(doc, steps[:k])
                if leaf not in inner.needs:
                    inner.needs.append(leaf)
                more, more_dups = self.find(inner, steps[k:])
                found += more
                dups += more_dups
        return found, dups

    def text(self, doc: Doc, steps: Steps, label: str) -> str:
        """SQL: the text at `steps` of `doc` (see the module), registering the path's problems under
        `label` (the path as the map writes it)."""
        found, dups = self.find(doc, steps)
        # the value where it is found, once per row (it is read up to eight times below; an element of
        # the documents' list, too, is copied out each time it is named)
        elem = self.named(found[0].elem if len(found) == 1 else f"coalesce({', '.join(f.elem for f in found)})")
        # a JSON number with a fraction or an exponent: its digits as written (DuckDB's own text of it
        # is a double's: 1000.0000000000000001 would read 1000.0), to 21 places
        exact = f"rtrim(rtrim(CAST({_exact(found, 'DECIMAL(38,21)')} AS VARCHAR), '0'), '.')"
        head = f"left({elem}, 1)"  # a number's first character: compared, not an IN list (DuckDB joins those)
        text = self.named(f"(CASE WHEN {elem} IS NULL THEN NULL "
                          f"WHEN starts_with({elem}, '\"') THEN json_extract_string({elem}, '$') "
                          f"WHEN {elem} = 'null' THEN NULL "
                          f"WHEN ({head} BETWEEN '0' AND '9' OR {head} = '-') AND (strpos({elem}, '.') > 0 OR strpos({elem}, 'e') > 0 "
                          f"OR strpos({elem}, 'E') > 0) THEN coalesce({exact}, CAST({elem} AS VARCHAR)) "
                          f"ELSE CAST({elem} AS VARCHAR) END)")
        self.plain(text, label)
        if dups:
            twice = [(_repeated(k, s), s) for k, s in dups]
            self.repeats.update(dict.fromkeys(c for c, _ in twice))
            which = " ".join(f"WHEN {c} THEN {lit(s)}" for c, s in twice)
            self.flags.setdefault(f"{label}\x00dup", (
                f"(CASE WHEN NOT coalesce({self.twice}, false) THEN false "
                f"ELSE coalesce({' OR '.join(c for c, _ in twice)}, false) END)",
                f"'the key ' || (CASE {which} END) || "
                f"{lit(' is written twice in one object: which value counts would be a guess')}"))
        return text

    def plain(self, text: str, label: str) -> None:
        """Register the problem of a value that is a JSON object or list where one value goes (an
        object in JSON, or text holding one: a CSV cell ``["chat"]`` mapped without ``[0]``)."""
        head = f"left(ltrim({text}), 1)"
        self.flags.setdefault(f"{label}\x00shape", (
            f"(CASE WHEN ascii({text}) <= 32 OR ascii({text}) IN (123, 91) "  # a superset of {, [ and blanks
            f"THEN {head} IN ('{{', '[') AND json_valid({text}) ELSE false END)",
            f"'is a JSON ' || (CASE {head} WHEN '{{' THEN 'object' ELSE 'list' END) || "
            f"{lit(', not a single value: give a path into it')}"))

    def decimal(self, doc: Doc, steps: Steps, label: str, scale: int) -> str:
        """SQL: the number at `steps` as DECIMAL(38,`scale`), read from its digits as written (a JSON
        number or a string holding one) and rounded to `scale` places; NULL when the value is not a
        number or does not fit."""
        text = self.text(doc, steps, label)
        found, _ = self.find(doc, steps)
        return self.named(f"(CASE WHEN regexp_full_match(trim({text}), {lit(DECIMAL_RE)}) "
                          f"THEN {_exact(found, f'DECIMAL(38,{scale})')} END)")

    def deeper(self) -> str:
        """SQL over the documents' columns: true for a row where a place on the asked paths, beyond
        :attr:`depth` documents, holds a string (that may hold JSON: a document these paths did not
        follow). In the other rows, the values, flags and messages are those of the paths followed
        to :data:`MAX_TEXT_DEPTH`, which read a deeper document only where such a string is
        (:meth:`select`). The keys of the place, parsed already, tell most rows apart (an object
        with keys, or nothing there); its JSON type is asked only where they are empty (a string,
        a number, or an empty object: LiteLLM's ``"usage_object": {}`` of a failed call)."""
        if not self.below:
            return "false"
        return "(" + " OR ".join(f"coalesce(CASE WHEN len({k}) = 0 THEN json_type({doc}, {lit(at)}) = 'VARCHAR' "
                                 "END, false)" for k, doc, at in self.below) + ")"

    def problems(self) -> list[tuple[str, str, str]]:
        """(condition SQL, path, message SQL) of every path asked."""
        return [(flag, key.split("\x00")[0], msg) for key, (flag, msg) in self.flags.items()]

    def select(self, relation: str) -> str:
        """`relation` with the documents' columns: level by level, each document's text, then its two
        lists (one parse each per row)."""
        docs = list(self.roots.values()) + list(self.inner.values())
        rel = relation
        for level in sorted({d.level for d in docs}):
            here = [d for d in docs if d.level == level and d.leaves]
            if not here:
                continue
            texts = []
            for d in here:
                if d.outer is None:
                    texts.append(f"{d.source} AS {d.name}")
                else:
                    need = " OR ".join(f"{e} IS NULL" for e in d.needs)
                    texts.append(f"(CASE WHEN len({d.outer.keys(_steps_of(d.at))}) = 0 AND ({need}) "
                                 f"THEN json_extract({d.outer.name}, {lit(d.at)}) END) AS {d.name}_s")
            rel = f"SELECT *, {', '.join(texts)} FROM ({rel})"
            inner = [d for d in here if d.outer is not None]
            if inner:
                parsed = ", ".join(f"(CASE WHEN starts_with({d.name}_s, '\"') THEN TRY_CAST(json_extract_string("
                                   f"{d.name}_s, '$') AS JSON) END) AS {d.name}" for d in inner)
                rel = f"SELECT *, {parsed} FROM ({rel})"
            lists = []
            for d in here:
                lists.append(f"json_extract({d.name}, [{', '.join(lit(p) for p in d.leaves)}]) AS {d.name}_v")
                lists.append(f"json_keys({d.name}, [{', '.join(lit(p) for p in d.parents)}]) AS {d.name}_k" if d.parents
                             else f"CAST(NULL AS VARCHAR[][]) AS {d.name}_k")
            rel = f"SELECT *, {', '.join(lists)} FROM ({rel})"
        if self.repeats:
            # each key on the paths counted in its object's keys: a scan of a few keys each, cheaper in
            # all than a test of every object for any key twice (``list_unique``, a hash set a row and
            # object: about three times the time, docs/scale.md), and only these keys can be refused
            anywhere = " OR ".join(f"coalesce({c}, false)" for c in self.repeats)
            rel = f"SELECT *, ({anywhere}) AS {self.twice} FROM ({rel})"
        # the values, layer by layer: those over the documents first, then those over other values (a
        # decimal over its text, a sum over its parts), each in the layer after the last value it reads:
        # a column of the SELECT it is named in would be computed again where it is used
        depth: dict[str, int] = {}
        for sql, name in self.values.items():  # in the order named: a value names only those before it
            depth[name] = 1 + max((depth[v] for v in set(_VAL.findall(sql)) if v in depth), default=0)
        for level in sorted(set(depth.values())):
            here = [f"{sql} AS {name}" for sql, name in self.values.items() if depth[name] == level]
            rel = f"SELECT *, {', '.join(here)} FROM ({rel})"
        return rel


_VAL = re.compile(r"_val_[0-9a-f]{8}")


def _repeated(keys: str, key: str) -> str:
    """SQL: whether `key` is written more than once among `keys` (an object's key list, ``NAME_k[j]``)."""
    return f"len(list_filter({keys}, lambda x: x = {lit(key)})) > 1"


def _name() -> str:
    return f"_doc_{uuid.uuid4().hex[:8]}"


def _steps_of(path: str) -> Steps:
    """The steps of a JSON path written by :func:`mapfile.json_path` (its inverse)."""
    return [name if name else int(index) for name, index in re.findall(r'\."([^"]*)"|\[([0-9]+)\]', path)]


def _exact(found: list[Found], typ: str) -> str:
    """SQL: the value of the place where the leaf is, read as `typ` by :func:`_transform`."""
    return "(CASE " + " ".join(f"WHEN {f.elem} IS NOT NULL THEN {_transform(f.doc.name, list(f.steps), typ)}"
                               for f in found) + " END)"


def _transform(doc: str, steps: Steps, typ: str) -> str:
    """SQL: ``json_transform`` of `doc` reading the value at `steps` as `typ` (DECIMAL: exact digits)."""
    shape: object = typ
    for s in reversed(steps):
        shape = {s: shape} if isinstance(s, str) else [shape]
    out = f"json_transform({doc}, {lit(json.dumps(shape))})"
    for s in steps:
        out = f"struct_extract({out}, {lit(s)})" if isinstance(s, str) else f"{out}[{s + 1}]"
    return out
