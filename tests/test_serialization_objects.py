"""Whole objects in ember checkpoints: `ember.save(model)` and `ember.load` under torch's weights-only
allow-list (`add_safe_globals`, `safe_globals`), numpy arrays, sets and OrderedDicts; and that a file naming
a class or function that is not allowed loads nothing."""
from __future__ import annotations

import io
import json
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from ember.serialization import CheckpointError, safe_globals


def round_trip(obj, allowed=()):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    with safe_globals(list(allowed)):
        return ember.load(buf)


def test_a_module_saved_whole_loads_only_with_its_classes_allowed():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    model.eval()
    buf = io.BytesIO()
    ember.save(model, buf)
    with pytest.raises(CheckpointError, match="not an allowed global"):
        ember.load(io.BytesIO(buf.getvalue()))
    with safe_globals([nn.Sequential, nn.Linear, nn.ReLU]):
        loaded = ember.load(io.BytesIO(buf.getvalue()))
    assert type(loaded) is nn.Sequential and not loaded.training
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in loaded.parameters())
    x = ember.randn(5, 3)
    np.testing.assert_array_equal(loaded(x).detach().numpy(), model(x).detach().numpy())
    assert list(loaded.state_dict()) == list(model.state_dict())
    assert ember.serialization.get_safe_globals() == []          # the context removed what it added


def test_a_function_an_object_refers_to_must_be_allowed_too():
    layer = nn.TransformerEncoderLayer(8, 2, 16, activation=nn.functional.gelu)
    classes = [nn.TransformerEncoderLayer, nn.MultiheadAttention, nn.modules.linear.NonDynamicallyQuantizableLinear,
               nn.Linear, nn.Dropout, nn.LayerNorm]
    with pytest.raises(CheckpointError, match="gelu"):
        round_trip(layer, classes)
    loaded = round_trip(layer, classes + [nn.functional.gelu])
    assert loaded.activation is nn.functional.gelu
    layer.eval()
    loaded.eval()
    x = ember.randn(3, 2, 8)
    np.testing.assert_allclose(loaded(x).detach().numpy(), layer(x).detach().numpy())


def test_numpy_arrays_sets_and_ordered_dicts_round_trip():
    data = {"sine": np.sin(np.arange(12.0)).reshape(3, 4), "ints": np.arange(5, dtype=np.int64),
            "mask": np.array([True, False]), "tags": {"a", "b"}, "order": OrderedDict([("z", 1), ("a", 2)])}
    loaded = round_trip(data)
    for key in ("sine", "ints", "mask"):
        assert isinstance(loaded[key], np.ndarray) and loaded[key].dtype == data[key].dtype
        np.testing.assert_array_equal(loaded[key], data[key])
    assert loaded["tags"] == {"a", "b"}
    assert type(loaded["order"]) is OrderedDict and list(loaded["order"]) == ["z", "a"]


def test_what_cannot_be_saved_says_why():
    with pytest.raises(TypeError, match="no importable name"):
        ember.save({"f": lambda x: x}, io.BytesIO())
    with pytest.raises(TypeError, match="numpy array of dtype"):
        ember.save(np.array([1 + 2j]), io.BytesIO())


@pytest.mark.parametrize("structure", [{"global": "builtins:eval"}, {"object": "os:_wrap_close", "state": {"dict": []}},
                                       {"object": "builtins:dict", "state": None}])
def test_a_file_naming_what_is_not_allowed_runs_nothing(structure):
    buf = io.BytesIO()
    ember.save({"x": 1}, buf)
    raw = buf.getvalue()
    # rewrite the structure and the digest as a hostile writer would (the digest is not a signature)
    import hashlib
    import struct

    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header["__metadata__"]["ember_structure"] = json.dumps(structure)
    header["__metadata__"]["ember_digest"] = "0" * 64
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    digest = hashlib.sha256(text).hexdigest().encode()
    pos = text.index(b'"ember_digest":"') + len(b'"ember_digest":"')
    text = text[:pos] + digest + text[pos + 64:]
    with pytest.raises(CheckpointError, match="not an allowed global"):
        ember.load(io.BytesIO(struct.pack("<Q", len(text)) + text + raw[8 + n:]))
