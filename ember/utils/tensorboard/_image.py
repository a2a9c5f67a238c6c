"""Image summaries: an array in any layout brought to height x width x channels and encoded as PNG.

`dataformats` names the array's dimensions (`CHW`, `HWC`, `HW`, `WH`, ... for one image; `NCHW`,
`NHWC`, ... for a batch, tiled eight to a row as torch's writer tiles them). One channel or a 2-d
image is repeated to RGB; three channels are RGB and four RGBA. A uint8 array is taken as
0..255, any other dtype as 0..1 and scaled by 255; values outside are clipped, then truncated to
uint8, as torch does. PNG encoding is Pillow's: tensorboard itself requires Pillow, so it is
there whenever tensorboard is.
"""
from __future__ import annotations

import io

import numpy as np
from tensorboard.compat.proto.summary_pb2 import Summary

from ._convert import make_np

__all__ = ["image", "to_hwc"]

_GRID_COLUMNS = 8


def image(tag: str, value, dataformats: str = "NCHW", method: str = "add_images") -> Summary:
    """A PNG image summary of `value`, laid out as `dataformats` says."""
    array = to_hwc(make_np(value, "img_tensor"), dataformats, method)
    if array.size == 0:
        raise ValueError(f"SummaryWriter.{method}: img_tensor holds no pixels (shape {tuple(array.shape)})")
    if array.shape[2] not in (3, 4):
        raise ValueError(f"SummaryWriter.{method}: an image needs 1, 3 or 4 channels, got {array.shape[2]}")
    scale = 1 if array.dtype == np.uint8 else 255
    pixels = (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=_png(pixels))])


def to_hwc(array: np.ndarray, dataformats: str, method: str) -> np.ndarray:
    """`array` (laid out as `dataformats`) as one height x width x channels image."""
    layout = dataformats.upper()
    if len(set(layout)) != len(layout):
        raise AssertionError(f"SummaryWriter.{method}: dataformats must name each dimension once, got {dataformats!r}")
    if array.ndim != len(layout):
        raise AssertionError(f"SummaryWriter.{method}: img_tensor has {array.ndim} dimensions (shape "
                             f"{tuple(array.shape)}) but dataformats {dataformats!r} names {len(layout)}")
    wanted = {4: "NCHW", 3: "HWC", 2: "HW"}.get(len(layout))
    if wanted is None or set(layout) != set(wanted):
        raise AssertionError(f"SummaryWriter.{method}: dataformats must be a permutation of NCHW, HWC or HW, "
                             f"got {dataformats!r}")
    array = array.transpose([layout.index(c) for c in wanted])
    if len(layout) == 4:
        return _grid(array, method).transpose(1, 2, 0)
    if len(layout) == 2:
        return np.stack([array] * 3, axis=2)
    return np.concatenate([array] * 3, axis=2) if array.shape[2] == 1 else array


def _grid(batch: np.ndarray, method: str) -> np.ndarray:
    """A batch (N x C x H x W, C 1 or 3) tiled row by row, eight images a row, on a black canvas."""
    if batch.shape[1] == 1:
        batch = np.concatenate([batch] * 3, axis=1)
    if batch.shape[1] != 3:
        raise AssertionError(f"SummaryWriter.{method}: a batch of images needs 1 or 3 channels, got "
                             f"{batch.shape[1]}")
    count, _, height, width = batch.shape
    columns = min(count, _GRID_COLUMNS)
    rows = -(-count // columns) if count else 0      # (an empty batch is refused by `image`)
    canvas = np.zeros((3, height * rows, width * columns), dtype=batch.dtype)
    for i in range(count):
        r, c = divmod(i, columns)
        canvas[:, r * height:(r + 1) * height, c * width:(c + 1) * width] = batch[i]
    return canvas


def _png(pixels: np.ndarray) -> Summary.Image:
    from PIL import Image

    height, width, channels = pixels.shape
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=buffer.getvalue())
