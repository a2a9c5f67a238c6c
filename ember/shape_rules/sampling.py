"""Shape rules of embedding_bag, grid sampling, affine grids and nonzero_numpy.

Index values (embedding_bag's indices and offsets) are data: the decompositions check them,
never these rules, so meta tensors behave as on PyTorch's meta device.
"""
from __future__ import annotations

from ember.core.errors import (ArgumentTypeError, ArgumentValueError, DimensionError, DTypeError, MissingKernelError,
                               ShapeError)
from ember.core import dtype as _dt

from . import shape_rule
from .common import check_tensor, shape_of, type_name
from .indexing import no_meta

_INDEX_DTYPES = (_dt.int64, _dt.int32)


# ------------------------------------------------------------------------------ embedding_bag
@shape_rule("_embedding_bag")
def _embedding_bag(op, weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                   per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    """(output, offset2bag, bag_size, max_indices) with the shapes of PyTorch's meta device."""
    check_tensor(op, weight, "weight")
    check_tensor(op, indices, "indices")
    check_tensor(op, offsets, "offsets")
    for t, arg in ((indices, "indices"), (offsets, "offsets")):
        if t._dtype not in _INDEX_DTYPES:
            raise DTypeError(f"{op.name}: Expected tensor for argument '{arg}' to have one of the following scalar "
                             f"types: Long, Int; but got {type_name(t._dtype)} instead (argument '{arg}')")
    if not weight._dtype.is_floating_point:
        raise DTypeError(f"{op.name}: Expected tensor for argument #1 'weight' to have one of the following scalar "
                         f"types: Half, BFloat16, Float, Double; but got {type_name(weight._dtype)} instead "
                         "(argument 'weight')")
    w, i, o = shape_of(weight), shape_of(indices), shape_of(offsets)
    if len(w) != 2:
        raise ShapeError(f"{op.name}: weight has to be a 2D Tensor, but got Tensor of dimension {len(w)} "
                         "(argument 'weight')")
    if len(i) != 1:
        raise ShapeError(f"{op.name}: input has to be a 1D Tensor, but got Tensor of dimension {len(i)} "
                         "(argument 'indices')")
    if len(o) != 1:
        raise ShapeError(f"{op.name}: offsets has to be a 1D Tensor, but got Tensor of dimension {len(o)} "
                         "(argument 'offsets')")
    if mode not in (0, 1, 2):
        raise ArgumentValueError(f"{op.name}: `mode` must be sum, mean, or max. (argument 'mode' is {mode})")
    if sparse:
        raise MissingKernelError(f"{op.name}: sparse=True (sparse gradients) is not supported (argument 'sparse')")
    if include_last_offset and o[0] < 1:
        raise ArgumentValueError(f"{op.name}: include_last_offset: number of offset should be at least 1 "
                                 "(argument 'offsets')")
    if per_sample_weights is not None:
        check_tensor(op, per_sample_weights, "per_sample_weights")
        if mode != 0:
            raise ArgumentValueError(f"{op.name}: embedding_bag: per_sample_weights only supported with mode='sum' "
                                     "(argument 'per_sample_weights')")
        if per_sample_weights._dtype is not weight._dtype:
            raise DTypeError(f"{op.name}: expected per_sample_weights to have the dtype of weight "
                             f"({type_name(weight._dtype)}), got {type_name(per_sample_weights._dtype)} "
                             "(argument 'per_sample_weights')")
        if shape_of(per_sample_weights) != i:
            raise ShapeError(f"{op.name}: per_sample_weights must have the shape of indices {list(i)}, got "
                             f"{list(shape_of(per_sample_weights))} (argument 'per_sample_weights')")
    bags = o[0] - 1 if include_last_offset else o[0]
    max_indices = (bags, w[1]) if mode == 2 else (0,)
    return [((bags, w[1]), weight._dtype), (i, _dt.int64), (o, _dt.int64), (max_indices, _dt.int64)]


@shape_rule("embedding_bag_padding_idx")
def embedding_bag_padding_idx(op, weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                              include_last_offset, padding_idx):
    out = _embedding_bag(op, weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                         include_last_offset, -1)
    n = shape_of(weight)[0]
    if padding_idx is not None and not -n <= padding_idx < n:
        raise ArgumentValueError(f"{op.name}: padding_idx must be within the number of embeddings, {-n} through "
                                 f"{n - 1}, but got {padding_idx} (argument 'padding_idx')")
    return out


# ------------------------------------------------------------------------------ grid sampling
@shape_rule("grid_sampler_2d")
def grid_sampler_2d(op, input, grid, interpolation_mode, padding_mode, align_corners):
    check_tensor(op, input, "input")
    check_tensor(op, grid, "grid")
    x, g = shape_of(input), shape_of(grid)
    if not x or not g:                  # torch reads both batch sizes first
        raise DimensionError(f"{op.name}(): Dimension specified as 0 but tensor has no dimensions")
    if len(x) != len(g) or x[0] != g[0]:
        raise ShapeError(f"{op.name}: grid_sampler(): expected grid and input to have same batch size, but got "
                         f"input with sizes {list(x)} and grid with sizes {list(g)} (argument 'grid')")
    if len(x) == 5:
        raise MissingKernelError(f"{op.name}: 5-D inputs (grid_sampler_3d) are not supported (argument 'input')")
    if len(x) != 4:
        raise ShapeError(f"{op.name}: grid_sampler(): expected 4D input and grid, but got input with sizes "
                         f"{list(x)} (argument 'input')")
    if g[-1] != 2:
        raise ShapeError(f"{op.name}: grid_sampler(): expected grid to have size 2 in last dimension, but got grid "
                         f"with sizes {list(g)} (argument 'grid')")
    for d in (2, 3):
        if x[d] == 0:
            raise ShapeError(f"{op.name}: grid_sampler(): expected input to have non-empty spatial dimensions, but "
                             f"input has sizes {list(x)} with dimension {d} being empty (argument 'input')")
    if not input._dtype.is_floating_point:
        raise MissingKernelError(f"{op.name}: \"grid_sampler_2d\" not implemented for '{type_name(input._dtype)}' "
                                 "(argument 'input')")
    if grid._dtype is not input._dtype:
        raise DTypeError(f"{op.name}: expected scalar type {type_name(input._dtype)} but found "
                         f"{type_name(grid._dtype)} (argument 'grid')")
    if interpolation_mode not in (0, 1, 2):
        raise ArgumentValueError(f"{op.name}: interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), "
                                 f"got {interpolation_mode} (argument 'interpolation_mode')")
    if padding_mode not in (0, 1, 2):
        raise ArgumentValueError(f"{op.name}: padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got "
                                 f"{padding_mode} (argument 'padding_mode')")
    return ((x[0], x[1], g[1], g[2]), input._dtype)


@shape_rule("affine_grid_generator")
def affine_grid_generator(op, theta, size, align_corners):
    check_tensor(op, theta, "theta")
    if not isinstance(size, (list, tuple)):
        raise ArgumentTypeError(f"{op.name}(): argument 'size' (position 2) must be tuple of ints, not {type(size).__name__}")
    size = tuple(int(s) for s in size)
    th = shape_of(theta)
    if len(size) not in (4, 5):
        raise ShapeError(f"{op.name}: AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs. "
                         f"(argument 'size' is {list(size)})")
    k = len(size) - 2
    if th != (size[0], k, k + 1):
        raise ShapeError(f"{op.name}: expected theta of shape {[size[0], k, k + 1]} for size {list(size)}, got "
                         f"{list(th)} (argument 'theta')")
    if not theta._dtype.is_floating_point:
        raise DTypeError(f"{op.name}: expected a floating point theta, got {type_name(theta._dtype)} "
                         "(argument 'theta')")
    return ((size[0],) + size[2:] + (k,), theta._dtype)


# ------------------------------------------------------------------------------ nonzero as a tuple
@shape_rule("nonzero_numpy")
def nonzero_numpy(op, self):
    check_tensor(op, self, "input")
    no_meta(op, self)
    return [((None,), _dt.int64)] * max(len(shape_of(self)), 1)
