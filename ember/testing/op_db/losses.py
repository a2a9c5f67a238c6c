"""Losses: mse, l1, smooth_l1, huber, binary_cross_entropy(_with_logits), kl_div, nll_loss_nd,
cross_entropy_loss; through torch.ops.aten (ATen's reduction enum: 0 none, 1 mean, 2 sum)
and through torch.nn.functional (reduction strings, weights, the deprecated arguments).

Checks that read the data (targets out of range, probabilities outside [0, 1]) have error
inputs marked `meta=False`: the meta device has no values to check.
"""
from __future__ import annotations

import importlib

import numpy as np

from ..tolerances import SOFTMAX_TOL
from .activations import nn_op, nnf
from .database import EXCLUDED, E, add, f32
from .samples import FLOAT, ErrorInput, NP_DTYPE, OpInfo, Sample, T, make

LOSS_TOL = SOFTMAX_TOL          # reductions of a few terms: the softmax table
_REDUCTIONS = (0, 1, 2)
_NAMES = {0: "none", 1: "mean", 2: "sum"}


def _data_error(args, exc, *match, kwargs=None, fn=None, desc=""):
    return ErrorInput(Sample(tuple(args), kwargs or {}, desc=desc, fn=fn, meta=False), exc, tuple(match))


# ---- elementwise losses
def _probs(rng, shape, dtype):
    return make(rng, shape, dtype, low=0.05, high=0.95)


def _pointwise_loss_samples(name, extra_args=(), domain=None, weight=False, f_kwargs=()):
    """(self, target[, weight...], reduction, *extra_args) through aten, plus F.<public> calls."""
    public = {"binary_cross_entropy_with_logits": "binary_cross_entropy_with_logits"}.get(name, name)

    def gen(rng, dtype):
        x = (lambda shape: _probs(rng, shape, dtype)) if domain == "probs" else \
            (lambda shape: make(rng, shape, dtype, low=-3, high=3))
        y = (lambda shape: _probs(rng, shape, dtype)) if domain in ("probs", "target_probs") else \
            (lambda shape: make(rng, shape, dtype, low=-3, high=3))
        mid = (None,) * weight
        S = []
        for r in _REDUCTIONS:
            S.append(Sample((T(x((2, 3)), grad=True), T(y((2, 3)), grad=True)) + mid + (r,) + extra_args,
                            desc=f"reduction={_NAMES[r]}"))
        S += [Sample((T(x(()), grad=True), T(y(()), grad=True)) + mid + (0,) + extra_args, desc="0-d"),
              Sample((T(x((0, 3))), T(y((0, 3)))) + mid + (1,) + extra_args, desc="empty, mean (nan)"),
              Sample((T(x((0, 3))), T(y((0, 3)))) + mid + (0,) + extra_args, desc="empty, none"),
              Sample((T(x((4, 3)), "t", grad=True), T(y((4, 3)), grad=True)) + mid + (0,) + extra_args,
                     desc="transposed self"),
              Sample((T(x((4, 5)), grad=True), T(y((4, 5)), grad=True)) + mid + (2,) + extra_args, desc="sum 4x5")]
        if not weight:
            S.append(Sample((T(x((2, 3)), grad=True), T(y((3,)), grad=True), 0) + extra_args,
                            desc="broadcast target"))
        if dtype == "float32":
            g = name != "huber_loss"          # torch's huber_loss backward fails on mixed dtypes
            S.append(Sample((T(x((2, 3)), grad=g), T(make(rng, (2, 3), "float64", low=0.05, high=0.95)
                                                     if domain else make(rng, (2, 3), "float64"), grad=g))
                            + mid + (1,) + extra_args, desc="mixed float32 x float64",
                            meta=name != "huber_loss"))     # torch's meta huber_loss promotes, its cpu one not
        for kw in f_kwargs:
            kw = dict(kw)
            if kw.get("weight") == "W":      # torch's binary cross entropies take no gradient for weight
                kw["weight"] = T(make(rng, (2, 3), dtype, low=0.1, high=2), grad=not name.startswith("binary"))
            if kw.get("pos_weight") == "P":
                kw["pos_weight"] = T(make(rng, (3,), dtype, low=0.1, high=3))     # torch: no gradient
            shown = ", ".join(f"{k}=" + ("T" if isinstance(v, T) else repr(v)) for k, v in kw.items())
            S.append(Sample((T(x((2, 3)), grad=True), T(y((2, 3)), grad=True)), kw, fn=nnf(public),
                            desc=f"F.{public}({shown})"))
        return S
    return gen


