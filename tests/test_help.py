"""Every command's `--help` reads as click's convention: `--period TEXT`, a bare `--json`, `FILES...`;
never typer 0.29's value placeholders (`--json <bool>`, `<str>`, `<list[Path]>`, `{kind} {name}`), which
made users type `--json true`. The whole command tree is walked, so a new command is checked too."""
from __future__ import annotations

import re

import click
import pytest
import typer.main
from typer.testing import CliRunner

from ledger.cli import app, whole

runner = CliRunner()
PLACEHOLDER = re.compile(r"<(bool|str|int|float|path|Path|list\[[^\]]*\]|datetime|[a-z_]+)>|\{[a-z_]+\}")


def commands() -> list[tuple[str, ...]]:
    """Every command path of the CLI (groups included), e.g. ('ingest', 'requests')."""
    root = whole()
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


def _shown(text: str) -> str:
    """Help output with the panels' borders dropped and white space collapsed, so that a help text
    wrapped over several lines of its panel reads as one line again."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


@pytest.mark.parametrize("path", commands(), ids=lambda p: " ".join(p) or "ledger")
def test_every_option_and_argument_has_help_and_help_shows_it(path):
    """Each parameter a command's help lists (hidden ones, the deprecated spellings, are not listed)
    has a help text, and the rendered help shows it whole."""
    cmd = whole()
    for name in path:
        cmd = cmd.commands[name]
    r = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert r.exit_code == 0, r.output
    shown = _shown(r.output)
    for p in cmd.params:
        if getattr(p, "hidden", False) or p.name == "help":
            continue
        what = "/".join(p.opts) if p.param_type_name == "option" else p.name.upper()
        text = " ".join((getattr(p, "help", None) or "").split())
        assert text, f"ledger {' '.join(path)}: {what} has no help text"
        text = text.replace("\\[", "[")  # help is rich markup: a bracket shown as typed is escaped
        assert text in shown, f"ledger {' '.join(path)} --help does not show the help of {what} ({text!r}):\n{r.output}"


def test_a_hidden_deprecated_spelling_still_works_and_says_so(tmp_path):
    """`budget forecast --scenarios` (now `--scenario`) is hidden from help, and accepted with a warning."""
    r = runner.invoke(app, ["budget", "forecast", "--help"], env={"COLUMNS": "200"})
    assert "--scenario " in r.output and "--scenarios" not in r.output
    r = runner.invoke(app, ["budget", "forecast", str(tmp_path / "missing.toml"), "--scenarios", "base"])
    assert "warning: --scenarios is deprecated: use --scenario" in r.stderr


def test_every_commands_help_is_prose_whatever_its_docstrings_line_breaks():
    """Typer's rich help keeps a docstring's single line breaks (the first paragraph in a group's list
    of commands, the others in the command's own help): wrapped at the source's width, they showed as
    ragged lines (`ledger sync --help`, `ledger dims --help`). Every command's help is paragraphs of
    prose, and no reStructuredText markup shows through."""
    import inspect

    root = whole()
    ragged = []

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        text = inspect.cleandoc(cmd.help or "").partition("\f")[0]
        ragged.extend((" ".join(path), p) for p in text.split("\n\n") if "\n" in p and not p.startswith("\b"))
        assert "``" not in text, path
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, path + (name,))

    walk(root, ())
    assert ragged == []


def test_prose_joins_lines_within_paragraphs_and_keeps_what_click_keeps():
    from ledger.cli import prose

    assert prose("One\n    two.\n\n    Three\n    four.") == "One two.\n\nThree four."
    assert prose("Kept:\n\n\b\nline one\nline two\n\nEnd\nhere.") == "Kept:\n\n\b\nline one\nline two\n\nEnd here."
    assert prose("Shown\nhere.\f\nNot shown\nas written.") == "Shown here.\f\nNot shown\nas written."
    r = runner.invoke(app, ["sync", "--help"], env={"COLUMNS": "200"}, terminal_width=200)
    assert r.exit_code == 0
    assert "as the usual batches (checks, keys, closed months as adjustments), its new watermark" in r.output
