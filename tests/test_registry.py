"""The registry loader, the generator and the generated bindings."""
from __future__ import annotations

import functools
import inspect
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from codegen.registry import REGISTRY_PATH, RegistryError, SourceIndex, load_registry

ROOT = Path(__file__).resolve().parent.parent

GOOD = """
families:
  pointwise: {promotion: default, shape: pointwise, autocast: promote, variants: [function, method], tags: [core]}
ops:
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  family: pointwise
  impl: primitive
  autograd:
    self: grad
    other: maybe_multiply(grad, alpha)
  doc: Adds.
"""


@functools.lru_cache(maxsize=None)
def _sources() -> SourceIndex:
    """The source tree's index, scanned once per module (a scan parses every shape rule and kernel module, ~0.4 s);
    the loader only reads it."""
    return SourceIndex.scan(ROOT)


def load_text(tmp_path, text: str):
    path = tmp_path / "ops_registry.yaml"
    path.write_text(text)
    return load_registry(path, _sources())


def test_real_registry_loads():
    registry = load_registry(REGISTRY_PATH)
    names = {op.name for op in registry.ops}
    for required in ("add.Tensor", "add_.Tensor", "div.Tensor_mode", "max.dim", "softmax.int", "as_strided",
                     "randint.low", "_to_copy", "copy_"):
        assert required in names
    assert len(registry.ops) == len(ember.dispatcher.ALL_OPS)


def test_minimal_registry_is_valid(tmp_path):
    assert [op.name for op in load_text(tmp_path, GOOD).ops] == ["add.Tensor"]


@pytest.mark.parametrize("change, message", [
    (("  doc: Adds.\n", "  doc: Adds.\n  colour: red\n"), "unknown key(s) ['colour']"),
    (("add.Tensor(Tensor self", "add.Tensor(Tensr self"), "bad schema: unknown type 'Tensr'"),
    (("family: pointwise\n", "family: pointwise\n  shape: no_such_rule\n"), "unknown shape rule 'no_such_rule'"),
    (("maybe_multiply(grad, alpha)", "frobnicate(grad)"), "calls 'frobnicate'"),
    (("other: maybe_multiply(grad, alpha)", "other: grad * beta"), "uses 'beta'"),
    (("    self: grad\n", "    selff: grad\n"), "autograd names 'selff'"),
    (("  doc: Adds.\n", ""), "missing `doc`"),
    (("impl: primitive\n", "impl: composite\n"), "composite op is differentiated"),
    (("  impl: primitive\n", ""), "missing `impl` (every entry states how it is implemented"),
    (("family: pointwise\n", "family: pointwise\n  autocast: sometimes\n"), "`autocast` must be one of"),
    (("other: maybe_multiply(grad, alpha)", "other: maybe_multiply(grad,"), "not a valid expression"),
    (("family: pointwise\n", "family: pointwise\n  inplace_variants: [function]\n"), "needs `inplace: true`"),
    (("family: pointwise\n", "family: pointwise\n  inplace: true\n  inplace_variants: [global]\n"),
     "`inplace_variants` must be a subset"),
    (("    self: grad\n    other: maybe_multiply(grad, alpha)\n", "    self, other: maybe_multiply(grad, alpha)\n"),
     "must pass grad_input_mask"),
    (("    self: grad\n", "    self: maybe_multiply(grad, grad_input_mask)\n"), "only defined in a grouped formula"),
    (("    self: grad\n    other: maybe_multiply(grad, alpha)\n",
      "    self, other: maybe_multiply(grad if grad_input_mask[2] else None, grad_input_mask)\n"),
     "indexes grad_input_mask with 2; expected a position 0..1"),
    (("  doc: Adds.\n", "  doc: Adds.\n  scalar: self + frob(other)\n"), "`scalar`: unknown function 'frob'"),
    (("  doc: Adds.\n", "  doc: Adds.\n  scalar: self + beta\n"), "`scalar`: unknown name 'beta'"),
    (("  doc: Adds.\n", "  doc: Adds.\n  scalar: self[0]\n"), "`scalar`: unsupported syntax 'self[0]'"),
    (("  doc: Adds.\n", "  doc: Adds.\n  scalar: \"self if other == 1 else other\"\n"),
     "a choice must compare a non-Tensor argument"),
    (("  doc: Adds.\n", "  doc: Adds.\n  scalar: exp(self, other)\n"), "exp() takes 1 operand(s), got 2"),
    (("  doc: Adds.\n", "  doc: Adds.\n  aliases: [_plus]\n"), "`aliases` are public Python names"),
    (("  doc: Adds.\n", "  doc: Adds.\n  aliases: [add]\n"), "alias 'add' is already the name of 'add'"),
])
def test_malformed_entries_name_the_entry_line_and_problem(tmp_path, change, message):
    old, new = change
    assert old in GOOD
    with pytest.raises(RegistryError) as info:
        load_text(tmp_path, GOOD.replace(old, new, 1))
    text = str(info.value)
    assert message in text
    assert "ops_registry.yaml:5:" in text and "add.Tensor" in text


