"""The ledger's Streamlit dashboard: ``app.py`` (navigation and sidebar) and one script per page in
``pages/``. ``ledger dashboard`` serves it; it ships in the wheel beside the ``ledger`` package."""