def _pointwise_errors(name, extra_args=(), weight=False, dtype_exc=NotImplementedError, more=()):
    mid = (None,) * weight

    def errors(rng):
        out = [E((T(f32(rng, (2, 3))), T(f32(rng, (4,)))) + mid + (1,) + extra_args, RuntimeError, name,
                 desc="shapes do not broadcast"),
               E((T(make(rng, (2, 3), "int64")), T(make(rng, (2, 3), "int64"))) + mid + (1,) + extra_args,
                 dtype_exc, name, desc="int64 inputs"),
               E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3)))), ValueError, "reduction", kwargs={"reduction": "avg"},
                 fn=nnf(name), desc="F: unknown reduction string")]
        return out + [m(rng) for m in more]
    return errors


_LOSSES = {
    # name: (extra args after reduction, domain, has weight/pos_weight Tensor? args, F kwargs, int exc, more errors)
    "mse_loss": ((), None, 0, ({}, {"reduction": "sum"}, {"weight": "W"}, {"weight": "W", "reduction": "none"}),
                 NotImplementedError, ()),
    "l1_loss": ((), None, 0, ({}, {"reduction": "none"}, {"weight": "W"}, {"weight": "W", "reduction": "sum"}),
                RuntimeError, ()),
    "smooth_l1_loss": ((0.5,), None, 0, ({}, {"beta": 0.0}, {"beta": 2.0, "reduction": "sum"}), NotImplementedError,
                       (lambda rng: E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3))), 1, -1.0), RuntimeError,
                                      "smooth_l1_loss", "beta", desc="negative beta"),)),
    "huber_loss": ((0.7,), None, 0, ({}, {"delta": 2.0}, {"weight": "W"}, {"weight": "W", "reduction": "none"}),
                   NotImplementedError,
                   (lambda rng: E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3))), 1, 0.0), RuntimeError, "huber_loss",
                                  "delta", desc="zero delta"),)),
}
for _nm, (_extra, _dom, _w, _fkw, _exc, _more) in _LOSSES.items():
    add(OpInfo(_nm, nn_op(_nm), _pointwise_loss_samples(_nm, _extra, _dom, _w, _fkw), dtypes=FLOAT, grad=True,
               tol=LOSS_TOL, errors=_pointwise_errors(_nm, _extra, _w, _exc, _more)))


def _bce_samples(rng, dtype):
    S = _pointwise_loss_samples("binary_cross_entropy", (), "probs", 1,
                                ({}, {"reduction": "sum"}, {"weight": "W"}))(rng, dtype)
    S = [s for s in S if s.desc not in ("broadcast target", "mixed float32 x float64")]
    w = make(rng, (2, 3), dtype, low=0.1, high=2)
    S.append(Sample((T(_probs(rng, (2, 3), dtype), grad=True), T(_probs(rng, (2, 3), dtype), grad=True), T(w), 0),
                    desc="weight, none"))
    S.append(Sample((T(np.array([0.0, 1.0, 0.5]).astype(NP_DTYPE[dtype])), T(np.array([0.0, 1.0, 1.0])
                                                                          .astype(NP_DTYPE[dtype])), None, 0),
                    desc="inputs 0 and 1 (logs clamped at -100)"))
    return S


add(OpInfo("binary_cross_entropy", nn_op("binary_cross_entropy"), _bce_samples, dtypes=FLOAT, grad=True,
           tol=LOSS_TOL,
           errors=lambda rng: [
               E((T(make(rng, (2, 3), "int64")), T(make(rng, (2, 3), "int64"))), NotImplementedError,
                 "binary_cross_entropy", desc="int64 inputs"),
               E((T(_probs(rng, (2, 3), "float32")), T(_probs(rng, (2, 3), "float64"))), RuntimeError,
                 "binary_cross_entropy", "target", desc="target of another dtype"),
               E((T(_probs(rng, (2, 3), "float32")), T(_probs(rng, (3,), "float32"))), ValueError,
                 "target size", fn=nnf("binary_cross_entropy"), desc="F: target size differs"),
               _data_error((T(f32(rng, (2, 3)) + 3), T(_probs(rng, (2, 3), "float32"))), RuntimeError,
                           "binary_cross_entropy", "between 0 and 1", desc="input outside [0, 1]")]))


