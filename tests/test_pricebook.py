"""Price books: a corpus of bad books (each with its exact problem line, through the loader and the CLI),
and hand-worked lookups: tiers, reserved amortization, region fallback, dated changes, FX, newest version."""
from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ledger.cli import app
from ledger.pricebook import NoPriceError, PriceIndex, in_force_books, load_books, parse_book, unlocated

ROOT = Path(__file__).resolve().parent.parent
D = Decimal
UTC = timezone.utc
runner = CliRunner()


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


HEAD = """
[book]
name = "test-cloud"
version = "2026-10-01"
currency = "USD"
source = "written by hand for the tests"
retrieved_at = 2026-10-01
"""

#: A valid GPU price, as raw TOML values; cases override fields (None drops one).
GPU_PRICE = {
    "meter": '"gpu_time"',
    "sku": '"H100-SXM-80GB"',
    "region": '"us-east-1"',
    "purchase_option": '"on_demand"',
    "price": '"6.88"',
    "per": '"gpu * hour"',
    "effective_from": "2026-06-01T00:00:00Z",
    "source_url": '"https://example.com/pricing"',
}
TOKEN_PRICE = {**GPU_PRICE, "meter": '"input_tokens"', "sku": '"gpt-5"', "region": '"*"',
               "purchase_option": '"*"', "price": '"1.25"', "per": '"1e6 * token"'}


def price(base: dict | None = None, **fields: str | None) -> str:
    merged = {**(base or GPU_PRICE), **fields}
    return "\n[[price]]\n" + "".join(f"{k} = {v}\n" for k, v in merged.items() if v is not None)


def fx(from_: str = "EUR", to: str = "USD", rate: str = '"1.08"', effective_from: str = "2026-10-01T00:00:00Z",
       effective_to: str | None = None) -> str:
    end = f"effective_to = {effective_to}\n" if effective_to else ""
    return (f'\n[[fx]]\nfrom = "{from_}"\nto = "{to}"\nrate = {rate}\neffective_from = {effective_from}\n{end}')


GPU_KEY = "gpu_time/H100-SXM-80GB/us-east-1/on_demand"

