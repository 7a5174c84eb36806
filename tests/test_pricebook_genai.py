"""`ledger pricebook import genai-prices`: books written from the genai-prices package's bundled data.

Prices are checked against the package's own data and against a few values read from it by hand
(gpt-4o, claude-sonnet-4-5, o3's June 2025 cut); a request priced by the ledger's bucket rule from
the books equals what genai-prices itself computes; the output passes `pricebook check` and loads;
no network is used and an auto-updated snapshot is ignored; unknown providers, a missing package and
a path inside the ledger are refused with one line."""
from __future__ import annotations

import json
import socket
import sys
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from genai_prices import data as gp_data  # the genai-prices extra, part of the test extra
from genai_prices import data_snapshot, types
from ledger.cli import app
from ledger.pricebook import NoPriceError, PriceIndex, load_books, parse_book
from ledger.pricebook.genai_prices import OPEN_START, GenaiPricesError, build_books, write_books


ROOT = Path(__file__).resolve().parent.parent
D = Decimal
UTC = timezone.utc
ON = date(2026, 11, 20)
runner = CliRunner()


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture(scope="module")
def books():
    return {b.provider: b for b in build_books(["openai", "anthropic", "google"], on=ON)}


@pytest.fixture(scope="module")
def index(books):
    parsed = []
    for b in books.values():
        book, problems = parse_book(b.text, f"{b.name}.toml")
        assert problems == []
        parsed.append(book)
    return PriceIndex(parsed)


def gp_model(provider: str, model_id: str):
    p = next(p for p in gp_data.providers if p.id == provider)
    return p, next(m for m in p.models if m.id == model_id)


def price(index, meter, sku, provider, at, tier="standard"):
    return index.price_at(meter=meter, sku=sku, purchase_option=tier, provider=provider, at=at)


def test_gpt_4o_standard_and_batch_prices_are_the_packages(index):
    _, m = gp_model("openai", "gpt-4o")
    at = utc(2026, 11, 1)
    std = m.get_prices(at)
    batch = m.get_prices(at, {"processing": "batch"})
    got = {meter: price(index, meter, "gpt-4o", "openai", at).price
           for meter in ("input_tokens", "cached_input_tokens", "output_tokens")}
    assert got == {"input_tokens": std.input_mtok, "cached_input_tokens": std.cache_read_mtok,
                   "output_tokens": std.output_mtok}
    assert got == {"input_tokens": D("2.5"), "cached_input_tokens": D("1.25"), "output_tokens": D("10")}
    # the batch variant (from 2026-10-14) halves input and output; it names no cached price, so a
    # batch request's cached reads take the standard one, in genai-prices and in the ledger
    assert price(index, "input_tokens", "gpt-4o", "openai", at, "batch").price == batch.input_mtok == D("1.25")
    assert price(index, "output_tokens", "gpt-4o", "openai", at, "batch").price == batch.output_mtok == D("5")
    cached = price(index, "cached_input_tokens", "gpt-4o", "openai", at, "batch")
    assert (cached.purchase_option, cached.price) == ("*", D("1.25"))
    before = price(index, "input_tokens", "gpt-4o", "openai", utc(2026, 10, 13, 23, 59), "batch")
    assert (before.purchase_option, before.price) == ("*", D("2.5"))  # no batch history before 2026-10-14
    # an exact alias genai-prices resolves to the model is a sku of its own
    assert price(index, "input_tokens", "gpt-4o-2024-08-06", "openai", at).price == D("2.5")
    # and every entry is in USD per 1M tokens, for provider openai
    p = price(index, "input_tokens", "gpt-4o", "openai", at)
    assert (p.currency, p.per, p.provider, p.region) == ("USD", "1e6 * token", "openai", "*")


