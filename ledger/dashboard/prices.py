"""Price books for the dashboard: the books it prices with, prices in force, price history and checks."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from .. import store, tomlfile
from ..errors import Problem
from ..pricebook import Book, PriceIndex, cross_book_problems, in_force_books, load_books, parse_book, unlocated
from .state import LedgerState, reading


@dataclass(frozen=True)
class PriceBooks:
    """The books the dashboard prices with: `books` (every version), `source` (``ledger``: loaded
    in the ledger; ``files``: the shipped folder, when the ledger has none), `where` (a sentence
    for people) and `problems` (of the files, when read from files)."""

    books: tuple[Book, ...]
    source: str
    where: str
    problems: tuple[str, ...] = ()

    @property
    def index(self) -> PriceIndex:
        return PriceIndex(self.books)


def price_books(state: LedgerState) -> PriceBooks:
    """The books loaded in the ledger (as ``pricebook show`` reads them); when the ledger has none,
    the shipped ``pricebooks/`` folder (as ``size`` and ``budget`` fall back to)."""
    if state.has_store:
        with reading(state.url) as s:
            books = store.books_from_store(s)
        if books:
            return PriceBooks(tuple(books), "ledger", f"{len(books)} book versions loaded in the ledger")
    paths = _default_book_paths()
    books, problems = load_books(paths)
    return PriceBooks(tuple(books), "files",
                      "the shipped price books folder (none are loaded in the ledger: `ledger pricebook load`)",
                      tuple(str(p) for p in unlocated(problems)))


def _default_book_paths() -> list[Path]:
    from ..pricebook import default_paths

    return default_paths()


def books_frame(books: Sequence[Book]) -> pd.DataFrame:
    """One row per book version: book, version, in_force (the newest version of its name), currency,
    prices, fx_rates, retrieved_at, source."""
    current = {b.ref for b in in_force_books(books)}
    rows = [{"book": b.name, "version": b.version, "in_force": b.ref in current, "currency": b.currency,
             "prices": len(b.prices), "fx_rates": len(b.fx), "retrieved_at": b.retrieved_at, "source": b.source}
            for b in sorted(books, key=lambda b: (b.name, b.version))]
    return pd.DataFrame(rows, columns=["book", "version", "in_force", "currency", "prices", "fx_rates",
                                       "retrieved_at", "source"])


PRICE_COLUMNS = ["meter", "sku", "region", "purchase_option", "provider", "price", "list_price", "currency", "per",
                 "tiers", "upfront", "term", "effective_from", "effective_to", "book", "version", "entry", "source_url"]


def _price_row(p) -> dict:
    return {"meter": p.meter, "sku": p.sku, "region": p.region, "purchase_option": p.purchase_option,
            "provider": p.provider, "price": p.price, "list_price": p.list_price, "currency": p.currency, "per": p.per,
            "tiers": "; ".join(f"above {t.above_input_tokens:,} input tokens: {t.price}" for t in p.tiers),
            "upfront": p.upfront, "term": p.term or "", "effective_from": p.effective_from,
            "effective_to": p.effective_to, "book": p.book, "version": p.version, "entry": p.entry,
            "source_url": p.source_url}


def prices_in_force_frame(books: Sequence[Book], at: datetime, *, meter: str | None = None) -> pd.DataFrame:
    """The prices in force at `at` over the books in force (``ledger pricebook show --at``)."""
    rows = [_price_row(p) for p in PriceIndex(books).in_force(at, meter=meter or None)]
    return pd.DataFrame(rows, columns=PRICE_COLUMNS)


def price_keys(books: Sequence[Book]) -> list[tuple[str, str, str, str, str]]:
    """Every (meter, sku, region, purchase_option, provider) priced by any book version, sorted."""
    return sorted({p.key for b in books for p in b.prices})


def price_history_frame(books: Sequence[Book], key: tuple[str, str, str, str, str]) -> pd.DataFrame:
    """Every price ever written for `key`, in every book version (superseded versions included,
    marked by `in_force_version` False): the columns of a price, sorted by effective_from."""
    current = {b.ref for b in in_force_books(books)}
    rows = []
    for b in books:
        for p in b.prices:
            if p.key == tuple(key):
                rows.append({**_price_row(p), "in_force_version": b.ref in current})
    rows.sort(key=lambda r: (r["effective_from"], r["book"], r["version"]))
    return pd.DataFrame(rows, columns=[*PRICE_COLUMNS, "in_force_version"])


# `pricebook check` in the dashboard reads only books the ledger knows (the shipped folder, the books
# loaded in the store) or bytes uploaded through the page: never a path typed on the page.

#: The largest price book file the check page reads (the shipped books are a few kB).
MAX_BOOK_BYTES = 2_000_000


def _plural(n: int, word: str) -> str:
    """``1 price book``, ``2 price books``, ``1,024 prices``: as the command line counts."""
    return f"{n:,} {word if n == 1 else word + 's'}"


def _findings(books: Sequence[Book], problems: Sequence[Problem]) -> tuple[pd.DataFrame, str]:
    """One row per finding (file name, entry, message) and the one-line summary `pricebook check` prints."""
    rows = [{"file": Path(p.file).name, "entry": p.entry or "", "message": p.message} for p in problems]
    n = sum(len(b.prices) for b in books)
    summary = (f"{_plural(len(books), 'price book')}, {_plural(n, 'price')}: no problems" if not problems else
               f"{_plural(len(problems), 'problem')} in {_plural(len(books), 'readable book')}")
    return pd.DataFrame(rows, columns=["file", "entry", "message"]), summary


def check_frame() -> tuple[pd.DataFrame, str]:
    """``ledger pricebook check`` of the shipped price books folder (no argument: the dashboard
    never opens a path given on the page)."""
    return _findings(*load_books(_default_book_paths()))


def check_books(books: Sequence[Book]) -> tuple[pd.DataFrame, str]:
    """``ledger pricebook check`` of books the ledger already holds (the versions loaded in the
    store): each book's stored TOML parsed again, then the books checked together."""
    good, problems = [], []
    for b in books:
        book, probs = parse_book(b.text, b.path or b.ref)
        problems.extend(probs)
        if book is not None:
            good.append(book)
    problems.extend(cross_book_problems(good))
    return _findings(good, problems)


def check_uploaded(files: Sequence[tuple[str, bytes]]) -> tuple[pd.DataFrame, str]:
    """``ledger pricebook check`` of uploaded files, (name, bytes) each, read from the bytes only:
    each parsed as a book (UTF-8 TOML of at most :data:`MAX_BOOK_BYTES`), then checked together."""
    good, problems = [], []
    for name, content in files:
        name = Path(name).name
        if len(content) > MAX_BOOK_BYTES:
            problems.append(Problem(file=name, message=f"{len(content):,} bytes: a price book has at most "
                                                       f"{MAX_BOOK_BYTES:,}"))
            continue
        try:
            text = tomlfile.decode(content, name)
        except tomlfile.TomlError as e:  # the line and column of the first byte that is not UTF-8
            problems.append(Problem(file=name, message=e.message, line=e.line, column=e.column))
            continue
        book, probs = parse_book(text, name)
        problems.extend(probs)
        if book is not None:
            good.append(book)
    problems.extend(cross_book_problems(good))
    return _findings(good, problems)
