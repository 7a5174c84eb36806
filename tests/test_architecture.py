"""The layout rules of docs/architecture.md, checked on the source: no module over 500 lines, no
import circle among the modules of `ledger/` (function-local imports included), one CLI layout."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "ledger"


def _parse(path: Path) -> ast.Module:
    """The syntax tree of the source file `path`, parsed once per version of the file (each rule below
    walks every module: one parse each, not one per rule). Read only: no rule changes a tree."""
    st = path.stat()
    return _parsed(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=None)
def _parsed(path: Path, _mtime_ns: int, _size: int) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _resolve(current: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute module named by a (possibly relative) import inside `current`."""
    if level == 0:
        return target or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def import_graph() -> dict[str, set[str]]:
    """Edges module -> ledger module it imports (a name imported from a package is the submodule
    when one of that name exists, else the package's __init__)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        tree = _parse(path)
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_pkg, node.level, node.module)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for t in targets:
                if t in mods and t != name:
                    graph[name].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_a_cycle():
    # a -> b -> c -> a is one circle; d hangs off it and is not in it
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_among_ledger_modules():
    assert cycles(import_graph()) == []


def _backwards(order: list[str]) -> list[str]:
    """Every import of a module of a stage in `order` from a stage to its right (commands excepted)."""
    graph = import_graph()

    def stage(mod: str) -> int | None:
        for i, s in enumerate(order):
            if mod == s or mod.startswith(s + "."):
                return i
        return None

    backwards = []
    for src, targets in graph.items():
        if src.endswith(".cli"):
            continue  # a command may drive any stage it needs
        for t in targets:
            a, b = stage(src), stage(t)
            if a is not None and b is not None and b > a:
                backwards.append(f"{src} imports {t}")
    return backwards


def test_data_flows_one_way_between_the_named_stages():
    # files -> ingest -> facts -> allocate -> economics -> reconcile -> runs -> reports -> views/exports.
    # Imports run against that flow: ingest writes through the facts store, allocate reads it, so a
    # stage may import the stores and the stages before it, never a later one (runs writes a true-up
    # with reconcile; reconcile reads a run's lines handed to it).
    order = ["ledger.pricebook", "ledger.store", "ledger.facts", "ledger.workload", "ledger.ingest", "ledger.sync",
             "ledger.allocate", "ledger.economics", "ledger.reconcile", "ledger.runs", "ledger.reports", "ledger.export"]
    assert _backwards(order) == []


def test_guardrails_sit_after_allocate_and_before_the_reports():
    # the guardrails price the open month with the allocation (store, facts, price books, allocate)
    # and import no later stage; the reports put the budget in force beside the actuals
    # (ledger/reports/budgets.py reads the guardrails' budgets books), so guardrails come before them
    order = ["ledger.pricebook", "ledger.store", "ledger.facts", "ledger.workload", "ledger.ingest", "ledger.sync",
             "ledger.allocate", "ledger.guardrails", "ledger.economics", "ledger.reconcile", "ledger.runs",
             "ledger.reports", "ledger.export"]
    assert _backwards(order) == []
    graph = import_graph()
    assert "ledger.guardrails.book" in graph["ledger.reports.budgets"]


def test_sizing_and_budget_sit_before_the_exports():
    # sizing reads workloads and price books; budget sizes and prices with them and the allocation's
    # categories; the exports write the budget's workbook. Budget's renderers (terminal, JSON, CSV)
    # are budget's own (ledger/budget/render.py): no module of budget reaches into export, not even
    # through a function-local import (the old budget -> export -> budget circle).
    order = ["ledger.pricebook", "ledger.store", "ledger.facts", "ledger.workload", "ledger.sizing", "ledger.ingest",
             "ledger.allocate", "ledger.budget", "ledger.economics", "ledger.reconcile", "ledger.runs",
             "ledger.reports", "ledger.export"]
    assert _backwards(order) == []


def test_export_is_only_for_files():
    # a terminal renderer (`*_as_table`) lives with its report, not in ledger/export
    tables = [f"{p.relative_to(ROOT)}: {n.name}" for p in (PKG / "export").rglob("*.py")
              for n in ast.walk(_parse(p))
              if isinstance(n, ast.FunctionDef) and n.name.endswith("_as_table")]
    assert tables == []


def test_no_module_over_500_lines():
    big = [f"{p.relative_to(ROOT)}: {n}" for p in [*PKG.rglob("*.py"), *(ROOT / "dashboards").rglob("*.py")]
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500]
    assert big == []


def test_every_module_says_what_it_is_for():
    missing = [str(p.relative_to(ROOT)) for p in PKG.rglob("*.py")
               if not ast.get_docstring(_parse(p))]
    assert missing == []


def test_commands_live_in_the_cli_module_of_their_package():
    # one layout: no top-level *_cli.py, and the root's table names exactly the packages with a cli.py
    from ledger.cli import COMMANDS

    assert sorted(p.name for p in PKG.glob("*_cli.py")) == []
    modules = {c.module for c in COMMANDS}
    packages_with_cli = {f"ledger.{p.parent.name}.cli" for p in PKG.glob("*/cli.py")}
    assert modules == packages_with_cli


def _records() -> dict[str, list[str]]:
    """Dataclasses and NamedTuples of `ledger/`, with their field names."""
    out = {}
    for p in PKG.rglob("*.py"):
        for n in ast.walk(_parse(p)):
            if not isinstance(n, ast.ClassDef):
                continue
            names = {getattr(d.func if isinstance(d, ast.Call) else d, "id", None) or
                     getattr(d.func if isinstance(d, ast.Call) else d, "attr", None) for d in n.decorator_list}
            bases = {getattr(b, "id", None) or getattr(b, "attr", None) for b in n.bases}
            if "dataclass" in names or "NamedTuple" in bases:
                out[n.name] = [s.target.id for s in n.body if isinstance(s, ast.AnnAssign)]
    return out


def test_records_with_many_fields_are_built_by_keyword():
    # `Line(day, kind, tenant, ...)` hides which value is which; three or more positional arguments
    # to a record of five or more fields is refused
    records = _records()
    assert len(records["Line"]) == 13
    positional = []
    for p in [*PKG.rglob("*.py"), *(ROOT / "dashboards").rglob("*.py")]:
        for n in ast.walk(_parse(p)):
            if isinstance(n, ast.Call):
                name = getattr(n.func, "id", None) or getattr(n.func, "attr", None)
                if name in records and len(records[name]) >= 5 and len(n.args) >= 3:
                    positional.append(f"{p.relative_to(ROOT)}:{n.lineno}: {name} with {len(n.args)} positional")
    assert positional == []


# ---- private names stay in their package --------------------------------------------------------

#: Packages that still import private names of another: (importing package, package imported from).
#: None: the ingest adapters take `file_sha256`, `OpenFile`, `first_line` and `csv_header` (issue 26).
PRIVATE_IMPORTS_ALLOWED: set[tuple[str, str]] = set()


def _package(mod: str, packages: set[str]) -> str:
    """The package a module belongs to: a package's __init__ is the package, a module of a package
    is in that package; each top-level module of ledger/ (a stage or shared piece of its own:
    economics, runs, facts, money, ...) counts as one."""
    if mod in packages:
        return mod
    parent = mod.rpartition(".")[0]
    return mod if parent == "ledger" else parent


def private_imports() -> list[tuple[str, str, str, str]]:
    """(importing package, package imported from, name, file:line) for every private name (one
    leading underscore) a module of ledger/ takes from a module of another package: by
    ``from X import _y`` or as ``mod._y`` of a module it imported."""
    mods = _modules()
    packages = {m for m, p in mods.items() if p.name == "__init__.py"}
    found = []
    for name, path in mods.items():
        tree = _parse(path)
        is_pkg = path.name == "__init__.py"
        here = _package(name, packages)
        aliases: dict[str, str] = {}  # local name -> ledger module imported as a module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_pkg, node.level, node.module)
                for a in node.names:
                    target = f"{base}.{a.name}"
                    if target in mods:
                        aliases[a.asname or a.name] = target
                    elif base in mods and a.name.startswith("_") and not a.name.startswith("__") \
                            and _package(base, packages) != here:
                        found.append((here, _package(base, packages), a.name,
                                      f"{path.relative_to(ROOT)}:{node.lineno}"))
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in mods:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                target = aliases[node.value.id]
                if _package(target, packages) != here:
                    found.append((here, _package(target, packages), node.attr,
                                  f"{path.relative_to(ROOT)}:{node.lineno}"))
    return found


def test_no_private_name_is_imported_across_packages():
    # a name with a leading underscore is its package's own; what another package needs is public
    assert [f"{where}: {attr} of {theirs}" for mine, theirs, attr, where in private_imports()
            if (mine, theirs) not in PRIVATE_IMPORTS_ALLOWED] == []


def test_the_private_import_finder_finds_both_forms(tmp_path, monkeypatch):
    pkg = tmp_path / "ledger"
    for rel, text in {"__init__.py": '"""r"""', "a/__init__.py": '"""a"""', "a/m.py": '"""m"""\n_x = 1\n',
                      "a/n.py": '"""n"""\nfrom .m import _x\n',  # same package: fine
                      "b/__init__.py": '"""b"""',
                      "b/k.py": '"""k"""\nfrom ..a.m import _x\nfrom ..a import m\nprint(m._x, m.__name__)\n'}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text, encoding="utf-8")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    monkeypatch.setattr(__import__(__name__), "PKG", pkg)
    assert sorted((m, p, a) for m, p, a, _ in private_imports()) == [("ledger.b", "ledger.a", "_x")] * 2


# ---- the allocation's temp tables ---------------------------------------------------------------

def _engine_calls() -> list[tuple[str, str, str, str | None, str]]:
    """(method, registry constant, file:line, sql member named by the statement argument, its text)
    for every ``<engine>.create(con, T, ...)``, ``.create_in_parts(con, T, keys, lambda lo, hi:
    ...)`` and ``.load(con, T, ...)`` in ledger/ whose table argument is a constant of
    ledger/allocate/tables.py (``T`` or ``tables.T``)."""
    from ledger.allocate import tables

    names = {n for n in dir(tables) if isinstance(getattr(tables, n), tables.TempTable)}
    out = []
    for path in PKG.rglob("*.py"):
        for node in ast.walk(_parse(path)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("create", "create_in_parts", "load") and len(node.args) >= 2):
                continue
            arg = node.args[1]
            const = arg.id if isinstance(arg, ast.Name) else arg.attr if isinstance(arg, ast.Attribute) else None
            if const not in names:
                continue
            statement = None
            made = {"create": 2, "create_in_parts": 3}.get(node.func.attr)
            if made is not None and len(node.args) > made:
                s = node.args[made].body if isinstance(node.args[made], ast.Lambda) else node.args[made]
                s = s.func if isinstance(s, ast.Call) else s
                if isinstance(s, ast.Attribute) and isinstance(s.value, ast.Name) and s.value.id == "sql":
                    statement = s.attr
            out.append((node.func.attr, const, f"{path.relative_to(ROOT)}:{node.lineno}", statement,
                        ast.unparse(node)))
    return out


def test_each_allocation_temp_table_is_made_by_exactly_one_statement():
    from ledger.allocate import sql, tables

    assert len({t.name for t in tables.TABLES}) == len(tables.TABLES)
    made = [t.statement for t in tables.TABLES if t.statement]
    assert len(set(made)) == len(made)  # no statement makes two tables
    assert [s for s in made if not hasattr(sql, s)] == []
    calls = _engine_calls()
    for t in tables.TABLES:
        const = next(n for n in dir(tables) if getattr(tables, n) is t)
        mine = [c for c in calls if c[1] == const]
        assert len(mine) == 1, (t.name, mine)  # made in one place ...
        method, _, where, statement, text = mine[0]
        if t.statement:  # ... by the statement the registry names
            assert method in ("create", "create_in_parts") and statement == t.statement, (where, text)
        else:  # ... or loaded from Python rows
            assert method == "load", (where, text)


def _strings_outside_docstrings(tree: ast.AST) -> list[ast.Constant]:
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            docs.add(id(node.body[0].value))
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs]


def test_the_temp_tables_are_named_only_through_the_registry():
    # no SQL (nor any other string) of ledger/ spells a temp table's name: it is `{GROUPS}`, so that
    # renaming one, or finding every reader of one, is a change of ledger/allocate/tables.py
    import re

    from ledger.allocate import tables

    pattern = re.compile(r"(?<!\w)(" + "|".join(re.escape(t.name) for t in tables.TABLES) + r")(?!\w)")
    spelled = []
    for path in PKG.rglob("*.py"):
        if path == PKG / "allocate" / "tables.py":
            continue
        for node in _strings_outside_docstrings(_parse(path)):
            spelled += [f"{path.relative_to(ROOT)}:{node.lineno}: {m}" for m in pattern.findall(node.value)]
    assert spelled == []


# ---- functions: a few parameters, a screen or two long -------------------------------------------

#: Functions allowed over a limit, as "path:function": none (the price book parser was split into
#: one function per rule of a price entry).
LONG_FUNCTIONS_ALLOWED: set[str] = set()
MANY_PARAMETERS_ALLOWED: set[str] = set()
MAX_PARAMETERS, MAX_LINES = 12, 100


def _functions() -> list[tuple[Path, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function (methods and nested ones included) of ledger/ and the dashboard's pages."""
    out = []
    for p in [*PKG.rglob("*.py"), *(ROOT / "dashboards").rglob("*.py")]:
        out += [(p, n) for n in ast.walk(_parse(p))
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return out


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    return len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)


