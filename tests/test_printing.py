"""Differential tests: ember.frontend.printing.tensor_repr against repr(torch_tensor).

Ember prints PyTorch's text with one change: dtypes are named `ember.float64`, not `torch.float64`.
"""
import importlib.util
import pathlib

import ml_dtypes
import numpy as np
import pytest
import torch


def trepr(t) -> str:
    """torch's repr with its dtype names spelled as ember's."""
    return repr(t).replace("dtype=torch.", "dtype=ember.")

_PATH = pathlib.Path(__file__).resolve().parents[1] / "ember" / "frontend" / "printing.py"
_spec = importlib.util.spec_from_file_location("_ember_printing_under_test", _PATH)
printing = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(printing)

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
NP_DTYPE = {"bfloat16": ml_dtypes.bfloat16}


def np_array(data, dtype_name):
    with np.errstate(over="ignore"):  # 1e9 -> inf in float16 is part of the table
        return np.asarray(data, dtype=np.float64 if dtype_name == "bfloat16" else None
                          ).astype(NP_DTYPE.get(dtype_name, dtype_name))


def to_torch(arr, dtype_name):
    if dtype_name == "bfloat16":  # exact: arr already holds bfloat16 values
        return torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.array(arr, copy=True))  # keeps 0-d arrays 0-d


def ours(arr, dtype_name, **kw):
    kw.setdefault("device", "cpu")
    return printing.tensor_repr(arr, dtype_name=dtype_name, shape=arr.shape, **kw)


def check(data, dtype_name, **kw):
    arr = np_array(data, dtype_name)
    expected = trepr(to_torch(arr, dtype_name))
    assert ours(arr, dtype_name, **kw) == expected
    return expected


@pytest.fixture(autouse=True)
def _restore_printoptions():
    yield
    torch.set_printoptions(profile="default")
    printing.set_printoptions(profile="default")
    torch.set_default_dtype(torch.float32)


# ----------------------------------------------------------------------------- data tables

SHAPES = [(), (1,), (5,), (3, 4), (2, 3, 4), (40,), (4, 25), (2, 2, 2, 3),
          (0,), (0, 3), (2, 0, 4), (1001,), (40, 40), (11, 12, 13), (2, 3, 3, 50)]


def _int_range(dtype_name):
    if dtype_name == "bool":
        return 0, 2
    if dtype_name == "int64":
        return -(10 ** 15), 10 ** 15
    info = np.iinfo(dtype_name)
    return int(info.min), int(info.max) + 1


def _float_generators(rng):
    return {
        "randn": lambda n: rng.standard_normal(n),
        "big": lambda n: rng.standard_normal(n) * 1e5,  # ratio > 1000 -> sci mode
        "tiny": lambda n: rng.random(n) * 1e-5,
        "huge": lambda n: rng.standard_normal(n) * 1e9,
        "ints": lambda n: rng.integers(-100, 100, n).astype(np.float64),
        "ints_sci": lambda n: rng.integers(-10 ** 6, 10 ** 6, n).astype(np.float64),
        "mixed": lambda n: np.where(rng.random(n) < 0.5, rng.integers(-9, 9, n),
                                    rng.standard_normal(n)),
        "special": lambda n: rng.choice(
            [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 1e-3, 3.0], n),
        "nonfinite": lambda n: rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0], n),
    }


def _cases():
    rng = np.random.default_rng(0)
    cases = []
    for dtype_name in DTYPES:
        for shape in SHAPES:
            n = int(np.prod(shape))
            if dtype_name in FLOATS:
                gens = _float_generators(rng)
                if n > 1000:  # large tensors: a few generators are enough
                    gens = {k: gens[k] for k in ("randn", "big", "special")}
                for name, gen in gens.items():
                    cases.append((dtype_name, name, gen(n).reshape(shape)))
            else:
                lo, hi = _int_range(dtype_name)
                data = rng.integers(lo, hi, n, dtype=np.int64).reshape(shape)
                cases.append((dtype_name, "random", data))
                if dtype_name != "bool":
                    small = rng.integers(max(lo, -5), min(hi, 5), n).reshape(shape)
                    cases.append((dtype_name, "small", small))
    return cases


