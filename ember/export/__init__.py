"""ember.export: capture a module as a graph of registry ops (torch.export's API).

`export(module, args)` runs the module once on fake tensors under a dispatch mode that records
every op (trace.py, capture.py, fake.py) and returns an `ExportedProgram`
(exported_program.py): the graph in ember.fx's IR, its signature (graph_signature.py), the
state, and `.module()` to run it. `save` / `load` (serialize.py) write and read it as one file that
runs without the model's source.
"""
from .dynamic_shapes import Dim
from .exported_program import ExportedProgram, GuardError
from .graph_signature import ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec
from .serialize import SerializationError, load, save
from .trace import DataDependentError, export

__all__ = ["export", "save", "load", "Dim", "ExportedProgram", "ExportGraphSignature", "GuardError", "InputKind",
           "InputSpec", "OutputKind", "OutputSpec", "SerializationError", "DataDependentError"]
