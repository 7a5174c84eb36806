"""The one names rule (ledger.names) and every door a name comes in by outside ingest: `add_dim`,
`add_dims`, `ledger dims add/import` and `ledger pricebook load`. A name the rule refuses is refused
with one clear line and nothing stored, on SQLite and on PostgreSQL alike; a name it accepts is
stored and read back as written. Store tests run on PostgreSQL with LEDGER_TEST_DATABASE_URL."""
from __future__ import annotations

import json
import re
from decimal import Decimal

import duckdb
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlmodel import select
from typer.testing import CliRunner

from ledger import store
from ledger.cli import app
from ledger.models import PriceBookRow, PriceEntryRow, Tenant
from ledger.names import MAX_NAME, name_problem, sql_name_bad
from ledger.pricebook import parse_book, unlocated
from ledger.pricebook.records import BOOK_FIELD_LIMITS, PRICE_FIELD_LIMITS

runner = CliRunner()

# ---- the rule, worked by hand -------------------------------------------------------------------

CASES = [  # (id, value, what name_problem says)
    ("plain", "acme", None),
    ("inner-space-and-nbsp", "acme corp\u00a0eu", None),
    ("200-multibyte", "é" * 200, None),                     # 400 bytes of UTF-8, 200 characters: fits
    ("200-astral", "😀" * 200, None),                       # 800 bytes, 200 characters: fits
    ("201-multibyte", "é" * 201, "is 201 characters long (at most 200)"),
    ("empty", "", "is empty"),
    ("only-space", "   ", "is empty"),
    ("leading-space", " acme", "has white space around it"),
    ("trailing-nbsp", "acme\u00a0", "has white space around it"),
    ("nul", "ac\x00me", "contains a NUL byte (at character 3)"),
    ("tab", "ac\tme", "contains a tab (at character 3)"),
    ("cr", "acme\r", "contains a carriage return (CR) (at character 5)"),
    ("lf", "\nacme", "contains a line break (LF) (at character 1)"),
    ("nel-u0085", "ac\u0085me", "contains the control character U+0085 (at character 3)"),
    ("del", "acme\x7f", "contains the control character U+007F (at character 5)"),
    ("c1-last", "\x9facme", "contains the control character U+009F (at character 1)"),
    ("not-text", None, "is NoneType, not text"),
]


