"""ember.nn.Module, Parameter, containers, init and utils: behaviour and messages against torch.nn."""
from __future__ import annotations

import copy
import math
import re

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
import torch.nn as tnn


def _e(t):
    return ember.tensor(t.detach().numpy())


def _msg(s: str) -> str:
    """torch's message with torch's names spelled as ember's."""
    return s.replace("torch.Size", "ember.Size")


class _Net:
    """The same small model written against either library."""

    @staticmethod
    def build(nn, lib):
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.register_buffer("steps", lib.zeros(1))
                self.register_buffer("cache", lib.ones(2), persistent=False)
                self.scale = nn.Parameter(lib.ones(4))

            def forward(self, x):
                return self.fc(x) * self.scale

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Linear(3, 4, bias=False)
                self.blocks = nn.ModuleList([Block(), Block()])
                self.head = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))
                self.shared = self.head[1]       # the same module twice
                self.norm = nn.BatchNorm1d(4)

            def forward(self, x):
                x = self.embed(x)
                for b in self.blocks:
                    x = b(x)
                return self.head(self.norm(x))

        return Net()


@pytest.fixture
def nets():
    return _Net.build(tnn, torch), _Net.build(enn, ember)


def test_parameter_is_tensor_subclass():
    p = enn.Parameter(ember.ones(2, 2))
    assert isinstance(p, ember.Tensor) and isinstance(p, enn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert repr(p) == repr(tnn.Parameter(torch.ones(2, 2))).replace("torch", "ember")
    q = enn.Parameter(ember.ones(2), requires_grad=False)
    assert not q.requires_grad
    y = p * 2
    assert type(y) is ember.Tensor and not isinstance(y, enn.Parameter)
    assert repr(enn.Parameter()) == "Parameter containing:\ntensor([], requires_grad=True)"
    d = copy.deepcopy(p)
    assert isinstance(d, enn.Parameter) and d.requires_grad and (d == p).all()
    data = ember.zeros(3)
    shared = enn.Parameter(data)
    with ember.no_grad():
        shared.add_(1)
    assert data.tolist() == [1.0, 1.0, 1.0]          # shares storage, like torch


def test_named_members_match_torch(nets):
    tm, em = nets
    for fn in ("named_parameters", "named_buffers", "named_modules", "named_children"):
        assert [n for n, _ in getattr(em, fn)()] == [n for n, _ in getattr(tm, fn)()], fn
    for kw in (dict(prefix="m"), dict(recurse=False), dict(remove_duplicate=False)):
        assert [n for n, _ in em.named_parameters(**kw)] == [n for n, _ in tm.named_parameters(**kw)], kw
        assert [n for n, _ in em.named_buffers(**kw)] == [n for n, _ in tm.named_buffers(**kw)], kw
    assert ([n for n, _ in em.named_modules(prefix="p", remove_duplicate=False)]
            == [n for n, _ in tm.named_modules(prefix="p", remove_duplicate=False)])
    assert len(list(em.parameters())) == len(list(tm.parameters()))
    assert len(list(em.modules())) == len(list(tm.modules()))
    assert list(em.state_dict()) == list(tm.state_dict())
    assert "blocks.0.cache" not in em.state_dict()
    assert list(em.state_dict(prefix="x.")) == list(tm.state_dict(prefix="x."))
    sd = em.state_dict()
    assert not sd["embed.weight"].requires_grad
    assert em.state_dict(keep_vars=True)["embed.weight"] is em.embed.weight
    assert repr(em) == repr(tm)


def test_state_dict_roundtrip_and_forward(nets):
    tm, em = nets
    res = em.load_state_dict({k: _e(v) for k, v in tm.state_dict().items()})
    assert res.missing_keys == [] and res.unexpected_keys == [] and repr(res) == "<All keys matched successfully>"
    x = torch.randn(5, 3)
    np.testing.assert_allclose(em(_e(x)).detach().numpy(), tm(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_load_state_dict_errors_match_torch(nets):
    tm, em = nets
    tsd = tm.state_dict()
    bad = dict(tsd)
    del bad["head.1.bias"]
    del bad["blocks.1.steps"]
    bad["blocks.0.extra"] = torch.zeros(1)
    bad["nothing.here"] = torch.zeros(1)
    bad["embed.weight"] = torch.zeros(5, 3)
    ebad = {k: _e(v) for k, v in bad.items()}
    with pytest.raises(RuntimeError) as te:
        tm.load_state_dict(bad)
    with pytest.raises(RuntimeError) as ee:
        em.load_state_dict(ebad)
    assert str(ee.value) == _msg(str(te.value))
    # strict=False: only the size mismatch is an error
    del bad["embed.weight"], ebad["embed.weight"]
    tr = tm.load_state_dict(bad, strict=False)
    er = em.load_state_dict(ebad, strict=False)
    assert er.missing_keys == tr.missing_keys and er.unexpected_keys == tr.unexpected_keys
    assert er.missing_keys and er.unexpected_keys
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        em.load_state_dict([1, 2])


def test_load_state_dict_assign_and_0d_compat():
    lin = enn.Linear(2, 2)
    w = ember.ones(2, 2)
    lin.load_state_dict({"weight": w, "bias": ember.zeros(2)}, assign=True)
    assert isinstance(lin.weight, enn.Parameter) and lin.weight.requires_grad
    assert lin.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    bn = enn.BatchNorm1d(2)
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""] = {"version": 1}      # an old checkpoint: num_batches_tracked is filled in
    bn.load_state_dict(sd)


def test_setattr_getattr_delattr_semantics():
    for nn, lib in ((tnn, torch), (enn, ember)):
        m = nn.Module()
        m.w = nn.Parameter(lib.ones(1))
        m.register_buffer("b", lib.zeros(1))
        m.sub = nn.Linear(1, 1)
        m.plain = 3
        assert set(m._parameters) == {"w"} and set(m._buffers) == {"b"} and set(m._modules) == {"sub"}
        m.b = lib.ones(2)                       # a tensor assigned to a buffer name stays a buffer
        assert m._buffers["b"].shape == (2,)
        m.w = None
        assert "w" in m._parameters and m._parameters["w"] is None
        with pytest.raises(TypeError, match="cannot assign .* as parameter 'w'"):
            m.w = lib.ones(1)
        with pytest.raises(TypeError, match="cannot assign 'int' as child module 'sub'"):
            m.sub = 3
        with pytest.raises(KeyError, match="attribute 'plain' already exists"):
            m.register_parameter("plain", None)
        with pytest.raises(KeyError, match="parameter name can"):
            m.register_parameter("a.b", None)
        with pytest.raises(AttributeError, match="'Module' object has no attribute 'missing'"):
            m.missing
        m.sub = nn.Parameter(lib.ones(1))        # rebinding moves the name between stores
        assert "sub" not in m._modules and "sub" in m._parameters
        del m.b
        assert "b" not in m._buffers
        with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'q'"):
            m.register_parameter("q", _nonleaf_param(nn, lib))
        with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
            class Bad(nn.Module):
                def __init__(self):
                    self.p = nn.Parameter(lib.ones(1))
            Bad()
    m = enn.Module()
    m.register_buffer("x", ember.ones(1), persistent=False)
    m.y = enn.Buffer(ember.zeros(1), persistent=False)
    assert set(m._buffers) == {"x", "y"} and m._non_persistent_buffers_set == {"x", "y"}
    assert list(m.state_dict()) == []


def _nonleaf_param(nn, lib):
    p = nn.Parameter(lib.ones(1))
    q = p * 2
    q.__class__ = nn.Parameter          # a Parameter with history, as torch checks for
    return q


def test_get_submodule_and_parameter(nets):
    tm, em = nets
    assert em.get_submodule("blocks.1.fc") is em.blocks[1].fc
    assert em.get_parameter("blocks.0.scale") is em.blocks[0].scale
    assert em.get_buffer("norm.running_mean") is em.norm.running_mean
    for target in ("blocks.7", "head.0.weight", "nope"):
        with pytest.raises(AttributeError) as te:
            tm.get_submodule(target)
        with pytest.raises(AttributeError) as ee:
            em.get_submodule(target)
        assert str(ee.value) == str(te.value)
    with pytest.raises(AttributeError, match="`steps` is not an nn.Parameter"):
        em.get_parameter("blocks.0.steps")


def test_train_eval_apply_requires_grad_zero_grad(nets):
    _, em = nets
    em.eval()
    assert all(not m.training for m in em.modules())
    em.train()
    assert all(m.training for m in em.modules())
    seen = []
    em.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen[0] == "Linear"
    em(ember.randn(4, 3)).sum().backward()
    assert all(p.grad is not None for p in em.parameters())
    em.zero_grad(set_to_none=False)
    assert all((p.grad == 0).all() for p in em.parameters())
    em.zero_grad()
    assert all(p.grad is None for p in em.parameters())
    em.requires_grad_(False)
    assert not any(p.requires_grad for p in em.parameters())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        em.train("yes")


def test_to_dtype_and_device(nets):
    _, em = nets
    w = em.embed.weight
    em.double()
    assert em.embed.weight is w and w.dtype == ember.float64          # parameters converted in place
    assert em.norm.num_batches_tracked.dtype == ember.int64           # integer buffers untouched
    assert em.blocks[0].steps.dtype == ember.float64
    em.to(ember.float32)
    assert w.dtype == ember.float32
    em.half()
    assert w.dtype == ember.float16
    em.float()
    em.to("cpu")
    em.cpu()
    em(ember.randn(3, 3)).sum().backward()
    em.to(dtype=ember.float64)
    assert w.grad.dtype == ember.float64
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes"):
        em.to(ember.int32)
    em.to_empty(device="meta")
    assert w.device.type == "meta" and w.shape == (4, 3) and em.norm.running_mean.device.type == "meta"


def test_forward_hooks_with_handles():
    for nn, lib in ((tnn, torch), (enn, ember)):
        m = nn.Linear(2, 2)
        calls = []

        def pre(mod, args):
            calls.append("pre")
            return (args[0] * 0,)

        def post(mod, args, out):
            calls.append("post")
            return out + 1

        def pre_kw(mod, args, kwargs):
            calls.append("pre_kw")

        h1 = m.register_forward_pre_hook(pre)
        h2 = m.register_forward_hook(post)
        h3 = m.register_forward_pre_hook(pre_kw, with_kwargs=True, prepend=True)
        out = m(lib.ones(1, 2))
        assert calls == ["pre_kw", "pre", "post"]
        assert np.allclose(np.asarray(out.detach().numpy()), (m.bias.detach().numpy() + 1))
        h1.remove()
        h2.remove()
        h3.remove()
        calls.clear()
        m(lib.ones(1, 2))
        assert calls == []
        with m.register_forward_hook(lambda mod, a, o: calls.append("ctx")):
            m(lib.ones(1, 2))
        m(lib.ones(1, 2))
        assert calls == ["ctx"]


def test_sequential_slicing_and_containers():
    s = enn.Sequential(enn.Linear(2, 3), enn.ReLU(), enn.Linear(3, 1))
    assert isinstance(s[1:], enn.Sequential) and len(s[1:]) == 2 and s[-1] is s[2]
    ts3 = tnn.Sequential(tnn.Linear(2, 3), tnn.ReLU(), tnn.Linear(3, 1))
    assert list(s[::2]._modules) == list(ts3[::2]._modules) == ["0", "2"]
    del s[1]
    assert list(s._modules) == ["0", "1"]
    s.append(enn.Sigmoid())
    s.insert(1, enn.Tanh())
    assert [type(m).__name__ for m in s] == ["Linear", "Tanh", "Linear", "Sigmoid"]
    ts = tnn.Sequential(tnn.Linear(2, 3), tnn.Tanh(), tnn.Linear(3, 1), tnn.Sigmoid())
    assert repr(s) == repr(ts)
    with pytest.raises(IndexError, match="index 9 is out of range"):
        s[9]
    from collections import OrderedDict
    named = enn.Sequential(OrderedDict([("a", enn.Linear(1, 1)), ("b", enn.ReLU())]))
    assert list(named.state_dict()) == ["a.weight", "a.bias"]
    ml = enn.ModuleList([enn.Linear(1, 1)])
    ml += [enn.ReLU()]
    ml.insert(0, enn.Tanh())
    assert [type(m).__name__ for m in ml] == ["Tanh", "Linear", "ReLU"] and len(ml[1:]) == 2
    md = enn.ModuleDict({"x": enn.ReLU()})
    md["y"] = enn.Linear(1, 1)
    assert list(md.keys()) == ["x", "y"] and "y" in md and md.pop("x").__class__.__name__ == "ReLU"


def test_parameter_list_and_dict_match_torch():
    for nn, lib in ((tnn, torch), (enn, ember)):
        pl = nn.ParameterList([nn.Parameter(lib.ones(2)), lib.zeros(3)])
        pl.append(lib.ones(1, 2))
        assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 3
        assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
        pd = nn.ParameterDict({"b": lib.ones(2), "a": nn.Parameter(lib.zeros(1))})
        pd["c"] = lib.ones(3)
        assert list(pd.keys()) == ["a", "b", "c"] and isinstance(pd["c"], nn.Parameter)
    tpl = tnn.ParameterList([tnn.Parameter(torch.ones(2)), torch.zeros(3, 1)])
    epl = enn.ParameterList([enn.Parameter(ember.ones(2)), ember.zeros(3, 1)])
    assert repr(epl) == repr(tpl).replace("torch.", "ember.")
    tpd = tnn.ParameterDict({"w": torch.ones(2, 2)})
    epd = enn.ParameterDict({"w": ember.ones(2, 2)})
    assert repr(epd) == repr(tpd).replace("torch.", "ember.")


def test_module_repr_tree():
    class Custom(enn.Module):
        def __init__(self):
            super().__init__()
            self.enc = enn.Sequential(enn.Conv2d(1, 4, 3, stride=2, bias=False), enn.BatchNorm2d(4))
            self.layers = enn.ModuleList([enn.Linear(4, 4) for _ in range(3)] + [enn.Linear(4, 2)])

        def extra_repr(self):
            return "custom=1"

    class TCustom(tnn.Module):
        def __init__(self):
            super().__init__()
            self.enc = tnn.Sequential(tnn.Conv2d(1, 4, 3, stride=2, bias=False), tnn.BatchNorm2d(4))
            self.layers = tnn.ModuleList([tnn.Linear(4, 4) for _ in range(3)] + [tnn.Linear(4, 2)])

        def extra_repr(self):
            return "custom=1"

    assert repr(Custom()).replace("Custom", "X") == repr(TCustom()).replace("TCustom", "X")


# -- init ------------------------------------------------------------------------------------------
def test_calculate_gain_matches_torch():
    for nl, p in (("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                  ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)):
        assert enn.init.calculate_gain(nl, p) == tnn.init.calculate_gain(nl, p)
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        enn.init.calculate_gain("foo")


def _moments(t):
    a = t.detach().double().numpy().ravel()
    return a.mean(), a.std(), a.min(), a.max()


@pytest.mark.parametrize("name,call,mean,std,lo,hi", [
    ("uniform", lambda t: enn.init.uniform_(t, -2.0, 4.0), 1.0, 6 / math.sqrt(12), -2.0, 4.0),
    ("normal", lambda t: enn.init.normal_(t, 0.5, 2.0), 0.5, 2.0, None, None),
    ("trunc_normal", lambda t: enn.init.trunc_normal_(t, 0.0, 1.0, -1.0, 2.0), None, None, -1.0, 2.0),
    ("xavier_uniform", lambda t: enn.init.xavier_uniform_(t, gain=2.0), 0.0, 2 * math.sqrt(2 / 700), None, None),
    ("xavier_normal", lambda t: enn.init.xavier_normal_(t), 0.0, math.sqrt(2 / 700), None, None),
    ("kaiming_uniform", lambda t: enn.init.kaiming_uniform_(t, a=math.sqrt(5)), 0.0, math.sqrt(1 / 3) / math.sqrt(200),
     None, None),
    ("kaiming_normal_out", lambda t: enn.init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"), 0.0,
     math.sqrt(2) / math.sqrt(500), None, None),
])
def test_init_statistics(name, call, mean, std, lo, hi):
    ember.manual_seed(0)
    t = ember.empty(500, 200)
    assert call(t) is t
    m, s, mn, mx = _moments(t)
    if mean is not None:
        assert abs(m - mean) < 4 * (std / math.sqrt(t.numel())) + 1e-9
        assert abs(s - std) / std < 0.02
    if lo is not None:
        assert mn >= lo and mx <= hi
    if name == "trunc_normal":
        tt = torch.empty(500, 200)
        tnn.init.trunc_normal_(tt, 0.0, 1.0, -1.0, 2.0)
        tm, ts, _, _ = _moments(tt)
        assert abs(m - tm) < 0.01 and abs(s - ts) < 0.01        # same distribution as torch's
    ember.manual_seed(0)
    again = call(ember.empty(500, 200))
    assert (again == t).all()                                  # deterministic under manual_seed


def test_kaiming_uniform_bound_and_constants():
    t = ember.empty(64, 16, 3, 3)
    enn.init.kaiming_uniform_(t, a=0, nonlinearity="relu")
    bound = math.sqrt(2.0) * math.sqrt(3.0 / (16 * 9))
    assert t.abs().max().item() <= bound and t.abs().max().item() > 0.9 * bound
    assert (enn.init.zeros_(ember.empty(3)) == 0).all() and (enn.init.ones_(ember.empty(3)) == 1).all()
    assert (enn.init.constant_(ember.empty(2, 2), 0.3) == 0.3).all()
    assert enn.init.eye_(ember.empty(2, 3)).tolist() == [[1, 0, 0], [0, 1, 0]]
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        enn.init.kaiming_normal_(t, mode="fan_avg")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        enn.init.xavier_uniform_(ember.empty(3))


@pytest.mark.parametrize("shape", [(6, 4), (3, 8), (4, 2, 3)])
def test_orthogonal(shape):
    ember.manual_seed(1)
    t = enn.init.orthogonal_(ember.empty(*shape), gain=2.0)
    a = t.numpy().reshape(shape[0], -1).astype(np.float64)
    if a.shape[0] >= a.shape[1]:
        np.testing.assert_allclose(a.T @ a, 4 * np.eye(a.shape[1]), atol=1e-5)
    else:
        np.testing.assert_allclose(a @ a.T, 4 * np.eye(a.shape[0]), atol=1e-5)
    ember.manual_seed(1)
    assert (enn.init.orthogonal_(ember.empty(*shape), gain=2.0) == t).all()


def test_default_inits_follow_torch_bounds():
    lin = enn.Linear(50, 40)
    b = 1 / math.sqrt(50)
    assert lin.weight.abs().max().item() <= b and lin.bias.abs().max().item() <= b
    conv = enn.Conv2d(4, 8, 3)
    b = 1 / math.sqrt(36)
    assert conv.weight.abs().max().item() <= b and conv.bias.abs().max().item() <= b
    emb = enn.Embedding(100, 50)
    assert abs(emb.weight.std().item() - 1.0) < 0.05
    mha = enn.MultiheadAttention(8, 2)
    assert (mha.in_proj_bias == 0).all() and (mha.out_proj.bias == 0).all()
    assert mha.in_proj_weight.abs().max().item() <= math.sqrt(6 / 32)
    assert enn.Linear(3, 4, dtype=ember.float64).weight.dtype == ember.float64
    assert enn.Conv1d(2, 2, 1, device="meta").weight.device.type == "meta"


# -- utils -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3])
def test_clip_grad_norm_matches_torch(norm_type):
    torch.manual_seed(0)
    tp = [torch.randn(3, 4, requires_grad=True), torch.randn(5, requires_grad=True)]
    ep = [_e(p).requires_grad_() for p in tp]
    for t, e in zip(tp, ep):
        g = torch.randn(t.shape) * 3
        t.grad, e.grad = g, _e(g)
    tn = torch.nn.utils.clip_grad_norm_(tp, 1.5, norm_type=norm_type)
    en = enn.utils.clip_grad_norm_(ep, 1.5, norm_type=norm_type, foreach=True)
    np.testing.assert_allclose(en.item(), tn.item(), rtol=1e-5)
    for t, e in zip(tp, ep):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_clip_grad_nonfinite_and_value():
    p = enn.Parameter(ember.ones(2))
    p.grad = ember.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        enn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    q = enn.Parameter(ember.ones(3))
    q.grad = ember.tensor([-3.0, 0.5, 2.0])
    assert enn.utils.clip_grad_value_([q], 1.0) is None
    assert q.grad.tolist() == [-1.0, 0.5, 1.0]
    assert enn.utils.clip_grad_norm_([enn.Parameter(ember.ones(1))], 1.0).item() == 0.0


def test_parameters_vector_roundtrip():
    m = enn.Linear(3, 2)
    v = enn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    assert v[:6].tolist() == m.weight.reshape(-1).tolist()
    enn.utils.vector_to_parameters(ember.arange(8.0), m.parameters())
    assert m.weight.tolist() == [[0, 1, 2], [3, 4, 5]] and m.bias.tolist() == [6, 7]
    assert isinstance(m.weight, enn.Parameter) and m.weight.requires_grad
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        enn.utils.vector_to_parameters([1], m.parameters())


def _gpt(nn, F, lib):
    """A nanoGPT-style model written once against the torch API (weight tying, apply-init, tril buffer)."""
    class Block(nn.Module):
        def __init__(self, d, h, t):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d, bias=False)
            self.c_attn = nn.Linear(d, 3 * d)
            self.c_proj = nn.Linear(d, d)
            self.ln_2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d),
                                     nn.Dropout(0.0))
            self.register_buffer("mask", lib.tril(lib.ones(t, t)).view(1, 1, t, t), persistent=False)
            self.h = h

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (z.view(B, T, self.h, C // self.h).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = F.softmax(att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf")), dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.c_proj(y)
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, vocab=11, d=8, h=2, t=6, n=2):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(vocab, d), wpe=nn.Embedding(t, d),
                                                  h=nn.ModuleList([Block(d, h, t) for _ in range(n)]),
                                                  ln_f=nn.LayerNorm(d)))
            self.lm_head = nn.Linear(d, vocab, bias=False)
            self.transformer.wte.weight = self.lm_head.weight
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets):
            pos = lib.arange(0, idx.size(1), dtype=lib.long)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT()


