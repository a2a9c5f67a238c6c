"""ember.utils.flop_counter.FlopCounterMode against torch.utils.flop_counter.FlopCounterMode: the same
computation gives the same totals, per module and per op (op names without torch's "aten."), forward
and backward; ops without a formula are reported as unknown; the mode changes no result."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode as TorchFlopCounter

import ember
from ember.testing import models
from ember.utils.flop_counter import FlopCounterMode
from ember.utils.flop_formulas import FLOP_FORMULAS, register_flop_formula

# torch's formulas our registry names stand for (torch decomposes sdpa into bmm on cpu and meta)
_TORCH_NAME = {"scaled_dot_product_attention": "bmm"}


def _run(lib, fn):
    counter_cls = FlopCounterMode if lib is ember else TorchFlopCounter
    with counter_cls(display=False) as counter:
        fn()
    return counter


def _per_op(counter) -> dict:
    """{module: {op name: flops}} with torch's op packets named as ember's ops."""
    out = {}
    for mod, ops in counter.get_flop_counts().items():
        d = {}
        for op, n in ops.items():
            name = str(op).removeprefix("aten.")
            name = _TORCH_NAME.get(name, name)
            d[name] = d.get(name, 0) + n
        out[mod] = d
    return out


def _same_model(make, seed=0):
    """The model `make(lib)` in torch and in ember with torch's initial values."""
    torch.manual_seed(seed)
    tm = make(torch)
    em = make(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, em


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Sequential(nn.Linear(16, 16), nn.Tanh()), nn.Linear(16, 4))


def _convnet(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 4, 3, stride=2, groups=2), nn.ConvTranspose2d(4, 2, 2, stride=2),
                         nn.Flatten(), nn.Linear(2 * 6 * 6, 5))


@pytest.mark.parametrize("make,shape,input_grad", [(_mlp, (5, 8), True), (_convnet, (2, 3, 14, 14), False)],
                         ids=["mlp", "convnet"])
def test_forward_backward_matches_torch(make, shape, input_grad):
    tm, em = _same_model(make)
    x = torch.randn(*shape)
    tx, ex = x.clone().requires_grad_(input_grad), ember.tensor(x.numpy()).requires_grad_(input_grad)
    tc = _run(torch, lambda: tm(tx).square().sum().backward())
    ec = _run(ember, lambda: em(ex).square().sum().backward())
    assert ec.get_total_flops() == tc.get_total_flops() > 0
    assert _per_op(ec) == _per_op(tc)
    # backward ran inside: parameter gradients exist and are torch's
    for (n, p), tp in zip(em.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=n)


def test_unknown_ops_are_reported_not_counted():
    tm, em = _same_model(_mlp)
    x = ember.randn(5, 8, requires_grad=True)
    ec = _run(ember, lambda: em(x).sum().backward())
    unknown = ec.get_unknown_ops()
    assert unknown["relu"] == 1 and unknown["tanh"] == 1            # forward pointwise ops
    assert "mm" not in unknown and "addmm" not in unknown and "view" not in unknown
    assert ec.get_unknown_ops("Sequential.0") == {"sum.dim_IntList": 1}   # addmm, mm and the bias gradient's sum
    assert "tanh" in ec.get_unknown_ops("Sequential.2") and "relu" not in ec.get_unknown_ops("Sequential.2")
    table = ec.get_table()
    assert "Ops without a FLOP formula (not counted):" in table and "relu x1" in table
    rows = [line.split()[0] for line in table.splitlines()[2:] if not line.lstrip().startswith(("-", "Ops"))]
    assert rows == ["Sequential", "Sequential.0", "Sequential.2", "Sequential.3"]   # depth 2; Sequential.1 has no FLOPs


