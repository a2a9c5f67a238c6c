"""Activations (erf, gelu, silu, softplus, leaky_relu, elu, hardtanh, mish, hardswish,
hardsigmoid and their in-place twins, gelu_backward/silu_backward), linear,
cosine_similarity and scaled_dot_product_attention.

Ops PyTorch exposes only through torch.nn.functional or torch.ops.aten are called as
`torch.ops.aten.<op>` against `ember._generated.functions.<op>` (`nn_op`), with some samples
through the public torch.nn.functional wrappers (`nnf`) of both.
"""
from __future__ import annotations

import dataclasses
import importlib

import numpy as np

from ..tolerances import LINALG_TOL, SOFTMAX_TOL
from .samples import ALL, FLOAT, NP_DTYPE, OpInfo, Sample, T, aten, fn, is_float, make
from .database import EXCLUDED, E, add, add_pointwise, f32, unary_errors, unary_inplace_errors, unary_samples


def nn_op(name: str):
    """torch.ops.aten.<name> for torch, ember._generated.functions.<op> for ember."""
    ename = name.split(".")[0]
    torch_call = aten(name)

    def call(m, *a, **k):
        if m.__name__ == "torch":
            return torch_call(m, *a, **k)
        return getattr(importlib.import_module("ember._generated.functions"), ename)(*a, **k)
    call.__name__ = f"aten.{name}"
    return call


def nnf(name: str):
    """torch.nn.functional.<name> / ember.nn.functional.<name>."""
    def call(m, *a, **k):
        return getattr(importlib.import_module(f"{m.__name__}.nn.functional"), name)(*a, **k)
    call.__name__ = f"nn.functional.{name}"
    return call


def _inplace_gen(gen):
    """In-place samples: no expanded self (torch refuses to write into it), no public-wrapper calls."""
    def inplace_gen(rng, dtype):
        return [dataclasses.replace(s, fn=None) for s in gen(rng, dtype)
                if s.fn is None and not (isinstance(s.args[0], T) and s.args[0].layout == "e")]
    return inplace_gen


# ---- erf: a primitive, unary floating (integers and bool compute in float32)
def _erf_extra(rng, dtype):
    if not is_float(dtype):
        return []
    vals = np.array([-6.0, -3.0, -1.0, -0.5, 0.25, 0.9, 1.0, 2.5, 5.0, 30.0, np.inf, -np.inf, np.nan])
    return [Sample((T(vals.astype(NP_DTYPE[dtype])),), desc="special and large values", gradcheck=False),
            Sample((T(make(rng, (3, 4), dtype, low=-4, high=4), grad=True),), desc="wide range")]


add_pointwise("erf", "erf", dtypes=ALL, samples=unary_samples(extra=_erf_extra), errors=unary_errors("erf"),
              inplace_errors=unary_inplace_errors("erf_", float_only=True), inplace_dtypes=FLOAT,
              inplace_samples=unary_samples(), second_order=True)


# ---- activations
def _act_samples(params=(), low=-2.0, high=2.0, int_ok=False):
    """Unary-sample layouts plus one sample per keyword set in `params` ({kw: value} dicts)."""
    def gen(rng, dtype):
        g = is_float(dtype)
        S = unary_samples()(rng, dtype)
        S.append(Sample((T(make(rng, (4, 5), dtype, low=low, high=high), grad=g),), desc="wide range"))
        for kw in params:
            S.append(Sample((T(make(rng, (3, 4), dtype, low=low, high=high), grad=g),), dict(kw),
                            desc=", ".join(f"{k}={v}" for k, v in kw.items())))
        return S
    return gen


def _public_samples(base, public, kwargs_list=({},)):
    """`base` plus samples through torch.nn.functional.<public> / ember.nn.functional.<public>."""
    def gen(rng, dtype):
        S = base(rng, dtype)
        g = is_float(dtype)
        for kw in kwargs_list:
            S.append(Sample((T(make(rng, (2, 5), dtype), grad=g),), dict(kw), fn=nnf(public),
                            desc=f"F.{public}({', '.join(f'{k}={v}' for k, v in kw.items())})"))
        return S
    return gen