@pytest.mark.parametrize("value, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_name_problem_by_hand(value, expected):
    assert name_problem(value) == expected


def test_the_limit_counts_characters_not_bytes_and_can_be_lowered():
    assert len(("é" * MAX_NAME).encode("utf-8")) == 2 * MAX_NAME and name_problem("é" * MAX_NAME) is None
    assert name_problem("abc", max_length=2) == "is 3 characters long (at most 2)"
    assert name_problem("ab", max_length=2) is None


@pytest.mark.parametrize("value, expected", [c[1:] for c in CASES if c[1]], ids=[c[0] for c in CASES if c[1]])
def test_the_sql_rule_flags_what_the_python_rule_flags_for_length_and_control_characters(value, expected):
    # ingest checks names in DuckDB: its rule must be this one (white space and emptiness aside)
    # a connection of its own, fetched to the end: DuckDB 2 keeps a half-read result open on a connection,
    # and the module's default connection is shared by every test of the session
    with duckdb.connect() as con:
        (flagged,), = con.execute(f"SELECT {sql_name_bad('v')} FROM (SELECT ?::VARCHAR AS v)", [value]).fetchall()
    assert flagged == (expected is not None and ("characters long" in expected or "contains" in expected))


def test_the_price_book_limits_are_the_columns_of_the_store():
    cols = PriceEntryRow.__table__.c
    assert {f: cols[f].type.length for f in PRICE_FIELD_LIMITS} == PRICE_FIELD_LIMITS
    cols = PriceBookRow.__table__.c
    assert {f: cols[f].type.length for f in BOOK_FIELD_LIMITS} == BOOK_FIELD_LIMITS
    assert Tenant.__table__.c["name"].type.length == MAX_NAME


# ---- the store ----------------------------------------------------------------------------------

BAD = [  # (id, name, the problem the refusal names)
    ("201-chars", "é" * 201, "is 201 characters long (at most 200)"),
    ("nul", "ac\x00me", "contains a NUL byte (at character 3)"),
    ("tab", "ac\tme", "contains a tab (at character 3)"),
]
BAD_IDS = [c[0] for c in BAD]


def tenants() -> list[str]:
    with store.session() as s:
        return sorted(s.exec(select(Tenant.name)))


def no_traceback(r) -> None:
    """The command ended by its own clear refusal (exit 1), not by an exception."""
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.exception
    assert "Traceback" not in r.output


@pytest.mark.store
@pytest.mark.parametrize("name, problem", [c[1:] for c in BAD], ids=BAD_IDS)
def test_add_dim_refuses_a_bad_name_and_stores_nothing(ledger_home, name, problem):
    with pytest.raises(store.StoreError) as e:
        with store.session() as s:
            store.add_dim(s, kind="tenant", name=name)
    assert str(e.value).endswith(f": {problem}")
    assert tenants() == []


@pytest.mark.store
@pytest.mark.parametrize("name, problem", [c[1:] for c in BAD], ids=BAD_IDS)
def test_dims_add_refuses_a_bad_name_with_one_line(ledger_home, name, problem):
    r = runner.invoke(app, ["dims", "add", "tenant", name])
    no_traceback(r)
    shown = repr(name[:40]) + ("… (201 characters)" if len(name) > 40 else "")
    assert r.stderr.splitlines() == [f"tenant name {shown}: {problem}"]
    assert tenants() == []


@pytest.mark.store
def test_dims_add_refuses_a_display_name_or_owner_the_store_cannot_hold(ledger_home):
    r = runner.invoke(app, ["dims", "add", "tenant", "acme", "--owner", "fin\x00ance"])
    no_traceback(r)
    assert r.stderr.splitlines() == ["tenant 'acme': owner 'fin\\x00ance': contains a NUL byte (at character 4)"]
    r = runner.invoke(app, ["dims", "add", "tenant", "acme", "--display-name", "x" * 201])
    no_traceback(r)
    assert r.stderr.endswith(": display_name 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'… (201 characters): "
                             "is 201 characters long (at most 200)\n")
    assert tenants() == []


@pytest.mark.store
def test_a_name_of_bytes_that_are_not_utf8_is_refused_not_a_database_error(ledger_home):
    # on Linux a command-line argument of non-UTF-8 bytes arrives as a lone surrogate
    r = runner.invoke(app, ["dims", "add", "tenant", "acme\udcff"])
    no_traceback(r)
    assert r.stderr.splitlines() == ["tenant name 'acme\\udcff': is not valid Unicode: a lone surrogate U+DCFF at "
                                     "character 5 (bytes that were not UTF-8)"]
    assert tenants() == []


@pytest.mark.store
def test_dims_import_names_file_line_and_column_and_changes_nothing(ledger_home, tmp_path):
    path = tmp_path / "tenants.csv"
    rows = ["name,display_name,owner", "acme,Acme,finance"] + [f'"{name}",,' for _, name, _ in BAD] + [
        "globex,\"Glo\tbex\",ops", " initech,,"]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    r = runner.invoke(app, ["dims", "import", "tenant", str(path)])
    no_traceback(r)
    assert r.stderr.splitlines() == [
        f"{path}:3: name: is 201 characters long (at most 200) ('{'é' * 40}'… (201 characters))",
        f"{path}:4: name: contains a NUL byte (at character 3) ('ac\\x00me')",
        f"{path}:5: name: contains a tab (at character 3) ('ac\\tme')",
        f"{path}:6: display_name: contains a tab (at character 4) ('Glo\\tbex')",
        f"{path}:7: name: has white space around it (' initech')",
    ]
    assert tenants() == []          # all or nothing: acme is not registered either


@pytest.mark.store
def test_a_200_character_multibyte_name_round_trips(ledger_home, tmp_path):
    names = ["é" * 200, "😀" * 200, "名" * 199 + "x"]
    assert runner.invoke(app, ["dims", "add", "tenant", names[0], "--display-name", "É" * 200]).exit_code == 0
    with store.session() as s:
        assert store.add_dim(s, kind="tenant", name=names[1], owner="ö" * 200)
    path = tmp_path / "tenants.csv"
    path.write_text(f"name,display_name,owner\n{names[2]},,\n", encoding="utf-8")
    r = runner.invoke(app, ["dims", "import", "tenant", str(path)])
    assert r.exit_code == 0, r.output
    listed = json.loads(runner.invoke(app, ["dims", "list", "tenant", "--json"]).stdout)
    assert listed == sorted([{"name": names[0], "display_name": "É" * 200, "owner": ""},
                             {"name": names[1], "display_name": names[1], "owner": "ö" * 200},
                             {"name": names[2], "display_name": names[2], "owner": ""}], key=lambda d: d["name"])


@pytest.mark.store
def test_add_dims_registers_100000_names_once(ledger_home):
    names = [f"tenant-{i:06d}-é" for i in range(100_000)]
    with store.session() as s:
        assert store.add_dims(s, kind="tenant", names=reversed(names)) == names      # sorted, each once
    with store.session() as s:
        assert store.add_dims(s, kind="tenant", names=names) == []                  # idempotent
        assert store.add_dims(s, kind="tenant", names=names[:10] + ["zeta", "zeta"]) == ["zeta"]
    with store.session() as s:
        assert s.exec(select(sa.func.count()).select_from(Tenant)).one() == 100_001
        assert s.get(Tenant, names[-1]).display_name == names[-1]


@pytest.mark.store
def test_add_dims_refuses_the_whole_call_for_one_bad_name(ledger_home):
    with pytest.raises(store.StoreError, match=r"^1 tenant names refused: 'ac\\x00me': contains a NUL byte"):
        with store.session() as s:
            store.add_dims(s, kind="tenant", names=["acme", "ac\x00me"])
    assert tenants() == []


#: Any text; text of no control character around the 200-character limit; short Latin text.
text_names = st.one_of(st.text(max_size=30),
                       st.text(st.characters(exclude_categories=("Cc", "Cs")), min_size=199, max_size=202),
                       st.text(st.characters(max_codepoint=0x17F), min_size=1, max_size=12))


@pytest.mark.store
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=text_names)
def test_a_name_the_rule_accepts_is_stored_and_read_back_exactly(ledger_home, name):
    # one store for every example (names repeat across examples: add_dim then says "already there")
    problem = name_problem(name)
    event(problem.split(" (")[0] if problem else f"accepted{f', {len(name)} characters' if len(name) >= 199 else ''}")
    if problem is None:
        with store.session() as s:
            store.add_dim(s, kind="tenant", name=name)
        with store.session() as s:
            row = s.get(Tenant, name)
            assert (row.name, row.display_name) == (name, name)
            assert name in set(s.exec(select(Tenant.name)))
    else:
        with pytest.raises(store.StoreError, match=re.escape(problem.split(" (")[0])):
            with store.session() as s:
                store.add_dim(s, kind="tenant", name=name)
        with store.session() as s:  # (a query *by* a NUL name would itself be refused by PostgreSQL)
            assert name not in set(s.exec(select(Tenant.name)))