def test_scalar_formulas_become_trees_over_argument_positions(tmp_path):
    text = GOOD.replace("  doc: Adds.\n", "  doc: Adds.\n  scalar: self + alpha * other\n", 1)
    (op,) = load_text(tmp_path, text).ops
    assert op.scalar == ("add", ("arg", 0), ("mul", ("arg", 2), ("arg", 1)))
    gelu = ember.dispatcher.ALL_OPS["gelu"].scalar               # a choice on `approximate`, decided per kernel
    assert gelu[0] == "if" and gelu[1] == (1, "==", "tanh")
    assert ember.dispatcher.ALL_OPS["div.Tensor_mode"].scalar[3] == ("none",)   # rounding modes: no formula
    assert ember.dispatcher.ALL_OPS["add_.Tensor"].scalar is None  # in-place twins are not fused


def test_inplace_variants_choose_the_twins_public_forms(tmp_path):
    def twin(extra: str):
        text = GOOD.replace("family: pointwise\n", "family: pointwise\n  inplace: true\n" + extra, 1)
        return {op.name: op for op in load_text(tmp_path, text).ops}
    assert twin("")["add_.Tensor"].variants == ("method",)          # the default: Tensor.add_ only
    ops = twin("  inplace_variants: [function]\n")
    assert ops["add_.Tensor"].variants == ("function",) and ops["add.Tensor"].variants == ("function", "method")


def test_inplace_function_forms_follow_torch():
    """ember.name_ exists only where torch.name_ does; and those of erf and dropout do."""
    torch = pytest.importorskip("torch")
    twins = {op.schema.name for op in load_registry(REGISTRY_PATH).ops if op.inplace_of}
    assert [n for n in sorted(twins) if hasattr(ember, n) and not hasattr(torch, n)] == []
    for name in ("erf_", "dropout_"):
        assert name in twins and hasattr(ember, name)
    assert not hasattr(ember.Tensor, "dropout_") and not hasattr(torch.Tensor, "dropout_")
    x = ember.tensor([0.5, -1.0])
    assert ember.erf_(x) is x
    np.testing.assert_allclose(x.numpy(), torch.erf_(torch.tensor([0.5, -1.0])).numpy(), rtol=1e-6)
    y = ember.ones(6)
    assert ember.dropout_(y, 1.0, True) is y and not y.numpy().any()
    assert ember.dropout_(ember.ones(3), 0.5, False).numpy().tolist() == [1.0, 1.0, 1.0]


def test_aliases_are_torchs_other_names_for_the_same_functions():
    """Every registry alias is a torch function (and, where the op has a method, a torch method, in place too)
    giving what the aliased op gives: ember binds the same function under both names."""
    torch = pytest.importorskip("torch")
    ops = load_registry(REGISTRY_PATH).ops
    x = np.array([[0.5, -0.25, 0.75], [-0.5, 0.125, 0.9]], np.float32)
    for op in (o for o in ops if o.aliases):
        for alias in op.aliases:
            assert hasattr(torch, alias), alias
            if "function" in op.variants:
                assert getattr(ember, alias) is getattr(ember, op.schema.name)
            if "method" in op.variants:
                assert hasattr(torch.Tensor, alias) and getattr(ember.Tensor, alias) is getattr(ember.Tensor, op.schema.name)
    calls = {"absolute": (), "negative": (), "arccos": (), "arcsin": (), "arctan": (), "arcsinh": (), "arctanh": (),
             "fix": (), "sgn": (), "multiply": (x,), "subtract": (x,), "divide": (x + 2,), "true_divide": (x + 2,),
             "not_equal": (x,), "greater": (x,), "greater_equal": (x,), "less": (x,), "less_equal": (x,),
             "arctan2": (x + 1,), "clip": (-0.3, 0.3), "swapaxes": (0, 1), "swapdims": (1, 0)}
    for alias, extra in calls.items():
        e_args = [ember.tensor(a) if isinstance(a, np.ndarray) else a for a in extra]
        t_args = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in extra]
        got, want = getattr(ember.tensor(x), alias)(*e_args), getattr(torch.tensor(x), alias)(*t_args)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, err_msg=alias)
    e, t = ember.tensor(x + 2), torch.tensor(x + 2)
    assert e.arccosh_() is e and e.clip_(max=2.3) is e
    np.testing.assert_allclose(e.numpy(), t.arccosh_().clip_(max=2.3).numpy(), rtol=1e-6)
    assert tuple(ember.concatenate([ember.tensor(x)] * 2, 1).shape) == tuple(torch.concat([torch.tensor(x)] * 2, 1).shape)


