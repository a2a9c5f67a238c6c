"""Load and validate ops_registry.yaml.

The loader turns each entry into an `OpEntry` with every key resolved (family defaults
applied, the in-place twin derived) and checks it against the grammar, the shape rules,
decompositions and formula helpers that exist in the source tree. Any problem is a
RegistryError naming the entry, its line and what is wrong; the generator never writes
output from a registry that failed validation.
"""
from __future__ import annotations

import ast
import dataclasses
import keyword
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .schema import Argument, FunctionSchema, SchemaError, Type, parse_schema
from .scalar_formulas import FormulaError, parse_formula

ROOT = Path(__file__).resolve().parent.parent
REGISTRY_PATH = ROOT / "ops_registry.yaml"

FAMILIES = {"pointwise", "unary_float", "comparison", "reduction", "view", "shape", "linalg",
            "nn", "factory", "random", "copy"}
PROMOTIONS = {"default", "int_to_float", "always_bool", "no_opmath", "bool_to_long", "none"}
AUTOCAST = {"lower", "fp32", "promote", "none"}
IMPLS = {"primitive", "explicit", "composite"}
VARIANTS = {"function", "method"}
NOT_DIFFERENTIABLE = "not_differentiable"
# per-op behaviour the shape rules and autograd read (docs/registry.md): per entry, never family defaults
BEHAVIOUR_KEYS = {"dtypes", "dtype_error_kernel", "checks", "promotion_if_given", "iterator_operands", "copy_from",
                  "numbers", "one_int"}
ENTRY_KEYS = {"func", "family", "variants", "operators", "inplace", "inplace_operators", "inplace_variants",
              "promotion", "shape", "autograd", "recompute", "autocast", "impl", "tags", "doc", "scalar",
              "reduce", "aliases"} | BEHAVIOUR_KEYS
# `impl` too is stated by every entry: how an op is implemented is read where the op is declared
FAMILY_KEYS = ENTRY_KEYS - {"func", "operators", "inplace", "inplace_operators", "inplace_variants", "doc", "impl",
                            "scalar", "reduce", "recompute", "aliases"} \
    - BEHAVIOUR_KEYS
# `dtypes`: the dtypes the op's kernel supports (PyTorch's "not implemented for 'Bool'" errors otherwise)
KERNEL_DTYPES = {"all", "floating", "float_double", "integral", "integer", "signed_integral", "not_bool"}
# `iterator_operands`: which arguments PyTorch's TensorIterator takes as operands, in which order
ITERATOR_OPERANDS = {"arguments", "tensors_only", "reversed"}
# the keys a shape rule must declare it reads (`@shape_rule("name", reads=(...))`) for an entry to set them
RULE_KEYS = ("dtypes", "checks", "promotion_if_given", "iterator_operands")

# Python operators and, for the reflected ones, that the operands are swapped.
OPERATORS = {
    "__add__": False, "__radd__": True, "__sub__": False, "__rsub__": True,
    "__mul__": False, "__rmul__": True, "__truediv__": False, "__rtruediv__": True,
    "__floordiv__": False, "__rfloordiv__": True, "__pow__": False, "__rpow__": True,
    "__matmul__": False, "__rmatmul__": True, "__neg__": False, "__abs__": False,
    "__eq__": False, "__ne__": False, "__lt__": False, "__le__": False, "__gt__": False,
    "__ge__": False, "__mod__": False, "__rmod__": True,
    "__and__": False, "__rand__": True, "__or__": False, "__ror__": True, "__xor__": False, "__rxor__": True,
    "__invert__": False,
}
INPLACE_OPERATORS = {"__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__", "__imod__",
                     "__iand__", "__ior__", "__ixor__"}


class RegistryError(ValueError):
    """A malformed registry entry: the message names the entry, its line and the problem."""


