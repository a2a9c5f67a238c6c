"""The Sparse dispatch key's kernels: registry ops called with a sparse COO tensor among their arguments.

The Sparse key sits just above the backend keys and below Autograd (ember/dispatcher/keys.py), as
torch's SparseCPU/SparseCUDA sit where a dense tensor's backend would. So autograd records a sparse
call with the op's usual formulas (the gradient of a dense operand of `mm(sparse, dense)` is
`mm(t(sparse), grad)`, which comes back here), and the call then lands in this module:

* an op tagged `sparse_coo` in ops_registry.yaml runs its kernel below (`@sparse_kernel(name)`; codegen
  checks that the tag and the kernels agree). The kernels work on the
  payload's `indices` and `values` with dense ember ops, run with the functionality keys excluded
  so that those inner ops reach the backend directly, as an explicit kernel's do;
* a composite op without one runs its decomposition, whose ops come back here one by one
  (`matmul` and `addmm` reach `mm` that way);
* any other op raises NotImplementedError naming it and the sparse backend, as torch does.
"""
from __future__ import annotations

from typing import Callable

from ember._generated import functions as F
from ember.core import type_promotion as _tp
from ember.core.errors import ArgumentValueError, MissingKernelError, ShapeError
from ember.dispatcher import keys as K
from ember.dispatcher.runners import below_functionality
from ember.frontend.tensor import Tensor

from .coo import coalesce, is_sparse, payload, to_dense, wrap

SPARSE_KERNELS: dict[str, Callable] = {}


def sparse_kernel(*op_names: str):
    """Register the decorated function as the sparse COO kernel of the registry ops `op_names`."""
    def register(fn: Callable) -> Callable:
        for name in op_names:
            SPARSE_KERNELS[name] = fn
        return fn
    return register


# -- the Sparse key's kernel --------------------------------------------------------------------
def sparse_dispatch(op, below: int, args: tuple):
    return sparse_entry(op, below)(args)


def sparse_entry(op, below: int) -> Callable:
    """The entry of `op` for a key set with the Sparse key (`below`: the keys under it)."""
    if "sparse_coo" in op.tags:             # registry data; codegen checks each such op has a kernel here
        return below_functionality(SPARSE_KERNELS[op.name])
    if op.impl == "composite" and op.decomposition is not None:
        return lambda args: op.decomposition(*args)
    backend = K.key_name(below & K.BACKEND_MASK) if below & K.BACKEND_MASK else "CPU"

    def missing(args):
        raise MissingKernelError(
            f"Could not run '{op.name}' with arguments from the 'Sparse{backend}' backend: ember's sparse COO "
            f"kernels are {', '.join(sorted(SPARSE_KERNELS))} (and the composite ops built on them); call "
            ".to_dense() first")
    return missing


sparse_dispatch.make_entry = sparse_entry


# -- kernels ----------------------------------------------------------------------------------
def _dense_2d_check(name: str, sparse: Tensor, dense: Tensor) -> None:
    if sparse.ndim != 2 or payload(sparse).sparse_dim != 2:
        raise ArgumentValueError(f"{name}(): expected a 2-D sparse matrix with 2 sparse dims, got a "
                                 f"{sparse.ndim}-D sparse tensor with {payload(sparse).sparse_dim} sparse dims")
    if dense.ndim != 2:
        raise ArgumentValueError(f"{name}(): expected a 2-D dense matrix, got {dense.ndim}-D")
    if sparse.shape[1] != dense.shape[0]:
        raise ShapeError(f"{name}(): the sparse operand is {sparse.shape[0]}x{sparse.shape[1]} and the dense one "
                         f"{dense.shape[0]}x{dense.shape[1]}: expected the dense operand's dim 0 to be "
                         f"{sparse.shape[1]}, got {dense.shape[0]}")
    if sparse._dtype is not dense._dtype:
        raise ArgumentValueError(f"{name}(): expected both operands to have the same dtype, but got "
                                 f"{sparse._dtype} for the sparse one and {dense._dtype} for the dense one")
    if sparse.device != dense.device:
        raise ArgumentValueError(f"{name}(): expected both operands on one device, got {sparse.device} and "
                                 f"{dense.device}")


