"""grid_sampler_2d and affine_grid_generator from pointwise ops, gather and matmul.

Sampling follows PyTorch's GridSampler.h: the normalised grid (x, y) in [-1, 1] is mapped to
pixel coordinates (align_corners: -1 and 1 are the centres of the corner pixels; otherwise
their outer edges), then border padding clips and reflection padding reflects it into the
image. Bilinear reads the four neighbours with one gather each from the input flattened to
(N, C, H*W) and weights them by the distances; out-of-image neighbours read zero (zeros
padding). Nearest rounds half to even (std::nearbyint). Composite: the gradient w.r.t. the
input is gather's (a scatter_add), w.r.t. the grid the derivative of the weights (floor and
round have zero derivative, so nearest gives the grid none, as PyTorch's zero gradient).
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.core import dtype as _dt

from . import decomposition

BILINEAR, NEAREST, BICUBIC = 0, 1, 2
_A = -0.75                                    # the cubic convolution coefficient (as PyTorch)
ZEROS, BORDER, REFLECTION = 0, 1, 2


def _unnormalize(coord, size: int, align_corners: bool):
    if align_corners:
        return F.mul(F.add(coord, 1), (size - 1) / 2)
    return F.div(F.sub(F.mul(F.add(coord, 1), size), 1), 2)


def _reflect(coord, twice_low: int, twice_high: int):
    """coord reflected by the borders twice_low / 2 and twice_high / 2 until it lies between them."""
    if twice_low == twice_high:
        return F.mul(coord, 0)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = F.abs(F.sub(coord, low))
    extra = F.fmod(c, span)
    flips = F.floor(F.div(c, span))
    even = F.eq(F.remainder(flips, 2), 0)
    return F.where(even, F.add(extra, low), F.add(F.neg(extra), span + low))


def _source_index(coord, size: int, padding_mode: int, align_corners: bool):
    c = _unnormalize(coord, size, align_corners)
    if padding_mode == REFLECTION:
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
    if padding_mode in (BORDER, REFLECTION):
        c = F.clamp(c, 0, size - 1)
    return c


def _read(flat, xs, ys, h: int, w: int):
    """flat (N, C, H*W) at the integer-valued float coordinates xs, ys (N, P); zero outside."""
    xs, ys = xs.detach(), ys.detach()
    inside = F.logical_and(F.logical_and(F.ge(xs, 0), F.le(xs, w - 1)), F.logical_and(F.ge(ys, 0), F.le(ys, h - 1)))
    xi = F._to_copy(F.clamp(xs, 0, w - 1), dtype=_dt.int64)
    yi = F._to_copy(F.clamp(ys, 0, h - 1), dtype=_dt.int64)
    lin = F.add(F.mul(yi, w), xi)                                            # (N, P)
    n, c, p = flat.shape[0], flat.shape[1], lin.shape[1]
    vals = F.gather(flat, 2, F.expand(F.unsqueeze(lin, 1), (n, c, p)))      # (N, C, P)
    return F.where(F.unsqueeze(inside, 1), vals, F.zeros((), dtype=flat.dtype, device=flat.device))


def _cubic_weights(t):
    """The four cubic convolution weights of the taps at -1, 0, 1, 2 for a fraction t."""
    def near(x):                                # |x| <= 1
        return F.add(F.mul(F.sub(F.mul(x, _A + 2), _A + 3), F.mul(x, x)), 1)

    def far(x):                                 # 1 < |x| < 2
        return F.sub(F.mul(F.add(F.mul(F.sub(F.mul(x, _A), 5 * _A), x), 8 * _A), x), 4 * _A)
    one_minus = F.rsub(t, 1)
    return [far(F.add(t, 1)), near(t), near(one_minus), far(F.add(one_minus, 1))]


def _bicubic(flat, gx, gy, h: int, w: int, padding_mode: int, align_corners: bool):
    """16 taps around the unpadded source point, each tap's own coordinates padded (clipped or
    reflected) before reading, as PyTorch's get_value_bounded."""
    ix, iy = _unnormalize(gx, w, align_corners), _unnormalize(gy, h, align_corners)
    x0, y0 = F.floor(ix), F.floor(iy)
    wx, wy = _cubic_weights(F.sub(ix, x0)), _cubic_weights(F.sub(iy, y0))
    out = None
    for j in range(4):
        ys = _pad_tap(F.add(y0, j - 1), h, padding_mode, align_corners)
        for i in range(4):
            xs = _pad_tap(F.add(x0, i - 1), w, padding_mode, align_corners)
            term = F.mul(_read(flat, xs, ys, h, w), F.unsqueeze(F.mul(wx[i], wy[j]), 1))
            out = term if out is None else F.add(out, term)
    return out