def test_claude_sonnet_4_5_cache_writes_reads_and_tiers(index):
    _, m = gp_model("anthropic", "claude-sonnet-4-5")
    at = utc(2026, 11, 1)
    std = m.get_prices(at)
    expected = {"input_tokens": (std.input_mtok, D("3"), D("6")),
                "cached_input_tokens": (std.cache_read_mtok, D("0.3"), D("0.6")),
                "cache_write_tokens": (std.cache_write_mtok, D("3.75"), D("7.5")),
                "cache_write_1h_tokens": (std.cache_write_1h_mtok, D("6"), D("12")),
                "output_tokens": (std.output_mtok, D("15"), D("22.5"))}
    for meter, (package, base, above) in expected.items():
        p = price(index, meter, "claude-sonnet-4-5", "anthropic", at)
        assert p.price == package.base == base, meter
        # genai-prices' tier: above 200,000 input tokens the tier price for every token; the ledger's
        # tiers mean the same, so the tier is carried as it is
        assert [(t.above_input_tokens, t.price) for t in p.tiers] == [(t.start, t.price) for t in package.tiers]
        assert p.price_for_request(200_000) == base and p.price_for_request(200_001) == above, meter
    # no reasoning price in genai-prices: none is written, so the ledger bills reasoning as output
    with pytest.raises(NoPriceError):
        price(index, "reasoning_tokens", "claude-sonnet-4-5", "anthropic", at)


def test_a_dated_price_change_is_two_adjacent_ranges(index, books):
    # o3: genai-prices has 10 / 40 until its 2025-06-10 cut, then 2 / 8; cached reads 0.5 throughout
    _, m = gp_model("openai", "o3")
    cut = utc(2025, 6, 10)
    assert [c.constraint.start_date for c in m.prices if c.constraint] == [cut.date()]
    entries = [e for e in books["openai"].entries
               if e.sku == "o3" and e.purchase_option == "*" and e.meter == "input_tokens"]
    assert [(e.price, e.effective_from, e.effective_to) for e in entries] == [
        (D("10"), OPEN_START, cut), (D("2"), cut, None)]
    assert price(index, "input_tokens", "o3", "openai", utc(2025, 6, 9, 23, 59, 59)).price == D("10")
    assert price(index, "input_tokens", "o3", "openai", cut).price == D("2")
    assert price(index, "output_tokens", "o3", "openai", cut).price == D("8")
    cached = [e for e in books["openai"].entries
              if e.sku == "o3" and e.purchase_option == "*" and e.meter == "cached_input_tokens"]
    assert [(e.price, e.effective_from, e.effective_to) for e in cached] == [(D("0.5"), OPEN_START, None)]


def _ledger_cost(index, sku, provider, at, tier, *, input_tokens, cached=0, write_5m=0, write_1h=0, output=0,
                 reasoning=0) -> Decimal:
    """A request priced from the books by the ledger's buckets (docs/pricebooks.md): writes with no
    price of their own at the input price, reasoning at the output price unless priced apart."""
    def rate(meter, fallback=None):
        try:
            return price(index, meter, sku, provider, at, tier).price_for_request(input_tokens)
        except NoPriceError:
            if fallback is None:
                raise
            return rate(fallback)

    uncached = input_tokens - cached - write_5m - write_1h
    cost = (uncached * rate("input_tokens") + cached * rate("cached_input_tokens")
            + write_5m * rate("cache_write_tokens", "input_tokens")
            + write_1h * rate("cache_write_1h_tokens", "input_tokens"))
    try:
        cost += reasoning * rate("reasoning_tokens") + (output - reasoning) * rate("output_tokens")
    except NoPriceError:
        cost += output * rate("output_tokens")
    return cost / 1_000_000


