"""Building models on the meta device: parameter counts, forward shapes against torch's
meta device, construction time and memory of a LLaMA-7B-shaped model, to_empty, nn.init on meta."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

import ember
from ember.testing import models

TINY_LLAMA = models.LlamaConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4, hidden_dim=96, max_seq_len=32)
TINY_GPT2 = models.GPT2Config(vocab_size=100, n_ctx=32, n_embd=64, n_layer=2, n_head=4)


def _spec(t) -> tuple:
    return tuple(t.shape), str(t.dtype).split(".")[-1], tuple(t.stride()), t.device.type


@pytest.fixture(scope="module")
def gpt2_pair():
    """GPT-2 small on meta, in ember (device= argument) and in torch (torch.device context)."""
    e = models.build_gpt2(device="meta")
    with torch.device("meta"):
        t = models.build_gpt2(lib=torch)
    return e, t


def test_gpt2_small_parameter_count(gpt2_pair):
    e, t = gpt2_pair
    assert models.count_parameters(e) == 124_439_808 == models.count_parameters(t)
    assert e.lm_head.weight is e.wte.weight
    assert [(n, _spec(p)) for n, p in e.named_parameters()] == [(n, _spec(p)) for n, p in t.named_parameters()]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gpt2_small_meta_forward_matches_torch_meta(gpt2_pair, dtype):
    e, t = gpt2_pair
    e, t = e.to(getattr(ember, dtype)), t.to(getattr(torch, dtype))
    ye = e(ember.zeros(2, 16, dtype=ember.int64, device="meta"))
    yt = t(torch.zeros(2, 16, dtype=torch.int64, device="meta"))
    assert _spec(ye) == _spec(yt) == ((2, 16, 50257), dtype, (16 * 50257, 50257, 1), "meta")


def test_tiny_llama_meta_forward_matches_torch_meta():
    with ember.device("meta"):
        e = models.build_llama(TINY_LLAMA)
    with torch.device("meta"):
        t = models.build_llama(TINY_LLAMA, lib=torch)
    assert [(n, _spec(p)) for n, p in e.named_parameters()] == [(n, _spec(p)) for n, p in t.named_parameters()]
    ye, yt = e(ember.zeros(2, 5, dtype=ember.int64, device="meta")), t(torch.zeros(2, 5, dtype=torch.int64, device="meta"))
    assert _spec(ye) == _spec(yt) == ((2, 5, 100), "float32", (500, 100, 1), "meta")


_LLAMA_SCRIPT = """
import json, resource, sys, time
def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
import ember
from ember.testing import models
before = rss_mb()
start = time.perf_counter()
with ember.device("meta"):
    model = models.llama7b()
seconds = time.perf_counter() - start
growth = rss_mb() - before
print(json.dumps({"seconds": seconds, "rss_growth_mb": growth, "params": models.count_parameters(model),
                  "devices": sorted({p.device.type for p in model.parameters()}),
                  "n_params": len(list(model.parameters()))}))
"""


def test_llama7b_builds_on_meta_fast_and_small():
    """Under 5 s and under 200 MB resident growth (measured in a fresh interpreter)."""
    out = subprocess.run([sys.executable, "-c", _LLAMA_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"LLaMA-7B on meta: {r['seconds']:.2f} s, {r['rss_growth_mb']:.1f} MB resident growth")
    # closed form: embedding + head 2*V*d, per layer 4*d*d + 3*d*h + 2*d (norms), final norm d
    v, d, h, n = 32000, 4096, 11008, 32
    assert r["params"] == 2 * v * d + n * (4 * d * d + 3 * d * h + 2 * d) + d == 6_738_415_616
    assert r["devices"] == ["meta"] and r["n_params"] == 2 + 9 * n + 1
    assert r["seconds"] < 5.0
    assert r["rss_growth_mb"] < 200.0


def test_to_empty_materialises_meta_on_cpu():
    with ember.device("meta"):
        m = models.build_gpt2(TINY_GPT2)
    ref = models.build_gpt2(TINY_GPT2, device="cpu")
    assert m.to_empty(device="cpu") is m
    assert [(n, _spec(p), type(p).__name__, p.requires_grad) for n, p in m.named_parameters()] == \
        [(n, _spec(p), type(p).__name__, p.requires_grad) for n, p in ref.named_parameters()]
    # ember keeps the tie (parameters are converted in place); torch's to_empty unties them
    assert m.lm_head.weight is m.wte.weight
    with torch.device("meta"):
        t = models.build_gpt2(TINY_GPT2, lib=torch)
    t.to_empty(device="cpu")
    assert t.lm_head.weight is not t.wte.weight
    for p in m.parameters():            # the storage is real and writable
        ember.nn.init.zeros_(p)
    assert _spec(m(ember.zeros(2, 5, dtype=ember.int64))) == ((2, 5, 100), "float32", (500, 100, 1), "cpu")


_INITS = [("uniform_", ()), ("normal_", ()), ("trunc_normal_", ()), ("constant_", (0.5,)), ("ones_", ()),
          ("zeros_", ()), ("eye_", ()), ("xavier_uniform_", ()), ("xavier_normal_", ()), ("kaiming_uniform_", ()),
          ("kaiming_normal_", ()), ("orthogonal_", ()), ("sparse_", (0.5,))]


def test_nn_init_on_meta_is_a_shape_checked_no_op():
    for name, args in _INITS:
        t = ember.empty(4, 6, device="meta", dtype=ember.bfloat16)
        assert getattr(ember.nn.init, name)(t, *args) is t, name
        assert _spec(t) == ((4, 6), "bfloat16", (6, 1), "meta"), name
    # argument checks still run, as on torch's meta device
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        ember.nn.init.normal_(ember.empty(3, device="meta"), 0.0, -1.0)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        torch.nn.init.normal_(torch.empty(3, device="meta"), 0.0, -1.0)
    for lib in (ember, torch):
        with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
            lib.nn.init.xavier_uniform_(lib.empty(3, device="meta"))
