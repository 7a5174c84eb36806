"""Where the ledger lives: LEDGER_HOME (facts, SQLite DB) and LEDGER_DATABASE_URL.

The environment is read here only, by a command (or a top-level API function such as
:func:`ledger.ingest.ingest` called without a home) that resolves the ledger once, as a :class:`Home`
(or its folder, :func:`ledger_home`), and passes it down: the stages below take the home as a
parameter and never read the environment, so that two homes can be used in one process."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Home:
    """One ledger, resolved. Fields:

    - `path`: the ledger home folder, absolute: the facts (``facts/``: month partitions, the ingest
      lock, the ingest's staging and scratch), DuckDB's spill folder (``tmp/``), the bill map
      (``bill-map.toml``), the demo's inputs, and by default the SQLite DB.
    - `database_url`: the SQLAlchemy URL of the ledger DB (``postgresql+psycopg://...`` for
      PostgreSQL, :func:`normalize_url`), by default ``sqlite:///<path>/ledger.db``.

    Build one with :meth:`at` (a folder, and a DB URL or SQLite in it) or :func:`home` (the
    environment's)."""

    path: Path
    database_url: str

    @classmethod
    def at(cls, path: str | Path, database_url: str | None = None) -> Home:
        """The ledger at the folder `path` (resolved), its DB at `database_url`, else SQLite in the folder."""
        folder = Path(path).resolve()
        url = normalize_url(database_url) if database_url else f"sqlite:///{folder / 'ledger.db'}"
        return cls(path=folder, database_url=url)

    @property
    def facts(self) -> Path:
        """``<path>/facts``: where the fact files of the home are."""
        return self.path / "facts"


def home(path: str | Path | None = None) -> Home:
    """The configured ledger: the folder `path`, else ``LEDGER_HOME``, else ``./.ledger``, with the DB of
    ``LEDGER_DATABASE_URL``, else SQLite in that folder. Read once by a command, then passed down."""
    return Home.at(path if path is not None else os.environ.get("LEDGER_HOME", ".ledger"),
                   os.environ.get("LEDGER_DATABASE_URL"))


def ledger_home() -> Path:
    """The ledger home (``LEDGER_HOME``, default ``./.ledger``); created on demand by callers that write."""
    return home().path


def database_url() -> str:
    """``LEDGER_DATABASE_URL`` (e.g. ``postgresql+psycopg://user@127.0.0.1:5432/db``), else SQLite in the home."""
    return home().database_url


def normalize_url(url: str) -> str:
    """Accept plain ``postgresql://`` URLs and use the psycopg 3 driver for them."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


def facts_dir() -> Path:
    """Where columnar usage facts live: one Parquet file per kind and committed batch."""
    return ledger_home() / "facts"


def project_root() -> Path:
    """Where the shipped migrations, price books and example plans are: the source checkout (an
    editable install, or running from the tree), else ``<prefix>/share/ledger`` where a wheel's
    data files go (``[tool.setuptools.data-files]``: the environment's prefix, or the user's base
    for ``pip install --user``)."""
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "migrations" / "env.py").is_file():
        return checkout
    import sysconfig

    schemes = [sysconfig.get_default_scheme(), f"{os.name}_user"]
    for scheme in schemes:
        try:
            shared = Path(sysconfig.get_path("data", scheme)) / "share" / "ledger"
        except KeyError:
            continue
        if (shared / "migrations" / "env.py").is_file():
            return shared
    return checkout
