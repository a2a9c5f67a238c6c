"""nn layers beyond the op database: torch.nn.functional wrappers against torch, batch norm's
running statistics, gradcheck of convolution and pooling at realistic small sizes (larger than
the database's gradcheck limit), second order through convolution."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF


def _pair(shape, seed=0, dtype=np.float64):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(x), torch.tensor(x)


def _close(e, t, rtol=1e-6, atol=1e-6):
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            _close(a, b, rtol, atol)
        return
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]


@pytest.mark.parametrize("name", ["layer_norm", "group_norm", "batch_norm", "instance_norm", "pad", "interpolate",
                                  "adaptive_avg_pool2d"])
def test_functional_signatures_match_torch(name):
    e = inspect.signature(getattr(EF, name))
    t = inspect.signature(getattr(TF, name))
    assert list(e.parameters) == list(t.parameters)
    assert [p.default for p in e.parameters.values()] == [p.default for p in t.parameters.values()]


def test_batch_norm_training_updates_running_stats_in_place():
    e, t = _pair((4, 3, 2, 2))
    rm_e, rv_e = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    rm_t, rv_t = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    ids = (id(rm_e), id(rv_e))
    for momentum in (0.1, 0.5):
        _close(EF.batch_norm(e, rm_e, rv_e, training=True, momentum=momentum),
               TF.batch_norm(t, rm_t, rv_t, training=True, momentum=momentum))
    assert ids == (id(rm_e), id(rv_e))
    _close(rm_e, rm_t)
    _close(rv_e, rv_t)                    # unbiased variance, as torch
    assert not np.allclose(rm_e.numpy(), 0)
    # eval mode reads them and leaves them alone
    before = rm_e.numpy().copy()
    _close(EF.batch_norm(e, rm_e, rv_e), TF.batch_norm(t, rm_t, rv_t))
    np.testing.assert_array_equal(rm_e.numpy(), before)


def test_batch_norm_single_value_per_channel_is_a_value_error():
    e, t = _pair((1, 3))
    with pytest.raises(ValueError):
        TF.batch_norm(t, None, None, training=True)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        EF.batch_norm(e, None, None, training=True)


def test_max_pool_return_indices_uses_torchs_flat_index():
    e, t = _pair((2, 2, 5, 6), seed=1)
    _close(EF.max_pool2d(e, 3, 2, 1, return_indices=True), TF.max_pool2d(t, 3, 2, 1, return_indices=True))
    _close(EF.max_pool2d(e, 2, ceil_mode=True, return_indices=True),
           TF.max_pool2d(t, 2, ceil_mode=True, return_indices=True))
    _close(EF.max_pool1d(e[:, :, 0], 2, return_indices=True), TF.max_pool1d(t[:, :, 0], 2, return_indices=True))


@pytest.mark.parametrize("kw", [dict(size=(7, 9)), dict(scale_factor=2), dict(scale_factor=1.7),
                                dict(scale_factor=(2, 1.5), recompute_scale_factor=True)])
@pytest.mark.parametrize("mode", ["nearest", "bilinear-ac", "bilinear"])
def test_interpolate(kw, mode):
    e, t = _pair((2, 3, 5, 6), seed=2)
    extra = {} if mode == "nearest" else {"mode": "bilinear", "align_corners": mode.endswith("-ac")}
    _close(EF.interpolate(e, **kw, **extra), TF.interpolate(t, **kw, **extra))


def test_interpolate_linear_and_errors():
    e, t = _pair((2, 3, 5), seed=3)
    _close(EF.interpolate(e, scale_factor=2.5, mode="linear"), TF.interpolate(t, scale_factor=2.5, mode="linear"))
    with pytest.raises(ValueError):
        EF.interpolate(e, size=4, scale_factor=2.0)
    with pytest.raises(ValueError):
        EF.interpolate(e, size=4, align_corners=True)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_modes(mode):
    e, t = _pair((2, 3, 4, 5), seed=4)
    _close(EF.pad(e, (1, 2, 2, 1), mode), TF.pad(t, (1, 2, 2, 1), mode))


def _leaf(shape, seed):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 1, 2, 2), (2, 0, 1, 2)])
def test_conv2d_gradcheck(stride, padding, dilation, groups):
    x, w, b = _leaf((2, 2, 5, 5), 0), _leaf((2, 2 // groups, 3, 3), 1), _leaf((2,), 2)
    assert ember.autograd.gradcheck(lambda x, w, b: EF.conv2d(x, w, b, stride, padding, dilation, groups), (x, w, b))


def test_conv_transpose2d_gradcheck():
    x, w, b = _leaf((2, 2, 3, 3), 0), _leaf((2, 1, 3, 3), 1), _leaf((2,), 2)
    assert ember.autograd.gradcheck(lambda x, w, b: EF.conv_transpose2d(x, w, b, 2, 1, 1, 2), (x, w, b))


def test_conv2d_second_order():
    x, w = _leaf((1, 2, 4, 4), 0), _leaf((2, 2, 2, 2), 1)
    assert ember.autograd.gradgradcheck(lambda x, w: EF.conv2d(x, w, None, 1, 1), (x, w))


@pytest.mark.parametrize("fn", [lambda x: EF.max_pool2d(x, 3, 2, 1), lambda x: EF.max_pool2d(x, 2, ceil_mode=True),
                                lambda x: EF.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                                lambda x: EF.adaptive_avg_pool2d(x, (3, 2)),
                                lambda x: EF.interpolate(x, scale_factor=1.5, mode="bilinear"),
                                lambda x: EF.layer_norm(x, (5, 5)), lambda x: EF.group_norm(x, 2),
                                lambda x: EF.batch_norm(x, None, None, training=True)])
def test_layer_gradcheck(fn):
    assert ember.autograd.gradcheck(fn, (_leaf((2, 2, 5, 5), 5),))


@pytest.mark.parametrize("name,call", [
    ("conv2d", lambda m, F, x: F.conv2d(x, m.ones(4, 3, 3, 3))),
    ("conv_transpose2d", lambda m, F, x: F.conv_transpose2d(x, m.ones(3, 2, 3, 3))),
    ("batch_norm", lambda m, F, x: F.batch_norm(x, m.zeros(3), m.ones(3))),
    ("layer_norm", lambda m, F, x: F.layer_norm(x, (6,))),
    ("max_pool2d", lambda m, F, x: F.max_pool2d(x, 2)),
    ("interpolate", lambda m, F, x: F.interpolate(x, scale_factor=2, mode="bilinear"))])
@pytest.mark.parametrize("in_dtype", ["float32", "bfloat16"])
def test_cpu_autocast_policies_match_torch(name, call, in_dtype):
    e, t = _pair((2, 3, 6, 6), dtype=np.float32)
    e, t = e.to(getattr(ember, in_dtype)), t.to(getattr(torch, in_dtype))
    with ember.autocast("cpu", dtype=ember.bfloat16):
        e_out = call(ember, EF, e)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        t_out = call(torch, TF, t)
    assert str(e_out.dtype).split(".")[-1] == str(t_out.dtype).split(".")[-1]


def test_cpu_autocast_reflection_pad_runs_in_float32():
    e, t = _pair((2, 3, 6, 6), dtype=np.float32)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        out = ember._generated.functions.reflection_pad2d(e.to(ember.bfloat16), [1, 1, 1, 1])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = torch.ops.aten.reflection_pad2d(t.to(torch.bfloat16), [1, 1, 1, 1])
    assert out.dtype is ember.float32 and ref.dtype is torch.float32


@pytest.mark.parametrize("fn", [lambda x: EF.max_pool2d(x, 2, 1), lambda x: EF.avg_pool2d(x, 2, 1, 1),
                                lambda x: EF.layer_norm(x, (3,)), lambda x: EF.batch_norm(x, None, None, training=True),
                                lambda x: EF.group_norm(x, 2), lambda x: EF.pad(x, (1, 1, 1, 0), "reflect"),
                                lambda x: EF.conv_transpose2d(x, x[:, :1] * 1.0, None, 2)])
def test_layer_second_order(fn):
    assert ember.autograd.gradgradcheck(fn, (_leaf((2, 2, 3, 3), 6),))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_second_order_through_its_one_backward_op(training):
    """native_batch_norm's three gradients come from one native_batch_norm_backward op (composite): its own
    derivative, through the decomposition, passes gradgradcheck in training and in eval."""
    def fn(x, w, b):
        rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
        return EF.batch_norm(x, rm, rv, w, b, training=training)
    leaves = [ember.tensor(np.random.default_rng(s).standard_normal(shape), requires_grad=True)
              for s, shape in ((7, (4, 3, 2)), (8, (3,)), (9, (3,)))]
    assert ember.autograd.gradgradcheck(fn, tuple(leaves))


def test_batch_norm_backward_op_errors_name_the_op_and_argument():
    """torch's native_batch_norm_backward checks nothing (a mismatched call crashes the process); ember's
    refuses with the classes torch's forward raises, naming the op and the argument."""
    from ember._generated import functions as F

    x, w, s = ember.randn(4, 3, 2), ember.randn(3), ember.rand(3) + 0.5
    mask = [True, True, True]
    with pytest.raises(RuntimeError, match="native_batch_norm_backward.*grad_out of size"):
        F.native_batch_norm_backward(ember.randn(4, 3), x, w, s, s, s, s, True, 1e-5, mask)
    with pytest.raises(RuntimeError, match="native_batch_norm_backward.*running_mean and running_var"):
        F.native_batch_norm_backward(x, x, w, None, None, None, None, False, 1e-5, mask)
    with pytest.raises(RuntimeError, match="native_batch_norm_backward.*save_mean must be defined"):
        F.native_batch_norm_backward(x, x, w, s, s, None, s, True, 1e-5, mask)
    with pytest.raises(RuntimeError, match="native_batch_norm_backward.*save_invstd should contain 3 elements"):
        F.native_batch_norm_backward(x, x, w, s, s, s, ember.ones(2), True, 1e-5, mask)
    with pytest.raises(RuntimeError, match="native_batch_norm_backward.*output_mask"):
        F.native_batch_norm_backward(x, x, w, s, s, s, s, True, 1e-5, [True])


def test_log_softmax_backward_data_refuses_an_output_of_another_size():
    """torch's _log_softmax_backward_data broadcasts such an output (its softmax twin refuses it); ember's
    refuses it in both, with the softmax op's message."""
    g, y = ember.randn(2, 3), ember.randn(1, 3)
    for op in (ember._softmax_backward_data, ember._log_softmax_backward_data):
        with pytest.raises(RuntimeError, match=f"{op.__name__}.*same size as tensor for argument #2 'output'"):
            op(g, y, 1, ember.float32)
