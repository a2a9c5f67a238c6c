"""Shape rules of the fused ops: the optimizer updates (_fused_adam_, _fused_adadelta_, _fused_sgd_), whose tensor
lists line up one entry per parameter, each state tensor like its parameter (no spec: they write
into their arguments and return nothing); the cross-entropy backward (a gradient like the logits); the
fused attention and its backward."""
from __future__ import annotations

from ember.core.errors import ArgumentListError, ArgumentTypeError, DTypeError, ShapeError
from ember.core.spec import TensorSpec
from ember.core.type_promotion import computation_dtype

from . import shape_rule
from .common import check_tensor, type_name
from .nn_core import _mask, _masked


def _tensor_at(op, value, name: str, i: int):
    """check_tensor for entry i of a tensor list, its argument name formatted only for an error."""
    if not isinstance(value, TensorSpec):
        check_tensor(op, value, f"{name}[{i}]")
    return value


def _check_lists(op, params, named_lists, steps=None) -> None:
    n = len(params)
    for name, lst in named_lists:
        if len(lst) != n:
            raise ArgumentListError(f"{op.name}(): argument '{name}' must have one tensor per parameter "
                                    f"({n}), got {len(lst)}")
    for i, p in enumerate(params):
        if not isinstance(p, TensorSpec):
            _tensor_at(op, p, "self", i)
        if not p._dtype.is_floating_point:
            raise DTypeError(f"{op.name}(): expected floating-point parameters, got {type_name(p._dtype)} "
                             f"(argument 'self[{i}]')")
        shape = p._data.shape
        for name, lst in named_lists:
            t = lst[i]
            if not isinstance(t, TensorSpec):
                _tensor_at(op, t, name, i)
            if t._data.shape != shape or t._dtype is not p._dtype:
                raise ShapeError(f"{op.name}(): {name}[{i}] must have the shape and dtype of self[{i}] "
                                 f"({list(shape)}, {type_name(p._dtype)}), got {list(t._data.shape)}, "
                                 f"{type_name(t._dtype)}")
    if steps is not None:
        if len(steps) != n:
            raise ArgumentListError(f"{op.name}(): argument 'state_steps' must have one tensor per parameter "
                                    f"({n}), got {len(steps)}")
        for i, s in enumerate(steps):
            if _tensor_at(op, s, "state_steps", i)._data.ndim != 0:
                raise ShapeError(f"{op.name}(): state_steps[{i}] must be a 0-dim tensor, got shape "
                                 f"{list(s._data.shape)}")


@shape_rule("fused_adam")
def fused_adam(op, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2,
               weight_decay, eps, amsgrad, maximize, decoupled_weight_decay=False):
    lists = [("grads", grads), ("exp_avgs", exp_avgs), ("exp_avg_sqs", exp_avg_sqs)]
    if amsgrad:
        lists.append(("max_exp_avg_sqs", max_exp_avg_sqs))
    _check_lists(op, params, lists, state_steps)
    return ()


@shape_rule("fused_adadelta")
def fused_adadelta(op, params, grads, square_avgs, acc_deltas, state_steps, lr, rho, eps, weight_decay, maximize):
    _check_lists(op, params, [("grads", grads), ("square_avgs", square_avgs), ("acc_deltas", acc_deltas)],
                 state_steps)
    return ()


@shape_rule("fused_sgd")
def fused_sgd(op, params, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening, nesterov, maximize,
              is_first_step):
    lists = [("grads", grads)]
    if momentum_buffer_list:
        lists.append(("momentum_buffer_list", momentum_buffer_list))
    _check_lists(op, params, lists)
    return ()


@shape_rule("cross_entropy_indices_backward")
def cross_entropy_indices_backward(op, grad_output, self, logsumexp, target, weight, reduction, ignore_index,
                                   label_smoothing):
    for t, arg in ((grad_output, "grad_output"), (self, "self"), (logsumexp, "logsumexp"), (target, "target")):
        if not isinstance(t, TensorSpec):
            check_tensor(op, t, arg)                        # the error names the argument
    if not self._dtype.is_floating_point or grad_output._dtype is not self._dtype:
        raise DTypeError(f"{op.name}(): expected floating-point self and grad_output of its dtype, got "
                         f"{type_name(self._dtype)} and {type_name(grad_output._dtype)}")
    shape = tuple(self._data.shape)
    rows = shape[:1] + shape[2:] if len(shape) >= 2 else ()
    if tuple(logsumexp._data.shape) != rows:
        raise ShapeError(f"{op.name}(): expected logsumexp of size {list(rows)} (self of size {list(shape)} "
                         f"without its class dim), but got {list(logsumexp._data.shape)}")
    return (shape, self._dtype)


@shape_rule("sdpa_fused")
def sdpa_fused(op, query, key, value, is_causal=False, scale=1.0):
    """(output, logsumexp): (*batch, L, Ev) and (*batch, L), for q, k, v of one floating dtype and one batch
    shape (scaled_dot_product_attention calls it only then); the logsumexp is float32 for float16/bfloat16."""
    for t, arg in ((query, "query"), (key, "key"), (value, "value")):
        check_tensor(op, t, arg)
        if t._data.ndim < 2:
            raise ShapeError(f"{op.name}(): {arg} must have at least 2 dimensions, got {t._data.ndim}")
    q, k, v = query._data.shape, key._data.shape, value._data.shape
    dtype = query._dtype
    if not dtype.is_floating_point or key._dtype is not dtype or value._dtype is not dtype:
        raise DTypeError(f"{op.name}(): expected query, key and value of one floating dtype, got "
                         f"{query._dtype}, {key._dtype} and {value._dtype}")
    if not (q[:-2] == k[:-2] == v[:-2]) or q[-1] != k[-1] or k[-2] != v[-2]:
        raise ShapeError(f"{op.name}(): shapes do not match: query {list(q)}, key {list(k)}, value {list(v)}")
    return ((q[:-1] + (v[-1],), dtype), (q[:-1], computation_dtype(dtype)))


@shape_rule("sdpa_fused_backward")
def sdpa_fused_backward(op, grad_out, grad_logsumexp, query, key, value, logsumexp, is_causal, scale, output_mask):
    mask = _mask(op, output_mask)
    if grad_out is None and grad_logsumexp is None:
        raise ArgumentTypeError(f"{op.name}(): expected a Tensor for grad_out or grad_logsumexp (or both), got None "
                                "for both")
    out, lse = sdpa_fused(op, query, key, value)
    for t, arg, spec in ((grad_out, "grad_out", out), (grad_logsumexp, "grad_logsumexp", lse),
                         (logsumexp, "logsumexp", lse)):
        if t is None and arg != "logsumexp":
            continue
        check_tensor(op, t, arg)
        if t._data.shape != spec[0]:
            raise ShapeError(f"{op.name}(): Expected {arg} of size {list(spec[0])}, but got {list(t._data.shape)}")
    return _masked(mask, tuple((t._data.shape, query._dtype) for t in (query, key, value)))
