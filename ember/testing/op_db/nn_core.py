"""The rest of the core ATen nn ops: backward ops, _native_batch_norm_legit*, col2im/im2col,
3-d pooling and padding.

Backward-op samples build what the backward needs (pooling indices, normalization
statistics) with the module's own forward op from the detached input inside the call, so
torch and ember each get consistent arguments; `grad_output` gets the forward output's
shape (from torch's meta device). torch's double-backward formulas give the reference
gradients of the backward ops.
"""
from __future__ import annotations

import torch

from ..tolerances import LINALG_TOL, REDUCTION_TOL
from .convolution import _a as _conv_a, aten_or_ember
from .samples import FLOAT, NUM, OpInfo, Sample, T, fn, is_float, make
from .database import E, add, f32


def _a(rng, dtype):
    return lambda shape, layout="c", grad=True, domain="any": T(make(rng, shape, dtype, domain=domain), layout,  # noqa
                                                                grad=grad and is_float(dtype))


def _aten(m, name):
    """torch.ops.aten.<name>.<overload> under torch, ember's op function under ember."""
    packet, _, overload = name.partition(".")
    if m.__name__ == "torch":
        return getattr(getattr(m.ops.aten, packet), overload or "default")
    from ember._generated import functions as EF
    return getattr(EF, packet)


def _meta_shape(name, shape, *args, index=None):
    out = _aten(torch, name)(torch.empty(shape, device="meta"), *args)
    return tuple((out[index] if index is not None else out).shape)


# ---------------------------------------------------------------------------- pooling backward
def _max_pool_bwd(nd):
    fwd = f"max_pool{nd}d_with_indices"

    def call(m, g, x, *params):
        _, idx = _aten(m, fwd)(x.detach(), *params)
        k, s, p, d, c = params
        return _aten(m, fwd + "_backward")(g, x.detach(), k, s, p, d, c, idx)

    def samples(rng, dtype):
        a = _a(rng, dtype)
        cases = ([((1, 2, 4, 4), [2], [], [0], [1], False, "kernel 2"),
                  ((2, 1, 5, 5), [3], [2], [1], [1], True, "padding, ceil_mode"),
                  ((1, 1, 6, 5), [2, 3], [1, 2], [1, 1], [2, 1], False, "asymmetric, dilation"),
                  ((2, 4, 4), [2], [1], [0], [1], False, "unbatched, overlapping windows")] if nd == 2 else
                 [((1, 2, 4, 4, 4), [2], [], [0], [1], False, "kernel 2"),
                  ((1, 1, 3, 5, 4), [2, 3, 2], [1, 2, 2], [1, 1, 0], [1, 1, 2], True, "all options"),
                  ((2, 3, 4, 3), [2], [1], [0], [1], False, "unbatched")])
        out = []
        for shape, k, s, p, d, c, desc in cases:
            o = _meta_shape(fwd, shape, k, s, p, d, c, index=0)
            out.append(Sample((a(o), a(shape, grad=False), k, s, p, d, c), desc=desc, fn=call))
        tiny = (1, 1, 3, 4) if nd == 2 else (1, 1, 2, 3, 3)
        out.append(Sample((a(_meta_shape(fwd, tiny, [2], [1], [0], [1], False, index=0)), a(tiny, grad=False), [2], [1],
                           [0], [1], False), desc="tiny (gradcheck)", fn=call))
        o = _meta_shape(fwd, cases[0][0], *cases[0][1:6], index=0)
        out.append(Sample((a(o, "t"), a(cases[0][0], "s", grad=False)) + tuple(cases[0][1:6]),
                          desc="transposed grad, strided input", fn=call))
        return out

    def errors(rng):
        shape = (1, 1, 4, 4) if nd == 2 else (1, 1, 4, 4, 4)
        bad = (1, 1, 3, 3) if nd == 2 else (1, 1, 3, 3, 3)
        idx = T(make(rng, (1, 1, 2, 2) if nd == 2 else (1, 1, 2, 2, 2), "int64"))
        return [E((T(f32(rng, bad)), T(f32(rng, shape)), [2], [], [0], [1], False, idx), RuntimeError,
                  fwd + "_backward", "grad_output", fn=lambda m, *args: _aten(m, fwd + "_backward")(*args),
                  desc="grad_output of the wrong size")]
    return samples, errors