# ---- price books --------------------------------------------------------------------------------

def book_text(**fields: str) -> str:
    """A one-price book; `fields` override its values (written as TOML basic strings)."""
    f = {"name": "test-cloud", "version": "2026-10-01", "meter": "gpu_time", "sku": "H100-SXM-80GB",
         "region": "us-east-1", "purchase_option": "on_demand", "price": "6.88", "per": "gpu * hour", **fields}
    s = lambda k: json.dumps(f[k], ensure_ascii=False)   # a JSON string is a TOML basic string (\u0000, \t alike)
    extra = "".join(f"{k} = {s(k)}\n" for k in ("provider", "term", "upfront") if k in f)
    return (f"[book]\nname = {s('name')}\nversion = {s('version')}\ncurrency = \"USD\"\nsource = \"tests\"\n"
            f"retrieved_at = 2026-10-01\n\n[[price]]\nmeter = {s('meter')}\nsku = {s('sku')}\nregion = {s('region')}\n"
            f"purchase_option = {s('purchase_option')}\nprice = {s('price')}\nper = {s('per')}\n{extra}"
            "effective_from = 2026-06-01T00:00:00Z\nsource_url = \"https://example.com\"\n")


def load(tmp_path, text: str):
    path = tmp_path / "book.toml"
    path.write_text(text, encoding="utf-8")
    return path, runner.invoke(app, ["pricebook", "load", str(path)])


def stored_books() -> int:
    with store.session() as s:
        return s.exec(select(sa.func.count()).select_from(PriceBookRow)).one()


@pytest.mark.store
@pytest.mark.parametrize("name, problem", [c[1:] for c in BAD], ids=BAD_IDS)
def test_pricebook_load_refuses_a_bad_sku_and_stores_nothing(ledger_home, tmp_path, name, problem):
    path, r = load(tmp_path, book_text(sku=name))
    no_traceback(r)
    label = name[:40].replace("\x00", "\\x00").replace("\t", "\\t") + ("…" if len(name) > 40 else "")
    # `file:line:` with the line of the book's first [[price]] header (the CLI's problem line)
    line = next(n for n, raw in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1)
                if raw.strip() == "[[price]]")
    assert r.stderr.splitlines() == [f"{path}:{line}: price[1] gpu_time/{label}/us-east-1/on_demand: sku: {problem}"]
    assert stored_books() == 0


# (field, its column's length, overrides that make the price valid with that field set)
LIMITS = [("meter", 100, {}), ("sku", 200, {}), ("region", 100, {}), ("purchase_option", 100, {}),
          ("provider", 200, {"meter": "input_tokens", "per": "1e6 * token", "purchase_option": "*"}),
          ("name", 200, {}), ("version", 100, {})]


