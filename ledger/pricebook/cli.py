"""Commands of the price books: `pricebook check`, `load`, `show` and `import genai-prices`."""
from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import List, Optional

import typer
from rich.text import Text

from .. import store
from ..console import Ledger, fail, one_format, out, parse_instant, plural, print_csv, print_json, words
from ..errors import Problem
from ..formats import unit_cost
from ..instants import iso
from ..units import prose
from ..tables import FitTable
from . import PriceIndex, cross_book_problems, default_paths, load_books

pricebook_app = typer.Typer(help="Dated price books: check, load, show, import.", no_args_is_help=True)


def _paths(paths: Optional[List[Path]]) -> list[Path]:
    return list(paths) if paths else default_paths()


_PATHS_HELP = "files or folders (default pricebooks/)"
#: The columns of `pricebook check --csv`: one row per problem.
PROBLEM_COLUMNS = ("file", "line", "column", "entry", "message")


@pricebook_app.command("check")
def pricebook_check(paths: Optional[List[Path]] = typer.Argument(None, help=_PATHS_HELP),
                    as_json: bool = typer.Option(False, "--json", help="print the books checked and the problems "
                                                                       "(file, line, column, entry, message) as JSON"),
                    as_csv: bool = typer.Option(False, "--csv", help="print the problems as CSV, one row each "
                                                                     "(header only when there are none)")) -> None:
    """Validate price books: exit 0 when clean, else exit 1 and one line per problem, `file:line: entry:
    problem` (the line of the entry's table header where known; with --json or --csv, the problems on
    stdout as records with file, line, column, entry and message)."""
    one_format(as_json, as_csv)
    books, problems = load_books(_paths(paths))
    n = sum(len(b.prices) for b in books)
    if as_json:
        print_json({"ok": not problems, "books": [b.ref for b in books], "prices": n,
                    "problems": [p.as_dict() for p in problems]})
    elif as_csv:
        print_csv([p.as_dict() for p in problems], header=list(PROBLEM_COLUMNS), numeric=("line", "column"))
    elif problems:
        fail(problems)
    else:
        out.print(f"{plural(len(books), 'price book')}, {plural(n, 'price')}: no problems")
    if problems:
        raise typer.Exit(1)


@pricebook_app.command("load")
def pricebook_load(paths: Optional[List[Path]] = typer.Argument(None, help=_PATHS_HELP)) -> None:
    """Validate, then store the books in the ledger. A loaded version is immutable."""
    books, problems = load_books(_paths(paths))
    if problems:
        fail(problems)
    with Ledger() as s:
        stored = store.books_from_store(s)
        cross = _cross_with_stored(stored, books)
        if cross:
            fail(cross)
        results = [store.store_book(s, book=b) for b in books]
    for r in results:
        out.print(f"{r.ref}: {r.status}", markup=False)  # a book's name is never markup


def _cross_with_stored(stored, new) -> list[Problem]:
    names = {b.name for b in new}
    combined = [b for b in stored if b.name not in names] + list(new)
    return cross_book_problems(combined, new=names)


