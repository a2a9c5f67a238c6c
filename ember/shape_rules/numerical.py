"""Shape rules of torch's numerical functions: trapezoid and trapz (at sample points x, or dx apart),
cumulative_trapezoid, vander, cov and corrcoef, with torch's checks and messages."""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.errors import ArgumentValueError, DimensionError, DTypeError, ShapeError
from ember.core.type_promotion import promote_types, result_type

from . import shape_rule
from .common import as_int, broadcast_shapes, check_tensor, shape_of, type_name, wrap_dim
from .reductions import reduced_shape


def integral_dtype(*operands) -> _dt.dtype:
    """The dtype an integral of `operands` is computed in: their promotion, the default float for integers."""
    dtype = result_type(*operands)
    return dtype if dtype.is_floating_point else _dt.get_default_dtype()


def _samples_dim(op, y, dim, empty_message: str) -> int:
    """The wrapped dim the samples run along (a 0-d y has none: torch's IndexError)."""
    check_tensor(op, y, "y")
    if not shape_of(y):
        raise DimensionError(empty_message.format(dim=dim))
    return wrap_dim(op, dim, len(shape_of(y)))


def _with_points(op, y, x, dim, cumulative: bool) -> tuple[tuple[int, ...], _dt.dtype]:
    """The result shape of an integral of y at the points x: the summed (or running) dim of the broadcast of
    y's neighbour sums with x's differences."""
    message = "slice() cannot be applied to a 0-dim tensor." if cumulative else \
        "Dimension specified as {dim} but tensor has no dimensions"
    d = _samples_dim(op, y, dim, message)
    check_tensor(op, x, "x")
    shape, points = shape_of(y), shape_of(x)
    pieces = list(shape)
    pieces[d] = max(shape[d] - 1, 0)
    if len(points) == 1:
        if points[0] != shape[d]:
            raise ShapeError("trapezoid: There must be one `x` value for each sample point")
        full = tuple(pieces)
    else:                               # x's differences along dim (a 0-d x has none: torch's diff gives (0,))
        gaps = list(points) or [1]
        dx = wrap_dim(op, dim, len(gaps))
        gaps[dx] = max(gaps[dx] - 1, 0)
        full = broadcast_shapes(op, [tuple(pieces), tuple(gaps)])
    if cumulative:
        return full, integral_dtype(y, x)
    # no samples at all: torch's integral is a 0 in y's own dtype
    return reduced_shape(full, (wrap_dim(op, dim, len(full)),), False), integral_dtype(y, x) if shape[d] else y._dtype


@shape_rule("trapezoid_x")
def trapezoid_x(op, y, x, dim=-1):
    return _with_points(op, y, x, dim, False)


@shape_rule("cumulative_trapezoid_x")
def cumulative_trapezoid_x(op, y, x, dim=-1):
    return _with_points(op, y, x, dim, True)


@shape_rule("trapezoid_dx")
def trapezoid_dx(op, y, dx=1, dim=-1):
    d = _samples_dim(op, y, dim, "Dimension specified as {dim} but tensor has no dimensions")
    return reduced_shape(shape_of(y), (d,), False), integral_dtype(y) if shape_of(y)[d] else y._dtype


@shape_rule("cumulative_trapezoid_dx")
def cumulative_trapezoid_dx(op, y, dx=1, dim=-1):
    d = _samples_dim(op, y, dim, "slice() cannot be applied to a 0-dim tensor.")
    shape = list(shape_of(y))
    shape[d] = max(shape[d] - 1, 0)
    return tuple(shape), integral_dtype(y)


@shape_rule("vander")
def vander(op, x, N=None, increasing=False):
    """(len(x), N) powers; integers and bools as int64."""
    check_tensor(op, x, "x")
    if len(shape_of(x)) != 1:
        raise ShapeError(f"{op.name}(): x must be a one-dimensional tensor.")
    n = shape_of(x)[0]
    if N is not None:
        N = as_int(op, N, "N")
        if N < 0:
            raise ArgumentValueError(f"{op.name}(): N must be non-negative.")
    return (n, n if N is None else N), promote_types(x._dtype, _dt.int64)


def _weights(op, t, name: str, kind: str, observations: int) -> None:
    if t is None:
        return
    check_tensor(op, t, name)
    shape = shape_of(t)
    if len(shape) > 1:
        raise ShapeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with {len(shape)} "
                         "dimensions")
    integral = t._dtype.category in (0, 1)
    if (kind == "integral") != integral or t._dtype is _dt.bool:
        raise DTypeError(f"cov(): expected {name} to have {kind} dtype but got {name} with {type_name(t._dtype)} dtype")
    numel = shape[0] if shape else 1
    if numel != observations:
        raise ShapeError(f"cov(): expected {name} to have the same numel as there are observations in the input but "
                         f"got {numel} != {observations}")


def _variables(op, self, name: str) -> tuple[int, ...]:
    """The result shape of a covariance of self's rows: (variables, variables), or () for a 0-d or 1-d input."""
    check_tensor(op, self, "input")
    shape = shape_of(self)
    if len(shape) > 2:
        raise ShapeError(f"{name}(): expected input to have two or fewer dimensions but got an input with "
                         f"{len(shape)} dimensions")
    if self._dtype is _dt.bool:
        raise DTypeError(f"{name}(): bool dtype is not supported for input")
    return (shape[0], shape[0]) if len(shape) == 2 else ()


@shape_rule("cov")
def cov(op, self, correction=1, fweights=None, aweights=None):
    out = _variables(op, self, "cov")
    as_int(op, correction, "correction")
    shape = shape_of(self)
    observations = shape[-1] if shape else 1
    _weights(op, fweights, "fweights", "integral", observations)
    _weights(op, aweights, "aweights", "floating point", observations)
    return out, integral_dtype(self) if aweights is None else integral_dtype(self, aweights)


@shape_rule("corrcoef")
def corrcoef(op, self):
    return _variables(op, self, "corrcoef"), integral_dtype(self)
