"""The shape rule of quantile and nanquantile (q a tensor or a number), with torch's checks and messages."""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.errors import ArgumentValueError, DTypeError, ShapeError
from ember.core.layout import contiguous_strides

from . import shape_rule
from .common import check_tensor, wrap_dim
from .reductions import reduced_shape

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


@shape_rule("quantile")
def quantile(op, self, q, dim=None, keepdim=False, interpolation="linear"):
    """The reduced shape of self (every dim when `dim` is None), after a 1-d q's own dim."""
    check_tensor(op, self, "input")
    name = op.name.split(".")[0]
    shape = tuple(self._data.shape)
    if 0 in shape:
        raise ArgumentValueError(f"{name}() input tensor must be non-empty")
    tensor_q = not isinstance(q, (int, float))
    if tensor_q:
        check_tensor(op, q, "q")
        if len(q._data.shape) > 1:
            raise ShapeError(f"{name}() q must be a scalar or 1D tensor")
    if self._dtype not in (_dt.float32, _dt.float64):
        raise DTypeError(f"{name}() input tensor must be either float or double dtype")
    if tensor_q and q._dtype is not self._dtype:
        raise DTypeError(f"{name}() q tensor must be same dtype as the input tensor")
    if interpolation not in INTERPOLATIONS:
        raise ArgumentValueError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                                 f"but got {interpolation}")
    if not tensor_q and not 0 <= q <= 1:
        raise ArgumentValueError(f"{name}() q must be in the range [0, 1] but got {q}")
    if dim is None:
        out = (1,) * len(shape) if keepdim else ()
    else:
        out = reduced_shape(shape, (wrap_dim(op, dim, len(shape)),), keepdim)
    if not tensor_q or not q._data.shape:
        return (out, self._dtype)
    # a 1-d q: torch computes the quantiles last, then moves their dim first (so it is the innermost in memory)
    k = q._data.shape[0]
    return ((k,) + out, self._dtype, (1,) + contiguous_strides(out + (k,))[:-1])
