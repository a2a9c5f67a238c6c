"""`OpSchema`: one operator overload as the registry declares it, frozen and typed.

codegen writes every field from ops_registry.yaml (ember/_generated/op_table.py); nothing
changes them afterwards (assigning one raises `dataclasses.FrozenInstanceError`). What does
change at run time, the kernels registered per dispatch key and the resolved-entry cache,
is the business of `OpDef` (operator.py), which adds exactly those to the schema.

Argument references are positions in the schema's argument list (`arg_names`), so the
call path reads them without a name lookup.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class OpSchema:
    name: str                          # the overload's full name: "add.Tensor"
    schema: str                        # its signature in native_functions.yaml's grammar
    family: str                        # pointwise, reduction, view, ... (docs/registry.md)
    promotion: str                     # the type-promotion kind: default, int_to_float, always_bool, ...
    shape_rule_name: str               # the @shape_rule computing the output spec
    autocast: dict                     # {device type or "default": lower | fp32 | promote | none}
    impl: str                          # primitive | explicit | composite
    tags: tuple[str, ...]
    doc: str
    arg_names: tuple[str, ...]
    tensor_args: tuple[int, ...]       # positions of Tensor / Tensor? arguments
    tensor_list_args: tuple[int, ...]  # positions of Tensor[] arguments
    device_arg: int | None             # position of a `Device? device` argument
    mutated: tuple[int, ...]           # positions of Tensor(a!) arguments
    alias_return: int | None           # position of the argument a view aliases
    output_names: tuple[str, ...]
    differentiable: tuple[int, ...]    # positions of inputs with a formula
    generator_arg: int | None = None   # position of a `Generator? generator` argument
    keyword_only_from: int | None = None    # position of the first keyword-only argument (after `*`)
    written_lists: tuple[int, ...] = ()     # positions of Tensor(a!)[] arguments (fused optimizer updates)
    inplace_of: str | None = None      # a derived in-place twin: the out-of-place op's name
    inplace_needs_clone: bool = False
    # per-op behaviour (docs/registry.md, "Per-op behaviour"), read by the shape rules and autograd
    # instead of tests on the op's name
    alpha_arg: int | None = None       # position of a `Scalar alpha` argument (PyTorch's alpha_check)
    dtypes: str | None = None          # the dtypes the kernel supports (floating, ...); None: all
    dtype_error_kernel: str | None = None   # the kernel PyTorch's "not implemented for" error names
    checks: tuple[str, ...] = ()       # shared checks (@op_check in ember/shape_rules/checks.py)
    promotion_if_given: tuple | None = None  # (position, promotion kind used when that argument is not None)
    iterator_operands: str = "arguments"     # TensorIterator's operands: arguments, tensors_only, reversed
    copy_from: int | None = None       # an in-place copy: position of the argument self's new value is
    # positions of the Tensor arguments that also take a Python number (PyTorch's argument parser: an overload
    # taking a Scalar there, or its list of functions taking one anywhere); a number elsewhere is a TypeError
    numbers: tuple[int, ...] = ()
    # those numbers reach the op as the 0-d cpu tensor PyTorch wraps them in (ops outside the pointwise
    # families, whose kernels take tensors: copy_), not as themselves
    wraps_numbers: bool = False
    # the registry's `numbers: any` (PyTorch's list of functions taking a number in every Tensor argument): a call
    # with numbers only runs on the first made a 0-d cpu tensor, as `torch.add(1, 2)` does
    numbers_everywhere: bool = False
    # the value per element as a tree over the arguments (codegen/scalar_formulas.py), for fused kernels
    scalar: tuple | None = None
    # a reduction the fusion pass may fuse: (kind, dim position, keepdim position, dtype position or None)
    reduce: tuple | None = None
    # derived from the above when the schema is made
    n_outputs: int = field(init=False)
    cross_device: bool = field(init=False)       # dispatch on the first tensor, bring others over
    first_output_only: bool = field(init=False)  # autograd: only output 0 gets a grad_fn
    records_inplace: bool = field(init=False)    # autograd records a write into an argument as in-place

    def __post_init__(self) -> None:
        derived = object.__setattr__
        derived(self, "n_outputs", len(self.output_names))
        derived(self, "cross_device", "cross_device" in self.tags)
        # native_layer_norm's mean/rstd are not differentiable
        derived(self, "first_output_only", "only_first_output_differentiable" in self.tags)
        # a composite returning new tensors while it writes some arguments (_native_batch_norm_legit's
        # running statistics) is differentiated through its decomposition instead
        derived(self, "records_inplace",
                bool(self.mutated) and not (self.impl == "composite" and len(self.output_names) > 1))

    @property
    def is_view(self) -> bool:
        return self.alias_return is not None and not self.mutated

    def __repr__(self) -> str:
        return f"<ember op schema {self.name}>"


@functools.lru_cache(maxsize=None)
def parameters(schema: str) -> tuple[tuple[str, str, str | None], ...]:
    """(type, name, default text or None) of each argument a schema's text declares, in order, the `*`
    marking keyword-only arguments left out (`OpSchema.keyword_only_from` says where it was) and alias
    annotations dropped from the types: `Tensor(a!) self` is ("Tensor", "self", None). Parsed once per
    schema; read by the error paths (ember.dispatcher.arguments), never by a successful call."""
    inner = schema[schema.index("(") + 1:schema.rindex(") ->")]
    found = []
    for part in re.split(r",\s*(?![^\[]*\])", inner):         # commas outside int[2]=[1, 1]
        declared, _, default = part.partition("=")
        declared = declared.strip()
        if declared and declared != "*":
            kind, name = declared.rsplit(" ", 1)
            found.append((re.sub(r"\([a-z]!?\)", "", kind), name, default.strip() or None))
    return tuple(found)
