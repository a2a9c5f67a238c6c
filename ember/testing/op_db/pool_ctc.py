"""Adaptive max pooling (1-d, 2-d, 3-d), fractional max pooling (2-d, 3-d) and the CTC loss.

Pooling samples cover windows that overlap or not, outputs larger than the input, unbatched and
transposed inputs, ties (the first maximum wins) and NaNs (the last NaN of a window wins); indices are
compared exactly. Fractional samples pass the same `random_samples` to both libraries, so the windows
must agree. CTC samples cover padded and concatenated targets, lengths as lists and as tensors, blanks
other than 0, empty targets, impossible alignments with zero_infinity, and every reduction; its
gradients are compared with torch's, which are not the loss's derivative (see ember/decompositions/ctc.py),
so finite differences check it only through log_softmax, where they are. torch lacks some meta kernels
here (the tensor-lengths CTC overload, two backwards): see the call wrappers.
"""
from __future__ import annotations

import numpy as np

from .convolution import aten_or_ember
from .database import E, add, f32
from .samples import FLOAT, GRAD_DTYPES, NP_DTYPE, OpInfo, Sample, T, is_float, make


def _a(rng, dtype):
    return lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=is_float(dtype))  # noqa: E731


def _ties(rng, shape, dtype):
    """Few distinct values, so windows hold ties (indices must pick the first maximum)."""
    return T(rng.integers(0, 3, shape).astype(NP_DTYPE[dtype]), grad=True)


def _nan(dtype, nd):
    x = np.array([[1.0, np.nan, 0.5, 2.0], [np.nan, 2.0, np.nan, 0.0], [0.0, 1.0, 3.0, -1.0]])
    return T(x.reshape((1, 1) + (1,) * (nd - 2) + x.shape[-2:] if nd > 1 else (1, 3, 4)).astype(NP_DTYPE[dtype]),
             grad=True)


def _on_meta(m, x) -> bool:
    return m.__name__ == "torch" and isinstance(x, m.Tensor) and x.device.type == "meta"


def without_meta_backward(call):
    """For ops whose backward torch has no meta kernel for: on meta, torch's result is computed without
    autograd and tied to its first input by a zero-valued term, so its gradient has that input's shape and
    dtype, which is all the meta check compares."""
    def wrapped(m, *a, **k):
        if not _on_meta(m, a[0]):
            return call(m, *a, **k)
        with m.no_grad():
            out = call(m, *a, **k)
        tie = m.sum(a[0]) * 0
        if isinstance(out, tuple):
            return tuple(o + tie if o.is_floating_point() else o for o in out)
        return out + tie
    wrapped.__name__ = call.__name__
    return wrapped


# ----------------------------------------------------------------------------- adaptive max pooling
def _adaptive_max2d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 4, 4)), [2, 2]), desc="divisible"),
            Sample((a((2, 1, 5, 7)), [3, 4]), desc="overlapping windows"),
            Sample((a((1, 2, 3, 3)), [1, 1]), desc="global"),
            Sample((a((1, 1, 2, 3)), [4, 5]), desc="larger output"),
            Sample((a((2, 5, 4)), [2, 3]), desc="unbatched"),
            Sample((a((1, 2, 5, 4), "t"), [2, 3]), desc="transposed input"),
            Sample((T(make(rng, (1, 2, 4, 3), dtype)), [0, 2]), desc="empty output (torch's backward refuses it)"),
            Sample((_ties(rng, (2, 2, 5, 6), dtype), [3, 4]), desc="ties", gradcheck=False),
            Sample((_nan(dtype, 2), [2, 3]), desc="nan wins (the last one of a window)", gradcheck=False)]


def _adaptive_max3d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 4, 4, 4)), [2, 2, 2]), desc="divisible"),
            Sample((a((1, 1, 3, 5, 4)), [2, 3, 3]), desc="overlapping windows"),
            Sample((a((2, 3, 2, 3)), [3, 1, 2]), desc="unbatched, larger output"),
            Sample((_ties(rng, (1, 2, 3, 4, 5), dtype), [2, 3, 2]), desc="ties", gradcheck=False),
            Sample((_nan(dtype, 3), [1, 2, 3]), desc="nan wins", gradcheck=False)]