@pytest.mark.parametrize("kind", ["gqa", "causal_3d", "mask"])
def test_sdpa_forward_backward_matches_torch(kind):
    g = torch.Generator().manual_seed(0)
    kw: dict = {}
    if kind == "gqa":
        shapes, kw = [(2, 4, 6, 8), (2, 2, 5, 8), (2, 2, 5, 3)], {"enable_gqa": True}
    elif kind == "causal_3d":
        shapes, kw = [(3, 6, 8)] * 3, {"is_causal": True}
    else:
        shapes = [(1, 2, 4, 8), (1, 2, 7, 8), (1, 2, 7, 8)]
    ts = [torch.randn(*s, generator=g, requires_grad=True) for s in shapes]
    es = [ember.tensor(t.detach().numpy()).requires_grad_() for t in ts]
    mask = torch.randn(4, 7, generator=g)
    fwd = {}
    for lib, counter_cls, qkv in ((torch, TorchFlopCounter, ts), (ember, FlopCounterMode, es)):
        extra = {} if kind != "mask" else {"attn_mask": mask if lib is torch else ember.tensor(mask.numpy())}
        with counter_cls(display=False) as counter:
            out = lib.nn.functional.scaled_dot_product_attention(*qkv, **kw, **extra)
            fwd[lib] = counter.get_total_flops()
            out.sum().backward()
        fwd[lib, "total"] = counter.get_total_flops()
    # without a mask ember's backward is one fused op (its four products); with one, the decomposition's bmms
    backward_op = "bmm" if kind == "mask" else "_scaled_dot_product_attention_fused_backward"
    assert set(counter.get_flop_counts()["Global"]) == {"scaled_dot_product_attention", backward_op}
    if kind == "mask":
        # torch 2.13's counter cannot decompose its cpu kernel with a float mask and counts 0;
        # ember counts what torch's own formula gives for the fused kernels
        from torch.utils.flop_counter import sdpa_flop_count

        assert fwd[ember] == sdpa_flop_count(*shapes) == 2 * 2 * 4 * 7 * (8 + 8)
        assert fwd[ember, "total"] == 3 * fwd[ember]
        return
    assert fwd[ember] == fwd[torch] > 0
    # torch's math path counts its backward's four bmms; ember's fused backward recomputes the scores
    # first (it saves no weights), counted as torch's formula counts its fused kernels' backward
    from torch.utils.flop_counter import sdpa_backward_flop_count

    q, k, v = (s if len(s) == 4 else (1,) + s for s in shapes)
    assert fwd[torch, "total"] == 3 * fwd[torch]
    assert fwd[ember, "total"] == fwd[ember] + sdpa_backward_flop_count(q[:-1] + v[-1:], q, k, v) > 3 * fwd[ember]


def test_gpt2_small_on_meta_matches_torch_meta():
    """Forward (then forward and backward) of GPT-2 small on meta: totals and every module's count."""
    e = models.build_gpt2(device="meta")
    with torch.device("meta"):
        t = models.build_gpt2(lib=torch)
    forward = {}

    def step(lib, model, counter_box):
        def run():
            y = model(lib.zeros(2, 16, dtype=lib.int64, device="meta"))
            forward[lib] = {m: sum(ops.values()) for m, ops in counter_box[0].get_flop_counts().items()}
            y.sum().backward()
        return run

    counts = {}
    for lib, model, counter_cls in ((ember, e, FlopCounterMode), (torch, t, TorchFlopCounter)):
        box = [None]
        with counter_cls(display=False) as counter:
            box[0] = counter
            step(lib, model, box)()
        counts[lib] = {m: sum(ops.values()) for m, ops in counter.get_flop_counts().items()}
        if lib is ember:
            unknown = counter.get_unknown_ops()
    assert forward[ember] == forward[torch]
    assert forward[ember]["Global"] == 7_924_924_416
    assert forward[ember]["GPT2.lm_head"] == 2 * 2 * 16 * 768 * 50257
    assert {m for m in forward[ember] if m.count(".") == 2} == {f"GPT2.h.{i}" for i in range(12)}
    assert {m for m in forward[ember] if m.count(".") < 2} == {"Global", "GPT2", "GPT2.lm_head"}   # depth 2
    # ember's fused attention backward recomputes the scores (it saves no weights), which torch's math
    # path on meta does not: one more q @ k^T per attention (batch 2, 12 heads, 16 x 16, head dim 64)
    recompute = 2 * 2 * 12 * 16 * 16 * 64

    def attentions_in(module: str) -> int:
        if module in ("Global", "GPT2"):
            return 12
        return int(module.startswith("GPT2.h.") and (module.count(".") == 2 or module.endswith(".attn")))

    assert counts[ember] == {m: c + recompute * attentions_in(m) for m, c in counts[torch].items()}
    assert counts[torch]["Global"] == 23_774_773_248
    assert {"add.Tensor", "gelu", "native_layer_norm", "embedding_dense_backward", "mul.Tensor"} <= set(unknown)