def test_no_function_outside_a_cli_takes_more_than_12_parameters():
    # a command's options are its parameters (typer reads them); anywhere else a frozen record
    # carries the fields (sizing.service.SizingJob, engine.SizingSpec, tiers.PoolRequest)
    many = [f"{where}: {n} parameters" for p, fn in _functions() if p.name != "cli.py"
            if (n := _parameters(fn)) > MAX_PARAMETERS
            and (where := f"{p.relative_to(ROOT).as_posix()}:{fn.name}") not in MANY_PARAMETERS_ALLOWED]
    assert many == []


def test_no_function_is_over_100_lines():
    long = [f"{where}: {n} lines" for p, fn in _functions()
            if (n := fn.end_lineno - fn.lineno + 1) > MAX_LINES
            and (where := f"{p.relative_to(ROOT).as_posix()}:{fn.name}") not in LONG_FUNCTIONS_ALLOWED]
    assert long == []


def test_the_limits_hold_for_sizing_budget_and_ingest_without_exceptions():
    # ingest runs as stages over frozen records (ledger/ingest/records.py), none over a screen or two
    allowed = LONG_FUNCTIONS_ALLOWED | MANY_PARAMETERS_ALLOWED
    assert [a for a in allowed if a.startswith(("ledger/sizing/", "ledger/budget/", "ledger/ingest/"))] == []


