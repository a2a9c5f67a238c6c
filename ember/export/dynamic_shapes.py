"""Reading `export(..., dynamic_shapes=...)`: which input dimensions are dynamic.

The forms torch.export accepts: a dict keyed by the names of forward's parameters, or a tuple or
list with one entry per positional input (then keyword input, in the order given). One input's
entry is None (all static), a dict {dimension index: Dim or None}, or a tuple/list with a Dim or
None per dimension; an input that is a tuple, list or dict of tensors takes an entry of the same
structure. The result is one {dimension: Dim} (or None) per flattened input, in the order
`tree_flatten((args, kwargs))` lists them.
"""
from __future__ import annotations

import inspect

from ember.frontend.tensor import Tensor

__all__ = ["Dim", "leaf_dims"]


class Dim:
    """A dynamic dimension: any size in [min, max] (torch.export's `Dim`). Inputs sharing one `Dim`
    (or two Dims of one name) must have equal sizes there."""

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Dim(): the name must be a Python identifier, got {name!r}")
        lo = 0 if min is None else min
        if not isinstance(lo, int) or lo < 0 or (max is not None and (not isinstance(max, int) or max < lo)):
            raise ValueError(f"Dim({name!r}): expected integers 0 <= min <= max, got min={min!r}, max={max!r}")
        self.__name__ = name
        self.min = lo
        self.max = max

    def __repr__(self) -> str:
        bounds = f", min={self.min}" + (f", max={self.max}" if self.max is not None else "")
        return f"Dim({self.__name__!r}{bounds})"

    def describe(self) -> str:
        return f"[{self.min}, {'inf' if self.max is None else self.max}]"


def leaf_dims(forward, args: tuple, kwargs: dict, dynamic_shapes) -> list[dict[int, Dim] | None]:
    """{dimension: Dim} or None per flattened input (see the module docstring)."""
    inputs = _named_inputs(forward, args, kwargs)
    if isinstance(dynamic_shapes, dict):
        unknown = set(dynamic_shapes) - {name for name, _ in inputs}
        if unknown:
            raise ValueError(f"export(): dynamic_shapes names {sorted(unknown)}, which are not inputs of forward "
                             f"(its inputs: {[name for name, _ in inputs]})")
        specs = [dynamic_shapes.get(name) for name, _ in inputs]
    elif isinstance(dynamic_shapes, (tuple, list)):
        if len(dynamic_shapes) != len(inputs):
            raise ValueError(f"export(): dynamic_shapes has {len(dynamic_shapes)} entries for {len(inputs)} inputs")
        specs = list(dynamic_shapes)
    else:
        raise TypeError(f"export(): dynamic_shapes must be a dict, tuple or list, not {type(dynamic_shapes).__name__}")
    out: list = []
    for (name, value), spec in zip(inputs, specs):
        _pair(value, spec, name, out)
    return out


def _named_inputs(forward, args: tuple, kwargs: dict) -> list[tuple[str, object]]:
    try:
        params = [p.name for p in inspect.signature(forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    named = [(params[i] if i < len(params) else f"args_{i}", a) for i, a in enumerate(args)]
    return named + list(kwargs.items())


def _pair(value, spec, path: str, out: list) -> None:
    """Append the per-leaf dims of `value` (an input or part of one) given its `spec`."""
    if isinstance(value, Tensor):
        out.append(_tensor_dims(value, spec, path))
        return
    if value is None:
        return
    if isinstance(value, (tuple, list, dict)):
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        if spec is None:
            subs = [None] * len(items)
        elif isinstance(value, dict) and isinstance(spec, dict) and set(spec) <= set(value):
            subs = [spec.get(k) for k, _ in items]
        elif not isinstance(value, dict) and isinstance(spec, (tuple, list)) and len(spec) == len(value):
            subs = list(spec)
        else:
            raise ValueError(f"export(): dynamic_shapes entry for {path} must have the structure of the input "
                             f"({type(value).__name__} of {len(items)}), got {spec!r}")
        for (k, v), s in zip(items, subs):
            _pair(v, s, f"{path}[{k!r}]", out)
        return
    if spec is not None:
        raise ValueError(f"export(): dynamic_shapes gives {spec!r} for {path}, which is not a tensor")
    out.append(None)


def _tensor_dims(t: Tensor, spec, path: str) -> dict[int, Dim] | None:
    if spec is None:
        return None
    if isinstance(spec, dict):
        entries = spec.items()
    elif isinstance(spec, (tuple, list)):
        if len(spec) != t.dim():
            raise ValueError(f"export(): dynamic_shapes for {path} has {len(spec)} entries for a "
                             f"{t.dim()}-dimensional tensor")
        entries = enumerate(spec)
    else:
        raise ValueError(f"export(): dynamic_shapes for tensor {path} must be a dict {{dim: Dim}} or a "
                         f"tuple of Dim/None per dimension, got {spec!r}")
    dims = {}
    for d, dim in entries:
        if dim is None:
            continue
        if not isinstance(d, int) or not -t.dim() <= d < t.dim():
            raise ValueError(f"export(): dynamic_shapes for {path} names dimension {d!r} of a "
                             f"{t.dim()}-dimensional tensor")
        if not isinstance(dim, Dim):
            raise ValueError(f"export(): dynamic_shapes for {path}[{d}] must be an ember.export.Dim or None, "
                             f"got {dim!r}")
        dims[d % t.dim()] = dim
    return dims or None
