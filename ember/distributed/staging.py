"""Tensors as the flat numpy buffers the MPI engine reads and writes, and back.

A contiguous cpu tensor is handed to MPI as a view of its own memory, so results land in place;
anything else goes through a contiguous copy that `commit()` writes back:

* a non-contiguous cpu tensor: copied in and out;
* float16/bfloat16: moved as their raw 16-bit patterns by the copying collectives (exact), and
  reduced in float32 (one rounding at the end, where torch's gloo rounds after every step);
* bool: moved and reduced as bytes (0/1);
* a tensor on another device whose memory the host reaches by copies (opencl): staged through
  host memory, the result copied back to the device with `copy_`.

Writing bumps the tensor's storage version, as ember's in-place kernels do, so autograd notices
a collective that overwrote a saved tensor.
"""
from __future__ import annotations

import numpy as np

from ember.core.numpy_interop import to_numpy_dtype
from ember.frontend.factories import from_numpy
from ember.frontend.tensor import Tensor

from .reduce_op import RedOpType

__all__ = ["check_tensor", "check_same_dtype", "check_world_multiple", "reduction_category", "check_reduce_op",
           "Staged", "deliver", "concatenated"]

_NOT_SERVED = ("cuda", "meta")


def check_tensor(op: str, t, arg: str, pg) -> None:
    """torch's checks on a collective's tensor argument, and that the backend of group `pg` serves
    its device: 'mpi'/'gloo' cpu and opencl tensors, 'nccl' cuda tensors on the group's GPU, 'fake'
    (which moves nothing) a tensor on any device, the meta device above all."""
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{arg}` of type Tensor but got "
                        f"{type(t)} instead.")
    if t.is_sparse:
        raise RuntimeError(f"{op}: `{arg}` is a sparse tensor; the '{pg.backend}' backend moves dense tensors only")
    if pg.nccl is not None:
        if t.device.type != "cuda":
            raise RuntimeError(f"{op}: the 'nccl' backend serves cuda tensors, but `{arg}` is on {t.device}; use a "
                               "'gloo' or 'mpi' group (new_group(backend='gloo')) for host tensors")
        if t.device.index != pg.nccl.device:
            raise ValueError(f"{op}: `{arg}` is on {t.device} but this process's NCCL group runs on "
                             f"cuda:{pg.nccl.device} (give init_process_group a device_id, or call "
                             "ember.cuda.set_device first)")
    elif t.device.type in _NOT_SERVED and not pg.fake:
        hint = "; use the 'nccl' backend for cuda tensors" if t.device.type == "cuda" else ""
        raise RuntimeError(f"{op}: the '{pg.backend}' backend serves cpu tensors (and opencl tensors, staged "
                           f"through host memory), but `{arg}` is on {t.device}{hint}")


def check_same_dtype(op: str, tensors, reference) -> None:
    """Every tensor of `tensors` must have `reference`'s dtype (the output/input pairing of a collective)."""
    for t in tensors:
        if t.dtype != reference.dtype:
            raise ValueError(f"{op}: tensors must all have the same dtype, found {reference.dtype} and {t.dtype}")


def check_world_multiple(op: str, whole, whole_name: str, piece, piece_name: str, world_size: int) -> None:
    """`whole` (all ranks' pieces, flat) must have `world_size` times the elements of one rank's `piece`."""
    if whole.numel() != world_size * piece.numel():
        raise ValueError(f"{op}: {whole_name} tensor must be world_size ({world_size}) times the {piece_name} size, "
                         f"got {whole_name} {list(whole.shape)} and {piece_name} {list(piece.shape)}")


def reduction_category(t: Tensor) -> str:
    """How a reduction treats `t`'s values: 'bool' (logical), 'float', or 'int' (the bitwise ops too)."""
    return "bool" if t.dtype.name == "bool" else "float" if t.is_floating_point() else "int"


#: the reductions defined on bool tensors (SUM and MAX a logical or, PRODUCT and MIN a logical and)
_BOOL_REDUCTIONS = (RedOpType.SUM, RedOpType.MAX, RedOpType.BOR, RedOpType.PRODUCT, RedOpType.MIN, RedOpType.BAND,
                    RedOpType.BXOR)


def check_reduce_op(op, op_name: str, tensor: Tensor) -> None:
    """`op` must be a ReduceOp the engine serves on the values of `tensor` (see `reduction_category`)."""
    category = reduction_category(tensor)
    if not isinstance(op, RedOpType):
        raise ValueError(f"{op_name}: op must be a ReduceOp (ReduceOp.SUM, ...), got {op!r}")
    if op is RedOpType.PREMUL_SUM:
        raise ValueError(f"{op_name}: ReduceOp.PREMUL_SUM is not supported by the MPI engine")
    if category == "bool" and op not in _BOOL_REDUCTIONS:
        raise ValueError(f"{op_name}: ReduceOp.{op.name} is not defined on bool tensors")
    if category == "float" and op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR):
        raise ValueError(f"{op_name}: ReduceOp.{op.name} needs an integer or bool tensor, got a floating-point one")


def _wire(host_dtype: np.dtype, reduction: bool) -> np.dtype:
    """The numpy dtype MPI moves for a tensor of `host_dtype`."""
    if host_dtype.itemsize == 2 and host_dtype.kind not in "iu":      # float16, bfloat16
        return np.dtype(np.float32) if reduction else np.dtype(np.uint16)
    if host_dtype == np.bool_:
        return np.dtype(np.uint8)
    return host_dtype


class Staged:
    """One tensor's values as a flat contiguous buffer `buf` of the wire dtype, and `commit()` to put
    `buf`'s (possibly changed) values back into the tensor."""

    __slots__ = ("tensor", "host", "buf", "aliased", "direct", "category")

    def __init__(self, tensor: Tensor, reduction: bool, reads: bool = True) -> None:
        self.tensor = tensor
        self.direct = tensor.device.type == "cpu"
        if self.direct:
            host = tensor.detach()._host()
        elif reads:
            host = tensor.detach().cpu()._host()
        else:
            host = np.empty(tuple(tensor.shape), to_numpy_dtype(tensor.dtype))
        wire = _wire(host.dtype, reduction)
        self.host = host
        self.category = reduction_category(tensor)
        self.aliased = host.flags.c_contiguous and wire.itemsize == host.dtype.itemsize
        if self.aliased:
            self.buf = host.reshape(-1).view(wire)
        elif reads:
            flat = np.ascontiguousarray(host).reshape(-1)
            self.buf = flat.astype(wire) if wire.kind == "f" else flat.view(wire)
        else:
            self.buf = np.empty(host.size, wire)

    def commit(self) -> None:
        """Write `buf` back into the tensor (in place) and bump its storage version."""
        if not self.aliased:
            flat = self.buf.astype(self.host.dtype) if self.buf.dtype.kind == "f" else self.buf.view(self.host.dtype)
            self.host[...] = flat.reshape(self.host.shape)
        if self.direct:
            self.tensor._storage.version += 1
        else:
            self.tensor.detach().copy_(from_numpy(self.host))


def deliver(tensor: Tensor, chunk: np.ndarray, reduction: bool = False) -> None:
    """Write `chunk` (wire values, as many as the tensor has elements) into `tensor`."""
    s = Staged(tensor, reduction, reads=False)
    s.buf[...] = chunk
    s.commit()


def concatenated(tensors, reduction: bool = False) -> np.ndarray:
    """The wire values of `tensors`, one after the other, in one contiguous buffer."""
    bufs = [Staged(t, reduction).buf for t in tensors]
    if not bufs:
        return np.empty(0, np.uint8)
    return np.concatenate(bufs)