def _act_errors(name, kernel_exc=NotImplementedError, extra=()):
    def errors(rng):
        out = [E(("x",), TypeError, name, desc="str input", fn=nnf(name)),
               E((T(make(rng, (2, 3), "int64")),), kernel_exc, name, desc="int64 input")]
        for args, kwargs, exc, desc in extra:
            out.append(E((T(f32(rng, (2, 3))),) + args, exc, name, kwargs=kwargs, desc=desc, fn=nnf(name)))
        return out
    return errors


def _act_inplace_errors(name):
    def errors(rng):
        return [E((T(make(rng, (2, 3), "int64")),), NotImplementedError, name, desc="int64 self"),
                E((T(f32(rng, (3, 1))),), RuntimeError, name, desc="expanded self",
                  fn=lambda m, x: nn_op(name)(m, x.expand(3, 4)))]
    return errors


def _selu_celu(rng, dtype):
    g = is_float(dtype)
    return [Sample((T(make(rng, (2, 5), dtype, low=-3, high=3), grad=g),), fn=nnf("selu"), desc="F.selu"),
            Sample((T(make(rng, (2, 5), dtype, low=-3, high=3), grad=g),), {"alpha": 0.5}, fn=nnf("celu"),
                   desc="F.celu(alpha=0.5)")]


def _with_selu_celu(gen):
    """selu and celu are elu with other constants: their public wrappers ride along with elu's samples."""
    return lambda rng, dtype: gen(rng, dtype) + _selu_celu(rng, dtype)



_ACTIVATIONS = {
    # name: (params for samples, sample range, F wrapper kwargs, extra error inputs)
    "gelu": (({"approximate": "tanh"}, {"approximate": "none"}), (-4.0, 4.0), ({}, {"approximate": "tanh"}),
             (((), {"approximate": "fast"}, RuntimeError, "bad approximate"),)),
    "silu": ((), (-6.0, 6.0), ({},), ()),
    "leaky_relu": (({"negative_slope": 0.2},), (-2.0, 2.0), ({}, {"negative_slope": 0.3}), ()),
    "elu": (({"alpha": 0.5}, {"alpha": 1.5, "scale": 2.0, "input_scale": 0.5}), (-3.0, 3.0), ({}, {"alpha": 0.7}),
            ()),
    "mish": ((), (-5.0, 5.0), ({},), ()),
    "hardswish": ((), (-5.0, 5.0), ({},), ()),
    "hardsigmoid": ((), (-5.0, 5.0), ({},), ()),
}
for _nm, (_params, (_lo, _hi), _pub, _extra) in _ACTIVATIONS.items():
    _gen = _act_samples(_params, _lo, _hi)
    _pub_gen = _public_samples(_gen, _nm, _pub)
    add(OpInfo(_nm, nn_op(_nm), _with_selu_celu(_pub_gen) if _nm == "elu" else _pub_gen, dtypes=FLOAT, grad=True,
               errors=_act_errors(_nm, extra=_extra)))
    add(OpInfo(f"{_nm}_", nn_op(f"{_nm}_"), _inplace_gen(_gen), dtypes=FLOAT, grad=True, inplace=True,
               errors=_act_inplace_errors(f"{_nm}_")))

add(OpInfo("softplus", nn_op("softplus"),
           _public_samples(_act_samples(({"beta": 2, "threshold": 1}, {"beta": 0.5}), -4.0, 4.0), "softplus",
                           ({}, {"beta": 3, "threshold": 2})),
           dtypes=FLOAT, grad=True,
           errors=_act_errors("softplus", extra=(((), {"beta": "a"}, TypeError, "str beta"),))))