CASES = _cases()


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_table_against_torch(dtype_name):
    for case_dtype, gen_name, data in CASES:
        if case_dtype == dtype_name:
            arr = np_array(data, dtype_name)
            expected = trepr(to_torch(arr, dtype_name))
            assert ours(arr, dtype_name) == expected, (gen_name, data.shape)


@pytest.mark.parametrize("data,dtype_name", [
    (3.0, "float32"), (-0.0, "float32"), (0.0, "float64"), (float("nan"), "float32"),
    (float("inf"), "float16"), (-float("inf"), "bfloat16"), (1e-5, "float32"),
    (123456789.0, "float64"), (0.1, "float32"), (1.5, "bfloat16"), (True, "bool"),
    (2 ** 62, "int64"), (-(2 ** 63), "int64"), (255, "uint8"), (-128, "int8"),
    ([0.0, -0.0], "float32"), ([1.0, float("nan")], "float32"), ([1e-4, 1e4], "float64"),
    ([1e-4, 0.1], "float32"), ([1e8, 1.0], "float32"), ([1e9], "float64"),
    ([1.0, 2.0, 3.5], "float16"), ([65504.0, -65504.0], "float16"), ([1e-8], "float16"),
    ([2.0 ** 64, 1.0], "float64"), ([1e300, 1e-300], "float64"), ([5e-324], "float64"),
    ([[1.0, 2.0], [3.0, 4.0]], "float32"), ([[True, False]], "bool"),
    ([9007199254740993, -1], "int64"), ([[-1, 10], [100, -1000]], "int32"),
    (np.arange(100, dtype=np.float64) * 1.1, "float32"),
    (np.arange(1000), "int64"), (np.arange(1001), "int64"),
    (np.arange(1001) * 0.5, "float32"), (np.linspace(-1e6, 1e6, 300), "float64"),
])
def test_special_values(data, dtype_name):
    check(data, dtype_name)


def test_autograd_suffixes():
    rng = np.random.default_rng(1)
    for shape in [(), (3,), (2, 3), (3, 30), (50, 50)]:
        arr = rng.standard_normal(shape).astype(np.float32)
        leaf = torch.tensor(arr, requires_grad=True)
        assert ours(arr, "float32", requires_grad=True) == trepr(leaf)
        for out in (leaf * 2, (leaf + 1).sum(), leaf.exp()):
            out_arr = out.detach().numpy()
            name = type(out.grad_fn).__name__
            got = ours(out_arr, "float32", requires_grad=True, grad_fn=name)
            assert got == trepr(out)
        for dtype_name, dt in (("float64", torch.float64), ("float16", torch.float16),
                               ("bfloat16", torch.bfloat16)):
            t = leaf.detach().to(dt).requires_grad_()
            a = np_array(arr, dtype_name)
            assert ours(a, dtype_name, requires_grad=True) == trepr(t)
            assert ours(a, dtype_name, requires_grad=True, grad_fn="MulBackward0") == trepr(t * 1)
    param = torch.nn.Parameter(torch.ones(2, 1000))
    assert ours(np.ones((2, 1000), np.float32), "float32", requires_grad=True,
                is_leaf_param=True) == trepr(param)


def test_device_suffix():
    int_arr = np.array([1, 2, 3], dtype=np.int32)
    cpu = trepr(torch.from_numpy(int_arr))
    assert cpu == "tensor([1, 2, 3], dtype=ember.int32)"
    assert ours(int_arr, "int32", device="opencl:0") == cpu.replace(
        "], dtype", "], device='opencl:0', dtype")
    f_arr = np.array([[1.5, 2.0], [3.0, 4.0]], dtype=np.float32)
    cpu = trepr(torch.from_numpy(f_arr))
    assert ours(f_arr, "float32", device="cuda:0") == cpu[:-1] + ", device='cuda:0')"
    scalar = np.array(3.0, dtype=np.float32)
    assert ours(scalar, "float32", device="opencl:0", requires_grad=True) == \
        "tensor(3., device='opencl:0', requires_grad=True)"
    assert ours(f_arr, "float32", device="cpu:0") == trepr(torch.from_numpy(f_arr))


