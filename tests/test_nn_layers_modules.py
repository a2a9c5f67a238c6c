"""ember.nn layers against torch.nn: same layer in both, torch's state_dict copied across,
same input; outputs, input gradients and parameter gradients compared; reprs compared."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
import torch.nn as tnn


def _e(t: torch.Tensor) -> ember.Tensor:
    return ember.tensor(t.detach().numpy())


def _copy_state(tm: torch.nn.Module, em: enn.Module) -> None:
    tsd, esd = tm.state_dict(), em.state_dict()
    assert list(tsd.keys()) == list(esd.keys())
    em.load_state_dict({k: _e(v) for k, v in tsd.items()})


def _close(a, b, rtol=1e-5, atol=1e-5) -> None:
    np.testing.assert_allclose(np.asarray(a.detach().numpy() if isinstance(a, ember.Tensor) else a),
                               b.detach().numpy(), rtol=rtol, atol=atol)


def _check(name, tm, em, *inputs, train=True, grad=True, rtol=1e-5, atol=1e-5, call=None):
    """Compare forward (and backward of a weighted sum) of torch module `tm` and ember module `em`."""
    _copy_state(tm, em)
    tm.train(train)
    em.train(train)
    tin = [x.clone().requires_grad_(grad and x.is_floating_point()) for x in inputs]
    ein = [_e(x).requires_grad_(grad and x.is_floating_point()) for x in inputs]
    tout = tm(*tin) if call is None else call(tm, *tin)
    eout = em(*ein) if call is None else call(em, *ein)
    if isinstance(tout, tuple):
        tout, eout = tout[0], eout[0]
    _close(eout, tout, rtol, atol)
    if grad:
        w = torch.linspace(-1, 1, tout.numel()).reshape(tout.shape)
        (tout * w).sum().backward()
        (eout * _e(w)).sum().backward()
        for ti, ei in zip(tin, ein):
            if ti.requires_grad:
                _close(ei.grad, ti.grad, rtol, atol)
        tparams = dict(tm.named_parameters())
        for n, p in em.named_parameters():
            if tparams[n].grad is None:
                assert p.grad is None, n
            else:
                _close(p.grad, tparams[n].grad, rtol, atol)
    # buffers (running statistics) follow torch's
    tbufs = dict(tm.named_buffers())
    for n, b in em.named_buffers():
        _close(b, tbufs[n], rtol, atol)
    assert repr(em) == repr(tm), name


torch.manual_seed(0)
X2 = torch.randn(4, 6)
X3 = torch.randn(2, 5, 6)
IMG = torch.randn(2, 3, 8, 8)
SEQ = torch.randn(2, 3, 9)

CASES = [
    ("linear", lambda nn: nn.Linear(6, 5), (X2,)),
    ("linear_nobias_3d", lambda nn: nn.Linear(6, 3, bias=False), (X3,)),
    ("bilinear", lambda nn: nn.Bilinear(6, 4, 3), (X2, torch.randn(4, 4))),
    ("identity", lambda nn: nn.Identity(54, unused=1), (X2,)),
    ("flatten", lambda nn: nn.Flatten(), (IMG,)),
    ("flatten_range", lambda nn: nn.Flatten(0, 2), (IMG,)),
    ("unflatten", lambda nn: nn.Unflatten(1, (2, 3)), (X2,)),
    ("conv1d", lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), (SEQ,)),
    ("conv1d_same_reflect", lambda nn: nn.Conv1d(3, 4, 4, padding="same", padding_mode="reflect", bias=False),
     (SEQ,)),
    ("conv2d", lambda nn: nn.Conv2d(3, 6, 3, padding=1, groups=3, dilation=1), (IMG,)),
    ("conv2d_stride_dil", lambda nn: nn.Conv2d(3, 2, (3, 2), stride=(2, 1), dilation=2), (IMG,)),
    ("conv2d_circular", lambda nn: nn.Conv2d(3, 2, 3, padding=2, padding_mode="circular"), (IMG,)),
    ("convT2d", lambda nn: nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), (IMG,)),
    ("convT2d_groups", lambda nn: nn.ConvTranspose2d(3, 6, 2, groups=3, bias=False, dilation=2), (IMG,)),
    ("maxpool2d", lambda nn: nn.MaxPool2d(2), (IMG,)),
    ("maxpool2d_pad", lambda nn: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), (IMG,)),
    ("avgpool2d", lambda nn: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (IMG,)),
    ("adaptiveavg", lambda nn: nn.AdaptiveAvgPool2d((3, None)), (IMG,)),
    ("adaptiveavg1", lambda nn: nn.AdaptiveAvgPool2d(1), (IMG,)),
    ("bn1d", lambda nn: nn.BatchNorm1d(6), (X2,)),
    ("bn1d_3d_cumulative", lambda nn: nn.BatchNorm1d(5, momentum=None), (X3,)),
    ("bn2d", lambda nn: nn.BatchNorm2d(3, eps=1e-3, momentum=0.3), (IMG,)),
    ("bn2d_noaffine", lambda nn: nn.BatchNorm2d(3, affine=False), (IMG,)),
    ("bn2d_notrack", lambda nn: nn.BatchNorm2d(3, track_running_stats=False), (IMG,)),
    ("layernorm", lambda nn: nn.LayerNorm(6), (X3,)),
    ("layernorm_nobias", lambda nn: nn.LayerNorm([5, 6], bias=False, eps=1e-6), (X3,)),
    ("layernorm_noaffine", lambda nn: nn.LayerNorm(6, elementwise_affine=False), (X2,)),
    ("groupnorm", lambda nn: nn.GroupNorm(3, 6), (torch.randn(2, 6, 4),)),
    ("rmsnorm", lambda nn: nn.RMSNorm(6), (X3,)),
    ("rmsnorm_2d_eps", lambda nn: nn.RMSNorm([5, 6], eps=1e-3), (X3 * 1e-2,)),
    ("rmsnorm_noaffine", lambda nn: nn.RMSNorm(6, elementwise_affine=False), (X2,)),
    ("relu", lambda nn: nn.ReLU(), (X2,)),
    ("gelu_tanh", lambda nn: nn.GELU(approximate="tanh"), (X2,)),
    ("gelu", lambda nn: nn.GELU(), (X2,)),
    ("silu", lambda nn: nn.SiLU(), (X2,)),
    ("tanh", lambda nn: nn.Tanh(), (X2,)),
    ("sigmoid", lambda nn: nn.Sigmoid(), (X2,)),
    ("softmax", lambda nn: nn.Softmax(dim=1), (X2,)),
    ("logsoftmax", lambda nn: nn.LogSoftmax(dim=-1), (X3,)),
    ("leakyrelu", lambda nn: nn.LeakyReLU(0.2), (X2,)),
    ("elu", lambda nn: nn.ELU(alpha=0.5), (X2,)),
    ("softplus", lambda nn: nn.Softplus(beta=2.0, threshold=5.0), (X2,)),
    ("hardtanh", lambda nn: nn.Hardtanh(-0.5, 0.5), (X2,)),
    ("relu6", lambda nn: nn.ReLU6(), (X2 * 4,)),
    ("mish", lambda nn: nn.Mish(), (X2,)),
    ("hardswish", lambda nn: nn.Hardswish(), (X2,)),
    ("selu", lambda nn: nn.SELU(), (X2,)),
    ("prelu", lambda nn: nn.PReLU(3), (IMG,)),
    ("glu", lambda nn: nn.GLU(), (X2,)),
    ("dropout_eval", lambda nn: nn.Dropout(0.3), (X2,)),
]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64"])
def test_rms_norm_dtypes_match_torch(dtype):
    """Computed in the opmath type (float32 for half types) and cast back; eps=None is that type's epsilon."""
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(3, 4, 8, generator=g) * 1e-3).to(getattr(torch, dtype))   # small values: eps matters
    w = torch.randn(8, generator=g).to(getattr(torch, dtype))
    rtol = {"bfloat16": 2 ** -8, "float16": 2 ** -11, "float64": 1e-13}[dtype]     # one rounding of the output
    for eps in (None, 1e-2):
        t = torch.nn.functional.rms_norm(x, (8,), w, eps)
        e = enn.functional.rms_norm(_e(x.double()).to(getattr(ember, dtype)), [8],
                                    _e(w.double()).to(getattr(ember, dtype)), eps)
        assert str(e.dtype).split(".")[-1] == dtype
        np.testing.assert_allclose(e.to(ember.float64).numpy(), t.double().numpy(), rtol=rtol, atol=0)