def sparse_dense_mm(sparse: Tensor, dense: Tensor, name: str = "mm") -> Tensor:
    """sparse (M, K) @ dense (K, N) -> dense (M, N): the op _sparse_coo_mm on the sparse tensor's parts
    (scipy.sparse on cpu; elsewhere its explicit kernel: each entry's value times its column's dense row,
    added into its row)."""
    _dense_2d_check(name, sparse, dense)
    data = payload(sparse)
    return F._sparse_coo_mm(data.indices, data.values, dense, sparse.shape[0])


def _transposed(t: Tensor, dim0: int, dim1: int) -> Tensor:
    data = payload(t)
    ndim = t.ndim
    d0, d1 = (d + ndim if d < 0 else d for d in (dim0, dim1))
    for d in (dim0, dim1):
        if not -ndim <= d < ndim:
            raise IndexError(f"transpose(): dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
    if d0 == d1:
        return wrap(data.indices, data.values, data.shape, data.coalesced)
    if d0 >= data.sparse_dim or d1 >= data.sparse_dim:
        raise ArgumentValueError(f"transpose(): sparse COO tensors transpose sparse dims only (it has "
                                 f"{data.sparse_dim}), got dims {dim0} and {dim1}")
    order = list(range(data.sparse_dim))
    order[d0], order[d1] = order[d1], order[d0]
    shape = list(data.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    return wrap(data.indices[order], data.values, shape, False)


@sparse_kernel("mm")
def mm(self, mat2):
    if is_sparse(self) and is_sparse(mat2):
        from .coo import to_sparse
        return to_sparse(sparse_dense_mm(self, to_dense(mat2)))
    if is_sparse(self):
        return sparse_dense_mm(self, mat2)
    # dense @ sparse = (sparse^T @ dense^T)^T
    return sparse_dense_mm(_transposed(mat2, 0, 1), self.t()).t()


@sparse_kernel("transpose.int")
def transpose(self, dim0, dim1):
    return _transposed(self, dim0, dim1)


@sparse_kernel("t")
def t(self):
    if self.ndim > 2:
        raise ArgumentValueError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return _transposed(self, 0, 1) if self.ndim == 2 else wrap(*_parts(self))


def _parts(t: Tensor):
    data = payload(t)
    return data.indices, data.values, data.shape, data.coalesced


def _check_same_shape(name: str, a: Tensor, b: Tensor) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise ShapeError(f"{name}(): expected sizes to match, got {list(a.shape)} and {list(b.shape)}")


def _add(name: str, self, other, alpha):
    if is_sparse(self) and not is_sparse(other):
        raise ArgumentValueError(f"{name}(sparse, dense) is not supported. Use {name}(dense, sparse) instead.")
    _check_same_shape(name, self, other)
    dtype = _tp.promote_types(self._dtype, other._dtype)
    sp = payload(other)
    scaled = sp.values if alpha == 1 else F.mul(sp.values, alpha)
    if not is_sparse(self):
        # dense + sparse: the sparse entries added into a copy of the dense operand
        out = F._to_copy(self, dtype=dtype)
        return F.index_put(out, list(sp.indices.unbind(0)), scaled.to(dtype), True) if sp.nnz else out
    mine = payload(self)
    if mine.sparse_dim != sp.sparse_dim:
        raise ArgumentValueError(f"{name}(): expected both sparse operands to have the same sparse dims, got "
                                 f"{mine.sparse_dim} and {sp.sparse_dim}")
    indices = F.cat([mine.indices, sp.indices], 1)
    values = F.cat([mine.values.to(dtype), scaled.to(dtype)], 0)
    return coalesce(wrap(indices, values, mine.shape, False))


@sparse_kernel("add.Tensor")
def add(self, other, alpha=1):
    return _add("add", self, other, alpha)


@sparse_kernel("sub.Tensor")
def sub(self, other, alpha=1):
    return _add("sub", self, other, -alpha)


def _scalar_operand(name: str, other):
    """`other` as what multiplies or divides every value: a number or a 0-d dense tensor."""
    if isinstance(other, Tensor):
        if is_sparse(other):
            raise MissingKernelError(f"{name}(): ember multiplies or divides a sparse tensor by a scalar or a dense "
                                     "tensor, not by another sparse tensor")
    return other


@sparse_kernel("mul.Tensor")
def mul(self, other):
    if is_sparse(other) and not is_sparse(self):
        self, other = other, self
    other = _scalar_operand("mul", other)
    indices, values, shape, coalesced = _parts(self)
    if isinstance(other, Tensor) and other.ndim > 0:
        # sparse * dense: the product is zero wherever the sparse tensor is: the dense values at its entries
        _check_same_shape("mul", self, other)
        if len(indices) != len(shape):
            raise MissingKernelError("mul(): a sparse tensor with dense dims times a dense tensor is not supported")
        picked = other[tuple(indices.unbind(0))] if len(indices) else other
        return wrap(indices, F.mul(values, picked), shape, coalesced)
    return wrap(indices, F.mul(values, other), shape, coalesced)


@sparse_kernel("div.Tensor_mode")
def div(self, other, rounding_mode=None):
    if not is_sparse(self):
        raise MissingKernelError("div(): dividing by a sparse tensor is not supported (its zeros would divide)")
    other = _scalar_operand("div", other)
    if isinstance(other, Tensor) and other.ndim > 0:
        raise MissingKernelError("div(): a sparse tensor divides by a scalar or a 0-d tensor only")
    indices, values, shape, coalesced = _parts(self)
    return wrap(indices, F.div(values, other, rounding_mode=rounding_mode), shape, coalesced)


@sparse_kernel("neg")
def neg(self):
    indices, values, shape, coalesced = _parts(self)
    return wrap(indices, F.neg(values), shape, coalesced)


@sparse_kernel("sum.dim_IntList")
def sum_(self, dim=None, keepdim=False, dtype=None):
    """The sum over `dim` (all dims: a dense 0-d tensor); over some of the sparse dims: a sparse tensor,
    as torch.sparse.sum gives."""
    data = payload(self)
    ndim = self.ndim
    dims = list(range(ndim)) if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0) else (
        [dim] if isinstance(dim, int) else list(dim))
    for d in dims:
        if not -ndim <= d < ndim:
            raise IndexError(f"sum(): dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                             f"but got {d})")
    dims = sorted({d % ndim for d in dims})
    if keepdim:
        raise MissingKernelError("sum(): keepdim=True is not supported for sparse COO tensors (as in torch)")
    values = data.values if dtype is None else data.values.to(dtype)
    dense_dims = [d - data.sparse_dim + 1 for d in dims if d >= data.sparse_dim]
    if dense_dims:
        values = F.sum(values, dense_dims)
    sparse_summed = [d for d in dims if d < data.sparse_dim]
    if len(sparse_summed) == data.sparse_dim:
        return F.sum(values, [0]) if values.ndim else values
    kept = [d for d in range(data.sparse_dim) if d not in sparse_summed]
    shape = [data.shape[d] for d in range(ndim) if d not in dims]
    indices = data.indices[kept] if sparse_summed else data.indices
    return coalesce(wrap(indices, values, shape, data.coalesced and not sparse_summed))


@sparse_kernel("_to_copy")
def to_copy(self, dtype=None, device=None, non_blocking=False):
    indices, values, shape, coalesced = _parts(self)
    values = F._to_copy(values, dtype=dtype, device=device, non_blocking=non_blocking)
    if values.device != indices.device:
        indices = F._to_copy(indices, device=values.device)
    return wrap(indices, values, shape, coalesced)


@sparse_kernel("clone")
def clone(self, memory_format=None):
    indices, values, shape, coalesced = _parts(self)
    return wrap(F.clone(indices), F.clone(values), shape, coalesced)


@sparse_kernel("alias")
def alias(self):
    return wrap(*_parts(self))

