"""ember.load on checkpoints written by torch.save (zip and legacy formats) and by
safetensors.torch, compared with torch.load as the oracle; the allow-list unpickler refusing
hostile pickles without running them; and a fuzz test of 1000 damaged PyTorch files that
must each load or raise CheckpointError."""
from __future__ import annotations

import io
import math
import os
import pickle
import struct
import sys
import tracemalloc
import zipfile
from collections import Counter, OrderedDict

import numpy as np
import pytest

import ember
from ember.serialization import CheckpointError, _detect_format

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
    assert set(sys.modules) == modules
