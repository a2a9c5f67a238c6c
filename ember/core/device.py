"""`ember.device`: a device type and optional index, and the default-device context.

`ember.device("cpu")`, `ember.device("opencl:1")`, `ember.device("cuda", 0)`. Used as a
context manager it sets the default device of factories in this thread, as
`with torch.device("meta"):` does.
"""
from __future__ import annotations

import threading

from ember.core.errors import ArgumentTypeError


class device:
    """A device: `type` ("cpu", "meta", "opencl", ...) and `index` (None or an int)."""

    __slots__ = ("type", "index", "_prev")
    _cache: dict = {}

    def __new__(cls, type_or_str, index: int | None = None):
        if isinstance(type_or_str, device):
            return type_or_str
        key = (type_or_str, index)
        cached = cls._cache.get(key)
        if cached is not None:
            return cached
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            raise ArgumentTypeError(f"device(): an integer device ({type_or_str}) needs a type; use e.g. 'cuda:{type_or_str}'")
        if not isinstance(type_or_str, str):
            raise ArgumentTypeError(f"device(): expected a string such as 'cpu' or 'cuda:0', got {type(type_or_str).__name__}")
        text = type_or_str.strip()
        dtype_, sep, idx = text.partition(":")
        if sep:
            if index is not None:
                raise ArgumentTypeError(f"device(): index given twice in device({type_or_str!r}, {index})")
            if not idx.isdigit():
                raise ArgumentTypeError(f"device(): invalid device string {type_or_str!r}; expected 'type' or 'type:index'")
            index = int(idx)
        if not dtype_.isidentifier():
            raise ArgumentTypeError(f"device(): invalid device type {dtype_!r}")
        if index is not None and index < 0:
            raise ArgumentTypeError(f"device(): the index must be non-negative, got {index}")
        obj = object.__new__(cls)
        obj.type = dtype_
        obj.index = index
        obj._prev = None
        if len(cls._cache) < 256:
            cls._cache[key] = obj
        return obj

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except ArgumentTypeError:
                return False                  # not a device string: unequal, never an error
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))

    # -- default-device context ------------------------------------------------------------
    def __enter__(self) -> "device":
        stack = _default.__dict__.setdefault("stack", [])
        stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _default.stack.pop()


class _Default(threading.local):
    stack: list


_default = _Default()
_global_default = [device("cpu")]


def get_default_device() -> device:
    stack = getattr(_default, "stack", None)
    return stack[-1] if stack else _global_default[0]


def set_default_device(dev) -> None:
    """Set the device of factories called without `device=` (all threads)."""
    _global_default[0] = device(dev if dev is not None else "cpu")


def as_device(dev) -> device:
    """Normalise a `device=` argument (None means the default device)."""
    if dev is None:
        return get_default_device()
    return dev if isinstance(dev, device) else device(dev)