def test_rms_norm_errors_name_the_argument():
    with pytest.raises(RuntimeError, match=r"rms_norm\(\): Given normalized_shape=\[5\], expected input with shape "
                                           r"\[\*, 5\], but got input of size\[2, 3\]"):
        enn.functional.rms_norm(ember.zeros(2, 3), [5])
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        enn.functional.rms_norm(ember.zeros(2, 4), [4], ember.ones(3))
    with pytest.raises(RuntimeError, match="Given normalized_shape"):
        torch.nn.functional.rms_norm(torch.zeros(2, 3), [5])


@pytest.mark.parametrize("name,make,inputs", CASES, ids=[c[0] for c in CASES])
def test_layer_matches_torch(name, make, inputs):
    train = not name.startswith("dropout")
    _check(name, make(tnn), make(enn), *inputs, train=train)


@pytest.mark.parametrize("name,make,inputs", [c for c in CASES if c[0].startswith("bn")],
                         ids=[c[0] for c in CASES if c[0].startswith("bn")])
def test_batchnorm_eval_after_training(name, make, inputs):
    tm, em = make(tnn), make(enn)
    _copy_state(tm, em)
    for _ in range(3):            # running statistics accumulate over three batches
        tm(inputs[0] * 2 + 1)
        em(_e(inputs[0] * 2 + 1))
    _check(name, tm, em, *inputs, train=False)
    if tm.track_running_stats:
        assert int(em.num_batches_tracked) == int(tm.num_batches_tracked) == 3


