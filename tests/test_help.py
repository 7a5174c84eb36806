"""Every command's `--help` reads as click's convention: `--period TEXT`, a bare `--json`, `FILES...`;
never typer 0.29's value placeholders (`--json <bool>`, `<str>`, `<list[Path]>`, `{kind} {name}`), which
made users type `--json true`. The whole command tree is walked, so a new command is checked too."""
from __future__ import annotations

import re

import click
import pytest
import typer.main
from typer.testing import CliRunner

from ledger.cli import app

runner = CliRunner()
PLACEHOLDER = re.compile(r"<(bool|str|int|float|path|Path|list\[[^\]]*\]|datetime|[a-z_]+)>|\{[a-z_]+\}")


def commands() -> list[tuple[str, ...]]:
    """Every command path of the CLI (groups included), e.g. ('ingest', 'requests')."""
    root = typer.main.get_command(app)
    out: list[tuple[str, ...]] = [()]

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                out.append(path + (name,))
                walk(sub, path + (name,))

    walk(root, ())
    return out


@pytest.mark.parametrize("path", commands(), ids=lambda p: " ".join(p) or "ledger")
def test_help_has_no_value_placeholders(path):
    r = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "160", "TERMINAL_WIDTH": "160"})
    assert r.exit_code == 0, r.output
    bad = PLACEHOLDER.findall(r.output)
    assert not bad, f"ledger {' '.join(path)} --help shows placeholders {bad}:\n{r.output}"


def test_a_switch_is_bare_and_an_option_names_its_value():
    r = runner.invoke(app, ["report", "unit-economics", "--help"], env={"COLUMNS": "160"})
    lines = {ln.split()[1]: ln for ln in r.output.splitlines() if ln.strip().startswith("│ --")}
    assert "TEXT" in lines["--period"] and "TEXT" not in lines["--json"] and "BOOL" not in lines["--json"].upper()


def test_a_positional_argument_shows_its_help():
    r = runner.invoke(app, ["ingest", "requests", "--help"], env={"COLUMNS": "160"})
    line = next(ln for ln in r.output.splitlines() if "FILES..." in ln and "files" in ln)
    assert "CSV, Parquet or JSON Lines files" in line
