"""ember.save / ember.load: round trips of every dtype and nested structures, compact views,
atomic writes, map_location, safetensors interop, and a fuzz test of >= 1000 damaged files
that must all raise CheckpointError without running anything."""
from __future__ import annotations

import io
import json
import os
import pickle
import struct

import numpy as np
import pytest

import ember
from ember.serialization import CheckpointError

DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16,
          ember.bfloat16, ember.float32, ember.float64]


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    ember.save(obj, buf)
    return ember.load(io.BytesIO(buf.getvalue()), **kw), buf.getvalue()


def _same(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, ember.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
        assert a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(a.detach().float().numpy(), b.detach().float().numpy())
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b)
    else:
        assert a == b


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_round_trips_exactly(dtype):
    rng = np.random.default_rng(0)
    vals = rng.normal(size=(3, 5)) * 100
    t = ember.tensor(vals).to(dtype)
    for x in (t, t[0, 0], ember.empty(0, 4, dtype=dtype), t.t(), t[:, ::2]):
        out, _ = _roundtrip(x)
        _same(out, x)
        assert out.is_contiguous()
        # raw bits too (the float comparison above cannot see -0.0 vs 0.0 or NaN payloads)
        assert out.numpy().tobytes() == np.ascontiguousarray(x.numpy()).tobytes()


def test_nested_structure_round_trips():
    w = ember.randn(4, 3, requires_grad=True)
    obj = {"model": {"w": w, "b": ember.zeros(3)}, "step": 7, "lr": 0.1, "betas": (0.9, 0.999),
           "name": "gpt", "none": None, "flags": [True, False], "nums": [1, -2 ** 70, 1e-300, float("inf")],
           "nan": float("nan"), 0: {"exp_avg": ember.ones(2)}, 3: [], "empty": {}, "t": (), "dtype": ember.bfloat16,
           "device": ember.device("cpu"), "size": ember.Size([2, 3]), "unicode": "héllo ✓", "nested": [[[{"deep": (1, [2, {"x": None}])}]]]}
    out, _ = _roundtrip(obj)
    _same(out, obj)
    assert out["model"]["w"].requires_grad and out["model"]["w"].is_leaf


def test_shared_tensor_is_saved_once_and_stays_shared():
    t = ember.arange(1000, dtype=ember.float32)
    out, raw = _roundtrip({"a": t, "b": [t, t]})
    assert out["a"] is out["b"][0] is out["b"][1]
    assert 4000 <= len(raw) < 5000


def test_views_are_saved_compactly():
    base = ember.zeros(1000, 1000)
    _, raw = _roundtrip(base[:2, :3])
    assert len(raw) < 1000       # 6 floats, not the million of the base
    _, raw = _roundtrip(base[::100, ::100])
    assert len(raw) < 1500


