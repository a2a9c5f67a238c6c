"""Shape rules of histc and mode, with torch's checks and messages (gcd and lcm use the pointwise rule)."""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.errors import ArgumentValueError, DimensionError, MissingKernelError

from . import shape_rule
from .common import NUMBER_TYPES, as_int, check_tensor, type_name, wrap_dim
from .reductions import reduced_shape


@shape_rule("histc")
def histc(op, self, bins=100, min=0, max=0):
    """`bins` counts in self's (floating) dtype."""
    check_tensor(op, self, "input")
    if not self._dtype.is_floating_point:
        raise MissingKernelError(f'"histogram_cpu" not implemented for \'{type_name(self._dtype)}\'')
    bins = as_int(op, bins, "bins")
    if bins <= 0:
        raise ArgumentValueError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    for name, v in (("min", min), ("max", max)):
        if v.__class__ is bool or not isinstance(v, NUMBER_TYPES):
            raise ArgumentValueError(f"{op.name}(): argument '{name}' must be Number, not {type(v).__name__}")
    if max < min:
        raise ArgumentValueError("torch.histc: max must be larger than min")
    return ((bins,), self._dtype)


@shape_rule("mode")
def mode(op, self, dim=-1, keepdim=False):
    """(values, int64 indices) reduced along dim; an empty dim has no mode."""
    check_tensor(op, self, "input")
    shape = tuple(self._data.shape)
    d = wrap_dim(op, dim, len(shape))
    if shape and shape[d] == 0:
        raise DimensionError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    out = reduced_shape(shape, (d,), keepdim) if shape else ()
    return ((out, self._dtype), (out, _dt.int64))
