"""The map file of `ledger ingest --source SOURCE --map MAP.toml` (TOML): which source field gives each ledger column.

```toml
naive_times = "UTC"        # optional: instants written without an offset are in this zone
[columns]                  # ledger column = source path, or a table with path and default
tenant = "metadata.user_api_key_team_alias"
product = { path = "request_tags[0]", default = "untagged" }
[pool]                     # rows whose `from` value is listed were served by that pool
from = "api_base"
values = { "http://vllm-h100:8000/v1" = "h100-chat" }
```

A path names a source field, then goes into it: ``.name`` into an object, ``[n]`` into a list
(from 0). A field holding JSON as text (a CSV column) is parsed as JSON. A map that is not valid is
an :class:`IngestError` naming the map file and the key, before any source row is read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ... import tomlfile
from ...errors import Problem
from ..records import IngestError

_SEGMENT = r"[A-Za-z_][A-Za-z0-9_\-]*"
PATH_RE = re.compile(rf"^({_SEGMENT})((?:\.{_SEGMENT}|\[[0-9]+\])*)$")


@dataclass(frozen=True)
class FieldPath:
    """A path into a source record: its `root` field and the `rest` (``.a[0]``), as written in `text`."""

    text: str
    root: str
    rest: str

    def json_path(self, with_root: bool = False) -> str:
        """The DuckDB JSON path of the part after the root (or of the whole path, `with_root`)."""
        return json_path(self.segments(with_root))

    def segments(self, with_root: bool = False) -> list[str | int]:
        """The steps of the path after the root (or of the whole path, `with_root`): a key's name, or a
        list index (an int)."""
        parts = re.findall(rf"\.({_SEGMENT})|\[([0-9]+)\]", ("." + self.root if with_root else "") + self.rest)
        return [name if name else int(index) for name, index in parts]


def json_path(steps: list[str | int]) -> str:
    """The DuckDB JSON path of `steps` (``$."a"[0]``; ``$`` for none)."""
    return "$" + "".join(f'."{s}"' if isinstance(s, str) else f"[{s}]" for s in steps)


def parse_path(text: str) -> FieldPath | None:
    """The path written as `text`, or None when it is not a path."""
    m = PATH_RE.match(text.strip()) if isinstance(text, str) else None
    return FieldPath(text.strip(), m.group(1), m.group(2)) if m else None


@dataclass(frozen=True)
class ColumnMap:
    """A ledger column's source: its `path` and the `default` taken when the row has no value there."""

    path: FieldPath
    default: str | None = None


@dataclass(frozen=True)
class SourceMap:
    """A parsed map: `columns`, the pool rule (`pool_from`, `pool_values`), `naive_times` and `extra`
    (the source's own tables, e.g. ``[tokens]``, checked by its adapter)."""

    columns: dict[str, ColumnMap]
    pool_from: FieldPath | None = None
    pool_values: dict[str, str] = field(default_factory=dict)
    naive_times: str | None = None
    extra: dict[str, dict] = field(default_factory=dict)


def load(path: Path, allowed: set[str], tables: tuple[str, ...] = (), must: tuple[str, ...] = ()) -> SourceMap:
    """Read and check the map at `path`: `allowed` are the ledger columns the map may set, `must` those
    it must set (the source has no field of its own for them), `tables` the source's own tables besides
    ``[columns]`` and ``[pool]``. Raises IngestError (file, key, what), every problem at once."""
    label = str(path)
    try:
        data = tomlfile.loads(tomlfile.read_text(path, label), label)
    except FileNotFoundError:
        raise IngestError([Problem(file=label, message="no such map file")]) from None
    except OSError as e:
        raise IngestError([Problem(file=label, message=f"cannot read the map: {e.strerror or e}")]) from None
    except tomlfile.TomlError as e:  # not UTF-8, a syntax error, values nested too deep: line and column
        raise IngestError([Problem(file=label, message=e.message)]) from None
    problems: list[Problem] = []

    def bad(key: str, message: str) -> None:
        problems.append(Problem(file=label, entry=key, message=message))

    for key in data:
        if key not in ("columns", "pool", "naive_times", *tables):
            bad(key, f"unknown key (expected: columns, pool, naive_times{''.join(', ' + t for t in tables)})")
    columns: dict[str, ColumnMap] = {}
    for col, spec in (data.get("columns") or {}).items():
        key = f"columns.{col}"
        if col not in allowed:
            bad(key, f"not a column this source's map may set (one of {', '.join(sorted(allowed))})")
            continue
        default = None
        if isinstance(spec, dict):
            unknown = set(spec) - {"path", "default"}
            if unknown or "path" not in spec:
                bad(key, "a table needs `path` and may have `default`, nothing else")
                continue
            default, spec = spec.get("default"), spec["path"]
            if default is not None and not isinstance(default, str):
                bad(key, f"default {default!r} must be text (write it in quotes)")
                continue
        p = parse_path(spec) if isinstance(spec, str) else None
        if p is None:
            bad(key, f"{spec!r} is not a path (a field name, then .name into objects or [n] into lists)")
            continue
        columns[col] = ColumnMap(p, default)
    pool = data.get("pool") or {}
    pool_from, values = None, {}
    if pool:
        unknown = set(pool) - {"from", "values"}
        if unknown:
            bad("pool", f"unknown key {sorted(unknown)[0]!r} (expected: from, values)")
        pool_from = parse_path(pool.get("from", ""))
        if pool_from is None:
            bad("pool.from", f"{pool.get('from')!r} is not a path")
        values = pool.get("values") or {}
        if not isinstance(values, dict) or not all(isinstance(v, str) and v for v in values.values()):
            bad("pool.values", "must map source values to pool names (text)")
            values = {}
    naive = data.get("naive_times")
    if naive is not None and naive != "UTC":
        bad("naive_times", f"{naive!r}: only \"UTC\" is supported (the zone naive instants are written in)")
    for col in must:
        if col not in columns and not any(p.entry == f"columns.{col}" for p in problems):
            bad(f"columns.{col}", "required ledger column is not mapped (give it a path, or a table with a default)")
    extra = {t: data.get(t) or {} for t in tables}
    if problems:
        raise IngestError(problems)
    return SourceMap(columns=columns, pool_from=pool_from, pool_values=dict(values), naive_times=naive, extra=extra)
