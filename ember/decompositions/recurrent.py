"""The recurrent layer op in ember ops: _rnn_layer's explicit kernel and _rnn_layer_backward's decomposition.

`layer` runs one layer and direction step by step with the cells' formulas (torch's: an LSTM's gates in
the order input, forget, cell, output; a GRU's reset, update, new, its new state (h - n) * z + n). The
input's projection through w_ih is one product over all steps, as torch precomputes it. A backend with
a native kernel (the cpu's, array_kernels/recurrent.py: the same loop over arrays, no dispatch per step)
runs that instead; any other runs this one, below autograd, so one op is still one node.

The backward recomputes the layer with `layer` under autograd and differentiates it (a nested
`ember.autograd.grad`): it needs no formula of its own, and under a double backward (`create_graph`)
the gradients it returns are differentiable in the inputs, the weights and the incoming gradients,
since the recomputation is recorded. The workspace (the step values the forward kept) serves native
backward kernels only; this path does not read it.
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.frontend.autograd.grad_mode import enable_grad, is_grad_enabled

from . import decomposition, explicit_kernel


def _step(mode: str, xw, h, c, w_hh, b_hh, w_hr):
    """(new h, new c, the step's workspace row) from the input's projection `xw` (B, G*H) and the state."""
    hw = F.matmul(h, F.t(w_hh))
    if b_hh is not None:
        hw = F.add(hw, b_hh)
    if mode == "LSTM":
        i, f, g, o = F.chunk(F.add(hw, xw), 4, 1)
        i, f, g, o = F.sigmoid(i), F.sigmoid(f), F.tanh(g), F.sigmoid(o)
        c = F.add(F.mul(f, c), F.mul(i, g))
        h = F.mul(o, F.tanh(c))
        work = F.cat([i, f, g, o, c], 1)
        return (h if w_hr is None else F.matmul(h, F.t(w_hr))), c, work
    if mode == "GRU":
        ri, zi, ni = F.chunk(xw, 3, 1)
        rh, zh, nh = F.chunk(hw, 3, 1)
        r, z = F.sigmoid(F.add(ri, rh)), F.sigmoid(F.add(zi, zh))
        n = F.tanh(F.add(ni, F.mul(r, nh)))
        h = F.add(F.mul(F.sub(h, n), z), n)
        return h, c, F.cat([r, z, n, nh], 1)
    pre = F.add(xw, hw)
    h = F.tanh(pre) if mode == "RNN_TANH" else F.relu(pre)
    return h, c, h


@explicit_kernel("_rnn_layer")
def layer(input, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, mode="LSTM", reverse=False):
    T, B = input.shape[0], input.shape[1]
    xw = F.matmul(input, F.t(w_ih))
    if b_ih is not None:
        xw = F.add(xw, b_ih)
    h, c = hx, cx
    outputs, works = [None] * T, [None] * T
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        h, c, works[t] = _step(mode, F.select(xw, 0, t), h, c, w_hh, b_hh, w_hr)
        outputs[t] = h
    c_n = c if mode == "LSTM" else F.zeros((B, 0), dtype=input.dtype, device=input.device)
    return F.stack(outputs), h, c_n, F.stack(works)


@decomposition("_rnn_layer_backward")
def layer_backward(grad_output, grad_hy, grad_cy, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, output, workspace,
                   mode, reverse, output_mask):
    from ember.frontend.autograd.engine import grad

    create = is_grad_enabled()                  # a double backward: what this returns is differentiated too
    given = [input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr]
    with enable_grad():
        leaves = [t if t is None or (create and t.requires_grad) else t.detach().requires_grad_(bool(need))
                  for t, need in zip(given, output_mask)]
        results = layer(*leaves, mode=mode, reverse=reverse)[:3]
        pairs = [(r, g) for r, g in zip(results, (grad_output, grad_hy, grad_cy))
                 if g is not None and r.requires_grad]
        wanted = [i for i, (t, need) in enumerate(zip(leaves, output_mask)) if need and t is not None]
        found = grad([r for r, _ in pairs], [leaves[i] for i in wanted], [g for _, g in pairs],
                     create_graph=create, allow_unused=True) if pairs and wanted else [None] * len(wanted)
    out = [None] * 8
    for i, g in zip(wanted, found):
        out[i] = g if g is not None else F.zeros_like(given[i])
    return tuple(out)
