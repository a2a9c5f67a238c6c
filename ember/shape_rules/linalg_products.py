"""Shape rules of torch.linalg's norms and products, and of torch.cross, torch.tensordot and torch.dist:
linalg_vector_norm, linalg_matrix_norm (numeric and str orders), linalg_vecdot, linalg_cross, cross,
linalg_multi_dot, tensordot and dist. The checks are torch's, in its order, with its messages (ops named as
torch names them: linalg_vector_norm -> linalg.vector_norm)."""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.errors import ArgumentTypeError, ArgumentValueError, DimensionError, DTypeError, MissingKernelError, ShapeError
from ember.core.type_promotion import promote_types, result_type

from . import shape_rule
from .common import (as_int, broadcast_shapes, check_dtype_arg, check_tensor, NUMBER_TYPES, shape_of, type_name,
                     wrap_dim, wrap_dims)
from .reductions import reduced_shape

INF = float("inf")
#: the element types' C++ names, as torch's multi_dot names them
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}
#: the numeric orders linalg.matrix_norm computes (2 and -2, which need singular values, are refused apart)
MATRIX_ORDERS = (1, -1, INF, -INF)


def _public(op) -> str:
    """The op as torch's messages spell it: linalg_vector_norm -> linalg.vector_norm."""
    return op.name.split(".")[0].replace("linalg_", "linalg.", 1)


def _check_floating(op, self) -> None:
    if not self._dtype.is_floating_point:
        raise DTypeError(f"{_public(op)}: Expected a floating point or complex tensor as input. "
                         f"Got {type_name(self._dtype)}")


def norm_dtype(op, self, dtype) -> _dt.dtype:
    """The dtype a norm computes and returns in: `dtype` when given (floating, and a widening of the
    input's), else the input's."""
    check_dtype_arg(op, dtype)
    if dtype is None:
        return self._dtype
    if not dtype.is_floating_point:
        raise DTypeError(f"{_public(op)}: dtype should be floating point or complex, but got {type_name(dtype)}")
    if promote_types(self._dtype, dtype) is not dtype:
        raise DTypeError(f"{_public(op)}: the dtype of the input ({type_name(self._dtype)}) should be convertible "
                         f"without narrowing to the specified dtype ({type_name(dtype)})")
    return dtype


def _check_order(op, ord) -> None:
    if ord.__class__ is bool or not isinstance(ord, NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument 'ord' (position 2) must be Number, not {type(ord).__name__}")


@shape_rule("linalg_vector_norm")
def linalg_vector_norm(op, self, ord=2, dim=None, keepdim=False, dtype=None):
    check_tensor(op, self, "input")
    _check_order(op, ord)
    _check_floating(op, self)
    out = norm_dtype(op, self, dtype)
    shape = shape_of(self)
    dims = tuple(range(len(shape))) if dim is None or (isinstance(dim, (list, tuple)) and not dim) else \
        wrap_dims(op, dim, len(shape))
    if ord < 0 or ord == INF:                  # max, min and negative orders have no identity to start from
        name = "inf" if ord == INF else "-inf" if ord == -INF else f"{ord:g}"
        if dim is None and 0 in shape:
            raise ArgumentValueError(f"{_public(op)} cannot compute the {name} norm on an empty tensor because "
                                     "the operation does not have an identity")
        for d in dims:
            if shape and shape[d] == 0:
                raise ArgumentValueError(f"{_public(op)} cannot compute the {name} norm on the dimension {d}"
                                         "because this dimension is empty and the operation does not have an "
                                         "identity")
    if dim is None and not keepdim:
        return ((), out)
    return (reduced_shape(shape, dims, keepdim), out)


def matrix_dims(op, self, dim) -> tuple[int, int]:
    """The two distinct (wrapped) dims of a matrix norm."""
    dims = tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)
    if len(dims) != 2:
        raise ArgumentValueError(f"{_public(op)}: dim must be a 2-tuple. Got {' '.join(str(d) for d in dims)}")
    wrapped = tuple(wrap_dim(op, d, len(shape_of(self))) for d in dims)
    if wrapped[0] == wrapped[1]:
        raise ArgumentValueError(f"{_public(op)}: dims must be different. Got ({dims[0]}, {dims[1]})")
    return wrapped