def _pad_tap(coord, size: int, padding_mode: int, align_corners: bool):
    if padding_mode == REFLECTION:
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
    if padding_mode in (BORDER, REFLECTION):
        coord = F.clamp(coord, 0, size - 1)
    return coord


@decomposition("grid_sampler_2d")
def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    if n * c * ho * wo == 0:
        # nothing to sample: zeros that still depend on both inputs (their gradients are zero)
        link = F.add(F.mul(F.sum(input), 0), F.mul(F.sum(grid), 0))
        return F.add(F.zeros((n, c, ho, wo), dtype=input.dtype, device=input.device), link)
    flat = F.reshape(input, (n, c, h * w))
    g = F.reshape(grid, (n, ho * wo, 2))
    ix = _source_index(F.select(g, 2, 0), w, padding_mode, align_corners)   # (N, P)
    iy = _source_index(F.select(g, 2, 1), h, padding_mode, align_corners)
    if interpolation_mode == NEAREST:
        out = _read(flat, F.round(ix), F.round(iy), h, w)
    elif interpolation_mode == BICUBIC:
        out = _bicubic(flat, F.select(g, 2, 0), F.select(g, 2, 1), h, w, padding_mode, align_corners)
    else:
        x0, y0 = F.floor(ix), F.floor(iy)
        x1, y1 = F.add(x0, 1), F.add(y0, 1)
        wx1, wy1 = F.sub(ix, x0), F.sub(iy, y0)                               # distances to the west/north
        wx0, wy0 = F.sub(x1, ix), F.sub(y1, iy)
        out = None
        for xs, ys, wgt in ((x0, y0, F.mul(wx0, wy0)), (x1, y0, F.mul(wx1, wy0)),
                            (x0, y1, F.mul(wx0, wy1)), (x1, y1, F.mul(wx1, wy1))):
            term = F.mul(_read(flat, xs, ys, h, w), F.unsqueeze(wgt, 1))
            out = term if out is None else F.add(out, term)
    return F.reshape(out, (n, c, ho, wo))


@decomposition("grid_sampler")
def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    return F.grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)


def _base_coords(steps: int, align_corners: bool, like):
    """The normalised pixel centres along one axis: linspace(-1, 1, steps), scaled by
    (steps - 1) / steps without align_corners (PyTorch's linspace_from_neg_one)."""
    if steps <= 1:
        return F.zeros((steps,), dtype=like.dtype, device=like.device)
    r = F.arange(steps, dtype=like.dtype, device=like.device)
    v = F.sub(F.mul(r, 2.0 / (steps - 1)), 1.0)
    return v if align_corners else F.mul(v, (steps - 1) / steps)


@decomposition("affine_grid_generator")
def affine_grid_generator(theta, size, align_corners):
    n = int(size[0])
    spatial = [int(s) for s in size[2:]]                  # (H, W) or (D, H, W)
    k = len(spatial)
    # base grid (..., k + 1): x varies along the last spatial dim, then y, (z), then a column of ones
    axes = [_base_coords(s, align_corners, theta) for s in reversed(spatial)]     # x, y, (z)
    cols = []
    for j, a in enumerate(axes):
        view = [1] * k
        view[k - 1 - j] = spatial[k - 1 - j]
        cols.append(F.expand(F.reshape(a, tuple(view)), tuple(spatial)))
    cols.append(F.ones(tuple(spatial), dtype=theta.dtype, device=theta.device))
    base = F.reshape(F.stack(cols, -1), (1, -1, k + 1))                    # (1, prod(spatial), k + 1)
    grid = F.matmul(base, F.transpose(theta, 1, 2))                        # (N, prod(spatial), k)
    return F.reshape(grid, (n, *spatial, k))