def _avg_pool_bwd(nd, adaptive=False):
    fwd = f"_adaptive_avg_pool{nd}d" if adaptive else f"avg_pool{nd}d"

    def samples(rng, dtype):
        a = _a(rng, dtype)
        if adaptive:
            cases = ([((1, 2, 4, 4), ([2, 2],), "divisible"), ((2, 1, 5, 7), ([3, 4],), "overlapping windows"),
                      ((1, 1, 2, 3), ([4, 5],), "larger output"), ((2, 5, 4), ([2, 3],), "unbatched")] if nd == 2 else
                     [((1, 2, 4, 4, 4), ([2, 2, 2],), "divisible"), ((1, 1, 3, 5, 4), ([2, 3, 3],), "overlapping"),
                      ((2, 3, 2, 3), ([1, 2, 4],), "unbatched")])
        else:
            cases = ([((1, 2, 4, 4), ([2], [], [0], False, True, None), "kernel 2"),
                      ((1, 1, 6, 6), ([3], [2], [1], True, False, None), "ceil_mode, padding not counted"),
                      ((1, 1, 4, 5), ([2, 3], [1, 2], [1, 1], False, True, 3), "divisor_override"),
                      ((2, 4, 4), ([2], [1], [1], False, True, None), "unbatched, padding counted")] if nd == 2 else
                     [((1, 2, 4, 4, 4), ([2], [], [0], False, True, None), "kernel 2"),
                      ((1, 1, 3, 5, 4), ([2, 3, 2], [1, 2, 2], [1, 1, 0], True, False, None), "all options"),
                      ((2, 3, 4, 3), ([2], [1], [1], False, True, 2), "unbatched, divisor_override")])
        out = []
        for shape, params, desc in cases:
            o = _meta_shape(fwd, shape, *params)
            out.append(Sample((a(o), a(shape, grad=False)) + (() if adaptive else params), desc=desc))
        tiny = ((1, 1, 3, 4) if nd == 2 else (1, 1, 2, 3, 3), ([2] * nd,) if adaptive else ([2], [1], [0], False, True,
                                                                                          None))
        out.append(Sample((a(_meta_shape(fwd, tiny[0], *tiny[1])), a(tiny[0], grad=False)) +
                          (() if adaptive else tiny[1]), desc="tiny (gradcheck)"))
        shape, params, _ = cases[0]
        o = _meta_shape(fwd, shape, *params)
        out.append(Sample((a(o, "t"), a(shape, "s", grad=False)) +
                          (() if adaptive else params), desc="transposed grad, strided input"))
        return out

    def errors(rng):
        shape = (1, 1, 4, 4) if nd == 2 else (1, 1, 4, 4, 4)
        bad = (1, 1, 3, 3) if nd == 2 else (1, 1, 3, 3, 3)
        extra = () if adaptive else ([2], [], [0], False, True, None)
        return [E((T(f32(rng, bad)), T(f32(rng, shape))) + extra, RuntimeError, fwd + "_backward",
                  desc="grad_output of the wrong size")] if not adaptive else \
            [E((T(f32(rng, (2, 2))), T(f32(rng, (2, 2)))), IndexError if nd == 3 else RuntimeError, fwd + "_backward",
               desc="2-d input"),
             E((T(make(rng, (1, 2, 2, 2), "int64")), T(make(rng, (1, 2, 2, 2), "int64"))), NotImplementedError,
               fwd + "_backward", desc="int input")]
    return samples, errors


_AVG3D_DTYPES = ("float32", "float64")    # PyTorch's cpu avg_pool3d kernels (half types raise)
for _nd in (2, 3):
    _s, _e = _max_pool_bwd(_nd)
    add(OpInfo(f"max_pool{_nd}d_with_indices_backward", fn(f"max_pool{_nd}d_with_indices_backward"), _s,
               dtypes=FLOAT, grad=True, errors=_e))
    for _ad in (False, True):
        _nm = (f"_adaptive_avg_pool{_nd}d" if _ad else f"avg_pool{_nd}d") + "_backward"
        _s, _e = _avg_pool_bwd(_nd, _ad)
        add(OpInfo(_nm, aten_or_ember(_nm), _s, dtypes=_AVG3D_DTYPES if _nm == "avg_pool3d_backward" else FLOAT,
                   grad=True, tol=REDUCTION_TOL, errors=_e))


