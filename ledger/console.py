"""What every command shares: the consoles, one-line-per-problem failure, JSON and CSV output,
instants from the command line, and a checked session on the ledger DB."""
from __future__ import annotations

import errno
import json
import os
import re
import sys
from contextvars import ContextVar
from datetime import datetime, timedelta, timezone
from collections.abc import Callable, Collection, Mapping
from typing import Optional

import typer
from rich.console import Console
from typer.core import TyperGroup

from . import config
from . import formats
from .errors import LedgerError
from .hints import say
from .outputs import StdoutError


class _Out(Console):
    """stdout for people. Prose wraps between words at the terminal's width, as the tables are laid
    out for it (:mod:`ledger.tables`), whenever that width is known: stdout is a terminal, or
    ``COLUMNS`` (or a width given to the console) says it. Printed to a pipe or a file with no width
    given, a line of prose stays one line for whatever reads it (``soft_wrap``); a table is laid out
    for rich's width even then. JSON and CSV never pass through here: :func:`print_json`,
    :func:`print_csv` and :func:`emit` write them to ``sys.stdout`` as they are, never wrapped."""

    def width_known(self) -> bool:
        return self._width is not None or self.is_terminal or os.environ.get("COLUMNS", "").isdigit()

    def print(self, *objects, soft_wrap: Optional[bool] = None, **kwargs) -> None:
        super().print(*objects, soft_wrap=not self.width_known() if soft_wrap is None else soft_wrap, **kwargs)


out = _Out()
#: `console.plural(n, word)` for the commands: "1 hour", "2 hours" (ledger.formats).
plural = formats.plural
#: stderr: one line per problem, never broken by the console (``soft_wrap``), as scripts read it.
err = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(lines: Collection[object] | str, code: int = 1) -> None:
    """Print one line per problem to stderr (a :class:`~ledger.errors.Problem` as its line) and exit
    non-zero. The one printer of problems: a :class:`~ledger.errors.LedgerError` raised in a command
    reaches it through :class:`RootGroup`."""
    for line in [lines] if isinstance(lines, str) else lines:
        err.print(str(line), markup=False)
    raise typer.Exit(code)


#: How the running command words the hints of the library's lines (:mod:`ledger.hints`): key -> words.
_WORDS: ContextVar[Mapping[str, str]] = ContextVar("ledger_command_words", default={})


def words(names: Mapping[str, str]) -> None:
    """Say the hints of a :class:`~ledger.errors.LedgerError` that ends the running command in these
    words (its options: ``{"repair": "use --repair"}``); called first thing by a command whose
    library marks remedies with hints. :class:`RootGroup` prints the error's lines with them."""
    _WORDS.set(names)


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def print_csv(rows: list[dict], *, numeric: Collection[str] = (), header: Optional[list[str]] = None) -> None:
    """Rows as CSV on stdout (:func:`ledger.outputs.csv_text`): every field quoted, the header
    included (`header`, else the first row's keys; no rows and no `header` print nothing); text
    neutralized against formula injection; ints, Decimals and the decimal strings of the columns
    named in `numeric` stay numbers."""
    from .outputs import csv_text

    if not rows and header is None:
        return
    sys.stdout.write(csv_text(header if header is not None else list(rows[0]), rows, numeric=numeric))


def deprecated(old: str, new: str) -> None:
    """One warning line on stderr for an old spelling of an option that still works."""
    err.print(f"warning: {old} is deprecated: use {new}", markup=False)


def parse_instant(text: str, what: str = "time") -> datetime:
    """An ISO 8601 instant with an offset (a bare date is taken as 00:00 UTC)."""
    try:
        d = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        fail(f"{what}: {text!r} is not an ISO 8601 timestamp such as 2026-10-15T00:00:00Z")
    if d.tzinfo is None:
        if len(text) == 10:
            return d.replace(tzinfo=timezone.utc)
        fail(f"{what}: {text!r} has no UTC offset (add Z or +00:00)")
    try:
        return d.astimezone(timezone.utc)
    except OverflowError:  # 0001-01-01T00:00+01:00, 9999-12-31T23:00-05:00: no such instant in UTC
        fail(f"{what}: {text!r} is out of range: in UTC it falls before 0001-01-01 or after 9999-12-31")


def open_session():
    """A session on an initialized ledger, or a clear error."""
    from . import store

    s_cm = store.session()
    s = s_cm.__enter__()
    try:
        store.check_initialized(s)
    except store.StoreError:
        s_cm.__exit__(None, None, None)
        raise
    except Exception as e:  # cannot connect, etc.
        s_cm.__exit__(None, None, None)
        fail(f"cannot open the ledger DB ({config.database_url().split('@')[-1]}): {e}")
    return s_cm, s


class Ledger:
    """`with Ledger() as s:` a checked session that commits on success."""

    def __enter__(self):
        self._cm, s = open_session()
        return s

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


