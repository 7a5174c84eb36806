"""Commands of the price books: `pricebook check`, `load`, `show` and `import genai-prices`."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table
from rich.text import Text

from .. import store
from ..console import Ledger, fail, out, parse_instant, print_json
from . import PriceIndex, cross_book_problems, default_paths, load_books

pricebook_app = typer.Typer(help="Dated price books: check, load, show, import.", no_args_is_help=True)


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
        out.print(f"{r.ref}: {r.status}", markup=False)  # a book's name is never markup


def _cross_with_stored(stored, new) -> list[str]:
    names = {b.name for b in new}
    combined = [b for b in stored if b.name not in names] + list(new)
    return [str(p) for p in cross_book_problems(combined, new=names)]


@pricebook_app.command("show")
def pricebook_show(at: Optional[str] = typer.Option(None, "--at", help="instant, default now"),
                   meter: Optional[str] = typer.Option(None, "--meter"),
                   sku: Optional[str] = typer.Option(None, "--sku"),
                   region: Optional[str] = typer.Option(None, "--region"),
                   provider: Optional[str] = typer.Option(None, "--provider",
                                                          help="keep the prices of this provider and of *"),
                   as_json: bool = typer.Option(False, "--json")) -> None:
    """The prices in force at an instant, over the books loaded in the ledger."""
    when = parse_instant(at, "--at") if at else datetime.now(timezone.utc)
    with Ledger() as s:
        books = store.books_from_store(s)
    if not books:
        fail("no price books are loaded: run `ledger pricebook load`")
    prices = PriceIndex(books).in_force(when, meter=meter, sku=sku, region=region, provider=provider)
    rows = [{"meter": p.meter, "sku": p.sku, "region": p.region, "purchase_option": p.purchase_option,
             "provider": p.provider, "price": str(p.price), "list_price": str(p.list_price), "currency": p.currency,
             "per": p.per, "upfront": None if p.upfront is None else str(p.upfront), "term": p.term,
             "tiers": [{"above_input_tokens": t.above_input_tokens, "price": str(t.price)} for t in p.tiers],
             "effective_from": p.effective_from.isoformat(),
             "effective_to": p.effective_to.isoformat() if p.effective_to else None,
             "book": p.book, "version": p.version, "source_url": p.source_url} for p in prices]
    if as_json:
        print_json({"at": when.isoformat(), "prices": rows})
        return
    t = Table("meter", "sku", "region", "option", "provider", "price", "per", "from", "to", "book",
              title=f"prices in force at {when.isoformat()} ({len(rows)})")
    for r in rows:
        t.add_row(*map(Text, (r["meter"], r["sku"], r["region"], r["purchase_option"], r["provider"],
                              f"{r['price']} {r['currency']}", r["per"], r["effective_from"][:10],
                              (r["effective_to"] or "")[:10], f"{r['book']}@{r['version']}")))  # names are never markup
    out.print(t)


import_app = typer.Typer(help="Write price books from a maintained price list.", no_args_is_help=True)
pricebook_app.add_typer(import_app, name="import")


@import_app.command("genai-prices")
def pricebook_import_genai_prices(
        providers: str = typer.Option("openai,anthropic,google", "--providers",
                                      help="genai-prices provider ids, comma-separated"),
        out_dir: Path = typer.Option(Path("pricebooks"), "--out", help="folder to write the books to"),
        as_json: bool = typer.Option(False, "--json", help="what was written, as JSON")) -> None:
    """One dated book per provider from the genai-prices package's bundled data (no network)."""
    from ..outputs import OutputError
    from .genai_prices import GenaiPricesError, build_books, write_books

    try:
        books = build_books(providers.split(","), on=datetime.now(timezone.utc).date())
        paths = write_books(books, out_dir)
    except (GenaiPricesError, OutputError) as e:
        fail(str(e))
    rows = [b.summary(p) for b, p in zip(books, paths)]
    if as_json:
        print_json({"books": rows})
        return
    for r in rows:
        out.print(f"{r['book']}@{r['version']}: {r['entries']} prices for {r['skus']} model names -> {r['file']}",
                  markup=False)


def register(app: typer.Typer) -> None:
    app.add_typer(pricebook_app, name="pricebook")