# ------------------------------------------------------------------------ convolution backward
def _conv_bwd_samples(rng, dtype):
    a = _conv_a(rng, dtype)
    out = []
    T3 = [True, True, True]
    cases = [((2, 3, 5, 5), (4, 3, 3, 3), [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, T3, "3x3, all grads"),
             ((1, 4, 5, 4), (4, 2, 2, 3), None, [2, 1], [1, 1], [1, 2], False, [0, 0], 2,
              [True, True, False], "stride, padding, dilation, groups; no bias"),
             ((2, 2, 6), (3, 2, 3), [3], [2], [1], [1], False, [0], 1, [False, True, True], "1-d, no input grad"),
             ((1, 2, 3, 3), (2, 2, 2, 2), [4], [2, 2], [1, 0], [1, 1], True, [1, 0], 2, T3, "transposed, groups"),
             ((1, 2, 3), (3, 2, 2), None, [1], [0], [1], False, [0], 1, [True, False, False], "input grad only")]
    for x, w, bs, s, p, d, tr, op_, g, mask, desc in cases:
        o = tuple(torch.ops.aten.convolution(torch.empty(x, device="meta"), torch.empty(w, device="meta"), None, s,
                                             p, d, tr, op_, g).shape)
        out.append(Sample((a(o), a(x, grad=mask[1]), a(w, grad=mask[0]), bs, s, p, d, tr, op_, g, mask), desc=desc))
    out.append(Sample((a((2, 4, 3, 3), "t"), a((2, 3, 5, 5), "s"), a((4, 3, 3, 3), grad=False), [4], [1, 1], [0, 0],
                       [1, 1], False, [0, 0], 1, T3), desc="transposed grad, strided input"))
    return out


add(OpInfo("convolution_backward", aten_or_ember("convolution_backward"), _conv_bwd_samples, dtypes=FLOAT, grad=True,
           tol=LINALG_TOL, grad_tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (1, 2, 2, 2))), T(f32(rng, (1, 2, 4, 4))), T(f32(rng, (2, 3, 3, 3))), None,
                                  [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True]), RuntimeError,
                                 "convolution_backward", "channels",
                                 fn=lambda m, *args: _aten(m, "convolution_backward")(*args),
                                 desc="input channels != weight channels")]))


# ------------------------------------------------------------------------------ linear backward
def _linear_bwd(m, x, g, w, mask):
    """linear_backward; torch's reference (aten.linear_backward has no cpu kernel) is autograd.grad of
    F.linear with a graph of its own, so the gradient tests differentiate through it."""
    if m.__name__ != "torch":
        from ember._generated import functions as EF
        return EF.linear_backward(x, g, w, mask)
    xr = x if x.requires_grad else x.detach().requires_grad_()
    wr = w if w.requires_grad else w.detach().requires_grad_()
    if w.dim() == 1:                  # torch's linear takes no bias beside a 1-D weight and a 2-d input
        grads = m.autograd.grad(m.nn.functional.linear(xr, wr), (xr, wr), g, create_graph=True) + (g.sum(),)
    else:
        b = m.zeros(tuple(w.shape[:-1]), dtype=w.dtype, device=w.device, requires_grad=True)
        grads = m.autograd.grad(m.nn.functional.linear(xr, wr, b), (xr, wr, b), g, create_graph=True)
    return tuple(r if k else None for r, k in zip(grads, mask))


_linear_bwd.__name__ = "linear_backward"