class Reading:
    """`with Reading() as conn:` a checked connection for a command that only reads the ledger DB
    through SQLAlchemy Core (:func:`ledger.store.reading`: the tables of :mod:`ledger.schema`, no
    SQLModel), so that it starts without the ORM; nothing is committed. Refusals as :class:`Ledger`."""

    _opens = "reading"

    def __enter__(self):
        from . import store

        self._cm = getattr(store, self._opens)()
        try:
            return self._cm.__enter__()
        except store.StoreError:
            raise
        except Exception as e:  # cannot connect, etc.
            fail(f"cannot open the ledger DB ({config.database_url().split('@')[-1]}): {e}")

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


class Writing(Reading):
    """`with Writing() as conn:` a checked connection for a command that writes the ledger DB through
    SQLAlchemy Core (:func:`ledger.store.writing`), in one transaction committed when the block ends
    well (``ledger batches undo``). Refusals as :class:`Ledger`."""

    _opens = "writing"


#: The one meaning of --from and --to in every command that takes them, said by every help text.
WINDOW = "the window from --from to --to: a month (YYYY-MM) is the whole month, an ISO 8601 instant is taken as given (the end excluded)"
#: The help of --from and of --to: the same sentence in every command (a command may add a rule of its own after it).
FROM_HELP = "start of " + WINDOW
TO_HELP = "end of " + WINDOW

_MONTH_NAME = re.compile(r"\d{4}-\d{2}")


def _bound(text: str, option: str, *, end: bool) -> tuple[Optional[datetime], Optional[str]]:
    """(the instant, None) of one end of the window, or (None, the problem's line)."""
    if _MONTH_NAME.fullmatch(text):
        from .store import StoreError, month_bounds

        try:
            return month_bounds(text)[1 if end else 0], None
        except StoreError as e:
            return None, f"{option}: {e}"
    try:
        d = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None, (f"{option}: {text!r} is neither a month such as 2026-10 nor an ISO 8601 instant such as "
                      "2026-10-15T00:00:00Z")
    if d.tzinfo is None and len(text) != 10:
        return None, f"{option}: {text!r} has no UTC offset (add Z or +00:00)"
    return parse_instant(text, option), None


def window_bound(text: str, option: str, *, end: bool) -> datetime:
    """One end of the window of --from/--to (:data:`WINDOW`): a month ``YYYY-MM`` names the whole
    month (as the start its first instant, as the end the first instant of the next month, so the
    month is in); anything else is an ISO 8601 instant, taken as given. One line on a mistake."""
    at, problem = _bound(text, option, end=end)
    if problem:
        fail(problem)
    return at


def _ends(frm: Optional[str], to: Optional[str], check=None) -> tuple[Optional[datetime], Optional[datetime]]:
    """Both ends (None where not given), every problem of both at once (one line each), then an
    empty window; `check(instant, option, text)` may add a problem of an end."""
    found, problems = [], []
    for text, option, end in ((frm, "--from", False), (to, "--to", True)):
        at, problem = (None, None) if text is None else _bound(text, option, end=end)
        problem = problem or (check(at, option, text) if check and at is not None else None)
        found.append(None if problem else at)
        problems += [problem] if problem else []
    if problems:
        fail(problems)
    start, end = found
    if start is not None and end is not None and not start < end:
        fail(f"--from {frm} is not before --to {to}: the window is empty (it runs from --from up to --to, "
             "a month as --to through its end)")
    return start, end


def window(frm: str, to: str) -> tuple[datetime, datetime]:
    """``[start, end)`` of --from and --to, both given (:data:`WINDOW`): ``--from 2026-10 --to 2026-10``
    is October, ``--from 2026-08 --to 2026-10`` three months; one line per mistake."""
    return _ends(frm, to)


def month_window(frm: Optional[str], to: Optional[str], command: str) -> tuple[Optional[str], Optional[str]]:
    """The first and last months (``YYYY-MM``, both in) of --from and --to for a command that goes by
    month (``report trend``, ``budget forecast``): the window of :data:`WINDOW`, each end a month or
    the first instant of one (anything else is refused, one line); either may be missing (None)."""
    from .store import month_of

    def by_month(at: datetime, option: str, text: str) -> Optional[str]:
        if (at.day, at.hour, at.minute, at.second, at.microsecond) == (1, 0, 0, 0, 0):
            return None
        return (f"{option} {text}: {command} goes by month: give a month such as 2026-10, or the first instant "
                "of one (2026-10-01T00:00:00Z)")

    start, end = _ends(frm, to, by_month)
    last = None if end is None else month_of(end - timedelta(microseconds=1))
    return (None if start is None else month_of(start)), last


def period_bounds(period: Optional[str], frm: Optional[str], to: Optional[str]) -> tuple[datetime, datetime]:
    """The period ``[start, end)`` of the options --period, or --from and --to (:func:`window`; one
    line per mistake)."""
    if period and (frm or to):
        fail("give either --period or --from/--to, not both")
    if period:
        from .store import month_bounds

        return month_bounds(period)
    if not (frm and to):
        fail("give --period YYYY-MM, or both --from and --to")
    return window(frm, to)