# ---- the ledger home is passed down, not read from the environment --------------------------------

#: Where the home is passed: every module of these packages and modules (a cli.py excepted: a command
#: resolves the home once) takes it as a parameter, so that two homes can be used in one process.
HOME_PASSED = ("ledger/ingest/", "ledger/reconcile/", "ledger/facts.py", "ledger/facts_layout.py")
#: The top-level API functions that resolve the configured home when their caller gives none.
HOME_RESOLVED_IN = {"ledger/ingest/commit.py:ingest", "ledger/ingest/commit.py:undo_batch",
                    "ledger/ingest/bill.py:ingest_bill", "ledger/ingest/sources/__init__.py:ingest_from"}


def home_reads(paths: list[Path]) -> list[str]:
    """``file:line: what`` for each place of `paths` that reads the ledger's configuration or the
    environment (``config.<name>``, ``os.environ``, ``os.getenv``) outside a function of
    HOME_RESOLVED_IN, or opens a DuckDB connection or its spill folder without naming the home
    (``duck.connect(...)``, ``duck.spill_root()``: they would spill into LEDGER_HOME), or a session
    without the home's database URL (``store.session()``: LEDGER_DATABASE_URL, else SQLite in LEDGER_HOME)."""
    found = []
    for p in paths:
        rel = p.relative_to(ROOT).as_posix()
        tree = _parse(p)
        inside: dict[int, str] = {}  # node id -> the top-level function it is in
        for fn in tree.body:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for n in ast.walk(fn):
                    inside[id(n)] = fn.name
        for n in ast.walk(tree):
            what = None
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
                if n.value.id == "config" and n.attr != "Home":
                    what = f"config.{n.attr}"
                elif n.value.id == "os" and n.attr in ("environ", "getenv"):
                    what = f"os.{n.attr}"
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name):
                owner, name, bare = n.func.value.id, n.func.attr, not n.args and not n.keywords
                if owner == "duck" and name == "connect" and not any(k.arg == "home" for k in n.keywords):
                    what = "duck.connect(...) without home="
                elif owner == "duck" and name == "spill_root" and bare:
                    what = "duck.spill_root() without the home"
                elif owner == "store" and name in ("session", "engine") and bare:
                    what = f"store.{name}() without the home's database URL"
            if what and f"{rel}:{inside.get(id(n))}" not in HOME_RESOLVED_IN:
                found.append((rel, n.lineno, n.col_offset, what))
    return [f"{rel}:{line}: {what}" for rel, line, _, what in sorted(found)]


