"""torch.nn.functional's grid_sample and affine_grid, over the registry ops grid_sampler and
affine_grid_generator (spatial transformers: build a sampling grid from affine maps, then
sample an image at it)."""
from __future__ import annotations

import warnings

from ember._generated import functions as F

_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDING = {"zeros": 0, "border": 1, "reflection": 2}
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. "
                  "See the documentation of grid_sample for details.")


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros", align_corners: bool | None = None):
    """`input` (N, C, H, W) sampled at the normalised locations `grid` (N, H', W', 2), as
    torch.nn.functional.grid_sample: mode 'bilinear', 'nearest' or 'bicubic' (5-D inputs
    are not supported), padding_mode 'zeros', 'border' or 'reflection'."""
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in _PADDING:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    return F.grid_sampler(input, grid, _MODES[mode], _PADDING[padding_mode], align_corners)


def affine_grid(theta, size, align_corners: bool | None = None):
    """The sampling grid of the affine maps `theta` (N, 2, 3) or (N, 3, 4) for an output of
    `size` (N, C, H, W) or (N, C, D, H, W), as torch.nn.functional.affine_grid."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                             f"Got {theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                             f"Got {theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return F.affine_grid_generator(theta, size, align_corners)