def test_duplicate_entry_is_reported(tmp_path):
    text = GOOD + GOOD.split("ops:\n", 1)[1]
    with pytest.raises(RegistryError, match=r"entry 'add.Tensor': duplicate of the entry at line 5"):
        load_text(tmp_path, text)


def test_codegen_check_detects_stale_output(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", ".asv", "*.egg-info"))
    fresh = subprocess.run([sys.executable, "-m", "codegen", "--check"], cwd=copy, capture_output=True, text=True)
    assert fresh.returncode == 0, fresh.stderr
    target = copy / "ember" / "_generated" / "functions.py"
    target.write_text(target.read_text() + "\n# hand edit\n")
    stale = subprocess.run([sys.executable, "-m", "codegen", "--check"], cwd=copy, capture_output=True, text=True)
    assert stale.returncode == 1
    assert "stale: ember/_generated/functions.py" in stale.stderr


def test_bindings_have_real_signatures_and_docstrings():
    sig = inspect.signature(ember.add)
    assert list(sig.parameters) == ["input", "other", "alpha"]
    assert sig.parameters["alpha"].kind is inspect.Parameter.KEYWORD_ONLY and sig.parameters["alpha"].default == 1
    assert "Schema: ``add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor``" in ember.add.__doc__
    sig = inspect.signature(ember.Tensor.sum)
    assert list(sig.parameters) == ["self", "dim", "keepdim", "dtype"]
    assert inspect.signature(ember.zeros).parameters["size"].kind is inspect.Parameter.VAR_POSITIONAL
    assert inspect.signature(ember.Tensor.view).parameters["size"].kind is inspect.Parameter.VAR_POSITIONAL


def test_stubs_and_ops_doc_are_generated():
    stub = (ROOT / "ember" / "_generated" / "functions.pyi").read_text()
    assert "def add(input: Tensor | Number, other: Tensor | Number, *, alpha: Number = ...) -> Tensor: ..." in stub
    doc = (ROOT / "docs" / "ops.md").read_text()
    assert "| `add.Tensor` | native | native |" in doc
    assert "| `softmax.int` |" in doc


def test_core_aten_list_is_torchs_and_every_exclusion_has_a_reason():
    """codegen/core_aten.yaml lists exactly the ops torch 2.13 tags core, each covered or excluded."""
    torch = pytest.importorskip("torch")
    from codegen import core_aten

    tagged = set()       # every aten op (dir(torch.ops.aten) lists only those loaded so far)
    for name in {s.name.split("::")[1] for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::")}:
        packet = getattr(torch.ops.aten, name, None)
        if packet is not None and any(torch.Tag.core in getattr(packet, o).tags for o in packet.overloads()):
            tagged.add(name)
    listed = core_aten.load()
    assert set(listed) == tagged
    rows = core_aten.coverage(load_registry())
    for row in rows:
        if row.status == "excluded":
            assert len(row.excluded) > 20, row
    text = (Path(__file__).parents[1] / "docs" / "ops.md").read_text()
    covered, applicable, _ = core_aten.summary(rows)
    assert f"**{covered} of the {applicable} applicable covered" in text
    assert covered >= 0.95 * applicable, [r.name for r in rows if r.status == "missing"]     # the coverage bar


def test_an_ops_schema_is_frozen_and_its_kernel_table_is_not():
    import dataclasses

    from ember.dispatcher.operator import ALL_OPS
    from ember.dispatcher.schema import OpSchema

    op = ALL_OPS["add.Tensor"]
    assert isinstance(op, OpSchema)
    for field, value in (("promotion", "none"), ("tensor_args", ()), ("alpha_arg", None), ("n_outputs", 2)):
        with pytest.raises(dataclasses.FrozenInstanceError, match=f"'{field}': add.Tensor's schema is frozen"):
            setattr(op, field, value)
    assert op.promotion == "default" and op.tensor_args == (0, 1) and op.alpha_arg == 2 and op.n_outputs == 1
    schema_fields = {f.name for f in dataclasses.fields(OpSchema)}
    assert {"kernels", "functionality", "cache", "shape_rule", "decomposition"}.isdisjoint(schema_fields)
    saved = op.decomposition
    op.decomposition = saved            # the kernel table is set at wiring and registration
    assert op.decomposition is saved


def test_schemas_render_as_written_and_in_place_twins_mark_self_written():
    from codegen.schema import parse_schema

    registry = load_registry(REGISTRY_PATH)
    twins = [op for op in registry.ops if op.inplace_of]
    assert len(twins) > 50
    for op in registry.ops:
        assert parse_schema(op.schema.render()) == op.schema, op.name
        assert op.schema.render() == op.schema.text, op.name
    for op in twins:
        assert op.schema.text.startswith(op.name + "(Tensor(a!) "), op.schema.text
        assert op.schema.text.endswith(") -> Tensor(a!)"), op.schema.text
    assert ember.dispatcher.ALL_OPS["add_.Tensor"].schema == \
        "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)"
