"""The shared vocabulary every layer of ember speaks: dtypes and their promotion, devices, the
numpy dtype table, and the error classes.

The bottom layer: it imports nothing else of ember (an import-linter contract in pyproject.toml
checks it), so the dispatcher, the backend plugins and the frontend can all build on it.
"""
