"""The dispatcher: keys, operator tables, the call path and the backend plugin contract.

The contract for plugin authors is what this package exports, and plugins import nothing else of
the dispatcher (import-linter checks it): `Backend` and `hookimpl` (hookspecs.py says what a plugin
provides), `stat_readers`, `primitive_ops()`, `ALL_OPS` (every op's schema and kernel table),
`replace_kernels` (swap some of a backend's kernels while it runs), `report_workspace` (kernels that report
their declared scratch) and `load_backend(device_type)`.
"""
from .backend import Backend, stat_readers
from .hookspecs import hookimpl
from .operator import ALL_OPS, primitive_ops, replace_kernels, report_workspace
from .plugins import fused_kernel_compiler, load_backend

__all__ = ["Backend", "hookimpl", "primitive_ops", "ALL_OPS", "stat_readers", "replace_kernels", "report_workspace", "load_backend",
           "fused_kernel_compiler"]
