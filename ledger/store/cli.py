"""Commands of the ledger DB: `init` (create or upgrade it) and `dims` (tenants and products)."""
from __future__ import annotations

from pathlib import Path

import typer
from rich.text import Text

from .. import config
from ..console import Ledger, fail, one_format, out, plural, print_csv, print_json
from ..formats import count
from ..tables import FitTable
from .. import store  # its names imported when a command uses them: `--help` needs none (ledger.store)

dims_app = typer.Typer(help="Tenants and products (controlled dimensions).", no_args_is_help=True)


def init() -> None:
    """Create or upgrade the ledger store (Alembic upgrade head). Running it twice changes nothing."""
    try:
        before, after = store.init_store()
    except Exception as e:
        fail(f"cannot initialize the ledger DB: {e}")
    config.facts_dir().mkdir(parents=True, exist_ok=True)
    where = config.database_url()
    where = where.split("@")[-1] if "@" in where else where
    if before == after:
        out.print(f"ledger store at {where} is up to date (revision {after})")
    else:
        out.print(f"ledger store at {where} upgraded from {before or 'empty'} to revision {after}")


def _dim_kind(kind: str) -> str:
    k = kind.rstrip("s")
    if k not in store.DIM_MODELS:
        fail(f"kind {kind!r}: expected tenant or product")
    return k


@dims_app.command("add")
def dims_add(kind: str = typer.Argument(..., help="tenant or product"),
             name: str = typer.Argument(..., help="the name rows and reports use, e.g. acme"),
             display_name: str = typer.Option("", "--display-name", help="a longer name for people, e.g. "
                                                                         "\"Acme Corp\""),
             owner: str = typer.Option("", "--owner", help="who answers for it, e.g. finance")) -> None:
    """Register a tenant or product. A name must follow the names rule (at most 200 characters, no
    control character, no white space around it); display name and owner at most 200 characters
    and no control character. A refused name changes nothing."""
    k = _dim_kind(kind)
    with Ledger() as s:
        added = store.add_dim(s, kind=k, name=name, display_name=display_name, owner=owner)
    out.print(f"{k} {name} {'added' if added else 'already registered'}", markup=False)


@dims_app.command("list")
def dims_list(kind: str = typer.Argument(..., help="tenant or product"),
              as_json: bool = typer.Option(False, "--json", help="print them as JSON"),
              as_csv: bool = typer.Option(False, "--csv", help="print them as CSV (name, display_name, owner: the "
                                                               "columns `dims import` reads)")) -> None:
    """List tenants or products."""
    one_format(as_json, as_csv)
    k = _dim_kind(kind)
    with Ledger() as s:
        rows = store.list_dims(s, kind=k)
    data = [{"name": r.name, "display_name": r.display_name, "owner": r.owner} for r in rows]
    if as_json:
        print_json(data)
        return
    if as_csv:
        print_csv(data, header=["name", "display_name", "owner"])
        return
    t = FitTable(title=f"{k}s ({count(len(data))})")
    t.add_column("name", numeric=False, fold=True)  # a name may be one long word: folded, never cut
    t.add_column("display name", numeric=False)
    t.add_column("owner", numeric=False, fold=True)  # an e-mail address, say
    for d in data:
        t.add_row(Text(d["name"]), Text(d["display_name"]), Text(d["owner"]))  # names are never markup
    out.print(t)


@dims_app.command("import")
def dims_import(kind: str = typer.Argument(..., help="tenant or product"),
                file: Path = typer.Argument(..., help="CSV with columns name, display_name, owner")) -> None:
    """Register tenants or products from a CSV (all or nothing: one line per problem, file, line and
    column, and nothing registered when there is any)."""
    k = _dim_kind(kind)
    rows, errors = store.read_dims_csv(file)
    if errors:
        fail(errors)
    with Ledger() as s:
        added = store.add_dim_rows(s, kind=k, rows=rows)
    out.print(f"{file}: {plural(len(rows), k)} read, {added:,} added, {len(rows) - added:,} already registered",
              markup=False)


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.add_typer(dims_app, name="dims")
