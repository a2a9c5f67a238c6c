"""ember.onnx.export: the examples' models checked by onnx and run by onnxruntime against ember."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.onnx
from ember.dispatcher import ALL_OPS
from ember.onnx import UnsupportedOperatorError
from ember.testing.models import GPT2Config, build_gpt2

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import char_gpt  # noqa: E402
import digits_cnn  # noqa: E402

nn = ember.nn


def _models():
    ember.manual_seed(0)
    return {
        "mlp": (nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)), ember.randn(4, 6)),
        "cnn": (nn.Sequential(nn.BatchNorm2d(1), digits_cnn.cnn_model(ember)()).eval(), ember.randn(3, 1, 8, 8)),
        "nanogpt": (char_gpt.gpt_model(ember)(char_gpt.GPTConfig(vocab_size=20, block_size=8, n_layer=2, n_head=2,
                                                                  n_embd=16, dropout=0.0)).eval(),
                    ember.randint(0, 20, (2, 8))),
        "gpt2": (build_gpt2(GPT2Config(vocab_size=40, n_ctx=12, n_embd=16, n_layer=2, n_head=2), lib=ember).eval(),
                 ember.randint(0, 40, (3, 10))),
    }


def _run(proto, x) -> np.ndarray:
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("name", ["mlp", "cnn", "nanogpt", "gpt2"])
def test_models_pass_the_full_check_and_match_ember_in_onnxruntime(name, opset):
    model, x = _models()[name]
    proto = ember.onnx.export(model, (x,), input_names=["tokens"], output_names=["logits"], opset_version=opset)
    onnx.checker.check_model(proto, full_check=True)
    assert proto.opset_import[0].version == opset
    assert [i.name for i in proto.graph.input] == ["tokens"] and proto.graph.output[0].name == "logits"
    want = model(x)
    want = (want[0] if isinstance(want, tuple) else want).detach().numpy()
    np.testing.assert_allclose(_run(proto, x), want, rtol=1e-5, atol=1e-5)


def test_the_file_written_is_the_model(tmp_path):
    model, x = _models()["mlp"]
    path = tmp_path / "mlp.onnx"
    proto = ember.onnx.export(model, (x,), path)
    assert onnx.load(str(path)) == proto
    buf = io.BytesIO()
    ember.onnx.export(model, (x,), buf)
    assert onnx.load_model_from_string(buf.getvalue()) == proto


def test_an_op_without_a_lowering_names_the_op_the_opset_and_the_module():
    class Scan(nn.Module):
        def forward(self, x):
            return ember.cumsum(x, 0)

    model = nn.Sequential(nn.Linear(3, 3), Scan())
    with pytest.raises(UnsupportedOperatorError, match=r"the op cumsum has no ONNX lowering at opset 18 \(called in "
                                                        r"1, graph node cumsum\)"):
        ember.onnx.export(model, (ember.randn(2, 3),))


def test_training_mode_layers_and_bad_options_are_refused():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5)).train()
    with pytest.raises(UnsupportedOperatorError, match=r"dropout in training mode .*call model.eval\(\)"):
        ember.onnx.export(model, (ember.randn(2, 3),))
    with pytest.raises(ValueError, match="opset_version must be 17 or later, got 13"):
        ember.onnx.export(model.eval(), (ember.randn(2, 3),), opset_version=13)
    with pytest.raises(ValueError, match=r"dynamic_axes names \['x'\], which are not among input_names"):
        ember.onnx.export(model.eval(), (ember.randn(2, 3),), dynamic_axes={"x": {0: "batch"}})
    with pytest.raises(ValueError, match=r"dynamic_axes\['x'\] must be \{axis: name\} or a list of axes"):
        ember.onnx.export(model.eval(), (ember.randn(2, 3),), input_names=["x"], dynamic_axes={"x": "batch"})


@pytest.mark.parametrize("name", ["mlp", "cnn", "nanogpt", "gpt2"])
def test_dynamic_axes_run_in_onnxruntime_at_other_sizes(name):
    model, x = _models()[name]
    gpt = name in ("nanogpt", "gpt2")
    axes = {0: "batch", 1: "seq"} if gpt else {0: "batch"}
    proto = ember.onnx.export(model, (x,), input_names=["tokens"], output_names=["logits"],
                              dynamic_axes={"tokens": axes, "logits": axes})
    onnx.checker.check_model(proto, full_check=True)
    dims = [d.dim_param or d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims == (["batch", "seq"] if gpt else ["batch"] + list(x.shape[1:]))
    assert [d.dim_param for d in proto.graph.output[0].type.tensor_type.shape.dim][:len(axes)] == list(axes.values())
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 5):
        xs = ember.randint(0, 20, (batch, 3 + batch)) if gpt else ember.randn(batch, *x.shape[1:])
        want = model(xs)
        want = (want[0] if isinstance(want, tuple) else want).detach().numpy()
        np.testing.assert_allclose(sess.run(None, {"tokens": xs.numpy()})[0], want, rtol=1e-5, atol=1e-5)


def test_the_table_maps_registry_ops_only():
    from ember.onnx.table import TABLE

    assert set(TABLE) <= set(ALL_OPS)
    assert all(callable(v) for v in TABLE.values())


class _Fn(nn.Module):
    def __init__(self, fn, **state):
        super().__init__()
        self.fn = fn
        for k, v in state.items():
            setattr(self, k, v)

    def forward(self, *xs):
        return self.fn(self, *xs)


def _run_all(proto, xs) -> list:
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: x.numpy() for i, x in zip(sess.get_inputs(), xs)})


@pytest.mark.parametrize("fn, xs", [
    (lambda m, x: x < 2.5, (ember.tensor([1, 2, 3]),)),                       # int tensor, float scalar
    (lambda m, x: 2.5 > x, (ember.tensor([1, 2, 3]),)),
    (lambda m, x: x == 1.5, (ember.tensor([1, 2]),)),
    (lambda m, x: x * 2.5 + 1, (ember.tensor([1, 2, 3]),)),                    # promotion to float
    (lambda m, x, y: x + y, (ember.tensor([1.5, 2.0]), ember.tensor([1, 2]))),
    (lambda m, x: ember.sqrt(x), (ember.tensor([1, 4, 9]),)),
    (lambda m, x: ember.where(x > 0, 1, 0), (ember.tensor([-1.0, 2.0]),)),
    (lambda m, x: (x > 0) & ~(x > 1), (ember.tensor([-1.0, 0.5, 2.0]),)),
    (lambda m, x: x.t() + ember.zeros(3, 2), (ember.randn(2, 3),)),
])
def test_elementwise_dtypes_follow_pytorchs_promotion(fn, xs):
    model = _Fn(fn)
    got = _run_all(ember.onnx.export(model, xs), xs)[0]
    want = model(*xs).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_names_never_collide_and_inputs_may_be_returned():
    w = nn.Parameter(ember.full((2,), 3.0))
    model = _Fn(lambda m, x: (x * m.w, x, x * m.w), w=w)
    x = ember.ones(2)
    proto = ember.onnx.export(model, (x,), input_names=["w"])
    outs = _run_all(proto, (x,))
    np.testing.assert_array_equal(outs[0], [3.0, 3.0])
    np.testing.assert_array_equal(outs[1], [1.0, 1.0])
    np.testing.assert_array_equal(outs[2], [3.0, 3.0])


@pytest.mark.parametrize("layer", [nn.LayerNorm(3, bias=False), nn.LayerNorm(3, elementwise_affine=False),
                                   nn.Sequential(nn.Linear(3, 3), nn.ReLU(inplace=True))])
def test_optional_inputs_and_in_place_layers(layer):
    x = ember.randn(2, 3)
    got = _run_all(ember.onnx.export(layer, (x,)), (x,))[0]
    np.testing.assert_allclose(got, layer(x).detach().numpy(), rtol=1e-5, atol=1e-6)
