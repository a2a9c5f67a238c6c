"""A model's state dict whatever its parallelism (torch.distributed.checkpoint.state_dict).

For a model with fully_shard units, `get_model_state_dict` gives either each rank's own rows of
every sharded parameter (`Shard`s: nothing is gathered; save them with `checkpoint.save`) or,
with `StateDictOptions(full_state_dict=True)`, the whole tensors, gathered unit by unit (on every
rank, or with `cpu_offload=True` on rank 0 only, as torch). `ignore_frozen_params` leaves out the
sharded parameters that do not require grad; `broadcast_from_rank0` and `submodules` are not
supported (NotImplementedError). `set_model_state_dict` takes either
form: a full tensor is cut to this rank's rows, a Shard must hold exactly them. Parameters
outside any unit and buffers are ordinary tensors in both forms.
"""
from __future__ import annotations

from dataclasses import dataclass

from ember import distributed as dist
from ember.frontend.autograd.grad_mode import no_grad
from ember.frontend.tensor import Tensor

from .shard import Shard

__all__ = ["StateDictOptions", "get_model_state_dict", "set_model_state_dict", "Shard"]


@dataclass(frozen=True)
class StateDictOptions:
    """torch's options: `full_state_dict` (whole tensors instead of shards), `cpu_offload` (with a
    full state dict: only rank 0 gets it), `strict` (set: every key must be there)."""

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False


def _units(model):
    """(unit module, its ParamGroup) of every fully_shard unit under `model`, outermost last."""
    from ember.distributed.fsdp import FSDPModule

    return [(m, m._fsdp_group) for m in model.modules()
            if isinstance(m, FSDPModule) and getattr(m, "_fsdp_group", None) is not None]


_WRAPPER = "_fsdp_wrapped_module."       # FullyShardedDataParallel's attribute, dropped from state dict names


def _slot_names(model) -> dict[str, tuple]:
    """name in the model's state dict -> (ParamGroup, slot) for every sharded parameter."""
    path = {id(m): (name + ".").replace(_WRAPPER, "")[:-1] if name else name
            for name, m in model.named_modules(remove_duplicate=False)}
    out = {}
    for _, group in _units(model):
        for slot in group.slots:
            for module, attr in slot.places:
                if id(module) in path:
                    prefix = path[id(module)]
                    out[f"{prefix}.{attr}" if prefix else attr] = (group, slot)
    return out


def get_model_state_dict(model, *, submodules=None, options: StateDictOptions | None = None) -> dict:
    """The model's state: Shards of the sharded parameters (or, with full_state_dict, whole tensors)
    and its other parameters and buffers, under the names of `model.state_dict()`."""
    options = options or StateDictOptions()
    _check_options(options, submodules)
    sharded = _slot_names(model)
    if options.full_state_dict:
        return _full_state_dict(model, sharded, options)
    state = {}
    for key, value in model.state_dict().items():
        if options.ignore_frozen_params and key in sharded and not sharded[key][1].sharded.requires_grad:
            continue
        if key in sharded:
            group, slot = sharded[key]
            lo, _ = slot.my_rows(group.rank)
            state[key] = Shard(slot.sharded.detach(), slot.shape, lo)
        else:
            state[key] = value
    return state


def _check_options(options: StateDictOptions, submodules=None) -> None:
    if submodules is not None:
        raise NotImplementedError("get_model_state_dict: `submodules` is not supported; take the whole model's")
    if options.broadcast_from_rank0:
        raise NotImplementedError("StateDictOptions(broadcast_from_rank0=True) is not supported: load the full "
                                  "state dict on every rank")


def _full_state_dict(model, sharded: dict, options: StateDictOptions) -> dict:
    """Whole tensors, gathered one unit at a time (the peak holds one unit beyond the copies)."""
    state = {k: v.detach() for k, v in model.state_dict().items()}
    for _, group in _units(model):
        keys = [k for k, (g, _) in sharded.items() if g is group and k in state]
        if not keys:
            continue
        group.unshard(install=False)
        try:
            for key in keys:
                state[key] = sharded[key][1].original.detach().clone()
        finally:
            group.reshard()
    if options.ignore_frozen_params:
        state = {k: v for k, v in state.items() if k not in sharded or sharded[k][1].sharded.requires_grad}
    if options.cpu_offload and dist.is_initialized() and dist.get_rank() != 0:
        return {}
    return {k: v if k in sharded else v.clone() for k, v in state.items()}


def set_model_state_dict(model, model_state_dict: dict, *, options: StateDictOptions | None = None):
    """Load `model_state_dict` (full tensors or Shards, as get_model_state_dict gives) into the model;
    returns (missing keys, unexpected keys) as load_state_dict does."""
    options = options or StateDictOptions()
    _check_options(options)
    sharded = _slot_names(model)
    rest = {}
    with no_grad():
        for key, value in model_state_dict.items():
            if key not in sharded:
                rest[key] = value.local if isinstance(value, Shard) else value
                continue
            group, slot = sharded[key]
            lo, hi = slot.my_rows(group.rank)
            if isinstance(value, Shard):
                if value.row_offset != lo or value.rows != hi - lo:
                    raise ValueError(f"set_model_state_dict: {key!r} holds rows [{value.row_offset}, "
                                     f"{value.row_offset + value.rows}) but this rank owns rows [{lo}, {hi}); load "
                                     "a checkpoint of another world size with ember.distributed.checkpoint.load")
                mine = value.local
            else:
                if not isinstance(value, Tensor) or tuple(value.shape) != slot.shape:
                    raise ValueError(f"set_model_state_dict: {key!r} must be a tensor of shape {list(slot.shape)}, "
                                     f"got {getattr(value, 'shape', type(value).__name__)}")
                mine = value.reshape(slot.rows, -1)[lo:hi] if value.dim() else value.reshape(1)[lo:hi]
            slot.sharded.copy_(mine.reshape(slot.sharded.shape).to(slot.sharded.dtype))
    result = model.load_state_dict(rest, strict=False)
    missing = [k for k in result.missing_keys if k not in sharded and k not in model_state_dict]
    missing += [k for k in sharded if k not in model_state_dict and not (
        options.ignore_frozen_params and not sharded[k][1].sharded.requires_grad)]
    if options.strict and (missing or result.unexpected_keys):
        raise RuntimeError(f"set_model_state_dict: missing keys {missing}, unexpected keys {result.unexpected_keys}")
    return missing, list(result.unexpected_keys)
