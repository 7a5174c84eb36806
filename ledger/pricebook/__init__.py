"""Dated price books: load and validate TOML books, and look up the price in force at an instant.

`records` holds the books, prices and FX rates; `parse` reads one book's TOML; `index` loads folders
of books, checks them together and answers dated lookups. The commands are in `cli`.
"""
from __future__ import annotations

from .index import PriceIndex, cross_book_problems, default_paths, in_force_books, load_books
from .parse import parse_book
from .records import (EFFECTIVE_PRICE_EXP, GPU_METERS, METERED_DIMENSIONS, SERVICE_TIERS, TOKEN_METERS, Book, FxRate,
                      NoPriceError, Price, Tier, price_label, unlocated)
