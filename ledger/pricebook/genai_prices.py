"""Price books from the `genai-prices` package (pydantic's maintained list of LLM API prices).

`ledger pricebook import genai-prices` turns the package's *bundled* data into one dated book per
provider, `genai-prices-<provider>`, written through :func:`ledger.outputs.write_output` (a
temporary file and ``os.replace``, never onto the ledger's DB or facts). Nothing here touches the
network: the data is read from ``genai_prices.data.providers``, the snapshot shipped inside the
package, never from ``genai_prices.data_snapshot.get_snapshot()`` (which returns prices an
``UpdatePrices`` task fetched from GitHub, when one was started) and no updater is ever started.

The mapping (docs/pricebooks.md, "Importing from genai-prices"):

- every entry has ``provider`` = the genai-prices provider id, so it never overlaps the shipped
  books' prices for any provider (``*``) and is matched against a request's ``provider``;
- a ``sku`` is every exact name genai-prices resolves to the model on that provider (the model id
  and the literal names in its match rule, each checked with the package's own ``find_model``);
- prices per 1M tokens in USD, as decimal text from the package's Decimals (never a float);
- the genai-prices price keys map onto the ledger's token meters by :data:`METER_KEYS`, most
  specific key first, which is how genai-prices itself bills a token with no price of its own
  (a cache read at the input price, a 1-hour cache write at the cache write price);
- its dated prices (``StartDateConstraint``) become effective ranges, end exclusive; its first
  price has no start, so it starts at :data:`OPEN_START`;
- its ``TieredPrices`` become ``tiers``: both mean "above N input tokens, the tier price for every
  token of the request", so the mapping is one to one;
- its price variants for the batch, flex, priority and default service tiers become prices of
  that ``purchase_option``, written only where they differ from the standard price (a request of
  that tier falls back to ``*`` otherwise, as genai-prices falls back to its standard price).

What has no place in a book is reported, never guessed: other price keys (audio, image, tool
calls, requests), other variants (OpenAI's ``fast`` tier, Anthropic's fast mode), time-of-day
prices, models that genai-prices matches only by a pattern, and models with an amount the ledger
cannot store exactly (more than 12 decimal places: never rounded).
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timezone
from decimal import Decimal
from pathlib import Path

from ..errors import LedgerError
from ..hints import Hint, Hinted
from ..instants import iso
from ..names import name_problem
from ..outputs import OutputError, check_output_folder, check_outputs, write_output
from .parse import parse_book
from .records import MONEY_PLACES, SERVICE_TIERS, unlocated

PACKAGE = "genai-prices"
INSTALL_HINT = "pip install 'ledger[genai-prices]'"
DEFAULT_PROVIDERS = ("openai", "anthropic", "google")
PROJECT_URL = "https://github.com/pydantic/genai-prices"
#: genai-prices gives no start for a model's first price ("always valid"): it starts here.
OPEN_START = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: The ledger's token meters and the genai-prices price keys that price them, most specific first.
METER_KEYS = {
    "input_tokens": ("input_mtok",),
    "cached_input_tokens": ("cache_read_mtok", "input_mtok"),
    "cache_write_tokens": ("cache_write_5m_mtok", "cache_write_mtok"),
    "cache_write_1h_tokens": ("cache_write_1h_mtok", "cache_write_mtok"),
    "output_tokens": ("output_mtok",),
    "reasoning_tokens": ("output_reasoning_mtok",),
}
MAPPED_KEYS = frozenset(k for keys in METER_KEYS.values() for k in keys)
#: A genai-prices price context (one ``when`` pair) and the ledger service tier it is.
TIER_CONTEXTS = {("processing", "batch"): "batch", ("service_tier", "flex"): "flex",
                 ("service_tier", "priority"): "priority", ("service_tier", "default"): "standard"}
#: A literal prefix ending like this is a fragment of names (``ft:gpt-4o-2024-``), not a model name.
_FRAGMENT_ENDS = ("-", ":", ".", "/", "_", "@")
_URL = re.compile(r"https?://[^\s,;()<>\"']+")
_DERIVED = {
    ("cached_input_tokens", "input_mtok"): "cache reads at the input price: genai-prices lists no cache read "
                                           "price for this model and bills its cache reads as input",
    ("cache_write_1h_tokens", "cache_write_mtok"): "1-hour cache writes at the cache write price: genai-prices "
                                                   "lists no 1-hour price and bills every cache write at it",
}
assert set(TIER_CONTEXTS.values()) <= set(SERVICE_TIERS)


class GenaiPricesError(LedgerError, ValueError):
    """An import that cannot be done: `problems` holds one line per problem (the message is their lines)."""


@dataclass(frozen=True)
class Entry:
    """One ``[[price]]`` of a book: `meter`, `sku`, `purchase_option` (``*`` or a service tier),
    `price` (USD per 1M tokens), `tiers` ((above input tokens, USD per 1M tokens), ascending),
    `effective_from`, `effective_to` (exclusive; None is open), `source_url` and `description`."""

    meter: str
    sku: str
    purchase_option: str
    price: Decimal
    tiers: tuple[tuple[int, Decimal], ...]
    effective_from: datetime
    effective_to: datetime | None
    source_url: str
    description: str


@dataclass
class ImportedBook:
    """One provider's book: `provider` (genai-prices id), `name`, `version`, the TOML `text`, the
    `entries`, the `models` and `skus` it prices, and `skipped` (what was not imported, counted)."""

    provider: str
    name: str
    version: str
    text: str = ""
    entries: list[Entry] = field(default_factory=list)
    models: int = 0
    skus: int = 0
    skipped: Counter = field(default_factory=Counter)

    def summary(self, path: Path | None = None) -> dict:
        return {"provider": self.provider, "book": self.name, "version": self.version,
                "file": None if path is None else str(path), "entries": len(self.entries), "models": self.models,
                "skus": self.skus, "not_imported": dict(sorted(self.skipped.items()))}


def bundled_data():
    """(the package's bundled provider list, its version, its ``types`` module); never the snapshot
    an auto-update fetched. One line naming the extra to install when the package is missing."""
    try:
        from importlib.metadata import version

        from genai_prices import data, types
    except ImportError:
        raise GenaiPricesError(f"{PACKAGE} is not installed: install the genai-prices extra: {INSTALL_HINT}") from None
    return data.providers, version(PACKAGE), types


def build_books(providers: Sequence[str], *, on: date) -> list[ImportedBook]:
    """One book per genai-prices provider id in `providers`, read on `on` (the book's version and
    retrieved_at). Each book's text is parsed and checked before it is returned."""
    data, pkg_version, types = bundled_data()
    by_id = {p.id: p for p in data}
    wanted = list(dict.fromkeys(p.strip() for p in providers if p.strip()))
    if not wanted:
        raise GenaiPricesError(Hinted("no provider given: ", Hint("providers", "give"),
                                      " genai-prices ids such as openai,anthropic"))
    unknown = [p for p in wanted if p not in by_id]
    if unknown:
        raise GenaiPricesError(f"unknown genai-prices provider {', '.join(map(repr, unknown))}: "
                               f"known are {', '.join(sorted(by_id))}")
    owner = {id(m): p for p in data for m in p.models}
    books = []
    for pid in wanted:
        book = _provider_book(by_id[pid], data, owner, types, pkg_version, on)
        _, problems = parse_book(book.text, f"{book.name}.toml")
        if problems:
            raise GenaiPricesError(f"the book for {pid} does not pass the check ({len(problems)} problems), "
                                   f"first: {unlocated(problems)[0]}")
        books.append(book)
    return books


#: The last line of a book the import writes: the SHA-256 of every line above it, so that a later
#: import knows the file is still what it wrote (and replaces it) or was edited (and refuses).
SEAL = "# ledger pricebook import genai-prices: sha256 of the lines above "
_SEAL = re.compile(re.escape(SEAL) + r"([0-9a-f]{64})\n?\Z")
#: The first line of the books an import wrote before the seal existed.
_LEGACY_HEAD = f"# Generated from {PACKAGE} "


def sealed(text: str) -> str:
    """`text` with the :data:`SEAL` line of its SHA-256 at the end."""
    return f"{text}{SEAL}{hashlib.sha256(text.encode('utf-8')).hexdigest()}\n"


def written_by_import(text: str) -> bool:
    """Whether `text` is a book this import wrote and nobody changed since: its seal matches the
    lines above it (a book written before the seal existed: it starts with the import's header)."""
    m = _SEAL.search(text)
    if m is None:
        return text.startswith(_LEGACY_HEAD) and SEAL not in text
    return hashlib.sha256(text[:m.start()].encode("utf-8")).hexdigest() == m.group(1)


def _not_ours(target: Path) -> bool:
    """A regular file at `target` that this import did not write, or that was changed since."""
    if not target.is_file():
        return False
    try:
        return not written_by_import(target.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return True


def write_books(books: Iterable[ImportedBook], out: str | Path, *, force: bool = False) -> list[Path]:
    """Write each book to ``<out>/<name>.toml`` atomically, creating the folder `out` when it does
    not exist yet. Every path is guarded first (none may be the ledger's DB or inside its facts),
    and a file of the same name that this import did not write (a hand-written book, or an imported
    one edited since) is refused, one line each, unless `force`: a refusal writes nothing."""
    books = list(books)
    folder = Path(out)
    try:
        check_output_folder(folder)
    except OutputError as e:
        raise GenaiPricesError(str(e)) from None
    names = [folder / f"{b.name}.toml" for b in books]
    theirs = [] if force else [p for p in names if _not_ours(p)]
    if theirs:
        raise GenaiPricesError([
            Hinted(f"refusing to overwrite {p}: it is not a book this import wrote (hand-written, or edited since it "
                   "was imported); move it, or ", Hint("force", "replace it on purpose")) for p in theirs])
    if not books:
        return []
    made = [] if folder.is_dir() else [d for d in (folder, *folder.parents) if not d.exists()][::-1]
    folder.mkdir(parents=True, exist_ok=True)
    try:
        targets = check_outputs(names)
        return [write_output(t, b.text) for t, b in zip(targets, books)]
    except BaseException:
        for d in reversed(made):  # the folders this import created, left as they were: absent
            try:
                d.rmdir()
            except OSError:
                break
        raise


# ---- one provider ---------------------------------------------------------------------------------

def _literals(match, types) -> list[str]:
    """The literal names in a model's match rule (equals, starts_with, contains), in order."""
    out: list[str] = []
    if isinstance(match, types.ClauseEquals):
        out.append(match.equals)
    elif isinstance(match, types.ClauseStartsWith):
        out.append(match.starts_with)
    elif isinstance(match, types.ClauseContains):
        out.append(match.contains)
    elif isinstance(match, (types.ClauseOr, types.ClauseAnd)):
        for clause in getattr(match, "or_", None) or getattr(match, "and_", None) or []:
            out.extend(_literals(clause, types))
    return out


def _skus(provider, data, types) -> tuple[dict[str, object], int]:
    """{sku: the model genai-prices resolves that exact name to on `provider`}, and how many of the
    provider's own models no literal name resolves to (matched only by a pattern)."""
    models = list(provider.models)
    for fid in provider.fallback_model_providers or []:
        models += next((p.models for p in data if p.id == fid), [])
    found: dict[str, object] = {}
    for m in models:
        for name in dict.fromkeys([m.id, *_literals(m.match, types)]):
            if name in found or name_problem(name) is not None or name.endswith(_FRAGMENT_ENDS):
                continue
            resolved = provider.find_model(name, all_providers=data)
            if resolved is not None:
                found[name] = resolved
    priced = {id(m) for m in found.values()}
    return found, sum(1 for m in provider.models if id(m) not in priced)


def _source_url(model, provider) -> str:
    """The first page the model's own price comments cite, else the provider's pricing page."""
    m = _URL.search(model.price_comments or "")
    if m:
        return m.group().rstrip(".")
    return (provider.pricing_urls or [PROJECT_URL])[0]


def _value(prices, meter: str):
    """(the price of `meter` in a genai-prices ModelPrice, the key it came from), or (None, None)."""
    for key in METER_KEYS[meter]:
        v = getattr(prices, key, None)
        if v is not None:
            return v, key
    return None, None


def _instant(d: date) -> datetime:
    return datetime.combine(d, time(0), tzinfo=timezone.utc)


def _model_entries(sku: str, model, provider, owner, types, pkg_version: str, skipped: Counter) -> list[Entry]:
    """The entries of one sku: per purchase option and meter, the price genai-prices resolves in
    each span between its start dates, adjacent equal spans merged."""
    conditional = [] if isinstance(model.prices, types.ModelPrice) else list(model.prices)
    own = any(model is m for m in provider.models)
    variants = list(model.price_variants or []) if own else []  # genai-prices ignores them on a fallback
    constraints = [c.constraint for c in conditional] + [v.constraint for v in variants]
    if any(isinstance(c, types.TimeOfDateConstraint) for c in constraints):
        skipped["models with time-of-day prices"] += 1
        return []
    if not isinstance(model.prices, types.ModelPrice) and not conditional:
        skipped["models with no price"] += 1
        return []
    contexts: dict[str, dict[str, str]] = {}
    for v in variants:
        pair = next(iter(v.when.items())) if len(v.when) == 1 else None
        if pair in TIER_CONTEXTS:
            contexts.setdefault(TIER_CONTEXTS[pair], dict(v.when))
        else:
            skipped["price variant " + ",".join(f"{k}={x}" for k, x in sorted(v.when.items()))] += 1
    dated = {_instant(c.start_date) for c in constraints if isinstance(c, types.StartDateConstraint)}
    starts = [OPEN_START] + sorted(t for t in dated if t > OPEN_START)
    spans: dict[tuple[str, str], list[list]] = {}
    for i, t0 in enumerate(starts):
        t1 = starts[i + 1] if i + 1 < len(starts) else None
        standard = model.get_prices(t0)
        for meter in METER_KEYS:
            base = _value(standard, meter)
            _extend(spans.setdefault(("*", meter), []), t0, t1, base)
            for option, context in contexts.items():
                v = _value(model.get_prices(t0, context), meter)
                _extend(spans.setdefault((option, meter), []), t0, t1, v if v[0] != base[0] else (None, None))
    src = owner[id(model)]
    named = f" ({model.name})" if model.name and model.name.lower() != model.id.lower() else ""
    notes = [f"genai-prices {pkg_version}: {src.id}/{model.id}{named}"]
    if sku != model.id:
        notes.append(f"genai-prices resolves {sku!r} to this model")
    if src is not provider:
        notes.append(f"{provider.id} serves it at {src.id}'s price (genai-prices fallback)")
    if model.deprecated:
        notes.append("deprecated")
    url = _source_url(model, src)
    entries = []
    for (option, meter), runs in spans.items():
        for t0, t1, (value, key) in runs:
            if value is None:
                continue
            extra = [_DERIVED[(meter, key)]] if (meter, key) in _DERIVED else []
            if option != "*":
                extra.append(f"{option} tier (genai-prices price variant "
                             + ",".join(f"{k}={x}" for k, x in contexts[option].items()) + ")")
            base, tiers = (value.base, tuple((t.start, _dec(t.price)) for t in value.tiers)) \
                if isinstance(value, types.TieredPrices) else (value, ())
            entries.append(Entry(meter=meter, sku=sku, purchase_option=option, price=_dec(base), tiers=tiers,
                                 effective_from=t0, effective_to=t1, source_url=url,
                                 description="; ".join(notes + extra)))
    if not entries:
        skipped["models with no token price"] += 1
    elif any(_too_fine(a) for e in entries for a in (e.price, *(p for _, p in e.tiers))):
        skipped[f"models with a price of more than {MONEY_PLACES} decimal places"] += 1  # never rounded
        return []
    return entries


def _too_fine(amount: Decimal) -> bool:
    """True when the store's money columns cannot hold `amount` exactly (``0.18000000000000002``)."""
    return amount.as_tuple().exponent < -MONEY_PLACES


def _extend(runs: list[list], t0: datetime, t1: datetime | None, value: tuple) -> None:
    """Append the span [t0, t1) with `value` (price, key), merged into the last span when equal."""
    if runs and runs[-1][2] == value and runs[-1][1] == t0:
        runs[-1][1] = t1
    else:
        runs.append([t0, t1, value])


def _dec(value) -> Decimal:
    """A genai-prices amount as a Decimal, through its text (never float arithmetic)."""
    return Decimal(str(value))


def _unmapped(model, types) -> set[str]:
    """The price keys of a model (any date, any variant) that no ledger meter takes."""
    prices = [model.prices] if isinstance(model.prices, types.ModelPrice) else [c.prices for c in model.prices]
    prices += [v.prices for v in model.price_variants or []]
    return {k for p in prices for k, v in vars(p).items() if v is not None and not k.startswith("_")} - MAPPED_KEYS


def _provider_book(provider, data, owner, types, pkg_version: str, on: date) -> ImportedBook:
    book = ImportedBook(provider=provider.id, name=f"genai-prices-{provider.id}",
                        version=f"{on.isoformat()}-genai-prices-{pkg_version}")
    skus, pattern_only = _skus(provider, data, types)
    if pattern_only:
        book.skipped["models matched only by a pattern (no exact name)"] += pattern_only
    blocks, models = [], set()
    for sku, model in skus.items():
        first = id(model) not in models  # count a model's omissions once, not once per name
        models.add(id(model))
        unmapped = sorted(_unmapped(model, types))
        if first:
            book.skipped.update(f"price key {key}" for key in unmapped)
        entries = _model_entries(sku, model, provider, owner, types, pkg_version,
                                 book.skipped if first else Counter())
        if not entries:
            continue
        book.entries += entries
        book.skus += 1
        head = f"# {sku}: genai-prices model {owner[id(model)].id}/{model.id}"
        blocks.append(head + (f"; not imported: {', '.join(unmapped)}" if unmapped else "") + "\n"
                      + "".join(_price_toml(e, provider.id) for e in entries))
    book.models = len({id(skus[e.sku]) for e in book.entries})
    book.text = sealed(_header(book, provider, pkg_version, on) + "\n".join(blocks))
    return book


# ---- TOML -----------------------------------------------------------------------------------------

def _s(text: str) -> str:
    """`text` as a TOML basic string: quote, backslash and control characters escaped."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _m(amount: Decimal) -> str:
    return _s(format(amount, "f"))


def _price_toml(e: Entry, provider: str) -> str:
    lines = ["[[price]]", f"meter = {_s(e.meter)}", f"sku = {_s(e.sku)}", 'region = "*"',
             f"purchase_option = {_s(e.purchase_option)}", f"provider = {_s(provider)}", f"price = {_m(e.price)}",
             'per = "1e6 * token"', f"effective_from = {iso(e.effective_from)}"]
    if e.effective_to is not None:
        lines.append(f"effective_to = {iso(e.effective_to)}")
    if e.tiers:
        lines.append("tiers = [" + ", ".join(f"{{ above_input_tokens = {n}, price = {_m(p)} }}" for n, p in e.tiers)
                     + "]")
    lines += [f"source_url = {_s(e.source_url)}", f"description = {_s(e.description)}"]
    return "\n".join(lines) + "\n\n"


def _header(book: ImportedBook, provider, pkg_version: str, on: date) -> str:
    desc = (f"Written by `ledger pricebook import genai-prices` from the data bundled in the {PACKAGE} "
            f"{pkg_version} package ({PROJECT_URL}), provider {provider.id} ({provider.name}): USD per 1M "
            "tokens, one sku per exact model name genai-prices resolves, dated changes as effective "
            "ranges, long-context prices as tiers, batch/flex/priority variants as purchase options. A "
            "model's first price has no start in genai-prices (it holds for any earlier request), so it "
            f"starts at {iso(OPEN_START)} here. "
            "Not imported: " + (", ".join(f"{k} ({n})" for k, n in sorted(book.skipped.items())) or "nothing")
            + ". See docs/pricebooks.md.")
    if provider.price_comments:
        desc += f" genai-prices on {provider.id}: {provider.price_comments}"
    return (f"# Generated from {PACKAGE} {pkg_version}: re-run `ledger pricebook import genai-prices` "
            "rather than editing by hand.\n"
            "[book]\n"
            f"name = {_s(book.name)}\n"
            f"version = {_s(book.version)}\n"
            'currency = "USD"\n'
            f"source = {_s(f'{PACKAGE} {pkg_version} (pydantic/genai-prices), bundled data, provider {provider.id}')}\n"
            f"retrieved_at = {on.isoformat()}\n"
            f"description = {_s(desc)}\n\n")
