"""The ledger DB: engine and migrations (`db`), dimensions and price books (`catalog`), periods
(`periods`) and their sign-off (`signoff`); keyword-only functions over a session. The `init` and `dims` commands are in `cli`.

The names below are imported from their module when first used (``store.closings``, ``from
ledger.store import month_bounds``), so that a command that reads runs or batches does not import
the catalog (price books, SQLModel classes) to start (docs/scale.md, "Startup")."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

#: name -> the module of this package that defines it
_WHERE = {
    **dict.fromkeys(("DIM_CHUNK", "DIM_MODELS", "LoadResult", "add_dim", "add_dim_rows", "add_dims", "books_from_store",
                     "default_index", "dim_names", "list_dims", "loaded_books", "read_dims_csv", "store_book"),
                    "catalog"),
    **dict.fromkeys(("StoreError", "alembic_config", "check_initialized", "dispose_engines", "engine", "init_store",
                     "migrations_dir", "reading", "session", "writing"), "db"),
    **dict.fromkeys(("close_period", "closed_periods", "current_open_period", "month_bounds", "month_of",
                     "months_between"), "periods"),
    **dict.fromkeys(("Closing", "closing", "closings", "sign_off", "signoff_problems"), "signoff"),
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


if TYPE_CHECKING:
    from .catalog import (DIM_CHUNK, DIM_MODELS, LoadResult, add_dim, add_dim_rows, add_dims, books_from_store,
                          default_index, dim_names, list_dims, loaded_books, read_dims_csv, store_book)
    from .db import (StoreError, alembic_config, check_initialized, dispose_engines, engine, init_store, migrations_dir,
                     reading, session, writing)
    from .periods import close_period, closed_periods, current_open_period, month_bounds, month_of, months_between
    from .signoff import Closing, closing, closings, sign_off, signoff_problems