def _linear_bwd_samples(rng, dtype):
    a = _a(rng, dtype)
    T3 = [True, True, True]
    return [Sample((a((4, 3)), a((4, 5)), a((5, 3)), T3), desc="2-d, all grads"),
            Sample((a((2, 4, 3)), a((2, 4, 5)), a((5, 3)), T3), desc="3-d input (leading dims folded)"),
            Sample((a((3,)), a((5,)), a((5, 3)), T3), desc="1-d input (outer product)"),
            Sample((a((4, 3)), a((4,)), a((3,)), T3), desc="1-d weight"),
            Sample((a((4, 3)), a((4, 5)), a((5, 3)), [True, False, False]), desc="input grad only (frozen layer)"),
            Sample((a((4, 3)), a((4, 5)), a((5, 3)), [False, True, True]), desc="parameters only"),
            Sample((a((4, 3)), a((4, 5)), a((5, 3)), [False, False, True]), desc="bias only"),
            Sample((a((3,)), a(()), a((3,)), T3), desc="1-d input and weight (0-d output)"),
            Sample((a((2, 4, 3)), a((2, 4)), a((3,)), T3), desc="3-d input, 1-d weight"),
            Sample((a((4, 0)), a((4, 5)), a((5, 0)), T3), desc="no in_features"),
            Sample((a((2, 4, 3)), a((2, 4, 0)), a((0, 3)), T3), desc="no out_features, 3-d input")]


add(OpInfo("linear_backward", _linear_bwd, _linear_bwd_samples, dtypes=FLOAT, grad=True,
           tol=LINALG_TOL, grad_tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (4, 3))), T(f32(rng, (4, 6))), T(f32(rng, (5, 3))), [True, True, True]),
                                 RuntimeError, "linear_backward", "grad_output", fn=_linear_bwd,
                                 desc="grad_output of the wrong size")]))


# ---------------------------------------------------------------------- normalization backward
def _ln_bwd(m, g, x, ns, w, b, mask):
    _, mean, rstd = _aten(m, "native_layer_norm")(x.detach(), ns, None, None, 1e-5)
    return _aten(m, "native_layer_norm_backward")(g, x, ns, mean, rstd, w, b, mask)


def _ln_bwd_samples(rng, dtype):
    a = _a(rng, dtype)
    T3 = [True, True, True]
    return [Sample((a((2, 3, 4)), a((2, 3, 4)), [4], a((4,)), a((4,)), T3), desc="last dim, all grads", fn=_ln_bwd),
            Sample((a((2, 3, 4)), a((2, 3, 4)), [3, 4], a((3, 4)), None, [True, True, False]),
                   desc="two dims, no bias", fn=_ln_bwd),
            Sample((a((3, 5)), a((3, 5)), [5], None, None, [True, False, False]), desc="no affine", fn=_ln_bwd),
            Sample((a((4,)), a((4,)), [4], a((4,)), a((4,)), [False, True, True]), desc="1-d, parameters only",
                   fn=_ln_bwd),
            Sample((a((2, 4, 3), "t"), a((2, 4, 3), "t"), [3], a((3,)), a((3,)), T3), desc="transposed", fn=_ln_bwd)]


add(OpInfo("native_layer_norm_backward", fn("native_layer_norm_backward"), _ln_bwd_samples, dtypes=FLOAT, grad=True,
           tol=REDUCTION_TOL, grad_tol=REDUCTION_TOL,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3))), [4], T(f32(rng, (2, 1))),
                                  T(f32(rng, (2, 1))), None, None, [True, False, False]), RuntimeError,
                                 "native_layer_norm_backward", "normalized_shape",
                                 fn=lambda m, *args: _aten(m, "native_layer_norm_backward")(*args),
                                 desc="normalized_shape mismatch")]))


def _bn_bwd(m, g, x, w, train, mask):
    """native_batch_norm_backward from the forward's saved statistics (train) or running ones (eval); torch's
    op checks nothing (a mismatched call crashes it), so the errors are ember's alone
    (tests/test_nn_layers.py)."""
    C = x.shape[1]
    running_mean = m.linspace(-0.5, 0.5, C, dtype=x.dtype, device=x.device)
    running_var = m.linspace(0.5, 1.5, C, dtype=x.dtype, device=x.device)
    _, save_mean, save_invstd = _aten(m, "native_batch_norm")(x.detach(), None, None, running_mean.clone(),
                                                              running_var.clone(), train, 0.1, 1e-5)
    saved = (save_mean, save_invstd) if train else (None, None)
    return _aten(m, "native_batch_norm_backward")(g, x, w, running_mean, running_var, *saved, train, 1e-5, mask)


