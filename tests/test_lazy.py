"""ledger.lazy: a package's names imported from their modules when first used (docs/scale.md, "Startup")."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from ledger import lazy

PACKAGES = ("allocate", "budget", "check", "dashboard", "demo", "export", "guardrails", "ingest", "reconcile",
            "reports", "store", "sync", "whatif", "workload")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves_to_its_module_value(package):
    """Each name of a lazy package's __all__ is the very object its module defines, and is kept in the package."""
    pkg = importlib.import_module(f"ledger.{package}")
    assert pkg.__all__, package
    for name in pkg.__all__:
        value = getattr(pkg, name)
        assert name in vars(pkg), (package, name)  # kept: the next use does not import again
        assert vars(pkg)[name] is value
        assert name in dir(pkg)


def test_a_name_is_imported_when_first_used_and_not_before():
    """In a fresh interpreter, importing ledger.allocate imports none of its modules; naming `Policy` imports
    ledger.allocate.records only; a submodule named as an attribute is imported then."""
    code = (
        "import sys, ledger.allocate as a\n"
        "before = sorted(m for m in sys.modules if m.startswith('ledger.allocate.'))\n"
        "a.Policy\n"
        "after = sorted(m for m in sys.modules if m.startswith('ledger.allocate.'))\n"
        "a.sql\n"
        "print(before, after, 'ledger.allocate.sql' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] ['ledger.allocate.records'] True"


def test_unknown_name_is_an_attribute_error():
    import ledger.store as store

    with pytest.raises(AttributeError, match="'ledger.store' has no attribute 'nope'"):
        store.nope  # noqa: B018
    assert not hasattr(store, "nope")


def test_a_name_given_twice_is_refused():
    with pytest.raises(ValueError, match="'x' is named by .a and .b"):
        lazy.attach("ledger", {".a": ("x",), ".b": ("x",)})


def test_all_leaves_out_private_names_and_modules():
    _, dir_, all_ = lazy.attach("ledger.allocate", {".records": ("Policy", "_private")}, modules=("sql",))
    assert all_ == ["Policy"]
    assert {"Policy", "_private", "sql"} <= set(dir_())
