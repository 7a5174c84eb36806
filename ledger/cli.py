"""The `ledger` command line: parsing and printing only; the work is done by ledger.* functions."""
from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from . import __version__, config, store
from .pricebook import PriceIndex, default_paths, load_books

app = typer.Typer(help="The inference unit-economics ledger: what LLM inference really costs, and who it costs for.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
dims_app = typer.Typer(help="Tenants and products (controlled dimensions).", no_args_is_help=True)
pricebook_app = typer.Typer(help="Dated price books: check, load, show.", no_args_is_help=True)
app.add_typer(dims_app, name="dims")
app.add_typer(pricebook_app, name="pricebook")

out = Console(soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(lines: list[str] | str, code: int = 1) -> None:
    """Print one line per problem to stderr and exit non-zero."""
    for line in [lines] if isinstance(lines, str) else lines:
        err.print(str(line), markup=False)
    raise typer.Exit(code)


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def print_csv(rows: list[dict]) -> None:
    """Rows as CSV on stdout; text cells are neutralized against formula injection."""
    import csv

    from .export.safe import safe_text

    if not rows:
        return
    w = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: v if isinstance(v, (int, float)) or v is None else safe_text(v) for k, v in r.items()})


def parse_instant(text: str, what: str = "time") -> datetime:
    """An ISO 8601 instant with an offset (a bare date is taken as 00:00 UTC)."""
    try:
        d = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        fail(f"{what}: {text!r} is not an ISO 8601 timestamp such as 2026-10-15T00:00:00Z")
    if d.tzinfo is None:
        if len(text) == 10:
            return d.replace(tzinfo=timezone.utc)
        fail(f"{what}: {text!r} has no UTC offset (add Z or +00:00)")
    return d.astimezone(timezone.utc)


def open_session():
    """A session on an initialized ledger, or a clear error."""
    s_cm = store.session()
    s = s_cm.__enter__()
    try:
        store.check_initialized(s)
    except store.StoreError as e:
        s_cm.__exit__(None, None, None)
        fail(str(e))
    except Exception as e:  # cannot connect, etc.
        s_cm.__exit__(None, None, None)
        fail(f"cannot open the ledger DB ({config.database_url().split('@')[-1]}): {e}")
    return s_cm, s


class Ledger:
    """`with Ledger() as s:` a checked session that commits on success."""

    def __enter__(self):
        self._cm, s = open_session()
        return s

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


@app.command()
def version() -> None:
    """Print the ledger version."""
    out.print(__version__)


@app.command()
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


# ---- dims ---------------------------------------------------------------------------------------

def _dim_kind(kind: str) -> str:
    k = kind.rstrip("s")
    if k not in store.DIM_MODELS:
        fail(f"kind {kind!r}: expected tenant or product")
    return k


@dims_app.command("add")
def dims_add(kind: str = typer.Argument(..., help="tenant or product"),
             name: str = typer.Argument(...),
             display_name: str = typer.Option("", "--display-name"),
             owner: str = typer.Option("", "--owner")) -> None:
    """Register a tenant or product."""
    k = _dim_kind(kind)
    with Ledger() as s:
        try:
            added = store.add_dim(s, kind=k, name=name, display_name=display_name, owner=owner)
        except store.StoreError as e:
            fail(str(e))
    out.print(f"{k} {name} {'added' if added else 'already registered'}")


@dims_app.command("list")
def dims_list(kind: str = typer.Argument(..., help="tenant or product"),
              as_json: bool = typer.Option(False, "--json")) -> None:
    """List tenants or products."""
    k = _dim_kind(kind)
    with Ledger() as s:
        rows = store.list_dims(s, kind=k)
    data = [{"name": r.name, "display_name": r.display_name, "owner": r.owner} for r in rows]
    if as_json:
        print_json(data)
        return
    t = Table("name", "display name", "owner", title=f"{k}s ({len(data)})")
    for d in data:
        t.add_row(d["name"], d["display_name"], d["owner"])
    out.print(t)


