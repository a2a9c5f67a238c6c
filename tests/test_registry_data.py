"""Per-op behaviour is registry data, not tests on op names.

The shape rules, the frontend and the dispatcher choose no behaviour by an op's name, a
prefix of it or an argument's name: the registry carries it (docs/registry.md: `dtypes`,
`dtype_error_kernel`, `checks`, `promotion_if_given`, `iterator_operands`, `copy_from`, the
`promotion` kinds), as PyTorch's native_functions.yaml does. Names may still word messages.

The scanner below reads the source (ast): an expression derived from an op's `name`,
`arg_names`, `schema` or `inplace_of` (directly, through a local variable
or a helper returning one) must not be compared, tested with startswith/endswith/index or
`in`, or used as a key to look something up; and no dict or set literal is keyed by op names.
"""
from __future__ import annotations

import ast
import functools
import re
import textwrap
from pathlib import Path

import pytest

import ember
from codegen.registry import (BEHAVIOUR_KEYS, ENTRY_KEYS, KERNEL_DTYPES, ITERATOR_OPERANDS, REGISTRY_PATH,
                              RegistryError, SourceIndex, load_registry)
from ember.dispatcher import ALL_OPS

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("ember/shape_rules", "ember/frontend", "ember/dispatcher")

# the OpDef attributes that hold op or argument names
NAME_ATTRS = {"name", "arg_names", "schema", "inplace_of"}
# string methods that only reshape a name (its value stays a name)
TRANSFORMS = {"split", "rsplit", "strip", "lstrip", "rstrip", "lower", "upper", "partition", "rpartition", "replace",
              "removeprefix", "removesuffix"}
# string methods that test a name
TESTS = {"startswith", "endswith", "index", "rindex", "find", "rfind", "count", "__contains__", "__eq__"}
LOOKUPS = {"get", "setdefault", "pop", "__getitem__", "__contains__"}
# tables that may be indexed by an op name: the op table itself (an op calling another by name) and the
# generated table of each op's function
OP_TABLES = {"ALL_OPS", "_OPS", "OP_FUNCTIONS"}

# Known occurrences outside this change's reach, each with its reason: (path, source line) -> reason.
# The test fails when one is no longer found, so the entry is removed with the code.
ALLOWED = {
}


def _is_op(node: ast.AST, self_is_op: bool) -> bool:
    """A name that holds an OpDef: `op`, `base_op`, ... (and `self` inside class OpDef)."""
    return isinstance(node, ast.Name) and (node.id == "op" or node.id.endswith("_op")
                                           or (self_is_op and node.id == "self"))