def _bcel_samples(rng, dtype):
    S = _pointwise_loss_samples("binary_cross_entropy_with_logits", (), "target_probs", 2,
                                ({}, {"reduction": "none"}, {"weight": "W"}, {"pos_weight": "P"},
                                 {"weight": "W", "pos_weight": "P", "reduction": "sum"}))(rng, dtype)
    x = make(rng, (2, 3), dtype, low=-30, high=30)
    S.append(Sample((T(x, grad=True), T(_probs(rng, (2, 3), dtype), grad=True), None, None, 0),
                    desc="large logits (stability)"))
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=True), T(_probs(rng, (2, 3), dtype), grad=True),
                     T(make(rng, (3,), dtype, low=0.1, high=2)),
                     T(make(rng, (3,), dtype, low=0.1, high=2)), 1), desc="weight and pos_weight (aten)"))
    return S


add(OpInfo("binary_cross_entropy_with_logits", nn_op("binary_cross_entropy_with_logits"), _bcel_samples, dtypes=FLOAT, grad=True, tol=LOSS_TOL,
           errors=lambda rng: [
               E((T(make(rng, (2, 3), "int64")), T(make(rng, (2, 3), "int64"))), NotImplementedError,
                 "binary_cross_entropy_with_logits", desc="int64 inputs"),
               E((T(f32(rng, (2, 3))), T(_probs(rng, (3,), "float32"))), ValueError, "Target size",
                 fn=nnf("binary_cross_entropy_with_logits"), desc="F: target size differs")]))


def _kl_samples(rng, dtype):
    logp = lambda shape: np.log(_probs(rng, shape, "float64")).astype(NP_DTYPE[dtype])      # noqa: E731
    S = []
    for r in _REDUCTIONS:
        for log_target in (False, True):
            tgt = logp((2, 3)) if log_target else _probs(rng, (2, 3), dtype)
            S.append(Sample((T(logp((2, 3)), grad=True), T(tgt, grad=True), r), {"log_target": log_target},
                            desc=f"reduction={_NAMES[r]} log_target={log_target}"))
    zeros = _probs(rng, (2, 3), dtype)
    zeros[0, 1] = 0
    S += [Sample((T(logp((2, 3)), grad=True), T(zeros), 2), desc="a zero target (0 log 0 = 0)"),
          Sample((T(logp((2, 3)), grad=True), T(_probs(rng, (3,), dtype), grad=True), 0), desc="broadcast target"),
          Sample((T(logp(()), grad=True), T(_probs(rng, (), dtype), grad=True), 1), desc="0-d"),
          Sample((T(logp((0, 3))), T(_probs(rng, (0, 3), dtype)), 2), desc="empty"),
          Sample((T(logp((4, 3)), "t", grad=True), T(_probs(rng, (4, 3), dtype), grad=True), 0), desc="transposed")]
    for kw in ({"reduction": "batchmean"}, {"reduction": "sum", "log_target": True}, {"reduction": "none"}):
        tgt = logp((2, 3)) if kw.get("log_target") else _probs(rng, (2, 3), dtype)
        S.append(Sample((T(logp((2, 3)), grad=True), T(tgt, grad=True)), kw, fn=nnf("kl_div"), desc=f"F.kl_div {kw}"))
    return S


add(OpInfo("kl_div", nn_op("kl_div"), _kl_samples, dtypes=FLOAT, grad=True, tol=LOSS_TOL,
           errors=lambda rng: [
               E((T(make(rng, (2, 3), "int64")), T(make(rng, (2, 3), "int64")), 2), RuntimeError, "kl_div",
                 desc="int64 inputs"),
               E((T(f32(rng, (2, 3))), T(f32(rng, (4,))), 2), RuntimeError, "kl_div", desc="no broadcast")]))


# ---- nll_loss_nd and cross_entropy_loss: class indices (and probabilities)
def _targets(rng, shape, classes, ignore=None):
    t = rng.integers(0, classes, size=shape).astype(np.int64)
    if ignore is not None and t.size:
        t.reshape(-1)[0] = ignore
    return t


