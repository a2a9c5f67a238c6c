"""col2im and im2col (torch.nn.functional.fold / unfold) on the window helpers of convolution.

im2col reads the sliding blocks of the zero-padded image as a strided view (N, C, Lh, Lw,
kh, kw) and lays them out as columns (N, C*kh*kw, Lh*Lw). col2im is its adjoint: the columns,
viewed as (N, C, Lh, Lw, kh, kw), are summed into the padded image by `fold` (one strided
add per kernel offset) and the padding is cut off. Both are composite: each is the other's
gradient, reached by differentiating through.
"""
from __future__ import annotations

from ember._generated import functions as F

from . import decomposition
from .convolution import _tup, fold, windows, zero_pad


def _params(kernel_size, dilation, padding, stride):
    return _tup(kernel_size, 2), _tup(dilation, 2), _tup(padding, 2), _tup(stride, 2)


def _blocks(size, kernel, dilation, padding, stride):
    return tuple((size[i] + 2 * padding[i] - (dilation[i] * (kernel[i] - 1) + 1)) // stride[i] + 1 for i in range(2))


@decomposition("im2col")
def im2col(self, kernel_size, dilation, padding, stride):
    kernel, dilation, padding, stride = _params(kernel_size, dilation, padding, stride)
    unbatched = self.dim() == 3
    x = F.unsqueeze(self, 0) if unbatched else self
    N, C = x.shape[0], x.shape[1]
    nb = _blocks(tuple(x.shape[2:]), kernel, dilation, padding, stride)
    win = windows(zero_pad(x, padding), kernel, stride, dilation, nb)          # (N, C, Lh, Lw, kh, kw)
    cols = F.reshape(F.permute(win, (0, 1, 4, 5, 2, 3)), (N, C * kernel[0] * kernel[1], nb[0] * nb[1]))
    return F.squeeze(cols, [0]) if unbatched else cols


@decomposition("col2im")
def col2im(self, output_size, kernel_size, dilation, padding, stride):
    kernel, dilation, padding, stride = _params(kernel_size, dilation, padding, stride)
    size = _tup(output_size, 2)
    unbatched = self.dim() == 2
    cols = F.unsqueeze(self, 0) if unbatched else self
    N = cols.shape[0]
    C = cols.shape[1] // (kernel[0] * kernel[1])
    nb = _blocks(size, kernel, dilation, padding, stride)
    blocks = F.permute(F.reshape(cols, (N, C) + kernel + nb), (0, 1, 4, 5, 2, 3))   # (N, C, Lh, Lw, kh, kw)
    padded = (N, C, size[0] + 2 * padding[0], size[1] + 2 * padding[1])
    buf = fold(blocks, padded, stride, dilation)
    for i in range(2):
        buf = F.slice(buf, 2 + i, padding[i], padding[i] + size[i], 1)
    buf = F.contiguous(buf)
    return F.squeeze(buf, [0]) if unbatched else buf