@pytest.mark.parametrize("shape", [(2, 3), (), (0,), (0, 3), (4,), (2, 3, 4)])
@pytest.mark.parametrize("dtype_name", ["float32", "float64", "int64", "bool", "bfloat16"])
def test_meta(shape, dtype_name):
    dt = getattr(torch, dtype_name)
    t = torch.empty(shape, device="meta", dtype=dt)
    assert printing.tensor_repr(None, dtype_name=dtype_name, shape=shape, device="meta") == trepr(t)
    if dt.is_floating_point:
        t.requires_grad_()
        assert printing.tensor_repr(None, dtype_name=dtype_name, shape=shape, device="meta",
                                    requires_grad=True) == trepr(t)


def test_default_dtype_float64():
    torch.set_default_dtype(torch.float64)
    for dtype_name in ["float32", "float64", "int64", "int32", "bool", "float16"]:
        for data in ([1.5, 2.0], [], np.zeros((0, 2)), 2.0):
            arr = np_array(data, dtype_name)
            got = ours(arr, dtype_name, default_float_dtype="float64")
            assert got == trepr(to_torch(arr, dtype_name))


def test_complex():
    rng = np.random.default_rng(2)
    for dtype_name in ("complex64", "complex128"):
        for shape in [(), (4,), (3, 5), (2000,)]:
            for scale in (1.0, 1e6):
                arr = np.asarray((rng.standard_normal(shape)
                                  + 1j * rng.standard_normal(shape)) * scale).astype(dtype_name)
                assert ours(arr, dtype_name) == trepr(torch.from_numpy(arr))
        arr = np.array([1 - 0j, -0.0 + 2j, np.nan + 1j], dtype=dtype_name)
        assert ours(arr, dtype_name) == trepr(torch.from_numpy(arr))


PRINT_OPTION_SETS = [
    dict(precision=2), dict(precision=8), dict(sci_mode=False), dict(sci_mode=True),
    dict(threshold=5), dict(threshold=20, edgeitems=1), dict(edgeitems=0, threshold=3),
    dict(linewidth=40), dict(linewidth=200, precision=1), dict(profile="short"),
    dict(profile="full"), dict(profile="short", precision=6),
]


@pytest.mark.parametrize("opts", PRINT_OPTION_SETS, ids=str)
def test_printoptions_against_torch(opts):
    torch.set_printoptions(**opts)
    printing.set_printoptions(**opts)
    assert printing.get_printoptions() == torch._tensor_str.get_printoptions()
    for dtype_name, gen_name, data in CASES[::11]:
        if data.size > 1200:
            continue
        arr = np_array(data, dtype_name)
        expected = trepr(to_torch(arr, dtype_name))
        assert ours(arr, dtype_name) == expected, (dtype_name, gen_name, data.shape)
    arr = np.arange(30, dtype=np.float32).reshape(5, 6) / 7
    leaf = torch.tensor(arr, requires_grad=True)
    assert ours(arr, "float32", requires_grad=True) == trepr(leaf)


def test_printoptions_semantics():
    assert printing.get_printoptions() == {
        "precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
    printing.set_printoptions(precision=2, sci_mode=True)
    printing.set_printoptions(threshold=10)  # sci_mode is reset to None, as in torch
    assert printing.get_printoptions()["sci_mode"] is None
    assert printing.get_printoptions()["precision"] == 2
    with printing.printoptions(precision=7):
        assert printing.get_printoptions()["precision"] == 7
    assert printing.get_printoptions()["precision"] == 2


def test_no_numpy_import_at_module_level():
    source = _PATH.read_text()
    top_level = [line for line in source.splitlines() if line.startswith(("import", "from"))]
    assert not any("numpy" in line for line in top_level)
