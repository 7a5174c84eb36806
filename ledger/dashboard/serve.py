"""The dashboard server: ``python -m ledger.dashboard.serve run APP [streamlit options]``, what
``ledger dashboard`` starts.

It imports what every page needs (pandas, Altair, Arrow, babel, the readers and through them the
ledger's reports, sizing, budgets and price books) before Streamlit's own command line starts the
server, so that the first page anyone opens pays for its data, not for about two seconds of
imports. Streamlit runs the pages in this same process, where those modules are then loaded.
"""
from __future__ import annotations

import sys


def preload() -> None:
    """Import the modules the pages import (they stay in ``sys.modules`` for every session)."""
    import altair  # noqa: F401
    import babel.numbers  # noqa: F401
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401
    from babel import Locale

    # the readers (the package names them lazily: its modules are imported here, not by the package)
    from . import drill, economics, planning, prices, reconcile, state, tenants, workload  # noqa: F401
    from ..workload import render  # noqa: F401

    Locale.parse("en_US")  # babel's locale data, read once


def main(argv: list[str]) -> None:
    """Preload, then hand `argv` to Streamlit's command line (``streamlit run APP ...``)."""
    preload()
    from streamlit.web import cli

    sys.argv = ["streamlit", *argv]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main(sys.argv[1:])
