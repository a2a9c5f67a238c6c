"""ember.load on checkpoints written by torch.save (zip and legacy formats) and by
safetensors.torch, compared with torch.load as the oracle; the allow-list unpickler refusing
hostile pickles without running them; regressions for hostile files that crashed the process or
multiplied its memory (deep nesting, overlapping zip records, huge length claims); and a fuzz
test of 1000 damaged PyTorch files that must each load or raise CheckpointError."""
from __future__ import annotations

import io
import math
import os
import pickle
import struct
import subprocess
import sys
import tracemalloc
import warnings
import zipfile
import zlib
from collections import Counter, OrderedDict

import numpy as np
import pytest

import ember
from ember import serialization_torch, torch_unpickler
from ember.serialization import _DTYPE_CODES, CheckpointError, _detect_format, _location_fn

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FORMATS = {"zip": {}, "legacy": {"_use_new_zipfile_serialization": False}, "zip-protocol4": {"pickle_protocol": 4}}


def _saved(obj, **kw) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, **kw)
    return buf.getvalue()


def _load(raw: bytes, **kw):
    return ember.load(io.BytesIO(raw), **kw)


def _oracle(raw: bytes, **kw):
    """torch.load's answer for a file this test wrote (torch's weights-only unpickler cannot read
    protocol 4 pickles, which ember reads)."""
    return torch.load(io.BytesIO(raw), weights_only=False, **kw)


def _bits(t) -> bytes:
    if isinstance(t, torch.Tensor):
        return t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