# Each case: (id, the book's TOML, the problem line after "<file>: ").
BAD_BOOKS = [
    ("overlap-open-ended",
     HEAD + price() + price(price='"7.00"', effective_from="2026-09-01T00:00:00Z"),
     f"price[2] {GPU_KEY}: overlaps price[1] of the same key in force from 2026-06-01T00:00:00+00:00 to open end"),
    ("overlap-bounded",
     HEAD + price(effective_to="2026-10-01T00:00:00Z") + price(price='"7.00"', effective_from="2026-09-15T00:00:00Z"),
     f"price[2] {GPU_KEY}: overlaps price[1] of the same key in force from 2026-06-01T00:00:00+00:00"
     " to 2026-10-01T00:00:00+00:00"),
    ("negative-price",
     HEAD + price(price='"-1.00"'),
     f"price[1] {GPU_KEY}: price -1.00 is negative"),
    ("unknown-currency",
     HEAD + price(currency='"XYZ"'),
     f"price[1] {GPU_KEY}: currency 'XYZ' is not an ISO 4217 code"),
    ("unknown-book-currency",
     HEAD.replace('"USD"', '"DOLLARS"') + price(currency='"USD"'),
     "[book]: currency 'DOLLARS' is not an ISO 4217 code"),
    ("gpu-per-parsec",
     HEAD + price(per='"parsec"'),
     f"price[1] {GPU_KEY}: per 'parsec' is not GPU-time: a gpu_time price must be per gpu * time"
     ' (e.g. "gpu * hour")'),
    ("tool-per-parsec",
     HEAD + price(meter='"tool_call"', sku='"web_search"', region='"*"', purchase_option='"*"', per='"parsec"'),
     "price[1] tool_call/web_search/*/*: per 'parsec' ([length]) is not something the ledger meters:"
     " use gpu, token, request, call, span, bytes (GB, GiB) and time"),
    ("token-price-per-gpu-hour",
     HEAD + price(TOKEN_PRICE, per='"gpu * hour"'),
     "price[1] input_tokens/gpt-5/*/*: per 'gpu * hour' is not tokens: a input_tokens price must be per tokens"
     ' (e.g. "1e6 * token")'),
    ("unknown-unit",
     HEAD + price(per='"furlongz"'),
     f"price[1] {GPU_KEY}: per: unknown unit 'furlongz' ('furlongz' is not defined in the unit registry)"),
    ("per-zero-tokens",
     HEAD + price(TOKEN_PRICE, per='"0 * token"'),
     "price[1] input_tokens/gpt-5/*/*: per '0 * token' is not a positive amount"),
    ("float-price",
     HEAD + price(price="6.88"),
     f'price[1] {GPU_KEY}: price 6.88 is a TOML float; write it as a string ("6.88") so it stays exact'),
    ("missing-source-url",
     HEAD + price(source_url=None),
     f"price[1] {GPU_KEY}: missing required field 'source_url'"),
    ("unknown-price-field",
     HEAD + price(prce='"6.88"'),
     f"price[1] {GPU_KEY}: unknown field 'prce'"),
    ("naive-timestamp",
     HEAD + price(effective_from="2026-06-01T00:00:00"),
     f"price[1] {GPU_KEY}: effective_from: timestamp has no UTC offset (write e.g. 2026-10-01T00:00:00Z)"),
    ("empty-range",
     HEAD + price(effective_to="2026-06-01T00:00:00Z"),
     f"price[1] {GPU_KEY}: effective_to 2026-06-01T00:00:00+00:00 is not after effective_from"
     " 2026-06-01T00:00:00+00:00 (ranges are end-exclusive)"),
    ("upfront-without-term",
     HEAD + price(upfront='"8760"'),
     f"price[1] {GPU_KEY}: upfront and term go together"),
    ("term-not-a-duration",
     HEAD + price(upfront='"8760"', term='"gpu"'),
     f"price[1] {GPU_KEY}: term 'gpu' is not a duration"),
    ("tiers-on-gpu-time",
     HEAD + price(tiers='[{ above_input_tokens = 200000, price = "2.50" }]'),
     f"price[1] {GPU_KEY}: tiers apply to token meters only"),
    ("negative-tier-price",
     HEAD + price(TOKEN_PRICE, tiers='[{ above_input_tokens = 200000, price = "-2.50" }]'),
     "price[1] input_tokens/gpt-5/*/*: tier 1 price -2.50 is negative"),
    ("missing-book-table",
     price(),
     "[book]: missing [book] table (name, version, currency, source, retrieved_at)"),
    ("missing-book-version",
     HEAD.replace('version = "2026-10-01"\n', "") + price(),
     "[book]: missing required field 'version'"),
    ("misspelled-price-table",
     HEAD + price().replace("[[price]]", "[[prices]]"),
     "unknown top-level key 'prices'"),
    ("fx-unknown-currency",
     HEAD + price() + fx(from_="EUX"),
     "fx[1] EUX->USD: from 'EUX' is not an ISO 4217 code"),
    ("fx-zero-rate",
     HEAD + price() + fx(rate='"0"'),
     "fx[1] EUR->USD: rate 0 is not positive"),
    ("fx-overlap",
     HEAD + price() + fx() + fx(rate='"1.10"', effective_from="2026-11-01T00:00:00Z"),
     "fx EUR->USD: rates from 2026-10-01T00:00:00+00:00 and 2026-11-01T00:00:00+00:00 overlap"),
    # a provider's prices are a key of their own: two of them in force at once overlap (the label ends /provider)
    ("overlap-of-one-provider",
     HEAD + price(TOKEN_PRICE, provider='"azure"') + price(TOKEN_PRICE, provider='"azure"', price='"1.10"',
                                                           effective_from="2026-09-01T00:00:00Z"),
     "price[2] input_tokens/gpt-5/*/*/azure: overlaps price[1] of the same key in force from"
     " 2026-06-01T00:00:00+00:00 to open end"),
    # prices that no rule would ever use (docs/pricebooks.md, "Prices no rule uses"):
    ("unused-unknown-token-meter",   # Anthropic's name for cached reads, not the ledger's meter
     HEAD + price(TOKEN_PRICE, meter='"cache_read_input_tokens"'),
     "price[1] cache_read_input_tokens/gpt-5/*/*: meter 'cache_read_input_tokens' is not a token meter the ledger"
     " prices (cache_write_1h_tokens, cache_write_tokens, cached_input_tokens, input_tokens, output_tokens,"
     " reasoning_tokens): no rule would use this price (a meters-input meter must not end in _tokens)"),
    ("unused-token-tier",            # a token price's purchase_option is a request's service tier
     HEAD + price(TOKEN_PRICE, purchase_option='"on_demand"'),
     "price[1] input_tokens/gpt-5/*/on_demand: purchase_option 'on_demand' is not a service tier (standard, batch,"
     " flex, priority, or * for any): no request would use this price"),
    ("unused-provider-on-gpu-time",
     HEAD + price(provider='"aws"'),
     f"price[1] {GPU_KEY}/aws: provider 'aws': only token prices are matched against a request's provider; no usage"
     " of meter gpu_time names one, so this price would never be used"),
    ("unused-option-on-a-meter",
     HEAD + price(meter='"egress"', sku='"internet"', region='"*"', purchase_option='"reserved"', per='"GB"'),
     "price[1] egress/internet/*/reserved: purchase_option 'reserved': meter egress is looked up with purchase"
     " option * (options apply to gpu_time, and as service tiers to token meters), so this price would never be"
     " used"),
    ("empty-provider",
     HEAD + price(TOKEN_PRICE, provider='""'),
     'price[1] input_tokens/gpt-5/*/*/: provider is empty (write "*" for any)'),
]


