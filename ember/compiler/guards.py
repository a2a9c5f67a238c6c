"""Guards: what a capture depended on, as a hashable key computed on every call.

A key holds, per flattened input, a tensor's shape (a dynamic dimension's size left out), strides
(not for a tensor with a dynamic dimension) and storage offset (which decide what a decomposed reshape
is, and where native replay's views start), dtype, device and requires_grad, or a plain value's type and
value; then grad mode, the autocast state
and the training flags of the compiled module's submodules. Two calls with equal keys run the same
compiled graph. `difference(old, new)` says in words which part changed (the recompile reason).
"""
from __future__ import annotations

from ember.dispatcher.state import STATE
from ember.frontend.autograd.grad_mode import is_grad_enabled
from ember.frontend.tensor import Tensor

__all__ = ["guard_key", "difference"]


def guard_key(leaves: list, dynamic: dict, modules: list) -> tuple:
    """The key of one call. `dynamic`: {leaf index: dimensions left out of the key}; sizes 0 and 1 are
    always in it (a dynamic dimension is traced at 2 or more). Computed on every call: it reads the
    tensors' fields directly (the native shape tuple, not a Size)."""
    inputs = []
    for i, v in enumerate(leaves):
        if isinstance(v, Tensor):
            shape, layout = v._data.shape, v._data.strides
            if dynamic:
                dims = dynamic.get(i)
                if dims:
                    shape = tuple(None if d in dims and s > 1 else s for d, s in enumerate(shape))
                    layout = None
            inputs.append((shape, layout, v.storage_offset() if v._base is not None else 0, v._dtype, v._device,
                           v.requires_grad))
        else:
            inputs.append(_value_key(v))
    autocast = STATE.autocast
    return (tuple(inputs), is_grad_enabled(), tuple(sorted(autocast.items())) if autocast else (),
            tuple([m.training for m in modules]))


def _value_key(v) -> tuple:
    try:
        hash(v)
    except TypeError:
        return ("object", type(v), id(v))
    return ("value", type(v), v)


def difference(old: tuple, new: tuple) -> str:
    """Which guard of `old` the key `new` fails, in words (inputs named by their flattened position)."""
    if len(old[0]) != len(new[0]):
        return "the inputs have another structure"
    for i, (a, b) in enumerate(zip(old[0], new[0])):
        path = f"input {i}"
        if a != b:
            if len(a) == len(b) == 6:       # tensors: (shape, strides, storage offset, dtype, device, requires_grad)
                for what, x, y in zip(("size", "strides (bytes)", "storage offset", "dtype", "device", "requires_grad"),
                                      a, b):
                    if x != y:
                        return f"{path}: {what} {x} -> {y}"
            return f"{path}: {a[-1]!r} -> {b[-1]!r}"
    names = ("grad mode", "autocast state", "training flags of the modules")
    for name, a, b in zip(names, old[1:], new[1:]):
        if a != b:
            return f"{name}: {a} -> {b}"
    return "a guard of the program"
