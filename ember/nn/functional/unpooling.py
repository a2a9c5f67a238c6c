"""torch.nn.functional's max unpooling: max_unpool1d/2d/3d, the partial inverses of max pooling.

The output size defaults to what max pooling with the same kernel, stride and padding would have read
((in - 1) * stride - 2 * padding + kernel per dimension); a given `output_size` must lie within one stride
of it, as torch asks. The values land where their indices (max pooling's) point; the rest is zeros.
"""
from __future__ import annotations

from ember._generated import functions as _F


def unpool_output_size(input, kernel_size, stride, padding, output_size) -> list[int]:
    """The spatial output size: the default from the pooling geometry, or `output_size` checked against it."""
    nd = len(kernel_size)
    default = [(input.size(-nd + d) - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(nd)]
    if output_size is None:
        size = default
    else:
        size = output_size[2:] if len(output_size) == nd + 2 else output_size
        if len(size) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                             f"length of '{len(size)}'")
        for d in range(nd):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < size[d] < high:
                raise ValueError(f'invalid output_size "{size}" (dim {d} must be between {low} and {high})')
        size = list(size)
    for d, n in enumerate(size):
        if n < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={n}")
    return size


def _geometry(nd: int, kernel_size, stride, padding):
    """(kernel, stride, padding) as tuples of `nd`; the stride defaults to the kernel."""
    def expand(v):
        return tuple(v) if isinstance(v, (list, tuple)) else (v,) * nd
    kernel = expand(kernel_size)
    return kernel, (kernel if stride is None else expand(stride)), expand(padding)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Max pooling's partial inverse over a (N, C, L) or (C, L) input: max_unpool2d on a trailing unit axis."""
    kernel, stride, padding = _geometry(1, kernel_size, stride, padding)
    size = unpool_output_size(input, kernel, stride, padding, output_size)
    out = _F.max_unpool2d(_F.unsqueeze(input, -1), _F.unsqueeze(indices, -1), size + [1])
    return _F.squeeze(out, [-1])


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Max pooling's partial inverse over a (N, C, H, W) or (C, H, W) input."""
    kernel, stride, padding = _geometry(2, kernel_size, stride, padding)
    return _F.max_unpool2d(input, indices, unpool_output_size(input, kernel, stride, padding, output_size))


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Max pooling's partial inverse over a (N, C, D, H, W) or (C, D, H, W) input."""
    kernel, stride, padding = _geometry(3, kernel_size, stride, padding)
    size = unpool_output_size(input, kernel, stride, padding, output_size)
    return _F.max_unpool3d(input, indices, size, stride, padding)