def test_paths_and_atomic_write(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    ember.save({"v": ember.ones(3)}, path)
    ember.save({"v": ember.zeros(3)}, str(path))       # overwrite
    np.testing.assert_array_equal(ember.load(path)["v"].numpy(), [0, 0, 0])
    before = path.read_bytes()

    def crash(src, dst):
        raise OSError("simulated crash during rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated"):
        ember.save({"v": ember.full((3,), 5.0)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before            # the old file is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]     # no temp file left behind

    class Boom:
        pass

    with pytest.raises(TypeError, match="cannot save .*Boom"):       # (a local class: no importable name)
        ember.save({"bad": Boom()}, path)
    assert path.read_bytes() == before


def test_map_location_variants():
    obj = {"a": ember.ones(2), "b": ember.zeros(3)}
    buf = io.BytesIO()
    ember.save(obj, buf)
    raw = buf.getvalue()
    for loc in ("meta", ember.device("meta"), {"cpu": "meta"}):
        out = ember.load(io.BytesIO(raw), map_location=loc)
        assert out["a"].device.type == "meta" and out["b"].shape == (3,)
    seen = []

    def fn(t, location):
        seen.append(location)
        return t.to("meta") if t.shape == (2,) else None

    out = ember.load(io.BytesIO(raw), map_location=fn)
    assert seen == ["cpu", "cpu"] and out["a"].device.type == "meta" and out["b"].device.type == "cpu"
    assert ember.load(io.BytesIO(raw), map_location=lambda storage, loc: storage)["a"].device.type == "cpu"
    with pytest.raises(TypeError, match="map_location"):
        ember.load(io.BytesIO(raw), map_location=3)


def test_optimizer_checkpoint_resumes_identically(tmp_path):
    w = ember.tensor([[0.5, -1.0], [2.0, 0.1]], requires_grad=True)
    opt = ember.optim.AdamW([w], lr=0.05, amsgrad=True)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)

    def step(w, opt, sched):
        opt.zero_grad()
        ((w @ w).sin().sum()).backward()
        opt.step()
        sched.step()

    for _ in range(5):
        step(w, opt, sched)
    ember.save({"w": w.detach(), "opt": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "c.pt")
    ck = ember.load(tmp_path / "c.pt")
    w2 = ck["w"].clone().requires_grad_()
    opt2 = ember.optim.AdamW([w2], lr=0.05, amsgrad=True)
    opt2.load_state_dict(ck["opt"])
    sched2 = ember.optim.lr_scheduler.StepLR(opt2, step_size=3, gamma=0.5)
    sched2.load_state_dict(ck["sched"])
    for _ in range(7):
        step(w, opt, sched)
        step(w2, opt2, sched2)
    np.testing.assert_array_equal(w.detach().numpy(), w2.detach().numpy())
    assert sched.get_last_lr() == sched2.get_last_lr()


def _sample_file() -> bytes:
    buf = io.BytesIO()
    ember.save({"w": ember.arange(6, dtype=ember.float32).reshape(2, 3), "b": ember.tensor([1, 2], dtype=ember.int64),
                "meta": {"step": 3, "lr": 0.5, "name": "x", "t": (None, True)}, 7: [ember.ones(1, dtype=ember.bfloat16)]},
               buf)
    return buf.getvalue()


def test_fuzz_damaged_files_raise_checkpoint_error():
    """>= 1000 mutated, truncated and extended copies of a valid file: each one raises."""
    good = _sample_file()
    ember.load(io.BytesIO(good))
    rng = np.random.default_rng(1234)
    n = 0
    for i in range(1200):
        data = bytearray(good)
        kind = i % 6
        if kind == 0:                      # flip 1..4 random bytes
            for pos in rng.choice(len(data), size=rng.integers(1, 5), replace=False):
                data[pos] ^= int(rng.integers(1, 256))
        elif kind == 1:                    # truncate
            data = data[:int(rng.integers(0, len(data)))]
        elif kind == 2:                    # insert random bytes
            pos = int(rng.integers(0, len(data) + 1))
            data[pos:pos] = bytes(rng.integers(0, 256, size=int(rng.integers(1, 9)), dtype=np.uint8))
        elif kind == 3:                    # delete a span
            pos = int(rng.integers(0, len(data)))
            del data[pos:pos + int(rng.integers(1, 9))]
        elif kind == 4:                    # a random header length
            data[:8] = struct.pack("<Q", int(rng.integers(0, 2 ** 63)) if i % 12 == 4 else int(rng.integers(0, len(data))))
            if bytes(data) == good:
                continue
        else:                              # change one header byte to a printable character
            n_header = struct.unpack("<Q", good[:8])[0]
            pos = 8 + int(rng.integers(0, n_header))
            c = int(rng.integers(32, 127))
            if c == data[pos]:
                c = c + 1 if c < 126 else 32
            data[pos] = c
        with pytest.raises(CheckpointError):
            ember.load(io.BytesIO(bytes(data)))
        n += 1
    assert n >= 1000


def test_hostile_and_foreign_files(tmp_path):
    marker = tmp_path / "executed"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    for payload in (pickle.dumps(Evil()), pickle.dumps({"a": 1}), b"", b"PK\x03\x04" + b"\0" * 100,
                    struct.pack("<Q", 2 ** 60) + b"{}", struct.pack("<Q", 2) + b"[]",
                    struct.pack("<Q", 5) + b"\xff\xfe{}}"):
        with pytest.raises(CheckpointError, match="not a valid checkpoint"):
            ember.load(io.BytesIO(payload))
    assert not marker.exists()

    def header_file(header: dict, data: bytes = b"") -> bytes:
        h = json.dumps(header).encode()
        return struct.pack("<Q", len(h)) + h + data

    cases = [
        ({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4),           # data truncated
        ({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8),           # size mismatch
        ({"t": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 8),           # unknown dtype
        ({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4),          # negative dim
        ({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "x": 1}}, b"\0" * 4),   # extra key
        ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
          "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4),           # overlap
        ({"__metadata__": {"format": "ember"}}, b""),                                          # ember, no digest
        ({"__metadata__": {"x": 1}}, b""),                                                     # non-string meta
    ]
    for header, data in cases:
        with pytest.raises(CheckpointError):
            ember.load(io.BytesIO(header_file(header, data)))
    deep = "[" * 100000 + "]" * 100000
    with pytest.raises(CheckpointError):
        ember.load(io.BytesIO(struct.pack("<Q", len(deep)) + deep.encode()))
    # a valid plain safetensors file from another writer loads as a dict of tensors
    ok = header_file({"x": {"dtype": "I32", "shape": [2], "data_offsets": [0, 8]}}, struct.pack("<ii", 3, -4))
    out = ember.load(io.BytesIO(ok))
    assert list(out) == ["x"] and out["x"].tolist() == [3, -4] and out["x"].dtype == ember.int32


def test_safetensors_interop(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    t = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    ember.save({"w": t, "step": 3}, tmp_path / "a.safetensors")
    loaded = st.load_file(str(tmp_path / "a.safetensors"))
    assert len(loaded) == 1
    np.testing.assert_array_equal(next(iter(loaded.values())), t.numpy())
    st.save_file({"x": np.arange(5, dtype=np.int16), "y": np.ones((2, 2), dtype=np.float64)},
                 str(tmp_path / "b.safetensors"))
    out = ember.load(tmp_path / "b.safetensors")
    assert out["x"].tolist() == [0, 1, 2, 3, 4] and out["x"].dtype == ember.int16
    assert out["y"].dtype == ember.float64 and out["y"].tolist() == [[1.0, 1.0], [1.0, 1.0]]