REQUESTS = [  # (provider, sku, instant, tier, tokens)
    ("anthropic", "claude-sonnet-4-5", utc(2026, 11, 1), "standard",
     dict(input_tokens=150_000, cached=40_000, write_5m=30_000, write_1h=20_000, output=5_000, reasoning=2_000)),
    ("anthropic", "claude-sonnet-4-5", utc(2026, 11, 1), "standard",  # above the 200K tier
     dict(input_tokens=250_000, cached=100_000, write_5m=50_000, write_1h=10_000, output=8_000)),
    ("anthropic", "claude-sonnet-4-5", utc(2026, 11, 1), "batch",
     dict(input_tokens=150_000, cached=40_000, write_5m=30_000, write_1h=20_000, output=5_000)),
    ("openai", "gpt-4o", utc(2026, 11, 1), "batch", dict(input_tokens=1_000_000, cached=400_000, output=200_000)),
    ("openai", "o3", utc(2025, 6, 9), "standard",
     dict(input_tokens=1_000_000, cached=400_000, output=200_000, reasoning=80_000)),
    ("openai", "o3-2025-04-16", utc(2025, 6, 10), "standard", dict(input_tokens=1_000_000, output=200_000)),
    ("openai", "gpt-4", utc(2026, 11, 1), "standard", dict(input_tokens=1_000, cached=500, output=100)),
    ("google", "gemini-2.5-pro", utc(2026, 11, 1), "standard", dict(input_tokens=300_000, cached=100_000,
                                                                      output=10_000)),
    ("openai", "gpt-5", utc(2026, 11, 1), "flex", dict(input_tokens=10_000, cached=4_000, output=1_000)),
    ("openai", "gpt-5-2025-08-07", utc(2026, 11, 1), "priority", dict(input_tokens=10_000, output=1_000)),
    ("google", "gemini-2.5-pro", utc(2026, 11, 1), "batch", dict(input_tokens=300_000, output=1_000)),
    # a cache write price and no 1-hour one: genai-prices bills 1-hour writes at the write price
    ("google", "claude-3-5-haiku", utc(2026, 11, 1), "standard",
     dict(input_tokens=100_000, cached=10_000, write_5m=20_000, write_1h=30_000, output=1_000)),
]
CONTEXT = {"standard": None, "batch": {"processing": "batch"}, "flex": {"service_tier": "flex"},
           "priority": {"service_tier": "priority"}}


@pytest.mark.parametrize("provider, sku, at, tier, tokens", REQUESTS,
                         ids=[f"{r[1]}-{r[3]}-{r[2]:%Y%m%d}" for r in REQUESTS])
def test_a_request_costs_what_genai_prices_computes(index, provider, sku, at, tier, tokens):
    p = next(p for p in gp_data.providers if p.id == provider)
    usage = types.Usage(input_tokens=tokens["input_tokens"], cache_read_tokens=tokens.get("cached", 0),
                        cache_write_tokens=tokens.get("write_5m", 0) + tokens.get("write_1h", 0),
                        cache_write_1h_tokens=tokens.get("write_1h", 0), output_tokens=tokens.get("output", 0),
                        output_reasoning_tokens=tokens.get("reasoning", 0))
    theirs = p.find_model(sku).calc_price(usage, p, genai_request_timestamp=at, price_context=CONTEXT[tier])
    assert _ledger_cost(index, sku, provider, at, tier, **tokens) == theirs.total_price


def test_hand_worked_request_cost(index):
    # claude-sonnet-4-5, 150,000 input of which 40,000 cached reads, 30,000 5-minute and 20,000
    # 1-hour writes; 5,000 output: 60,000 × 3 + 40,000 × 0.30 + 30,000 × 3.75 + 20,000 × 6
    # + 5,000 × 15 = 180,000 + 12,000 + 112,500 + 120,000 + 75,000 = 499,500 per 1M = 0.4995 USD
    cost = _ledger_cost(index, "claude-sonnet-4-5", "anthropic", utc(2026, 11, 1), "standard",
                        input_tokens=150_000, cached=40_000, write_5m=30_000, write_1h=20_000, output=5_000)
    assert cost == D("0.4995")


def test_every_amount_is_decimal_text_never_a_float(books):
    text = books["openai"].text
    assert "\nprice = \"2.5\"\n" in text and "\nprice = 2.5\n" not in text
    assert all(line.startswith('price = "') for line in text.splitlines() if line.startswith("price ="))