def _bn_bwd_samples(rng, dtype):
    a = _a(rng, dtype)
    T3 = [True, True, True]
    return [Sample((a((2, 3, 3)), a((2, 3, 3)), a((3,)), True, T3), desc="training, all grads", fn=_bn_bwd),
            Sample((a((6, 4)), a((6, 4)), None, True, [True, False, False]), desc="2-d, no weight", fn=_bn_bwd),
            Sample((a((2, 3, 2, 3)), a((2, 3, 2, 3)), a((3,)), False, T3), desc="eval (running statistics)",
                   fn=_bn_bwd),
            # meta: torch's meta kernel returns an input gradient the mask left out (its cpu kernel, None)
            Sample((a((2, 3, 4)), a((2, 3, 4)), a((3,)), True, [False, True, True]), desc="parameters only",
                   fn=_bn_bwd, meta=False),
            Sample((a((3, 2, 4), "t"), a((3, 2, 4)), a((2,)), True, T3), desc="transposed grad", fn=_bn_bwd)]


def _bn_bwd_errors(rng):
    """The errors torch's op raises before it reads its arguments (others crash it: tests/test_nn_layers.py has
    ember's checks of those)."""
    i = lambda *shape: T(make(rng, shape, "int64"))         # noqa: E731
    x, s = T(f32(rng, (4, 3, 2))), T(f32(rng, (3,)))
    call = lambda m, *args: _aten(m, "native_batch_norm_backward")(*args)      # noqa: E731
    return [E((i(4, 3, 2), i(4, 3, 2), None, None, None, i(3), i(3), True, 1e-5, [True, True, True]),
              NotImplementedError, "native_batch_norm_backward", fn=call, desc="int input"),
            E((x, x, None, None, None, s, s, True, 1e-5, [True]), RuntimeError, "native_batch_norm_backward",
              "output_mask", fn=call, desc="output_mask of one bool")]


add(OpInfo("native_batch_norm_backward", fn("native_batch_norm_backward"), _bn_bwd_samples, dtypes=FLOAT, grad=True,
           tol=REDUCTION_TOL, grad_tol=REDUCTION_TOL, errors=_bn_bwd_errors))


def _gn_bwd(m, g, x, w, N, C, HxW, group, mask):
    _, mean, rstd = _aten(m, "native_group_norm")(x.detach(), None, None, N, C, HxW, group, 1e-5)
    return _aten(m, "native_group_norm_backward")(g, x, mean, rstd, w, N, C, HxW, group, mask)


def _gn_bwd_samples(rng, dtype):
    a = _a(rng, dtype)
    T3 = [True, True, True]
    return [Sample((a((2, 4, 3)), a((2, 4, 3)), a((4,)), 2, 4, 3, 2, T3), desc="2 groups, all grads", fn=_gn_bwd),
            Sample((a((1, 6, 2, 2)), a((1, 6, 2, 2)), None, 1, 6, 4, 3, [True, False, False]),
                   desc="4-d, 3 groups, no weight", fn=_gn_bwd),
            Sample((a((2, 3, 2)), a((2, 3, 2)), a((3,)), 2, 3, 2, 1, [False, True, False]), desc="weight grad only",
                   fn=_gn_bwd),
            ]   # (no non-contiguous grad: torch's cpu kernel reads grad_out as contiguous; its formula makes it so)


# grad=False: torch has no derivative of native_group_norm_backward to compare with; ember's (composite,
# differentiated through) is checked by tests/test_nn_layers.py's gradgradcheck of group_norm
add(OpInfo("native_group_norm_backward", fn("native_group_norm_backward"), _gn_bwd_samples, dtypes=FLOAT, grad=False,
           tol=REDUCTION_TOL,
           errors=lambda rng: [E((T(make(rng, (2, 4, 3), "int64")), T(make(rng, (2, 4, 3), "int64")),
                                  T(make(rng, (2, 2), "int64")), T(make(rng, (2, 2), "int64")), None, 2, 4, 3, 2,
                                  [True, False, False]),
                                 NotImplementedError, "native_group_norm_backward",
                                 fn=lambda m, *args: _aten(m, "native_group_norm_backward")(*args),
                                 desc="int input")]))


