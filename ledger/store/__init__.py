"""The ledger DB: engine and migrations (`db`), dimensions and price books (`catalog`), periods
(`periods`) and their sign-off (`signoff`); keyword-only functions over a session. The `init` and `dims` commands are in `cli`."""
from __future__ import annotations

from .catalog import (DIM_CHUNK, DIM_MODELS, LoadResult, add_dim, add_dim_rows, add_dims, books_from_store,
                      default_index, dim_names, list_dims, loaded_books, read_dims_csv, store_book)
from .db import (StoreError, alembic_config, check_initialized, dispose_engines, engine, init_store, migrations_dir,
                 session)
from .periods import close_period, closed_periods, current_open_period, month_bounds, month_of, months_between
from .signoff import Closing, closing, closings, sign_off, signoff_problems
