"""ember.onnx: export a model to ONNX (torch.onnx.export's API), to run it in another runtime.

`export(model, args, f)` captures the model with `ember.export.export`, lowers each registry op
of the graph through the op table (table.py: one entry per op, data to review like the
registry) with the emitter (emitter.py), checks the result with `onnx.checker` (full check,
shape inference included) and saves it. The `onnx` package (the `ember[onnx]` extra) builds,
checks and saves the model; `onnxruntime` runs it.

Choices: opset 18 by default (17 or later accepted); the model is exported as it is (call
`model.eval()` first: dropout and batch norm in training mode have no ONNX inference form and
raise); `dynamic_axes` makes those input axes dynamic dimensions of the export (`ember.export.Dim`,
no bounds) and names them in the model (dim_param); an axis dynamic_axes leaves out is static.
"""
from __future__ import annotations

import os

from .emitter import UnsupportedOperatorError
from .table import MIN_OPSET, TABLE

__all__ = ["export", "UnsupportedOperatorError", "DEFAULT_OPSET"]

DEFAULT_OPSET = 18


def export(model, args, f=None, *, kwargs: dict | None = None, input_names: list[str] | None = None,
           output_names: list[str] | None = None, dynamic_axes: dict | None = None,
           opset_version: int | None = None, verbose: bool = False):
    """Export `model(*args, **kwargs)` as an ONNX model; write it to `f` (a path or a binary file) when
    given. Returns the `onnx.ModelProto`."""
    import onnx

    from ember.export import ExportedProgram
    from ember.export import export as capture

    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if opset < MIN_OPSET:
        raise ValueError(f"ember.onnx.export: opset_version must be {MIN_OPSET} or later, got {opset}")
    if opset > onnx.defs.onnx_opset_version():
        raise ValueError(f"ember.onnx.export: the installed onnx {onnx.__version__} supports opsets up to "
                         f"{onnx.defs.onnx_opset_version()}, got {opset}")
    if not isinstance(args, tuple):
        args = (args,)
    dynamic_shapes, axis_names = _dynamic(dynamic_axes, args, input_names, output_names)
    if isinstance(model, ExportedProgram):
        if dynamic_axes:
            raise ValueError("ember.onnx.export: an ExportedProgram has its dynamic dimensions already; export "
                             "it with dynamic_shapes instead of passing dynamic_axes")
        ep = model
    else:
        ep = capture(model, args, kwargs, dynamic_shapes=dynamic_shapes)
    from .emitter import Emitter

    emitter = Emitter(ep, opset, input_names, output_names, axis_names).emit(TABLE)
    proto = emitter.model(type(model).__name__)
    onnx.checker.check_model(proto, full_check=True)
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if f is not None:
        if isinstance(f, (str, os.PathLike)):
            onnx.save_model(proto, os.fspath(f))
        else:
            f.write(proto.SerializeToString())
    return proto


def _dynamic(dynamic_axes, args: tuple, input_names, output_names) -> tuple:
    """torch.onnx's `dynamic_axes` ({input or output name: {axis: name} or [axis, ...]}) as ember.export's
    dynamic_shapes (a tuple per positional input) and {(value name, axis): dim_param}. Inputs are named
    by `input_names` in the order of `args`; an axis given no name is called `<input>_dynamic_axes_<k>`."""
    if not dynamic_axes:
        return None, {}
    from ember.export import Dim
    from ember.frontend.tensor import Tensor

    if not isinstance(dynamic_axes, dict):
        raise TypeError(f"ember.onnx.export: dynamic_axes must be a dict, got {type(dynamic_axes).__name__}")
    inputs = list(input_names or [])
    known = set(inputs) | set(output_names or [])
    unknown = [k for k in dynamic_axes if k not in known]
    if unknown:
        raise ValueError(f"ember.onnx.export: dynamic_axes names {unknown}, which are not among input_names or "
                         "output_names")
    axis_names = {}
    for value, axes in dynamic_axes.items():
        if isinstance(axes, (list, tuple)):
            axes = {a: f"{value}_dynamic_axes_{k + 1}" for k, a in enumerate(axes)}
        if not isinstance(axes, dict) or not all(isinstance(a, int) and isinstance(n, str) for a, n in axes.items()):
            raise ValueError(f"ember.onnx.export: dynamic_axes[{value!r}] must be {{axis: name}} or a list of axes")
        for axis, name in axes.items():
            axis_names[(value, axis)] = name
    shapes = []
    for i, a in enumerate(args):
        name = inputs[i] if i < len(inputs) else None
        per_axis = {axis: n for (v, axis), n in axis_names.items() if v == name and name is not None}
        if per_axis and not isinstance(a, Tensor):
            raise ValueError(f"ember.onnx.export: dynamic_axes names input {name!r}, which is not a tensor")
        shapes.append({axis: Dim(_identifier(n)) for axis, n in per_axis.items()} or None)
    return tuple(shapes), axis_names


def _identifier(name: str) -> str:
    key = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return key if key.isidentifier() else f"d_{key}"