class _Scope:
    """Which expressions of one function (or module) hold op or argument names."""

    def __init__(self, name_functions: set[str], self_is_op: bool):
        self.tainted: set[str] = set()
        self.name_functions = name_functions
        self.self_is_op = self_is_op

    def named(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr in NAME_ATTRS and _is_op(node.value, self.self_is_op)
        if isinstance(node, ast.Name):
            return node.id in self.tainted
        if isinstance(node, ast.Subscript):
            return self.named(node.value)
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in TRANSFORMS:
                return self.named(f.value)
            return isinstance(f, ast.Name) and f.id in self.name_functions
        return False

    def taint(self, target: ast.AST) -> None:
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                self.tainted.add(n.id)

    def collect(self, body: list[ast.AST]) -> None:
        """Names assigned a name-holding value (flow-insensitive: until nothing changes)."""
        nodes = [n for stmt in body for n in ast.walk(stmt)]
        while True:
            before = len(self.tainted)
            for n in nodes:
                if isinstance(n, ast.Assign) and self.named(n.value):
                    for t in n.targets:
                        self.taint(t)
                elif isinstance(n, (ast.AnnAssign, ast.NamedExpr)) and n.value is not None and self.named(n.value):
                    self.taint(n.target)
                elif isinstance(n, (ast.For, ast.comprehension)):
                    self._taint_loop(n.target, n.iter)
            if len(self.tainted) == before:
                return

    def _taint_loop(self, target, it) -> None:
        if self.named(it):
            self.taint(target)
        elif isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and isinstance(target, ast.Tuple):
            if it.func.id == "zip":
                for arg, elt in zip(it.args, target.elts):
                    if self.named(arg):
                        self.taint(elt)
            elif it.func.id == "enumerate" and it.args and self.named(it.args[0]) and len(target.elts) == 2:
                self.taint(target.elts[1])

    def violations(self, body: list[ast.AST]) -> list[ast.AST]:
        found = []
        for n in (n for stmt in body for n in ast.walk(stmt)):
            if isinstance(n, ast.Compare):
                operands = [n.left] + n.comparators
                named = [o for o in operands if self.named(o)]
                others = [o for o in operands if not self.named(o)]
                if named and not all(isinstance(o, ast.Constant) and o.value is None for o in others):
                    found.append(n)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                if n.func.attr in TESTS and self.named(n.func.value):
                    found.append(n)                                  # op.name.startswith("pow")
                elif n.func.attr in LOOKUPS and n.args and self.named(n.args[0]) \
                        and not (isinstance(n.func.value, ast.Name) and n.func.value.id in OP_TABLES):
                    found.append(n)                                  # _CHECKS.get(op.name)
            elif isinstance(n, ast.Subscript) and self.named(n.slice) \
                    and not (isinstance(n.value, ast.Name) and n.value.id in OP_TABLES):
                found.append(n)                                      # _KERNELS[op.name]
        return found


def _functions(tree: ast.Module):
    """(function or module body, whether `self` is an OpDef there) for every scope."""
    yield tree.body, False
    for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
        for fn in cls.body:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield fn.body, cls.name == "OpDef"
    for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        yield fn.body, False


def name_tests(source: str) -> list[tuple[int, str]]:
    """(line, source line) of every behaviour chosen by an op's or an argument's name in `source`."""
    tree = ast.parse(source)
    lines = source.splitlines()
    # helpers returning a name (`def _base(op): return op.name.split(".")[0]`): their calls are names too
    name_functions: set[str] = set()
    for _ in range(3):
        for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
            scope = _Scope(name_functions, False)
            scope.collect(fn.body)
            if any(isinstance(r, ast.Return) and r.value is not None and scope.named(r.value) for r in ast.walk(fn)):
                name_functions.add(fn.name)
    found = set()
    for body, self_is_op in _functions(tree):
        scope = _Scope(name_functions, self_is_op)
        scope.collect(body)
        for node in scope.violations(body):
            found.add((node.lineno, lines[node.lineno - 1].strip()))
    return sorted(found)


def _op_names() -> set[str]:
    names = set()
    for name in ALL_OPS:
        base = name.split(".")[0]
        names |= {name, base, base.rstrip("_"), base.strip("_")}
    return names


def name_tables(source: str, op_names: set[str]) -> list[tuple[int, str]]:
    """Dict and set literals keyed by op names (a per-op table: `_KERNELS = {"gelu": ...}`)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    found = []
    for n in ast.walk(tree):
        keys = n.keys if isinstance(n, ast.Dict) else n.elts if isinstance(n, ast.Set) else []
        if any(isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value in op_names for k in keys):
            found.append((n.lineno, lines[n.lineno - 1].strip()))
    return found


def _scanned_files():
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path.read_text()


def test_no_behaviour_is_chosen_by_an_op_or_argument_name():
    found, allowed_seen = [], set()
    for rel, source in _scanned_files():
        for line, text in name_tests(source):
            if (rel, text) in ALLOWED:
                allowed_seen.add((rel, text))
            else:
                found.append(f"{rel}:{line}: {text}")
    assert found == [], ("behaviour chosen by an op's or an argument's name; put it in the registry "
                         "(docs/registry.md) and read the OpDef field:\n" + "\n".join(found))
    assert set(ALLOWED) == allowed_seen, f"stale ALLOWED entries (remove them): {set(ALLOWED) - allowed_seen}"


def test_no_table_is_keyed_by_op_names():
    op_names = _op_names()
    found = [f"{rel}:{line}: {text}"
             for rel, source in _scanned_files() for line, text in name_tables(source, op_names)]
    assert found == [], "per-op tables keyed by op names; make them registry keys:\n" + "\n".join(found)


# The scanner itself: each pattern the registry replaced is caught, names in messages are not.
CAUGHT = [
    'if op.name == "rsub.Tensor":\n    pass',
    'x = op.name in _BOOL_TO_INT64',
    'x = op.name not in ("any", "all")',
    'x = op.name.startswith("pow")',
    'x = op.name.endswith(".dim")',
    'x = op.arg_names[-1] != "alpha"',
    'x = op.arg_names[1] == "fill_value"',
    'x = "alpha" in op.arg_names',
    'x = op.arg_names.index("alpha")',
    'check = _CHECK_OF_OP.get(op.name, None)',
    'k = _KERNELS[op.name]',
    'name = op.name.split(".")[0]\nif name == "uniform_":\n    pass',
    'name = op.name.split(".")[0]\nk = _RANDOM_KERNELS[name]',
    'def _base(op):\n    return op.name.split(".")[0].rstrip("_")\n\ndef f(op):\n    return _base(op) == "hardtanh"',
    'for name, value in zip(op.arg_names[1:], args):\n    if name == "approximate":\n        pass',
    'x = base_op.name == "copy_"',
    'x = op.schema.startswith("add")',
    'x = op.inplace_of == "add.Tensor"',
    'class OpDef:\n    def f(self):\n        return self.name == "copy_"',
]
ALLOWED_CODE = [
    'raise ValueError(f"{op.name}(): bad")',
    'name = op.name.split(".")[0]\nraise ValueError(f"{op.name}(): {name}: bad")',
    'for name, value in zip(op.arg_names[1:], args):\n    if not isinstance(value, int):\n'
    '        raise TypeError(f"argument {name!r}")',
    'x = op.inplace_of is not None',
    'base = ALL_OPS[op.inplace_of]',
    'x = (op.name, device) not in _warned',
    'x = dtype.name == "uint8"',
    'x = op.alpha_arg is None or args[op.alpha_arg].__class__ is int',
    'for name in op.checks:\n    CHECKS[name](op)',
]


@pytest.mark.parametrize("code", CAUGHT)
def test_the_scanner_catches_a_name_test(code):
    assert name_tests(textwrap.dedent(code)), code


@pytest.mark.parametrize("code", ALLOWED_CODE)
def test_the_scanner_allows_names_in_messages_and_registry_fields(code):
    assert name_tests(textwrap.dedent(code)) == [], code


def test_the_scanner_catches_tables_keyed_by_op_names():
    names = _op_names()
    assert name_tables('_KERNELS = {"gelu": "GeluKernelImpl", "silu": "silu_cpu"}', names)
    assert name_tables('_BOOL_TO_INT64 = frozenset({"square", "square_"})', names)
    assert name_tables('_FLOAT = {"mse_loss": "mse_cpu"}', names)
    assert name_tables('_NAMES = {"float32": "Float", "int64": "Long"}', names) == []


# ------------------------------------------------------------------ the keys in the registry
GOOD = """
families:
  pointwise: {promotion: default, shape: pointwise, autocast: none, variants: [function, method], tags: [core]}
ops:
- func: div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode=None) -> Tensor
  family: pointwise
  impl: primitive
  autograd:
    self: grad
  doc: Divides.
