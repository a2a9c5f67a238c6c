"""Padding, instance norm, upsampling, fold, pixel and channel shuffles, distances, 3-d pooling, Softmax2d,
EmbeddingBag, the 3-d convolutions and the margin losses as modules, against torch's: the same constructor arguments, the same
state dict, float64; the outputs, the gradients of the inputs and parameters, the buffers after a
training-mode call, and the repr."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

TIGHT = dict(rtol=1e-10, atol=1e-12)

# (class, constructor args, constructor kwargs, input shapes (float64 inputs) or callables making inputs)
CASES = [
    ("ConstantPad1d", (2, 3.5), {}, [(2, 3, 5)]),
    ("ConstantPad2d", ((1, 0, 2, 1), -1.0), {}, [(2, 3, 4, 5)]),
    ("ConstantPad3d", (1, 0.5), {}, [(1, 2, 3, 4, 5)]),
    ("ZeroPad1d", ((2, 1),), {}, [(2, 3, 5)]),
    ("ZeroPad2d", (2,), {}, [(3, 4, 5)]),
    ("ZeroPad3d", ((1, 0, 0, 1, 2, 0),), {}, [(1, 2, 3, 4, 5)]),
    ("ReflectionPad1d", (2,), {}, [(2, 3, 5)]),
    ("ReflectionPad2d", ((1, 2, 2, 1),), {}, [(2, 3, 4, 5)]),
    ("ReflectionPad3d", (1,), {}, [(1, 2, 3, 4, 5)]),
    ("ReplicationPad1d", ((3, 1),), {}, [(2, 3, 5)]),
    ("ReplicationPad2d", (2,), {}, [(2, 3, 4, 5)]),
    ("ReplicationPad3d", ((1, 2, 0, 1, 1, 0),), {}, [(1, 2, 3, 4, 5)]),
    ("CircularPad1d", (2,), {}, [(2, 3, 5)]),
    ("CircularPad2d", ((1, 2, 2, 1),), {}, [(2, 3, 4, 5)]),
    ("CircularPad3d", (1,), {}, [(1, 2, 3, 4, 5)]),
    ("InstanceNorm1d", (3,), {}, [(2, 3, 7)]),
    ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True), [(2, 3, 4, 5)]),
    ("InstanceNorm3d", (2,), dict(affine=True, momentum=None, track_running_stats=True), [(2, 2, 3, 4, 2)]),
    ("InstanceNorm2d", (3,), dict(affine=True), [(3, 4, 5)]),                    # unbatched
    ("Upsample", (), dict(scale_factor=2), [(2, 3, 4, 5)]),
    ("Upsample", (), dict(size=(5, 7), mode="bilinear", align_corners=False), [(2, 3, 4, 5)]),
    ("Upsample", (), dict(scale_factor=1.5, mode="linear"), [(2, 3, 4)]),
    ("UpsamplingNearest2d", (), dict(size=6), [(1, 2, 3, 4)]),
    ("UpsamplingBilinear2d", (), dict(scale_factor=2), [(1, 2, 3, 4)]),
    ("Fold", ((4, 5), (2, 2)), dict(stride=1), [(2, 12, 12)]),
    ("Unfold", ((2, 3),), dict(padding=1, stride=2), [(2, 3, 5, 6)]),
    ("PixelShuffle", (2,), {}, [(2, 8, 3, 4)]),
    ("PixelUnshuffle", (2,), {}, [(2, 2, 4, 6)]),
    ("ChannelShuffle", (2,), {}, [(2, 6, 3, 4)]),
    ("CosineSimilarity", (), dict(dim=0), [(4, 3), (4, 3)]),
    ("PairwiseDistance", (), dict(p=3.0, keepdim=True), [(4, 3), (4, 3)]),
    ("MaxPool3d", (2,), dict(stride=1, padding=1), [(1, 2, 3, 4, 5)]),
    ("AvgPool3d", ((2, 1, 2),), dict(ceil_mode=True, count_include_pad=False), [(1, 2, 3, 4, 5)]),
    ("AdaptiveAvgPool3d", ((2, 3, 1),), {}, [(1, 2, 3, 4, 5)]),
    ("Softmax2d", (), {}, [(2, 3, 4, 5)]),
    ("Conv3d", (4, 2, (2, 3, 2)), dict(stride=(1, 2, 1), padding=1, dilation=(2, 1, 1), groups=2), [(2, 4, 4, 5, 3)]),
    ("Conv3d", (2, 3, 2), dict(padding="same", padding_mode="reflect"), [(2, 3, 4, 3)]),     # unbatched
    ("ConvTranspose3d", (2, 4, (2, 2, 3)), dict(stride=2, padding=(1, 0, 1), output_padding=(1, 0, 0), groups=2),
     [(1, 2, 3, 2, 3)]),
    ("PoissonNLLLoss", (), dict(full=True), [(3, 4), lambda rng: rng.uniform(0, 3, (3, 4))]),
    ("CosineEmbeddingLoss", (0.2,), {}, [(4, 3), (4, 3), lambda rng: np.array([1.0, -1.0, 1.0, -1.0])]),
    ("HingeEmbeddingLoss", (), dict(margin=0.5, reduction="sum"), [(4, 3), lambda rng: np.sign(rng.standard_normal((4, 3)))]),
    ("MarginRankingLoss", (), dict(margin=0.1), [(5,), (5,), lambda rng: np.sign(rng.standard_normal(5))]),
    ("SoftMarginLoss", (), dict(reduction="none"), [(4, 3), lambda rng: np.sign(rng.standard_normal((4, 3)))]),
    ("GaussianNLLLoss", (), dict(full=True), [(4, 3), (4, 3), lambda rng: rng.uniform(0.5, 2.0, (4, 3))]),
    ("GaussianNLLLoss", (), dict(reduction="sum"), [(4, 3), (4, 3), lambda rng: rng.uniform(0.5, 2.0, (4,))]),
    ("GaussianNLLLoss", (), dict(eps=0.3), [(4, 3), (4, 3), lambda rng: rng.uniform(0.0, 1.0, (4, 1))]),
    ("MultiMarginLoss", (), {}, [(5, 4), lambda rng: rng.integers(0, 4, 5)]),
    ("MultiMarginLoss", (2, 0.5), dict(reduction="none"), [(5, 4), lambda rng: rng.integers(0, 4, 5)]),
    ("MultiMarginLoss", (), {}, [(4,), lambda rng: np.array(2)]),
    ("MultiLabelMarginLoss", (), {}, [(3, 4), lambda rng: np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 0]])]),
    ("MultiLabelMarginLoss", (), dict(reduction="none"), [(4,), lambda rng: np.array([2, -1, 0, 0])]),
    ("MultiLabelSoftMarginLoss", (), {}, [(3, 4), lambda rng: (rng.random((3, 4)) > 0.5).astype(np.float64)]),
    ("TripletMarginLoss", (), dict(margin=0.5, swap=True), [(4, 3), (4, 3), (4, 3)]),
    ("TripletMarginLoss", (), dict(p=1.0, reduction="none"), [(4, 3), (4, 3), (4, 3)]),
    ("TripletMarginWithDistanceLoss", (), dict(margin=2.0), [(4, 3), (4, 3), (4, 3)]),
    ("LPPool1d", (2, 3), dict(stride=2), [(2, 3, 8)]),
    ("LPPool2d", (2, (2, 3)), dict(ceil_mode=True), [(1, 2, 5, 7)]),
    ("LPPool1d", (1.5, 2), {}, [lambda rng: rng.uniform(0.1, 2.0, (2, 3, 6))]),
    ("LPPool3d", (3, 2), {}, [(1, 2, 4, 4, 4)]),
    ("LocalResponseNorm", (3,), {}, [(2, 5, 7)]),
    ("LocalResponseNorm", (2,), dict(alpha=0.1, beta=0.5, k=2.0), [(2, 5, 3, 4)]),
]


def _ids(case) -> str:
    return f"{case[0]}-{case[1]}-{sorted(case[2].items())}"


@pytest.mark.parametrize("name, args, kwargs, inputs", CASES, ids=[_ids(c) for c in CASES])
def test_module_matches_torch(name, args, kwargs, inputs):
    torch.manual_seed(0)
    t_mod = getattr(torch.nn, name)(*args, **kwargs).double()
    e_mod = getattr(ember.nn, name)(*args, **kwargs).to(ember.float64)
    e_mod.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_mod.state_dict().items()})
    assert str(e_mod) == str(t_mod)
    rng = np.random.default_rng(1)
    arrays = [make(rng) if callable(make) else rng.standard_normal(make) for make in inputs]
    t_in = [torch.tensor(a, requires_grad=not callable(m)) for a, m in zip(arrays, inputs)]
    e_in = [ember.tensor(a, requires_grad=not callable(m)) for a, m in zip(arrays, inputs)]
    t_out, e_out = t_mod(*t_in), e_mod(*e_in)
    assert tuple(e_out.shape) == tuple(t_out.shape)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), **TIGHT)
    if not t_out.requires_grad:
        return                       # (no input or parameter to differentiate)
    w = rng.standard_normal(tuple(t_out.shape))
    (t_out * torch.tensor(w)).sum().backward()
    (e_out * ember.tensor(w)).sum().backward()
    for t, e in zip(t_in, e_in):
        if t.requires_grad:
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), **TIGHT)
    for (pname, tp), ep in zip(t_mod.named_parameters(), e_mod.parameters()):
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), err_msg=pname, **TIGHT)
    for (bname, tb), eb in zip(t_mod.named_buffers(), e_mod.buffers()):
        np.testing.assert_allclose(eb.numpy(), tb.numpy(), err_msg=bname, **TIGHT)


@pytest.mark.parametrize("mode, offsets", [("mean", True), ("sum", False), ("max", True)])
def test_embedding_bag_matches_torch(mode, offsets):
    torch.manual_seed(0)
    t_mod = torch.nn.EmbeddingBag(10, 3, mode=mode, padding_idx=2).double()
    e_mod = ember.nn.EmbeddingBag(10, 3, mode=mode, padding_idx=2).to(ember.float64)
    e_mod.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_mod.state_dict().items()})
    assert str(e_mod) == str(t_mod)
    if offsets:
        idx, off = [1, 2, 4, 5, 4, 3, 2, 9], [0, 3, 5]
        t_out, e_out = (mod(lib.tensor(idx), lib.tensor(off)) for mod, lib in ((t_mod, torch), (e_mod, ember)))
    else:
        idx = [[1, 2, 4], [4, 3, 9]]
        t_out, e_out = t_mod(torch.tensor(idx)), e_mod(ember.tensor(idx))
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), **TIGHT)
    (t_out * t_out).sum().backward()
    (e_out * e_out).sum().backward()
    np.testing.assert_allclose(e_mod.weight.grad.numpy(), t_mod.weight.grad.numpy(), **TIGHT)


@pytest.mark.parametrize("build, shape", [
    (lambda nn: nn.InstanceNorm2d(3), (2, 3, 4)),                 # 3-d into a 2d norm: unbatched (C=2 warns)
    (lambda nn: nn.InstanceNorm1d(3), (2, 3, 4, 5)),
    (lambda nn: nn.InstanceNorm2d(4, affine=True), (2, 3, 4, 5)),
    (lambda nn: nn.PixelShuffle(2), (2, 5, 3, 3)),
    (lambda nn: nn.PixelUnshuffle(2), (2, 5, 3, 4)),
    (lambda nn: nn.ChannelShuffle(2), (2, 5, 3, 4)),
    (lambda nn: nn.Softmax2d(), (3, 4)),
])
def test_errors_are_torchs(build, shape):
    import warnings

    seen = []
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                build(lib.nn)(lib.zeros(*shape))
            except Exception as exc:      # noqa: BLE001
                seen.append((type(exc), str(exc)))
            else:
                seen.append(None)
    assert seen[0] is not None or seen[1] is None
    if seen[0] is not None:
        assert seen[1] is not None and issubclass(seen[1][0], seen[0][0]) and seen[1][1] == seen[0][1], seen



@pytest.mark.parametrize("name, args", [("RReLU", (0.1, 0.3)), ("AlphaDropout", (0.3,)), ("FeatureAlphaDropout", (0.3,))])
def test_random_modules_in_eval_match_torch_and_train_as_documented(name, args):
    t_mod, e_mod = getattr(torch.nn, name)(*args), getattr(ember.nn, name)(*args)
    assert str(e_mod) == str(t_mod)
    x = np.random.default_rng(3).standard_normal((4, 3, 5))
    t_mod.eval()
    e_mod.eval()
    np.testing.assert_allclose(e_mod(ember.tensor(x)).numpy(), t_mod(torch.tensor(x)).numpy(), **TIGHT)
    e_mod.train()
    ember.manual_seed(0)
    out = e_mod(ember.tensor(np.full((200, 50, 4), -1.0))).numpy()
    if name == "RReLU":           # slopes in [lower, upper], their mean near the middle
        slopes = -out
        assert slopes.min() >= args[0] and slopes.max() <= args[1] and abs(slopes.mean() - 0.2) < 0.01
    else:                          # SELU's self-normalisation: a standard normal input keeps mean 0, variance 1
        z = e_mod(ember.tensor(np.random.default_rng(4).standard_normal((400, 50, 4)))).numpy()
        assert abs(z.mean()) < 0.03 and abs(z.var() - 1) < 0.05


@pytest.mark.parametrize("call", [
    lambda nn, t: nn.TripletMarginLoss(margin=-1.0),
    lambda nn, t: nn.TripletMarginWithDistanceLoss(margin=0.0),
    lambda nn, t: nn.MultiMarginLoss(p=3),
    lambda nn, t: nn.GaussianNLLLoss()(t.zeros(2, 3), t.zeros(2, 3), -t.ones(2, 3)),
    lambda nn, t: nn.GaussianNLLLoss()(t.zeros(2, 3), t.zeros(2, 3), t.ones(3, 3)),
    lambda nn, t: nn.MultiMarginLoss()(t.zeros(2, 3, 4), t.zeros(2, dtype=t.long)),
])
def test_loss_errors_are_torchs(call):
    seen = []
    for lib in (torch, ember):
        with pytest.raises(Exception) as info:
            call(lib.nn, lib)
        seen.append(info)
    assert issubclass(seen[1].type, seen[0].type.__mro__[0] if seen[0].type is not RuntimeError else RuntimeError)
    assert str(seen[0].value) in str(seen[1].value)


@pytest.mark.parametrize("nd, shape, args, output_size", [
    (1, (2, 3, 9), (3,), None),
    (2, (2, 3, 5, 6), (2,), (5, 6)),
    (2, (3, 4, 6), (2, 1, 1), None),                   # unbatched, stride 1, padding 1
    (3, (1, 2, 4, 5, 6), ((2, 1, 2),), (1, 2, 4, 5, 7)),
])
def test_max_unpool_inverts_torchs_max_pool_as_torch_does(nd, shape, args, output_size):
    """MaxUnpool puts each of max pooling's values back where its index points (zeros elsewhere); values,
    input gradients and the repr are torch's, for the default and for a given output size."""
    x = torch.tensor(np.random.default_rng(2).standard_normal(shape))
    pooled, indices = getattr(torch.nn, f"MaxPool{nd}d")(*args, return_indices=True)(x)
    t_in = pooled.clone().requires_grad_()
    e_in = ember.tensor(pooled.numpy(), requires_grad=True)
    t_mod, e_mod = getattr(torch.nn, f"MaxUnpool{nd}d")(*args), getattr(ember.nn, f"MaxUnpool{nd}d")(*args)
    assert str(e_mod) == str(t_mod)
    t_out = t_mod(t_in, indices, output_size)
    e_out = e_mod(e_in, ember.tensor(indices.numpy()), output_size)
    assert tuple(e_out.shape) == tuple(t_out.shape)
    np.testing.assert_array_equal(e_out.detach().numpy(), t_out.detach().numpy())
    w = np.random.default_rng(3).standard_normal(tuple(t_out.shape))
    (t_out * torch.tensor(w)).sum().backward()
    (e_out * ember.tensor(w)).sum().backward()
    np.testing.assert_array_equal(e_in.grad.numpy(), t_in.grad.numpy())


def test_max_unpool_output_size_errors_are_torchs():
    for size in ((9, 9), (4,)):
        with pytest.raises(ValueError) as want:
            torch.nn.MaxUnpool2d(2)(torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 2, 2, dtype=torch.int64), size)
        with pytest.raises(ValueError) as got:
            ember.nn.MaxUnpool2d(2)(ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 2, 2, dtype=ember.int64), size)
        assert str(got.value) == str(want.value)