@pytest.mark.parametrize("field, limit, base", LIMITS, ids=[c[0] for c in LIMITS])
def test_a_field_one_character_over_its_column_is_a_problem_of_the_book(field, limit, base):
    value = "é" * (limit + 1)
    book, problems = parse_book(book_text(**{**base, field: value}), "b.toml")
    assert book is None
    assert [p.message for p in problems] == [f"{field}: is {limit + 1} characters long (at most {limit})"]
    assert ("[book]" if field in ("name", "version") else "price[1] ") in problems[0].entry


@pytest.mark.parametrize("fields, message", [
    ({"per": " gpu * hour"}, "per: has white space around it"),
    ({"per": "gpu * hour\n"}, "per: contains a line break (LF) (at character 11)"),
    ({"term": "8760\thour", "upfront": "8760"}, "term: contains a tab (at character 5)"),
    ({"price": "1.0000000000001"}, "price 1.0000000000001 has more than 12 decimal places (the ledger stores at most 12)"),
    ({"price": "1e26"}, "price 1E+26 is too large to store (at most 26 digits before the point)"),
], ids=["per-space", "per-lf", "term-tab", "price-13-places", "price-27-digits"])
def test_what_the_store_cannot_hold_is_a_problem_of_the_book(fields, message):
    book, problems = parse_book(book_text(**fields), "b.toml")
    assert book is None and [p.message for p in problems] == [message]


def test_nul_in_free_text_and_a_timestamp_out_of_range_are_problems_not_crashes():
    text = book_text().replace('source_url = "https://example.com"', 'source_url = "https://x\\u0000"')
    assert [str(p) for p in unlocated(parse_book(text, "b.toml")[1])] == [
        "b.toml: price[1] gpu_time/H100-SXM-80GB/us-east-1/on_demand: source_url: contains a NUL byte (at character 10)"]
    text = book_text().replace("2026-06-01T00:00:00Z", "0001-01-01T00:00:00+01:00")
    assert [p.message for p in parse_book(text, "b.toml")[1]] == [
        "effective_from: 0001-01-01T00:00:00+01:00 is out of range once moved to UTC"]
    text = book_text().replace('currency = "USD"', 'currency = ["USD"]')
    assert "currency ['USD'] is not an ISO 4217 code" in [p.message for p in parse_book(text, "b.toml")[1]]


@pytest.mark.store
def test_a_book_with_every_field_at_its_limit_loads_and_round_trips(ledger_home, tmp_path):
    gpu = {"name": "é" * 200, "version": "é" * 100, "sku": "名" * 200, "region": "ö" * 100,
           "purchase_option": "ü" * 100, "price": "9999999999999999.999999999999"}   # 28 digits: see below
    path, r = load(tmp_path, book_text(**gpu))
    assert r.exit_code == 0, r.output
    token = {"name": "ß" * 200, "meter": "input_tokens", "per": "1e6 * token", "purchase_option": "*",
             "provider": "😀" * 200, "price": "0.000000000001"}
    path, r = load(tmp_path, book_text(**token))
    assert r.exit_code == 0, r.output
    with store.session() as s:
        rows = {(b.name, b.version) for b in s.exec(select(PriceBookRow))}
        assert rows == {(gpu["name"], gpu["version"]), (token["name"], "2026-10-01")}
        got = {(e.sku, e.region, e.purchase_option, e.provider, e.price) for e in s.exec(select(PriceEntryRow))}
        assert got == {(gpu["sku"], gpu["region"], gpu["purchase_option"], "*", Decimal(gpu["price"])),
                       ("H100-SXM-80GB", "us-east-1", "*", token["provider"], Decimal("1E-12"))}
        assert {b.ref for b in store.books_from_store(s)} == {f"{gpu['name']}@{gpu['version']}",
                                                              f"{token['name']}@2026-10-01"}


@pytest.mark.store
def test_a_book_name_that_looks_like_markup_loads_and_prints_as_written(ledger_home, tmp_path):
    path, r = load(tmp_path, book_text(name="[/x]"))
    assert (r.exit_code, r.stdout.strip()) == (0, "[/x]@2026-10-01: loaded")
    assert runner.invoke(app, ["dims", "add", "tenant", "[/y]"]).stdout.strip() == "tenant [/y] added"
    assert "[/y]" in runner.invoke(app, ["dims", "list", "tenant"]).stdout
    with store.session() as s:
        assert s.exec(sa.select(PriceBookRow.name)).scalar_one() == "[/x]"


@pytest.mark.store
def test_the_largest_price_a_book_may_hold_loads_and_reads_back_exactly(ledger_home, tmp_path):
    """38 digits in and out, on both stores (PostgreSQL's read-back normalizes under an 80-digit context)."""
    biggest = "99999999999999999999999999.999999999999"     # 26 digits before the point, 12 after
    path, r = load(tmp_path, book_text(price=biggest))
    assert r.exit_code == 0, r.output
    with store.session() as s:
        assert s.exec(select(PriceEntryRow.list_price)).one() == Decimal(biggest)