def _adaptive_max1d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 2, 6)), [3]), desc="divisible"),
            Sample((a((1, 2, 7)), [3]), desc="overlapping windows"),
            Sample((a((3, 5)), [2]), desc="unbatched"),
            Sample((_ties(rng, (2, 9), dtype), [4]), desc="ties", gradcheck=False),
            Sample((_nan(dtype, 1), [3]), desc="nan wins", gradcheck=False)]


def _adaptive_max_errors(name, nd):
    def errors(rng):
        ok = (1, 2) + (4,) * nd
        return [E((T(f32(rng, (4,) * (nd + 3 if nd > 1 else 1))), [2] * nd), RuntimeError, name,
                  desc="wrong input rank"),
                E((T(f32(rng, (1, 2) + (0,) + (4,) * (nd - 1))), [2] * nd), RuntimeError, name,
                  desc="empty spatial dim"),
                E((T(f32(rng, ok)), [2] * (nd + 1)), RuntimeError, name, desc="output_size of another length"),
                E((T(f32(rng, ok)), [2] * (nd - 1) + [-1]), RuntimeError, name, desc="negative output size"),
                E((T(make(rng, ok, "int64")), [2] * nd), NotImplementedError, name, desc="int input")]
    return errors


add(OpInfo("adaptive_max_pool2d", aten_or_ember("adaptive_max_pool2d"), _adaptive_max2d_samples, dtypes=FLOAT,
           grad=True, errors=_adaptive_max_errors("adaptive_max_pool2d", 2)))
add(OpInfo("adaptive_max_pool3d", aten_or_ember("adaptive_max_pool3d"), _adaptive_max3d_samples, dtypes=FLOAT,
           grad=True, errors=_adaptive_max_errors("adaptive_max_pool3d", 3)))
add(OpInfo("adaptive_max_pool1d", aten_or_ember("adaptive_max_pool1d"), _adaptive_max1d_samples, dtypes=FLOAT,
           grad=True, errors=_adaptive_max_errors("adaptive_max_pool1d", 1)))


# --------------------------------------------------------------------------- fractional max pooling
def _u(rng, shape, dtype):
    return T(rng.random(shape).astype(NP_DTYPE[dtype]))


def _fractional2d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 3, 9, 8)), [2, 3], [4, 5], _u(rng, (2, 3, 2), dtype)), desc="batched"),
            Sample((a((3, 7, 7)), [3, 3], [3, 3], _u(rng, (1, 3, 2), dtype)), desc="unbatched"),
            Sample((a((1, 1, 5, 5)), [2, 2], [1, 4], _u(rng, (2, 1, 2), dtype)), desc="one output row, more samples"),
            Sample((a((1, 2, 6, 5), "t"), [2, 1], [5, 5], _u(rng, (1, 2, 2), dtype)), desc="transposed input"),
            Sample((_ties(rng, (1, 2, 7, 6), dtype), [3, 2], [4, 3], _u(rng, (1, 2, 2), dtype)), desc="ties",
                   gradcheck=False),
            Sample((_nan(dtype, 2), [2, 2], [2, 3], _u(rng, (1, 1, 2), dtype)), desc="nan wins", gradcheck=False)]


def _fractional3d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 2, 6, 5, 7)), [2, 2, 3], [3, 3, 4], _u(rng, (2, 2, 3), dtype)), desc="batched"),
            Sample((a((2, 5, 6, 4)), [1, 3, 2], [4, 3, 2], _u(rng, (1, 2, 3), dtype)), desc="unbatched"),
            Sample((a((1, 1, 3, 4, 3)), [2, 1, 2], [1, 3, 1], _u(rng, (1, 1, 3), dtype)), desc="small"),
            Sample((_ties(rng, (1, 1, 5, 5, 5), dtype), [2, 2, 2], [3, 2, 3], _u(rng, (1, 1, 3), dtype)),
                   desc="ties", gradcheck=False)]