def _class_samples(rng, dtype, logits: bool):
    x = (lambda *shape: make(rng, shape, dtype, low=-3, high=3)) if logits else \
        (lambda *shape: np.log(_probs(rng, shape, "float64")).astype(NP_DTYPE[dtype]))
    w = lambda c: make(rng, (c,), dtype, low=0.2, high=2.0)       # noqa: E731
    S = []
    for r in _REDUCTIONS:
        S.append(Sample((T(x(4, 5), grad=True), T(_targets(rng, (4,), 5)), None, r), desc=f"2-d {_NAMES[r]}"))
        S.append(Sample((T(x(4, 5), grad=True), T(_targets(rng, (4,), 5)), T(w(5)), r),
                        desc=f"2-d weight {_NAMES[r]}"))
        S.append(Sample((T(x(2, 5, 3), grad=True), T(_targets(rng, (2, 3), 5, ignore=2)), T(w(5)), r, 2),
                        desc=f"3-d, ignore_index=2 {_NAMES[r]}"))
    S += [Sample((T(x(5), grad=True), T(np.array(3, np.int64))), desc="1-d input, 0-d target"),
          Sample((T(x(5), grad=True), T(np.array(3, np.int64)), None, 0), desc="1-d input, none"),
          Sample((T(x(2, 4, 2, 3), grad=True), T(_targets(rng, (2, 2, 3), 4, ignore=-100))), desc="4-d, -100 ignored"),
          Sample((T(x(4, 5), grad=True), T(np.full(4, -100, np.int64)), None, 1), desc="all ignored: mean is nan",
                 gradcheck=False),
          Sample((T(x(0, 5)), T(np.zeros(0, np.int64)), None, 1), desc="empty batch, mean (nan)"),
          Sample((T(x(0, 5)), T(np.zeros(0, np.int64)), None, 2), desc="empty batch, sum"),
          Sample((T(x(4, 5), "t", grad=True), T(_targets(rng, (4,), 5))), desc="transposed input")]
    return S


def _nll_samples(rng, dtype):
    S = _class_samples(rng, dtype, logits=False)
    logp = lambda *shape: np.log(_probs(rng, shape, "float64")).astype(NP_DTYPE[dtype])     # noqa: E731
    S += [Sample((T(logp(4, 5), grad=True), T(_targets(rng, (4,), 5))), {"reduction": "sum"}, fn=nnf("nll_loss"),
                 desc="F.nll_loss sum"),
          Sample((T(logp(4, 5), grad=True), T(_targets(rng, (4,), 5, ignore=1))),
                 {"weight": T(make(rng, (5,), dtype, low=0.2, high=2)), "ignore_index": 1}, fn=nnf("nll_loss"),
                 desc="F.nll_loss weight, ignore_index")]
    return S


def _class_errors(name, public):
    def errors(rng):
        x = T(f32(rng, (2, 3)))
        return [E((x, T(np.array([0.0, 1.0], np.float32))), RuntimeError, name, "target", desc="float target")
                if name == "nll_loss_nd" else
                E((x, T(np.array([0, 1], np.int32))), RuntimeError, name, "target", desc="int32 target"),
                E((x, T(np.array([0, 1, 2], np.int64))), ValueError, name, "batch_size", desc="batch size mismatch"),
                E((x, T(np.array([0, 1], np.int64)), T(np.ones(2, np.float32))), RuntimeError, name, "weight",
                  desc="weight of the wrong size"),
                E((T(make(rng, (2, 3), "int64")), T(np.array([0, 1], np.int64))), NotImplementedError, name,
                  desc="int64 input"),
                E((T(f32(rng, (2, 3, 4, 5))), T(np.zeros((2, 4), np.int64))), RuntimeError, name,
                  desc="spatial target of the wrong rank"),
                E((x, T(np.array([0, 1], np.int64))), ValueError, "reduction", kwargs={"reduction": "avg"},
                  fn=nnf(public), desc="F: unknown reduction string"),
                _data_error((x, T(np.array([0, 5], np.int64))), IndexError, "out of bounds",
                            desc="target out of bounds")]
    return errors


add(OpInfo("nll_loss_nd", nn_op("nll_loss_nd"), _nll_samples, dtypes=FLOAT, grad=True, tol=LOSS_TOL,
           errors=_class_errors("nll_loss_nd", "nll_loss")))