# --------------------------------------------------------------------- _native_batch_norm_legit
def _legit_train(momentum):
    def call(m, x, w, b):
        C = x.shape[1]
        rm = m.zeros(C, dtype=x.dtype, device=x.device) + 0.5
        rv = m.ones(C, dtype=x.dtype, device=x.device) * 2
        return tuple(_aten(m, "_native_batch_norm_legit")(x, w, b, rm, rv, True, momentum, 1e-5)) + (rm, rv)
    return call


def _legit_samples(rng, dtype):
    a = _a(rng, dtype)
    lowp = dtype in ("float16", "bfloat16")      # torch's meta statistics are float32 there, its cpu ones not
    return [Sample((a((2, 3, 4)), a((3,)), a((3,))), desc="training, running stats updated", fn=_legit_train(0.1),
                   meta=not lowp),
            Sample((a((4, 2, 2, 2)), None, None), desc="training 4-d, no affine", fn=_legit_train(0.3), meta=not lowp),
            Sample((a((2, 3, 4)), a((3,)), a((3,)), a((3,), grad=False), a((3,), grad=False, domain="positive"), False,
                    0.1, 1e-5), desc="eval (statistics (0,) as torch's cpu)", meta=False),
            Sample((a((2, 4, 3), "t"), a((4,)), None), desc="transposed input, training", fn=_legit_train(0.1),
                   meta=not lowp),
            Sample((a((2, 3, 4)), a((3,)), a((3,))), desc="output only",
                   fn=lambda m, *args: _legit_train(0.1)(m, *args)[0])]


def _legit_no_stats_samples(rng, dtype):
    a = _a(rng, dtype)
    lowp = dtype in ("float16", "bfloat16")
    return [Sample((a((2, 3, 4)), a((3,)), a((3,)), True, 0.1, 1e-5), desc="training", meta=not lowp),
            Sample((a((3, 2)), None, None, True, 0.1, 1e-3), desc="2-d, no affine", meta=not lowp),
            Sample((a((2, 4, 3), "t"), a((4,)), a((4,)), True, 0.1, 1e-5), desc="transposed input", meta=not lowp),
            Sample((a((2, 3, 4)), None, a((3,)), True, 0.1, 1e-5), desc="output only",
                   fn=lambda m, *args: _aten(m, "_native_batch_norm_legit.no_stats")(*args)[0])]


def _legit_eval_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 3, 4)), a((3,)), a((3,)), a((3,), grad=False), a((3,), grad=False, domain="positive"),
                    0.1, 1e-5), desc="affine", meta=False),
            Sample((a((2, 2, 3, 2), "t"), None, a((2,)), a((2,), grad=False), a((2,), grad=False, domain="positive"),
                    0.1, 1e-3), desc="transposed 4-d input, bias only", meta=False),
            Sample((a((2, 3, 4)), a((3,)), None, a((3,), grad=False), a((3,), grad=False, domain="positive"), 0.1,
                    1e-5),
                   desc="output only", fn=lambda m, *args: _aten(m, "_native_batch_norm_legit_no_training")(*args)[0])]


def _legit_errors(name, extra, stats):
    def errors(rng):
        st = (T(f32(rng, (3,))), T(f32(rng, (3,)))) if stats else ()
        return [E((T(make(rng, (2, 3), "int64")), None, None) + st + extra, NotImplementedError, name.split(".")[0],
                  fn=lambda m, *args: _aten(m, name)(*args), desc="int input"),
                E((T(f32(rng, (3,))), None, None) + st + extra, IndexError, name.split(".")[0],
                  fn=lambda m, *args: _aten(m, name)(*args), desc="1-d input")]
    return errors


add(OpInfo("_native_batch_norm_legit", aten_or_ember("_native_batch_norm_legit"), _legit_samples, dtypes=FLOAT,
           grad=True, tol=REDUCTION_TOL, errors=_legit_errors("_native_batch_norm_legit", (True, 0.1, 1e-5), True)))
add(OpInfo("_native_batch_norm_legit.no_stats", aten_or_ember("_native_batch_norm_legit.no_stats"),
           _legit_no_stats_samples, dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
           errors=_legit_errors("_native_batch_norm_legit.no_stats", (True, 0.1, 1e-5), False)))