@dataclass
class OpEntry:
    """One operator overload with every registry key resolved."""

    schema: FunctionSchema
    line: int
    family: str
    variants: tuple[str, ...]
    operators: tuple[str, ...]
    inplace_operators: tuple[str, ...]
    promotion: str
    shape: str
    autograd: dict[str, str] | None      # None: not differentiable
    autocast: dict[str, str]             # {device type or "default": policy}
    impl: str
    tags: tuple[str, ...]
    doc: str
    inplace_of: str | None = None        # for a derived twin: the out-of-place op's name
    inplace_twin: str | None = None      # for an op with inplace: true: the twin's name
    behaviour: "Behaviour" = None        # the per-op behaviour keys (shared by the twin)
    scalar: tuple | None = None          # the value per element, parsed (scalar_formulas.py); not the twin's
    reduce: tuple | None = None          # (kind, dim position, keepdim position, dtype position or None)
    recompute: str | None = None         # the expression recomputing output 0 from what the node saves
    aliases: tuple[str, ...] = ()        # other names of its function and method (torch's `absolute` for abs)

    def __post_init__(self):
        if self.behaviour is None:
            self.behaviour = Behaviour()

    @property
    def name(self) -> str:
        return self.schema.full_name

    @property
    def differentiable_inputs(self) -> tuple[str, ...]:
        """The inputs with a gradient formula (a grouped key "input, weight, bias" names several)."""
        if not self.autograd:
            return ()
        return tuple(name for key in self.autograd for name in formula_inputs(key))


@dataclass(frozen=True)
class Behaviour:
    """The per-op behaviour keys of an entry, resolved (defaults: no per-op behaviour)."""

    dtypes: str = "all"                              # the dtypes the kernel supports
    dtype_error_kernel: str | None = None            # the kernel PyTorch's "not implemented for" error names
    checks: tuple[str, ...] = ()                     # shared check functions (@op_check in ember/shape_rules)
    promotion_if_given: tuple[str, str] | None = None   # (argument, promotion kind when it is not None)
    iterator_operands: str = "arguments"             # TensorIterator's operands: arguments, tensors_only, reversed
    copy_from: str | None = None                     # the argument an in-place copy's new value comes from
    numbers: tuple[str, ...] | str = ()              # the Tensor arguments that take a Python number too, or "any"
    one_int: tuple[str, ...] = ()                    # the int[] arguments that take one int too (squeeze's dim)


def formula_inputs(key: str) -> tuple[str, ...]:
    """The inputs an `autograd` key names: one, or several for a formula computing their gradients
    together (torch's derivatives.yaml form "input, weight, bias: f(..., grad_input_mask)")."""
    return tuple(name.strip() for name in key.split(","))


@dataclass
class Registry:
    ops: list[OpEntry] = field(default_factory=list)

    def by_name(self) -> dict[str, OpEntry]:
        return {op.name: op for op in self.ops}


class _LineLoader(yaml.SafeLoader):
    """A SafeLoader that records the line of every mapping as `__line__`."""

    def construct_mapping(self, node, deep=False):
        mapping = super().construct_mapping(node, deep=deep)
        mapping["__line__"] = node.start_mark.line + 1
        return mapping


