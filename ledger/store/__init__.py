"""The ledger DB: engine and migrations (`db`), dimensions and price books (`catalog`), periods
(`periods`) and their sign-off (`signoff`); keyword-only functions over a session. The `init` and `dims` commands are in `cli`.

The names below are imported from their module when first used (``store.closings``, ``from
ledger.store import month_bounds``), so that a command that reads runs or batches does not import
the catalog (price books, SQLModel classes) to start (docs/scale.md, "Startup")."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    ".catalog": ("DIM_CHUNK", "DIM_MODELS", "LoadResult", "add_dim", "add_dim_rows", "add_dims", "books_from_store",
                 "default_index", "dim_names", "list_dims", "loaded_books", "read_dims_csv", "store_book"),
    ".db": ("StoreError", "alembic_config", "check_initialized", "dispose_engines", "engine", "init_store",
            "migrations_dir", "reading", "session", "writing"),
    ".periods": ("close_period", "closed_periods", "current_open_period", "month_bounds", "month_of", "months_between"),
    ".signoff": ("Closing", "closing", "closings", "sign_off", "signoff_problems"),
})


if TYPE_CHECKING:
    from .catalog import (DIM_CHUNK, DIM_MODELS, LoadResult, add_dim, add_dim_rows, add_dims, books_from_store,
                          default_index, dim_names, list_dims, loaded_books, read_dims_csv, store_book)
    from .db import (StoreError, alembic_config, check_initialized, dispose_engines, engine, init_store, migrations_dir,
                     reading, session, writing)
    from .periods import close_period, closed_periods, current_open_period, month_bounds, month_of, months_between
    from .signoff import Closing, closing, closings, sign_off, signoff_problems