@dims_app.command("import")
def dims_import(kind: str = typer.Argument(..., help="tenant or product"),
                file: Path = typer.Argument(..., help="CSV with columns name, display_name, owner")) -> None:
    """Register tenants or products from a CSV (all or nothing)."""
    k = _dim_kind(kind)
    rows, errors = store.read_dims_csv(file)
    if errors:
        fail(errors)
    with Ledger() as s:
        added = sum(store.add_dim(s, kind=k, name=r["name"], display_name=r["display_name"], owner=r["owner"])
                    for r in rows)
    out.print(f"{file}: {len(rows)} {k}s read, {added} added, {len(rows) - added} already registered")


# ---- price books --------------------------------------------------------------------------------

def _paths(paths: Optional[List[Path]]) -> list[Path]:
    return list(paths) if paths else default_paths()


@pricebook_app.command("check")
def pricebook_check(paths: Optional[List[Path]] = typer.Argument(None, help="files or folders (default pricebooks/)")) -> None:
    """Validate price books: exit 0 when clean, else one line per problem naming file and entry."""
    books, problems = load_books(_paths(paths))
    if problems:
        fail([str(p) for p in problems])
    n = sum(len(b.prices) for b in books)
    out.print(f"{len(books)} price books, {n} prices: no problems")


@pricebook_app.command("load")
def pricebook_load(paths: Optional[List[Path]] = typer.Argument(None, help="files or folders (default pricebooks/)")) -> None:
    """Validate, then store the books in the ledger. A loaded version is immutable."""
    books, problems = load_books(_paths(paths))
    if problems:
        fail([str(p) for p in problems])
    with Ledger() as s:
        try:
            stored = store.books_from_store(s)
            cross = [p for p in _cross_with_stored(stored, books)]
            if cross:
                fail(cross)
            results = [store.store_book(s, book=b) for b in books]
        except store.StoreError as e:
            fail(str(e))
    for r in results:
        out.print(f"{r.ref}: {r.status}")


def _cross_with_stored(stored, new) -> list[str]:
    from .pricebook import cross_book_problems
    names = {b.name for b in new}
    combined = [b for b in stored if b.name not in names] + list(new)
    return [str(p) for p in cross_book_problems(combined, new=names)]


@pricebook_app.command("show")
def pricebook_show(at: Optional[str] = typer.Option(None, "--at", help="instant, default now"),
                   meter: Optional[str] = typer.Option(None, "--meter"),
                   sku: Optional[str] = typer.Option(None, "--sku"),
                   region: Optional[str] = typer.Option(None, "--region"),
                   as_json: bool = typer.Option(False, "--json")) -> None:
    """The prices in force at an instant, over the books loaded in the ledger."""
    when = parse_instant(at, "--at") if at else datetime.now(timezone.utc)
    with Ledger() as s:
        books = store.books_from_store(s)
    if not books:
        fail("no price books are loaded: run `ledger pricebook load`")
    prices = PriceIndex(books).in_force(when, meter=meter, sku=sku, region=region)
    rows = [{"meter": p.meter, "sku": p.sku, "region": p.region, "purchase_option": p.purchase_option,
             "price": str(p.price), "list_price": str(p.list_price), "currency": p.currency, "per": p.per,
             "upfront": None if p.upfront is None else str(p.upfront), "term": p.term,
             "tiers": [{"above_input_tokens": t.above_input_tokens, "price": str(t.price)} for t in p.tiers],
             "effective_from": p.effective_from.isoformat(),
             "effective_to": p.effective_to.isoformat() if p.effective_to else None,
             "book": p.book, "version": p.version, "source_url": p.source_url} for p in prices]
    if as_json:
        print_json({"at": when.isoformat(), "prices": rows})
        return
    t = Table("meter", "sku", "region", "option", "price", "per", "from", "to", "book",
              title=f"prices in force at {when.isoformat()} ({len(rows)})")
    for r in rows:
        t.add_row(r["meter"], r["sku"], r["region"], r["purchase_option"], f"{r['price']} {r['currency']}", r["per"],
                  r["effective_from"][:10], (r["effective_to"] or "")[:10], f"{r['book']}@{r['version']}")
    out.print(t)


# Feature modules add their commands: each exposes register(app). Imported after the helpers above,
# which they use.
_FEATURES = ("ledger.ingest.cli", "ledger.sizing.cli", "ledger.allocate_cli", "ledger.budget_cli", "ledger.export.cli",
             "ledger.demo_cli", "ledger.dashboard_cli")


def _register_features() -> None:
    import importlib

    for name in _FEATURES:
        importlib.import_module(name).register(app)


_register_features()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