add(OpInfo("_native_batch_norm_legit_no_training", aten_or_ember("_native_batch_norm_legit_no_training"),
           _legit_eval_samples, dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
           errors=_legit_errors("_native_batch_norm_legit_no_training", (0.1, 1e-5), True)))


# ------------------------------------------------------------------------------ col2im / im2col
def _col2im_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 12, 15)), [4, 5], [2, 2], [1, 1], [1, 1], [1, 2]), desc="padding, stride"),
            Sample((a((1, 9, 4)), [4, 4], [3, 3], [1, 1], [0, 0], [1, 1]), desc="overlapping blocks"),
            Sample((a((8, 4)), [3, 4], [2, 2], [1, 2], [0, 1], [1, 2]), desc="unbatched, dilation"),
            Sample((a((1, 4, 6), "t"), [3, 4], [2, 2], [1, 1], [0, 0], [1, 1]), desc="transposed input"),
            Sample((a((0, 4, 6)), [3, 4], [2, 2], [1, 1], [0, 0], [1, 1]), desc="empty batch")]


def _im2col_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 3, 4, 5)), [2, 2], [1, 1], [1, 1], [1, 2]), desc="padding, stride"),
            Sample((a((1, 1, 4, 4)), [3, 3], [1, 1], [0, 0], [1, 1]), desc="overlapping blocks"),
            Sample((a((2, 3, 4)), [2, 2], [1, 2], [0, 1], [1, 2]), desc="unbatched, dilation"),
            Sample((a((1, 2, 4, 3), "t"), [2, 2], [1, 1], [0, 0], [1, 1]), desc="transposed input")]


add(OpInfo("col2im", aten_or_ember("col2im"), _col2im_samples, dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (1, 7, 6))), [3, 4], [2, 2], [1, 1], [0, 0], [1, 1]), RuntimeError, "col2im",
                 fn=aten_or_ember("col2im"), desc="rows not divisible by the kernel size"),
               E((T(f32(rng, (1, 4, 5))), [3, 4], [2, 2], [1, 1], [0, 0], [1, 1]), RuntimeError, "col2im",
                 fn=aten_or_ember("col2im"), desc="wrong number of blocks"),
               E((T(f32(rng, (1, 4, 6))), [3, 4], [2, 2], [1, 1], [0, 0], [0, 1]), RuntimeError, "col2im", "stride",
                 fn=aten_or_ember("col2im"), desc="stride 0")]))
add(OpInfo("im2col", aten_or_ember("im2col"), _im2col_samples, dtypes=FLOAT, grad=True,
           errors=lambda rng: [
               E((T(f32(rng, (4, 4))), [2, 2], [1, 1], [0, 0], [1, 1]), IndexError, "im2col",
                 fn=aten_or_ember("im2col"), desc="2-d input"),
               E((T(f32(rng, (1, 1, 2, 2))), [3, 3], [1, 1], [0, 0], [1, 1]), RuntimeError, "im2col",
                 fn=aten_or_ember("im2col"), desc="kernel larger than the input")]))


# ----------------------------------------------------------------------------- 3-d pooling/padding
def _pool3d_samples(kind):
    def gen(rng, dtype):
        a = _a(rng, dtype)
        if kind == "max":
            return [Sample((a((1, 2, 4, 4, 4)), [2]), desc="kernel 2"),
                    Sample((a((1, 1, 3, 5, 4)), [2, 3, 2], [1, 2, 2], [1, 1, 0], [1, 1, 2], True), desc="all options"),
                    Sample((a((2, 3, 4, 3)), [2], [1]), desc="unbatched"),
                    Sample((a((1, 2, 3, 4, 4), "t"), [2]), desc="transposed input"),
                    Sample((a((0, 1, 2, 2, 2)), [2]), desc="empty batch")]
        if kind == "avg":
            return [Sample((a((1, 2, 4, 4, 4)), [2]), desc="kernel 2"),
                    Sample((a((1, 1, 3, 5, 4)), [2, 3, 2], [1, 2, 2], [1, 1, 0], True, False), desc="all options"),
                    Sample((a((1, 1, 4, 4, 3)), [3], [2], [1], False, True, 5), desc="divisor_override"),
                    Sample((a((2, 3, 4, 3)), [2], [1]), desc="unbatched"),
                    Sample((a((1, 2, 3, 4, 4), "s"), [2]), desc="strided input"),
                    Sample((a((1, 1, 2, 3, 3)), [2], [1], [1], True, False), desc="tiny, ceil_mode (gradcheck)")]
        return [Sample((a((1, 2, 4, 4, 4)), [2, 2, 2]), desc="divisible"),
                Sample((a((1, 1, 3, 5, 4)), [2, 3, 3]), desc="overlapping windows"),
                Sample((a((2, 3, 2, 3)), [1, 2, 4]), desc="unbatched, larger output"),
                Sample((a((1, 2, 3, 4, 4), "t"), [2, 2, 2]), desc="transposed input")]
    return gen