@pytest.fixture
def write(tmp_path):
    """Write a book's text to `<tmp>/<name>.toml` and return its path."""
    def _write(name: str, text: str, folder: Path = tmp_path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.toml"
        path.write_text(text, encoding="utf-8")
        return path
    return _write


@pytest.mark.parametrize("name, text, problem", BAD_BOOKS, ids=[c[0] for c in BAD_BOOKS])
def test_bad_book_gives_one_problem_line_naming_file_entry_and_problem(write, name, text, problem):
    path = write(name, text)
    books, problems = load_books([path])
    assert books == []
    assert [str(p) for p in unlocated(problems)] == [f"{path}: {problem}"]


@pytest.mark.parametrize("name, text, problem", BAD_BOOKS, ids=[c[0] for c in BAD_BOOKS])
def test_cli_check_exits_1_with_the_problem_line(write, name, text, problem):
    path = write(name, text)
    result = runner.invoke(app, ["pricebook", "check", str(path)])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [cli_line(path, path.read_text(encoding="utf-8"), problem)]
    assert result.stdout == ""


def header_line(text: str, entry: str) -> int | None:
    """The 1-based line of the table header an entry of a book concerns, counted in its `text`: the
    Nth ``[[price]]`` for ``price[N]``, the Nth ``[[fx]]`` for ``fx[N]``, ``[book]`` for ``[book]``."""
    lines = [raw.strip() for raw in text.split("\n")]
    head, _, n = entry.partition("[")
    if entry.startswith("[book]"):
        return lines.index("[book]") + 1 if "[book]" in lines else None
    if head in ("price", "fx") and n[:1].isdigit():
        found = [i for i, raw in enumerate(lines, start=1) if raw == f"[[{head}]]"]
        return found[int(n.split("]")[0]) - 1]
    return None


def cli_line(path, text: str, problem: str) -> str:
    """What `pricebook check` and `load` print for `problem` (``entry: message``) of the book at
    `path`: ``file:line: entry: message``, the line of the entry's header (none known: ``file: ...``)."""
    line = header_line(text, problem.split(" ", 1)[0].rstrip(":"))
    return f"{path}:{line}: {problem}" if line else f"{path}: {problem}"


def test_a_problem_line_names_the_line_of_its_price(write):
    """Hand-counted: in this book [book] is line 2 and the [[price]] tables start on lines 9 and 19;
    the second price overlaps the first, so the CLI names line 19."""
    name, text, problem = next(c for c in BAD_BOOKS if c[0] == "overlap-open-ended")
    assert (header_line(text, "[book]"), header_line(text, "price[1]"), header_line(text, "price[2]")) == (2, 9, 19)
    path = write(name, text)
    result = runner.invoke(app, ["pricebook", "check", str(path)])
    assert result.stderr.splitlines() == [f"{path}:19: {problem}"]


def test_overlap_across_books_names_the_later_file_and_entry(write, tmp_path):
    a = write("a", HEAD + price())
    b = write("b", HEAD.replace('"test-cloud"', '"other-cloud"') + price(price='"5.00"',
                                                                          effective_from="2026-08-01T00:00:00Z"))
    line = f"{b}: price[1] {GPU_KEY}: overlaps price[1] of book test-cloud@2026-10-01 for the same key"
    books, problems = load_books([tmp_path])
    assert [str(p) for p in unlocated(problems)] == [line]
    assert {bk.name for bk in books} == {"test-cloud", "other-cloud"}  # each valid alone; together refused
    result = runner.invoke(app, ["pricebook", "check", str(a), str(b)])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [cli_line(b, b.read_text(encoding="utf-8"), line.split(": ", 1)[1])]


def test_every_problem_gets_its_own_line_and_good_books_still_load(write, tmp_path):
    bad = write("bad", HEAD + price(price='"-1"') + price(TOKEN_PRICE, currency='"XYZ"')
                + price(sku='"A100"', source_url=None))
    write("good", HEAD.replace('"test-cloud"', '"good-cloud"') + price(sku='"B200"'))
    books, problems = load_books([tmp_path])
    assert [str(p) for p in unlocated(problems)] == [
        f"{bad}: price[1] {GPU_KEY}: price -1 is negative",
        f"{bad}: price[2] input_tokens/gpt-5/*/*: currency 'XYZ' is not an ISO 4217 code",
        f"{bad}: price[3] gpu_time/A100/us-east-1/on_demand: missing required field 'source_url'",
    ]
    assert [b.name for b in books] == ["good-cloud"]
    result = runner.invoke(app, ["pricebook", "check", str(tmp_path)])
    assert result.exit_code == 1
    assert len(result.stderr.splitlines()) == 3


def test_not_toml_at_all(write):
    path = write("broken", HEAD + "[[price]\n")
    books, problems = load_books([path])
    assert books == [] and len(problems) == 1
    assert str(unlocated(problems)[0]).startswith(f"{path}: not valid TOML: ")


def test_missing_paths_and_empty_folders_are_problems(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    _, problems = load_books([empty, tmp_path / "nope.toml"])
    assert [str(p) for p in problems] == [f"{empty}: no *.toml price books in this folder",
                                          f"{tmp_path / 'nope.toml'}: no such file or folder"]


def test_cli_check_of_a_good_book(write):
    path = write("good", HEAD + price() + price(TOKEN_PRICE))
    result = runner.invoke(app, ["pricebook", "check", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "1 price book, 2 prices: no problems"


# ---- good books ---------------------------------------------------------------------------------

def book(text: str, path: str = "book.toml"):
    b, problems = parse_book(text, path)
    assert problems == [], [str(p) for p in problems]
    return b


def test_a_price_is_the_decimal_written_with_its_provenance():
    b = book(HEAD + price() + price(TOKEN_PRICE, currency='"EUR"'))
    gpu, tok = b.prices
    assert gpu.price == D("6.88") and str(gpu.price) == "6.88" and gpu.list_price == D("6.88")
    assert gpu.currency == "USD"             # the book's currency by default
    assert tok.currency == "EUR"             # unless the price names its own
    assert (gpu.book, gpu.version, gpu.entry, gpu.source_url) == ("test-cloud", "2026-10-01", 1,
                                                                  "https://example.com/pricing")
    assert gpu.effective_from == utc(2026, 6, 1) and gpu.effective_to is None
    assert b.ref == "test-cloud@2026-10-01"
    assert b.digest == hashlib.sha256((HEAD + price() + price(TOKEN_PRICE, currency='"EUR"')).encode()).hexdigest()


def test_region_purchase_option_and_provider_default_to_any():
    b = book(HEAD + price(region=None, purchase_option=None))
    assert b.prices[0].key == ("gpu_time", "H100-SXM-80GB", "*", "*", "*")   # meter, sku, region, option, provider


def test_long_context_tiers_apply_above_their_threshold():
    b = book(HEAD + price(TOKEN_PRICE, sku='"gemini-2.5-pro"', price='"1.25"',
                          tiers='[{ above_input_tokens = 500000, price = "4.00" },'
                                ' { above_input_tokens = 200000, price = "2.50" }]'))
    p = b.prices[0]
    assert [t.above_input_tokens for t in p.tiers] == [200000, 500000]   # sorted whatever the order written
    assert p.price_for_request(0) == D("1.25")
    assert p.price_for_request(200000) == D("1.25")     # "above": 200000 itself is not above
    assert p.price_for_request(200001) == D("2.50")     # ... and the tier prices every token of the request
    assert p.price_for_request(500000) == D("2.50")
    assert p.price_for_request(500001) == D("4.00")


@pytest.mark.parametrize("price_, upfront, term, effective", [
    # 2.00/h + 8760 upfront over 8760 h = 2.00 + 1.00
    ('"2.00"', '"8760"', '"8760 * hour"', D("3.0000000000")),
    # 1.00/h + 17520 upfront over 365 days (8760 h) = 1.00 + 2.00
    ('"1.00"', '"17520"', '"365 * day"', D("3.0000000000")),
    # all upfront: 10000 over 3 * 8760 = 26280 h = 0.38051750380517... -> 0.3805175038 at 1e-10
    ('"0"', '"10000"', '"26280 * hour"', D("0.3805175038")),
])
def test_reserved_upfront_is_amortized_over_the_term(price_, upfront, term, effective):
    b = book(HEAD + price(purchase_option='"reserved"', price=price_, upfront=upfront, term=term))
    p = b.prices[0]
    assert p.price == effective
    assert p.list_price == D(price_.strip('"'))
    assert p.upfront == D(upfront.strip('"'))
    assert p.term == term.strip('"')


def test_reserved_per_gpu_second_amortizes_over_seconds():
    # 0.001/GPU-s + 36 upfront over 10 h = 36000 s: 0.001 + 0.001 = 0.002 per GPU-second
    b = book(HEAD + price(purchase_option='"reserved"', price='"0.001"', per='"gpu * second"', upfront='"36"',
                          term='"10 * hour"'))
    assert b.prices[0].price == D("0.002")


REGIONAL = (HEAD
            + price()                                                         # us-east-1: 6.88
            + price(region='"*"', price='"7.50"')                             # anywhere else: 7.50
            + price(region='"*"', purchase_option='"spot"', price='"2.10"')   # spot anywhere: 2.10
            + price(TOKEN_PRICE))                                             # tokens: any region, any option


def test_price_at_prefers_the_exact_region_then_falls_back_to_any():
    idx = PriceIndex([book(REGIONAL)])
    at = utc(2026, 10, 15)
    key = dict(meter="gpu_time", sku="H100-SXM-80GB", at=at)
    assert idx.price_at(region="us-east-1", purchase_option="on_demand", **key).price == D("6.88")
    assert idx.price_at(region="eu-west-1", purchase_option="on_demand", **key).price == D("7.50")
    assert idx.price_at(region="us-east-1", purchase_option="spot", **key).price == D("2.10")
    tok = idx.price_at(meter="input_tokens", sku="gpt-5", region="ap-south-1", purchase_option="on_demand", at=at)
    assert (tok.price, tok.region, tok.purchase_option) == (D("1.25"), "*", "*")


# gpt-5 input tokens: 1.25 from any provider, 1.375 on Azure, 0.6875 on Azure's batch tier, and 0.625 on the
# batch tier of any other provider. Four keys: none overlaps another, however their ranges lie.
PROVIDERS = (HEAD
             + price(TOKEN_PRICE)
             + price(TOKEN_PRICE, provider='"azure"', price='"1.375"')
             + price(TOKEN_PRICE, provider='"azure"', purchase_option='"batch"', price='"0.6875"')
             + price(TOKEN_PRICE, purchase_option='"batch"', price='"0.625"'))


@pytest.mark.parametrize("provider, tier, expected", [
    ("openai", "standard", D("1.25")),    # no openai price: provider *, tier *
    ("openai", "batch", D("0.625")),      # provider *, tier batch
    ("azure", "standard", D("1.375")),    # the exact provider first, tier *
    ("azure", "batch", D("0.6875")),      # exact provider and tier
    ("azure", "flex", D("1.375")),        # no flex price: azure's tier * before provider * batch/*
])
def test_price_at_tries_the_exact_provider_then_any_with_the_tier_as_purchase_option(provider, tier, expected):
    idx = PriceIndex([book(PROVIDERS)])
    p = idx.price_at(meter="input_tokens", sku="gpt-5", purchase_option=tier, provider=provider,
                     at=utc(2026, 10, 15))
    assert p.price == expected


def test_price_at_without_a_provider_keeps_its_old_meaning():
    idx = PriceIndex([book(PROVIDERS)])
    at = utc(2026, 10, 15)
    # provider defaults to "*": only prices for any provider answer, never Azure's
    assert idx.price_at(meter="input_tokens", sku="gpt-5", at=at).price == D("1.25")
    assert idx.price_at(meter="input_tokens", sku="gpt-5", purchase_option="batch", at=at).price == D("0.625")
    assert [p.provider for p in idx.in_force(at)] == ["*", "azure", "*", "azure"]
    assert [p.price for p in idx.in_force(at, provider="azure")] == [D("1.25"), D("1.375"), D("0.625"), D("0.6875")]
    assert [p.price for p in idx.in_force(at, provider="openai")] == [D("1.25"), D("0.625")]
    azure_only = PriceIndex([book(HEAD + price(TOKEN_PRICE, provider='"azure"'))])
    with pytest.raises(NoPriceError) as e:
        azure_only.price_at(meter="input_tokens", sku="gpt-5", provider="openai", at=at)
    assert str(e.value) == ("no price in force for meter input_tokens, sku gpt-5, region *, purchase option *, "
                            "provider openai at 2026-10-15T00:00:00+00:00")


def test_the_same_key_for_two_providers_is_no_overlap_within_or_across_books(write, tmp_path):
    a = write("a", PROVIDERS)
    b = write("b", HEAD.replace('"test-cloud"', '"other-cloud"')
              + price(TOKEN_PRICE, provider='"bedrock"', price='"1.30"')
              + price(TOKEN_PRICE, provider='"azure"', price='"1.40"', effective_from="2026-09-01T00:00:00Z"))
    books, problems = load_books([a, b])
    # bedrock is a key of its own; azure's tier-* price is in both books at once: the later file takes the blame
    assert [str(x) for x in unlocated(problems)] == [
        f"{b}: price[2] input_tokens/gpt-5/*/*/azure: overlaps price[2] of book test-cloud@2026-10-01 for the same key"]


def test_no_price_in_force_is_an_error_naming_meter_sku_region_and_time():
    idx = PriceIndex([book(REGIONAL)])
    with pytest.raises(NoPriceError) as e:
        idx.price_at(meter="gpu_time", sku="B200", region="us-east-1", purchase_option="on_demand",
                     at=utc(2026, 10, 15))
    assert str(e.value) == ("no price in force for meter gpu_time, sku B200, region us-east-1, purchase option"
                            " on_demand at 2026-10-15T00:00:00+00:00")
    with pytest.raises(NoPriceError, match="at 2026-05-31T23:59:59"):   # before the price starts
        idx.price_at(meter="gpu_time", sku="H100-SXM-80GB", region="us-east-1", purchase_option="on_demand",
                     at=utc(2026, 5, 31, 23, 59, 59))
    assert issubclass(NoPriceError, LookupError) and issubclass(NoPriceError, ValueError)


def test_price_at_needs_an_aware_instant():
    idx = PriceIndex([book(REGIONAL)])
    with pytest.raises(ValueError, match="aware"):
        idx.price_at(meter="gpu_time", sku="H100-SXM-80GB", at=datetime(2026, 10, 15))


DATED = (HEAD
         + price(effective_to="2026-10-01T00:00:00Z")                                    # 6.88 until October
         + price(price='"6.50"', effective_from="2026-10-01T00:00:00Z",
                 effective_to="2026-11-01T00:00:00Z")                                   # 6.50 in October
         + price(price='"6.00"', effective_from="2026-11-02T00:00:00Z"))                 # gap on Nov 1, then 6.00


@pytest.mark.parametrize("at, expected", [
    (utc(2026, 9, 30, 23, 59, 59, 999999), D("6.88")),                 # the instant before the boundary
    (utc(2026, 10, 1), D("6.50")),                                     # at the boundary: end exclusive
    (datetime(2026, 10, 1, 2, tzinfo=timezone(timedelta(hours=2))), D("6.50")),  # same instant, +02:00
    (utc(2026, 10, 31, 23, 59, 59), D("6.50")),
    (utc(2026, 11, 2), D("6.00")),
    (utc(2030, 1, 1), D("6.00")),                                      # open-ended
])
def test_dated_change_is_end_exclusive(at, expected):
    idx = PriceIndex([book(DATED)])
    assert idx.price_at(meter="gpu_time", sku="H100-SXM-80GB", region="us-east-1", purchase_option="on_demand",
                        at=at).price == expected


def test_a_gap_between_prices_is_no_price_and_changes_lists_the_boundaries():
    idx = PriceIndex([book(DATED)])
    key = dict(meter="gpu_time", sku="H100-SXM-80GB", region="us-east-1", purchase_option="on_demand")
    with pytest.raises(NoPriceError):
        idx.price_at(at=utc(2026, 11, 1, 12), **key)
    assert idx.changes(**key) == [utc(2026, 6, 1), utc(2026, 10, 1), utc(2026, 11, 1), utc(2026, 11, 2)]


def test_in_force_lists_the_prices_at_an_instant_with_filters():
    idx = PriceIndex([book(REGIONAL)])
    at = utc(2026, 10, 15)
    assert len(idx.in_force(at)) == 4
    assert [p.price for p in idx.in_force(at, meter="gpu_time", region="us-east-1")] == [D("7.50"), D("2.10"),
                                                                                        D("6.88")]
    assert [p.sku for p in idx.in_force(at, meter="input_tokens")] == ["gpt-5"]
    assert idx.in_force(utc(2026, 1, 1)) == []


FX_BOOK = (HEAD + price()
           + fx(rate='"1.08"', effective_to="2026-11-01T00:00:00Z")
           + fx(rate='"1.10"', effective_from="2026-11-01T00:00:00Z"))


def test_fx_is_dated_and_inverse_rates_are_derived():
    idx = PriceIndex([book(FX_BOOK)])
    assert idx.fx_rate("EUR", "USD", utc(2026, 10, 15)) == D("1.08")
    assert idx.fx_rate("EUR", "USD", utc(2026, 10, 31, 23, 59, 59)) == D("1.08")
    assert idx.fx_rate("EUR", "USD", utc(2026, 11, 1)) == D("1.10")            # end exclusive
    assert idx.fx_rate("USD", "EUR", utc(2026, 10, 15)) == D(1) / D("1.08")    # only EUR->USD is in the book
    assert idx.fx_rate("USD", "EUR", utc(2026, 11, 15)) == D(1) / D("1.10")
    assert idx.fx_rate("USD", "USD", utc(2020, 1, 1)) == 1
    with pytest.raises(NoPriceError, match=r"no FX rate in force for EUR->USD at 2026-09-30T00:00:00\+00:00"):
        idx.fx_rate("EUR", "USD", utc(2026, 9, 30))
    with pytest.raises(NoPriceError, match="GBP->USD"):
        idx.fx_rate("GBP", "USD", utc(2026, 10, 15))


def test_the_newest_version_of_a_book_wins(write, tmp_path):
    old = HEAD.replace('"2026-10-01"', '"2026-09-01"') + price(price='"6.88"')
    new = HEAD + price(price='"5.99"') + price(sku='"B200"', price='"9.00"')
    write("test-cloud-2026-09", old)
    write("test-cloud-2026-10", new)
    books, problems = load_books([tmp_path])
    assert problems == []            # two versions of one book never overlap each other
    assert sorted(b.version for b in books) == ["2026-09-01", "2026-10-01"]
    for order in (books, books[::-1]):
        assert [b.ref for b in in_force_books(order)] == ["test-cloud@2026-10-01"]
        idx = PriceIndex(order)
        assert idx.refs == ["test-cloud@2026-10-01"]
        p = idx.price_at(meter="gpu_time", sku="H100-SXM-80GB", region="us-east-1", purchase_option="on_demand",
                         at=utc(2026, 10, 15))
        assert (p.price, p.version) == (D("5.99"), "2026-10-01")


# ---- the shipped books --------------------------------------------------------------------------

def test_the_shipped_price_books_pass_check():
    books, problems = load_books([ROOT / "pricebooks"])
    assert [str(p) for p in problems] == []
    assert books, "pricebooks/ ships no book"
    assert all(p.source_url for b in books for p in b.prices)   # every shipped price names its source


def test_cli_check_defaults_to_the_shipped_books(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)   # no pricebooks/ here: the project's own folder is used
    result = runner.invoke(app, ["pricebook", "check"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith("prices: no problems")