def test_nanogpt_style_model_matches_torch():
    import ember.nn.functional as EF
    import torch.nn.functional as TF
    torch.manual_seed(0)
    tm, em = _gpt(tnn, TF, torch), _gpt(enn, EF, ember)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert list(em.state_dict()) == list(tm.state_dict())
    assert em.lm_head.weight is em.transformer.wte.weight
    decay = [n for n, p in em.named_parameters() if p.dim() >= 2]
    assert decay == [n for n, p in tm.named_parameters() if p.dim() >= 2]
    em.load_state_dict({k: _e(v) for k, v in tm.state_dict().items()})
    assert em.lm_head.weight is em.transformer.wte.weight        # tying survives loading
    idx, tgt = torch.randint(0, 11, (3, 6)), torch.randint(0, 11, (3, 6))
    tl = tm(idx, tgt)
    el = em(ember.tensor(idx.numpy()), ember.tensor(tgt.numpy()))
    np.testing.assert_allclose(el.item(), tl.item(), rtol=1e-5)
    tl.backward()
    el.backward()
    tg = dict(tm.named_parameters())
    for n, p in em.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tg[n].grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=n)
    tn = torch.nn.utils.clip_grad_norm_(tm.parameters(), 0.01)
    en = enn.utils.clip_grad_norm_(em.parameters(), 0.01)
    np.testing.assert_allclose(en.item(), tn.item(), rtol=1e-5)


def test_linear_uses_a_weight_that_is_not_a_registered_parameter():
    """Linear reads its registered parameters from their dict; a weight deleted and set again as a
    plain attribute, or given by a property (parametrizations do this), is what forward uses, as in torch."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w2 = rng.standard_normal((4, 3)).astype(np.float32)
    outs = {}
    for name, lib in (("ember", ember), ("torch", torch)):
        m = lib.nn.Linear(3, 4)
        with lib.no_grad():
            m.bias.zero_()
        del m.weight
        m.weight = lib.tensor(w2)                   # a plain attribute now

        class Doubled(lib.nn.Linear):
            @property
            def weight(self):
                return self.raw * 2

        d = Doubled.__new__(Doubled)
        lib.nn.Module.__init__(d)
        d.raw = lib.nn.Parameter(lib.tensor(w2))
        d.bias = None
        outs[name] = (m(lib.tensor(x)).detach().numpy(), d(lib.tensor(x)).detach().numpy())
    for e, t in zip(outs["ember"], outs["torch"]):
        np.testing.assert_allclose(e, t, rtol=1e-6)
    np.testing.assert_allclose(outs["ember"][0], x @ w2.T, rtol=1e-6)