def test_embedding_padding_idx():
    tm, em = tnn.Embedding(10, 4, padding_idx=-2), enn.Embedding(10, 4, padding_idx=-2)
    assert em.padding_idx == 8 and (em.weight[8] == 0).all()
    idx = torch.tensor([[1, 8, 3], [8, 8, 0]])
    _copy_state(tm, em)
    tout, eout = tm(idx), em(ember.tensor(idx.numpy()))
    _close(eout, tout)
    w = torch.randn(tout.shape)
    (tout * w).sum().backward()
    (eout * _e(w)).sum().backward()
    _close(em.weight.grad, tm.weight.grad)
    assert repr(em) == repr(tm) == "Embedding(10, 4, padding_idx=8)"
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        enn.Embedding(3, 2, padding_idx=3)


def test_dropout_train_statistics():
    ember.manual_seed(0)
    d = enn.Dropout(0.25)
    y = d(ember.ones(200, 100))
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.75) < 0.02
    np.testing.assert_allclose(y[y != 0].numpy(), 1 / 0.75, rtol=1e-6)
    d.eval()
    assert (d(ember.ones(3)) == 1).all()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        enn.Dropout(1.5)


LOSSES = [
    ("ce", lambda nn: nn.CrossEntropyLoss(), "cls"),
    ("ce_weight_smooth", lambda nn, T: nn.CrossEntropyLoss(weight=T.tensor([1.0, 2.0, 0.5, 1.0]), ignore_index=1,
                                                            label_smoothing=0.1), "cls"),
    ("nll_sum", lambda nn: nn.NLLLoss(reduction="sum"), "logp"),
    ("mse", lambda nn: nn.MSELoss(), "reg"),
    ("l1_none", lambda nn: nn.L1Loss(reduction="none"), "reg"),
    ("smoothl1", lambda nn: nn.SmoothL1Loss(beta=0.5), "reg"),
    ("bce", lambda nn: nn.BCELoss(), "prob"),
    ("bcelogits_pos", lambda nn, T: nn.BCEWithLogitsLoss(pos_weight=T.tensor([1.0, 2.0, 3.0, 0.5])), "logit"),
    ("kldiv", lambda nn: nn.KLDivLoss(reduction="batchmean"), "kl"),
    ("legacy_reduce", lambda nn: nn.MSELoss(size_average=False), "reg"),
]


