"""Lazy modules (LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm*, LazyInstanceNorm*), LazyModuleMixin and
UninitializedParameter/UninitializedBuffer against torch: the shapes materialised on the first call, the class
the module becomes, outputs equal to torch's with copied parameters, state dicts, conversions and errors."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import ember
from ember.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

RNG = np.random.default_rng(7)


def E(a):
    return ember.tensor(np.array(a, copy=True))


def Tt(a):
    return torch.tensor(np.array(a, copy=True))


def state(module) -> dict:
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


def copy_into_torch(me, mt) -> None:
    mt.load_state_dict({k: torch.tensor(v) for k, v in state(me).items()})


CASES = [  # (ember class, torch class, constructor args, input shape)
    ("LazyLinear", (5,), (3, 4, 7)),
    ("LazyLinear", (2, False), (6,)),
    ("LazyConv1d", (4, 3), (2, 3, 9)),
    ("LazyConv2d", (4, 3, 2, 1, 1, 2), (2, 6, 7, 8)),
    ("LazyConv2d", (3, (2, 3)), (5, 6, 7)),
    ("LazyConv3d", (2, 2), (1, 3, 4, 5, 4)),
    ("LazyConvTranspose1d", (4, 3, 2), (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 3, 1, 0, 0, 2), (2, 6, 5, 5)),
    ("LazyConvTranspose3d", (2, 2), (1, 3, 3, 4, 3)),
    ("LazyBatchNorm1d", (), (4, 3)),
    ("LazyBatchNorm1d", (1e-3, 0.2, False), (4, 3, 5)),
    ("LazyBatchNorm2d", (), (2, 3, 4, 5)),
    ("LazyBatchNorm3d", (), (2, 3, 2, 3, 4)),
    ("LazyInstanceNorm1d", (), (2, 3, 6)),
    ("LazyInstanceNorm2d", (1e-5, 0.1, True, False), (2, 3, 4, 5)),
    ("LazyInstanceNorm3d", (), (2, 3, 2, 3, 4)),
]


@pytest.mark.parametrize("name,args,shape", CASES)
def test_lazy_module_materialises_as_torch(name, args, shape):
    me, mt = getattr(ember.nn, name)(*args).double(), getattr(torch.nn, name)(*args).double()
    assert repr(me) == repr(mt)
    assert me.has_uninitialized_params() and mt.has_uninitialized_params()
    assert list(me.state_dict()) == list(mt.state_dict())
    x = RNG.standard_normal(shape)
    np.testing.assert_equal(tuple(me(E(x)).shape), tuple(mt(Tt(x)).shape))
    assert not type(mt).__name__.startswith("Lazy")
    assert type(me) is getattr(ember.nn, type(mt).__name__)
    assert repr(me) == repr(mt)
    assert not me._forward_pre_hooks
    for (ke, ve), (kt, vt) in zip(me.state_dict().items(), mt.state_dict().items()):
        assert ke == kt and tuple(ve.shape) == tuple(vt.shape) and str(ve.dtype).split(".")[-1] == \
            str(vt.dtype).split(".")[-1]
    assert [type(p).__name__ for p in me.parameters()] == ["Parameter"] * len(list(mt.parameters()))
    # with ember's parameters copied, the same outputs (norms: running statistics updated alike)
    copy_into_torch(me, mt)
    xe2 = RNG.standard_normal(shape)
    np.testing.assert_allclose(me(E(xe2)).detach().numpy(), mt(Tt(xe2)).detach().numpy(), rtol=1e-12, atol=1e-12)
    for k, v in state(me).items():
        np.testing.assert_allclose(v, mt.state_dict()[k].numpy(), rtol=1e-12, atol=1e-12)


def test_lazy_linear_initialisation_follows_linear():
    ember.manual_seed(3)
    lazy = ember.nn.LazyLinear(4)
    lazy(ember.zeros(2, 6))
    ember.manual_seed(3)
    plain = ember.nn.Linear(6, 4)          # the lazy one's construction draws nothing: the same numbers
    assert type(lazy) is ember.nn.Linear and lazy.in_features == 6
    np.testing.assert_array_equal(lazy.weight.detach().numpy(), plain.weight.detach().numpy())
    np.testing.assert_array_equal(lazy.bias.detach().numpy(), plain.bias.detach().numpy())


def test_state_dict_round_trip():
    src = ember.nn.Linear(3, 4)
    lazy = ember.nn.LazyLinear(4)
    lazy.load_state_dict(src.state_dict())
    assert type(lazy) is ember.nn.LazyLinear and not lazy.has_uninitialized_params()
    assert lazy.in_features == 0                        # as torch: set by the first call
    np.testing.assert_array_equal(lazy.weight.detach().numpy(), src.weight.detach().numpy())
    x = E(RNG.standard_normal((2, 3))).float()
    np.testing.assert_array_equal(lazy(x).detach().numpy(), src(x).detach().numpy())
    assert type(lazy) is ember.nn.Linear and lazy.in_features == 3
    with pytest.raises(AssertionError):
        other = ember.nn.LazyLinear(4)
        other.load_state_dict(src.state_dict())
        other(E(RNG.standard_normal((2, 5))))
    # an uninitialized state dict loads into a lazy module (nothing to copy), not into an initialized one
    blank, fresh = ember.nn.LazyLinear(4), ember.nn.LazyLinear(4)
    result = fresh.load_state_dict(blank.state_dict())
    assert not result.missing_keys and not result.unexpected_keys and fresh.has_uninitialized_params()
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        ember.nn.Linear(3, 4).load_state_dict(blank.state_dict())
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        torch.nn.Linear(3, 4).load_state_dict(torch.nn.LazyLinear(4).state_dict())


def test_state_dict_of_lazy_batchnorm_loads_buffers():
    src = ember.nn.BatchNorm2d(3)
    src(E(RNG.standard_normal((4, 3, 2, 2)).astype(np.float32)))      # float32, as the module (torch: mixed dtype)
    lazy = ember.nn.LazyBatchNorm2d()
    lazy.load_state_dict(src.state_dict())
    for k, v in src.state_dict().items():
        np.testing.assert_array_equal(lazy.state_dict()[k].numpy(), v.numpy())
    assert not is_lazy(lazy.running_mean) and type(lazy.running_mean) is ember.Tensor


def test_conversions_before_initialisation():
    m = ember.nn.LazyConv2d(4, 3).to(ember.float64)
    assert is_lazy(m.weight) and m.weight.dtype == ember.float64 and m.weight.requires_grad
    m(ember.zeros(1, 2, 5, 5, dtype=ember.float64))
    assert m.weight.dtype == ember.float64 and tuple(m.weight.shape) == (4, 2, 3, 3)
    c = copy.deepcopy(ember.nn.LazyBatchNorm1d(dtype=ember.float64))
    assert type(c) is ember.nn.LazyBatchNorm1d and is_lazy(c.weight) and c.weight.dtype == ember.float64
    c(ember.zeros(2, 5, dtype=ember.float64))
    assert type(c) is ember.nn.BatchNorm1d and tuple(c.running_var.shape) == (5,)


def test_uninitialized_tensors():
    p, b = UninitializedParameter(), UninitializedBuffer()
    tp, tb = torch.nn.UninitializedParameter(), torch.nn.UninitializedBuffer()
    assert repr(p) == repr(tp) and str(b) == str(tb)
    assert p.requires_grad and not b.requires_grad and b.persistent
    for t in (p, b):
        with pytest.raises(ValueError):
            t + 1
        with pytest.raises(ValueError):
            t.detach()
        with pytest.raises(RuntimeError):
            t.shape
    with pytest.raises(ValueError):
        tp + 1
    p.materialize((2, 3), dtype=ember.float64)
    assert type(p) is ember.nn.Parameter and tuple(p.shape) == (2, 3) and p.dtype == ember.float64
    b.materialize((4,))
    assert type(b) is ember.Tensor and tuple(b.shape) == (4,)


def test_lazy_module_mixin_contract():
    class NoInit(ember.nn.modules.lazy.LazyModuleMixin, ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = UninitializedParameter()

        def forward(self, x):
            return x

    with pytest.raises(NotImplementedError, match="initialize_parameters"):
        NoInit()(ember.zeros(2))

    class Forgets(NoInit):
        def initialize_parameters(self, x):
            pass

    with pytest.raises(RuntimeError, match="has not been fully initialized"):
        Forgets()(ember.zeros(2))

    class Scale(NoInit):            # no cls_to_become: keeps its class
        def initialize_parameters(self, x):
            self.w.materialize(x.shape)

        def forward(self, x):
            return x * self.w

    m = Scale()
    m(ember.ones(3))
    assert type(m) is Scale and tuple(m.w.shape) == (3,) and not m.has_uninitialized_params()


@pytest.mark.parametrize("module,shape,exc", [
    (lambda nn: nn.LazyConv2d(4, 3, groups=2), (1, 3, 5, 5), ValueError),    # in_channels not divisible by groups
    (lambda nn: nn.LazyConv2d(4, 3), (3, 5), RuntimeError),                    # wrong rank
    (lambda nn: nn.LazyBatchNorm2d(), (2, 3, 4), ValueError),
    (lambda nn: nn.LazyInstanceNorm1d(), (2, 3, 4, 5), ValueError),
])
def test_lazy_errors(module, shape, exc):
    x = RNG.standard_normal(shape)
    with pytest.raises(exc) as t:
        module(torch.nn)(Tt(x))
    with pytest.raises(exc) as e:
        module(ember.nn)(E(x))
    assert str(e.value).replace("ember", "torch") == str(t.value)
