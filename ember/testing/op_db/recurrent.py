"""OpInfo of the recurrent layer op (_rnn_layer: one layer and direction over time).

torch runs it as a one-layer torch.lstm / torch.gru / torch.rnn_tanh / torch.rnn_relu call (the reverse
direction on the input flipped in time, its output flipped back); both return (output, h_n), and c_n
for LSTM. The workspace (the values ember's backward reads) is ember's own and is not compared; the
backward op (_rnn_layer_backward) is what test_grad, gradcheck and gradgradcheck run.
"""
from __future__ import annotations

import importlib

from .samples import OpInfo, Sample, T, is_float, make
from .database import EXCLUDED, E, add, f32

_TORCH_FN = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}


def _rnn_layer_call(m, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, mode, reverse=False):
    if m.__name__ == "torch":
        x = input.flip(0) if reverse else input
        weights = [w for w in (w_ih, w_hh, b_ih, b_hh, w_hr) if w is not None]
        state = (hx.unsqueeze(0), cx.unsqueeze(0)) if mode == "LSTM" else hx.unsqueeze(0)
        out = getattr(m, _TORCH_FN[mode])(x, state, weights, b_ih is not None, 1, 0.0, False, False, False)
        output = out[0].flip(0) if reverse else out[0]
        return (output,) + tuple(s.squeeze(0) for s in out[1:])
    out = importlib.import_module("ember._generated.functions")._rnn_layer(input, hx, cx, w_ih, w_hh, b_ih, b_hh,
                                                                           w_hr, mode, reverse)
    return out[:3] if mode == "LSTM" else out[:2]


_rnn_layer_call.__name__ = "_rnn_layer"


def _samples(rng, dtype):
    g = is_float(dtype)
    a = lambda *shape: T(make(rng, shape, dtype, low=-1.0, high=1.0), grad=g)    # noqa: E731

    def layer(mode, T_, B, I, H, P=None, bias=True, reverse=False, desc=""):
        gates = {"LSTM": 4, "GRU": 3}.get(mode, 1)
        P = P or H
        return Sample((a(T_, B, I), a(B, P), a(B, H) if mode == "LSTM" else None, a(gates * H, I),
                       a(gates * H, P), a(gates * H) if bias else None, a(gates * H) if bias else None,
                       a(P, H) if P != H else None, mode, reverse), desc=desc)
    return [layer("LSTM", 4, 3, 5, 4, desc="LSTM"),
            layer("LSTM", 3, 2, 3, 4, P=2, reverse=True, desc="LSTM projected, reverse"),
            layer("GRU", 4, 3, 5, 4, desc="GRU"),
            layer("GRU", 3, 2, 3, 2, bias=False, reverse=True, desc="GRU without biases, reverse"),
            layer("RNN_TANH", 4, 3, 5, 4, desc="tanh RNN"),
            layer("RNN_RELU", 3, 2, 3, 4, reverse=True, desc="relu RNN, reverse"),
            layer("LSTM", 2, 1, 2, 1, bias=False, desc="small LSTM (finite differences)"),
            layer("GRU", 2, 1, 1, 2, bias=False, reverse=True, desc="small GRU (finite differences)"),
            layer("RNN_TANH", 2, 1, 2, 2, desc="small RNN (finite differences)")]


def _errors(rng):
    x, h = T(f32(rng, (3, 2, 4))), T(f32(rng, (2, 5)))
    w = lambda *s: T(f32(rng, s))      # noqa: E731
    # (torch's functional layers check neither weight nor state shapes, which its modules check: those errors
    # are compared in tests/test_rnn.py through the modules)
    return [E((x, h, None, w(15, 4), T(make(rng, (15, 5), "float64")), None, None, None, "GRU"), RuntimeError,
              "_rnn_layer", "w_hh", desc="weights of another dtype")]


add(OpInfo("_rnn_layer", _rnn_layer_call, _samples, dtypes=("float32", "float64"), grad=True, second_order=True,
           errors=_errors))
EXCLUDED["_rnn_layer_backward"] = (
    "the backward of _rnn_layer: test_grad, gradcheck and gradgradcheck of that op run it against torch's layers "
    "and finite differences")
