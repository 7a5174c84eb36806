"""The ledger DB on SQLite and PostgreSQL: migrations, exact money, dims, price book loading and showing."""
from __future__ import annotations

import json
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from sqlmodel import SQLModel, select
from typer.testing import CliRunner

from ledger import store
from ledger.cli import app
from ledger.models import AllocationLine, AllocationRun, FxRateRow, PriceBookRow, PriceEntryRow
from test_pricebook import cli_line

pytestmark = pytest.mark.store

D = Decimal
UTC = timezone.utc
runner = CliRunner()

#: Values that must come back exactly: 20 significant digits, the ledger's micro-unit, signs, zero.
EXACT_VALUES = [D("12345678901234.123456"), D("0.000001"), D("-0.000001"), D("-98765432109876.543210"),
                D("0"), D("6.88"), D("1000")]


@pytest.fixture(autouse=True)
def _close_engines():
    yield
    store.dispose_engines()


def head_revision(url: str) -> str:
    return ScriptDirectory.from_config(store.alembic_config(url)).get_current_head()


def flat(text: str) -> str:
    """CLI output with rich's line wrapping undone."""
    return " ".join(text.split())


@pytest.fixture
def uninitialized(db_url, tmp_path, monkeypatch):
    """Point the CLI at an empty database (never migrated)."""
    monkeypatch.setenv("LEDGER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LEDGER_DATABASE_URL", db_url)
    return db_url


# ---- migrations ---------------------------------------------------------------------------------

def test_migrations_upgrade_an_empty_database(db_url):
    head = head_revision(db_url)
    assert store.init_store(db_url) == (None, head)
    insp = sa.inspect(store.engine(db_url))
    assert set(insp.get_table_names()) == set(SQLModel.metadata.tables) | {"alembic_version"}
    # every model column exists in the migrated schema
    for name, table in SQLModel.metadata.tables.items():
        assert {c["name"] for c in insp.get_columns(name)} == set(table.columns.keys()), name


def test_money_columns_are_never_float(db_url):
    store.init_store(db_url)
    eng = store.engine(db_url)
    cols = {c["name"]: c["type"] for c in sa.inspect(eng).get_columns("allocation_line")}
    for name in ("amount", "quantity"):
        t = cols[name]
        assert not isinstance(t, sa.Float)
        if eng.dialect.name == "postgresql":
            assert isinstance(t, sa.Numeric) and (t.precision, t.scale) == (38, 12)
        else:
            assert isinstance(t, sa.String)   # SQLite has no exact decimal: canonical text


def test_migrations_downgrade_to_empty_and_upgrade_again(db_url):
    store.init_store(db_url)
    command.downgrade(store.alembic_config(db_url), "base")
    assert set(sa.inspect(store.engine(db_url)).get_table_names()) <= {"alembic_version"}
    assert store.init_store(db_url) == (None, head_revision(db_url))


def test_init_store_twice_changes_nothing(db_url):
    head = head_revision(db_url)
    store.init_store(db_url)
    with store.session(db_url) as s:
        store.add_dim(s, kind="tenant", name="acme")
    assert store.init_store(db_url) == (head, head)
    with store.session(db_url) as s:
        assert store.dim_names(s, kind="tenant") == {"acme"}


def test_cli_init_twice(uninitialized, tmp_path):
    first = runner.invoke(app, ["init"])
    assert first.exit_code == 0, first.output
    assert flat(first.stdout).endswith("upgraded from empty to revision " + head_revision(uninitialized))
    second = runner.invoke(app, ["init"])
    assert second.exit_code == 0, second.output
    assert flat(second.stdout).endswith(f"is up to date (revision {head_revision(uninitialized)})")
    assert (tmp_path / "home" / "facts").is_dir()


def test_check_initialized_on_an_uninitialized_db(db_url):
    with store.session(db_url) as s:
        with pytest.raises(store.StoreError, match=r"the ledger is not initialized here: run `ledger init`"):
            store.check_initialized(s)


def test_check_initialized_on_an_old_revision(db_url):
    store.init_store(db_url)
    with store.session(db_url) as s:
        s.connection().execute(sa.text("UPDATE alembic_version SET version_num = '0000'"))
    with store.session(db_url) as s:
        with pytest.raises(store.StoreError, match=r"at revision 0000, the code needs .*: run `ledger init`"):
            store.check_initialized(s)


