"""ember.export.save / load: one file, no pickle, runs without the model's source, refuses bad files."""
from __future__ import annotations

import copy
import io
import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.export import SerializationError, export, load, save

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import char_gpt  # noqa: E402

nn = ember.nn


@pytest.fixture(scope="module")
def mlp_program():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)).eval()
    return export(model, (ember.randn(3, 4),), {})


def _bytes(ep) -> bytes:
    buf = io.BytesIO()
    save(ep, buf)
    return buf.getvalue()


def test_a_saved_program_runs_in_a_process_that_cannot_import_the_model(tmp_path):
    ember.manual_seed(1)
    cfg = char_gpt.GPTConfig(vocab_size=20, block_size=8, n_layer=2, n_head=2, n_embd=16, dropout=0.0)
    model = char_gpt.gpt_model(ember)(cfg).eval()
    idx = ember.randint(0, 20, (2, 8))
    save(export(model, (idx,)), tmp_path / "gpt.ember")
    ember.save({"idx": idx, "logits": model(idx)[0].detach()}, tmp_path / "io.ember")
    script = textwrap.dedent(f"""
        import sys
        sys.modules["char_gpt"] = None          # the model's source is not importable here
        import ember
        from ember.export import load
        ep = load({str(tmp_path / "gpt.ember")!r})
        data = ember.load({str(tmp_path / "io.ember")!r})
        logits, loss = ep.module()(data["idx"])
        assert loss is None
        assert bool((logits == data["logits"]).all()), "different logits"
        assert "char_gpt" not in [m for m in sys.modules if sys.modules[m] is not None]
        print("ok", tuple(logits.shape))
        """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok (2, 8, 20)"


def test_save_then_load_keeps_the_program(mlp_program, tmp_path):
    path = tmp_path / "mlp.ember"
    save(mlp_program, path)
    loaded = load(path)
    x = ember.randn(3, 4)
    np.testing.assert_array_equal(loaded.module()(x).detach().numpy(), mlp_program.module()(x).detach().numpy())
    assert loaded.graph_module.code == mlp_program.graph_module.code
    assert str(loaded.graph_signature) == str(mlp_program.graph_signature)
    assert list(loaded.state_dict) == list(mlp_program.state_dict)
    assert [g.path for g in loaded.guards] == ["args[0]"]
    with pytest.raises(AssertionError, match=r"args\[0\]\.size\(\)\[0\] == 3"):
        loaded.module()(ember.randn(5, 4))
    assert path.read_bytes()[8:9] == b"{"            # a safetensors header, no pickle
    assert b"ember.export" in path.read_bytes()[:4096]


def test_saving_refuses_what_a_file_cannot_hold(mlp_program):
    with pytest.raises(TypeError, match="expected an ExportedProgram"):
        save(object(), io.BytesIO())
    with pytest.raises(FileNotFoundError):
        load("/nonexistent/program.ember")


# --------------------------------------------------------------------------------------- fuzzing
SENTINEL = "ember_export_fuzz_sentinel"


def _write(program: dict | str, base: dict, **top) -> bytes:
    data = {"format": "ember.export", "version": 1, "state_dict": base["state_dict"], "constants": base["constants"],
            "program": program if isinstance(program, str) else json.dumps(program)}
    data.update(top)
    buf = io.BytesIO()
    ember.save(data, buf)
    return buf.getvalue()


def _hostile(rng: random.Random, program: dict, base: dict) -> bytes:
    p = copy.deepcopy(program)
    nodes = p["nodes"]
    calls = [n for n in nodes if n["op"] == "call_function"]
    kind = rng.randrange(16)
    if kind == 0:
        rng.choice(calls)["target"] = rng.choice([f"{SENTINEL}.boom", "os.system", "builtins.eval", "__import__",
                                                  "", 7, None, ["add.Tensor"], "add.Tensor.__class__"])
    elif kind == 1:
        rng.choice(calls)["args"] = {"tuple": [{"node": rng.choice(["nope", nodes[-2]["name"], "__builtins__"])}]}
    elif kind == 2:
        deep = {"node": "x"}
        for _ in range(rng.randrange(70, 400)):
            deep = {"list": [deep]}
        rng.choice(calls)["args"] = {"tuple": [deep]}
    elif kind == 3:
        rng.choice(nodes)["name"] = rng.choice(["1x", "a b", "lambda", "", 5, None, "x;import os"])
    elif kind == 4:
        rng.choice(nodes)["op"] = rng.choice(["call_module", "call_method", "get_attr", "exec", 1])
    elif kind == 5:
        del rng.choice(nodes)[rng.choice(["name", "op", "args"])]
    elif kind == 6:
        node = rng.choice(calls)
        node["args"] = {"tuple": node["args"]["tuple"] + [1]}
    elif kind == 7:
        p["signature"]["inputs"][rng.randrange(len(p["signature"]["inputs"]))]["target"] = "not.in.the.file"
    elif kind == 8:
        p["guards"] = p["guards"] + [{"path": "args[9]", "value": 1}]
    elif kind == 9:
        p[rng.choice(["nodes", "signature", "in_spec", "out_spec", "guards"])] = rng.choice([None, 1, "x", {}])
    elif kind == 10:
        return _write(json.dumps(p)[: rng.randrange(1, 200)], base)
    elif kind == 11:
        return _write(program, base, version=rng.choice([0, 2, "1", None]))
    elif kind == 12:
        return _write(program, base, format=rng.choice(["ember", "pickle", None]))
    elif kind == 13:
        rng.choice(calls)["args"] = {"tuple": [{"float": "__import__('os')"}] * 3}
    elif kind == 14:
        nodes.append(copy.deepcopy(nodes[0]))          # a node after the output, with a repeated name
    else:
        p["in_spec"] = {"kind": "namedtuple", "type": "T;x", "fields": ["a"], "children": [{"kind": "leaf",
                                                                                             "children": []}]}
    return _write(p, base)


def test_a_thousand_damaged_or_hostile_files_are_refused_and_run_nothing(mlp_program):
    good = _bytes(mlp_program)
    base = ember.load(io.BytesIO(good))
    program = json.loads(base["program"])
    rng = random.Random(20)
    files = []
    for _ in range(300):
        files.append(good[: rng.randrange(0, len(good))])                       # truncated
    for _ in range(300):
        flipped = bytearray(good)
        for _ in range(rng.randrange(1, 4)):
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)       # bit flips
        files.append(bytes(flipped))
    for _ in range(400):
        files.append(_hostile(rng, program, base))                               # valid checkpoint, hostile JSON
    assert len(files) == 1000
    for i, data in enumerate(files):
        with pytest.raises(SerializationError):
            load(io.BytesIO(data))
    assert SENTINEL not in sys.modules
    assert issubclass(SerializationError, RuntimeError)
    # and the original still loads
    load(io.BytesIO(good))