def _same(e, t, where="obj"):
    """`e` (from ember.load) matches `t` (from torch.load) exactly, tensors bit for bit."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), where
        assert isinstance(e, ember.nn.Parameter) == isinstance(t, torch.nn.Parameter), where
        assert e.dtype.name == str(t.dtype).removeprefix("torch."), where
        assert tuple(e.shape) == tuple(t.shape) and tuple(e.stride()) == t.stride(), where
        assert e.storage_offset() == t.storage_offset(), where
        assert e.requires_grad == t.requires_grad and e.is_leaf, where
        assert _bits(e) == _bits(t), where
    elif isinstance(t, torch.Size):
        assert type(e) is ember.Size and tuple(e) == tuple(t), where
    elif isinstance(t, torch.dtype):
        assert e is getattr(ember, str(t).removeprefix("torch.")), where
    elif isinstance(t, torch.device):
        assert isinstance(e, ember.device) and str(e) == str(t), where
    elif isinstance(t, dict):
        assert type(e) is type(t) and list(e) == list(t), where
        for k in t:
            _same(e[k], t[k], f"{where}[{k!r}]")
        if hasattr(t, "_metadata"):
            _same(e._metadata, t._metadata, f"{where}._metadata")
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) and len(e) == len(t), where
        for i, (x, y) in enumerate(zip(e, t)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(t, float) and math.isnan(t):
        assert isinstance(e, float) and math.isnan(e), where
    else:
        assert type(e) is type(t) and e == t, where


def _torch_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 4 * 4, 5))


def _ember_model():
    return ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.ReLU(), ember.nn.BatchNorm2d(4), ember.nn.Flatten(),
                               ember.nn.Linear(4 * 4 * 4, 5))


def _trained():
    """A model and its Adam optimizer after two steps (so BatchNorm's buffers moved)."""
    model = _torch_model()
    opt = torch.optim.Adam(model.parameters(), lr=0.01, betas=(0.8, 0.99))
    for _ in range(2):
        opt.zero_grad()
        model(torch.randn(2, 3, 6, 6)).square().mean().backward()
        opt.step()
    return model, opt


def _same_outputs(emodel, tmodel):
    tmodel.eval()
    emodel.eval()
    x = torch.randn(2, 3, 6, 6)
    np.testing.assert_allclose(emodel(ember.tensor(x.numpy())).detach().numpy(), tmodel(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


# -- round trips against torch.load ------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_model_state_dict_loads_into_an_ember_model(tmp_path, fmt):
    model, _ = _trained()
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path, **FORMATS[fmt])
    sd = ember.load(path)
    _same(sd, torch.load(path, weights_only=False), "state_dict")
    assert sd["2.num_batches_tracked"].dtype == ember.int64 and sd["2.num_batches_tracked"].item() == 2
    emodel = _ember_model()
    emodel.load_state_dict(ember.load(str(path)))
    _same_outputs(emodel, model)


@pytest.mark.parametrize("fmt", FORMATS)
def test_optimizer_state_and_nested_checkpoint(fmt):
    model, opt = _trained()
    ckpt = {"epoch": 3, "model": model.state_dict(), "optim": opt.state_dict(), "note": "x", "best": 0.5,
            "nan": float("nan"), "big": -2 ** 70, "none": None}
    raw = _saved(ckpt, **FORMATS[fmt])
    out = _load(raw)
    _same(out, _oracle(raw), "ckpt")
    groups = out["optim"]["param_groups"]
    assert groups[0]["betas"] == (0.8, 0.99) and groups[0]["params"] == [0, 1, 2, 3, 4, 5]
    assert sorted(out["optim"]["state"]) == [0, 1, 2, 3, 4, 5]          # int keys
    # the ember optimizer resumes from torch's state and takes the same step
    emodel = _ember_model()
    emodel.load_state_dict(out["model"])
    eopt = ember.optim.Adam(emodel.parameters(), lr=0.01, betas=(0.8, 0.99))
    eopt.load_state_dict(out["optim"])
    x = torch.randn(2, 3, 6, 6)
    for m, o, inp in ((model, opt, x), (emodel, eopt, ember.tensor(x.numpy()))):
        o.zero_grad()
        m(inp).square().mean().backward()
        o.step()
    _same_outputs(emodel, model)


def _random_tensor(name: str, shape=(3, 4)):
    rng = np.random.default_rng(DTYPES.index(name))
    dtype = getattr(torch, name)
    if name == "bool":
        return torch.from_numpy(rng.integers(0, 2, size=shape).astype(bool))
    item = torch.empty(0, dtype=dtype).element_size()
    raw = rng.integers(0, 256, size=(*shape, item), dtype=np.uint8)      # any bits: NaN payloads, -0.0, ...
    return torch.from_numpy(raw).view(dtype).reshape(shape)


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_view_and_shape_bit_exact(name, fmt):
    t = _random_tensor(name)
    obj = {"full": t, "zero_d": t[1, 2], "empty_view": t[:0], "empty": torch.empty(0, 5, dtype=t.dtype),
           "transposed": t.t()[::2], "row": t[1], "clone": t[2].clone()}
    raw = _saved(obj, **FORMATS[fmt])
    out = _load(raw)
    _same(out, _oracle(raw), name)
    assert out["zero_d"].dim() == 0 and out["zero_d"].storage_offset() == 6
    assert out["transposed"].untyped_storage() is out["full"].untyped_storage()
    assert out["clone"].untyped_storage() is not out["full"].untyped_storage()


def test_shared_storages_share_memory():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    obj = {"base": base, "tail": base[1:, 2:], "strided": base[::2, ::3], "flat": base.view(-1)[5:17],
           "again": base, "expanded": base[0].expand(3, 6)}
    raw = _saved(obj)
    out = _load(raw)
    _same(out, _oracle(raw))
    assert out["again"] is out["base"]
    out["base"][1, 2] = -1.0                        # one storage: a write shows through every view
    assert out["tail"][0, 0].item() == -1.0 and out["flat"][3].item() == -1.0
    assert out["strided"].stride() == (12, 3) and out["expanded"].stride() == (0, 1)


def test_parameters_and_requires_grad():
    p = torch.nn.Parameter(torch.randn(2, 3))
    frozen = torch.nn.Parameter(torch.randn(2), requires_grad=False)
    leaf = torch.randn(3, requires_grad=True)
    obj = {"p": p, "frozen": frozen, "leaf": leaf, "plain": torch.ones(2), "params": [p, p]}
    for fmt in FORMATS.values():
        raw = _saved(obj, **fmt)
        out = _load(raw)
        _same(out, _oracle(raw))
        assert out["p"].requires_grad and out["p"].is_leaf and out["params"][0] is out["p"]
        assert not out["frozen"].requires_grad and isinstance(out["frozen"], ember.nn.Parameter)


def test_torch_values_and_containers():
    obj = {"size": torch.Size([2, 3]), "dtype": torch.bfloat16, "dtypes": [torch.int64, torch.bool],
           "device": torch.device("cpu"), "cuda": torch.device("cuda", 1), "set": {1, 2}, "bytes": b"\x00\xff",
           "complex": 1 + 2j, "counter": Counter("abca"), "ordered": OrderedDict(b=1, a=2), "tuple": (1, (2.5,)),
           "frozen": frozenset({3}), "bytearray": bytearray(b"xy"), 5: "int key", (1, 2): "tuple key"}
    for fmt in FORMATS.values():
        raw = _saved(obj, **fmt)
        _same(_load(raw), _oracle(raw))


def test_safetensors_from_torch_loads_into_an_ember_model(tmp_path):
    st = pytest.importorskip("safetensors.torch")
    model, _ = _trained()
    st.save_file(model.state_dict(), str(tmp_path / "model.safetensors"))
    sd = ember.load(tmp_path / "model.safetensors")
    expected = st.load_file(str(tmp_path / "model.safetensors"))
    assert sorted(sd) == sorted(expected)
    for k in expected:
        _same(sd[k], expected[k], k)
    emodel = _ember_model()
    emodel.load_state_dict(sd)
    _same_outputs(emodel, model)


# -- locations, byte order, file kinds ---------------------------------------------------------
def _records(raw: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        return {name.split("/", 1)[1]: z.read(name) for name in z.namelist()}


def _zip(records: dict[str, bytes], prefix: str = "archive") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in records.items():
            z.writestr(f"{prefix}/{name}", data)
    return buf.getvalue()


def test_cuda_locations_follow_map_location():
    raw = _saved({"w": torch.arange(3.0), "v": torch.ones(2, dtype=torch.int32)})
    recs = _records(raw)
    recs["data.pkl"] = recs["data.pkl"].replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
    cuda_file = _zip(recs)
    expected = _oracle(cuda_file, map_location="cpu")
    for loc in ("cpu", ember.device("cpu"), {"cuda:0": "cpu"}, lambda storage, where: storage):
        _same(_load(cuda_file, map_location=loc), expected)
    seen = []

    def to_meta(storage, where):
        seen.append((where, storage.dim()))
        return storage.to("meta")

    out = _load(cuda_file, map_location=to_meta)
    assert seen == [("cuda:0", 1), ("cuda:0", 1)] and out["w"].device.type == "meta" and out["w"].shape == (3,)
    if ember.cuda.is_available():
        assert _load(cuda_file)["w"].device.type == "cuda"
    else:                                        # as torch.load: an error that says what to do
        with pytest.raises(RuntimeError):
            _oracle(cuda_file)
        with pytest.raises(CheckpointError, match="cuda:0.*map_location='cpu'"):
            _load(cuda_file)


@pytest.mark.parametrize("name", [n for n in DTYPES if n not in ("bool", "uint8", "int8")])
def test_big_endian_byteorder_record_is_honoured(name):
    t = _random_tensor(name, shape=(5,))
    recs = _records(_saved(t))
    assert recs["byteorder"] == b"little"
    item = t.element_size()
    recs["byteorder"] = b"big"
    recs["data/0"] = np.frombuffer(recs["data/0"], dtype=f"<u{item}").astype(f">u{item}").tobytes()
    big = _zip(recs)
    assert _bits(_oracle(big)) == _bits(t)           # torch swaps them back
    _same(_load(big), t)


def test_detection_paths_file_objects_and_other_formats(tmp_path):
    raw = _saved({"w": torch.ones(2)})
    path = tmp_path / "ckpt.pt"
    path.write_bytes(raw)
    with open(path, "rb") as f:
        assert _load(f.read())["w"].tolist() == [1.0, 1.0]
    with open(path, "rb") as f:
        assert ember.load(f)["w"].tolist() == [1.0, 1.0]

    class Stream:                                    # a file object that cannot seek
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def read(self, n=-1):
            return self.data.read(n)

    assert ember.load(Stream(raw))["w"].tolist() == [1.0, 1.0]
    assert ember.load(Stream(_saved({"w": torch.ones(1)}, _use_new_zipfile_serialization=False)))["w"].tolist() == [1.0]
    ember.save({"e": ember.zeros(2)}, path)          # ember's own format still loads from the same entry point
    assert ember.load(path)["e"].tolist() == [0.0, 0.0]
    assert _detect_format(raw[:262]) == "torch-zip"
    assert _detect_format(_saved(1, _use_new_zipfile_serialization=False)[:262]) == "torch-legacy"
    assert _detect_format(struct.pack("<Q", 0x0280) + b"{") == "safetensors"    # length bytes 80 02 ...
    tar = bytearray(512)
    tar[257:262] = b"ustar"
    with pytest.raises(CheckpointError, match="tar format"):
        _load(bytes(tar))
    with pytest.raises(TypeError, match="binary mode"):
        with open(path, "r", encoding="latin-1") as f:
            ember.load(f)


def test_unsupported_dtypes_and_objects_are_named():
    with pytest.raises(CheckpointError, match="complex64"):
        _load(_saved({"c": torch.ones(2, dtype=torch.complex64)}))
    with pytest.raises(CheckpointError, match="uint16"):
        _load(_saved({"u": torch.ones(2, dtype=torch.uint16)}))
    with pytest.raises(CheckpointError, match="uint32"):
        _load(_saved({"d": torch.uint32}))
    for fmt in FORMATS.values():                                    # a whole module, not its state_dict
        with pytest.raises(CheckpointError, match=r"'torch\.nn\.modules\.linear\.Linear'.*model\.state_dict\(\)"):
            _load(_saved(torch.nn.Linear(2, 2), **fmt))
    with pytest.raises(CheckpointError, match="'numpy.*numpy arrays"):
        _load(_saved({"a": np.zeros(2)}))
    with pytest.raises(CheckpointError, match="sparse tensors are not supported"):
        _load(_saved(torch.eye(2).to_sparse()))
    recs = _records(_saved({"w": torch.ones(1)}))
    recs["constants.pkl"] = b""
    with pytest.raises(CheckpointError, match="TorchScript"):
        _load(_zip(recs))


# -- hostile files ---------------------------------------------------------------------------
def _glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _str(s: str) -> bytes:
    return b"X" + struct.pack("<I", len(s.encode())) + s.encode()


def _int(i: int) -> bytes:
    n = (i.bit_length() + 8) // 8
    return b"\x8a" + bytes([n]) + i.to_bytes(n, "little", signed=True)


def _tuple(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def _tensor_pickle(numel=6, size=(2, 3), stride=(3, 1), offset=0, storage="FloatStorage", key="0",
                   requires_grad=False, tail=b"") -> bytes:
    """A hand-written data.pkl for one tensor, as torch writes it (protocol 2)."""
    pid = _tuple(_str("storage"), _glob("torch", storage), _str(key), _str("cpu"), _int(numel))
    args = _tuple(pid + b"Q", _int(offset), _tuple(*map(_int, size)), _tuple(*map(_int, stride)),
                  b"\x88" if requires_grad else b"\x89", _glob("collections", "OrderedDict") + b")R")
    return b"\x80\x02" + _glob("torch._utils", "_rebuild_tensor_v2") + args + b"R" + tail + b"."


def _tensor_file(pkl: bytes, data: bytes | None = struct.pack("<6f", *range(6))) -> bytes:
    recs = {"data.pkl": pkl, "byteorder": b"little", "version": b"3\n"}
    if data is not None:
        recs["data/0"] = data
    return _zip(recs)


def _legacy_file(pkl: bytes) -> bytes:
    header = _saved(0, _use_new_zipfile_serialization=False)     # magic, version, sys_info, 0, [] ...
    return header[:header.index(b"\x80\x02K\x00.")] + pkl


class _Reduce:
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def test_hand_written_pickle_matches_torch():
    ok = _tensor_file(_tensor_pickle(size=(3, 2), stride=(1, 3), offset=0, requires_grad=True))
    _same(_load(ok), _oracle(ok))


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_hostile_reduce_is_refused_and_never_run(tmp_path, legacy):
    marker = tmp_path / "executed"
    wrap = _legacy_file if legacy else _tensor_file
    cases = [
        (_Reduce(os.system, f"touch {marker}"), f"'{os.system.__module__}.system'"),
        (_Reduce(eval, f"open({str(marker)!r}, 'w')"), "'builtins.eval'"),
        (_Reduce(getattr, "abc", "upper"), "'builtins.getattr'"),
        (_Reduce(open, str(marker), "w"), "'io.open'"),
        ({"model": _Reduce(os.system, f"touch {marker}")}, f"'{os.system.__module__}.system'"),
    ]
    for obj, name in cases:
        for protocol in (2, 4):                          # GLOBAL and STACK_GLOBAL
            with pytest.raises(CheckpointError, match=f"refused the global {name}") as err:
                _load(wrap(pickle.dumps(obj, protocol=protocol)), weights_only=False)
            assert "nothing from the file was run" in str(err.value)
    assert not marker.exists()


def test_refused_globals_and_opcodes():
    lookalikes = [("os", "_rebuild_tensor_v2"), ("torch._utils_x", "_rebuild_tensor_v2"), ("collections", "Ordered"),
                  ("torch.nn.modules.linear", "Linear"), ("torch", "load"), ("builtins", "__import__"),
                  ("torch.serialization", "_get_layout"), ("copyreg", "_reconstructor"), ("evil", "FloatStorage")]
    for module, name in lookalikes:
        with pytest.raises(CheckpointError, match=f"refused the global '{module}.{name}'"):
            _load(_tensor_file(b"\x80\x02" + _glob(module, name) + b")R."))
    body = _tensor_pickle()[:-1]
    refused = {
        "BUILD instruction targets a tensor": body + b"}" + _str("requires_grad") + b"\x88sb.",
        "BUILD instruction targets the global 'collections.OrderedDict'":
            b"\x80\x02" + _glob("collections", "OrderedDict") + b"}b.",
        "BUILD instruction targets the global 'torch.FloatStorage'":
            b"\x80\x02" + _glob("torch", "FloatStorage") + b"}b.",
        "BUILD instruction targets the storage": b"\x80\x02" + _tuple(_str("storage"), _glob("torch", "FloatStorage"),
                                                                      _str("0"), _str("cpu"), _int(6)) + b"Q}b.",
        "gives a collections.OrderedDict the state tuple":
            b"\x80\x02" + _glob("collections", "OrderedDict") + b")R" + _tuple(b"N", b"}") + b"b.",
        "NEWOBJ": b"\x80\x02" + _glob("collections", "OrderedDict") + b")\x81.",
        "calls 'torch.float32'": b"\x80\x02" + _glob("torch", "float32") + b")R.",
        "memo entry": b"\x80\x02}r\xff\xff\xff\x7f.",                           # LONG_BINPUT 2**31-1
        "pickle is malformed": b"\x80\x02]h\x05.",                               # memo entry never stored
        "persistent id": b"\x80\x02" + _str("x") + b"Q.",
        "nested more than": b"\x80\x02" + b"]" * 300 + b"a" * 299 + b".",
        "global 'torch._utils._rebuild_tensor_v2' cannot be loaded as a value":
            b"\x80\x02" + _glob("torch._utils", "_rebuild_tensor_v2") + b".",
    }
    for reason, pkl in refused.items():
        with pytest.raises(CheckpointError, match=reason):
            _load(_tensor_file(pkl))


def test_impossible_storages_and_tensors_are_refused_before_reading():
    cases = {
        "needs 9223372036854775808 bytes": (_tensor_pickle(numel=2 ** 61), ...),   # 2**61 floats: nothing allocated
        "needs 1152921504606846976 bytes": (_tensor_pickle(numel=2 ** 60, storage="ByteStorage"), ...),
        "no record for storage": (_tensor_pickle(), None),
        "needs 24 bytes .* holds 8": (_tensor_pickle(), b"\0" * 8),
        "reaches element 6 of the storage '0', which has 6": (_tensor_pickle(offset=1), ...),
        "reaches element 8": (_tensor_pickle(size=(2, 2), stride=(4, 4)), ...),
        "too large": (_tensor_pickle(size=(2 ** 40, 2 ** 40), stride=(0, 0)), ...),
        "non-negative": (_tensor_pickle(stride=(3, -1)), ...),
        "differ in length": (_tensor_pickle(size=(6,)), ...),
        "int64 tensors cannot require grad": (_tensor_pickle(numel=3, storage="LongStorage", size=(3,), stride=(1,),
                                                              requires_grad=True), ...),
        "unknown storage location": (_tensor_pickle().replace(_str("cpu"), _str("cpu:x")), ...),
    }
    for reason, (pkl, data) in cases.items():
        raw = _tensor_file(pkl) if data is ... else _tensor_file(pkl, data)
        with pytest.raises(CheckpointError, match=reason):
            _load(raw)
    # a huge claim costs nothing: refused before anything is allocated
    huge = _tensor_file(_tensor_pickle(numel=2 ** 60, size=(2 ** 30,), stride=(1,)))
    tracemalloc.start()
    with pytest.raises(CheckpointError, match="needs 4611686018427387904 bytes"):
        _load(huge)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20
    # a storage record damaged after it was written: the zip's CRC catches it
    good = _tensor_file(_tensor_pickle())
    data_at = good.index(struct.pack("<6f", *range(6)))
    with pytest.raises(CheckpointError, match="cannot be read"):
        _load(good[:data_at + 4] + b"\x7f" + good[data_at + 5:])
    # legacy: a storage shorter than its count says
    legacy = _saved({"w": torch.ones(4)}, _use_new_zipfile_serialization=False)
    with pytest.raises(CheckpointError, match="ends inside storage"):
        _load(legacy[:-3])


# -- regressions ---------------------------------------------------------------------------
def _deep(n: int) -> bytes:
    """A tuple nested `n` deep, as TUPLE1 opcodes write it: ((...(1,)...),)."""
    return b"K\x01" + b"\x85" * n


# Each hashes an object nested a million deep as the unpickler builds it: a dict key (SETITEM),
# a set member (ADDITEMS) and a frozenset member (FROZENSET).
_CRASH = b"\x80\x02}" + _deep(1_000_000) + b"Ns."
_HASHED_DEEP = {"dict key": _CRASH, "set member": b"\x80\x04\x8f(" + _deep(1_000_000) + b"\x90.",
                "frozenset member": b"\x80\x04(" + _deep(1_000_000) + b"\x91."}


def test_objects_nested_too_deep_are_refused_before_unpickling(tmp_path):
    """Hashing a tuple nested a million deep overflowed the C stack and killed the interpreter."""
    paths = []
    for wrap in (_tensor_file, _legacy_file):
        paths.append(tmp_path / f"deep-{wrap.__name__}.pt")
        paths[-1].write_bytes(wrap(_CRASH))
    script = ("import sys\nimport ember\nfrom ember.serialization import CheckpointError\nfor p in sys.argv[1:]:\n"
              "    try:\n        ember.load(p)\n    except CheckpointError as e:\n        print('refused:', e)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))
    done = subprocess.run([sys.executable, "-c", script, *map(str, paths)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": root})
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])      # not killed by SIGSEGV
    assert done.stdout.count("nested more than 200 levels deep") == 2, done.stdout
    # in this process only once a crash is known not to happen
    for pkl in _HASHED_DEEP.values():
        for wrap in (_tensor_file, _legacy_file):
            with pytest.raises(CheckpointError, match="objects are nested more than 200 levels deep"):
                _load(wrap(pkl))
    # the memo keeps a depth: a tuple 150 deep, memoized, popped and fetched, then nested 60 more
    via_memo = b"\x80\x02" + _deep(150) + b"q\x00" + b"0" + b"h\x00" + b"\x85" * 60 + b"."
    with pytest.raises(CheckpointError, match="objects are nested more than 200"):
        _load(_tensor_file(via_memo))
    # so does APPEND, into the list it keeps (the list holds a tuple 200 deep)
    with pytest.raises(CheckpointError, match="objects are nested more than 200"):
        _load(_tensor_file(b"\x80\x02]" + _deep(200) + b"a."))
    # a nesting within the limit still loads, as a key and in a list
    out = _load(_tensor_file(b"\x80\x02}" + _deep(150) + b"Ns."))
    key = next(iter(out))
    for _ in range(150):
        key = key[0]
    assert key == 1
    assert len(_load(_tensor_file(b"\x80\x02]" + _deep(199) + b"a."))) == 1


def _overlapping_zip(n: int, size: int) -> bytes:
    """A torch zip checkpoint of `n` uint8 tensors of `size` bytes whose storage records overlap:
    each record starts after its own local header, and its data runs on over the headers after
    it into one shared payload, so `n * size` bytes come from a file of about `size`."""
    names = [f"archive/data/{i}".encode() for i in range(n)]

    def local(name: bytes, data: bytes) -> bytes:
        return struct.pack("<4s2B4HL2L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, zlib.crc32(data), len(data),
                           len(data), len(name), 0) + name

    heads = b"".join(local(name, b"") for name in names)
    blob = heads + np.arange(size, dtype=np.uint8).tobytes()
    records, pos = [], 0
    for name in names:
        start = pos + 30 + len(name)
        records.append((name, pos, blob[start:start + size]))
        pos = start
    items = b"".join(_tensor_pickle(numel=size, size=(size,), stride=(1,), storage="ByteStorage", key=str(i))[2:-1]
                     for i in range(n))
    for name, data in ((b"archive/data.pkl", b"\x80\x02](" + items + b"e."), (b"archive/byteorder", b"little")):
        records.append((name, len(blob), data))
        blob += local(name, data) + data
    central = b"".join(struct.pack("<4s4B4HL2L5H2L", b"PK\x01\x02", 20, 0, 20, 0, 0, 0, 0, 0, zlib.crc32(data),
                                   len(data), len(data), len(name), 0, 0, 0, 0, 0, offset) + name
                       for name, offset, data in records)
    return blob + central + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(records), len(records), len(central),
                                        len(blob), 0)


def test_overlapping_or_compressed_storage_records_are_refused():
    """Records checked one by one against the archive let overlapping ones load a file's bytes
    many times over: 40 records of 64 KiB from a file of about 70 KB."""
    raw = _overlapping_zip(40, 1 << 16)                # (zipfile before Python 3.11.8 reads each record)
    assert len(raw) * 20 < 40 << 16
    with pytest.raises(CheckpointError, match="span .* bytes, more than the .*-byte archive holds"):
        _load(raw)
    assert len(_load(_overlapping_zip(1, 1 << 16))[0]) == 1 << 16     # one record overlaps nothing
    # torch never compresses a storage: a deflated one (up to ~1000:1) is refused
    recs = _records(_saved({"w": torch.zeros(1000)}))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in recs.items():
            z.writestr(f"archive/{name}", data)
    with pytest.raises(CheckpointError, match="storage record '0' is compressed .*never compresses storages"):
        _load(buf.getvalue())


def test_legacy_length_claims_past_the_end_are_refused_from_a_path(tmp_path):
    """A BINBYTES8 (or BINUNICODE8, BYTEARRAY8) claiming 2**45 bytes: a real file's reader
    allocated them before reading (MemoryError)."""
    path = tmp_path / "huge.pt"
    for op in (b"\x8e", b"\x8d", b"\x96"):
        path.write_bytes(_legacy_file(b"\x80\x02" + op + struct.pack("<Q", 2 ** 45) + b"x" * 16 + b"."))
        for source in (path, str(path), io.BytesIO(path.read_bytes())):
            with pytest.raises(CheckpointError, match="malformed.*but only"):
                ember.load(source)


class _TorchFileObject:
    """A file object with only what torch.load asks of one: read, readline, seek and tell."""

    def __init__(self, data: bytes) -> None:
        self.data = io.BytesIO(data)
        self.reads: list[int] = []

    def read(self, n=-1):
        self.reads.append(n)
        return self.data.read(n)

    def readline(self, n=-1):
        return self.data.readline(n)

    def seek(self, pos, whence=0):
        return self.data.seek(pos, whence)

    def tell(self):
        return self.data.tell()


class _ShortReads(_TorchFileObject):
    """The same, saying it can seek, whose reads return at most 1000 bytes (as a raw stream may)."""

    def read(self, n=-1):
        return super().read(n if 0 <= n <= 1000 else 1000)

    def seekable(self):
        return True


def test_file_objects_need_only_read_readline_seek_and_tell():
    obj = {"w": torch.arange(5000, dtype=torch.float32), "b": torch.ones(3, dtype=torch.int64), "s": "x" * 3000}
    f = _TorchFileObject(_saved(obj, **FORMATS["legacy"]))     # read in place (it had to have readinto)
    _same(serialization_torch.load_legacy(f, _location_fn(None)), obj)
    assert all(n >= 0 for n in f.reads), f.reads                # and never all at once
    for fmt in ("zip", "legacy"):
        raw = _saved(obj, **FORMATS[fmt])
        _same(ember.load(_TorchFileObject(raw)), obj)          # (ember.load copies one that cannot say it seeks)
        _same(ember.load(_ShortReads(raw)), obj)


def test_meta_tensors_are_checked_as_other_tensors():
    def meta(dtype=_glob("torch", "float32"), size=(2, 3), stride=(3, 1), requires_grad=b"\x89"):
        return _tensor_file(b"\x80\x02" + _glob("torch._utils", "_rebuild_meta_tensor_no_storage") + _tuple(
            dtype, _tuple(*map(_int, size)), _tuple(*map(_int, stride)), requires_grad) + b"R.", None)

    t = _load(meta())
    assert t.device.type == "meta" and tuple(t.shape) == (2, 3) and t.dtype == ember.float32
    cases = {"too large": meta(size=(2 ** 61, 2 ** 61), stride=(0, 0)),
             "a meta tensor's dtype must be a torch dtype, got int": meta(dtype=_int(3)),
             "complex64 is not supported": meta(dtype=_glob("torch", "complex64")),
             "differ in length": meta(stride=(1,)),
             "int64 tensors cannot require grad": meta(dtype=_glob("torch", "int64"), requires_grad=b"\x88"),
             "_rebuild_tensor_v3's dtype must be a torch dtype": _tensor_file(
                 _tensor_pickle().replace(b"_rebuild_tensor_v2", b"_rebuild_tensor_v3")
                 .replace(b")RtR", b")R" + _int(1) + b"tR")),
             "a Parameter with backward hooks": _tensor_file(
                 b"\x80\x02" + _glob("torch._utils", "_rebuild_parameter") + b"(" + _tensor_pickle()[2:-1]
                 + b"\x89}K\x01K\x02stR.")}
    for reason, raw in cases.items():
        with pytest.raises(CheckpointError, match=reason):
            _load(raw)


def test_an_invalid_unpickling_argument_raises_its_own_error():
    for fmt in ("zip", "legacy"):
        raw = _saved({"w": torch.ones(2)}, **FORMATS[fmt])
        for bad in ({"encoding": 123}, {"errors": 5}):
            with pytest.raises(TypeError) as err:
                _load(raw, **bad)
            assert not isinstance(err.value, CheckpointError)
        assert _load(raw, encoding="latin1")["w"].tolist() == [1.0, 1.0]


def test_one_list_of_dtypes_and_one_shape_check():
    assert torch_unpickler._SUPPORTED_DTYPES == tuple(_DTYPE_CODES) == tuple(DTYPES)
    dims = (1,) * 65
    with pytest.raises(CheckpointError, match="at most 64 non-negative ints"):
        _load(_tensor_file(_tensor_pickle(numel=1, size=dims, stride=dims), struct.pack("<f", 1.0)))
    assert tuple(_load(_tensor_file(_tensor_pickle(numel=1, size=dims[:64], stride=dims[:64]),
                                    struct.pack("<f", 1.0))).shape) == dims[:64]


def test_a_mapping_takes_no_attribute_but_metadata():
    def od(*state: bytes) -> bytes:
        return b"\x80\x02" + _glob("collections", "OrderedDict") + b")R}" + b"".join(state) + b"b."

    assert _load(_tensor_file(od(_str("_metadata"), b"}", b"s")))._metadata == {}
    for name in ("items", "keys", "__class__", "x"):
        with pytest.raises(CheckpointError, match=f"the attributes '{name}': only _metadata"):
            _load(_tensor_file(od(_str(name), b"K\x05s")))


def test_string_opcodes_decode_without_touching_the_warning_filters():
    """Python 2's STRING opcode: an invalid escape (which decoding warns of) is refused, so the
    loader changes no process-wide warning filter (not thread-safe); with warnings as errors too."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        filters = list(warnings.filters)
        for wrap in (_tensor_file, _legacy_file):
            keys = b"\x80\x02]." if wrap is _legacy_file else b""        # (a legacy file's list of storage keys)
            assert _load(wrap(b"S'a\\nb\\x41\\101\\\\\\'\"'\n." + keys)) == "a\nbAA\\'\""
            for esc in (b"\\q", b"\\400", b"\\8", b"\\ "):
                with pytest.raises(CheckpointError, match="invalid escape sequence"):
                    _load(wrap(b"S'a" + esc + b"b'\n."))
            with pytest.raises(CheckpointError, match="malformed"):
                _load(wrap(b"S'\\x4'\n."))
            # a GLOBAL's line is not decoded (pickletools would undo escapes there too, and warn)
            with pytest.raises(CheckpointError, match=r"refused the global 'os\\\\q\.system'"):
                _load(wrap(b"\x80\x02" + _glob("os\\q", "system") + b")R."))
        assert warnings.filters == filters


# -- fuzz ------------------------------------------------------------------------------------
_OPCODES = b"(.0hqrRbcQtsue])}NK\x85\x86\x87\x88\x89\x8a\x80\x81X"


def _fuzz_seeds():
    base = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    obj = {"w": base, "view": base[:, 1], "b": torch.tensor([1, 2]), "sd": torch.nn.Linear(2, 1).state_dict(),
           "meta": {"step": 3, "lr": 0.5, "t": (None, True)}, 7: [torch.ones(1, dtype=torch.bfloat16)],
           "p": torch.nn.Parameter(torch.zeros(2))}
    return _saved(obj), _saved(obj, pickle_protocol=4), _saved(obj, _use_new_zipfile_serialization=False)


def _mutate(data: bytes, rng) -> bytes:
    data = bytearray(data)
    kind = int(rng.integers(0, 5))
    pos = int(rng.integers(0, len(data)))
    if kind == 0:                                    # flip 1..3 bytes
        for p in rng.choice(len(data), size=int(rng.integers(1, 4)), replace=False):
            data[p] ^= int(rng.integers(1, 256))
    elif kind == 1:                                  # one byte becomes a pickle opcode
        data[pos] = _OPCODES[int(rng.integers(0, len(_OPCODES)))]
    elif kind == 2:                                  # truncate
        del data[pos:]
    elif kind == 3:                                  # insert random bytes
        data[pos:pos] = rng.integers(0, 256, size=int(rng.integers(1, 9)), dtype=np.uint8).tobytes()
    else:                                            # delete a span
        del data[pos:pos + int(rng.integers(1, 9))]
    return bytes(data)


def test_fuzz_damaged_torch_files_load_or_raise_checkpoint_error():
    """1000 mutated PyTorch files: the pickle (protocol 2 and 4) inside an intact zip, the zip's
    bytes, and the legacy stream. Each one loads or raises CheckpointError; nothing is imported."""
    zipped, zipped4, legacy = _fuzz_seeds()
    pickles = [_records(zipped), _records(zipped4)]
    for raw in (zipped, zipped4, legacy):
        _load(raw)
    rng = np.random.default_rng(2024)
    modules = set(sys.modules)
    outcomes = Counter()
    for i in range(1000):
        which = i % 4
        if which < 2:
            recs = pickles[which]
            raw = _zip({**recs, "data.pkl": _mutate(recs["data.pkl"], rng)})
        else:
            raw = _mutate(zipped if which == 2 else legacy, rng)
        try:
            _load(raw)
            outcomes["loaded", which] += 1
        except CheckpointError:
            outcomes["refused", which] += 1
    assert sum(outcomes.values()) == 1000
    assert all(outcomes["refused", w] > 50 for w in range(4)), outcomes
    assert outcomes["loaded", 0] + outcomes["loaded", 1] > 10, outcomes
    # (the standard library's codecs load on first use: zipfile decodes a damaged entry name as cp437)
    assert {m for m in set(sys.modules) - modules if not m.startswith("encodings.")} == set()
