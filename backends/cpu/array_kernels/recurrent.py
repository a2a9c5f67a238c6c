"""The recurrent layer op and its backward against the array-module API: the time loop over arrays.

Forward: the input's projection through w_ih for every step is one product; each step then costs one
product with w_hh (and w_hr for a projected LSTM) and a few array calls, written into preallocated
outputs. The workspace keeps what the backward reads per step (ember/shape_rules/recurrent.py):
LSTM its activated gates i, f, g, o and the new cell state; GRU r, z, n and W_hn h + b_hn; RNN the new
state. Backward (backpropagation through time): per step, in reverse processing order, the gradient
of the gates' pre-activations and of the previous state; the weights' and the input's gradients are
then three products over all steps at once. float16/bfloat16 compute in float32 and round once.
"""
from __future__ import annotations

from .context import ArrayModule

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}     # ember/shape_rules/recurrent.py's GATES


def _sigmoid(xp, x):
    """1 / (1 + exp(-x)) in place (x is a fresh array)."""
    xp.negative(x, out=x)
    xp.exp(x, out=x)
    x += 1
    return xp.reciprocal(x, out=x)


def _order(T: int, reverse: bool) -> range:
    return range(T - 1, -1, -1) if reverse else range(T)


def rnn_layer(am: ArrayModule, specs, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, mode, reverse=False):
    xp = am.xp
    dt = am.native_of[specs[0][1]]
    acc = am.compute_of[dt]
    x, hx, w_ih, w_hh = (a.astype(acc, copy=False) for a in (x, hx, w_ih, w_hh))
    b_hh = None if b_hh is None else b_hh.astype(acc, copy=False)
    w_hr = None if w_hr is None else w_hr.astype(acc, copy=False)
    T, B, I = x.shape
    xw = xp.matmul(x.reshape(T * B, I), w_ih.T).reshape(T, B, -1)
    if b_ih is not None:
        xw += b_ih.astype(acc, copy=False)
    H = w_ih.shape[0] // _GATES[mode]
    out = xp.empty(specs[0][0], acc)
    work = xp.empty(specs[3][0], acc)
    h = hx
    c = None if cx is None else cx.astype(acc, copy=False)
    w_hh_t = w_hh.T
    for t in _order(T, reverse):
        hw = xp.matmul(h, w_hh_t)
        if b_hh is not None:
            hw += b_hh
        wk = work[t]
        if mode == "LSTM":
            gates = hw
            gates += xw[t]
            _sigmoid(xp, gates[:, :2 * H])
            xp.tanh(gates[:, 2 * H:3 * H], out=gates[:, 2 * H:3 * H])
            _sigmoid(xp, gates[:, 3 * H:])
            i, f, g, o = gates[:, :H], gates[:, H:2 * H], gates[:, 2 * H:3 * H], gates[:, 3 * H:]
            wk[:, :4 * H] = gates
            c_new = wk[:, 4 * H:]
            xp.multiply(f, c, out=c_new)
            c_new += i * g
            c = c_new
            h = o * xp.tanh(c)
            if w_hr is not None:
                h = xp.matmul(h, w_hr.T)
        elif mode == "GRU":
            rz = xw[t, :, :2 * H] + hw[:, :2 * H]
            _sigmoid(xp, rz)
            r, z = rz[:, :H], rz[:, H:]
            nh = hw[:, 2 * H:]
            n = r * nh
            n += xw[t, :, 2 * H:]
            xp.tanh(n, out=n)
            wk[:, :2 * H] = rz
            wk[:, 2 * H:3 * H] = n
            wk[:, 3 * H:] = nh
            h = h - n
            h *= z
            h += n
        else:
            hw += xw[t]
            h = xp.tanh(hw, out=hw) if mode == "RNN_TANH" else xp.maximum(hw, acc.type(0), out=hw)
            wk[...] = h
        out[t] = h
    c_n = c.copy() if mode == "LSTM" else xp.empty((B, 0), acc)
    return tuple(xp.ascontiguousarray(a, dtype=am.native_of[s[1]]) for a, s in zip((out, out[0 if reverse else -1],
                                                                                    c_n, work), specs))