def _fractional_errors(name, nd):
    def errors(rng):
        shape, k, out = (1, 2) + (6,) * nd, [2] * nd, [3] * nd
        u = (1, 2, nd)
        return [E((T(f32(rng, (6,) * nd)), k, out, T(f32(rng, u))), RuntimeError, name, desc="wrong input rank"),
                E((T(f32(rng, shape)), [2] * (nd + 1), out, T(f32(rng, u))), RuntimeError, name,
                  desc="kernel_size of another length"),
                E((T(f32(rng, shape)), [2] * (nd - 1) + [6], out, T(f32(rng, u))), RuntimeError, name, "pool",
                  desc="pool too large for the output"),
                E((T(f32(rng, shape)), k, out, T(f32(rng, (1, 3, nd)))), RuntimeError, name, "_random_samples",
                  desc="samples of another channel count"),
                E((T(f32(rng, shape)), k, out, T(f32(rng, (1, 2, nd + 1)))), RuntimeError, name, "_random_samples",
                  desc="samples of another last size"),
                E((T(f32(rng, shape)), k, out, T(make(rng, u, "float64"))), RuntimeError, name, "_random_samples",
                  desc="samples of another dtype"),
                E((T(make(rng, shape, "int64")), k, out, T(make(rng, u, "int64"))), NotImplementedError, name,
                  desc="int input")]
    return errors


add(OpInfo("fractional_max_pool2d", aten_or_ember("fractional_max_pool2d"), _fractional2d_samples, dtypes=FLOAT,
           grad=True, errors=_fractional_errors("fractional_max_pool2d", 2)))
add(OpInfo("fractional_max_pool3d", without_meta_backward(aten_or_ember("fractional_max_pool3d")), _fractional3d_samples, dtypes=FLOAT,
           grad=True, errors=_fractional_errors("fractional_max_pool3d", 3)))


# --------------------------------------------------------------------------------------- CTC loss
def ctc_call(overload: str):
    """The public `ctc_loss` of each library (torch.ctc_loss, ember.ctc_loss: the overload picked from the
    arguments, as a program meets it). torch has no meta kernel for the tensor-lengths overload: on meta, once
    torch's argument parser has taken the call (its error otherwise), its shapes come from the list overload
    (valid lengths: every input full length, every target empty but the first of concatenated ones; the
    result's shape does not depend on them)."""
    def call(m, *a, **k):
        if m.__name__ != "torch" or not _on_meta(m, a[0]):
            return m.ctc_loss(*a, **k)
        if overload == "Tensor":
            try:
                return m.ctc_loss(*a, **k)
            except NotImplementedError:        # parsed, then no meta kernel
                pass
            batch = a[0].shape[1] if a[0].dim() == 3 else 1
            targets = [a[1].numel()] + [0] * (batch - 1) if a[1].dim() == 1 else [0] * batch
            a = (a[0], a[1], [a[0].shape[0]] * batch, targets) + a[4:]
            return m.ops.aten.ctc_loss.IntList(*a, **k)
        return m.ctc_loss(*a, **k)
    call.__name__ = "ctc_loss"           # (not aten.*: the fuzzer calls it as it is)
    return without_meta_backward(call)


def _log_probs(rng, shape, dtype, layout="c"):
    x = rng.uniform(-2.0, 2.0, shape)
    x = x - np.log(np.exp(x).sum(-1, keepdims=True))
    return T(x.astype(NP_DTYPE[dtype]), layout, grad=True)


def _long(values):
    return T(np.asarray(values, dtype=np.int64))