def _hardtanh_samples(rng, dtype):
    g = is_float(dtype)
    S = _act_samples(({"min_val": -0.5, "max_val": 0.7},), -2.0, 2.0)(rng, dtype) if g else \
        [Sample((T(make(rng, (2, 3), dtype)),), desc="2-d"), Sample((T(make(rng, (3, 2), dtype), "t"),),
                                                                      desc="transposed")]
    S.append(Sample((T(make(rng, (2, 5), dtype), grad=g),), {"min_val": 0.0, "max_val": 6.0}, fn=nnf("hardtanh"),
                    desc="F.hardtanh(0, 6)"))
    if g:
        S.append(Sample((T(make(rng, (2, 5), dtype, low=-8, high=8), grad=g),), fn=nnf("relu6"), desc="F.relu6"))
    return S


add(OpInfo("hardtanh", nn_op("hardtanh"), _hardtanh_samples, dtypes=FLOAT + ("int64", "int32"), grad=True,
           errors=lambda rng: [E(("x",), TypeError, "hardtanh", desc="str input", fn=nnf("hardtanh")),
                               E((T(make(rng, (2, 3), "bool")),), RuntimeError, "hardtanh", desc="bool input")]))
add(OpInfo("hardtanh_", nn_op("hardtanh_"), _inplace_gen(_hardtanh_samples), dtypes=FLOAT + ("int64",), grad=True,
           inplace=True,
           errors=lambda rng: [E((T(make(rng, (2, 3), "bool")),), RuntimeError, "hardtanh_", desc="bool self")]))


# ---- gradient ops (composite; their own gradients are the activations' second derivatives)
def _backward_samples(params=(), grad=True):
    def gen(rng, dtype):
        return [dataclasses.replace(s, args=tuple(dataclasses.replace(t, grad=False) if isinstance(t, T) else t
                                                  for t in s.args)) if not grad else s for s in _gen(rng, dtype)]

    def _gen(rng, dtype):
        S = []
        for kw in ({},) + tuple(params):
            S.append(Sample((T(make(rng, (2, 3), dtype), grad=True), T(make(rng, (2, 3), dtype, low=-3, high=3),
                                                                        grad=True)), dict(kw), desc=f"2-d {kw}"))
        S += [Sample((T(make(rng, (2, 3), dtype), "t", grad=True), T(make(rng, (2, 3), dtype), grad=True)),
                     desc="transposed grad_output"),
              Sample((T(make(rng, (2, 3), dtype), grad=True), T(make(rng, (3,), dtype), grad=True)),
                     dict(params[0]) if params else {}, desc="grad_output broadcast over self"),
              Sample((T(make(rng, (2, 3), dtype), grad=True), T(make(rng, (2, 3), "int64"))), desc="int64 self"),
              Sample((T(make(rng, (0, 3), dtype)), T(make(rng, (0, 3), dtype))), desc="empty"),
              Sample((T(make(rng, (), dtype), grad=True), T(make(rng, (), dtype), grad=True)), desc="0-d")]
        for kw in params:
            S.append(Sample((T(make(rng, (), dtype), grad=True), T(make(rng, (), dtype), grad=True)), dict(kw),
                            desc=f"0-d {kw}"))
        return S
    return gen


def _backward_errors(name):
    def errors(rng):
        return [E((T(make(rng, (2, 3), "int64")), T(make(rng, (2, 3), "int64"))), NotImplementedError, name,
                  desc="int64 grad_output and self"),
                E((T(f32(rng, (2, 3))), T(f32(rng, (4,)))), RuntimeError, name, desc="shapes do not broadcast")]
    return errors


add(OpInfo("gelu_backward", nn_op("gelu_backward"), _backward_samples(({"approximate": "tanh"},)), dtypes=FLOAT,
           grad=True, errors=_backward_errors("gelu_backward")))
