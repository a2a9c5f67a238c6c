"""Shape arithmetic every layer needs (the strides of a contiguous, row-major layout, element counts)
and the layout objects, `ember.strided` and `ember.sparse_coo`."""
from __future__ import annotations


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a row-major array of `shape` (a size-0 dim counts as 1, as in torch)."""
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def numel(shape) -> int:
    """The number of elements of `shape`."""
    n = 1
    for s in shape:
        n *= s
    return n


class layout:
    """A tensor layout (torch.layout): `ember.strided` (dense, the default) or `ember.sparse_coo`."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
