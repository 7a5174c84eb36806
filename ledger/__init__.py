"""The inference unit-economics ledger: what LLM inference really costs, and who it costs for."""

__version__ = "0.1.0"
