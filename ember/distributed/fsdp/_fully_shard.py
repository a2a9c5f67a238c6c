"""`fully_shard` (torch's FSDP2 API): shard a module's parameters across the ranks of a group.

Call it bottom-up, on each block and then on the root, as with torch:

    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    optimizer = ember.optim.AdamW(model.parameters())     # the sharded parameters

Each call makes the module a unit: its parameters not already in an inner unit go into one
`ParamGroup` (see _param_group.py), and the module's class becomes `FSDP<Class>`, a subclass
that also derives from `FSDPModule`. A forward pre-hook gathers the unit's parameters (one
all-gather) and installs saved-tensor hooks, so the autograd graph keeps references to the
gathered buffer, not the buffer; a forward hook frees it again (`reshard_after_forward`).
Backward gathers a unit's parameters again when its saved views are first needed, and
reduce-scatters its gradients as soon as they are all there. Every rank must run the same
units in the same order (the same model and control flow), as with torch's FSDP.
"""
from __future__ import annotations

from ember import distributed as dist
from ember.frontend.autograd.grad_mode import is_grad_enabled
from ember.frontend.autograd.graph import saved_tensors_hooks
from ember.frontend.tensor import Tensor
from ember.nn.modules.module import Module
from ember.utils.pytree import tree_map

from ._param_group import MixedPrecisionPolicy, ParamGroup, pack_saved, unpack_saved

__all__ = ["fully_shard", "FSDPModule", "OffloadPolicy", "CPUOffloadPolicy"]


class OffloadPolicy:
    """No offloading (torch's default policy)."""


class CPUOffloadPolicy(OffloadPolicy):
    """torch's policy of keeping the shards in host memory; not supported by ember's FSDP."""

    def __init__(self, pin_memory: bool = True) -> None:
        self.pin_memory = pin_memory


class FSDPModule:
    """The methods fully_shard adds to a module (torch.distributed.fsdp.FSDPModule)."""

    _fsdp_group: ParamGroup | None

    def unshard(self, async_op: bool = False) -> None:
        """Gather this unit's parameters now (the next forward then does not)."""
        if self._fsdp_group is not None:
            self._fsdp_group.unshard()

    def reshard(self) -> None:
        """Free this unit's gathered parameters (the modules show the shards again)."""
        if self._fsdp_group is not None:
            self._fsdp_group.reshard()

    def set_reshard_after_forward(self, reshard_after_forward: bool, recurse: bool = True) -> None:
        for m in self.modules() if recurse else (self,):
            if isinstance(m, FSDPModule):
                m._fsdp_reshard_after_forward = bool(reshard_after_forward)

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0) -> Tensor:
        """`nn.utils.clip_grad_norm_` over this module's parameters (which sums the sharded ones' norms
        across their group, so every rank clips by the same total norm); returns the total norm."""
        from ember.nn.utils.clip_grad import clip_grad_norm_

        return clip_grad_norm_(list(self.parameters()), max_norm, norm_type)


_FSDP_CLASSES: dict[type, type] = {}


def _fsdp_class(cls: type) -> type:
    if issubclass(cls, FSDPModule):
        return cls
    if cls not in _FSDP_CLASSES:
        _FSDP_CLASSES[cls] = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    return _FSDP_CLASSES[cls]


def _managed_parameters(module: Module) -> list[tuple[str, object, list]]:
    """(name, parameter, [(module, attribute), ...]) of the parameters `module` owns that no inner
    unit has taken, each parameter once with every place it is registered (tied weights)."""
    found: dict[int, tuple[str, object, list]] = {}
    order: list[int] = []

    def walk(m: Module, prefix: str) -> None:
        for attr, p in m._parameters.items():
            if p is None:
                continue
            if p.__dict__.get("_fsdp_managed"):
                raise ValueError(f"fully_shard: {prefix + attr!r} is already managed by another fully_shard unit "
                                 "(a parameter shared between units, or fully_shard called on a parent before "
                                 "its children): call fully_shard on the blocks first, then on the root")
            if id(p) not in found:
                found[id(p)] = (prefix + attr, p, [])
                order.append(id(p))
            found[id(p)][2].append((m, attr))
        for child_name, child in m._modules.items():
            if child is not None and not isinstance(child, FSDPModule):
                walk(child, f"{prefix}{child_name}.")

    walk(module, "")
    return [found[i] for i in order]


def fully_shard(module: Module, *, mesh=None, reshard_after_forward: bool = True,
                shard_placement_fn=None, mp_policy: MixedPrecisionPolicy = MixedPrecisionPolicy(),
                offload_policy: OffloadPolicy = OffloadPolicy(), ignored_params=None) -> Module:
    """Shard `module`'s parameters (those no inner fully_shard took) across the ranks of `mesh` (a
    process group; None: the default group), returning the module, now also an `FSDPModule`.
    Every rank must hold the same parameter values when it is called (seed alike, or load the
    same checkpoint), since each keeps only its own part of them."""
    if not dist.is_initialized():
        raise ValueError(dist.errors.NOT_INITIALIZED)
    if isinstance(module, FSDPModule) and getattr(module, "_fsdp_group", None) is not None:
        raise ValueError(f"fully_shard: {type(module).__name__} is sharded already")
    if isinstance(offload_policy, CPUOffloadPolicy):
        raise NotImplementedError("fully_shard: CPUOffloadPolicy is not supported by ember's FSDP; the shards stay "
                                  "on the parameters' device")
    if shard_placement_fn is not None:
        raise NotImplementedError("fully_shard: shard_placement_fn is not supported (ember shards the flat "
                                  "parameters evenly)")
    if not isinstance(mp_policy, MixedPrecisionPolicy):
        raise TypeError(f"fully_shard: mp_policy must be a MixedPrecisionPolicy, got {type(mp_policy).__name__}")
    group = mesh if mesh is not None else dist.GroupMember.WORLD
    ignored = {id(p) for p in (ignored_params or ())}
    params = [entry for entry in _managed_parameters(module) if id(entry[1]) not in ignored]
    module.__class__ = _fsdp_class(type(module))
    module._fsdp_group = ParamGroup(params, group, mp_policy) if params else None
    module._fsdp_process_group = group
    module._fsdp_reshard_after_forward = bool(reshard_after_forward)
    module._fsdp_mp = mp_policy
    module.register_forward_pre_hook(_pre_forward, with_kwargs=True)
    module.register_forward_hook(_post_forward)
    return module


def _cast(value, dtype):
    if dtype is None:
        return value
    return tree_map(lambda t: t.to(dtype) if isinstance(t, Tensor) and t.is_floating_point() else t, value)


def _pre_forward(module, args, kwargs):
    group = module._fsdp_group
    if group is not None:
        group.unshard()
        if is_grad_enabled():
            group.prepare_backward()
    hooks = saved_tensors_hooks(pack_saved, unpack_saved)
    hooks.__enter__()
    module.__dict__.setdefault("_fsdp_hook_stack", []).append(hooks)
    mp = module._fsdp_mp
    if mp.cast_forward_inputs and mp.param_dtype is not None:
        return _cast(args, mp.param_dtype), _cast(kwargs, mp.param_dtype)
    return None


def _post_forward(module, args, output):
    module._fsdp_hook_stack.pop().__exit__(None, None, None)
    if module._fsdp_group is not None and module._fsdp_reshard_after_forward:
        module._fsdp_group.reshard()
    return _cast(output, module._fsdp_mp.output_dtype)
