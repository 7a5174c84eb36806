"""`ledger dashboard` beyond an editable checkout: the `dashboards` package ships in the wheel, the
launcher finds its app by import, honours STREAMLIT_SERVER_PORT and hides Streamlit's Deploy button."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(p.name for p in (ROOT / "dashboards" / "pages").glob("*.py"))


def test_the_app_is_found_by_import_not_by_a_path_in_the_checkout():
    import dashboards

    from ledger.dashboard import cli as dashboard_cli

    assert dashboard_cli.app_path() == Path(dashboards.__file__).parent / "app.py"
    assert dashboard_cli.app_path().is_file()


def test_the_server_command_line(monkeypatch):
    from ledger.dashboard import cli as dashboard_cli

    cmd = dashboard_cli.streamlit_command(host="127.0.0.1", port=8599)
    assert cmd[0] == sys.executable and cmd[1:4] == ["-m", "ledger.dashboard.serve", "run"]
    assert Path(cmd[4]) == dashboard_cli.app_path()
    options = dict(zip(cmd[5::2], cmd[6::2], strict=True))
    assert options == {"--server.headless": "true", "--server.address": "127.0.0.1", "--server.port": "8599",
                       "--browser.gatherUsageStats": "false",
                       "--client.toolbarMode": "viewer",  # no Deploy button, no developer menu
                       "--server.fileWatcherType": "none"}


@pytest.mark.parametrize(("args", "env", "port"), [
    ([], {}, "8501"),                                      # Streamlit's own default
    ([], {"STREAMLIT_SERVER_PORT": "8612"}, "8612"),       # the variable Streamlit reads, when --port is not given
    (["--port", "8700"], {"STREAMLIT_SERVER_PORT": "8612"}, "8700"),  # --port wins
], ids=["default", "env", "option-over-env"])
def test_the_port_comes_from_the_option_then_streamlit_server_port(monkeypatch, tmp_path, args, env, port):
    from ledger.cli import app
    from ledger.dashboard import cli as dashboard_cli

    served = []
    monkeypatch.setattr(dashboard_cli, "_serve", lambda command, env: served.append((command, env)) or 0)
    monkeypatch.delenv("STREAMLIT_SERVER_PORT", raising=False)
    result = CliRunner().invoke(app, ["dashboard", *args], env={"LEDGER_HOME": str(tmp_path / "home"), **env})
    assert result.exit_code == 0, result.output
    (command, passed), = served
    assert command[command.index("--server.port") + 1] == port
    assert passed["LEDGER_HOME"] == str(tmp_path / "home") and f":{port} over the ledger home" in result.stderr


def test_a_bad_locale_or_port_is_refused(tmp_path):
    from ledger.cli import app

    result = CliRunner().invoke(app, ["dashboard", "--locale", "xx_NOPE"], env={"LEDGER_HOME": str(tmp_path)})
    assert result.exit_code == 1 and "xx_NOPE" in result.output
    result = CliRunner().invoke(app, ["dashboard"], env={"LEDGER_HOME": str(tmp_path), "STREAMLIT_SERVER_PORT": "0"})
    assert result.exit_code == 2 and "--port" in result.output


@pytest.mark.slow
def test_the_wheel_ships_the_dashboard(tmp_path):
    """`pip wheel` of the source (copied, so that the checkout gets no build folder) holds the
    `dashboards` package: its app, every page, and the launcher's server module."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "*.egg-info", "build", "dist", ".ledger",
                                                            "test-artifacts", "__pycache__", ".hypothesis", "tests",
                                                            "bench", ".ci"))
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path / "dist"),
                          str(src)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    wheel, = (tmp_path / "dist").glob("ledger-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"dashboards/__init__.py", "dashboards/app.py", "dashboards/pages/__init__.py"} <= names
    assert {f"dashboards/pages/{p}" for p in PAGES} <= names and "ledger/dashboard/serve.py" in names
    top_level = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
    assert set(zipfile.ZipFile(wheel).read(top_level).decode().split()) == {"dashboards", "ledger"}
    # what the dashboard and the demo open beside the code, as data files under <prefix>/share/ledger
    # (ledger.config.project_root() finds them when there is no checkout)
    shared = {n.split("/data/share/ledger/", 1)[1] for n in names if "/data/share/ledger/" in n}
    wanted = {str(p.relative_to(ROOT)) for d in ("migrations", "pricebooks", "examples") for p in (ROOT / d).rglob("*")
              if p.is_file() and p.suffix in (".py", ".mako", ".toml") and "__pycache__" not in p.parts}
    wanted |= {str(p.relative_to(ROOT)) for p in (ROOT / "scenarios").rglob("*")  # what-if scenarios and their curves
               if p.is_file() and p.suffix in (".toml", ".csv", ".json", ".jsonl")}
    assert wanted and shared == wanted