@shape_rule("linalg_matrix_norm")
def linalg_matrix_norm(op, self, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    check_tensor(op, self, "input")
    shape = shape_of(self)
    if len(shape) < 2:
        raise ShapeError(f"{_public(op)}: The input tensor A must have at least 2 dimensions.")
    _check_floating(op, self)
    out = norm_dtype(op, self, dtype)
    dims = matrix_dims(op, self, dim)
    if isinstance(ord, str):
        if ord == "nuc":
            raise MissingKernelError(f"{_public(op)}: ord='nuc' (the sum of the singular values) is not supported: "
                                     "ember computes no singular values")
        if ord != "fro":
            raise ArgumentValueError(f"{_public(op)}: Order {ord} not supported.")
    else:
        _check_order(op, ord)
        if ord in (2, -2):
            raise MissingKernelError(f"{_public(op)}: ord={ord:g} (a singular value) is not supported: ember "
                                     "computes no singular values")
        if ord not in MATRIX_ORDERS:
            raise ArgumentValueError(f"{_public(op)}: Order {ord:g} not supported.")
        if ord in (-1, -INF):                   # a minimum over an empty dim: torch's amin error
            kept = dims[1] if ord == -1 else dims[0]
            if shape[kept] == 0:
                raise DimensionError(f"amin(): Expected reduction dim {kept} to have non-zero size.")
    return (reduced_shape(shape, dims, keepdim), out)


@shape_rule("linalg_vecdot")
def linalg_vecdot(op, x, y, dim=-1):
    check_tensor(op, x, "x")
    check_tensor(op, y, "y")
    if x._dtype is not y._dtype:
        raise DTypeError(f"{_public(op)}: Expected x and y to have the same dtype, but found x of type "
                         f"{type_name(x._dtype)} and y of type {type_name(y._dtype)} instead")
    _check_floating(op, x)
    shape = broadcast_shapes(op, [shape_of(x), shape_of(y)])
    d = wrap_dim(op, dim, len(shape))
    return (reduced_shape(shape, (d,), False) if shape else (), x._dtype)


def _cross(op, self, other, dim):
    """The checks of both cross products, in torch's order (torch.cross picks its dim, then is linalg.cross):
    operands of one rank, the dim of length 3 in both (that dim does not broadcast), the other dims
    broadcasting, one dtype, not bool."""
    check_tensor(op, self, "input")
    check_tensor(op, other, "other")
    a, b = shape_of(self), shape_of(other)
    if len(a) != len(b):
        raise ShapeError("linalg.cross: inputs must have the same number of dimensions.")
    if dim is None:
        if 3 not in a:
            raise ShapeError(f"{op.name}(): no dimension of size 3 in input")
        d = a.index(3)
    else:
        d = wrap_dim(op, dim, len(a))
    if a[d] != 3 or b[d] != 3:
        raise ShapeError(f"linalg.cross: inputs dimension {d} must have length 3. Got {a[d]} and {b[d]}")
    shape = broadcast_shapes(op, [a, b])
    if self._dtype is not other._dtype:
        raise DTypeError(f"{op.name}(): expected scalar type {type_name(self._dtype)} but found "
                         f"{type_name(other._dtype)}")
    if self._dtype is _dt.bool:
        raise MissingKernelError(f'{op.name}(): "cross" not implemented for \'Bool\'')
    return (shape, self._dtype)


@shape_rule("linalg_cross")
def linalg_cross(op, self, other, dim=-1):
    return _cross(op, self, other, dim)


@shape_rule("cross")
def cross(op, self, other, dim=None):
    return _cross(op, self, other, dim)


@shape_rule("linalg_multi_dot")
def linalg_multi_dot(op, tensors):
    tensors = list(tensors)
    if len(tensors) < 2:
        raise ArgumentValueError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        check_tensor(op, t, f"tensors[{i}]")
    shapes = [shape_of(t) for t in tensors]
    for which, k in (("first", 0), ("last", -1)):
        if len(shapes[k]) not in (1, 2):
            raise ShapeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got {len(shapes[k])}D")
    for i in range(1, len(tensors) - 1):
        if len(shapes[i]) != 2:
            raise ShapeError(f"multi_dot(): tensor {i} must be 2D but got {len(shapes[i])}D")
    for i, t in enumerate(tensors[1:], 1):
        if t._dtype is not tensors[0]._dtype:
            raise DTypeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                             f"{_C_NAMES[tensors[0]._dtype.name]} and tensor {i} {_C_NAMES[t._dtype.name]}")
    matrices = [s if len(s) == 2 else ((1,) + s if k == 0 else s + (1,)) for k, s in enumerate(shapes)]
    for i in range(len(matrices) - 1):
        if matrices[i][1] != matrices[i + 1][0]:
            raise ShapeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(shapes[i])} and "
                             f"{list(shapes[i + 1])} cannot be multiplied")
    out = (() if len(shapes[0]) == 1 else (shapes[0][0],)) + (() if len(shapes[-1]) == 1 else (shapes[-1][1],))
    return (out, tensors[0]._dtype)


@shape_rule("tensordot")
def tensordot(op, self, other, dims_self, dims_other):
    check_tensor(op, self, "input")
    check_tensor(op, other, "other")
    if self._dtype is not other._dtype:
        raise DTypeError(f"{op.name}(): both inputs should have same dtype")
    if len(dims_self) != len(dims_other):
        raise ArgumentValueError(f"{op.name}(): both dimension lists should have same length")
    a, b = shape_of(self), shape_of(other)
    da = wrap_dims(op, [as_int(op, d, "dims_self") for d in dims_self], len(a), "dims_self")
    db = wrap_dims(op, [as_int(op, d, "dims_other") for d in dims_other], len(b), "dims_other")
    for i, j, gi, gj in zip(da, db, dims_self, dims_other):
        if a[i] != b[j]:
            raise ShapeError(f"{op.name}(): contracted dimensions need to match, but first has size {a[i]} in dim "
                             f"{gi} and second has size {b[j]} in dim {gj}")
    out = tuple(s for k, s in enumerate(a) if k not in da) + tuple(s for k, s in enumerate(b) if k not in db)
    return (out, self._dtype)


@shape_rule("dist")
def dist(op, self, other, p=2):
    check_tensor(op, self, "input")
    check_tensor(op, other, "other")
    if p.__class__ is bool or not isinstance(p, NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument 'p' (position 3) must be Number, not {type(p).__name__}")
    broadcast_shapes(op, [shape_of(self), shape_of(other)])
    dtype = result_type(self, other)
    if not dtype.is_floating_point:
        raise DTypeError(f"{op.name}(): input dtype should be either floating point or complex. Got "
                         f"{type_name(dtype)} instead.")
    return ((), dtype)
