"""ember.onnx: export a model to ONNX (torch.onnx.export's API), to run it in another runtime.

`export(model, args, f)` captures the model with `ember.export.export`, lowers each registry op
of the graph through the op table (table.py: one entry per op, data to review like the
registry) with the emitter (emitter.py), checks the result with `onnx.checker` (full check,
shape inference included) and saves it. The `onnx` package (the `ember[onnx]` extra) builds,
checks and saves the model; `onnxruntime` runs it.

Choices: opset 18 by default (17 or later accepted); the model is exported as it is (call
`model.eval()` first: dropout and batch norm in training mode have no ONNX inference form and
raise); `dynamic_axes` is not supported yet (the graph is specialised on the example inputs'
shapes, as `ember.export` traces it) and raises NotImplementedError.
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
    if dynamic_axes:
        raise NotImplementedError("ember.onnx.export: dynamic_axes is not supported yet; the model is exported "
                                  "for the shapes of `args`")
    if not isinstance(args, tuple):
        args = (args,)
    ep = model if isinstance(model, ExportedProgram) else capture(model, args, kwargs)
    from .emitter import Emitter

    emitter = Emitter(ep, opset, input_names, output_names).emit(TABLE)
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