def _pool3d_errors(name):
    def errors(rng):
        out = [E((T(f32(rng, (2, 4))), [2] if "adaptive" not in name else [2, 2, 2]), RuntimeError, name,
                 desc="wrong input rank")]
        if "adaptive" not in name:
            out += [E((T(f32(rng, (1, 1, 4, 4, 4))), [3], [1], [2]), RuntimeError, name, "pad",
                      desc="padding more than half the kernel"),
                    E((T(f32(rng, (1, 1, 4, 4, 4))), [2], [0]), RuntimeError, name, "stride", desc="stride 0")]
        return out
    return errors


add(OpInfo("max_pool3d_with_indices", aten_or_ember("max_pool3d_with_indices"), _pool3d_samples("max"), dtypes=NUM,
           grad=True, errors=_pool3d_errors("max_pool3d_with_indices")))
add(OpInfo("max_pool3d", fn("max_pool3d"), _pool3d_samples("max"), dtypes=NUM, grad=True,
           errors=_pool3d_errors("max_pool3d")))
add(OpInfo("avg_pool3d", aten_or_ember("avg_pool3d"), _pool3d_samples("avg"), dtypes=_AVG3D_DTYPES, grad=True,
           tol=REDUCTION_TOL, errors=lambda rng: _pool3d_errors("avg_pool3d")(rng) + [
               E((T(make(rng, (1, 1, 2, 2, 2), "float16")), [2]), NotImplementedError, "avg_pool3d",
                 fn=aten_or_ember("avg_pool3d"), desc="float16 input (not on PyTorch's cpu)")]))
for _nm in ("_adaptive_avg_pool3d", "adaptive_avg_pool3d"):
    add(OpInfo(_nm, aten_or_ember(_nm), _pool3d_samples("adaptive"), dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
               errors=_pool3d_errors("adaptive_avg_pool3d")))


def _pad3d_samples(reflect):
    def gen(rng, dtype):
        a = _a(rng, dtype)
        return [Sample((a((1, 2, 3, 4, 3)), [1, 2, 0, 1, 2, 1]), desc="batched"),
                Sample((a((2, 3, 2, 3)), [1, 1, 0, 1, 1, 0] if reflect else [3, 1, 0, 4, 2, 2]), desc="unbatched"),
                Sample((a((1, 1, 3, 4, 3), "t"), [2, 0, 1, 1, 0, 1]), desc="transposed input")]
    return gen


for _kind, _reflect in (("reflection", True), ("replication", False)):
    _nm = f"{_kind}_pad3d"
    add(OpInfo(_nm, aten_or_ember(_nm), _pad3d_samples(_reflect), dtypes=FLOAT + ("int64",), grad=True,
               errors=lambda rng, _nm=_nm, _reflect=_reflect: [
                   E((T(f32(rng, (3, 3))), [1] * 6), RuntimeError, _nm, desc="wrong input rank"),
                   E((T(f32(rng, (1, 2, 3, 3, 3))), [1] * 5), RuntimeError, _nm, desc="wrong padding length")] + (
                   [E((T(f32(rng, (1, 2, 3, 3, 3))), [3] * 6), RuntimeError, _nm,
                      desc="padding not smaller than the input")] if _reflect else [])))