@pytest.mark.parametrize("name,make,kind", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_modules(name, make, kind):
    torch.manual_seed(1)
    x = torch.randn(5, 4)
    if kind in ("cls", "logp"):
        t = torch.tensor([0, 3, 1, 2, 1])
        if kind == "logp":
            x = torch.log_softmax(x, 1)
    elif kind == "prob":
        x, t = torch.sigmoid(x), torch.rand(5, 4)
    elif kind == "kl":
        x, t = torch.log_softmax(x, 1), torch.softmax(torch.randn(5, 4), 1)
    else:
        t = torch.randn(5, 4) if kind == "reg" else torch.rand(5, 4)
    import inspect
    two = len(inspect.signature(make).parameters) == 2
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        tm = make(tnn, torch) if two else make(tnn)
    with warnings.catch_warnings(record=True) as ew:
        warnings.simplefilter("always")
        em = make(enn, ember) if two else make(enn)
    assert [str(w.message) for w in ew] == [str(w.message) for w in tw]
    assert list(em.state_dict()) == list(tm.state_dict())
    assert em.reduction == tm.reduction
    xt = x.clone().requires_grad_(True)
    xe = _e(x).requires_grad_(True)
    tl, el = tm(xt, t), em(xe, ember.tensor(t.numpy()))
    _close(el, tl)
    tl.sum().backward()
    el.sum().backward()
    _close(xe.grad, xt.grad)
    assert repr(em) == repr(tm)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "bool", "float_attn", "kpm_float"])
def test_multihead_attention(batch_first, masks):
    torch.manual_seed(2)
    tm = tnn.MultiheadAttention(8, 2, batch_first=batch_first)
    em = enn.MultiheadAttention(8, 2, batch_first=batch_first)
    L, S, N = 3, 4, 2
    q = torch.randn((N, L, 8) if batch_first else (L, N, 8))
    kv = torch.randn((N, S, 8) if batch_first else (S, N, 8))
    kw = {}
    if masks == "bool":
        kw["key_padding_mask"] = torch.tensor([[False, False, True, False], [False, True, True, False]])
        kw["attn_mask"] = torch.tensor([[False, True, False, False]] * L)
    elif masks == "float_attn":
        kw["attn_mask"] = torch.randn(N * 2, L, S)
    elif masks == "kpm_float":
        kw["key_padding_mask"] = torch.randn(N, S)
    for need, avg in ((True, True), (True, False), (False, True)):
        def call(m, q_, k_, v_, lib_kw):
            return m(q_, k_, v_, need_weights=need, average_attn_weights=avg, **lib_kw)

        _copy_state(tm, em)
        tq, tk = q.clone().requires_grad_(), kv.clone().requires_grad_()
        eq, ek = _e(q).requires_grad_(), _e(kv).requires_grad_()
        to, tw = call(tm, tq, tk, tk, kw)
        eo, ew = call(em, eq, ek, ek, {k: _e(v) for k, v in kw.items()})
        _close(eo, to)
        if need:
            _close(ew, tw)
        else:
            assert ew is None and tw is None
        (to ** 2).sum().backward()
        (eo ** 2).sum().backward()
        _close(eq.grad, tq.grad)
        _close(ek.grad, tk.grad)
        _close(em.in_proj_weight.grad, tm.in_proj_weight.grad)
        _close(em.out_proj.bias.grad, tm.out_proj.bias.grad)
        tm.zero_grad()
        em.zero_grad()
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())


def test_multihead_attention_kdim_vdim_bias_kv():
    tm = tnn.MultiheadAttention(8, 4, kdim=5, vdim=3, add_bias_kv=True, add_zero_attn=True)
    em = enn.MultiheadAttention(8, 4, kdim=5, vdim=3, add_bias_kv=True, add_zero_attn=True)
    q, k, v = torch.randn(3, 2, 8), torch.randn(4, 2, 5), torch.randn(4, 2, 3)
    _check("mha_kv", tm, em, q, k, v, call=lambda m, a, b, c: m(a, b, c)[0])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_encoder_layer(norm_first, activation, batch_first):
    torch.manual_seed(3)
    kw = dict(dim_feedforward=16, dropout=0.0, activation=activation, batch_first=batch_first, norm_first=norm_first)
    tm, em = tnn.TransformerEncoderLayer(8, 2, **kw), enn.TransformerEncoderLayer(8, 2, **kw)
    x = torch.randn((2, 5, 8) if batch_first else (5, 2, 8))
    mask = torch.triu(torch.full((5, 5), float("-inf")), 1)
    _check("tel", tm, em, x, call=lambda m, a: m(a, src_mask=mask if m is tm else _e(mask)), rtol=1e-4, atol=1e-5)


