"""`save(ep, path)` / `load(path)`: an exported program as one file that runs without its source.

The file is an ember checkpoint (`ember.save`'s format: safetensors, written atomically, a
SHA-256 digest over header and data, never pickle) holding
{"format": "ember.export", "version": 1, "program": <JSON text>, "state_dict": {...},
"constants": {...}}. The program JSON is the graph and what runs it:

* "nodes": [{"name", "op": "placeholder" | "call_function" | "output", "target", "args",
  "val": [dtype, shape] for a tensor-valued node}], a call_function's target being a registry
  op's name or "getitem";
* "signature": the input specs (kind, name, target, persistent), the output names and the
  buffers written in place; "in_spec" / "out_spec": the input and output structures;
  "guards": per flattened input, its path and shape, dtype and device, or its value.

Values inside args and guards are JSON: null, bools, ints and strings as themselves, and
{"node": name}, {"float": repr}, {"list": [...]}, {"tuple": [...]}, {"dtype": name},
{"device": str}. Loading reads JSON and raw numbers only: every target is looked up in the
registry (`ember.dispatcher.ALL_OPS`), nothing is imported or evaluated, and anything
truncated, altered, unknown or inconsistent raises `SerializationError` naming what is wrong.
"""
from __future__ import annotations

import collections
import json
import keyword
import operator
import os

from ember.core.errors import EmberError
from ember.core import dtype as _dt
from ember.core.device import device as _device
from ember.core.symint import SymInt
from ember.dispatcher import ALL_OPS
from ember.frontend.tensor import Tensor
from ember.fx import Graph, Node
from ember.utils.pytree import TreeSpec

from .exported_program import ExportedProgram, InputGuard
from .graph_signature import ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec
from .size_nodes import SIZE_OPERATORS

__all__ = ["save", "load", "SerializationError", "FORMAT", "VERSION"]

FORMAT = "ember.export"
VERSION = 1
_MAX_DEPTH = 64             # nesting of one value (an op argument, a structure)
_DTYPES = {d.name: d for d in _dt.ALL_DTYPES}
_INPUT_KINDS = {k.value: k for k in InputKind}
_SIZE_OPERATOR_NAMES = {fn: name for name, fn in SIZE_OPERATORS.items()}


class SerializationError(EmberError, RuntimeError):
    """A program file that cannot be loaded: damaged, altered, of another format or version, or
    naming something ember does not have. Nothing in the file was run."""


# ------------------------------------------------------------------------------------ saving
def save(ep: ExportedProgram, f) -> None:
    """Write `ep` to the path or binary file `f` (a path is written atomically)."""
    from ember.serialization import save as save_checkpoint

    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"ember.export.save: expected an ExportedProgram, got {type(ep).__name__}")
    program = json.dumps(_program_json(ep), separators=(",", ":"), allow_nan=False)
    save_checkpoint({"format": FORMAT, "version": VERSION, "program": program,
                     "state_dict": dict(ep.state_dict), "constants": dict(ep.constants)}, f)