def rnn_layer_backward(am: ArrayModule, specs, g_out, g_hy, g_cy, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr,
                       output, work, mode, reverse, output_mask):
    xp = am.xp
    acc = am.compute_of[x.dtype]
    cast = lambda a: None if a is None else a.astype(acc, copy=False)    # noqa: E731
    g_out, g_hy, g_cy, x, hx, cx, w_ih, w_hh, w_hr, output, work = map(
        cast, (g_out, g_hy, g_cy, x, hx, cx, w_ih, w_hh, w_hr, output, work))
    T, B, I = x.shape
    G = _GATES[mode]
    H = w_ih.shape[0] // G
    order = list(_order(T, reverse))
    # the state each step started from: the previous processed step's, or hx for the first
    h_prev = xp.empty(output.shape, acc)
    h_prev[order[0]] = hx
    for a, b in zip(order[1:], order[:-1]):
        h_prev[a] = output[b]
    d_xw = xp.empty((T, B, G * H), acc)             # the gradient of each step's input projection
    d_hw = d_xw if mode != "GRU" else xp.empty((T, B, G * H), acc)   # ... and of its state projection
    dh = xp.zeros(hx.shape, acc) if g_hy is None else g_hy.copy()
    dc = None
    d_w_hr = None
    if mode == "LSTM":
        dc = xp.zeros((B, H), acc) if g_cy is None else g_cy.copy()
        d_w_hr = xp.zeros(w_hr.shape, acc) if w_hr is not None else None
    for k, t in enumerate(reversed(order)):
        if g_out is not None:
            dh += g_out[t]
        wk = work[t]
        if mode == "LSTM":
            i, f, g, o, c = (wk[:, j * H:(j + 1) * H] for j in range(5))
            tc = xp.tanh(c)
            if w_hr is not None:
                d_w_hr += xp.matmul(dh.T, o * tc)
                dh = xp.matmul(dh, w_hr)
            c_prev = cx if k == T - 1 else work[order[T - 2 - k]][:, 4 * H:]
            dc += dh * o * (1 - tc * tc)
            dg = d_xw[t]
            xp.multiply(dc * g, i * (1 - i), out=dg[:, :H])
            xp.multiply(dc * c_prev, f * (1 - f), out=dg[:, H:2 * H])
            xp.multiply(dc * i, 1 - g * g, out=dg[:, 2 * H:3 * H])
            xp.multiply(dh * tc, o * (1 - o), out=dg[:, 3 * H:])
            dc *= f
            dh = xp.matmul(dg, w_hh)
        elif mode == "GRU":
            r, z, n, nh = (wk[:, j * H:(j + 1) * H] for j in range(4))
            h0 = h_prev[t]
            dn = dh * (1 - z) * (1 - n * n)
            dx, dw = d_xw[t], d_hw[t]
            xp.multiply(dn * nh, r * (1 - r), out=dx[:, :H])
            xp.multiply(dh * (h0 - n), z * (1 - z), out=dx[:, H:2 * H])
            dx[:, 2 * H:] = dn
            dw[:, :2 * H] = dx[:, :2 * H]
            xp.multiply(dn, r, out=dw[:, 2 * H:])
            dh = dh * z + xp.matmul(dw, w_hh)
        else:
            h = wk
            d = d_xw[t]
            if mode == "RNN_TANH":
                xp.multiply(dh, 1 - h * h, out=d)
            else:
                xp.multiply(dh, h > 0, out=d)
            dh = xp.matmul(d, w_hh)
    flat_x, flat_h = x.reshape(T * B, I), h_prev.reshape(T * B, -1)
    flat_dx, flat_dh = d_xw.reshape(T * B, -1), d_hw.reshape(T * B, -1)
    grads = [xp.matmul(flat_dx, w_ih).reshape(T, B, I) if output_mask[0] else None,
             dh if output_mask[1] else None,
             dc if output_mask[2] and mode == "LSTM" else None,
             xp.matmul(flat_dx.T, flat_x) if output_mask[3] else None,
             xp.matmul(flat_dh.T, flat_h) if output_mask[4] else None,
             flat_dx.sum(axis=0) if output_mask[5] and b_ih is not None else None,
             flat_dh.sum(axis=0) if output_mask[6] and b_hh is not None else None,
             d_w_hr if output_mask[7] else None]
    return tuple(None if s is None or a is None else xp.ascontiguousarray(a, dtype=am.native_of[s[1]])
                 for a, s in zip(grads, specs))


KERNELS = {"_rnn_layer": rnn_layer, "_rnn_layer_backward": rnn_layer_backward}
