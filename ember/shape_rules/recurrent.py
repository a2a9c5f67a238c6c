"""Shape rules of the recurrent layer op (_rnn_layer: one layer and direction over time) and its backward.

Shapes, as torch's cells: input (T, B, I); hx (B, P) with P the projection size for a projected LSTM,
else the hidden size H; cx (B, H) for LSTM, None otherwise; w_ih (G*H, I) and w_hh (G*H, P) with G
gates (1 for RNN_TANH and RNN_RELU, 4 for LSTM, 3 for GRU); b_ih and b_hh (G*H,), both or neither;
w_hr (P, H), LSTM only. The results: output (T, B, P), h_n (B, P), c_n (B, H) for LSTM and (B, 0)
otherwise, and the workspace (T, B, W) of the values each step's backward reads (WORKSPACE_WIDTH).
"""
from __future__ import annotations

from ember.core.errors import ArgumentValueError, DTypeError, ShapeError

from . import shape_rule
from .common import check_tensor, type_name

GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
# per step, in units of H: LSTM its four activated gates and the new cell state; GRU its three
# activated gates and the hidden state's share of the candidate (W_hn h + b_hn); RNN the new state
WORKSPACE_WIDTH = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 5, "GRU": 4}


def layer_geometry(op, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, mode) -> tuple[int, int, int, int, int]:
    """(T, B, I, H, P) after checking every argument of _rnn_layer."""
    if mode not in GATES:
        raise ArgumentValueError(f"{op.name}(): mode must be one of {', '.join(GATES)}, got {mode!r}")
    for t, arg in ((input, "input"), (hx, "hx"), (w_ih, "w_ih"), (w_hh, "w_hh")):
        check_tensor(op, t, arg)
    dtype = input._dtype
    if not dtype.is_floating_point:
        raise DTypeError(f"{op.name}(): expected a floating-point input, got {type_name(dtype)}")
    if input._data.ndim != 3:
        raise ShapeError(f"{op.name}(): input must be 3-d (time, batch, features), got {input._data.ndim}-d "
                         f"of size {list(input._data.shape)}")
    T, B, I = input._data.shape
    if T == 0:
        raise ShapeError(f"{op.name}(): Expected sequence length to be larger than 0 in RNN")
    gates = GATES[mode]
    if w_ih._data.ndim != 2 or w_ih._data.shape[0] % gates or w_ih._data.shape[1] != I:
        raise ShapeError(f"{op.name}(): w_ih must be ({gates} * hidden_size, {I}) for mode {mode} and input of "
                         f"size {list(input._data.shape)}, got {list(w_ih._data.shape)}")
    H = w_ih._data.shape[0] // gates
    if mode != "LSTM" and w_hr is not None:
        raise ArgumentValueError(f"{op.name}(): w_hr (a projection) is for mode LSTM only, got it for {mode}")
    if w_hr is not None:
        check_tensor(op, w_hr, "w_hr")
        if w_hr._data.ndim != 2 or w_hr._data.shape[1] != H:
            raise ShapeError(f"{op.name}(): w_hr must be (proj_size, {H}), got {list(w_hr._data.shape)}")
    P = w_hr._data.shape[0] if w_hr is not None else H
    expected = {"w_hh": (w_hh, (gates * H, P)), "hx": (hx, (B, P))}
    if mode == "LSTM":
        if cx is None:
            raise ArgumentValueError(f"{op.name}(): mode LSTM needs the cell state cx, got None")
        expected["cx"] = (check_tensor(op, cx, "cx"), (B, H))
    elif cx is not None:
        raise ArgumentValueError(f"{op.name}(): cx (a cell state) is for mode LSTM only, got it for {mode}")
    if (b_ih is None) != (b_hh is None):
        raise ArgumentValueError(f"{op.name}(): b_ih and b_hh are given together or not at all")
    if b_ih is not None:
        expected["b_ih"] = (check_tensor(op, b_ih, "b_ih"), (gates * H,))
        expected["b_hh"] = (check_tensor(op, b_hh, "b_hh"), (gates * H,))
    if w_hr is not None:
        expected["w_hr"] = (w_hr, (P, H))
    for arg, (t, shape) in expected.items():
        if t._data.shape != shape:
            raise ShapeError(f"{op.name}(): Expected {arg} of size {list(shape)}, got {list(t._data.shape)}")
    for t, arg in [(w_ih, "w_ih")] + [(t, arg) for arg, (t, _) in expected.items()]:
        if t._dtype is not dtype:
            raise DTypeError(f"{op.name}(): expected {arg} of the input's dtype {type_name(dtype)}, got "
                             f"{type_name(t._dtype)}")
    return T, B, I, H, P


@shape_rule("rnn_layer")
def rnn_layer(op, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, mode, reverse=False):
    T, B, _, H, P = layer_geometry(op, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, mode)
    dtype = input._dtype
    return (((T, B, P), dtype), ((B, P), dtype), ((B, H if mode == "LSTM" else 0), dtype),
            ((T, B, WORKSPACE_WIDTH[mode] * H), dtype))


@shape_rule("rnn_layer_backward")
def rnn_layer_backward(op, grad_output, grad_hy, grad_cy, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, output,
                       workspace, mode, reverse, output_mask):
    if not (isinstance(output_mask, (list, tuple)) and len(output_mask) == 8
            and all(m.__class__ is bool for m in output_mask)):
        raise ArgumentValueError(f"{op.name}(): argument 'output_mask' must be a list of 8 bools, got {output_mask!r}")
    specs = rnn_layer(op, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, mode, reverse)
    for t, arg, spec in ((grad_output, "grad_output", specs[0]), (grad_hy, "grad_hy", specs[1]),
                         (grad_cy, "grad_cy", specs[2]), (output, "output", specs[0]),
                         (workspace, "workspace", specs[3])):
        if t is None and arg.startswith("grad"):
            continue
        check_tensor(op, t, arg)
        if t._data.shape != spec[0]:
            raise ShapeError(f"{op.name}(): Expected {arg} of size {list(spec[0])}, got {list(t._data.shape)}")
    inputs = (input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)
    return tuple((t._data.shape, t._dtype) if need and t is not None else None
                 for need, t in zip(output_mask, inputs))
