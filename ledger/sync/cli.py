"""CLI: `ledger sync` (the live sources of a sync file, each from its watermark) and `ledger otlp serve`
(the OTLP/HTTP receiver). docs/sync.md."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Optional

import typer

SYNC_HELP = "Read the live sources of a sync file (LiteLLM's database, a folder of bills) from their watermarks."
OTLP_HELP = "The OTLP/HTTP receiver: GenAI spans posted to /v1/traces, committed in micro-batches."
COLUMNS = ("source", "kind", "status", "read", "new", "duplicate", "batches", "watermark", "problems")


def _watermark(w: dict) -> str:
    if "startTime" in w:
        return f"{w['startTime']} {w.get('request_id', '')}".strip()
    if "files" in w:
        return f"{len(w['files'])} files"
    if "spans" in w:
        return f"{w['spans']} spans"
    return ""


def _csv(reports) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in reports:
        w.writerow([r.name, r.kind, r.status, r.read, r.new, r.duplicate, " ".join(r.batches),
                    json.dumps(r.watermark, sort_keys=True), " | ".join(r.problems)])
    return buf.getvalue()


def _table(reports):
    from ..formats import count
    from ..tables import FitTable

    t = FitTable(title=f"sync ({count(len(reports))} sources)")
    for name in ("source", "kind", "status"):
        t.add_column(name, numeric=False)
    for name in ("read", "new", "dup"):
        t.add_column(name)
    t.add_column("watermark", numeric=False)
    for r in reports:
        t.add_row(r.name, r.kind, r.status, count(r.read), count(r.new), count(r.duplicate), _watermark(r.watermark))
    return t


def sync(
    config_path: Path = typer.Option(Path("sync.toml"), "--config", help="the sync file: its source tables "
                                                                        "(docs/sync.md)"),
    source: Optional[str] = typer.Option(None, "--source", help="read only this source, due or not"),
    wait: bool = typer.Option(False, "--wait", help="wait for a sync already running instead of exiting 0"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
    as_csv: bool = typer.Option(False, "--csv", help="print the report as CSV"),
) -> None:
    """Read the live sources of a sync file (LiteLLM's database, a folder of bills) from their watermarks.

    Each source due is read from its watermark and ingested as the usual batches (checks, keys,
    closed months as adjustments), its new watermark committed with the batch. A second sync of the
    same ledger home exits 0 saying one is running (or waits, with --wait). Exit 1 when a source
    failed (the others are still read)."""
    from .. import config
    from ..console import emit, err, fail, one_format, out
    from . import Busy, load, run

    one_format(as_json, as_csv)
    sources = load(config_path)
    try:
        reports = run(sources, config.home(), only=source, wait=wait)
    except Busy as e:
        (err if as_json or as_csv else out).print(str(e), markup=False)
        raise typer.Exit(0)
    emit(reports, as_json=as_json, as_csv=as_csv, json_of=lambda rs: [r.as_dict() for r in rs], csv_of=_csv,
         table_of=_table)
    problems = [f"{r.name}: {line}" for r in reports for line in r.problems]
    if problems:
        fail(problems)


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _settings(config_path: Optional[Path], source: Optional[str], map_path: Optional[Path], name: Optional[str]):
    """The otlp source of the sync file (named, or its only one), or one made of --map and --name."""
    from ..console import fail
    from . import load

    if config_path is None:
        if map_path is None:
            fail("give --map MAP.toml (the otel adapter's map: docs/adapters.md), or --config sync.toml with an "
                 "otlp source")
        return {"name": name or "otlp", "map": map_path.resolve()}, {}
    found = [s for s in load(config_path) if s.kind == "otlp" and source in (None, s.name)]
    if len(found) != 1:
        fail(f"{config_path}: {'no' if not found else 'more than one'} otlp source"
             f"{f' named {source!r}' if source else ''} (name one with --source)")
    src = found[0]
    return {"name": src.name, "map": src.map, "register_new": src.register_new,
            "as_adjustment": src.as_adjustment}, dict(src.otlp)


def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="the address to listen on (loopback by default; any "
                                                          "other needs --token-file)"),
    port: int = typer.Option(4318, "--port", help="the port (OTLP/HTTP's 4318; 0: any free one, printed)"),
    map_path: Optional[Path] = typer.Option(None, "--map", help="the otel adapter map (docs/adapters.md)"),
    config_path: Optional[Path] = typer.Option(None, "--config", help="a sync file with an otlp source (its map "
                                                                       "and settings)"),
    source: Optional[str] = typer.Option(None, "--source", help="the otlp source of the sync file to serve"),
    name: Optional[str] = typer.Option(None, "--name", help="the source's name without a sync file (its spool "
                                                            "and watermark; default otlp)"),
    token_file: Optional[Path] = typer.Option(None, "--token-file", help="refuse requests without "
                                                                         "'Authorization: Bearer <the file's text>' (401)"),
    flush_every: Optional[float] = typer.Option(None, "--flush-every", help="seconds between micro-batches "
                                                                             "(default 2)"),
    flush_spans: Optional[int] = typer.Option(None, "--flush-spans", help="a micro-batch as soon as this many "
                                                                          "spans wait (default 20000)"),
    max_pending_spans: Optional[int] = typer.Option(None, "--max-pending-spans",
                                                    help="answer 429 while more spans than this wait to be "
                                                         "committed (default 500000)"),
    max_body_bytes: Optional[int] = typer.Option(None, "--max-body-bytes", help="answer 413 to a body larger "
                                                                                "than this, packed or not "
                                                                                "(default 16 MiB)"),
    stop_grace: Optional[float] = typer.Option(None, "--stop-grace", help="on SIGTERM or Ctrl-C, seconds to keep "
                                                                           "trying to commit while the ledger "
                                                                           "cannot, then exit 1 naming the spool "
                                                                           "files left (default 30)"),
    register_new: bool = typer.Option(False, "--register-new", help="register unknown tenants and products"),
) -> None:
    """Serve POST /v1/traces (OTLP/HTTP, protobuf or JSON, gzip) into the ledger.

    GenAI inference spans become requests as `ingest requests --source otel` makes them; other spans
    are counted and dropped. A 200 is sent once the spans are written and fsynced to the spool in
    the ledger home; they are committed in micro-batches (every --flush-every seconds or
    --flush-spans spans), each an ingest batch with the source's watermark. A span sent again
    (trace id and span id) never counts twice. Stops on SIGTERM or Ctrl-C, committing what it
    holds; while the ledger cannot commit it tries for --stop-grace seconds, then exits 1 naming the
    spool files left, which the next start commits."""
    from .. import config
    from ..console import fail
    from .otlp_server import serve as run_server
    from .otlp_spool import Settings

    base, given = _settings(config_path, source, map_path, name)
    token_path = token_file or given.get("token_file")
    token = None
    if token_path is not None:
        try:
            token = Path(token_path).read_text(encoding="utf-8").strip()
        except OSError as e:
            fail(f"{token_path}: cannot read the token file: {e.strerror or e}")
        if not token:
            fail(f"{token_path}: the token file is empty")
    if token is None and not _loopback(host):
        fail(f"--host {host} is not a loopback address: a receiver that faces a network needs --token-file "
             "(docs/sync.md, security)")
    chosen = {"flush_every": flush_every, "flush_spans": flush_spans, "max_pending_spans": max_pending_spans,
              "max_body_bytes": max_body_bytes, "stop_grace": stop_grace}
    tuned = {k: v for k, v in {**given, **{k: v for k, v in chosen.items() if v is not None}}.items()
             if k in chosen}
    if register_new:
        base["register_new"] = True
    from .otlp_server import Uncommitted
    from .otlp_spool import SpoolBusy

    try:
        run_server(Settings(**base, **tuned, token=token), config.home(), host, port)
    except (SpoolBusy, Uncommitted) as e:
        fail(e.lines())
    except OSError as e:
        fail(f"cannot listen on {host}:{port}: {e.strerror or e}")


def register(app: typer.Typer) -> None:
    app.command("sync")(sync)
    otlp_app = typer.Typer(help=OTLP_HELP, no_args_is_help=True)
    otlp_app.command("serve")(serve)
    app.add_typer(otlp_app, name="otlp")