def test_cli_refuses_to_work_on_an_uninitialized_db(uninitialized):
    for args in (["dims", "list", "tenant"], ["pricebook", "show"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1
        assert result.stderr.splitlines() == [
            "the ledger is not initialized here: run `ledger init` (or `ledger demo`)"]


# ---- exact money --------------------------------------------------------------------------------

def _run(total: Decimal = D("1")) -> AllocationRun:
    now = datetime(2026, 10, 1, tzinfo=UTC)
    return AllocationRun(id="run-1", period_start=now, period_end=datetime(2026, 11, 1, tzinfo=UTC),
                         currency="USD", idle_policy="separate", basis="active_tokens", inputs_digest="0" * 64,
                         code_version="test", total=total)


def _line(i: int, value: Decimal) -> AllocationLine:
    return AllocationLine(id=i, run_id="run-1", day=date(2026, 10, 1), kind="tenant", tenant="acme", category="gpu",
                          work="succeeded", quantity=value, unit="gpu * second", amount=value, currency="USD")


def test_money_round_trips_exactly_through_allocation_lines(ledger_home):
    with store.session() as s:
        s.add(_run(total=D("12345678901234.123456")))
        s.flush()
        for i, v in enumerate(EXACT_VALUES, start=1):
            s.add(_line(i, v))
    with store.session() as s:
        run = s.get(AllocationRun, "run-1")
        assert run.total == D("12345678901234.123456")
        lines = list(s.exec(select(AllocationLine).order_by(AllocationLine.id)))
        assert [type(l.amount) for l in lines] == [Decimal] * len(EXACT_VALUES)
        assert [l.amount for l in lines] == EXACT_VALUES
        assert [l.quantity for l in lines] == EXACT_VALUES
        # the sum the database computes is exact too (a float column would lose the micro-units)
        if s.connection().dialect.name == "postgresql":
            total = s.connection().execute(sa.text("SELECT SUM(amount) FROM allocation_line")).scalar_one()
            assert D(total) == sum(EXACT_VALUES)


def test_money_is_stored_as_exact_text_or_numeric(ledger_home):
    with store.session() as s:
        s.add(_run())
        s.flush()
        s.add(_line(1, D("12345678901234.123456")))
    with store.session() as s:
        conn = s.connection()
        if conn.dialect.name == "postgresql":
            kind, text = conn.execute(sa.text("SELECT pg_typeof(amount)::text, amount::text FROM allocation_line")).one()
            assert (kind, text) == ("numeric", "12345678901234.123456000000")
        else:
            kind, text = conn.execute(sa.text("SELECT typeof(amount), amount FROM allocation_line")).one()
            assert (kind, text) == ("text", "12345678901234.123456")


def test_money_round_trips_exactly_through_price_entries(ledger_home):
    with store.session() as s:
        row = PriceBookRow(name="b", version="v1", currency="USD", source="test", retrieved_at=date(2026, 10, 1),
                           digest="0" * 64, content="")
        s.add(row)
        s.flush()
        for i, v in enumerate(EXACT_VALUES, start=1):
            s.add(PriceEntryRow(book_id=row.id, entry=i, meter="gpu_time", sku="H100", region="*",
                                purchase_option="*", price=v, list_price=v, upfront=v, currency="USD",
                                per="gpu * hour", effective_from=datetime(2026, 1, 1, tzinfo=UTC), source_url="x"))
        s.add(FxRateRow(book_id=row.id, from_currency="EUR", to_currency="USD", rate=D("1.081234567891"),
                        effective_from=datetime(2026, 1, 1, tzinfo=UTC)))
    with store.session() as s:
        entries = list(s.exec(select(PriceEntryRow).order_by(PriceEntryRow.entry)))
        assert [(e.price, e.list_price, e.upfront) for e in entries] == [(v, v, v) for v in EXACT_VALUES]
        assert s.exec(select(FxRateRow)).one().rate == D("1.081234567891")


def test_money_columns_refuse_floats(ledger_home):
    with pytest.raises(sa.exc.StatementError, match="Money columns refuse floats"):
        with store.session() as s:
            s.add(_run(total=0.1))


def test_money_is_never_rounded_silently(ledger_home):
    # 13 decimal places: SQLite keeps them as text; PostgreSQL's NUMERIC(38, 12) cannot, so it is refused
    value = D("1.0000000000001")
    with store.session() as s:
        dialect = s.connection().dialect.name
    if dialect == "postgresql":
        with pytest.raises(sa.exc.StatementError, match="more than 12 decimal places"):
            with store.session() as s:
                s.add(_run(total=value))
    else:
        with store.session() as s:
            s.add(_run(total=value))
        with store.session() as s:
            assert s.get(AllocationRun, "run-1").total == value


# ---- dims ---------------------------------------------------------------------------------------

def dims(kind: str) -> list[dict]:
    result = runner.invoke(app, ["dims", "list", kind, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_dims_add_and_list(ledger_home):
    r = runner.invoke(app, ["dims", "add", "tenant", "acme", "--display-name", "Acme Corp", "--owner", "finance"])
    assert (r.exit_code, r.stdout.strip()) == (0, "tenant acme added")
    r = runner.invoke(app, ["dims", "add", "tenant", "acme"])
    assert (r.exit_code, r.stdout.strip()) == (0, "tenant acme already registered")
    r = runner.invoke(app, ["dims", "add", "products", "chat"])          # plural kinds are accepted
    assert (r.exit_code, r.stdout.strip()) == (0, "product chat added")
    assert dims("tenant") == [{"name": "acme", "display_name": "Acme Corp", "owner": "finance"}]
    assert dims("product") == [{"name": "chat", "display_name": "chat", "owner": ""}]   # display name defaults


def test_dims_add_refuses_an_unknown_kind(ledger_home):
    r = runner.invoke(app, ["dims", "add", "widget", "x"])
    assert r.exit_code == 1
    assert r.stderr.splitlines() == ["kind 'widget': expected tenant or product"]


def test_dims_import(ledger_home, tmp_path):
    runner.invoke(app, ["dims", "add", "tenant", "globex"])
    csv = tmp_path / "tenants.csv"
    csv.write_text("name,display_name,owner\nacme,Acme Corp,finance\nglobex,Globex,ops\ninitech,,\n",
                   encoding="utf-8")
    r = runner.invoke(app, ["dims", "import", "tenant", str(csv)])
    assert r.exit_code == 0, r.output
    assert flat(r.stdout) == f"{csv}: 3 tenants read, 2 added, 1 already registered"
    assert dims("tenant") == [{"name": "acme", "display_name": "Acme Corp", "owner": "finance"},
                              {"name": "globex", "display_name": "globex", "owner": ""},    # first registration kept
                              {"name": "initech", "display_name": "initech", "owner": ""}]


def test_dims_import_of_a_bad_csv_writes_nothing(ledger_home, tmp_path):
    csv = tmp_path / "tenants.csv"
    csv.write_text("name,display_name,colour\nacme,Acme Corp,red\n,Nobody,blue\nglobex,Globex,green\n",
                   encoding="utf-8")
    r = runner.invoke(app, ["dims", "import", "tenant", str(csv)])
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [
        f"{csv}:1: colour: unknown column (expected name, display_name, owner)",
        f"{csv}:3: name: empty",
    ]
    assert dims("tenant") == []


def test_dims_import_needs_a_name_column(ledger_home, tmp_path):
    csv = tmp_path / "products.csv"
    csv.write_text("display_name,owner\nChat,web\n", encoding="utf-8")
    r = runner.invoke(app, ["dims", "import", "product", str(csv)])
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [f"{csv}:1: name: missing required column"]
    assert dims("product") == []


# ---- price books --------------------------------------------------------------------------------

BOOK = """
[book]
name = "test-cloud"
version = "2026-10-01"
currency = "USD"
source = "written by hand for the tests"
retrieved_at = 2026-10-01

[[price]]
meter = "gpu_time"
sku = "H100-SXM-80GB"
region = "us-east-1"
purchase_option = "on_demand"
price = "6.88"
per = "gpu * hour"
effective_from = 2026-06-01T00:00:00Z
source_url = "https://example.com/on-demand"

[[price]]
meter = "gpu_time"
sku = "H100-SXM-80GB"
region = "us-east-1"
purchase_option = "reserved"
price = "2.00"
upfront = "8760"
term = "8760 * hour"
per = "gpu * hour"
effective_from = 2026-06-01T00:00:00Z
effective_to = 2027-06-01T00:00:00Z
source_url = "https://example.com/reserved"

[[price]]
meter = "input_tokens"
sku = "gemini-2.5-pro"
region = "*"
purchase_option = "*"
price = "1.25"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/tokens"
tiers = [{ above_input_tokens = 200000, price = "2.50" }]

[[fx]]
from = "EUR"
to = "USD"
rate = "1.08"
effective_from = 2026-10-01T00:00:00Z
"""


@pytest.fixture
def book_file(tmp_path) -> Path:
    path = tmp_path / "books" / "test-cloud.toml"
    path.parent.mkdir()
    path.write_text(BOOK, encoding="utf-8")
    return path


def load(*paths: Path):
    return runner.invoke(app, ["pricebook", "load", *map(str, paths)])


def test_pricebook_load_stores_the_book_as_written(ledger_home, book_file):
    r = load(book_file)
    assert (r.exit_code, r.stdout.strip()) == (0, "test-cloud@2026-10-01: loaded")
    with store.session() as s:
        row = s.exec(select(PriceBookRow)).one()
        assert (row.name, row.version, row.content) == ("test-cloud", "2026-10-01", BOOK)
        entries = list(s.exec(select(PriceEntryRow).order_by(PriceEntryRow.entry)))
        assert [(e.meter, e.purchase_option, e.price, e.list_price) for e in entries] == [
            ("gpu_time", "on_demand", D("6.88"), D("6.88")),
            ("gpu_time", "reserved", D("3"), D("2.00")),       # 2.00 + 8760 / 8760 h
            ("input_tokens", "*", D("1.25"), D("1.25")),
        ]
        assert json.loads(entries[2].tiers) == [{"above_input_tokens": 200000, "price": "2.50"}]
        assert s.exec(select(FxRateRow)).one().rate == D("1.08")
        assert [b.ref for b in store.books_from_store(s)] == ["test-cloud@2026-10-01"]


def test_a_loaded_version_is_immutable(ledger_home, book_file):
    assert load(book_file).exit_code == 0
    again = load(book_file)
    assert (again.exit_code, again.stdout.strip()) == (0, "test-cloud@2026-10-01: unchanged")

    book_file.write_text(BOOK.replace('price = "6.88"', 'price = "6.50"'), encoding="utf-8")
    changed = load(book_file)
    assert changed.exit_code == 1
    [line] = changed.stderr.splitlines()
    assert line.startswith(f"{book_file}: book test-cloud@2026-10-01 is already loaded with different content")
    assert line.endswith("a loaded version is immutable: give the changed book a new version")
    with store.session() as s:
        assert s.exec(select(PriceBookRow)).one().content == BOOK          # the loaded version is untouched

    book_file.write_text(BOOK.replace('price = "6.88"', 'price = "6.50"').replace('"2026-10-01"', '"2026-11-01"'),
                         encoding="utf-8")
    newer = load(book_file)
    assert (newer.exit_code, newer.stdout.strip()) == (0, "test-cloud@2026-11-01: loaded")


def test_load_refuses_a_bad_book_and_stores_nothing(ledger_home, book_file):
    book_file.write_text(BOOK.replace('price = "6.88"', 'price = "-6.88"'), encoding="utf-8")
    r = load(book_file)
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [cli_line(book_file, book_file.read_text(encoding="utf-8"),
                                              "price[1] gpu_time/H100-SXM-80GB/us-east-1/on_demand: price -6.88 is "
                                              "negative")]
    with store.session() as s:
        assert s.exec(select(PriceBookRow)).all() == []


def test_load_refuses_a_book_that_overlaps_one_already_loaded(ledger_home, book_file, tmp_path):
    assert load(book_file).exit_code == 0
    other = tmp_path / "other.toml"
    other.write_text(BOOK.replace('"test-cloud"', '"other-cloud"'), encoding="utf-8")
    r = load(other)
    assert r.exit_code == 1
    # every line names the file being loaded, not the book already in the ledger
    text = other.read_text(encoding="utf-8")
    assert r.stderr.splitlines() == [cli_line(other, text, problem) for problem in (
        "price[1] gpu_time/H100-SXM-80GB/us-east-1/on_demand: overlaps price[1] of book test-cloud@2026-10-01 for "
        "the same key",
        "price[2] gpu_time/H100-SXM-80GB/us-east-1/reserved: overlaps price[2] of book test-cloud@2026-10-01 for the "
        "same key",
        "price[3] input_tokens/gemini-2.5-pro/*/*: overlaps price[3] of book test-cloud@2026-10-01 for the same key")]
    with store.session() as s:
        assert [b.name for b in s.exec(select(PriceBookRow))] == ["test-cloud"]


def test_pricebook_show_json(ledger_home, book_file):
    assert load(book_file).exit_code == 0
    r = runner.invoke(app, ["pricebook", "show", "--at", "2026-10-15T00:00:00Z", "--meter", "gpu_time", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["at"] == "2026-10-15T00:00:00+00:00"
    assert data["prices"] == [
        {"meter": "gpu_time", "sku": "H100-SXM-80GB", "region": "us-east-1", "purchase_option": "on_demand",
         "provider": "*", "price": "6.88", "list_price": "6.88", "currency": "USD", "per": "gpu * hour",
         "upfront": None, "term": None, "tiers": [], "effective_from": "2026-06-01T00:00:00+00:00",
         "effective_to": None,
         "book": "test-cloud", "version": "2026-10-01", "source_url": "https://example.com/on-demand"},
        {"meter": "gpu_time", "sku": "H100-SXM-80GB", "region": "us-east-1", "purchase_option": "reserved",
         "provider": "*", "price": "3.0000000000", "list_price": "2.00", "currency": "USD", "per": "gpu * hour",
         "upfront": "8760", "term": "8760 * hour", "tiers": [], "effective_from": "2026-06-01T00:00:00+00:00",
         "effective_to": "2027-06-01T00:00:00+00:00", "book": "test-cloud", "version": "2026-10-01",
         "source_url": "https://example.com/reserved"},
    ]


def test_pricebook_show_json_tiers_and_the_newest_version(ledger_home, book_file):
    assert load(book_file).exit_code == 0
    book_file.write_text(BOOK.replace('price = "1.25"', 'price = "1.00"').replace('"2026-10-01"', '"2026-11-01"'),
                         encoding="utf-8")
    assert load(book_file).exit_code == 0
    r = runner.invoke(app, ["pricebook", "show", "--at", "2026-10-15T00:00:00Z", "--meter", "input_tokens",
                            "--json"])
    assert r.exit_code == 0, r.output
    [p] = json.loads(r.stdout)["prices"]
    assert (p["price"], p["book"], p["version"]) == ("1.00", "test-cloud", "2026-11-01")
    assert p["tiers"] == [{"above_input_tokens": 200000, "price": "2.50"}]
    # before the reserved price starts nothing is in force for it; after its end neither
    r = runner.invoke(app, ["pricebook", "show", "--at", "2027-06-01T00:00:00Z", "--meter", "gpu_time", "--json"])
    assert [q["purchase_option"] for q in json.loads(r.stdout)["prices"]] == ["on_demand"]


def test_pricebook_show_errors(ledger_home, book_file):
    r = runner.invoke(app, ["pricebook", "show", "--json"])
    assert r.exit_code == 1
    assert r.stderr.splitlines() == ["no price books are loaded: run `ledger pricebook load`"]
    assert load(book_file).exit_code == 0
    r = runner.invoke(app, ["pricebook", "show", "--at", "2026-10-15T00:00:00", "--json"])
    assert r.exit_code == 1
    assert r.stderr.splitlines() == ["--at: '2026-10-15T00:00:00' has no UTC offset (add Z or +00:00)"]


# ---- prices of one model from several providers -------------------------------------------------

PROVIDER_BOOK = BOOK.replace('name = "test-cloud"', 'name = "tokens"') + """
[[price]]
meter = "input_tokens"
sku = "gemini-2.5-pro"
provider = "vertex"
price = "1.30"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/vertex"

[[price]]
meter = "input_tokens"
sku = "gemini-2.5-pro"
provider = "vertex"
purchase_option = "batch"
price = "0.65"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/vertex-batch"
"""


def test_the_provider_of_a_price_is_stored_shown_and_part_of_the_overlap_key(ledger_home, tmp_path):
    path = tmp_path / "tokens.toml"
    path.write_text(PROVIDER_BOOK, encoding="utf-8")
    assert load(path).exit_code == 0
    with store.session() as s:
        entries = list(s.exec(select(PriceEntryRow).order_by(PriceEntryRow.entry)))
        assert [(e.meter, e.purchase_option, e.provider, e.price) for e in entries[2:]] == [
            ("input_tokens", "*", "*", D("1.25")), ("input_tokens", "*", "vertex", D("1.30")),
            ("input_tokens", "batch", "vertex", D("0.65"))]
    show = ["pricebook", "show", "--at", "2026-10-15T00:00:00Z", "--meter", "input_tokens", "--json"]
    every = json.loads(runner.invoke(app, show).stdout)["prices"]
    assert [(p["provider"], p["purchase_option"], p["price"]) for p in every] == [
        ("*", "*", "1.25"), ("vertex", "*", "1.30"), ("vertex", "batch", "0.65")]
    # --provider keeps that provider's prices and those for any provider
    other = json.loads(runner.invoke(app, show + ["--provider", "openai"]).stdout)["prices"]
    assert [p["provider"] for p in other] == ["*"]
    text = flat(runner.invoke(app, show[:-1] + ["--provider", "vertex"]).stdout)
    assert "prices in force at 2026-10-15T00:00:00Z (3)" in text   # the table has a provider column
    # another book with Vertex's batch price at the same time overlaps; one for another provider does not
    clash = tmp_path / "clash.toml"
    clash.write_text(PROVIDER_BOOK.replace('name = "tokens"', 'name = "clash"').split("[[price]]", 1)[0] + """
[[price]]
meter = "input_tokens"
sku = "gemini-2.5-pro"
provider = "openrouter"
price = "1.40"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/openrouter"

[[price]]
meter = "input_tokens"
sku = "gemini-2.5-pro"
provider = "vertex"
purchase_option = "batch"
price = "0.60"
per = "1e6 * token"
effective_from = 2026-06-01T00:00:00Z
source_url = "https://example.com/vertex-batch"
""", encoding="utf-8")
    r = load(clash)
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [cli_line(clash, clash.read_text(encoding="utf-8"),
                                              "price[2] input_tokens/gemini-2.5-pro/*/batch/vertex: overlaps price[5] "
                                              "of book tokens@2026-10-01 for the same key")]


def test_migration_gives_price_entries_loaded_before_it_the_provider_any(db_url):
    store.init_store(db_url)
    cfg = store.alembic_config(db_url)
    command.downgrade(cfg, "0001")
    eng = store.engine(db_url)
    assert "provider" not in {c["name"] for c in sa.inspect(eng).get_columns("price_entry")}
    with eng.begin() as c:
        c.execute(sa.text("INSERT INTO price_book (id, name, version, currency, source, retrieved_at, digest, path, "
                          "content, loaded_at) VALUES (1, 'b', 'v1', 'USD', 's', '2026-10-01', 'd', '', '', "
                          "'2026-10-01 00:00:00')"))
        c.execute(sa.text("INSERT INTO price_entry (id, book_id, entry, meter, sku, region, purchase_option, price, "
                          "list_price, currency, per, effective_from, source_url, tiers) VALUES (1, 1, 1, "
                          "'input_tokens', 'gpt-5', '*', '*', 1.25, 1.25, 'USD', '1e6 * token', "
                          "'2026-01-01 00:00:00', 'x', '[]')"))
    store.dispose_engines()
    assert store.init_store(db_url) == ("0001", head_revision(db_url))
    with store.session(db_url) as s:
        [e] = s.exec(select(PriceEntryRow)).all()
        assert (e.meter, e.provider, e.price) == ("input_tokens", "*", D("1.25"))
    command.downgrade(store.alembic_config(db_url), "0001")   # and back: the column goes
    assert "provider" not in {c["name"] for c in sa.inspect(store.engine(db_url)).get_columns("price_entry")}


# ---- the closed sets of a line (migration 0003) --------------------------------------------------

def _insert_line(eng, kind: str, category: str, run_id: str = "r1") -> None:
    with eng.begin() as c:
        c.execute(sa.text("INSERT INTO allocation_line (run_id, day, kind, tenant, category, work, quantity, unit, "
                          "amount, currency) VALUES (:run, '2026-10-01', :kind, 'a', :category, 'succeeded', '1', "
                          "'token', '1.5', 'USD')"), {"run": run_id, "kind": kind, "category": category})


def _lines(eng) -> list[tuple]:
    with eng.connect() as c:
        return [tuple(r) for r in c.execute(sa.text("SELECT kind, category FROM allocation_line ORDER BY id"))]


def test_migration_checks_the_kind_and_category_of_lines_stored_before_it(db_url):
    store.init_store(db_url)
    cfg = store.alembic_config(db_url)
    command.downgrade(cfg, "0002_price_provider")
    eng = store.engine(db_url)
    with eng.begin() as c:
        c.execute(sa.text("INSERT INTO allocation_run (id, period_start, period_end, created_at, currency, "
                          "idle_policy, basis, inputs_digest, price_books, code_version, total, summary) VALUES ('r1', "
                          "'2026-10-01 00:00:00', '2026-11-01 00:00:00', '2026-11-02 00:00:00', 'USD', 'separate', "
                          "'active_tokens', 'd', '[]', 'v', '3.0', '{}')"))
    _insert_line(eng, "tenant", "tool")
    _insert_line(eng, "variance", "provider_tokens")
    _insert_line(eng, "tenant", "tools")  # a charge's spelling, never a line's: the upgrade names it and stops
    store.dispose_engines()
    with pytest.raises(RuntimeError, match=r"allocation_line holds values outside the line kinds and categories, "
                                           r"so their CHECK constraints cannot be added: category 'tools': 1 row\. "
                                           r"The upgrade stopped before this revision changed anything"):
        store.init_store(db_url)
    eng = store.engine(db_url)
    assert _lines(eng) == [("tenant", "tool"), ("variance", "provider_tokens"), ("tenant", "tools")]
    with eng.begin() as c:
        c.execute(sa.text("DELETE FROM allocation_line WHERE category = 'tools'"))
    store.dispose_engines()
    assert store.init_store(db_url) == ("0002_price_provider", head_revision(db_url))
    eng = store.engine(db_url)
    assert _lines(eng) == [("tenant", "tool"), ("variance", "provider_tokens")]  # rows kept as they were
    for kind, category in (("tenants", "gpu"), ("tenant", "tools"), ("Tenant", "gpu"), ("tenant", "GPU")):
        with pytest.raises(sa.exc.IntegrityError):
            _insert_line(eng, kind, category)
    _insert_line(eng, "idle_reserve", "gpu")
    assert len(_lines(eng)) == 3
    with store.session(db_url) as s:  # and through the model
        [run_line] = s.exec(select(AllocationLine).where(AllocationLine.kind == "idle_reserve")).all()
        assert (run_line.kind, run_line.category, run_line.amount) == ("idle_reserve", "gpu", D("1.5"))
    command.downgrade(store.alembic_config(db_url), "0002_price_provider")  # and back: the checks go
    store.dispose_engines()
    eng = store.engine(db_url)
    _insert_line(eng, "bogus", "tools")
    assert len(_lines(eng)) == 4


def test_the_stored_checks_are_the_closed_sets_of_ledger_vocab(db_url):
    from ledger.vocab import Category, LineKind

    store.init_store(db_url)
    rev = ScriptDirectory.from_config(store.alembic_config(db_url)).get_revision("0003_line_checks").module
    assert rev.KINDS == tuple(LineKind) and rev.CATEGORIES == tuple(Category)  # a change of either: a new revision
    checks = {c.name: str(c.sqltext) for c in AllocationLine.__table__.constraints
              if isinstance(c, sa.CheckConstraint)}
    assert checks == {name: rev._one_of(column, values) for name, column, values in rev.CHECKS}
    reflected = {c["name"]: c["sqltext"] for c in sa.inspect(store.engine(db_url)).get_check_constraints(
        "allocation_line")}
    assert set(reflected) == set(checks)