def _program_json(ep: ExportedProgram) -> dict:
    nodes = []
    for n in ep.graph.nodes:
        entry = {"name": n.name, "op": n.op}
        if n.op == "call_function":
            if n.target is operator.getitem:
                entry["target"] = "getitem"
            elif n.target in _SIZE_OPERATOR_NAMES:
                entry["target"] = _SIZE_OPERATOR_NAMES[n.target]
            elif getattr(n.target, "name", None) in ALL_OPS and ALL_OPS[n.target.name] is n.target:
                entry["target"] = n.target.name
            else:
                raise TypeError(f"ember.export.save: node {n.name} calls {n.target!r}, which is not a registry op; "
                                "only programs of registry ops can be saved")
        elif n.op == "placeholder":
            entry["target"] = n.target
        elif n.op != "output":
            raise TypeError(f"ember.export.save: node {n.name} is a {n.op} node; a saved program has placeholders, "
                            "registry op calls and an output")
        entry["args"] = _encode(n.args, n.name)
        val = n.meta.get("val")
        if isinstance(val, Tensor):
            entry["val"] = [val.dtype.name, [_size_json(s) for s in val.shape]]
        elif isinstance(val, SymInt):
            entry["val"] = {"size": _size_json(val)}
        if n.meta.get("grad_enabled") is False:
            entry["grad"] = False
        nodes.append(entry)
    sig = ep.graph_signature
    return {
        "nodes": nodes,
        "signature": {
            "inputs": [{"kind": s.kind.value, "name": s.name, "target": s.target, "persistent": s.persistent}
                       for s in sig.input_specs],
            "outputs": [s.name for s in sig.output_specs],
            "buffers_to_mutate": dict(sig.buffers_to_mutate),
        },
        "in_spec": _encode_spec(ep.in_spec),
        "out_spec": _encode_spec(ep.out_spec),
        "guards": [{"path": g.path, "value": _encode(g.value, g.path)} if g.shape is None else
                   {"path": g.path, "shape": list(g.shape), "dtype": g.dtype.name, "device": str(g.device),
                    **({"hint": list(g.hint)} if g.hint is not None else {})}
                   for g in ep.guards],
        **({"dynamic": _dynamic_json(ep)} if ep.range_constraints else {}),
    }


def _size_json(size):
    """A size as JSON: an int, or a symbolic size's expression tree (symbolic.to_json)."""
    if isinstance(size, SymInt):
        from .symbolic import to_json

        return to_json(size.expr)
    return int(size)


def _dynamic_json(ep: ExportedProgram) -> dict:
    from .symbolic import to_json

    return {"ranges": {name: [lo, hi] for name, (lo, hi) in ep.range_constraints.items()},
            "guards": [to_json(g.expr) for g in ep.shape_guards]}


def _encode(value, where: str):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, Node):
        return {"node": value.name}
    if isinstance(value, list):
        return {"list": [_encode(v, where) for v in value]}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, where) for v in value]}
    if isinstance(value, _dt.dtype):
        return {"dtype": value.name}
    if isinstance(value, _device):
        return {"device": str(value)}
    raise TypeError(f"ember.export.save: {where} holds a {type(value).__name__}, which a program file cannot "
                    "store (it stores numbers, strings, bools, None, dtypes, devices and lists/tuples of them)")


def _encode_spec(spec: TreeSpec) -> dict:
    out: dict = {"kind": spec.kind, "children": [_encode_spec(c) for c in spec.children]}
    if spec.kind == "dict":
        if not all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in spec.context):
            raise TypeError(f"ember.export.save: the inputs or outputs hold a dict with keys {list(spec.context)!r}; "
                            "a program file stores str and int keys")
        out["keys"] = list(spec.context)
    elif spec.kind == "namedtuple":
        out["type"] = spec.context.__name__
        out["fields"] = list(spec.context._fields)
    return out


# ----------------------------------------------------------------------------------- loading
def _fail(reason: str) -> SerializationError:
    return SerializationError(f"ember.export.load: not a valid program file: {reason}")