def _decorated_names(directory: Path, decorator: str) -> set[str]:
    """Names registered with `@decorator("name")` in the Python files of a directory."""
    names: set[str] = set()
    for path in sorted(directory.glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                for dec in node.decorator_list:
                    if (isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == decorator):
                        for arg in dec.args:
                            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                                names.add(arg.value)
    return names


def _rule_reads(directory: Path) -> dict[str, set[str]]:
    """{shape rule: the registry keys it declares it reads}, from `@shape_rule("name", reads=(...))`."""
    reads: dict[str, set[str]] = {}
    for path in sorted(directory.glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            for dec in node.decorator_list:
                if not (isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == "shape_rule" and dec.args
                        and isinstance(dec.args[0], ast.Constant)):
                    continue
                keys = reads.setdefault(dec.args[0].value, set())
                for kw in dec.keywords:
                    if kw.arg == "reads":
                        keys.update(ast.literal_eval(kw.value))
    return reads


def _module_functions(path: Path) -> set[str]:
    """The public functions a module defines, and those it imports from its own package (`from .x import f`:
    formulas.py gathers the linalg formulas so)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names |= {a.asname or a.name for a in node.names if not (a.asname or a.name).startswith("_")}
    return names


@dataclass
class SourceIndex:
    """What the registry may refer to, read from the source tree without importing ember."""

    shape_rules: set[str]
    explicit_kernels: set[str]
    decompositions: set[str]
    formula_helpers: set[str]
    checks: set[str] = field(default_factory=set)                  # @op_check("name") in ember/shape_rules/
    sparse_kernels: set[str] = field(default_factory=set)          # @sparse_kernel("name") in ember/sparse/
    rule_reads: dict[str, set[str]] = field(default_factory=dict)  # shape rule -> the RULE_KEYS it reads

    @classmethod
    def scan(cls, root: Path = ROOT) -> "SourceIndex":
        return cls(
            shape_rules=_decorated_names(root / "ember" / "shape_rules", "shape_rule"),
            explicit_kernels=_decorated_names(root / "ember" / "decompositions", "explicit_kernel"),
            decompositions=_decorated_names(root / "ember" / "decompositions", "decomposition"),
            formula_helpers=_module_functions(root / "ember" / "frontend" / "autograd" / "formulas.py"),
            checks=_decorated_names(root / "ember" / "shape_rules", "op_check"),
            sparse_kernels=_decorated_names(root / "ember" / "sparse", "sparse_kernel"),
            rule_reads=_rule_reads(root / "ember" / "shape_rules"),
        )


def _as_tuple(value, what: str, fail) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        fail(f"`{what}` must be a list of strings, got {value!r}")
    return tuple(value)


def _inplace_schema(schema: FunctionSchema) -> FunctionSchema:
    """The schema of the in-place twin: `name_`, self becomes Tensor(a!) and is returned."""
    first = schema.arguments[0]
    if not first.type.is_tensor:
        raise SchemaError("an op with an in-place twin must take a Tensor as its first argument")
    mutated = Type("Tensor", alias="a", is_write=True)
    args = (dataclasses.replace(first, type=mutated),) + schema.arguments[1:]
    from .schema import Return
    twin = FunctionSchema(schema.name + "_", schema.overload, args, (Return(None, mutated),))
    return dataclasses.replace(twin, text=twin.render())


# the tag of ops that take sparse COO tensors: each has a @sparse_kernel in ember/sparse/ (the Sparse key's)
SPARSE_TAG = "sparse_coo"


def load_registry(path: Path = REGISTRY_PATH, sources: SourceIndex | None = None) -> Registry:
    """Read, resolve and validate the registry; raise RegistryError on the first problem."""
    text = Path(path).read_text()
    try:
        data = yaml.load(text, Loader=_LineLoader)
    except yaml.YAMLError as exc:
        raise RegistryError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or "ops" not in data:
        raise RegistryError(f"{path}: expected a mapping with an `ops` list")
    families = data.get("families", {})
    sources = sources or SourceIndex.scan(Path(path).resolve().parent)
    registry = Registry()
    seen: dict[str, int] = {}
    for raw in data["ops"]:
        entries = _resolve_entry(raw, families, sources, path)
        for entry in entries:
            if entry.name in seen:
                raise RegistryError(f"{path}:{entry.line}: entry '{entry.name}': duplicate of the entry at line {seen[entry.name]}")
            seen[entry.name] = entry.line
            registry.ops.append(entry)
    _check_formula_names(registry, sources, path)
    _check_aliases(registry, path)
    return registry


def _check_aliases(registry: Registry, path) -> None:
    """An alias names one op's function and method only: not another op, not a second alias."""
    names = {op.schema.name for op in registry.ops}
    taken: dict[str, str] = {}
    for op in registry.ops:
        for alias in op.aliases:
            if alias in names or alias in taken:
                other = taken.get(alias, alias)
                raise RegistryError(f"{path}:{op.line}: entry '{op.name}': alias {alias!r} is already the name of "
                                    f"'{other}'")
            taken[alias] = op.name


def check_sparse_kernels(registry: Registry, sources: SourceIndex) -> None:
    """Every @sparse_kernel in ember/sparse/ belongs to an op the whole registry tags `sparse_coo` (the other
    direction is checked per entry). Not part of load_registry, which also reads partial registries."""
    undeclared = sources.sparse_kernels - {e.name for e in registry.ops if SPARSE_TAG in e.tags}
    if undeclared:
        raise RegistryError(f"{REGISTRY_PATH}: @sparse_kernel in ember/sparse/ for ops not tagged `{SPARSE_TAG}` "
                            f"in the registry: {sorted(undeclared)}")


def _resolve_entry(raw, families, sources: SourceIndex, path) -> list[OpEntry]:
    line = raw.get("__line__", 0) if isinstance(raw, dict) else 0
    label = raw.get("func", "?") if isinstance(raw, dict) else repr(raw)

    def fail(problem: str):
        raise RegistryError(f"{path}:{line}: entry '{label}': {problem}")

    if not isinstance(raw, dict):
        fail("each entry must be a mapping")
    if "func" not in raw:
        fail("missing `func` (the schema)")
    label = str(raw["func"]).split("(", 1)[0]
    try:
        schema = parse_schema(raw["func"])
    except SchemaError as exc:
        fail(f"bad schema: {exc}")
    label = schema.full_name
    unknown = set(raw) - ENTRY_KEYS - {"__line__"}
    if unknown:
        fail(f"unknown key(s) {sorted(unknown)}; allowed: {sorted(ENTRY_KEYS)}")
    family = raw.get("family")
    if family not in FAMILIES:
        fail(f"`family` must be one of {sorted(FAMILIES)}, got {family!r}")
    defaults = {k: v for k, v in (families.get(family) or {}).items() if k != "__line__"}
    bad_defaults = set(defaults) - FAMILY_KEYS
    if bad_defaults:
        fail(f"family {family!r} sets keys that are per-entry only: {sorted(bad_defaults)}")

    def get(key, required=True):
        if key in raw:
            return raw[key]
        if key in defaults:
            return defaults[key]
        if required:
            fail(f"missing `{key}` (and family {family!r} gives no default)")
        return None

    promotion = get("promotion")
    if promotion not in PROMOTIONS:
        fail(f"`promotion` must be one of {sorted(PROMOTIONS)}, got {promotion!r}")
    autocast = _resolve_autocast(get("autocast"), fail)
    impl = raw.get("impl")
    if impl is None:
        fail(f"missing `impl` (every entry states how it is implemented: one of {sorted(IMPLS)})")
    if impl not in IMPLS:
        fail(f"`impl` must be one of {sorted(IMPLS)}, got {impl!r}")
    shape = get("shape")
    if shape not in sources.shape_rules:
        fail(f"unknown shape rule {shape!r}; define it with @shape_rule({shape!r}) in ember/shape_rules/")
    variants = _as_tuple(get("variants"), "variants", fail)
    if not set(variants) <= VARIANTS:
        fail(f"`variants` must be a subset of {sorted(VARIANTS)}, got {list(variants)}")
    operators = _as_tuple(raw.get("operators"), "operators", fail)
    for op in operators:
        if op not in OPERATORS:
            fail(f"unknown Python operator {op!r}; known: {sorted(OPERATORS)}")
    inplace_ops = _as_tuple(raw.get("inplace_operators"), "inplace_operators", fail)
    for op in inplace_ops:
        if op not in INPLACE_OPERATORS:
            fail(f"unknown in-place operator {op!r}; known: {sorted(INPLACE_OPERATORS)}")
    inplace = raw.get("inplace", False)
    if not isinstance(inplace, bool):
        fail(f"`inplace` must be true or false, got {inplace!r}")
    if inplace_ops and not inplace:
        fail("`inplace_operators` needs `inplace: true`")
    inplace_variants = raw.get("inplace_variants")
    if inplace_variants is not None:
        inplace_variants = _as_tuple(inplace_variants, "inplace_variants", fail)
        if not inplace:
            fail("`inplace_variants` needs `inplace: true`")
        if not set(inplace_variants) <= VARIANTS:
            fail(f"`inplace_variants` must be a subset of {sorted(VARIANTS)}, got {list(inplace_variants)}")
    tags = _as_tuple(get("tags"), "tags", fail)
    aliases = _as_tuple(raw.get("aliases"), "aliases", fail)
    for alias in aliases:
        if not isinstance(alias, str) or not alias.isidentifier() or alias.startswith("_") or alias.endswith("_"):
            fail(f"`aliases` are public Python names (no leading or trailing underscore), got {alias!r}")
    doc = raw.get("doc")
    if not isinstance(doc, str) or not doc.strip():
        fail("missing `doc` (a one-line description)")

    autograd_raw = get("autograd", required=False)
    autograd = _resolve_autograd(autograd_raw, schema, impl, fail)

    if impl == "composite" and schema.full_name not in sources.decompositions:
        fail(f"impl is composite but no @decomposition({schema.full_name!r}) exists in ember/decompositions/")
    if impl == "explicit" and schema.full_name not in sources.explicit_kernels:
        fail(f"impl is explicit but no @explicit_kernel({schema.full_name!r}) exists in ember/decompositions/")
    if SPARSE_TAG in tags and schema.full_name not in sources.sparse_kernels:
        fail(f"tagged `{SPARSE_TAG}` but no @sparse_kernel({schema.full_name!r}) exists in ember/sparse/")

    behaviour = _resolve_behaviour(raw, schema, shape, sources, fail)
    scalar = _resolve_scalar(raw.get("scalar"), schema, fail)
    reduce = _resolve_reduce(raw.get("reduce"), schema, fail)

    recompute = raw.get("recompute")
    if recompute is not None and (not isinstance(recompute, str) or not autograd or impl != "explicit"):
        fail("`recompute` is an expression (a string) recomputing output 0, for an explicit op with autograd formulas")
    entry = OpEntry(schema, line, family, variants, operators, (), promotion, shape, autograd,
                    autocast, impl, tags, doc.strip(), behaviour=behaviour, scalar=scalar,
                    reduce=reduce, recompute=recompute, aliases=aliases)
    out = [entry]
    if inplace:
        try:
            twin_schema = _inplace_schema(schema)
        except SchemaError as exc:
            fail(str(exc))
        entry.inplace_twin = twin_schema.full_name
        if inplace_variants is None:
            inplace_variants = ("method",) if variants else ()     # no public twin of a private op
        twin = OpEntry(
            twin_schema, line, family, inplace_variants,
            (), inplace_ops, promotion, shape, autograd, autocast,
            "composite", tuple(t for t in tags if t != SPARSE_TAG) + ("inplace",), f"In-place version of {schema.full_name}: {doc.strip()}",
            inplace_of=schema.full_name, behaviour=behaviour,
        )
        out.append(twin)
    return out


def _resolve_scalar(text, schema: FunctionSchema, fail) -> tuple | None:
    """The `scalar` formula's tree, for an op of one Tensor result computed element by element from
    Tensor and number arguments (no writes, no lists)."""
    if text is None:
        return None
    if not isinstance(text, str) or not text.strip():
        fail(f"`scalar` must be a formula (a Python expression over the arguments), got {text!r}")
    args = schema.arguments
    if len(schema.returns) != 1 or any(a.type.is_write or a.type.is_tensor_list for a in args):
        fail("`scalar` is for an op with one result that writes no argument and takes no Tensor list")
    try:
        return parse_formula(text, tuple(a.name for a in args), {a.name for a in args if a.type.is_tensor})
    except FormulaError as exc:
        fail(f"`scalar`: {exc}")


REDUCE_KINDS = ("sum", "mean", "amax", "amin")


def _resolve_reduce(kind, schema: FunctionSchema, fail) -> tuple | None:
    """`reduce: <kind>`: the op reduces `self` over `dim` (keepdim `keepdim`) by `kind`, so the fusion pass
    may fuse it with the pointwise ops around it: (kind, dim position, keepdim position, dtype position)."""
    if kind is None:
        return None
    if kind not in REDUCE_KINDS:
        fail(f"`reduce` must be one of {list(REDUCE_KINDS)}, got {kind!r}")
    position = {a.name: i for i, a in enumerate(schema.arguments)}
    if not {"self", "dim", "keepdim"} <= set(position) or position["self"] != 0:
        fail("`reduce` is for an op (Tensor self, int[] dim, bool keepdim, ...) reducing self over dim")
    return (kind, position["dim"], position["keepdim"], position.get("dtype"))


def _resolve_behaviour(raw, schema: FunctionSchema, shape: str, sources: SourceIndex, fail) -> Behaviour:
    """The per-op behaviour keys: each checked against its grammar, the schema and the source tree."""
    args = {a.name: a for a in schema.arguments}
    dtypes = raw.get("dtypes", "all")
    if dtypes not in KERNEL_DTYPES:
        fail(f"`dtypes` must be one of {sorted(KERNEL_DTYPES)}, got {dtypes!r}")
    kernel = raw.get("dtype_error_kernel")
    if dtypes != "all" and kernel is None:
        fail(f"`dtypes: {dtypes}` needs `dtype_error_kernel` (the PyTorch kernel its \"not implemented for\" "
             "error names)")
    if kernel is not None and (dtypes == "all" or not isinstance(kernel, str) or not kernel.strip()):
        fail(f"`dtype_error_kernel` must be a kernel name, given with `dtypes` other than all; got {kernel!r}"
             f" with dtypes {dtypes!r}")
    checks = _as_tuple(raw.get("checks"), "checks", fail)
    for name in checks:
        if name not in sources.checks:
            fail(f"unknown check {name!r}; define it with @op_check({name!r}) in ember/shape_rules/ "
                 f"(known: {sorted(sources.checks)})")
    if len(set(checks)) != len(checks):
        fail(f"`checks` names a check twice: {list(checks)}")
    given = raw.get("promotion_if_given")
    if given is not None:
        given = {k: v for k, v in given.items() if k != "__line__"} if isinstance(given, dict) else given
        if not isinstance(given, dict) or len(given) != 1:
            fail(f"`promotion_if_given` must be one mapping argument -> promotion kind, got {given!r}")
        (arg, kind), = given.items()
        if arg not in args or not args[arg].type.optional:
            fail(f"`promotion_if_given` names {arg!r}, which is not an optional argument of the schema")
        if kind not in PROMOTIONS - {"none"}:
            fail(f"`promotion_if_given` gives {kind!r} for {arg!r}; expected one of {sorted(PROMOTIONS - {'none'})}")
        given = (arg, kind)
    operands = raw.get("iterator_operands", "arguments")
    if operands not in ITERATOR_OPERANDS:
        fail(f"`iterator_operands` must be one of {sorted(ITERATOR_OPERANDS)}, got {operands!r}")
    copy_from = raw.get("copy_from")
    if copy_from is not None:
        first = schema.arguments[0] if schema.arguments else None
        if first is None or not (first.type.is_tensor and first.type.is_write):
            fail("`copy_from` is for an op writing its first argument (Tensor(a!) self)")
        if copy_from not in args or not args[copy_from].type.is_tensor or copy_from == first.name:
            fail(f"`copy_from` names {copy_from!r}, which is not another Tensor argument of the schema")
    numbers = _resolve_numbers(raw.get("numbers"), schema, fail)
    one_int = _as_tuple(raw.get("one_int"), "one_int", fail)
    for name in one_int:
        if name not in args or args[name].type.base not in ("int", "SymInt") or not args[name].type.is_list \
                or args[name].type.list_size is not None:
            fail(f"`one_int` names {name!r}, which is not an int[] argument of the schema (an int[N] takes one int "
                 "already)")
    behaviour = Behaviour(dtypes, kernel, checks, given, operands, copy_from, numbers, one_int)
    set_keys = [k for k in RULE_KEYS if getattr(behaviour, k) != getattr(Behaviour(), k)]
    reads = sources.rule_reads.get(shape, set())
    for key in set_keys:
        if key not in reads:
            fail(f"`{key}` has no effect: shape rule {shape!r} does not read it (a rule declares the keys it "
                 f"reads: @shape_rule({shape!r}, reads=(...)); it reads {sorted(reads) or 'none'})")
    return behaviour


# `numbers: any`: PyTorch's argument parser takes a Python number in every Tensor argument (its fixed list of
# functions: add, sub, mul, div, floor_divide, copy_, _to_copy, ...)
NUMBERS_ANY = "any"


def _resolve_numbers(raw, schema: FunctionSchema, fail) -> tuple[str, ...] | str:
    """`numbers`: the Tensor arguments a Python number may be given for (PyTorch has an overload taking a `Scalar`
    there: eq.Scalar's `other`, pow.Scalar's `self`), or `any` (PyTorch's list of functions taking a number in
    every Tensor argument). Absent: every Tensor argument takes only a Tensor."""
    if raw is None:
        return ()
    tensors = [a.name for a in schema.arguments if a.type.is_tensor and not a.type.is_list]
    if raw == NUMBERS_ANY:
        if not tensors:
            fail("`numbers: any` is for an op with Tensor arguments")
        return NUMBERS_ANY
    names = _as_tuple(raw, "numbers", fail)
    for name in names:
        if name not in tensors:
            fail(f"`numbers` names {name!r}, which is not a Tensor argument of the schema (Tensor arguments: "
                 f"{tensors}); or give `any`")
        if schema.argument(name).type.is_write:
            fail(f"`numbers` names {name!r}, which the op writes: a number cannot be written in place")
    if not names or len(set(names)) != len(names):
        fail(f"`numbers` must list distinct Tensor arguments (or be `any`), got {list(names)}")
    return names


# the families whose kernels take a Python number in a Tensor argument as itself (a "wrapped number": weak in
# type promotion); an op of another family taking one gets it as PyTorch's wrapped-number tensor (OpDef.wraps_numbers)
NUMBER_KERNEL_FAMILIES = ("pointwise", "unary_float", "comparison")


def number_positions(op: "OpEntry") -> tuple[int, ...]:
    """The positions of the Tensor arguments of `op` that take a Python number (`OpDef.numbers`): those its
    `numbers` key names, every Tensor argument for `any`; never one the op writes (an in-place twin's `self`)."""
    numbers = op.behaviour.numbers
    return tuple(i for i, a in enumerate(op.schema.arguments)
                 if a.type.is_tensor and not a.type.is_list and not a.type.is_write
                 and (numbers == NUMBERS_ANY or a.name in numbers))


def _resolve_autocast(raw, fail) -> dict[str, str]:
    """A policy for every device type, or per device type ({cpu: none, default: fp32}):
    PyTorch's autocast lists differ between cpu and cuda."""
    policies = raw if isinstance(raw, dict) else {"default": raw}
    policies = {k: v for k, v in policies.items() if k != "__line__"}
    if "default" not in policies:
        fail(f"`autocast` per device type needs a `default` entry, got {raw!r}")
    for device_type, policy in policies.items():
        if policy not in AUTOCAST:
            fail(f"`autocast` must be one of {sorted(AUTOCAST)} (or a mapping device type -> one of them), "
                 f"got {policy!r} for {device_type!r}")
    return policies


def _resolve_autograd(raw, schema: FunctionSchema, impl: str, fail) -> dict[str, str] | None:
    if raw is None:
        if impl == "composite":
            return None          # differentiated through its decomposition
        fail("missing `autograd`: give a formula per differentiable input or `not_differentiable`")
    if raw == NOT_DIFFERENTIABLE:
        return None
    if impl == "composite":
        fail("a composite op is differentiated through its decomposition; drop `autograd` or make it explicit")
    if not isinstance(raw, dict):
        fail(f"`autograd` must be a mapping input -> formula or {NOT_DIFFERENTIABLE!r}, got {raw!r}")
    formulas: dict[str, str] = {}
    tensor_args = {a.name: a for a in schema.arguments if a.type.base == "Tensor"}
    seen: set[str] = set()
    for key, formula in raw.items():
        if key == "__line__":
            continue
        names = formula_inputs(key)
        for name in names:
            if name not in tensor_args:
                fail(f"autograd names {name!r}, which is not a Tensor argument of the schema "
                     f"(Tensor arguments: {sorted(tensor_args)})")
            if name in seen:
                fail(f"autograd gives {name!r} two formulas")
            seen.add(name)
        if not isinstance(formula, str):
            fail(f"the formula for {key!r} must be a string expression, got {formula!r}")
        try:
            ast.parse(formula, mode="eval")
        except SyntaxError as exc:
            fail(f"the formula for {key!r} is not a valid expression: {exc.msg}")
        uses_mask = any(isinstance(n, ast.Name) and n.id == "grad_input_mask" for n in ast.walk(ast.parse(formula)))
        if len(names) > 1 and not uses_mask:
            fail(f"the grouped formula for {key!r} must pass grad_input_mask (which of them need a gradient)")
        if len(names) == 1 and uses_mask:
            fail(f"grad_input_mask is only defined in a grouped formula ('a, b: ...'), not in {key!r}'s")
        for node in ast.walk(ast.parse(formula)):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                    and node.value.id == "grad_input_mask" and not (
                        isinstance(node.slice, ast.Constant) and type(node.slice.value) is int
                        and 0 <= node.slice.value < len(names)):
                fail(f"the grouped formula for {key!r} indexes grad_input_mask with {ast.unparse(node.slice)}; "
                     f"expected a position 0..{len(names) - 1} of the group")
        if len(names) > 1 and any(tensor_args[n].type.is_tensor_list for n in names):
            fail(f"the grouped formula for {key!r} names a tensor list; give a list its own formula")
        formulas[", ".join(names)] = formula
    order = [a.name for a in schema.arguments if a.name in seen]
    if [n for key in formulas for n in formula_inputs(key)] != order:
        fail(f"autograd formulas must follow the schema's argument order ({', '.join(order)})")
    return formulas


def _check_formula_names(registry: Registry, sources: SourceIndex, path) -> None:
    functions = {op.schema.name for op in registry.ops}
    for op in registry.ops:
        if not op.autograd or op.inplace_of:
            continue
        scope = {a.name for a in op.schema.arguments} | {"grad", "grads", "result", "True", "False", "None",
                                                          "grad_input_mask"}
        scope |= {r.name for r in op.schema.returns if r.name}
        scope |= {f"result{k}" for k in range(len(op.schema.returns))}
        for name, formula in op.autograd.items():
            tree = ast.parse(formula, mode="eval")
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    fn = node.func.id
                    if fn not in functions and fn not in sources.formula_helpers:
                        raise RegistryError(
                            f"{path}:{op.line}: entry '{op.name}': formula for {name!r} calls {fn!r}, "
                            "which is neither a registered op nor a helper in ember/frontend/autograd/formulas.py")
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    called = any(isinstance(p, ast.Call) and p.func is node for p in ast.walk(tree))
                    if not called and node.id not in scope:
                        raise RegistryError(
                            f"{path}:{op.line}: entry '{op.name}': formula for {name!r} uses {node.id!r}, "
                            f"which is not in scope (arguments, grad, grads, result, result<k>, return names)")


def argument_python_name(arg: Argument, is_method: bool) -> str:
    """The Python parameter name: PyTorch calls `self` `input` in functions."""
    if arg.name == "self" and not is_method:
        return "input"
    if keyword.iskeyword(arg.name):       # `from` in random_/uniform_: from_
        return arg.name + "_"
    return arg.name
