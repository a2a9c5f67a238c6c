"""clip_grad_norm_ and clip_grad_value_ (torch.nn.utils.clip_grad)."""
from __future__ import annotations

import math
from typing import Iterable

import ember
from ember.frontend.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _as_list(tensors) -> list:
    if isinstance(tensors, Tensor):
        return [tensors]
    return list(tensors)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The norm of the norms of `tensors` (as if concatenated into one vector)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return ember.tensor(0.0)
    with ember.no_grad():
        norms = [ember.linalg_vector_norm(t, norm_type) if hasattr(ember, "linalg_vector_norm")
                 else ember.norm(t, p=norm_type) for t in tensors]
        device = tensors[0].device
        stacked = ember.stack([n.to(device) for n in norms])
        total_norm = ember.norm(stacked, p=norm_type)
    if error_if_nonfinite and not math.isfinite(total_norm.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total_norm


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale the gradients by min(1, max_norm / (total_norm + 1e-6))."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    with ember.no_grad():
        clip_coef = float(max_norm) / (total_norm + 1e-6)
        clip_coef_clamped = ember.clamp(clip_coef, max=1.0)
        for g in grads:
            g.mul_(clip_coef_clamped.to(g.device, g.dtype))


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Rescale the gradients in place so that their total `norm_type`-norm is at most `max_norm`.

    Returns the total norm before clipping (a 0-d tensor). Shards of fully_shard parameters count
    with the rest of their group's (so FSDP training clips as one process would). `foreach` is accepted and ignored
    (there is one implementation). A non-finite total norm raises with `error_if_nonfinite`,
    as torch's; otherwise the gradients are scaled by it (becoming nan), as torch's.
    """
    params = _as_list(parameters)
    if any(p.__dict__.get("_fsdp_shard_group") is not None for p in params):
        total_norm = _sharded_total_norm(params, float(norm_type), error_if_nonfinite, foreach)
    else:
        total_norm = get_total_norm([p.grad for p in params if p.grad is not None], norm_type, error_if_nonfinite,
                                    foreach)
    clip_grads_with_norm_(params, max_norm, total_norm, foreach)
    return total_norm


def _sharded_total_norm(params: list, norm_type: float, error_if_nonfinite: bool, foreach) -> Tensor:
    """The total norm when some parameters are fully_shard shards (marked with their process group):
    each rank holds a disjoint part of those, so their norms combine across the group (a sum of
    p-th powers, or a max); the other parameters count once, here."""
    from ember import distributed as dist

    by_group: dict = {}
    local = []
    for p in params:
        group = p.__dict__.get("_fsdp_shard_group")
        bucket = by_group.setdefault(id(group), (group, []))[1] if group is not None else local
        if p.grad is not None:              # (every rank still joins each group's reduction)
            bucket.append(p.grad)
    parts = [get_total_norm(local, norm_type, False, foreach)] if local else []
    for group, grads in by_group.values():
        part = get_total_norm(grads, norm_type, False, foreach) if grads else ember.tensor(0.0, device=params[0].device)
        if math.isinf(norm_type):
            dist.all_reduce(part, op=dist.ReduceOp.MAX, group=group)
        else:
            part = part.pow(norm_type)
            dist.all_reduce(part, group=group)
            part = part.pow(1.0 / norm_type)
        parts.append(part)
    return get_total_norm(parts, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient in place to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with ember.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