def load(f) -> ExportedProgram:
    """Read a program written by `save` (a path or a binary file object)."""
    from ember.serialization import CheckpointError, _detect_format, load as load_checkpoint

    if isinstance(f, (str, os.PathLike)) and not os.path.isfile(f):
        raise FileNotFoundError(f"ember.export.load: no such file: {os.fspath(f)!r}")
    if _detect_format(_peek(f)) != "safetensors":
        raise _fail("this is a PyTorch checkpoint, not an ember program file")
    try:
        data = load_checkpoint(f)
    except CheckpointError as exc:
        raise _fail(str(exc)) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _fail(f"its contents are not tagged {FORMAT!r} (an ember.save checkpoint of something else?)")
    if data.get("version") != VERSION:
        raise _fail(f"format version {data.get('version')!r}; this ember reads version {VERSION}")
    if set(data) != {"format", "version", "program", "state_dict", "constants"}:
        raise _fail(f"unexpected top-level entries {sorted(set(data) - {'format', 'version'})}")
    state, constants = _tensor_dict(data["state_dict"], "state_dict"), _tensor_dict(data["constants"], "constants")
    if not isinstance(data["program"], str):
        raise _fail("the program is not JSON text")
    try:
        program = json.loads(data["program"], parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise _fail(f"the program is not valid JSON ({exc})") from None
    return _Reader(program, state, constants).program()


def _peek(f, n: int = 300) -> bytes:
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return fh.read(n)
    pos = f.tell()
    head = f.read(n)
    f.seek(pos)
    return head


def _refuse_constant(name: str):
    raise ValueError(f"the constant {name} is not JSON")


def _tensor_dict(value, what: str) -> dict:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, Tensor) for k, v in value.items()):
        raise _fail(f"{what} is not a dict of named tensors")
    return value