@pricebook_app.command("show")
def pricebook_show(at: Optional[str] = typer.Option(None, "--at", help="the instant (ISO 8601, e.g. "
                                                                        "2026-10-15T00:00:00Z; a date is its 00:00 "
                                                                        "UTC); default now"),
                   meter: Optional[str] = typer.Option(None, "--meter", help="keep the prices of this meter, e.g. "
                                                                             "gpu_time or input_tokens"),
                   sku: Optional[str] = typer.Option(None, "--sku", help="keep the prices of this SKU (a GPU or a "
                                                                         "model), e.g. H100-SXM-80GB"),
                   region: Optional[str] = typer.Option(None, "--region", help="keep the prices of this region and "
                                                                               "of *, e.g. us-east-1"),
                   provider: Optional[str] = typer.Option(None, "--provider",
                                                          help="keep the prices of this provider and of *"),
                   as_json: bool = typer.Option(False, "--json", help="print the prices as JSON (prices as decimal "
                                                                      "strings)"),
                   as_csv: bool = typer.Option(False, "--csv", help="print one row per price as CSV (tiers as "
                                                                    "ABOVE_INPUT_TOKENS:PRICE separated by spaces)")
                   ) -> None:
    """The prices in force at an instant, over the books loaded in the ledger."""
    one_format(as_json, as_csv)
    when = parse_instant(at, "--at") if at else datetime.now(timezone.utc).replace(microsecond=0)
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
    if as_csv:
        print_csv([{**r, "tiers": " ".join(f"{t['above_input_tokens']}:{t['price']}" for t in r["tiers"])}
                   for r in rows], header=list(PRICE_COLUMNS), numeric=("price", "list_price", "upfront"))
        return
    out.print(prices_as_table(rows, when))


def prices_as_table(rows: list[dict], when: datetime) -> FitTable:
    """The prices in force (the rows of `pricebook show --json`) for a person. A price is a unit
    cost: the column at 6 decimals (the JSON and CSV keep each price exact). Names are never markup,
    never cut."""
    t = FitTable(title=f"prices in force at {iso(when)} ({len(rows):,})", keys=2)
    for col in ("meter", "sku", "region", "option", "provider"):
        t.add_column(col, numeric=False)
    t.add_column("price")
    for col in ("per", "from", "to", "book"):
        t.add_column(col, numeric=False)
    for r in rows:
        t.add_row(*map(Text, (r["meter"], r["sku"], r["region"], r["purchase_option"], r["provider"],
                              unit_cost(Decimal(r["price"]), r["currency"]), prose(r["per"]), r["effective_from"][:10],
                              (r["effective_to"] or "")[:10], f"{r['book']}@{r['version']}")))
    return t


#: The columns of `pricebook show --csv`, the keys of each price in `--json`.
PRICE_COLUMNS = ("meter", "sku", "region", "purchase_option", "provider", "price", "list_price", "currency", "per",
                 "upfront", "term", "tiers", "effective_from", "effective_to", "book", "version", "source_url")


import_app = typer.Typer(help="Write price books from a maintained price list.", no_args_is_help=True)
#: How `ledger pricebook import` words the hints of what the library says (:mod:`ledger.hints`).
IMPORT_NAMES = {"providers": "--providers takes", "force": "give --force to replace it"}
pricebook_app.add_typer(import_app, name="import")


@import_app.command("genai-prices")
def pricebook_import_genai_prices(
        providers: str = typer.Option("openai,anthropic,google", "--providers",
                                      help="genai-prices provider ids, comma-separated"),
        out_dir: Path = typer.Option(Path("pricebooks"), "--out", help="folder to write the books to (created when "
                                                                       "it does not exist)"),
        force: bool = typer.Option(False, "--force", help="replace a file of the same name that this import did not "
                                                          "write (a hand-written book, or an imported one edited since)"),
        as_json: bool = typer.Option(False, "--json", help="what was written, as JSON")) -> None:
    """One dated book per provider from the genai-prices package's bundled data (no network). A file
    of the same name that the import did not write is refused unless --force."""
    from .genai_prices import build_books, write_books

    words(IMPORT_NAMES)
    try:
        books = build_books(providers.split(","), on=datetime.now(timezone.utc).date())
        paths = write_books(books, out_dir, force=force)
    except OSError as e:
        fail(f"cannot write the books to {out_dir}: {e.strerror or e}")
    rows = [b.summary(p) for b, p in zip(books, paths)]
    if as_json:
        print_json({"books": rows})
        return
    for r in rows:
        out.print(f"{r['book']}@{r['version']}: {r['entries']} prices for {r['skus']} model names -> {r['file']}",
                  markup=False)


def register(app: typer.Typer) -> None:
    app.add_typer(pricebook_app, name="pricebook")