def test_the_error_names_the_problem(mlp_program):
    base = ember.load(io.BytesIO(_bytes(mlp_program)))
    program = json.loads(base["program"])
    program["nodes"][-2]["target"] = "os.system"
    with pytest.raises(SerializationError, match=r"calls 'os.system', which is not an op of this ember's registry"):
        load(io.BytesIO(_write(program, base)))
    with pytest.raises(SerializationError, match="format version 2; this ember reads version 1"):
        load(io.BytesIO(_write(json.loads(base["program"]), base, version=2)))
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save({"a": torch.ones(2)}, buf)
    with pytest.raises(SerializationError, match="PyTorch checkpoint"):
        load(io.BytesIO(buf.getvalue()))


def test_every_header_length_loads():
    """A file's first byte is its header length's low byte; 0x80 there is not a pickle (one name in 32)."""
    sizes = set()
    for n in range(1, 40):
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_parameter("w" * n, nn.Parameter(ember.ones(3)))

            def forward(self, x):
                return x * getattr(self, "w" * n)
        data = _bytes(export(M(), (ember.ones(3),)))
        sizes.add(data[0])
        load(io.BytesIO(data))
    assert 0x80 in sizes


def test_named_tuple_inputs_and_no_grad_regions_survive_save_and_load():
    import collections

    Pair = collections.namedtuple("Pair", "a b")

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(2))

        def forward(self, p):
            with ember.no_grad():
                t = p.a * self.w
            return t + p.b * self.w

    buf = io.BytesIO()
    save(export(M(), (Pair(ember.ones(2), ember.ones(2)),)), buf)
    run = load(io.BytesIO(buf.getvalue())).module()
    run(Pair(ember.ones(2), ember.full((2,), 3.0))).sum().backward()
    assert run.w.grad.tolist() == [3.0, 3.0]                 # the no_grad product adds nothing


