"""Load folders of books, check them together, and look prices up by key and instant (bisect)."""
from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

from .. import tomlfile
from ..errors import Problem
from .parse import _overlaps, parse_book
from .records import Book, FxRate, NoPriceError, Price, located


def _book_files(paths: Sequence[str | Path]) -> tuple[list[Path], list[Problem]]:
    files: list[Path] = []
    problems: list[Problem] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(path.glob("*.toml"))
            if not found:
                problems.append(Problem(file=str(path), message="no *.toml price books in this folder"))
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            problems.append(Problem(file=str(path), message="no such file or folder"))
    return files, problems


def load_books(paths: Sequence[str | Path]) -> tuple[list[Book], list[Problem]]:
    """Load every book in `paths` (files or folders of ``*.toml``) and check them together.

    Returns the valid books and all problems. Of several versions of one book name the newest
    is the one in force; prices of different books must not overlap for the same key.
    """
    files, problems = _book_files(paths)
    books: list[Book] = []
    for f in files:
        try:
            text = tomlfile.read_text(f)
        except OSError as e:
            problems.append(Problem(file=str(f), message=f"cannot read: {e}"))
            continue
        except tomlfile.TomlError as e:  # not UTF-8: the line and column of the first bad byte
            problems.append(Problem(file=str(f), message=e.message, line=e.line, column=e.column))
            continue
        book, probs = parse_book(text, str(f))
        problems.extend(probs)
        if book is not None:
            books.append(book)
    problems.extend(cross_book_problems(books))
    return books, problems


def in_force_books(books: Iterable[Book]) -> list[Book]:
    """The newest version of each book name (versions compare as text, ISO dates sort right)."""
    newest: dict[str, Book] = {}
    for b in books:
        if b.name not in newest or b.version > newest[b.name].version:
            newest[b.name] = b
    return sorted(newest.values(), key=lambda b: b.name)


def cross_book_problems(books: Iterable[Book], *, new: Iterable[str] = ()) -> list[Problem]:
    """Overlaps between the prices of different books (each at its version in force).

    Each overlap is reported on the book of the later price, except that a book named in `new`
    (books being loaded beside ones already stored) takes the blame from a stored one.
    """
    current = in_force_books(books)
    by_ref = {b.ref: b for b in current}
    fresh = set(new)
    out = []
    for a, b in _overlaps(p for bk in current for p in bk.prices):
        if a.book != b.book:
            if a.book in fresh and b.book not in fresh:
                a, b = b, a
            where = by_ref[f"{b.book}@{b.version}"]
            overlap = f"overlaps price[{a.entry}] of book {a.book}@{a.version} for the same key"
            out += located([Problem(file=where.path, entry=f"price[{b.entry}] {b.label()}", message=overlap)],
                           where.text)
    return out


class PriceIndex:
    """Dated lookups over books: for each key, prices sorted by `effective_from` and found by bisect."""

    def __init__(self, books: Iterable[Book]):
        self.books = in_force_books(books)
        self._by_key: dict[tuple[str, str, str, str, str], list[Price]] = defaultdict(list)
        for b in self.books:
            for p in b.prices:
                self._by_key[p.key].append(p)
        for ps in self._by_key.values():
            ps.sort(key=lambda p: p.effective_from)
        self._starts = {k: [p.effective_from for p in ps] for k, ps in self._by_key.items()}
        self._fx: dict[tuple[str, str], list[FxRate]] = defaultdict(list)
        for b in self.books:
            for r in b.fx:
                self._fx[(r.from_, r.to)].append(r)
        for rs in self._fx.values():
            rs.sort(key=lambda r: r.effective_from)

    @property
    def refs(self) -> list[str]:
        return [b.ref for b in self.books]

    def prices(self) -> list[Price]:
        return [p for ps in self._by_key.values() for p in ps]

    def _lookup(self, key: tuple[str, str, str, str, str], at: datetime) -> Price | None:
        ps = self._by_key.get(key)
        if not ps:
            return None
        i = bisect.bisect_right(self._starts[key], at) - 1
        if i >= 0 and ps[i].in_force(at):
            return ps[i]
        return None

    def _candidates(self, meter: str, sku: str, region: str, purchase_option: str,
                    provider: str) -> list[tuple[str, str, str, str, str]]:
        """The keys a lookup tries, most specific first: the exact provider then ``*``; within each,
        the exact region then ``*``; within each, the exact purchase option then ``*``."""
        return [(meter, sku, r, o, pv) for pv in dict.fromkeys((provider, "*")) for r in dict.fromkeys((region, "*"))
                for o in dict.fromkeys((purchase_option, "*"))]

    def price_at(self, *, meter: str, sku: str, region: str = "*", purchase_option: str = "*", provider: str = "*",
                 at: datetime) -> Price:
        """The price in force at `at` for the key, trying the exact provider then ``*``, the exact
        region then ``*``, and the exact purchase option then ``*`` (see :meth:`_candidates`).
        Raises NoPriceError naming meter, sku, region, purchase option (and provider) and time."""
        if at.tzinfo is None:
            raise ValueError("price_at needs an aware datetime")
        for key in self._candidates(meter, sku, region, purchase_option, provider):
            p = self._lookup(key, at)
            if p is not None:
                return p
        by = f", provider {provider}" if provider != "*" else ""
        raise NoPriceError(f"no price in force for meter {meter}, sku {sku}, region {region}, purchase option "
                           f"{purchase_option}{by} at {at.astimezone(timezone.utc).isoformat()}")

    def changes(self, *, meter: str, sku: str, region: str = "*", purchase_option: str = "*",
                provider: str = "*") -> list[datetime]:
        """Instants at which the price for this key (or its ``*`` fallbacks) starts or ends."""
        out = set()
        for key in self._candidates(meter, sku, region, purchase_option, provider):
            for p in self._by_key.get(key, []):
                out.add(p.effective_from)
                if p.effective_to:
                    out.add(p.effective_to)
        return sorted(out)

    def in_force(self, at: datetime, *, meter: str | None = None, sku: str | None = None,
                 region: str | None = None, provider: str | None = None) -> list[Price]:
        """All prices in force at `at`, optionally filtered (region and provider match exactly or ``*``)."""
        out = []
        for key, ps in sorted(self._by_key.items()):
            if (meter and key[0] != meter or sku and key[1] != sku or region and key[2] not in (region, "*")
                    or provider and key[4] not in (provider, "*")):
                continue
            p = self._lookup(key, at)
            if p is not None:
                out.append(p)
        return out

    def fx_rate(self, from_: str, to: str, at: datetime) -> Decimal:
        """Units of `to` per unit of `from_` at `at` (1 for the same currency; an inverse rate is
        used when only the reverse is in the book). Raises NoPriceError when none is in force."""
        if from_ == to:
            return Decimal(1)
        for (a, b), inverse in (((from_, to), False), ((to, from_), True)):
            for r in self._fx.get((a, b), []):
                if r.effective_from <= at and (r.effective_to is None or at < r.effective_to):
                    return (Decimal(1) / r.rate) if inverse else r.rate
        raise NoPriceError(f"no FX rate in force for {from_}->{to} at {at.astimezone(timezone.utc).isoformat()}")


def default_paths() -> list[Path]:
    """The shipped price books folder (``pricebooks/`` of the project, or of the working directory)."""
    here = Path.cwd() / "pricebooks"
    if here.is_dir():
        return [here]
    return [Path(__file__).resolve().parent.parent.parent / "pricebooks"]
