"""Finite-difference checks of gradients (PyTorch's gradcheck and gradgradcheck).

The numerical Jacobian comes from central differences on the inputs' host memory; the
analytical one from autograd.grad, one output element at a time. Use float64 inputs.
"""
from __future__ import annotations

from ember.core.errors import AutogradError

from .engine import grad as autograd_grad


class GradcheckError(AutogradError):
    """The analytical and numerical Jacobians disagree."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _flat_outputs(func, inputs):
    from ember.frontend.tensor import Tensor

    return [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _numerical(func, inputs, diff_inputs, eps):
    import numpy as np

    outs = _flat_outputs(func, inputs)
    jac = [[np.zeros((x.numel(), o.numel())) for o in outs] for x in diff_inputs]
    for k, x in enumerate(diff_inputs):
        arr = x.detach()._host()
        for j in range(x.numel()):
            idx = np.unravel_index(j, arr.shape) if arr.shape else ()
            orig = arr[idx].copy() if arr.shape else arr[()].copy()
            arr[idx] = orig + eps
            plus = [o.detach()._host().astype(np.float64).ravel().copy() for o in _flat_outputs(func, inputs)]
            arr[idx] = orig - eps
            minus = [o.detach()._host().astype(np.float64).ravel().copy() for o in _flat_outputs(func, inputs)]
            arr[idx] = orig
            for m, (p, q) in enumerate(zip(plus, minus)):
                jac[k][m][j] = (p - q) / (2 * eps)
    return jac, outs


def _analytical(outs, diff_inputs):
    import numpy as np

    from ember.frontend.factories import tensor

    jac = [[np.zeros((x.numel(), o.numel())) for o in outs] for x in diff_inputs]
    for m, o in enumerate(outs):
        if not o.requires_grad:             # a non-differentiable output (e.g. native_layer_norm's rstd)
            continue
        for i in range(o.numel()):
            onehot = np.zeros(o.numel())
            onehot[i] = 1.0
            g = tensor(onehot.reshape(tuple(o.shape)), dtype=o.dtype, device=o.device)
            grads = autograd_grad((o,), tuple(diff_inputs), (g,), retain_graph=True, allow_unused=True)
            for k, gx in enumerate(grads):
                if gx is not None:
                    jac[k][m][:, i] = gx.detach()._host().astype(np.float64).ravel()
    return jac


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, **_ignored) -> bool:
    """Compare analytical and numerical Jacobians of `func` at `inputs`."""
    import numpy as np

    from ember.frontend.tensor import Tensor

    inputs = _as_tuple(inputs)
    diff_inputs = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    if not diff_inputs:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    num, _ = _numerical(func, inputs, diff_inputs, eps)
    outs = _flat_outputs(func, inputs)
    ana = _analytical(outs, diff_inputs)
    for k in range(len(diff_inputs)):
        for m in range(len(outs)):
            if not outs[m].requires_grad:   # as torch's gradcheck: only differentiable outputs are checked
                continue
            a, n = ana[k][m], num[k][m]
            if not np.allclose(a, n, atol=atol, rtol=rtol):
                if raise_exception:
                    raise GradcheckError(f"Jacobian mismatch for output {m} with respect to input {k},\n"
                                         f"numerical:{n}\nanalytical:{a}\n")
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True, **_ignored) -> bool:
    """gradcheck of the gradient of `func` (second-order derivatives)."""
    from ember._generated import functions as F
    from ember.frontend.tensor import Tensor

    inputs = _as_tuple(inputs)
    outs = _flat_outputs(func, inputs)
    if grad_outputs is None:
        gen_outs = [F.randn(tuple(o.shape), dtype=o.dtype, requires_grad=True) for o in outs]
    else:
        gen_outs = list(_as_tuple(grad_outputs))
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_grad(*args):
        ins, gos = args[:len(inputs)], args[len(inputs):]
        out = _flat_outputs(func, ins)
        grads = autograd_grad(tuple(out), tuple(ins[i] for i in diff_idx), tuple(gos), create_graph=True,
                              allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_grad, tuple(inputs) + tuple(gen_outs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
