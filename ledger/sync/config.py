"""The sync file (``sync.toml``, docs/sync.md): the live sources `ledger sync` and `ledger otlp serve`
read, each a ``[[source]]`` table with its name, kind, where it is and how to read it, checked
whole before anything is read (every problem at once, one line each: file, entry, what is wrong).

Paths (a map, a folder, a token file) are relative to the sync file's folder. Durations are written
``90s``, ``15m``, ``1h``, ``2d``. A secret is never required in the file: a LiteLLM database URL may
be named by the environment variable holding it (``url_env``), and libpq's own ``PGPASSWORD`` or
``~/.pgpass`` apply as they do to any PostgreSQL client.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from .. import tomlfile
from ..errors import LedgerError, Problem
from ..names import name_problem

KINDS = ("litellm-postgres", "bill-folder", "otlp")
#: Keys each kind takes (besides name, kind, every, as_adjustment).
KEYS = {
    "litellm-postgres": ("url", "url_env", "map", "table", "lookback", "register_new"),
    "bill-folder": ("path", "settle"),
    "otlp": ("map", "register_new", "flush_every", "flush_spans", "max_pending_spans", "max_body_bytes",
             "token_file", "stop_grace"),
}
COMMON = ("name", "kind", "every", "as_adjustment")
_DURATION = re.compile(r"^([0-9]+)(s|m|h|d)$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DEFAULT_LOOKBACK = timedelta(hours=1)
DEFAULT_SETTLE = timedelta(minutes=1)
TABLE = "LiteLLM_SpendLogs"


class SyncConfigError(LedgerError):
    """The sync file cannot be used; nothing was read. `problems`: file, entry, what is wrong."""


@dataclass(frozen=True)
class Source:
    """One live source of the sync file. Fields:

    - `name`: its name (the key of its watermark; ``--source NAME``).
    - `kind`: ``litellm-postgres``, ``bill-folder`` or ``otlp``.
    - `every`: the schedule hint: `ledger sync` reads it when its watermark is at least this old
      (None: every run).
    - `as_adjustment`: rows of a closed month are booked into the open period, as ``--as-adjustment``
      books them (default true: a live source keeps delivering late rows).
    - `url`: litellm-postgres: the PostgreSQL URL of LiteLLM's database (from `url`, or the
      environment variable `url_env` names, read when the source is read).
    - `url_env`: the environment variable holding that URL, or None.
    - `map`: litellm-postgres and otlp: the adapter map (``ingest --source litellm|otel``).
    - `table`: litellm-postgres: the spend-log table (``LiteLLM_SpendLogs``; ``schema.table`` for one
      outside the search path).
    - `lookback`: litellm-postgres: how far before its watermark each read starts again, for rows
      LiteLLM writes late.
    - `register_new`: register unknown tenants and products (``--register-new``).
    - `path`: bill-folder: the folder of FOCUS files.
    - `settle`: bill-folder: a file changed more recently than this is left for the next run (a copy
      still being written).
    - `otlp`: otlp: the receiver's settings (flush_every seconds, flush_spans, max_pending_spans,
      max_body_bytes, token_file, stop_grace seconds), as written."""

    name: str
    kind: str
    every: timedelta | None = None
    as_adjustment: bool = True
    url: str | None = None
    url_env: str | None = None
    map: Path | None = None
    table: str = TABLE
    lookback: timedelta = DEFAULT_LOOKBACK
    register_new: bool = False
    path: Path | None = None
    settle: timedelta = DEFAULT_SETTLE
    otlp: dict = field(default_factory=dict)


def duration(text: object) -> timedelta | None:
    """``90s``, ``15m``, ``1h``, ``2d`` as a timedelta; None when `text` is not one."""
    m = _DURATION.match(text) if isinstance(text, str) else None
    return timedelta(seconds=int(m.group(1)) * _UNIT[m.group(2)]) if m else None


def load(path: str | Path) -> list[Source]:
    """The sources of the sync file at `path`, checked. SyncConfigError with every problem at once."""
    label = str(path)
    try:
        data = tomlfile.loads(tomlfile.read_text(path, label), label)
    except FileNotFoundError:
        raise SyncConfigError([Problem(file=label, message="no such sync file")]) from None
    except OSError as e:
        raise SyncConfigError([Problem(file=label, message=f"cannot read the sync file: {e.strerror or e}")]) from None
    except tomlfile.TomlError as e:
        raise SyncConfigError([Problem(file=label, message=e.message)]) from None
    return parse(data, label, Path(path).resolve().parent)


def parse(data: dict, label: str, base: Path) -> list[Source]:
    """The sources of a sync file's TOML document `data` (`label`: how problems name the file; `base`:
    the folder its relative paths start from)."""
    problems: list[Problem] = []
    for key in data:
        if key != "source":
            problems.append(Problem(file=label, entry=key, message="unknown key (expected: [[source]] tables)"))
    tables = data.get("source", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise SyncConfigError([Problem(file=label, entry="source", message="must be [[source]] tables")])
    if not tables:
        problems.append(Problem(file=label, message="no [[source]] table: nothing to sync"))
    out, seen = [], set()
    for i, t in enumerate(tables, start=1):
        src, found = _source(t, f"source[{i}]", label, base)
        problems += found
        if src is not None and src.name in seen:
            problems.append(Problem(file=label, entry=f"source[{i}] name", message=f"{src.name!r} names two sources"))
        if src is not None:
            seen.add(src.name)
            out.append(src)
    if problems:
        raise SyncConfigError(problems)
    return out


def _source(t: dict, at: str, label: str, base: Path) -> tuple[Source | None, list[Problem]]:
    """One ``[[source]]`` table checked: the Source, or None, and its problems."""
    problems: list[Problem] = []

    def bad(key: str, message: str) -> None:
        problems.append(Problem(file=label, entry=f"{at} {key}".strip(), message=message))

    name, kind = t.get("name"), t.get("kind")
    why = name_problem(name) if isinstance(name, str) else "is missing (every source has a name)"
    if why:
        bad("name", f"{name!r} {why}" if isinstance(name, str) else why)
        name = None
    if kind not in KINDS:
        bad("kind", f"{kind!r} is not one of {', '.join(KINDS)}" if kind is not None else
            f"is missing (one of {', '.join(KINDS)})")
        return None, problems
    at = f"{at} {name}" if name else at
    for key in t:
        if key not in COMMON + KEYS[kind]:
            bad(key, f"unknown key for a {kind} source (expected: {', '.join(COMMON + KEYS[kind])})")
    opts: dict = {}
    if "every" in t:
        opts["every"] = _duration(t["every"], "every", bad)
    for flag in ("as_adjustment", "register_new"):
        if flag in t:
            if isinstance(t[flag], bool):
                opts[flag] = t[flag]
            else:
                bad(flag, "must be true or false")
    opts.update(_litellm(t, base, bad) if kind == "litellm-postgres" else
                _folder(t, base, bad) if kind == "bill-folder" else _otlp(t, base, bad))
    if problems or name is None:
        return None, problems
    return Source(name=name, kind=kind, **{k: v for k, v in opts.items() if v is not None}), problems


def _duration(value: object, key: str, bad) -> timedelta | None:
    d = duration(value)
    if d is None:
        bad(key, f"{value!r} is not a duration (90s, 15m, 1h, 2d)")
    return d


def _file(t: dict, key: str, base: Path, bad, *, required: bool) -> Path | None:
    value = t.get(key)
    if value is None:
        if required:
            bad(key, "is missing")
        return None
    if not isinstance(value, str) or not value:
        bad(key, "must be a path (text)")
        return None
    return (base / value).resolve()


def _litellm(t: dict, base: Path, bad) -> dict:
    url, env = t.get("url"), t.get("url_env")
    if (url is None) == (env is None):
        bad("url", "give one of url (postgresql://user@host:5432/db) or url_env (the variable holding it)")
    for key, value in (("url", url), ("url_env", env), ("table", t.get("table", TABLE))):
        if value is not None and (not isinstance(value, str) or not value):
            bad(key, "must be text")
    table = t.get("table", TABLE)
    if isinstance(table, str) and table.count(".") > 1:
        bad("table", f"{table!r} is not a table or schema.table")
    return {"url": url, "url_env": env, "map": _file(t, "map", base, bad, required=True), "table": table,
            "lookback": _duration(t["lookback"], "lookback", bad) if "lookback" in t else None}


def _folder(t: dict, base: Path, bad) -> dict:
    return {"path": _file(t, "path", base, bad, required=True),
            "settle": _duration(t["settle"], "settle", bad) if "settle" in t else None}


def _otlp(t: dict, base: Path, bad) -> dict:
    settings: dict = {}
    for key in ("flush_every", "stop_grace"):
        if key in t:
            d = _duration(t[key], key, bad)
            settings[key] = d.total_seconds() if d else None
    for key in ("flush_spans", "max_pending_spans", "max_body_bytes"):
        if key in t:
            if isinstance(t[key], int) and not isinstance(t[key], bool) and t[key] > 0:
                settings[key] = t[key]
            else:
                bad(key, "must be a whole number above 0")
    if "token_file" in t:
        settings["token_file"] = _file(t, "token_file", base, bad, required=False)
    return {"map": _file(t, "map", base, bad, required=True), "otlp": settings}

