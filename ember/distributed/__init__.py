"""ember.distributed (torch.distributed): process groups and collectives across processes.

The engine is MPI (mpi4py over the `mpich` wheel, `pip install 'ember[distributed]'`): start N
processes with `mpiexec -n N python train.py`, call `init_process_group("mpi")` (or "gloo", the
name torch's CPU scripts use, served by the same MPI engine) and use the collectives on cpu
tensors, in place, as with torch. opencl tensors are staged through host memory. The 'nccl'
backend serves cuda tensors through NCCL (cupy's binding; the same launchers start the processes,
see nccl.py), and where it cannot run says why. `async_op=True` returns a Work handle;
EMBER_DISTRIBUTED_DEBUG=DETAIL (or TORCH_DISTRIBUTED_DEBUG=DETAIL) checks before each collective
that every rank runs the same one on the same shapes.
"""
from __future__ import annotations

from . import engine
from .collectives import all_reduce, barrier, broadcast, reduce, reduce_scatter, reduce_scatter_tensor
from .errors import DistBackendError, DistError
from .gather_scatter import all_gather, all_gather_into_tensor, all_to_all, all_to_all_single, gather, scatter
from .objects import all_gather_object, broadcast_object_list, gather_object, scatter_object_list
from .p2p import irecv, isend, recv, send
from .process_group import (Backend, GroupMember, ProcessGroup, destroy_process_group, get_backend, get_global_rank,
                            get_group_rank, get_process_group_ranks, get_rank, get_world_size, group,
                            init_process_group, is_initialized, new_group)
from .reduce_op import ReduceOp
from .work import Work

__all__ = ["is_available", "is_mpi_available", "is_gloo_available", "is_nccl_available", "init_process_group",
           "destroy_process_group", "is_initialized", "get_rank", "get_world_size", "get_backend", "new_group",
           "get_group_rank", "get_global_rank", "get_process_group_ranks", "Backend", "ProcessGroup", "GroupMember",
           "group", "ReduceOp", "Work", "DistError", "DistBackendError", "all_reduce", "broadcast", "reduce",
           "reduce_scatter", "reduce_scatter_tensor", "all_gather", "all_gather_into_tensor", "all_to_all",
           "all_to_all_single", "gather", "scatter", "barrier", "send", "recv", "isend", "irecv",
           "broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list"]


def is_available() -> bool:
    """Whether ember.distributed can run: the MPI engine (mpi4py) is installed. Checking does not start MPI."""
    return engine.mpi_installed()


def is_mpi_available() -> bool:
    """Whether the 'mpi' backend can run (mpi4py is installed)."""
    return engine.mpi_installed()


def is_gloo_available() -> bool:
    """Whether the 'gloo' backend name can run: ember serves it with the MPI engine."""
    return engine.mpi_installed()


def is_nccl_available() -> bool:
    """Whether the 'nccl' backend can run: cupy with its NCCL binding and library, and a CUDA GPU
    (when not, init_process_group('nccl') says which is missing)."""
    return engine.nccl_unavailable_reason() is None
