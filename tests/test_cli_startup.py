"""The command line answers at once (issue 27 item 1): the root lists its commands from a table and
imports none of them, a command imports what it uses, and the table says what the commands are.

What is checked is what is imported, never a time: `bench/startup.py` times the commands."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import click
import pytest
import typer
import typer.main

from ledger import cli

#: What no command needs to start: the dashboard's and the Spark engine's stacks and the data frames.
HEAVY = ("pandas", "altair", "streamlit", "pyspark")
#: What the root (``import ledger.cli``, ``ledger --help``, ``ledger version``) needs none of either.
STACK = ("duckdb", "sqlalchemy", "sqlmodel", "alembic", "pint", "numpy", "pyarrow", "openpyxl")


def _imported(code: str) -> list[str]:
    """The top-level packages of HEAVY and STACK that a fresh interpreter holds after running `code`."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(json.loads(r.stdout.strip().splitlines()[-1]))
    return sorted(loaded & {*HEAVY, *STACK})


def test_import_ledger_cli_pulls_in_nothing_heavy():
    assert _imported("import ledger.cli") == []


@pytest.mark.parametrize("args", [["--help"], ["version"]], ids=" ".join)
def test_the_root_answers_without_the_ledgers_stages(args):
    code = ("from typer.testing import CliRunner\nfrom ledger.cli import app\n"
            f"r = CliRunner().invoke(app, {args!r})\nassert r.exit_code == 0, r.output")
    assert _imported(code) == []


@pytest.mark.parametrize("name", [c.name for c in cli.COMMANDS])
def test_a_command_imports_no_data_frames_nor_dashboard_nor_spark(name):
    loaded = _imported(f"from ledger.cli import load\nload({name!r})")
    assert not set(loaded) & set(HEAVY), f"ledger {name} imports {sorted(set(loaded) & set(HEAVY))} to start"


def _first_sentence(help_text: str) -> str:
    para = " ".join(help_text.strip().split("\n\n")[0].split())
    m = re.match(r"(.+?[.!?])(\s|$)", para)
    return m.group(1) if m else para


def test_the_table_lists_every_command_each_module_registers_and_no_other():
    by_module: dict[str, set[str]] = {}
    for c in cli.COMMANDS:
        by_module.setdefault(c.module, set()).add(c.name)
    for module, names in by_module.items():
        scratch = typer.Typer()
        __import__(module, fromlist=["register"]).register(scratch)
        assert set(typer.main.get_group(scratch).commands) == names, module
    assert len({c.name for c in cli.COMMANDS}) == len(cli.COMMANDS)


@pytest.mark.parametrize("lazy", cli.COMMANDS, ids=lambda c: c.name)
def test_the_tables_help_is_the_first_sentence_of_the_commands_own(lazy):
    command = cli.load(lazy.name)
    assert lazy.help == _first_sentence(command.help or ""), (
        f"ledger --help lists {lazy.name} as {lazy.help!r}; its own help begins {_first_sentence(command.help or '')!r}")


def test_the_whole_tree_is_the_commands_of_the_table_in_its_order():
    root = cli.whole()
    assert root.list_commands(click.Context(root)) == ["version", *(c.name for c in cli.COMMANDS)]
    assert all(isinstance(root.commands[c.name], click.Command) for c in cli.COMMANDS)


def test_a_mistyped_command_is_named_with_the_nearest_ones():
    from typer.testing import CliRunner

    r = CliRunner().invoke(cli.app, ["reprot"])
    assert r.exit_code == 2 and "Did you mean 'report'" in r.output


def test_the_store_head_read_from_the_files_is_alembics():
    from alembic.script import ScriptDirectory

    from ledger.store.db import alembic_config, head_revision

    assert head_revision() == ScriptDirectory.from_config(alembic_config()).get_current_head()


# ---- what the everyday commands import when they run (issue 27 item 1) ------------------------------

#: What a command that only reads the ledger DB needs none of: SQLModel (pydantic and the ORM under
#: it), DuckDB, the migrations' runtime, pint, numpy, pyarrow and the data frames.
NOT_TO_READ = ("sqlmodel", "pydantic", "duckdb", "alembic", "pint", "numpy", "pyarrow", *HEAVY)
#: What an ingest of a few rows and the check of its batch need none of: the ledger DB is read and
#: written through SQLAlchemy Core (no SQLModel, pydantic or ORM), the units are those of
#: `ledger.units`' table (no pint), the key hashes a Python set (no numpy), no Arrow, no migrations.
NOT_TO_INGEST = ("sqlmodel", "pydantic", "alembic", "pint", "numpy", "pyarrow", "openpyxl", *HEAVY)


