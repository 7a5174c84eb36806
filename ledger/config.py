"""Where the ledger lives: LEDGER_HOME (facts, SQLite DB) and LEDGER_DATABASE_URL."""
from __future__ import annotations

import os
from pathlib import Path


def ledger_home() -> Path:
    """The ledger home (``LEDGER_HOME``, default ``./.ledger``); created on demand by callers that write."""
    return Path(os.environ.get("LEDGER_HOME", ".ledger")).resolve()


def database_url() -> str:
    """``LEDGER_DATABASE_URL`` (e.g. ``postgresql+psycopg://user@127.0.0.1:5432/db``), else SQLite in the home."""
    url = os.environ.get("LEDGER_DATABASE_URL")
    if url:
        return normalize_url(url)
    return f"sqlite:///{ledger_home() / 'ledger.db'}"


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
