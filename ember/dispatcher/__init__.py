"""The dispatcher: keys, operator tables, the call path and the backend plugin contract.

Public for plugin authors: `hookimpl`, `Backend`, `primitive_ops()`, `stat_readers`; see hookspecs.py.
"""
from .backend import Backend, stat_readers
from .hookspecs import hookimpl
from .operator import ALL_OPS, primitive_ops

__all__ = ["Backend", "hookimpl", "primitive_ops", "ALL_OPS", "stat_readers"]