"""


@functools.lru_cache(maxsize=None)
def _sources() -> SourceIndex:
    """The source tree's index, scanned once per module (a scan parses every shape rule and kernel module, ~0.4 s);
    the loader only reads it."""
    return SourceIndex.scan(ROOT)


def _load(tmp_path, text):
    path = tmp_path / "ops_registry.yaml"
    path.write_text(text)
    return load_registry(path, _sources())


@pytest.mark.parametrize("extra, message", [
    ("  dtypes: floats\n", "`dtypes` must be one of"),
    ("  dtypes: floating\n", "`dtypes: floating` needs `dtype_error_kernel`"),
    ("  dtype_error_kernel: div_cpu\n", "`dtype_error_kernel` must be a kernel name, given with `dtypes`"),
    ("  checks: [no_such_check]\n", "unknown check 'no_such_check'"),
    ("  checks: rounding_mode\n", "`checks` must be a list of strings"),
    ("  checks: [rounding_mode, rounding_mode]\n", "`checks` names a check twice"),
    ("  promotion_if_given: {mode: default}\n", "`promotion_if_given` names 'mode', which is not an optional"),
    ("  promotion_if_given: {other: default}\n", "`promotion_if_given` names 'other', which is not an optional"),
    ("  promotion_if_given: {rounding_mode: sometimes}\n", "`promotion_if_given` gives 'sometimes'"),
    ("  promotion_if_given: default\n", "`promotion_if_given` must be one mapping"),
    ("  iterator_operands: backwards\n", "`iterator_operands` must be one of"),
    ("  copy_from: other\n", "`copy_from` is for an op writing its first argument"),
    ("  shape: mm\n  checks: [rounding_mode]\n", "`checks` has no effect: shape rule 'mm' does not read it"),
    ("  shape: mm\n  iterator_operands: reversed\n", "`iterator_operands` has no effect: shape rule 'mm'"),
])
def test_malformed_behaviour_keys_name_the_entry_line_and_problem(tmp_path, extra, message):
    with pytest.raises(RegistryError) as info:
        _load(tmp_path, GOOD.replace("  family: pointwise\n", "  family: pointwise\n" + extra, 1))
    text = str(info.value)
    assert message in text
    assert "ops_registry.yaml:5:" in text and "entry 'div.Tensor_mode'" in text


def test_behaviour_keys_are_per_entry_not_family_defaults(tmp_path):
    text = GOOD.replace("tags: [core]}", "tags: [core], dtypes: floating}", 1)
    with pytest.raises(RegistryError, match="sets keys that are per-entry only: \\['dtypes'\\]"):
        _load(tmp_path, text)


def test_every_entry_states_its_impl(tmp_path):
    with pytest.raises(RegistryError, match="entry 'div.Tensor_mode'.*missing `impl`"):
        _load(tmp_path, GOOD.replace("  impl: primitive\n", "", 1))
    text = GOOD.replace("tags: [core]}", "tags: [core], impl: primitive}", 1)
    with pytest.raises(RegistryError, match="sets keys that are per-entry only: \\['impl'\\]"):
        _load(tmp_path, text)
    assert _load(tmp_path, GOOD).ops[0].impl == "primitive"


def test_copy_from_names_another_tensor_argument(tmp_path):
    text = """