def test_cli_writes_books_that_pass_check_and_load_beside_the_shipped_ones(ledger_home, tmp_path):
    out = tmp_path / "books"
    out.mkdir()
    r = runner.invoke(app, ["pricebook", "import", "genai-prices", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [b["provider"] for b in doc["books"]] == ["openai", "anthropic", "google"]
    assert sorted(p.name for p in out.iterdir()) == [
        "genai-prices-anthropic.toml", "genai-prices-google.toml", "genai-prices-openai.toml"]  # no temp files left
    assert all(b["entries"] > 100 and Path(b["file"]).is_file() for b in doc["books"])
    assert doc["books"][0]["not_imported"]["price key web_searches_kcount"] > 0
    check = runner.invoke(app, ["pricebook", "check", str(out), str(ROOT / "pricebooks")])
    assert check.exit_code == 0, check.output
    books, problems = load_books([out])
    assert problems == [] and sum(len(b.prices) for b in books) == sum(b["entries"] for b in doc["books"])
    load = runner.invoke(app, ["pricebook", "load", str(out), str(ROOT / "pricebooks")])
    assert load.exit_code == 0, load.output
    assert "genai-prices-openai@" in load.stdout and ": loaded" in load.stdout
    # the same import again rewrites the same content: loading it again is "unchanged"
    again = runner.invoke(app, ["pricebook", "import", "genai-prices", "--out", str(out)])
    assert again.exit_code == 0, again.output
    reload = runner.invoke(app, ["pricebook", "load", str(out)])
    assert reload.exit_code == 0 and reload.stdout.count(": unchanged") == 3, reload.output


def test_unknown_provider_is_refused_with_one_line_and_nothing_written(tmp_path):
    r = runner.invoke(app, ["pricebook", "import", "genai-prices", "--providers", "openai,nope", "--out",
                            str(tmp_path)])
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("unknown genai-prices provider 'nope': known are ")
    assert list(tmp_path.iterdir()) == []


def test_missing_package_names_the_extra_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # import genai_prices now fails
    r = runner.invoke(app, ["pricebook", "import", "genai-prices", "--out", str(tmp_path)])
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [
        "genai-prices is not installed: install the genai-prices extra: pip install 'ledger[genai-prices]'"]


def test_output_inside_the_ledger_is_refused(ledger_home):
    facts = ledger_home / "facts"
    facts.mkdir(exist_ok=True)
    r = runner.invoke(app, ["pricebook", "import", "genai-prices", "--providers", "anthropic", "--out", str(facts)])
    assert r.exit_code == 1
    assert "inside the ledger's facts folder" in r.stderr
    assert list(facts.glob("*.toml")) == []


def test_only_the_bundled_data_is_read_without_network(books, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the import must not open a connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    # an auto-updated snapshot (what UpdatePrices installs) is ignored: the bundled data is used
    monkeypatch.setattr(data_snapshot, "_custom_snapshot",
                        data_snapshot.DataSnapshot(providers=[], from_auto_update=True))
    again, = build_books(["anthropic"], on=ON)
    assert again.text == books["anthropic"].text


def test_what_cannot_be_mapped_is_reported_not_guessed(books):
    # OpenAI's "fast" tier and Anthropic's fast mode are no ledger service tier; tool-call prices
    # per model have no token meter
    assert books["openai"].skipped["price variant service_tier=fast"] > 0
    assert books["anthropic"].skipped["price variant speed=fast"] > 0
    assert all(e.purchase_option in ("*", "batch", "flex", "priority", "standard")
               for b in books.values() for e in b.entries)
    # a model with an amount the ledger cannot store exactly (0.18000000000000002) is left out whole
    together, = build_books(["huggingface_together"], on=ON)
    assert together.skipped["models with a price of more than 12 decimal places"] > 0
    assert parse_book(together.text, "together.toml")[1] == []


def test_provider_list_errors_are_one_line(tmp_path):
    with pytest.raises(GenaiPricesError, match="no provider given"):
        build_books([" ", ""], on=ON)
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    with pytest.raises(GenaiPricesError, match=r"cannot write into .*a-file: it is a file, not a folder"):
        write_books([], tmp_path / "a-file")
    assert write_books([], tmp_path / "no-such-folder") == [] and not (tmp_path / "no-such-folder").exists()