# torch 2.13 has no derivative of silu_backward: its second-order gradients are checked through silu's
add(OpInfo("silu_backward", nn_op("silu_backward"), _backward_samples(grad=False), dtypes=FLOAT,
           errors=_backward_errors("silu_backward")))


def _threshold_backward_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda *shape: make(rng, shape, dtype)         # noqa: E731
    S = [Sample((T(a(2, 3), grad=g), T(a(2, 3), grad=g), 0), desc="relu's (threshold 0)"),
         Sample((T(a(2, 3), grad=g), T(a(2, 3), grad=g), 1.5), desc="float threshold"),
         Sample((T(a(2, 3), "t", grad=g), T(a(2, 3), grad=g), 0), desc="transposed grad_output"),
         Sample((T(a(2, 3), grad=g), T(a(2, 3), "t", grad=g), 0), desc="transposed self"),
         Sample((T(a(3), grad=g), T(a(2, 3), grad=g), 0), desc="broadcast grad_output"),
         Sample((T(a(0, 3)), T(a(0, 3)), 0), desc="empty"),
         Sample((T(a(), grad=g), T(a(), grad=g), 0), desc="0-d")]
    if g:
        # mixed dtypes promote (torch's cpu kernel); torch's meta kernel keeps grad_output's dtype
        # instead, so integer grad_outputs with an int64 self are not compared with it
        S.append(Sample((T(a(2, 3), grad=True), T(make(rng, (2, 3), "int64")), 0), desc="int64 self"))
        # a NaN in self passes the gradient (torch tests `self <= threshold`); -0.0 and 0.0 stop it
        special = np.array([np.nan, -0.0, 0.0, 1.0, -1.0, np.inf], dtype=NP_DTYPE[dtype])
        S.append(Sample((T(a(6), grad=True), T(special), 0), desc="nan, signed zeros, inf in self"))
    return S


add(OpInfo("threshold_backward", nn_op("threshold_backward"), _threshold_backward_samples,
           dtypes=FLOAT + ("int64", "int32", "uint8"), grad=True,
           errors=lambda rng: [
               E((T(make(rng, (2, 3), "bool")), T(make(rng, (2, 3), "bool")), 0), NotImplementedError,
                 "threshold_backward", desc="bool grad_output and self"),
               E((T(f32(rng, (2, 3))), T(f32(rng, (4,))), 0), RuntimeError, "threshold_backward",
                 desc="shapes do not broadcast")]))


# ---- linear
def _linear_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda *shape: make(rng, shape, dtype)         # noqa: E731
    return [Sample((T(a(3, 4), grad=g), T(a(5, 4), grad=g), T(a(5), grad=g)), desc="2-d with bias"),
            Sample((T(a(3, 4), grad=g), T(a(5, 4), grad=g)), desc="2-d without bias"),
            Sample((T(a(2, 3, 4), grad=g), T(a(5, 4), grad=g), T(a(5), grad=g)), desc="3-d input"),
            Sample((T(a(4), grad=g), T(a(5, 4), grad=g), T(a(5), grad=g)), desc="1-d input"),
            Sample((T(a(3, 4), grad=g), T(a(4), grad=g)), desc="1-d weight"),
            Sample((T(a(3, 4), "t", grad=g), T(a(5, 4), "t", grad=g), T(a(5), grad=g)), desc="transposed"),
            Sample((T(a(0, 4), grad=g), T(a(5, 4), grad=g), T(a(5), grad=g)), desc="empty batch"),
            Sample((T(a(3, 4), grad=g), T(a(5, 4), grad=g), T(a(3, 5), grad=g)), desc="2-d bias"),
            Sample((T(a(3, 4), grad=g), T(a(5, 4), grad=g), T(a(5), grad=g)), fn=nnf("linear"), desc="F.linear")]


