"""torch.nn.functional.interpolate (nearest, linear, bilinear) and the deprecated upsample aliases."""
from __future__ import annotations

from ember._generated import functions as _F


def _ntuple(value, n, what):
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"Input and {what} must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {n} and {what} of {list(value)}.")
        return list(value)
    return [value] * n


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resizes the spatial dims of a (N, C, L) or (N, C, H, W) input: mode nearest, linear or bilinear."""
    nd = input.dim() - 2
    if mode in ("nearest",) and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias:
        raise NotImplementedError("interpolate(): antialias=True is not supported by ember")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    output_size = scales = None
    if size is not None:
        output_size = [int(s) for s in _ntuple(size, nd, "output size")]
    else:
        scales = [float(s) for s in _ntuple(scale_factor, nd, "scale_factor")]
        if recompute_scale_factor:
            output_size = [int(input.shape[2 + i] * scales[i]) for i in range(nd)]
            scales = None
    if mode == "nearest" and nd == 1:
        return _F.upsample_nearest1d(input, output_size=output_size, scale_factors=scales)
    if mode == "nearest" and nd == 2:
        return _F.upsample_nearest2d(input, output_size=output_size, scale_factors=scales)
    ac = bool(align_corners)
    if mode == "bilinear" and nd == 2:
        return _F.upsample_bilinear2d(input, output_size=output_size, align_corners=ac, scale_factors=scales)
    if mode == "linear" and nd == 1:       # bilinear over a (N, C, 1, L) view: the height stays 1 -> 1
        x = _F.unsqueeze(input, 2)
        out = _F.upsample_bilinear2d(x, output_size=None if output_size is None else [1] + output_size,
                                     align_corners=ac, scale_factors=None if scales is None else [1.0] + scales)
        return _F.squeeze(out, [2])
    raise NotImplementedError(f"interpolate(): mode '{mode}' with {input.dim()}-D input is not supported "
                              "(ember has nearest for 3-D/4-D, linear for 3-D and bilinear for 4-D input)")


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate(..., mode="nearest")."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate(..., mode="bilinear", align_corners=True)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor: int):
    """(*, C r^2, H, W) -> (*, C, H r, W r): each group of r^2 channels becomes an r x r block of pixels."""
    r = upscale_factor
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)          # (*, C, H, r, W, r)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor: int):
    """(*, C, H r, W r) -> (*, C r^2, H, W): pixel_shuffle's inverse."""
    r = downscale_factor
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    for size, dim, name in ((h, -2, "height"), (w, -1, "width")):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({dim})={size} is not divisible by {r}")
    n = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)          # (*, C, r, r, H, W)
    return x.reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input, groups: int):
    """(N, g k, *) -> (N, k g, *): the channels of `groups` groups interleaved (ShuffleNet)."""
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)
