"""A package's names imported from their modules when first used (PEP 562), so that a command imports
only what it uses (docs/scale.md, "Startup").

    __getattr__, __dir__, __all__ = lazy.attach(__name__, {
        ".records": ("Policy", "Line"),        # a module of this package
        "ledger.economics": ("unit_economics",),  # or any module, by its full name
    }, modules=("engine", "sql"))               # submodules, imported when named as attributes

``from ledger.allocate import allocate`` then imports ``ledger.allocate.engine`` at that moment, and
the value is kept in the package, so the next use costs nothing. Written here rather than taken from
scientific-python's ``lazy_loader`` (whose ``attach`` does the same for a package's own modules):
``ledger.reports`` re-exports names of modules outside it (``ledger.economics``, ``ledger.runs``),
which ``lazy_loader.attach`` cannot name. Each package also imports its names under
``typing.TYPE_CHECKING``, so that type checkers and editors see them.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping


def attach(package: str, where: Mapping[str, Iterable[str]], *,
           modules: Iterable[str] = ()) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """The package's ``__getattr__``, ``__dir__`` and ``__all__``: each name of ``where[module]`` is
    imported from `module` (relative to `package` when it starts with a dot) when first asked for,
    each of `modules` is the submodule itself. ``__all__`` is the names, those starting with ``_``
    apart."""
    home: dict[str, str] = {}
    for module, names in where.items():
        for name in names:
            if name in home:
                raise ValueError(f"{package}: {name!r} is named by {home[name]} and {module}")
            home[name] = module
    submodules = frozenset(modules)

    def __getattr__(name: str):
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        sys.modules[package].__dict__[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*sys.modules[package].__dict__, *home, *submodules})

    return __getattr__, __dir__, sorted(n for n in home if not n.startswith("_"))