families:
  copy: {promotion: none, shape: copy_, autocast: none, variants: [method], tags: [core]}
ops:
- func: copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)
  family: copy
  impl: primitive
  copy_from: non_blocking
  autograd: not_differentiable
  doc: Copies.
"""
    with pytest.raises(RegistryError, match="`copy_from` names 'non_blocking', which is not another Tensor argument"):
        _load(tmp_path, text)
    entry = _load(tmp_path, text.replace("copy_from: non_blocking", "copy_from: src")).ops[0]
    assert entry.behaviour.copy_from == "src"


def test_the_keys_reach_the_op_table_as_positions_only_where_set():
    assert ALL_OPS["div.Tensor_mode"].promotion_if_given == (2, "default")
    assert ALL_OPS["div_.Tensor_mode"].checks == ("rounding_mode",)              # the twin shares them
    assert ALL_OPS["pow.Tensor_Tensor"].iterator_operands == "tensors_only"
    assert ALL_OPS["rsub.Tensor"].iterator_operands == "reversed"
    assert (ALL_OPS["gelu"].dtypes, ALL_OPS["gelu"].dtype_error_kernel) == ("floating", "GeluKernelImpl")
    assert ALL_OPS["square"].promotion == "bool_to_long"
    assert ALL_OPS["copy_"].copy_from == 1
    assert ALL_OPS["add.Tensor"].alpha_arg == 2 and ALL_OPS["elu"].alpha_arg == 1
    mul = ALL_OPS["mul.Tensor"]
    assert (mul.alpha_arg, mul.dtypes, mul.checks, mul.promotion_if_given, mul.iterator_operands, mul.copy_from) == \
        (None, None, (), None, "arguments", None)
    table = (ROOT / "ember" / "_generated" / "op_table.py").read_text()
    line = next(t for t in table.splitlines() if t.startswith("_op('mul.Tensor'"))
    for field in ("alpha_arg", "dtypes", "checks", "promotion_if_given", "iterator_operands", "copy_from"):
        assert f"{field}=" not in line                                          # defaults are not written


def test_every_check_the_registry_can_name_exists_at_run_time():
    from ember.shape_rules.checks import CHECKS

    sources = SourceIndex.scan(ROOT)
    assert sources.checks == set(CHECKS)
    used = {name for op in load_registry(REGISTRY_PATH).ops for name in op.behaviour.checks}
    assert used == set(CHECKS), "a check no entry uses, or an unknown one"


def test_registry_doc_documents_every_key_and_value():
    doc = (ROOT / "docs" / "registry.md").read_text()
    for key in sorted(ENTRY_KEYS):
        assert re.search(rf"^\| `{key}[`:]", doc, re.M), key
    for value in sorted(KERNEL_DTYPES | ITERATOR_OPERANDS | SourceIndex.scan(ROOT).checks):
        assert f"`{value}`" in doc, value
    assert "`bool_to_long`" in doc
    assert BEHAVIOUR_KEYS <= ENTRY_KEYS


def test_pointwise_keys_behave_as_the_name_tests_did():
    """A few of the behaviours the keys now carry, end to end."""
    b = ember.tensor([True, False])
    assert ember.square(b).dtype == ember.int64                                 # promotion: bool_to_long
    assert ember.div(ember.tensor([7, -7]), 2, rounding_mode="floor").dtype == ember.int64   # promotion_if_given
    assert ember.div(ember.tensor([7, -7]), 2).dtype == ember.float32
    with pytest.raises(Exception, match='"floor_vml_cpu" not implemented for \'Bool\''):       # dtypes: not_bool
        ember.floor(b)
    with pytest.raises(Exception, match="Subtraction, the `-` operator, with two bool tensors"):  # checks: [sub_bool]
        b - b
    with pytest.raises(Exception, match="alpha must not be a floating point number"):          # alpha_arg
        ember.add(ember.tensor([1]), ember.tensor([2]), alpha=0.5)
    x = ember.ones(2, 3).t()
    c = x.contiguous()
    rsub, sub = ALL_OPS["rsub.Tensor"], ALL_OPS["sub.Tensor"]        # iterator_operands: reversed
    assert rsub.shape_rule(rsub, c, x, 1) == sub.shape_rule(sub, x, c, 1) == ((3, 2), ember.float32, (1, 3))
    assert rsub.shape_rule(rsub, x, c, 1) == sub.shape_rule(sub, c, x, 1) == ((3, 2), ember.float32)


@pytest.mark.parametrize("numbers, message", [
    ("[other, other]", "`numbers` must list distinct Tensor arguments"),
    ("[]", "`numbers` must list distinct Tensor arguments"),
    ("[rounding_mode]", "`numbers` names 'rounding_mode', which is not a Tensor argument"),
    ("all", "`numbers` must be a list of strings"),
])
def test_malformed_numbers_name_the_entry_line_and_problem(tmp_path, numbers, message):
    with pytest.raises(RegistryError) as info:
        _load(tmp_path, GOOD.replace("  family: pointwise\n", f"  family: pointwise\n  numbers: {numbers}\n", 1))
    assert message in str(info.value) and "entry 'div.Tensor_mode'" in str(info.value)


def test_numbers_reach_the_op_table_as_positions_without_written_arguments():
    assert ALL_OPS["eq.Tensor"].numbers == (1,) and ALL_OPS["eq_.Tensor"].numbers == (1,)
    assert ALL_OPS["pow.Tensor_Tensor"].numbers == (0, 1) and ALL_OPS["pow_.Tensor_Tensor"].numbers == (1,)
    assert ALL_OPS["add.Tensor"].numbers == (0, 1) and ALL_OPS["add_.Tensor"].numbers == (1,)      # any
    assert ALL_OPS["where.self"].numbers == (1, 2) and ALL_OPS["clamp.Tensor"].numbers == (1, 2)
    assert ALL_OPS["minimum"].numbers == () and ALL_OPS["mm"].numbers == ()
    assert (ALL_OPS["copy_"].numbers, ALL_OPS["copy_"].wraps_numbers) == ((1,), True)       # a 0-d tensor
    assert not ALL_OPS["add.Tensor"].wraps_numbers                                          # a Python scalar


# torch's argument parser takes a Python number in any Tensor argument of these (python_arg_parser.cpp's
# should_allow_numbers_as_tensors)
TORCH_NUMBERS_ANYWHERE = {"add", "add_", "div", "div_", "divide", "mul", "mul_", "multiply", "sub", "sub_", "subtract",
                          "true_divide", "floor_divide", "to", "_to_copy", "copy_", "_conj"}


def _torch_number_positions(op, torch) -> set[str]:
    """The Tensor arguments of `op` that torch takes a Python number for: every one for its list of functions,
    else those where it has an overload of the same name taking a Scalar at that place (and no in-place self)."""
    args = [a for a in op.schema.arguments if a.type.is_tensor and not a.type.is_list and not a.type.is_write]
    if op.schema.name in TORCH_NUMBERS_ANYWHERE:
        return {a.name for a in args}
    overloads = [s for s in torch._C._jit_get_schemas_for_operator(f"aten::{op.schema.name}")
                 if "out" not in s.overload_name.lower() and s.returns and "Tensor" in str(s.returns[0].type)
                 and any("Tensor" in str(a.type) for a in s.arguments)]
    found = set()
    for i, a in ((i, a) for i, a in enumerate(op.schema.arguments) if a in args):
        for s in overloads:
            same = [x for x in s.arguments if x.name == a.name] or s.arguments[i:i + 1]
            if same and str(same[0].type) in ("number", "Optional[number]"):
                found.add(a.name)
    return found


def test_numbers_are_where_torchs_parser_takes_a_number():
    """The registry's `numbers` against torch's own overloads, for every op; where ember registers the Scalar
    overload itself (masked_fill.Scalar), the number goes there and the Tensor overload takes none."""
    torch = pytest.importorskip("torch")
    ops = load_registry(REGISTRY_PATH).ops
    scalar_siblings = {(o.schema.name, i) for o in ops for i, a in enumerate(o.schema.arguments)
                       if a.type.base == "Scalar" and not a.type.is_list}
    for op in ops:
        expected = {name for name in _torch_number_positions(op, torch)
                    if (op.schema.name, op.schema.arguments.index(op.schema.argument(name))) not in scalar_siblings}
        ours = {op.schema.arguments[i].name for i in ALL_OPS[op.name].numbers}
        assert ours == expected, op.name
