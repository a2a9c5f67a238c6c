"""What an exported graph's placeholders and outputs are (torch.export's ExportGraphSignature).

The graph of an `ExportedProgram` takes, in order, the parameters, the buffers, the lifted
constants and then the user's inputs (flattened); `input_specs` says which placeholder is which
and what state it reads. Ops that write a buffer (batch norm's running statistics in training)
stay in the graph as the in-place ops they are, so running the program updates the module's
buffers as eager code does; `buffers_to_mutate` names, for each such op's node, the buffer it
writes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = ["InputKind", "OutputKind", "InputSpec", "OutputSpec", "ExportGraphSignature"]


class InputKind(Enum):
    USER_INPUT = "user_input"
    PARAMETER = "parameter"
    BUFFER = "buffer"
    CONSTANT_TENSOR = "constant_tensor"


class OutputKind(Enum):
    USER_OUTPUT = "user_output"


@dataclass(frozen=True)
class InputSpec:
    kind: InputKind
    name: str                  # the placeholder's name
    target: str | None = None  # the state_dict / constants key it reads (None for a user input)
    persistent: bool | None = None


@dataclass(frozen=True)
class OutputSpec:
    kind: OutputKind
    name: str


@dataclass
class ExportGraphSignature:
    input_specs: list[InputSpec]
    output_specs: list[OutputSpec]
    buffers_to_mutate: dict[str, str] = field(default_factory=dict)

    def _targets(self, kind: InputKind) -> list[str]:
        return [s.target for s in self.input_specs if s.kind is kind]

    @property
    def parameters(self) -> list[str]:
        return self._targets(InputKind.PARAMETER)

    @property
    def buffers(self) -> list[str]:
        return self._targets(InputKind.BUFFER)

    @property
    def lifted_tensor_constants(self) -> list[str]:
        return self._targets(InputKind.CONSTANT_TENSOR)

    @property
    def user_inputs(self) -> list[str]:
        return [s.name for s in self.input_specs if s.kind is InputKind.USER_INPUT]

    @property
    def user_outputs(self) -> list[str]:
        return [s.name for s in self.output_specs if s.kind is OutputKind.USER_OUTPUT]

    def __str__(self) -> str:
        lines = ["# inputs"]
        lines += [f"{s.name}: {s.kind.name}" + (f" target='{s.target}'" if s.target else "")
                  + ("" if s.persistent is not False else " persistent=False") for s in self.input_specs]
        lines += ["", "# outputs"] + [f"{s.name}: {s.kind.name}" for s in self.output_specs]
        if self.buffers_to_mutate:
            lines += ["", "# buffers written in place"] + [f"{n}: {b}" for n, b in self.buffers_to_mutate.items()]
        return "\n".join(lines)