def _ran(args: list[str]) -> list[str]:
    """The packages of HEAVY, STACK and pydantic a fresh interpreter holds after `ledger ARGS` ran
    (in the ledger of LEDGER_HOME and LEDGER_DATABASE_URL), the command having succeeded."""
    code = ("from typer.testing import CliRunner\nfrom ledger.cli import app\n"
            f"r = CliRunner().invoke(app, {args!r})\nassert r.exit_code == 0, r.output\n"
            "import json, sys\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return sorted(set(json.loads(r.stdout.strip().splitlines()[-1])) & {*HEAVY, *STACK, "pydantic"})


@pytest.fixture
def a_ledger(ledger_home):
    """A ledger with the shipped price books, a tenant and a product, a batch of one request, a run and a
    signed month: what `runs` and `batches` list."""
    from typer.testing import CliRunner

    from ledger import store
    from ledger.ingest import ingest
    from ledger.models import AllocationRun

    for args in (["pricebook", "load"], ["dims", "add", "tenant", "acme"], ["dims", "add", "product", "chat"]):
        r = CliRunner().invoke(cli.app, args)
        assert r.exit_code == 0, r.output
    row = ledger_home / "one.csv"
    row.write_text("request_id,occurred_at,tenant,product,model,provider,input_tokens,output_tokens,status\n"
                   "r-0,2026-09-05T10:00:00Z,acme,chat,gpt-5-mini,openai,100,20,ok\n")
    ingest("requests", [row])
    start, end = store.month_bounds("2026-09")
    with store.session() as s:
        run = AllocationRun(id="r1", period_start=start, period_end=end, currency="USD", idle_policy="share",
                            basis="tokens", inputs_digest="d" * 64, code_version="0.1", total=1, summary="{}")
        s.add(run)
        s.flush()
        store.sign_off(s, name="2026-09", by="Dana Reyes", note="", run=run)
    store.dispose_engines()
    return ledger_home


@pytest.mark.store
@pytest.mark.parametrize("args", [["runs"], ["runs", "--json"], ["runs", "--period", "2026-09", "--csv"],
                                  ["batches"], ["batches", "--json"]], ids=" ".join)
def test_runs_and_batches_read_the_ledger_without_sqlmodel_duckdb_or_pint(a_ledger, args):
    loaded = _ran(args)
    assert "sqlalchemy" in loaded  # the ledger DB was read, through Core
    assert not set(loaded) & set(NOT_TO_READ), f"ledger {' '.join(args)} imports {sorted(set(loaded) & set(NOT_TO_READ))}"


@pytest.mark.store
@pytest.mark.parametrize("register", [False, True], ids=["known names", "--register-new"])
def test_a_one_row_ingest_and_its_check_import_no_sqlmodel_pint_numpy_nor_arrow(a_ledger, register):
    row = a_ledger / "another.csv"
    row.write_text("request_id,occurred_at,tenant,product,model,provider,input_tokens,output_tokens,status\n"
                   f"r-1,2026-10-05T10:00:00Z,{'newco' if register else 'acme'},chat,gpt-5-mini,openai,100,20,ok\n")
    loaded = _ran(["ingest", "requests", str(row), *(["--register-new"] if register else [])])
    assert "duckdb" in loaded and "sqlalchemy" in loaded  # the batch was read and written, through Core
    assert not set(loaded) & set(NOT_TO_INGEST), f"a one-row ingest imports {sorted(set(loaded) & set(NOT_TO_INGEST))}"


@pytest.mark.store
def test_a_one_row_ingest_and_its_check_share_one_duckdb_database_and_draw_no_progress_bar(a_ledger):
    """The check of the new batch runs in the ingest's DuckDB connection and DB connection (one
    DuckDB database, not two); with stderr no terminal, rich's progress bar is not even imported.
    The check's warnings are said all the same."""
    row = a_ledger / "another.csv"
    row.write_text("request_id,occurred_at,tenant,product,model,provider,input_tokens,output_tokens,status\n"
                   "r-1,2026-10-05T10:00:00Z,acme,chat,gpt-5-mini,openai,100,20,ok\n")
    code = ("import sys\nfrom ledger import duck\nopened = []\nconnect = duck.connect\n"
            "def counted(purpose, **kw):\n    opened.append(purpose)\n    return connect(purpose, **kw)\n"
            "duck.connect = counted\n"
            "from typer.testing import CliRunner\nfrom ledger.cli import app\n"
            f"r = CliRunner().invoke(app, ['ingest', 'requests', {str(row)!r}, '--json'])\n"
            "assert r.exit_code == 0, r.output\n"
            "import json\nprint(json.dumps({'opened': opened, 'warnings': json.loads(r.stdout)['warnings'], "
            "'progress': 'rich.progress' in sys.modules, 'tables': 'rich.table' in sys.modules}))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["opened"] == ["ingest"], got
    assert any("gpt-5-mini" in w for w in got["warnings"]), got  # the batch was checked against the books
    assert not got["progress"] and not got["tables"], got


@pytest.mark.store
def test_a_fleet_ingest_and_an_undo_import_no_sqlmodel(a_ledger):
    """A fleet batch registers its pools, and `batches undo` removes a batch, through Core too."""
    import sqlalchemy as sa

    from ledger import store
    from ledger.ingest.batches import list_batches
    from ledger.schema import POOL

    fleet = a_ledger / "fleet.csv"
    fleet.write_text("interval_id,pool,start,end,device,gpus,region,purchase_option,role\n"
                     "i1,p-new,2026-10-05T00:00:00Z,2026-10-05T01:00:00Z,H100,8,us,on_demand,serving\n")
    loaded = _ran(["ingest", "fleet", str(fleet)])
    assert not set(loaded) & {"sqlmodel", "pydantic"}, f"a fleet ingest imports {loaded}"
    with store.reading() as conn:
        assert "p-new" in set(conn.execute(sa.select(POOL.c.name)).scalars())
        batch = list_batches(conn)[-1].id
    store.dispose_engines()
    loaded = _ran(["batches", "undo", batch])
    assert not set(loaded) & {"sqlmodel", "pydantic"}, f"an undo imports {loaded}"
    with store.reading() as conn:
        assert batch not in [b.id for b in list_batches(conn)]


@pytest.mark.parametrize("args", [["ingest", "--help"], ["ingest", "requests", "--help"], ["batches", "--help"],
                                  ["report", "--help"], ["runs", "--help"], ["check", "--help"], ["init", "--help"],
                                  ["dims", "--help"], ["otlp", "serve", "--help"], ["budgets", "load", "--help"]],
                         ids=" ".join)
def test_a_features_help_imports_none_of_its_stack(args):
    assert _ran(args) == []


@pytest.mark.parametrize("name", [c.name for c in cli.COMMANDS])
def test_every_commands_own_help_imports_none_of_the_stack(name):
    """`ledger NAME --help` is typer's and the option texts: none of DuckDB, SQLAlchemy, SQLModel,
    pydantic, pint, numpy, pyarrow, openpyxl or the data frames: a command's `cli.py` imports its stack
    in the command, and its package's `__init__` names its modules lazily (`ledger.lazy`)."""
    assert _ran([name, "--help"]) == []


def test_the_ingests_help_knows_each_adapters_kind():
    """`ledger ingest KIND --help` lists the adapters of KIND from `ingest.cli.SOURCE_KINDS`, without
    importing them: the table is the adapters' own."""
    from ledger.ingest.cli import SOURCE_KINDS
    from ledger.ingest.sources import SOURCES

    assert SOURCE_KINDS == {name: adapter.KIND for name, adapter in SOURCES.items()}


def test_the_ingests_adjustable_kinds_are_one_set():
    from ledger import vocab
    from ledger.ingest import ADJUSTABLE
    from ledger.ingest.cli import KINDS_HELP

    assert ADJUSTABLE is vocab.ADJUSTABLE and set(ADJUSTABLE) <= set(KINDS_HELP)


def test_a_period_is_labelled_by_the_one_light_function():
    """`ledger runs`, the allocation's reports and the exports label a period with `instants.period_label`
    (light: it imports no allocation), an ISO instant each side, end exclusive; the allocation package
    keeps no copy of it to drift."""
    from datetime import datetime, timedelta, timezone

    from ledger import allocate
    from ledger.instants import period_label

    assert "period_label" not in dir(allocate)
    ist = timezone(timedelta(hours=5, minutes=30))
    assert period_label(datetime(2026, 10, 1, 5, 30, tzinfo=ist), datetime(2026, 11, 1, tzinfo=timezone.utc)) == {
        "start": "2026-10-01T00:00:00Z", "end": "2026-11-01T00:00:00Z"}


def test_the_tables_number_format_is_babels_en_us_pattern():
    """`formats.number` groups with Python's ``format(value, ",f")`` rather than loading babel's locale
    data to start: it says what babel's ``en_US`` pattern ``#,##0.00...`` says, for any value and
    number of decimals (signs, zeros, 30-digit values)."""
    from decimal import Decimal, localcontext

    from babel.numbers import parse_pattern
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from ledger import formats
    from ledger.money import quantize

    values = st.one_of(st.integers(-10**30, 10**30), st.decimals(allow_nan=False, allow_infinity=False, places=9,
                                                                 min_value=Decimal("-1e21"), max_value=Decimal("1e21")))

    @settings(max_examples=300, deadline=None)
    @given(values, st.integers(0, 8), st.booleans())
    def agree(value, places, signed):
        q = quantize(Decimal(value), Decimal(1).scaleb(-places))
        if q == 0:
            q = q.copy_abs()
        with localcontext() as ctx:  # babel quantizes in the context: 28 digits would refuse 30 and more
            ctx.prec = 80
            babel = parse_pattern("#,##0" + ("." + "0" * places if places else "")).apply(q, "en_US")
        assert formats.number(value, places, signed=signed) == ("+" + babel if signed and q > 0 else babel)

    agree()
    assert formats.count(1234567) == "1,234,567" and formats.money(Decimal("-1234.5")) == "-1,234.50"
