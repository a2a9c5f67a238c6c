"""A slice's gradient kept as the window it fills, until the engine needs the whole tensor.

The gradient of a slice (`x[:, a:b]`, each of a qkv `split`'s three parts) is zeros of the sliced
tensor's shape with the slice's gradient in its window. Made eagerly, a split into n parts costs n
zero fills of the whole tensor and n - 1 additions of it, where PyTorch's split backward writes one
concatenation. `SlicePieces` holds the windows and their gradients instead: the engine merges the
pieces of gradients that meet at one input, and makes the tensor once, when the node it goes to is
ready (`whole`): the concatenation when the windows tile the tensor along one dimension, else zeros
with each window's gradient added (windows may overlap).

Only the engine sees a `SlicePieces`: `slice_backward` returns one when the gradient is not itself
differentiated (a double backward gets `slice_scatter`, a tensor), and every node, hook and leaf
gets the tensor.
"""
from __future__ import annotations

from ember._generated import functions as F


class SlicePieces:
    """Gradients of windows (`dim`, `start`, `end`, `step`) of a tensor of `shape`; zeros elsewhere."""

    __slots__ = ("shape", "dtype", "device", "pieces")

    def __init__(self, shape: tuple, dim: int, start, end, step: int, grad) -> None:
        self.shape = shape
        self.dtype = grad.dtype
        self.device = grad.device
        self.pieces = [(dim, start, end, step, grad)]

    def merge(self, other: "SlicePieces") -> "SlicePieces":
        """The sum of two gradients of the same tensor (each is the engine's own: merged in place)."""
        self.pieces.extend(other.pieces)
        return self

    def add_to(self, total):
        """`total` + this gradient, as a new tensor (`total` may be held elsewhere)."""
        out = F.clone(total)
        for dim, start, end, step, grad in self.pieces:
            F.add_(F.slice(out, dim, start, end, step), grad)
        return out

    def tensor(self):
        """The whole gradient: one concatenation when the windows tile the tensor along one dimension."""
        tiles = self._tiles()
        if tiles is not None:
            return F.cat(tiles, self.pieces[0][0])
        out = F.zeros(self.shape, dtype=self.dtype, device=self.device)
        for k, (dim, start, end, step, grad) in enumerate(self.pieces):
            window = F.slice(out, dim, start, end, step)
            if k == 0:
                F.copy_(window, grad)
            else:
                F.add_(window, grad)
        return out

    def _tiles(self) -> list | None:
        """The pieces' gradients in order, if their windows (step 1, one dimension) cover the tensor once."""
        dim = self.pieces[0][0] % len(self.shape)
        size = self.shape[dim]
        spans = []
        for d, start, end, step, grad in self.pieces:
            if step != 1 or d % len(self.shape) != dim:
                return None
            spans.append((_bound(start, 0, size), _bound(end, size, size), grad))
        spans.sort(key=lambda s: s[0])
        at = 0
        for start, end, _ in spans:
            if start != at or end <= start:
                return None
            at = end
        return [g for _, _, g in spans] if at == size else None


def _bound(value, default: int, size: int) -> int:
    """A slice bound as a position in [0, size] (None: the default; negative: from the end)."""
    if value is None:
        return default
    if value < 0:
        value += size
    return min(max(value, 0), size)


def whole(grads: list) -> list:
    """`grads` with every SlicePieces made a tensor (the list itself when there is none)."""
    for i, g in enumerate(grads):
        if g.__class__ is SlicePieces:
            grads[i] = g.tensor()
    return grads


def add(total, g):
    """The sum of two gradients of one tensor, either of which may be SlicePieces."""
    if g.__class__ is SlicePieces:
        if total.__class__ is SlicePieces:
            return total.merge(g)
        return g.add_to(total)
    if total.__class__ is SlicePieces:
        return total.add_to(g)
    return total + g