# ---- _nll_loss_backward: nll_loss_nd's gradient, against aten.nll_loss_backward (which takes `self` and the
# forward's total weight where ember's op takes the input's size and recomputes the total)
def _nll_backward_call(m, grad, target, weight, self_size, reduction, ignore_index):
    if m.__name__ == "torch":
        self = m.zeros(tuple(self_size), dtype=grad.dtype, device=grad.device)
        total = m.ops.aten.nll_loss_forward(self, target, weight, reduction, ignore_index)[1]
        return m.ops.aten.nll_loss_backward(grad, self, target, weight, reduction, ignore_index, total)
    return importlib.import_module("ember._generated.functions")._nll_loss_backward(grad, target, weight, self_size,
                                                                                     reduction, ignore_index)


_nll_backward_call.__name__ = "_nll_loss_backward"


def _nll_backward_samples(rng, dtype):
    w = T(make(rng, (5,), dtype, low=0.2, high=2.0))
    S = []
    for r in _REDUCTIONS:
        g = lambda: T(make(rng, (4,) if r == 0 else (), dtype), grad=True)       # noqa: E731
        S += [Sample((g(), T(_targets(rng, (4,), 5)), None, (4, 5), r, -100), desc=f"2-d {_NAMES[r]}"),
              Sample((g(), T(_targets(rng, (4,), 5, ignore=1)), w, (4, 5), r, 1), desc=f"weight, ignore 1 {_NAMES[r]}")]
    S += [Sample((T(make(rng, (), dtype), grad=True), T(np.array(3, np.int64)), None, (5,), 1, -100),
                 desc="1-d input, 0-d target"),
          Sample((T(make(rng, (), dtype)), T(np.zeros(0, np.int64)), None, (0, 5), 2, -100), desc="empty batch, sum")]
    return S


add(OpInfo("_nll_loss_backward", _nll_backward_call, _nll_backward_samples, dtypes=FLOAT, grad=True, tol=LOSS_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (3,))), T(np.array([0, 1], np.int64)), None, (2, 3), 0, -100), RuntimeError,
                 "_nll_loss_backward", "grad_output", desc="grad_output of the wrong shape"),
               E((T(f32(rng, ())), T(np.array([0, 1, 2], np.int64)), None, (2, 3), 1, -100), RuntimeError,
                 "_nll_loss_backward", "target", desc="target of the wrong shape"),
               _data_error((T(f32(rng, ())), T(np.array([0, 3], np.int64)), None, (2, 3), 1, -100), IndexError,
                           "out of bounds", desc="target out of bounds")]))


def _nll_2d_samples(rng, dtype):
    return [s for s in _nll_samples(rng, dtype) if s.fn is None and s.args[0].values.ndim <= 2]


add(OpInfo("nll_loss", nn_op("nll_loss"), _nll_2d_samples, dtypes=FLOAT, grad=True, tol=LOSS_TOL,
           errors=lambda rng: [e for e in _class_errors("nll_loss", "nll_loss")(rng)
                               if e.sample.fn is None and e.exc is not ValueError] + [
               E((T(f32(rng, (2, 3))), T(np.array([0, 1, 2], np.int64))), RuntimeError, "nll_loss", "size mismatch",
                 desc="batch size mismatch"),
               E((T(f32(rng, (2, 3, 4))), T(np.zeros((2, 4), np.int64))), RuntimeError, "nll_loss", "1D or 2D",
                 desc="3-d input")]))


