"""The layout rules of docs/architecture.md, checked on the source: no module over 500 lines, no
import circle among the modules of `ledger/` (function-local imports included), one CLI layout."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "ledger"


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
        tree = ast.parse(path.read_text(encoding="utf-8"))
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


def test_data_flows_one_way_between_the_named_stages():
    # files -> ingest -> facts -> allocate -> economics -> reconcile -> runs -> reports -> views/exports.
    # Imports run against that flow: ingest writes through the facts store, allocate reads it, so a
    # stage may import the stores and the stages before it, never a later one (runs writes a true-up
    # with reconcile; reconcile reads a run's lines handed to it).
    order = ["ledger.pricebook", "ledger.store", "ledger.facts", "ledger.workload", "ledger.ingest",
             "ledger.allocate", "ledger.economics", "ledger.reconcile", "ledger.runs", "ledger.reports", "ledger.export"]
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
    assert backwards == []


def test_no_module_over_500_lines():
    big = [f"{p.relative_to(ROOT)}: {n}" for p in [*PKG.rglob("*.py"), *(ROOT / "dashboards").rglob("*.py")]
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500]
    assert big == []


def test_every_module_says_what_it_is_for():
    missing = [str(p.relative_to(ROOT)) for p in PKG.rglob("*.py")
               if not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))]
    assert missing == []


def test_commands_live_in_the_cli_module_of_their_package():
    # one layout: no top-level *_cli.py, and the root app only registers features
    assert sorted(p.name for p in PKG.glob("*_cli.py")) == []
    root = ast.parse((PKG / "cli.py").read_text(encoding="utf-8"))
    registered = {a.asname or a.name for n in ast.walk(root) if isinstance(n, ast.ImportFrom) for a in n.names
                  if a.name == "cli"}
    packages_with_cli = {p.parent.name + "_cli" for p in PKG.glob("*/cli.py")}
    assert registered == packages_with_cli


def _records() -> dict[str, list[str]]:
    """Dataclasses and NamedTuples of `ledger/`, with their field names."""
    out = {}
    for p in PKG.rglob("*.py"):
        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
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
        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Call):
                name = getattr(n.func, "id", None) or getattr(n.func, "attr", None)
                if name in records and len(records[name]) >= 5 and len(n.args) >= 3:
                    positional.append(f"{p.relative_to(ROOT)}:{n.lineno}: {name} with {len(n.args)} positional")
    assert positional == []
