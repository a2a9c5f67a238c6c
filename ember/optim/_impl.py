"""Which implementation an optimizer step takes: per tensor, or one fused op per group.

torch has three (`_single_tensor_*`, `_multi_tensor_*` with `foreach=True`, `_fused_*` with
`fused=True`). Ember has two: the single-tensor algorithm (ember/decompositions/optimizers.py),
and the fused ops `_fused_adam_` / `_fused_sgd_`, which compute the same update op for op in
one dispatched call per parameter group (a kernel on cpu, cuda, opencl; elsewhere their
decomposition, the single-tensor algorithm). `foreach=True` and `fused=True` both select the
fused op; since the numbers are the same, the default (`None`) selects it too wherever it has a
kernel. The
single-tensor path runs for `foreach=False` (unless `fused=True`), `differentiable=True`, and
groups the fused kernels do not take (a parameter on another device, or not float32/float64).
As torch's fused path, it keeps Adam's `step` on the parameter's device (the cpu's for cpu).
"""
from __future__ import annotations

from ember.core import dtype as _dt

# devices whose backends run the fused ops with their own kernels, which allocate no tensors (cpu and
# cuda: backends/cpu/array_kernels/optimizers.py; opencl: in-place elementwise kernels; meta: none,
# so a step there predicts what the real devices allocate: nothing beyond the state)
_FUSED_DEVICES = ("cpu", "cuda", "opencl", "meta")
_FUSED_DTYPES = (_dt.float32, _dt.float64)


def check_impl_args(foreach, fused, differentiable) -> None:
    """torch's constructor checks of `foreach` / `fused`."""
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")


def check_fused_params(params) -> None:
    """fused=True: every parameter must be a floating-point tensor on a supported device (as torch)."""
    for p in params:
        if not (p.device.type in _FUSED_DEVICES and p.dtype.is_floating_point):
            raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported "
                               f"devices: {list(_FUSED_DEVICES)}.")


def use_fused(group: dict, params: list) -> bool:
    """Whether this group's step runs through the fused op."""
    if group.get("differentiable") or (group.get("foreach") is False and not group.get("fused")):
        return False
    for p in params:
        if p._device.type not in _FUSED_DEVICES or p._dtype not in _FUSED_DTYPES:
            return False
    return True
