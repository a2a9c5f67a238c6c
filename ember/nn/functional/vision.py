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
