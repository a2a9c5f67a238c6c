"""torch.nn.functional's adaptive max pooling (1-d, 2-d, 3-d) and fractional max pooling (2-d, 3-d).

Each returns the pooled values, or (values, indices) with `return_indices=True`; an index is the flat
position of the maximum in its input plane (volume), as torch's. Fractional pooling draws its window
offsets from `_random_samples` (N, C, 2 or 3 uniforms in [0, 1)) when given, else from ember's generator;
with the same samples it picks torch's windows.
"""
from __future__ import annotations

import ember
from ember._generated import functions as _F

__all__ = ["adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "fractional_max_pool2d",
           "fractional_max_pool3d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]


def _with_default(output_size, input):
    """An int as given; a sequence with each None replaced by the input's size at that position (from the end)."""
    if isinstance(output_size, int):
        return output_size
    sizes = list(output_size)
    if input.dim() <= len(sizes):
        raise ValueError(f"Input dimension should be at least {len(sizes) + 1}")
    tail = list(input.shape[-len(sizes):])
    return [d if s is None else s for s, d in zip(sizes, tail)]


def adaptive_max_pool1d_with_indices(input, output_size, return_indices: bool = False):
    """1-d adaptive max pooling of a (N, C, L) or (C, L) input: (values, indices)."""
    return tuple(_F.adaptive_max_pool1d(input, output_size))


def adaptive_max_pool2d_with_indices(input, output_size, return_indices: bool = False):
    """2-d adaptive max pooling (None in `output_size` keeps that size): (values, indices)."""
    return tuple(_F.adaptive_max_pool2d(input, _with_default(output_size, input)))


def adaptive_max_pool3d_with_indices(input, output_size, return_indices: bool = False):
    """3-d adaptive max pooling (None in `output_size` keeps that size): (values, indices)."""
    return tuple(_F.adaptive_max_pool3d(input, _with_default(output_size, input)))


def adaptive_max_pool1d(input, output_size, return_indices: bool = False):
    """1-d max pooling to `output_size` windows; with return_indices=True, (values, indices)."""
    out = adaptive_max_pool1d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool2d(input, output_size, return_indices: bool = False):
    """2-d max pooling to `output_size`; with return_indices=True, (values, indices)."""
    out = adaptive_max_pool2d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool3d(input, output_size, return_indices: bool = False):
    """3-d max pooling to `output_size`; with return_indices=True, (values, indices)."""
    out = adaptive_max_pool3d_with_indices(input, output_size)
    return out if return_indices else out[0]


def _fractional_args(nd: int, input, output_size, output_ratio, random_samples):
    """(output_size, random_samples): the size from `output_ratio` when not given, samples drawn if absent."""
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = (output_ratio,) * nd if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        if len(ratio) > nd:
            what = "a single Int or tuple of Ints" if nd == 2 else "a single Int or tuple of three Ints"
            raise ValueError(f"{name} requires output_ratio to either be {what}.")
        ratio = ratio * nd if len(ratio) == 1 else ratio
        output_size = [int(input.size(-nd + d) * ratio[d]) for d in range(nd)]
    if random_samples is None:
        batch = 1 if input.dim() == nd + 1 else input.size(0)
        random_samples = ember.rand(batch, input.size(-nd - 1), nd, dtype=input.dtype, device=input.device)
    return output_size, random_samples


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    """2-d fractional max pooling: (values, indices)."""
    size, samples = _fractional_args(2, input, output_size, output_ratio, _random_samples)
    return tuple(_F.fractional_max_pool2d(input, kernel_size, size, samples))


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    """3-d fractional max pooling: (values, indices)."""
    size, samples = _fractional_args(3, input, output_size, output_ratio, _random_samples)
    return tuple(_F.fractional_max_pool3d(input, kernel_size, size, samples))


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                          _random_samples=None):
    """2-d fractional max pooling to `output_size` (or `output_ratio` of the input's size); with
    return_indices=True, (values, indices)."""
    out = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio, False, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                          _random_samples=None):
    """3-d fractional max pooling to `output_size` (or `output_ratio` of the input's size); with
    return_indices=True, (values, indices)."""
    out = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio, False, _random_samples)
    return out if return_indices else out[0]
