"""The Tensor methods of sparse COO tensors (torch's names), attached to `ember.Tensor` at import.

    to_sparse, to_sparse_coo, to_dense, coalesce, is_coalesced, indices, values, _indices, _values,
    _nnz, sparse_dim, dense_dim

`indices()`/`values()` require a coalesced tensor, as torch's do; `_indices()`/`_values()` return
the entries as stored. A dense tensor answers sparse_dim() 0 and dense_dim() its ndim, as in torch.
"""
from __future__ import annotations

from ember.core.errors import ArgumentValueError
from ember.frontend.tensor import Tensor

from . import coo


def _sparse_only(t: Tensor, name: str) -> coo.SparseCOO:
    if not coo.is_sparse(t):
        raise ArgumentValueError(f"{name}(): expected a sparse COO tensor, got a strided one; "
                                 "make one with to_sparse() or ember.sparse_coo_tensor")
    return coo.payload(t)


def to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    out = coo.to_dense(self) if coo.is_sparse(self) else self
    return out if dtype is None else out.to(dtype)


def to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None,
              dense_dim=None) -> Tensor:
    from ember.core.layout import sparse_coo

    if layout is not None and layout is not sparse_coo:
        raise ArgumentValueError(f"to_sparse(): ember supports layout=ember.sparse_coo only, got {layout}")
    return coo.to_sparse(self, sparse_dim)


def coalesce(self: Tensor) -> Tensor:
    _sparse_only(self, "coalesce")
    return coo.coalesce(self)


def is_coalesced(self: Tensor) -> bool:
    return _sparse_only(self, "is_coalesced").coalesced


def indices(self: Tensor) -> Tensor:
    data = _sparse_only(self, "indices")
    if not data.coalesced:
        raise ArgumentValueError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    return data.indices


def values(self: Tensor) -> Tensor:
    data = _sparse_only(self, "values")
    if not data.coalesced:
        raise ArgumentValueError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    return data.values


def _indices(self: Tensor) -> Tensor:
    return _sparse_only(self, "_indices").indices


def _values(self: Tensor) -> Tensor:
    return _sparse_only(self, "_values").values


def _nnz(self: Tensor) -> int:
    return _sparse_only(self, "_nnz").nnz


def sparse_dim(self: Tensor) -> int:
    return coo.payload(self).sparse_dim if coo.is_sparse(self) else 0


def dense_dim(self: Tensor) -> int:
    return self.ndim - sparse_dim(self)


def sparse_repr(self: Tensor) -> str:
    """repr() of a sparse tensor, as torch prints one: its parts without device or dtype (the sparse
    tensor's own suffixes name them)."""
    from ember.frontend.printing import sparse_tensor_repr, tensor_repr

    data = coo.payload(self)
    meta = self._device.type == "meta"

    def part(t: Tensor) -> str:
        return tensor_repr(None if meta else t.detach()._host(), dtype_name=t._dtype.name, shape=tuple(t.shape),
                           device="cpu", default_float_dtype=t._dtype.name)

    ag = self._ag
    grad_fn = ag.grad_fn.name() if ag is not None and ag.grad_fn is not None else None
    from ember.core import dtype as _dt
    return sparse_tensor_repr(part(data.indices), part(data.values), dtype_name=self._dtype.name, shape=data.shape,
                              nnz=data.nnz, device=str(self._device), requires_grad=ag is not None and grad_fn is None,
                              grad_fn=grad_fn, default_float_dtype=_dt.get_default_dtype().name)


for _name in ("to_dense", "to_sparse", "coalesce", "is_coalesced", "indices", "values", "_indices", "_values",
              "_nnz", "sparse_dim", "dense_dim"):
    setattr(Tensor, _name, globals()[_name])
Tensor.to_sparse_coo = to_sparse
