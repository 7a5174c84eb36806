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
#: Commands whose own work is a data frame or the dashboard server: they import pandas when they run,
#: as `ledger demo` writes its inputs with it and `ledger dashboard` starts Streamlit's server.
USES_PANDAS = {"demo", "dashboard"}


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


@pytest.mark.parametrize("name", [c.name for c in cli.COMMANDS if c.name not in USES_PANDAS])
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