# ---- the process around the commands: standard output that fails, and refusals from below --------

class _Stdout:
    """``sys.stdout`` while :func:`run` runs a command: the real stream, whose write and flush
    failures become :class:`StdoutError`, so that they are told apart from any other OSError."""

    def __init__(self, stream):
        self._stream = stream

    def _call(self, name: str, *args):
        if self._stream is None:  # started with standard output closed (>&-)
            raise StdoutError(errno.EBADF, "standard output is closed")
        try:
            return getattr(self._stream, name)(*args)
        except OSError as e:
            raise StdoutError(e.errno, e.strerror or str(e)) from None

    def write(self, text: str) -> int:
        return self._call("write", text)

    def writelines(self, lines) -> None:
        return self._call("writelines", lines)

    def flush(self) -> None:
        if self._stream is not None:  # nothing was written to a closed output: nothing is lost
            self._call("flush")

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _silence_stdout() -> None:
    """Point file descriptor 1 at the null device, so that nothing left in a buffer is written
    again at exit (the interpreter's last flush would print an 'Exception ignored' line)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass


def run(app: Callable[[], object]) -> None:
    """Run the CLI `app` as the ``ledger`` command, and exit. Standard output that fails while a
    command writes to it, or at the last flush, is one line on stderr and exit status 1
    (``ledger report ... --csv > /dev/full``); a reader that went away (``ledger ... | head -1``,
    EPIPE) ends the command quietly with status 141, as a Unix tool killed by SIGPIPE (128 + 13)."""
    real = sys.stdout
    sys.stdout = _Stdout(real)
    code: object = 0
    try:
        try:
            app()
        except SystemExit as e:
            code = e.code
        sys.stdout.flush()
    except StdoutError as e:
        _silence_stdout()
        if e.errno == errno.EPIPE:
            raise SystemExit(141) from None
        err.print(f"cannot write to standard output: {e.strerror}; the output is incomplete", markup=False)
        raise SystemExit(1) from None
    finally:
        sys.stdout = real
    _leave(code)


def _leave(code: object) -> None:
    """End the process with `code` as :class:`SystemExit` would, without the interpreter's teardown.

    Once a command is done, tearing down what it imported costs more than some commands' own work
    (about 0.09 s after an ingest, 0.055 s of it SQLAlchemy's modules: docs/scale.md, "The exit"),
    and it frees nothing the operating system would not free. So what a normal exit does that
    matters is done here, in its order: standard output and error flushed, the ledger DB's pooled
    connections closed (SQLite checkpoints its WAL on the last close), the ``atexit`` functions run
    (``weakref.finalize``: a DuckDB spill folder removed; logging flushed), then ``os._exit``. With
    any other thread alive (a server, a watcher), the interpreter's own exit waits for it, as ever."""
    import threading

    if threading.active_count() > 1 or os.environ.get("LEDGER_FULL_EXIT"):
        raise SystemExit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code & 0xFF
    else:  # SystemExit("text"): the text on stderr, status 1
        if sys.stderr is not None:
            sys.stderr.write(f"{code}\n")
        status = 1
    for stream in (sys.stdout, sys.stderr):  # None: a stream closed before the start (``>&-``)
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    import atexit

    store = sys.modules.get("ledger.store.db")
    if store is not None:
        store.dispose_engines()
    atexit._run_exitfuncs()
    os._exit(status)


class RootGroup(TyperGroup):
    """The root command group: a :class:`~ledger.errors.LedgerError` raised anywhere in a command
    (an input refused, a run not found, facts of an unknown layout) is its problems on stderr, one
    line each, with the hints in the command's words (:func:`words`), and its exit status, never a
    traceback. A failing standard output (:class:`~ledger.outputs.StdoutError`) is :func:`run`'s."""

    def invoke(self, ctx):
        token = _WORDS.set({})
        try:
            return super().invoke(ctx)
        except StdoutError:
            raise
        except LedgerError as e:
            fail(say(e.lines(), _WORDS.get()), e.code)
        finally:
            _WORDS.reset(token)


def one_format(as_json: bool, as_csv: bool) -> None:
    """Refuse --json together with --csv (checked before any work is done)."""
    if as_json and as_csv:
        fail("give --json or --csv, not both")


def emit(report: object, *, as_json: bool, as_csv: bool, json_of: Callable[[object], object],
         csv_of: Callable[[object], str], table_of: Callable[[object], object]) -> None:
    """A report on stdout in the format asked for: its JSON document, its CSV text, or its rich table."""
    one_format(as_json, as_csv)
    if as_json:
        print_json(json_of(report))
    elif as_csv:
        sys.stdout.write(csv_of(report))
    else:
        out.print(table_of(report))
