"""FullyShardedDataParallel: torch's FSDP1 wrapper, on fully_shard.

`FullyShardedDataParallel(module, auto_wrap_policy=ModuleWrapPolicy({Block}))` makes each
submodule the policy picks a unit (fully_shard, innermost first) and then the whole module, and
wraps it: `forward` runs the module, and `state_dict()` gives the original module's names, whole
tensors by default (`StateDictType.FULL_STATE_DICT`) or each rank's Shards inside
`FullyShardedDataParallel.state_dict_type(model, StateDictType.SHARDED_STATE_DICT)`.
"""
from __future__ import annotations

import contextlib
import enum
from dataclasses import dataclass

from ember import distributed as dist
from ember.frontend.autograd.grad_mode import no_grad
from ember.nn.modules.module import Module

from ._fully_shard import fully_shard
from ._param_group import MixedPrecisionPolicy

__all__ = ["FullyShardedDataParallel", "ShardingStrategy", "StateDictType", "MixedPrecision", "ModuleWrapPolicy",
           "size_based_auto_wrap_policy", "FullStateDictConfig", "ShardedStateDictConfig"]


class ShardingStrategy(enum.Enum):
    """FULL_SHARD (parameters freed after each unit's forward) and SHARD_GRAD_OP (kept until backward)."""
    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


class StateDictType(enum.Enum):
    FULL_STATE_DICT = 1
    LOCAL_STATE_DICT = 2
    SHARDED_STATE_DICT = 3


@dataclass
class FullStateDictConfig:
    offload_to_cpu: bool = False
    rank0_only: bool = False


@dataclass
class ShardedStateDictConfig:
    offload_to_cpu: bool = False


@dataclass
class MixedPrecision:
    """torch's FSDP1 mixed precision: parameters gathered in `param_dtype`, gradients reduced in
    `reduce_dtype`; the root's floating-point inputs cast to param_dtype (`cast_root_forward_inputs`),
    other units' only with `cast_forward_inputs` (buffers stay as they are: `buffer_dtype` is not
    applied)."""
    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True


class ModuleWrapPolicy:
    """Make every submodule of one of `module_classes` a unit."""

    def __init__(self, module_classes) -> None:
        self.module_classes = tuple(module_classes)

    def __call__(self, module: Module, recurse: bool, nonwrapped_numel: int) -> bool:
        return True if recurse else isinstance(module, self.module_classes)


def size_based_auto_wrap_policy(module: Module, recurse: bool, nonwrapped_numel: int,
                                min_num_params: int = int(1e8)) -> bool:
    """torch's size policy: a submodule becomes a unit once it holds min_num_params not yet wrapped."""
    return True if recurse else nonwrapped_numel >= min_num_params


def _wrap_children(module: Module, policy, wrap) -> int:
    """Apply `wrap` bottom-up to the submodules `policy` picks; returns the parameters left unwrapped."""
    left = sum(p.numel() for p in module._parameters.values() if p is not None)
    for child in module.children():
        unwrapped = _wrap_children(child, policy, wrap)
        if policy(child, False, unwrapped):
            wrap(child)
        else:
            left += unwrapped
    return left


