"""Small helpers shared by the layer modules (torch.nn.modules.utils)."""
from __future__ import annotations

import collections.abc
from itertools import repeat


def _ntuple(n: int, name: str = "parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")


def _reverse_repeat_tuple(t) -> tuple:
    """(a, b) -> (b, b, a, a): conv padding in F.pad's last-dimension-first order."""
    return tuple(x for x in reversed(t) for _ in range(2))


def factory_kwargs(device, dtype) -> dict:
    return {"device": device, "dtype": dtype}