add(OpInfo("linear", nnf("linear"), _linear_samples, dtypes=FLOAT + ("int64",), grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 3))), T(f32(rng, (4, 2)))), RuntimeError, "linear", desc="shapes do not multiply"),
               E((T(f32(rng, (2, 3))), T(f32(rng, (4, 3, 1)))), RuntimeError, "linear", desc="3-d weight"),
               E((T(f32(rng, (2, 3))), T(make(rng, (4, 3), "float64"))), RuntimeError, "linear",
                 desc="dtype mismatch"),
               E((T(f32(rng, (2, 3))), T(f32(rng, (4, 3))), T(f32(rng, (5,)))), RuntimeError, "linear",
                 desc="bias does not broadcast")]))


# ---- cosine_similarity
def _cosine_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda *shape: make(rng, shape, dtype)         # noqa: E731
    S = [Sample((T(a(3, 4), grad=g), T(a(3, 4), grad=g)), desc="2-d dim=1 (default)"),
         Sample((T(a(3, 4), grad=g), T(a(3, 4), grad=g), 0), desc="dim=0"),
         Sample((T(a(2, 3, 4), grad=g), T(a(4), grad=g), -1), desc="broadcast, dim=-1"),
         Sample((T(a(3, 4), "t", grad=g), T(a(3, 4), grad=g)), desc="transposed"),
         Sample((T(a(0, 4), grad=g), T(a(0, 4), grad=g)), desc="empty batch"),
         Sample((T(a(3, 4), grad=g), T(a(3, 4), grad=g), 1, 0.5), desc="large eps"),
         Sample((T(a(3, 4), grad=g), T(a(3, 4), grad=g)), {"dim": -1}, fn=nnf("cosine_similarity"),
                desc="F.cosine_similarity")]
    if dtype == "float32":
        S.append(Sample((T(a(3, 4), grad=True), T(make(rng, (3, 4), "float64"), grad=True)), desc="mixed dtypes"))
    return S


add(OpInfo("cosine_similarity", fn("cosine_similarity"), _cosine_samples, dtypes=FLOAT, grad=True, tol=SOFTMAX_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 3))), T(f32(rng, (4,)))), RuntimeError, "cosine_similarity", desc="no broadcast"),
               E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3))), 3), IndexError, "cosine_similarity", desc="bad dim"),
               E((T(make(rng, (2, 3), "int64")), T(make(rng, (2, 3), "int64"))), RuntimeError, "cosine_similarity",
                 desc="int inputs")]))