def _ce_samples(rng, dtype):
    S = _class_samples(rng, dtype, logits=True)
    x = lambda *shape: make(rng, shape, dtype, low=-3, high=3)      # noqa: E731
    w = lambda c: make(rng, (c,), dtype, low=0.2, high=2.0)           # noqa: E731

    def probs(*shape):
        p = _probs(rng, shape, "float64")
        return (p / p.sum(axis=1 if len(shape) > 1 else 0, keepdims=True)).astype(NP_DTYPE[dtype])
    for r in _REDUCTIONS:
        S.append(Sample((T(x(4, 5), grad=True), T(_targets(rng, (4,), 5, ignore=1)), T(w(5)), r, 1, 0.1),
                        desc=f"label smoothing, weight, ignore_index {_NAMES[r]}"))
        S.append(Sample((T(x(4, 5), grad=True), T(_targets(rng, (4,), 5, ignore=-100)), None, r, -100, 0.2),
                        desc=f"label smoothing {_NAMES[r]}"))
        S.append(Sample((T(x(4, 5), grad=True), T(probs(4, 5), grad=True), None, r), desc=f"probabilities {_NAMES[r]}"))
        S.append(Sample((T(x(2, 5, 3), grad=True), T(probs(2, 5, 3), grad=True), T(w(5)), r, -100, 0.3),
                        desc=f"3-d probabilities, weight, label smoothing {_NAMES[r]}"))
    S += [Sample((T(x(5), grad=True), T(probs(5), grad=True)), desc="1-d probabilities"),
          Sample((T(x(0, 5)), T(np.zeros((0, 5), NP_DTYPE[dtype])), None, 1), desc="empty probabilities, mean (nan)"),
          Sample((T(x(3, 4), grad=True), T(_targets(rng, (3,), 4))), fn=nnf("cross_entropy"), desc="F.cross_entropy"),
          Sample((T(x(3, 4), grad=True), T(_targets(rng, (3,), 4, ignore=0))),
                 {"weight": T(w(4)), "ignore_index": 0, "label_smoothing": 0.15, "reduction": "sum"},
                 fn=nnf("cross_entropy"), desc="F.cross_entropy all options"),
          Sample((T(x(3, 4), grad=True), T(probs(3, 4), grad=True)), {"label_smoothing": 0.1},
                 fn=nnf("cross_entropy"), desc="F.cross_entropy probabilities")]
    return S


def _ce_errors(rng):
    x = T(f32(rng, (2, 3)))
    return _class_errors("cross_entropy_loss", "cross_entropy")(rng)[1:] + [
        E((x, T(np.array([0, 1], np.int64)), None, 1, -100, 1.5), RuntimeError, "cross_entropy_loss",
          "label_smoothing", desc="label_smoothing > 1"),
        E((x, T(f32(rng, (2, 3)).__abs__()), None, 1, 1), RuntimeError, "cross_entropy_loss", "ignore_index",
          desc="ignore_index with probabilities"),
        E((x, T(f32(rng, (2, 4)).__abs__())), RuntimeError, "cross_entropy_loss",
          desc="probabilities of another shape")]


add(OpInfo("cross_entropy_loss", nn_op("cross_entropy_loss"), _ce_samples, dtypes=FLOAT, grad=True, tol=LOSS_TOL,
           errors=_ce_errors))


# ---- _cross_entropy_indices: F.cross_entropy's op for class indices (its fused backward,
# _cross_entropy_indices_backward, is what test_grad and gradcheck run); torch's reference is
# aten.cross_entropy_loss and the logsumexp of the logits along the class dim
def _ce_indices_call(m, *a, **k):
    if m.__name__ == "torch":
        x = a[0]
        wide = x.float() if x.dtype in (m.float16, m.bfloat16) else x          # the logsumexp is float32 then
        return m.ops.aten.cross_entropy_loss(*a, **k), m.logsumexp(wide, 1 if x.dim() >= 2 else 0)
    return importlib.import_module("ember._generated.functions")._cross_entropy_indices(*a, **k)


_ce_indices_call.__name__ = "_cross_entropy_indices"


def _ce_indices_samples(rng, dtype):
    S = [s for s in _ce_samples(rng, dtype) if s.fn is None and len(s.args) > 1
         and s.args[1].arr.dtype == np.int64]
    return S


add(OpInfo("_cross_entropy_indices", _ce_indices_call, _ce_indices_samples, dtypes=FLOAT, grad=True, tol=LOSS_TOL,
           errors=lambda rng: [e for e in _class_errors("_cross_entropy_indices", "cross_entropy")(rng)[1:]
                               if e.sample.fn is None]))
EXCLUDED["_cross_entropy_indices_backward"] = ("the backward of _cross_entropy_indices: test_grad and gradcheck of "
                                               "_cross_entropy_indices run it against torch and finite differences")
EXCLUDED["_fused_adam_"] = ("an optimizer update writing into its arguments: tests/test_optim.py and "
                            "tests/test_optim_fused.py check it against torch's Adam/AdamW and the per-tensor path")
EXCLUDED["_fused_adadelta_"] = ("an optimizer update writing into its arguments: tests/test_optim.py and "
                                "tests/test_optim_fused.py check it against torch's Adadelta and the per-tensor path")
EXCLUDED["_fused_sgd_"] = ("an optimizer update writing into its arguments: tests/test_optim.py and "
                           "tests/test_optim_fused.py check it against torch's SGD and the per-tensor path")