class FullyShardedDataParallel(Module):
    """torch.distributed.fsdp.FullyShardedDataParallel on ember's fully_shard."""

    _state_dict_type = StateDictType.FULL_STATE_DICT

    def __init__(self, module: Module, process_group=None, sharding_strategy=None, cpu_offload=None,
                 auto_wrap_policy=None, backward_prefetch=None, mixed_precision: MixedPrecision | None = None,
                 ignored_modules=None, param_init_fn=None, device_id=None, sync_module_states: bool = False,
                 forward_prefetch: bool = False, limit_all_gathers: bool = True, use_orig_params: bool = False,
                 ignored_states=None, device_mesh=None) -> None:
        super().__init__()
        strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        if strategy not in (ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP):
            raise NotImplementedError(f"FullyShardedDataParallel: {strategy} is not supported (FULL_SHARD and "
                                      "SHARD_GRAD_OP are; DistributedDataParallel replicates)")
        if cpu_offload is not None and getattr(cpu_offload, "offload_params", False):
            raise NotImplementedError("FullyShardedDataParallel: cpu_offload is not supported")
        group = process_group if process_group is not None else dist.GroupMember.WORLD
        if sync_module_states:
            with no_grad():
                for t in list(module.parameters()) + list(module.buffers()):
                    dist.broadcast(t.detach(), src=dist.get_global_rank(group, 0), group=group)
        mp = root_mp = MixedPrecisionPolicy()
        if mixed_precision is not None:
            mp = MixedPrecisionPolicy(param_dtype=mixed_precision.param_dtype,
                                      reduce_dtype=mixed_precision.reduce_dtype,
                                      cast_forward_inputs=mixed_precision.cast_forward_inputs)
            root_mp = MixedPrecisionPolicy(param_dtype=mixed_precision.param_dtype,
                                           reduce_dtype=mixed_precision.reduce_dtype,
                                           cast_forward_inputs=mixed_precision.cast_root_forward_inputs)
        ignored = [p for m in (ignored_modules or ()) for p in m.parameters()]

        def wrap(m: Module, policy: MixedPrecisionPolicy = mp) -> None:
            fully_shard(m, mesh=group, reshard_after_forward=strategy is ShardingStrategy.FULL_SHARD,
                        mp_policy=policy, ignored_params=ignored)

        if auto_wrap_policy is not None:
            _wrap_children(module, auto_wrap_policy, wrap)
        wrap(module, root_mp)
        self._fsdp_wrapped_module = module

    @property
    def module(self) -> Module:
        return self._fsdp_wrapped_module

    def forward(self, *args, **kwargs):
        return self._fsdp_wrapped_module(*args, **kwargs)

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0):
        """Clip the gradients by their total norm over every rank; returns the norm."""
        return self._fsdp_wrapped_module.clip_grad_norm_(max_norm, norm_type)

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module: Module, state_dict_type: StateDictType, state_dict_config=None,
                        optim_state_dict_config=None):
        """Within the block, the FullyShardedDataParallel modules under `module` give and take state
        dicts of `state_dict_type` (FULL_STATE_DICT or SHARDED_STATE_DICT)."""
        if state_dict_type is StateDictType.LOCAL_STATE_DICT:
            raise NotImplementedError("StateDictType.LOCAL_STATE_DICT is not supported; use SHARDED_STATE_DICT")
        wrappers = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        before = [(m, m.__dict__.get("_state_dict_type"), m.__dict__.get("_state_dict_config")) for m in wrappers]
        for m in wrappers:
            m._state_dict_type = state_dict_type
            m._state_dict_config = state_dict_config
        try:
            yield
        finally:
            for m, kind, config in before:
                for attr, value in (("_state_dict_type", kind), ("_state_dict_config", config)):
                    if value is None:
                        m.__dict__.pop(attr, None)
                    else:
                        setattr(m, attr, value)

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """The wrapped module's state under its own names (FSDP1 drops the wrapper from them), after
        `prefix`, into `destination` when given (a parent module's state_dict passes both)."""
        from collections import OrderedDict

        from ember.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        if args:           # torch's deprecated positional form: (destination, prefix, keep_vars)
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
        config = self.__dict__.get("_state_dict_config")
        full = self._state_dict_type is StateDictType.FULL_STATE_DICT
        rank0_only = bool(getattr(config, "rank0_only", False))
        state = get_model_state_dict(self._fsdp_wrapped_module,
                                     options=StateDictOptions(full_state_dict=full, cpu_offload=full and rank0_only))
        if destination is None:
            destination = OrderedDict()
        for key, value in state.items():
            destination[prefix + key] = value
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        from ember.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        return set_model_state_dict(self._fsdp_wrapped_module, state_dict, options=StateDictOptions(strict=strict))
