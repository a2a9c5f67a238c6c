"""The exceptions of ember.distributed, as torch.distributed names them.

`DistError` is the root; `DistBackendError` is raised when the communication engine itself fails
(an MPI error, a peer that died or did not answer in time). Both are RuntimeErrors, as in torch,
so code that catches RuntimeError around a collective keeps working.
"""
from __future__ import annotations

__all__ = ["DistError", "DistBackendError", "NOT_INITIALIZED"]


class DistError(RuntimeError):
    """An error of ember.distributed (torch.distributed.DistError)."""


class DistBackendError(DistError):
    """The communication engine failed: an MPI error, or a peer rank that failed or timed out."""


# torch's words (and class: ValueError) for a call that needs the default group before it exists
NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."