def _ctc_cases(rng):
    """(log_probs shape, targets, input_lengths, target_lengths, blank, reduction, zero_infinity, desc)."""
    padded = rng.integers(1, 5, (3, 4))                 # labels are never the blank (torch's contract)
    flat = np.concatenate([padded[0, :4], padded[1, :2], padded[2, :3]])
    same = np.array([[2, 2, 3], [1, 1, 1]])
    not_two = np.where(padded == 2, 0, padded)
    return [((12, 3, 5), padded, [12, 9, 7], [4, 2, 3], 0, 1, False, "padded targets, mean"),
            ((12, 3, 5), flat, [12, 9, 7], [4, 2, 3], 0, 0, False, "concatenated targets, none"),
            ((10, 2, 5), same, [10, 8], [3, 3], 0, 2, False, "repeated labels, sum"),
            ((10, 3, 5), not_two, [10, 4, 0], [4, 0, 0], 2, 0, False, "blank 2, empty targets and inputs"),
            ((6, 2, 5), same, [6, 3], [3, 3], 0, 0, True, "an impossible alignment, zero_infinity"),
            ((8, 5), padded[0], [8], [4], 0, 0, False, "unbatched"),
            ((9, 2, 4), padded[:2, :3] % 3 + 1, [9, 9], [3, 3], 0, 1, False, "transposed log_probs")]


def _ctc_samples(tensors: bool):
    def samples(rng, dtype):
        out = []
        for shape, targets, il, tl, blank, reduction, zero_inf, desc in _ctc_cases(rng):
            lp = _log_probs(rng, shape, dtype, "t" if desc.startswith("transposed") else "c")
            lengths = (_long(il[0] if len(shape) == 2 else il), _long(tl[0] if len(shape) == 2 else tl)) \
                if tensors else (il, tl)
            out.append(Sample((lp, _long(targets), *lengths, blank, reduction, zero_inf), desc=desc, gradcheck=False))
        # through log_softmax torch's gradient is the loss's derivative: finite differences can check it
        lengths = (_long([4, 3]), _long([2, 1])) if tensors else ([4, 3], [2, 1])
        out.append(Sample((T(make(rng, (4, 2, 3), dtype), grad=True), _long([[1, 2], [2, 0]]), *lengths, 0, 0, False),
                          desc="of log_softmax (gradcheck)", fn=_of_log_softmax(tensors)))
        return out
    return samples


def _of_log_softmax(tensors: bool):
    call = ctc_call("Tensor" if tensors else "IntList")

    def fn(m, x, *a):
        return call(m, m.log_softmax(x, 2), *a)
    return fn


def _ctc_errors(overload: str):
    tensors = overload == "Tensor"

    def errors(rng):
        def lens(*v):
            return _long(list(v)) if tensors else list(v)
        lp = T(f32(rng, (6, 2, 5)))
        tg = _long([[1, 2, 3], [1, 2, 3]])
        name = "ctc_loss"
        by_value = [E((lp, tg, lens(7, 5), lens(3, 2)), RuntimeError, name, "input_lengths", desc="input too long"),
                    E((lp, tg, lens(6, 5), lens(4, 2)), RuntimeError, name, "targets",
                      desc="target longer than padded"),
                    E((lp, tg, lens(6, 5), lens(-1, 2)), RuntimeError, name, "target_lengths", desc="negative length"),
                    E((lp, _long([1, 2, 3, 4]), lens(6, 5), lens(3, 2)), RuntimeError, name, "targets",
                      desc="concatenated targets of another total")]
        for err in by_value:                 # tensor lengths are data: checked where values are held
            err.sample.meta = not tensors
        return by_value + [
            E((lp, tg, lens(6), lens(3, 2)), RuntimeError, name, "input_lengths", desc="lengths of another batch"),
            E((lp, tg, lens(6, 5), lens(3, 2), 5), RuntimeError, name, "blank", desc="blank out of range"),
            E((T(f32(rng, (6,))), _long([1]), lens(6), lens(1)), RuntimeError, name, "log_probs",
              desc="1-d log_probs"),
            E((T(make(rng, (6, 2, 5), "float16")), tg, lens(6, 5), lens(3, 2)), NotImplementedError, name,
              desc="float16 log_probs")]
    return errors


for _overload in ("IntList", "Tensor"):
    add(OpInfo(f"ctc_loss.{_overload}", ctc_call(_overload), _ctc_samples(_overload == "Tensor"), dtypes=GRAD_DTYPES,
               grad=True, errors=_ctc_errors(_overload)))