@pytest.mark.parametrize("mutate", [
    lambda p: p["nodes"][-2].__setitem__("val", [["float32"], [2]]),
    lambda p: p["nodes"][-2]["args"]["tuple"].__setitem__(0, {"node": ["x"]}),
    lambda p: p["nodes"][-2]["args"]["tuple"].__setitem__(0, {"dtype": ["x"]}),
    lambda p: p["signature"]["inputs"][0].__setitem__("kind", ["parameter"]),
    lambda p: p["nodes"][-2].__setitem__("target", ["linear"]),
    lambda p: p["guards"][0].__setitem__("dtype", ["float32"]),
    lambda p: p.__setitem__("in_spec", {"kind": "namedtuple", "type": "T", "fields": ["_a"],
                                        "children": [{"kind": "leaf", "children": []}]}),
    lambda p: p.__setitem__("in_spec", {"kind": "namedtuple", "type": "class", "fields": ["a"],
                                        "children": [{"kind": "leaf", "children": []}]}),
    lambda p: p.__setitem__("in_spec", {"kind": "dict", "keys": ["a", "a"], "children": [
        {"kind": "leaf", "children": []}, {"kind": "leaf", "children": []}]}),
    lambda p: p["nodes"][-2].__setitem__("grad", True),
])
def test_malformed_fields_are_serialization_errors(mlp_program, mutate):
    base = ember.load(io.BytesIO(_bytes(mlp_program)))
    program = json.loads(base["program"])
    mutate(program)
    with pytest.raises(SerializationError):
        load(io.BytesIO(_write(program, base)))


class _Flatten(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 3)

    def forward(self, x):
        b, t, _ = x.shape
        y = self.proj(x).reshape(b * t, 3) * (t // 2)
        return y if t > 2 else -y


@pytest.fixture(scope="module")
def dynamic_program():
    ember.manual_seed(5)
    return export(_Flatten(), (ember.randn(3, 5, 4),),
                  dynamic_shapes={"x": {0: ember.export.Dim("b", max=64), 1: ember.export.Dim("t")}})


def test_a_dynamic_program_round_trips(dynamic_program):
    loaded = load(io.BytesIO(_bytes(dynamic_program)))
    assert loaded.range_constraints == dynamic_program.range_constraints
    assert [str(g) for g in loaded.shape_guards] == ["t > 2"]
    x = ember.randn(7, 6, 4)
    np.testing.assert_array_equal(loaded.module()(x).detach().numpy(), dynamic_program.module()(x).detach().numpy())
    with pytest.raises(ember.export.GuardError, match="t > 2"):
        loaded.module()(ember.randn(7, 2, 4))


def _dynamic_mutations(rng: random.Random, p: dict) -> None:
    dyn, guard = p["dynamic"], p["guards"][0]
    sizes = [n for n in p["nodes"] if n.get("target", "").startswith(("operator.", "sym_size"))]
    kind = rng.randrange(12)
    if kind == 0:
        dyn["guards"] = [rng.choice([["eval", "b", 1], ["pow", "b", 10**9], ["gt", "b"], ["gt", "zz", 1], True,
                                     ["add", "b", 1], "b", ["gt", 2**70, "b"]])]
    elif kind == 1:
        deep = "b"
        for _ in range(rng.randrange(40, 300)):
            deep = ["add", deep, 1]
        dyn["guards"] = [["gt", deep, 0]]
    elif kind == 2:
        dyn["ranges"]["b"] = rng.choice([[5], [1, "x"], None, [-1, None, 3], "0..64"])
    elif kind == 3:
        dyn["ranges"]["zz"] = [0, None]
    elif kind == 4:
        del p["dynamic"]
    elif kind == 5:
        guard["shape"][0] = rng.choice(["not a name", "zz", 1.5, None, -3])
    elif kind == 6:
        guard["hint"] = rng.choice([[1, 5, 4], [3, 5], [3, 5, 9], None, "x", [65, 5, 4], [3, 2, 4]])
    elif kind == 7:
        rng.choice(sizes)["args"] = {"tuple": rng.choice([[], [{"float": "1.5"}, 2], [{"node": "x"}, "a"],
                                                          [1, 2, 3]])}
    elif kind == 8:
        rng.choice(sizes)["target"] = rng.choice(["operator.getattr", "operator.call", "sym_size.__globals__",
                                                  "operator.__import__"])
    elif kind == 9:
        p["nodes"][-2]["val"] = rng.choice([["float32", [["mul", "b", "zz"], 3]], ["float32", [["call", "b"]]],
                                            ["float32", [True]], {"size": ["mul", "b"]}])
    elif kind == 10:
        dyn["extra"] = 1
    else:
        dyn["guards"] = rng.choice([None, "t > 2", [["eq", "t", "t"]]])


def test_damaged_dynamic_programs_are_refused_and_run_nothing(dynamic_program):
    good = _bytes(dynamic_program)
    base = ember.load(io.BytesIO(good))
    program = json.loads(base["program"])
    rng = random.Random(21)
    for _ in range(300):
        p = copy.deepcopy(program)
        _dynamic_mutations(rng, p)
        with pytest.raises(SerializationError):
            load(io.BytesIO(_write(p, base)))
    assert SENTINEL not in sys.modules