def test_transformer_encoder_layer_module_activation_and_padding_mask():
    kw = dict(dim_feedforward=12, dropout=0.0, batch_first=True)
    tm, em = tnn.TransformerEncoderLayer(8, 4, activation=tnn.GELU(), **kw), \
        enn.TransformerEncoderLayer(8, 4, activation=enn.GELU(), **kw)
    assert list(em.state_dict()) == list(tm.state_dict())
    x = torch.randn(2, 5, 8)
    kpm = torch.tensor([[False] * 5, [False, False, False, True, True]])
    _check("tel_kpm", tm, em, x, call=lambda m, a: m(a, src_key_padding_mask=kpm if m is tm else _e(kpm)),
           rtol=1e-4, atol=1e-5)


def test_small_model_repr_matches_torch():
    def build(nn):
        return nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Dropout(0.25), nn.Flatten(), nn.ModuleList([nn.Linear(128, 16) for _ in range(3)]),
            nn.ModuleDict({"act": nn.GELU(approximate="tanh"), "ln": nn.LayerNorm(16, bias=False)}),
            nn.Embedding(5, 2, max_norm=1.0), nn.GroupNorm(2, 4), nn.ConvTranspose2d(2, 2, 3, stride=2, bias=False),
            nn.Softmax(dim=1), nn.LeakyReLU(), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d((1, 1)), nn.Unflatten(1, (2, 2)),
            nn.MultiheadAttention(4, 2), nn.CrossEntropyLoss())
    assert repr(build(enn)) == repr(build(tnn))


def test_transformer_encoder_stack_and_deepcopy():
    import copy
    tm = tnn.TransformerEncoder(tnn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2, norm=tnn.LayerNorm(8),
                                enable_nested_tensor=False)
    em = enn.TransformerEncoder(enn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2, norm=enn.LayerNorm(8))
    _check("encoder", tm, em, torch.randn(4, 2, 8), rtol=1e-4, atol=1e-5)
    c = copy.deepcopy(em)
    assert c.layers[0].linear1.weight is not em.layers[0].linear1.weight
    assert isinstance(c.layers[0].linear1.weight, enn.Parameter)
    assert (c.layers[0].linear1.weight == em.layers[0].linear1.weight).all()


def test_layer_extras_match_torch():
    w = torch.randn(4, 3)
    te, ee = tnn.Embedding.from_pretrained(w, padding_idx=1), enn.Embedding.from_pretrained(_e(w), padding_idx=1)
    assert not ee.weight.requires_grad and repr(ee) == repr(te)
    _close(ee(ember.tensor([[0, 3]])), te(torch.tensor([[0, 3]])))
    x = torch.randn(1, 3, 5, 5)
    tc, ec = tnn.ConvTranspose2d(3, 2, 3, stride=2), enn.ConvTranspose2d(3, 2, 3, stride=2)
    _copy_state(tc, ec)
    _close(ec(_e(x), output_size=[12, 12]), tc(x, output_size=[12, 12]))
    with pytest.raises(ValueError, match="requested an output size of"):
        ec(_e(x), output_size=[20, 20])
    tp, ep = tnn.MaxPool2d(2, return_indices=True), enn.MaxPool2d(2, return_indices=True)
    (to, ti), (eo, ei) = tp(x), ep(_e(x))
    _close(eo, to)
    assert ei.tolist() == ti.tolist()
    tm, em = tnn.MultiheadAttention(6, 3), enn.MultiheadAttention(6, 3)
    _copy_state(tm, em)
    q = torch.randn(4, 6)                  # unbatched (L, E)
    (to, tw), (eo, ew) = tm(q, q, q), em(_e(q), _e(q), _e(q))
    _close(eo, to)
    _close(ew, tw)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        enn.Conv2d(3, 4, 1, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        enn.Conv1d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        enn.BatchNorm2d(3)(ember.randn(2, 3, 4))