# ---- scaled_dot_product_attention (dropout_p=0: deterministic)
def _sdpa_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda *shape: make(rng, shape, dtype)         # noqa: E731
    bool_mask = rng.random((5, 6)) > 0.3
    bool_mask[:, 0] = True
    dead_row = bool_mask.copy()
    dead_row[1] = False
    return [
        Sample((T(a(2, 3, 5, 4), grad=g), T(a(2, 3, 6, 4), grad=g), T(a(2, 3, 6, 7), grad=g)), desc="4-d"),
        Sample((T(a(2, 5, 4), grad=g), T(a(2, 6, 4), grad=g), T(a(2, 6, 4), grad=g)), desc="3-d"),
        Sample((T(a(5, 4), grad=g), T(a(6, 4), grad=g), T(a(6, 4), grad=g)), desc="2-d"),
        Sample((T(a(2, 5, 4), grad=g), T(a(2, 5, 4), grad=g), T(a(2, 5, 4), grad=g)), {"is_causal": True},
               desc="causal"),
        Sample((T(a(2, 3, 4), grad=g), T(a(2, 6, 4), grad=g), T(a(2, 6, 4), grad=g)), {"is_causal": True},
               desc="causal, fewer queries"),
        Sample((T(a(2, 5, 4), grad=g), T(a(2, 6, 4), grad=g), T(a(2, 6, 4), grad=g), T(bool_mask)), desc="bool mask"),
        Sample((T(a(2, 5, 4), grad=g), T(a(2, 6, 4), grad=g), T(a(2, 6, 4), grad=g), T(dead_row)),
               desc="bool mask with a fully masked row"),
        Sample((T(a(2, 5, 4), grad=g), T(a(2, 6, 4), grad=g), T(a(2, 6, 4), grad=g), T(a(2, 5, 6), grad=g)),
               desc="float mask"),
        Sample((T(a(2, 5, 4), grad=g), T(a(2, 6, 4), grad=g), T(a(2, 6, 4), grad=g),
                T(np.where(bool_mask, 0.0, -np.inf).astype(NP_DTYPE[dtype]))), desc="float mask with -inf"),
        Sample((T(a(2, 5, 4), grad=g), T(a(2, 6, 4), grad=g), T(a(2, 6, 4), grad=g)), {"scale": 0.3}, desc="scale"),
        Sample((T(a(2, 4, 5, 4), grad=g), T(a(2, 2, 6, 4), grad=g), T(a(2, 2, 6, 4), grad=g)), {"enable_gqa": True},
               desc="grouped-query heads"),
        Sample((T(a(2, 4, 5, 4), grad=g), T(a(1, 4, 6, 4), grad=g), T(a(1, 4, 6, 4), grad=g)),
               desc="broadcast batch"),
        Sample((T(a(2, 5, 4), "t", grad=g), T(a(2, 6, 4), grad=g), T(a(2, 6, 4), grad=g)), desc="transposed query"),
        Sample((T(a(1, 2, 3), grad=g), T(a(1, 3, 3), grad=g), T(a(1, 3, 2), grad=g)), desc="small (gradcheck)"),
        Sample((T(a(1, 3, 2), grad=g), T(a(1, 3, 2), grad=g), T(a(1, 3, 2), grad=g)), {"is_causal": True},
               desc="small causal (gradcheck)"),
        Sample((T(a(1, 2, 3), grad=g), T(a(1, 3, 3), grad=g), T(a(1, 3, 2), grad=g), T(a(2, 3), grad=g)),
               {"scale": 0.7}, desc="small float mask (gradcheck)"),
        Sample((T(a(2, 0, 4)), T(a(2, 6, 4)), T(a(2, 6, 4))), desc="no queries"),
        Sample((T(a(2, 5, 4), grad=g), T(a(2, 6, 4), grad=g), T(a(2, 6, 4), grad=g)), {"is_causal": True},
               fn=nnf("scaled_dot_product_attention"), desc="F.scaled_dot_product_attention"),
    ]


add(OpInfo("scaled_dot_product_attention", nn_op("scaled_dot_product_attention"), _sdpa_samples, dtypes=FLOAT,
           grad=True, tol={**SOFTMAX_TOL, **LINALG_TOL},
           errors=lambda rng: [
               E((T(f32(rng, (4,))), T(f32(rng, (4,))), T(f32(rng, (4,)))), RuntimeError,
                 "scaled_dot_product_attention", desc="1-d inputs"),
               E((T(f32(rng, (2, 5, 4))), T(make(rng, (2, 5, 4), "float64")), T(f32(rng, (2, 5, 4)))), RuntimeError,
                 "scaled_dot_product_attention", desc="dtype mismatch"),
               E((T(f32(rng, (2, 5, 4))), T(f32(rng, (2, 5, 4))), T(f32(rng, (2, 5, 4))),
                  T(np.ones((5, 5), np.bool_))), RuntimeError, "scaled_dot_product_attention", "is_causal",
                 kwargs={"is_causal": True}, desc="attn_mask and is_causal"),
               E((T(f32(rng, (2, 5, 4))), T(f32(rng, (2, 5, 4))), T(f32(rng, (2, 5, 4))),
                  T(make(rng, (5, 5), "int64"))), RuntimeError, "scaled_dot_product_attention", desc="int mask"),
               E((T(f32(rng, (2, 4, 5, 4))), T(f32(rng, (2, 3, 5, 4))), T(f32(rng, (2, 3, 5, 4)))), RuntimeError,
                 "scaled_dot_product_attention", kwargs={"enable_gqa": True}, desc="heads do not divide"),
               E((T(f32(rng, (2, 5, 4))), T(f32(rng, (2, 5, 4))), T(f32(rng, (2, 5, 4))), T(f32(rng, (3, 5)))),
                 RuntimeError, "scaled_dot_product_attention", desc="mask does not broadcast")]))