class _Reader:
    """Checks and rebuilds a program from its JSON, trusting nothing in it."""

    def __init__(self, program, state: dict, constants: dict) -> None:
        if not isinstance(program, dict):
            raise _fail("the program is not a JSON object")
        self.raw = program
        self.state = state
        self.constants = constants
        self.graph = Graph()
        self.nodes: dict[str, Node] = {}
        self.shape_env = None           # a dynamic program's symbols (symbolic.ShapeEnv)

    def program(self) -> ExportedProgram:
        raw = self.raw
        missing = {"nodes", "signature", "in_spec", "out_spec", "guards"} - set(raw)
        if missing:
            raise _fail(f"the program lacks {sorted(missing)}")
        if set(raw) - {"nodes", "signature", "in_spec", "out_spec", "guards", "dynamic"}:
            raise _fail(f"unexpected program entries {sorted(set(raw))}")
        guards = [self._guard(g) for g in _list(raw["guards"], "guards")]
        ranges, shape_guards = self._dynamic(raw.get("dynamic"), guards)
        for i, entry in enumerate(_list(raw["nodes"], "nodes")):
            self._node(i, entry)
        outputs = [n for n in self.graph.nodes if n.op == "output"]
        if len(outputs) != 1 or self.graph.nodes[-1] is not outputs[0]:
            raise _fail("the graph must end with its one output node")
        signature = self._signature(raw["signature"])
        in_spec, out_spec = self._spec(raw["in_spec"], 0), self._spec(raw["out_spec"], 0)
        if len(guards) != in_spec.num_leaves:
            raise _fail(f"{len(guards)} input guards for {in_spec.num_leaves} inputs")
        if sum(g.shape is not None for g in guards) != len(signature.user_inputs):
            raise _fail("the tensor inputs' guards do not match the user-input placeholders")
        if out_spec.num_leaves != len(outputs[0].args[0]):
            raise _fail("the output structure does not match the output node")
        return ExportedProgram(self.graph, signature, self.state, self.constants, in_spec, out_spec, guards,
                               ranges, shape_guards)

    # -- nodes ----------------------------------------------------------------------------------
    def _node(self, i: int, entry) -> None:
        if not isinstance(entry, dict) or not {"name", "op", "args"} <= set(entry) or \
                set(entry) - {"name", "op", "target", "args", "val", "grad"} or entry.get("grad", False) is not False:
            raise _fail(f"node {i} is not an object with name, op, target, args")
        name, op = entry["name"], entry["op"]
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name in self.nodes:
            raise _fail(f"node {i} has a bad or repeated name {name!r}")
        args = self._value(entry["args"], f"node {name}", 0)
        if not isinstance(args, tuple):
            raise _fail(f"node {name}'s args are not a tuple")
        if not isinstance(op, str):
            raise _fail(f"node {name} has op {_short(op)}")
        if op == "placeholder":
            target = entry.get("target")
            if not isinstance(target, str) or args:
                raise _fail(f"placeholder {name} needs a string target and no args")
            node = self.graph.create_node("placeholder", target, (), name=name)
        elif op == "call_function":
            node = self.graph.create_node("call_function", self._target(name, entry.get("target"), args), args,
                                          name=name)
        elif op == "output":
            if len(args) != 1 or not isinstance(args[0], tuple):
                raise _fail("the output node's args must be one tuple")
            node = self.graph.create_node("output", "output", args, name=name)
        else:
            raise _fail(f"node {name} has op {op!r}; a program has placeholder, call_function and output nodes")
        if node.name != name:
            raise _fail(f"node name {name!r} is not usable")
        if "val" in entry:
            node.meta["val"] = self._val(name, entry["val"])
        if "grad" in entry:
            node.meta["grad_enabled"] = False
        self.nodes[name] = node

    def _target(self, name: str, target, args: tuple):
        if target == "getitem":
            if len(args) != 2 or not isinstance(args[0], Node) or type(args[1]) is not int:
                raise _fail(f"node {name}: getitem takes a node and an index")
            return operator.getitem
        if type(target) is str and target in SIZE_OPERATORS:
            arity = 1 if target == "operator.neg" else 2
            if self.shape_env is None or len(args) != arity or \
                    not all(isinstance(a, Node) or type(a) is int for a in args) or \
                    (target == "sym_size" and (not isinstance(args[0], Node) or type(args[1]) is not int)):
                raise _fail(f"node {name}: {target} takes {arity} sizes (a dynamic program's nodes or ints)")
            return SIZE_OPERATORS[target]
        op = ALL_OPS.get(target) if type(target) is str else None
        if op is None:
            raise _fail(f"node {name} calls {target!r}, which is not an op of this ember's registry")
        if len(args) != len(op.arg_names):
            raise _fail(f"node {name} gives {target} {len(args)} arguments; its schema has {len(op.arg_names)}")
        return op

    def _val(self, name: str, val):
        from ember._generated import functions as F

        if isinstance(val, dict) and set(val) == {"size"} and self.shape_env is not None:
            return self._size(val["size"], name)
        if not (isinstance(val, list) and len(val) == 2 and type(val[0]) is str and val[0] in _DTYPES
                and isinstance(val[1], list) and len(val[1]) <= 64):
            raise _fail(f"node {name} has a bad value description {_short(val)}")
        shape = tuple(self._size(s, name) for s in val[1])
        return F.empty_strided(shape, (0,) * len(shape), dtype=_DTYPES[val[0]], device="meta")

    def _size(self, tree, where: str):
        """A size in a value description: an int, or (in a dynamic program) a size expression."""
        if type(tree) is int and 0 <= tree < 2**62:
            return tree
        if self.shape_env is None or isinstance(tree, (bool, int)):
            raise _fail(f"node {where} has a bad size {_short(tree)}")
        from .symbolic import from_json

        try:
            expr = from_json(tree, self._symbols)
        except (ValueError, TypeError) as exc:
            raise _fail(f"node {where}: {exc}") from None
        return int(expr) if expr.is_Integer else SymInt(expr, self.shape_env)

    def _value(self, v, where: str, depth: int):
        if depth > _MAX_DEPTH:
            raise _fail(f"{where} is nested more than {_MAX_DEPTH} levels deep")
        if v is None or isinstance(v, (bool, str)) or type(v) is int:
            return v
        if not isinstance(v, dict) or len(v) != 1:
            raise _fail(f"{where} holds {_short(v)}, which is not a program value")
        (kind, x), = v.items()
        if kind == "node":
            if type(x) is not str or x not in self.nodes:
                raise _fail(f"{where} reads node {x!r}, which is not defined before it")
            return self.nodes[x]
        if kind == "float" and isinstance(x, str):
            try:
                return float(x)
            except ValueError:
                raise _fail(f"{where} holds a bad float {x!r}") from None
        if kind in ("list", "tuple") and isinstance(x, list):
            items = [self._value(e, where, depth + 1) for e in x]
            return items if kind == "list" else tuple(items)
        if kind == "dtype" and type(x) is str and x in _DTYPES:
            return _DTYPES[x]
        if kind == "device" and isinstance(x, str):
            try:
                return _device(x)
            except Exception:
                raise _fail(f"{where} names the device {x!r}, which is not a device") from None
        raise _fail(f"{where} holds {_short(v)}, which is not a program value")

    # -- signature, structures, guards ----------------------------------------------------------------
    def _signature(self, raw) -> ExportGraphSignature:
        if not isinstance(raw, dict) or set(raw) != {"inputs", "outputs", "buffers_to_mutate"}:
            raise _fail("the signature is not {inputs, outputs, buffers_to_mutate}")
        placeholders = [n.name for n in self.graph.nodes if n.op == "placeholder"]
        specs = []
        for s in _list(raw["inputs"], "signature inputs"):
            if not (isinstance(s, dict) and set(s) == {"kind", "name", "target", "persistent"}
                    and type(s["kind"]) is str and s["kind"] in _INPUT_KINDS and s["persistent"] in (None, True, False)
                    and (s["target"] is None or type(s["target"]) is str)):
                raise _fail(f"bad input spec {_short(s)}")
            kind = _INPUT_KINDS[s["kind"]]
            if (kind is InputKind.USER_INPUT) != (s["target"] is None) or \
                    (kind is InputKind.BUFFER) != (s["persistent"] is not None):
                raise _fail(f"bad input spec {_short(s)}")
            table = self.constants if kind is InputKind.CONSTANT_TENSOR or s["persistent"] is False else self.state
            if kind is not InputKind.USER_INPUT and s["target"] not in table:
                raise _fail(f"input {s['name']!r} reads {s['target']!r}, which the file does not hold")
            specs.append(InputSpec(kind, s["name"], s["target"], s["persistent"]))
        if [s.name for s in specs] != placeholders:
            raise _fail("the input specs do not name the graph's placeholders in order")
        outputs = self.graph.nodes[-1].args[0] if self.graph.nodes else ()
        names = _list(raw["outputs"], "signature outputs")
        if names != [getattr(o, "name", repr(o)) for o in outputs]:
            raise _fail("the output specs do not name the output node's values")
        mutate = raw["buffers_to_mutate"]
        if not isinstance(mutate, dict) or not all(type(k) is str and k in self.nodes and isinstance(b, str)
                                                   for k, b in mutate.items()):
            raise _fail("buffers_to_mutate does not map nodes to buffer names")
        return ExportGraphSignature(specs, [OutputSpec(OutputKind.USER_OUTPUT, n) for n in names], dict(mutate))

    def _spec(self, raw, depth: int) -> TreeSpec:
        if depth > _MAX_DEPTH or not isinstance(raw, dict) or raw.get("kind") not in \
                ("leaf", "none", "tuple", "list", "dict", "namedtuple"):
            raise _fail(f"bad input/output structure {_short(raw)}")
        children = tuple(self._spec(c, depth + 1) for c in _list(raw.get("children"), "structure children"))
        kind = raw["kind"]
        if kind in ("leaf", "none"):
            if children:
                raise _fail(f"a {kind} has no children")
            return TreeSpec(kind)
        if kind == "dict":
            keys = _list(raw.get("keys"), "dict keys")
            if len(keys) != len(children) or not all(type(k) in (str, int) for k in keys) or \
                    len(set(keys)) != len(keys):
                raise _fail("a dict's keys do not match its values")
            return TreeSpec("dict", tuple(keys), children)
        if kind == "namedtuple":
            name, fields = raw.get("type"), _list(raw.get("fields"), "namedtuple fields")
            if not (isinstance(name, str) and len(fields) == len(children)):
                raise _fail(f"bad named tuple {_short(raw)}")
            try:
                return TreeSpec("namedtuple", collections.namedtuple(name, fields), children)
            except (TypeError, ValueError) as exc:
                raise _fail(f"bad named tuple {_short(raw)} ({exc})") from None
        return TreeSpec(kind, None, children)

    def _guard(self, raw) -> InputGuard:
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
            raise _fail(f"bad input guard {_short(raw)}")
        if set(raw) == {"path", "value"}:
            return InputGuard(raw["path"], value=self._value(raw["value"], raw["path"], 0))
        shape = _list(raw.get("shape"), "guard shape")
        hint = _list(raw["hint"], "guard hint") if "hint" in raw else None
        if set(raw) - {"hint"} != {"path", "shape", "dtype", "device"} or type(raw["dtype"]) is not str or \
                raw["dtype"] not in _DTYPES or len(shape) > 64 or \
                not all((type(s) is int and 0 <= s < 2**62) or (type(s) is str and s.isidentifier()) for s in shape) or \
                (hint is not None and (len(hint) != len(shape) or not all(type(h) is int and 0 <= h < 2**62 and
                                                                          (type(s) is str or h == s)
                                                                          for s, h in zip(shape, hint)))) or \
                (hint is None) != all(type(s) is int for s in shape):
            raise _fail(f"bad input guard {_short(raw)}")
        device = self._value({"device": raw["device"]}, raw["path"], 0)
        return InputGuard(raw["path"], tuple(shape), _DTYPES[raw["dtype"]], device,
                          hint=tuple(hint) if hint is not None else None)

    def _dynamic(self, raw, guards: list) -> tuple[dict, list]:
        """A dynamic program's ranges and shape guards; its symbols, made again from the inputs' guards."""
        names = {s for g in guards if g.shape is not None for s in g.shape if type(s) is str}
        if raw is None:
            if names:
                raise _fail("input guards name dynamic dimensions, but the program has none")
            return {}, []
        from .dynamic_shapes import Dim
        from .symbolic import ShapeEnv, ShapeGuard, evaluate, from_json

        if not isinstance(raw, dict) or set(raw) != {"ranges", "guards"} or not isinstance(raw["ranges"], dict):
            raise _fail("the dynamic dimensions are not {ranges, guards}")
        ranges = {}
        for name, bounds in raw["ranges"].items():
            if not (isinstance(bounds, list) and len(bounds) == 2 and type(bounds[0]) is int and
                    (bounds[1] is None or type(bounds[1]) is int)):
                raise _fail(f"dynamic dimension {_short(name)} has a bad range {_short(bounds)}")
            ranges[name] = tuple(bounds)
        if set(ranges) != names:
            raise _fail("the dynamic dimensions' ranges do not match the input guards")
        self.shape_env = ShapeEnv()
        try:
            dims = {name: Dim(name, min=lo, max=hi) for name, (lo, hi) in ranges.items()}
            for g in guards:
                for d, s in enumerate(g.shape or ()):
                    if type(s) is str:
                        self.shape_env.create(dims[s], g.hint[d], (g.path, d))
            self._symbols = {name: info.symbol for name, info in self.shape_env.symbols.items()}
            shape_guards = [ShapeGuard(from_json(t, self._symbols)) for t in _list(raw["guards"], "shape guards")]
        except (ValueError, TypeError) as exc:
            raise _fail(f"bad dynamic dimensions ({exc})") from None
        if not all(getattr(g.expr, "is_Relational", False) for g in shape_guards):
            raise _fail("a shape guard is not a comparison")
        hints = {name: info.hint for name, info in self.shape_env.symbols.items()}
        if not all(evaluate(g.expr, hints) for g in shape_guards):
            raise _fail("the example sizes break the program's shape guards")
        return ranges, shape_guards


def _list(value, what: str) -> list:
    if not isinstance(value, list):
        raise _fail(f"{what} is not a list")
    return value


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