def test_custom_mapping_and_registered_formulas():
    a, b = ember.randn(3, 4), ember.randn(4, 5)
    with FlopCounterMode(display=False, custom_mapping={"mm": lambda x, y, out_shape: 7}) as c:
        ember.mm(a, b)
        ember.matmul(a, b)                     # composite: followed into mm
    assert c.get_flop_counts() == {"Global": {"mm": 14}}
    with pytest.raises(RuntimeError, match="duplicate registrations for 'mm'"):
        register_flop_formula("mm")(lambda *a, **k: 0)
    assert FLOP_FORMULAS["mm"]((3, 4), (4, 5)) == 2 * 3 * 4 * 5


def test_display_prints_the_table(capsys):
    with FlopCounterMode():
        ember.mm(ember.randn(30, 40), ember.randn(40, 50))
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["Module", "FLOP", "%", "Total"]
    assert out.splitlines()[2].split() == ["Global", "120.000K", "100.00%"]


def test_mode_changes_no_result_under_autocast():
    """Following a composite into its decomposition runs what the device would run (autocast included)."""
    tm, em = _same_model(_mlp)
    x = ember.randn(4, 8)
    with ember.no_grad(), ember.autocast("cpu", dtype=ember.bfloat16):
        ref = em(x)
        with FlopCounterMode(display=False) as c:
            got = em(x)
    assert got.dtype == ref.dtype == ember.bfloat16
    np.testing.assert_array_equal(got.float().numpy(), ref.float().numpy())
    assert c.get_total_flops() == 2 * 4 * (8 * 16 + 16 * 16 + 16 * 4)
    grads = []
    for counted in (False, True):                     # a training step: same outputs and gradients
        em.zero_grad()
        counter = FlopCounterMode(display=False)
        if counted:
            counter.__enter__()
        with ember.autocast("cpu", dtype=ember.bfloat16):
            y = em(x)
        ember.nn.functional.cross_entropy(y.float(), ember.tensor([0, 1, 2, 3])).backward()
        if counted:
            counter.__exit__(None, None, None)
        grads.append([y.detach().float().numpy()] + [p.grad.numpy().copy() for p in em.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("build,cfg", [
    (models.build_gpt2, models.GPT2Config(vocab_size=100, n_ctx=32, n_embd=64, n_layer=2, n_head=4)),
    (models.build_llama, models.LlamaConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4, hidden_dim=96))],
    ids=["gpt2", "llama"])
def test_tiny_decoders_training_step_per_module(build, cfg):
    """Forward and backward through residual blocks: each module's backward counted for it, as torch.

    torch 2.13's counter counts 0 for its cpu SDPA kernel on these (transposed, causal) inputs;
    ember counts torch's SDPA formulas there: the forward's two products, and the backward's five
    (the scores recomputed, then four gradient products).
    """
    from torch.utils.flop_counter import sdpa_backward_flop_count, sdpa_flop_count

    counts = {}
    for lib in (torch, ember):
        model = build(cfg, lib=lib)
        x = lib.zeros(2, 5, dtype=lib.int64)
        counter = _run(lib, lambda: model(x).sum().backward())
        counts[lib] = {m: sum(ops.values()) for m, ops in counter.get_flop_counts().items()}
    heads = cfg.n_head if hasattr(cfg, "n_head") else cfg.n_heads
    width = cfg.n_embd if hasattr(cfg, "n_embd") else cfg.dim
    qkv = [(2, heads, 5, width // heads)] * 3
    sdpa = sdpa_flop_count(*qkv) + sdpa_backward_flop_count(qkv[0], *qkv)
    expected = {}
    for m, n in counts[torch].items():
        attentions = sum(1 for a in counts[torch] if a.endswith((".attn", ".attention")) and
                         (m == "Global" or a == m or a.startswith(m + ".")))
        expected[m] = n + attentions * sdpa
    assert counts[ember] == expected


def test_llama7b_training_step_on_meta_matches_closed_form():
    """The memory CLI's LLaMA configuration (batch 1, seq 2048, bfloat16): 6 x matmul parameters x tokens, plus
    attention's two products forward and five backward per layer (torch's formulas)."""
    with ember.device("meta"):
        model = models.llama7b().to(ember.bfloat16)
    with FlopCounterMode(display=False) as counter:
        model(ember.zeros(1, 2048, dtype=ember.int64, device="meta")).float().sum().backward()
    d, h, v, layers, t = 4096, 11008, 32000, 32, 2048
    matmul_params = layers * (4 * d * d + 3 * d * h) + v * d          # the embedding is a gather
    # q @ k^T and attn @ v forward; the scores recomputed and four gradient products backward
    attention = layers * (2 + 5) * (2 * t * t * d)
    assert counter.get_total_flops() == 6 * matmul_params * t + attention == 88_884_348_190_720
    per_layer = {m: sum(ops.values()) for m, ops in counter.get_flop_counts().items() if m.count(".") == 2}
    assert len(per_layer) == layers and len(set(per_layer.values())) == 1


def test_composite_with_native_kernel_is_unknown_unless_autograd_decomposes_it():
    """cpu runs cross_entropy_loss with its own kernel (one unknown op); under autograd it runs the
    decomposition, which the counter follows (its parts are the unknown ops, counted as they run).
    (Probability targets: F.cross_entropy takes class indices through _cross_entropy_indices.)"""
    x, target = ember.randn(4, 5), ember.softmax(ember.randn(4, 5), 1)
    with FlopCounterMode(display=False) as c:
        ember.nn.functional.cross_entropy(x, target)
    assert c.get_unknown_ops() == {"cross_entropy_loss": 1}
    with FlopCounterMode(display=False) as c:
        ember.nn.functional.cross_entropy(x.requires_grad_(), target).backward()
    assert "cross_entropy_loss" not in c.get_unknown_ops() and c.get_unknown_ops()["log_softmax.int"] == 1


def test_module_tracker_forward_and_backward_as_torch():
    """Names as torch's (root class name, then attributes); in backward a module is current from its
    output's gradient to its input's; the same observations as torch.utils.module_tracker's."""
    import torch.utils.module_tracker

    from ember.utils.module_tracker import ModuleTracker

    observed = {}
    for lib, tracker_cls in ((torch, torch.utils.module_tracker.ModuleTracker), (ember, ModuleTracker)):
        nn = lib.nn
        model = nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.Tanh(), nn.Linear(4, 2)))
        seen, kept = [], {}
        with tracker_cls() as tracker:
            model[1][0].register_forward_pre_hook(lambda m, i: seen.append((tracker.is_bw, set(tracker.parents))))
            model[1][0].register_forward_hook(lambda m, i, o: kept.update(tanh_out=o))
            x = lib.randn(2, 3, requires_grad=True)
            y = model(x)
            seen.append(set(tracker.parents))
            kept["tanh_out"].register_hook(lambda g: seen.append((tracker.is_bw, set(tracker.parents))))
            x.register_hook(lambda g: seen.append((tracker.is_bw, set(tracker.parents))))
            y.sum().backward()
        observed[lib] = seen
    assert observed[ember] == observed[torch] == [
        (False, {"Global", "Sequential", "Sequential.1", "Sequential.1.0"}), {"Global"},
        (True, {"Global", "Sequential", "Sequential.1", "Sequential.1.0"}),   # tanh's backward is next
        (True, {"Global"})]                                                   # every module is done