# ---- _scaled_dot_product_attention_fused: scaled_dot_product_attention's op without mask or dropout,
# returning the output (torch's math path's) and the logsumexp of each query's scores (float32 for
# float16/bfloat16, as torch's flash attention keeps it); its backward op
# (_scaled_dot_product_attention_fused_backward) is what test_grad and gradcheck run, with
# gradients for both outputs
def _sdpa_fused_call(m, q, k, v, is_causal=False, scale=1.0):
    if m.__name__ == "torch":
        out = m.ops.aten._scaled_dot_product_attention_math(q, k, v, None, 0.0, is_causal, None, scale=scale)[0]
        wide = (lambda t: t.float()) if q.dtype in (m.float16, m.bfloat16) else (lambda t: t)
        scores = wide(q) @ wide(k).transpose(-2, -1) * scale
        if is_causal:
            keep = m.ones(q.shape[-2], k.shape[-2], dtype=m.bool, device=q.device).tril()
            scores = scores.masked_fill(~keep, float("-inf"))
        return out, m.logsumexp(scores, -1)
    return importlib.import_module("ember._generated.functions")._scaled_dot_product_attention_fused(
        q, k, v, is_causal, scale)


_sdpa_fused_call.__name__ = "_scaled_dot_product_attention_fused"


def _sdpa_fused_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda *shape: make(rng, shape, dtype)         # noqa: E731
    return [Sample((T(a(2, 3, 5, 4), grad=g), T(a(2, 3, 5, 4), grad=g), T(a(2, 3, 5, 4), grad=g), False, 0.5),
                   desc="4-d"),
            Sample((T(a(2, 3, 5, 4), grad=g), T(a(2, 3, 5, 4), grad=g), T(a(2, 3, 5, 4), grad=g), True, 0.5),
                   desc="4-d causal"),
            Sample((T(a(3, 4, 6), grad=g), T(a(3, 7, 6), grad=g), T(a(3, 7, 2), grad=g), True, 1 / 6 ** 0.5),
                   desc="3-d causal, more keys, narrower values"),
            Sample((T(a(2, 5, 4), "t", grad=g), T(a(2, 5, 4), grad=g), T(a(2, 5, 4), "t", grad=g), False, 1.0),
                   desc="transposed query and value"),
            Sample((T(a(1, 3, 2), grad=g), T(a(1, 4, 2), grad=g), T(a(1, 4, 3), grad=g), True, 0.7),
                   desc="small causal (finite differences)")]


add(OpInfo("_scaled_dot_product_attention_fused", _sdpa_fused_call, _sdpa_fused_samples, dtypes=FLOAT, grad=True,
           tol={**SOFTMAX_TOL, **LINALG_TOL},
           errors=lambda rng: [
               E((T(f32(rng, (2, 5, 4))), T(make(rng, (2, 5, 4), "float64")), T(f32(rng, (2, 5, 4)))), RuntimeError,
                 "_scaled_dot_product_attention_fused", desc="dtype mismatch"),
               E((T(f32(rng, (2, 5, 4))), T(f32(rng, (3, 5, 4))), T(f32(rng, (3, 5, 4)))), RuntimeError,
                 "_scaled_dot_product_attention_fused", desc="batch shapes differ")]))
EXCLUDED["_scaled_dot_product_attention_fused_backward"] = (
    "the backward of _scaled_dot_product_attention_fused: test_grad and gradcheck of that op run it against torch's "
    "math attention and finite differences, with gradients for both of its outputs")
