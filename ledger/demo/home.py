"""What a ledger home holds, and wiping only that: the demo builds in an empty folder or in a ledger
home, and ``--force`` deletes the ledger's own entries (its SQLite DB and siblings, the facts it
wrote, the demo's input files), never a file or folder the ledger did not create."""
from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from ..errors import LedgerError
from ..outputs import DB_SIBLINGS, sqlite_path
from .month import KINDS

#: The tables every migrated ledger DB has (migration 0001), besides Alembic's own.
LEDGER_TABLES = frozenset({"alembic_version", "ingest_batch", "allocation_run"})
#: The input files the demo writes in ``<home>/demo/``.
DEMO_FILES = tuple(f"{k}.csv" for k in KINDS)
#: What ingest keeps in ``<home>/facts/`` besides the kind folders: its scratch folders, its lock and
#: the marker of the facts' layout (ledger.facts_layout).
FACT_SCRATCH = ("_staging", "_tmp")
FACT_LOCK = ".ingest.lock"
FACT_MARKER = ".layout"


class DemoError(LedgerError):
    """The demo cannot run here; the message says why and what to do."""


def display_path(path: Path) -> str:
    """A path as a person at this working directory would type it (relative when possible)."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def db_in_home(home: Path, url: str) -> Path | None:
    """The ledger's SQLite DB file when `url` is SQLite in `home` itself, else None."""
    db = sqlite_path(url)
    return db if db is not None and db.parent == home.resolve() else None


def is_ledger_db(path: Path) -> bool:
    """True when `path` is a database the ledger made: an SQLite file with the ledger's tables, or
    one with no table at all (an engine opened it before ``ledger init``; it holds nothing).
    Read only: the file is opened with ``mode=ro``."""
    if path.stat().st_size == 0:
        return True
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return not names or LEDGER_TABLES <= names


def _fact_kinds() -> tuple[str, ...]:
    from .. import facts

    return tuple(facts.KINDS)


def foreign_in_facts(folder: Path) -> list[str]:
    """Entries of a facts folder that the ledger does not write (paths relative to the folder):
    the ledger writes only ``<kind>/month=YYYY-MM/<batch>-<n>.parquet`` (``<kind>/<batch>-<n>.parquet``
    before its month partitions), its ``_staging`` and ``_tmp`` scratch folders, ``.ingest.lock``
    and ``.layout``."""
    kinds = _fact_kinds()
    foreign = []
    for p in sorted(folder.iterdir()):
        if (p.name in FACT_SCRATCH and p.is_dir() and not p.is_symlink()) or \
                (p.name in (FACT_LOCK, FACT_MARKER) and p.is_file()):
            continue
        if p.name in kinds and p.is_dir() and not p.is_symlink():
            for f in sorted(p.iterdir()):
                if _is_month(f):
                    foreign += [f"{p.name}/{f.name}/{g.name}" for g in sorted(f.iterdir()) if not _is_fact_file(g)]
                elif not _is_fact_file(f):
                    foreign.append(f"{p.name}/{f.name}")
            continue
        foreign.append(p.name + ("/" if p.is_dir() else ""))
    return foreign


def _is_fact_file(f: Path) -> bool:
    return f.suffix == ".parquet" and f.is_file() and not f.is_symlink()


def _is_month(f: Path) -> bool:
    """A month partition of a kind: ``month=YYYY-MM``, a real folder."""
    name = f.name
    return (name.startswith("month=") and len(name) == 13 and name[6:10].isdigit() and name[10] == "-"
            and name[11:].isdigit() and f.is_dir() and not f.is_symlink())


def _shown(names: list[str], n: int = 3) -> str:
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


def check_home(home: Path, url: str) -> None:
    """Raise DemoError unless `home` is missing, empty, or a ledger home: it holds the ledger's
    SQLite DB (:func:`is_ledger_db`) or a facts folder the ledger wrote, and nothing in either that
    the ledger did not make. Looks without changing anything."""
    if not home.exists():
        return
    where = display_path(home)
    if not home.is_dir():
        raise DemoError(f"{where} is a file, not a folder: give --home a new or empty folder, or a ledger home")
    entries = sorted(p.name + ("/" if p.is_dir() else "") for p in home.iterdir())
    if not entries:
        return
    db = db_in_home(home, url)
    has_db = db is not None and db.is_file()
    if has_db and not is_ledger_db(db):
        raise DemoError(f"{where}/{db.name} is not a ledger database, so {where} is not a ledger home: the demo "
                        "changes nothing there (--force included); give --home a new or empty folder")
    facts_dir = home / "facts"
    if facts_dir.exists():
        foreign = foreign_in_facts(facts_dir) if facts_dir.is_dir() else ["(a file, not a folder)"]
        if foreign:
            raise DemoError(f"{where}/facts holds entries the ledger did not write ({_shown(foreign)}), so {where} "
                            "is not a ledger home: the demo changes nothing there (--force included); move them "
                            "away, or give --home a new or empty folder")
    if not (has_db or facts_dir.is_dir()):
        raise DemoError(f"{where} is not a ledger home (it holds {_shown(entries)}, and no ledger database or "
                        "facts/ folder): the demo changes nothing there (--force included); give --home a new or "
                        "empty folder, or a ledger home")


def wipe_home(home: Path, url: str) -> list[Path]:
    """Delete the ledger in `home` and return what went: its SQLite DB (with -wal, -shm, -journal),
    the facts it wrote and the demo's input files; every other file and folder stays. Refuses
    (DemoError) a folder that is not a ledger home (:func:`check_home`), and a DB outside the home
    (LEDGER_DATABASE_URL): the demo never wipes a shared database."""
    from .. import store

    check_home(home, url)
    db = db_in_home(home, url)
    if db is None:
        raise DemoError("the ledger DB is not in the ledger home (LEDGER_DATABASE_URL points elsewhere): the demo "
                        "does not wipe it; point LEDGER_DATABASE_URL at an empty database, or unset it")
    store.dispose_engines()
    gone: list[Path] = []
    for suffix in DB_SIBLINGS:
        f = Path(str(db) + suffix)
        if f.is_file():
            f.unlink()
            gone.append(f)
    facts_dir = home / "facts"
    if facts_dir.is_dir():
        for kind in _fact_kinds():
            months = [m for m in sorted((facts_dir / kind).glob("month=*")) if _is_month(m)]
            for f in [*sorted((facts_dir / kind).glob("*.parquet")),
                      *(g for m in months for g in sorted(m.glob("*.parquet")))]:
                f.unlink()
                gone.append(f)
            for m in months:
                _rmdir_if_empty(m)
            _rmdir_if_empty(facts_dir / kind)
        for sub in FACT_SCRATCH:
            if (facts_dir / sub).is_dir():
                shutil.rmtree(facts_dir / sub)
                gone.append(facts_dir / sub)
        (facts_dir / FACT_LOCK).unlink(missing_ok=True)
        (facts_dir / FACT_MARKER).unlink(missing_ok=True)
        _rmdir_if_empty(facts_dir)
    demo_dir = home / "demo"
    for name in DEMO_FILES:
        f = demo_dir / name
        if f.is_file():
            f.unlink()
            gone.append(f)
    _rmdir_if_empty(demo_dir)
    return gone


def _rmdir_if_empty(folder: Path) -> None:
    if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
        folder.rmdir()