def test_the_ledger_home_is_passed_down_not_read_from_the_environment():
    paths = [p for p in PKG.rglob("*.py") if p.name != "cli.py"
             and p.relative_to(ROOT).as_posix().startswith(HOME_PASSED)]
    assert len(paths) > 20
    assert home_reads(paths) == []


def test_the_home_read_finder_finds_each_form(tmp_path, monkeypatch):
    m = tmp_path / "m.py"
    m.write_text('"""m"""\nimport os\n\n\ndef f(home):\n'
                 '    a = config.ledger_home()\n    b = os.environ["X"]\n'
                 '    c = duck.connect("x", ordered=True)\n    d = duck.spill_root()\n    e = store.session()\n'
                 '    return (duck.connect("y", home=home), config.Home, duck.spill_root(home),\n'
                 '            store.session(home.url))\n',
                 encoding="utf-8")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert [f.split(": ", 1)[1] for f in home_reads([m])] == [
        "config.ledger_home", "os.environ", "duck.connect(...) without home=", "duck.spill_root() without the home",
        "store.session() without the home's database URL"]


def test_the_function_limits_count_what_they_say(tmp_path, monkeypatch):
    pkg = tmp_path / "ledger"
    pkg.mkdir()
    params = ", ".join(f"a{i}" for i in range(13))
    (pkg / "m.py").write_text(f'"""m"""\ndef wide({params}):\n    pass\n\n\ndef ok(*a, b, **c):\n    pass\n'
                              + "\n\ndef tall():\n" + "    x = 1\n" * 100, encoding="utf-8")
    (pkg / "cli.py").write_text(f'"""c"""\ndef command({params}):\n    pass\n', encoding="utf-8")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    monkeypatch.setattr(__import__(__name__), "PKG", pkg)
    found = {(p.name, fn.name): (_parameters(fn), fn.end_lineno - fn.lineno + 1) for p, fn in _functions()}
    assert found[("m.py", "wide")][0] == found[("cli.py", "command")][0] == 13 and found[("m.py", "ok")][0] == 3
    assert found[("m.py", "tall")][1] == 101
    with pytest.raises(AssertionError, match="wide: 13 parameters"):
        test_no_function_outside_a_cli_takes_more_than_12_parameters()
    with pytest.raises(AssertionError, match="tall: 101 lines"):
        test_no_function_is_over_100_lines()


