"""Alembic environment: targets SQLModel.metadata of ledger.models; the URL comes from the ledger config."""
from alembic import context
from sqlalchemy import engine_from_config, pool
from sqlmodel import SQLModel

from ledger import config as ledger_config
from ledger import models  # noqa: F401  (registers the tables on SQLModel.metadata)

cfg = context.config
target_metadata = SQLModel.metadata


def _url() -> str:
    return cfg.get_main_option("sqlalchemy.url") or ledger_config.database_url()


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True,
                      render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = cfg.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = engine_from_config({"sqlalchemy.url": _url()}, prefix="sqlalchemy.", poolclass=pool.NullPool)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