# ---- the library says what is wrong in its own words ---------------------------------------------

#: The packages whose problems and notes never name a command-line flag (ledger.hints).
FLAG_FREE = ("sizing", "budget", "workload", "pricebook", "reconcile", "allocate")


def test_no_library_string_names_a_command_line_flag():
    # a module below the commands says what is wrong in its own words and marks the remedy with a
    # Hint; the command's cli.py words it as its option (`use --repair`, `--percentile`)
    import re

    flag = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
    named = []
    for package in FLAG_FREE:
        for path in (PKG / package).rglob("*.py"):
            if path.name == "cli.py":
                continue
            for node in _strings_outside_docstrings(_parse(path)):
                named += [f"{path.relative_to(ROOT)}:{node.lineno}: {m}" for m in flag.findall(node.value)]
    assert named == []



# ---- one error base, one problem record, one home per small helper -------------------------------

def _classes() -> list[tuple[str, ast.ClassDef, bool]]:
    """(module, class, defined at the module's top level) for every class of ledger/."""
    out = []
    for name, path in _modules().items():
        tree = _parse(path)
        top = {id(n) for n in tree.body}
        out += [(name, n, id(n) in top) for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    return out


def test_every_exception_of_the_ledger_derives_from_ledger_error():
    # one base: a command prints any refusal of the library as its problems, one line each, with its
    # exit status (ledger.console.RootGroup); `except ValueError` callers keep working (the old bases stay)
    import builtins
    import importlib

    from ledger.errors import LedgerError

    stray, nested = [], []
    for module, node, top in _classes():
        if not top:  # an exception class in a function would escape the check: none is
            bases = {getattr(b, "id", None) or getattr(b, "attr", None) for b in node.bases}
            if any(b and (b.endswith(("Error", "Exception")) or isinstance(getattr(builtins, b, None), type)
                          and issubclass(getattr(builtins, b), BaseException)) for b in bases):
                nested.append(f"{module}.{node.name}")
            continue
        cls = getattr(importlib.import_module(module), node.name)
        if isinstance(cls, type) and issubclass(cls, BaseException) and not issubclass(cls, LedgerError):
            stray.append(f"{module}.{node.name}")
    assert (stray, nested) == ([], [])


def test_one_problem_record_renders_every_problem_line():
    # the one rendering: file:line:column: entry: message, with the parts that are present, as each
    # stage wrote its own problems before (ingest: file:line: column: message; a price book:
    # file:line:column: entry: message; a TOML error: file: message, its place in the message)
    from dataclasses import FrozenInstanceError

    from ledger.errors import LedgerError, Problem

    assert str(Problem(file="r.csv", line=3, entry="tenant", message="empty")) == "r.csv:3: tenant: empty"
    assert str(Problem(file="r.csv", line=3, message="bytes that are not UTF-8")) == "r.csv:3: bytes that are not UTF-8"
    assert str(Problem(file="r.parquet", entry="at", message="naive")) == "r.parquet: at: naive"
    assert str(Problem(file="b.toml", line=4, column=7, message="not valid TOML: x (at line 4, column 7)")) == \
        "b.toml:4:7: not valid TOML: x (at line 4, column 7)"
    assert str(Problem(file="b.toml", line=9, entry="price[1] gpu_time/H100/*/*", message="price -1 is negative")) == \
        "b.toml:9: price[1] gpu_time/H100/*/*: price -1 is negative"
    assert str(Problem(file="m.toml", entry="", message="no rule")) == "m.toml: no rule"
    assert str(Problem(message="no price in force")) == "no price in force"
    with pytest.raises(TypeError):
        Problem("r.csv", 3, None, "tenant", "empty")  # keyword-built only
    with pytest.raises(FrozenInstanceError):
        Problem(message="x").message = "y"
    e = LedgerError([Problem(file="a", line=1, message="m"), "a line"])
    assert (e.lines(), str(e), e.code) == (["a:1: m", "a line"], "a:1: m\na line", 1)


def test_the_root_command_prints_a_refusal_one_line_a_problem_in_the_commands_words():
    import typer
    from typer.testing import CliRunner

    from ledger.console import RootGroup, words
    from ledger.errors import LedgerError, Problem
    from ledger.hints import Hint, Hinted

    class Refused(LedgerError):
        code = 3

    app = typer.Typer(cls=RootGroup, add_completion=False)

    @app.command()
    def go() -> None:
        words({"again": "run it with --again"})
        raise Refused([Problem(file="f.csv", line=2, entry="tenant", message="empty"),
                       Hinted("try ", Hint("again", "again"))])

    @app.command()
    def other() -> None:  # the words of one command are not another's
        raise Refused(Hinted("try ", Hint("again", "again")))

    r = CliRunner().invoke(app, ["go"])
    assert (r.exit_code, r.stderr.splitlines(), r.stdout) == (3, ["f.csv:2: tenant: empty",
                                                                   "try run it with --again"], "")
    r = CliRunner().invoke(app, ["other"])
    assert (r.exit_code, r.stderr.splitlines()) == (3, ["try again"])


#: The one home of each small helper (ledger/sqltext.py, ledger/instants.py) and the shapes of a copy.
HELPER_COPIES = {
    "ledger/sqltext.py": ('.replace("\'", "\'\'")', ".replace('\"', '\"\"')"),
    "ledger/instants.py": ('isoformat().replace("+00:00", "Z")', 'strftime("%Y-%m-%dT%H:%M:%S'),
}
#: Quotes doubled that are not SQL: a CSV field (FOCUS 1.2's own writer).
NOT_SQL = {("ledger/export/focus12.py", ".replace('\"', '\"\"')")}


def test_each_small_helper_has_one_home():
    # the SQL quoter (quote_ident, literal) and the UTC `...Z` instant (iso) are written once, below
    # every stage; every other module imports them
    copies = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        copies += [f"{rel}: {shape}" for home, shapes in HELPER_COPIES.items() if rel != home
                   for shape in shapes if shape in text and (rel, shape) not in NOT_SQL]
    assert copies == []
    helpers = ("iso", "_iso", "lit", "_lit", "q", "quote_ident", "literal")
    defined = {f"{p.relative_to(ROOT).as_posix()}:{n.name}" for p in PKG.rglob("*.py")
               for n in ast.walk(_parse(p))
               if isinstance(n, ast.FunctionDef) and n.name in helpers}
    assert defined == {"ledger/instants.py:iso", "ledger/sqltext.py:literal", "ledger/sqltext.py:quote_ident"}
