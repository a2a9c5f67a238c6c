"""`ZeroRedundancyOptimizer` (torch.distributed.optim's): ZeRO stage 1, the optimizer state sharded
across the ranks of a process group.

Why: in data-parallel training (DistributedDataParallel) every rank holds the whole model, its
gradients and the optimizer state (with Adam, two more tensors per parameter), all identical on
every rank. Giving each rank the state of only its share of the parameters cuts its optimizer
memory to about 1/N, for one broadcast of the updated parameters per step.

What: the parameters are partitioned as torch partitions them: group by group, largest first (by
element count, ties in the given order), each to the rank with the fewest elements so far. Every
rank computes the same partition, and the largest share holds at most 1/N of all the elements
plus the largest parameter. Each rank builds `optimizer_class` over its own share only (`optim`:
one group per global group, empty groups included), so only that share gets optimizer state.
`param_groups` stays the global view, so LR schedulers and `add_param_group` work on the wrapper;
the hyperparameters are copied into the local optimizer before each step and back after it.
`step()` runs the local optimizer, then every parameter is broadcast from the rank that owns it:
each owner's parameters of one device and dtype travel as one flat broadcast (a lone parameter in
place), not one call per parameter.

The full state is assembled only on request: `consolidate_state_dict(to)` gathers every rank's
local state onto rank `to`, whose `state_dict()` then returns it in the format of a plain optimizer
over all the parameters; `load_state_dict` takes such a full state dict on every rank and each rank
keeps the state of its own share.

Unlike torch: parameters of several dtypes or devices are accepted (torch requires one dense type);
`parameters_as_bucket_view=True` is accepted and changes nothing (see the class); there is no
`overlap_with_ddp=True` and no Join context support.
"""
from __future__ import annotations

from itertools import chain
from typing import Any, Callable

from ember import distributed as dist
from ember._generated.functions import cat, empty
from ember.frontend.autograd.grad_mode import no_grad
from ember.frontend.tensor import Tensor
from ember.optim.optimizer import Optimizer

__all__ = ["ZeroRedundancyOptimizer"]

_OVERLAP_UNAVAILABLE = (
    "ZeroRedundancyOptimizer(overlap_with_ddp=True) is not available in ember: the optimizer step cannot yet run "
    "inside DistributedDataParallel's communication hooks. Use overlap_with_ddp=False (the default) and call "
    "step() after backward()")


def _checked_params(params) -> list:
    """`params` as a list of tensors or of group dicts, with torch's errors for anything else (checked before
    the base class sees them, so the messages are ZeroRedundancyOptimizer's, as in torch)."""
    if isinstance(params, Tensor):
        raise TypeError(f"`params` argument should be an iterable of Tensors, but got {params.type()}")
    try:
        items = list(params)
    except TypeError as e:
        raise TypeError("`params` argument should be an iterable of Tensors or dicts, but got "
                        f"{type(params).__name__}") from e
    if not items:
        raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
    if not (all(isinstance(p, Tensor) for p in items) or all(isinstance(p, dict) for p in items)):
        raise TypeError("`params` argument should be an iterable of Tensors or dicts")
    if any(isinstance(g, dict) and "params" not in g for g in items):
        raise ValueError("Each parameter group passed-in via `params` must have a 'params' key mapping to the "
                         "parameters in the group")
    return items


def _partition(param_groups: list[dict], world_size: int) -> list[list[dict]]:
    """Per rank, the groups it updates: a shallow copy of every global group holding that rank's share of its
    parameters (possibly none). Greedy over the groups in order, the sizes carried from group to group."""
    per_rank: list[list[dict]] = [[] for _ in range(world_size)]
    sizes = [0] * world_size
    for group in param_groups:
        shares: list[list[Tensor]] = [[] for _ in range(world_size)]
        for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):     # stable: ties keep order
            rank = sizes.index(min(sizes))
            shares[rank].append(p)
            sizes[rank] += p.numel()
        for rank, share in enumerate(shares):
            per_rank[rank].append({**group, "params": share})
    return per_rank


def _copy_hyperparameters(sources: list[dict], targets: list[dict]) -> None:
    """Every setting but "params" from each source group into the matching target group."""
    for source, target in zip(sources, targets):
        for key, value in source.items():
            if key != "params":
                target[key] = value


def _broadcast_share(params: list[Tensor], owner: int, me: int, group) -> None:
    """Send the owner's updated `params` (group rank `owner`) to every rank: one broadcast per device and
    dtype, a lone parameter in place, several through one flat buffer that receivers copy out of."""
    layouts: dict[tuple, list[Tensor]] = {}
    for p in params:
        layouts.setdefault((p.device, p.dtype), []).append(p)
    with no_grad():
        for (device, dtype), same in layouts.items():
            if len(same) == 1:
                dist.broadcast(same[0].detach(), group=group, group_src=owner)
                continue
            if me == owner:
                flat = cat([p.detach().reshape(-1) for p in same])
            else:
                flat = empty(sum(p.numel() for p in same), dtype=dtype, device=device)
            dist.broadcast(flat, group=group, group_src=owner)
            if me != owner:
                offset = 0
                for p in same:
                    p.copy_(flat[offset:offset + p.numel()].view(p.shape))
                    offset += p.numel()


def _to_cpu(value: Any) -> Any:
    """`value` with every tensor inside (dicts, lists, tuples) on the cpu, as torch consolidates state."""
    if isinstance(value, Tensor):
        return value.cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_to_cpu(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


class ZeroRedundancyOptimizer(Optimizer):
    """ZeroRedundancyOptimizer(params, optimizer_class, process_group=None, parameters_as_bucket_view=False,
    overlap_with_ddp=False, **defaults).

    Wraps `optimizer_class` (any ember.optim optimizer class) so each rank of `process_group` (the
    default group when None) keeps optimizer state for only its share of `params`; `**defaults` go
    to `optimizer_class`. Every rank must construct it, step it, and call `add_param_group` and
    `consolidate_state_dict` alike, since these run collectives.

    Attributes: `optim` (this rank's local optimizer), `param_groups` (the global groups),
    `process_group`, `world_size`, `rank` (in the group), `global_rank`.

    `parameters_as_bucket_view` is accepted for compatibility and changes nothing: `step()` already
    sends each owner's parameters of one device and dtype as one flat buffer, which is what the
    flag buys in torch; the parameters keep their own storage (torch's flag instead makes them
    views into persistent buffers, saving the copy into the buffer). `overlap_with_ddp=True`
    raises NotImplementedError.
    """

    def __init__(self, params, optimizer_class: type[Optimizer], process_group=None,
                 parameters_as_bucket_view: bool = False, overlap_with_ddp: bool = False, **defaults: Any) -> None:
        if overlap_with_ddp:
            raise NotImplementedError(_OVERLAP_UNAVAILABLE)
        params = _checked_params(params)
        self.initialized = False          # add_param_group re-partitions only once construction is done
        super().__init__(params, defaults)
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.world_size: int = dist.get_world_size(self.process_group)
        self.rank: int = dist.get_rank(self.process_group)
        if self.rank < 0:
            raise ValueError("ZeroRedundancyOptimizer: this process is not a member of the given process_group")
        self.global_rank: int = dist.get_global_rank(self.process_group, self.rank)
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._partition_cache: list[list[dict]] = []
        self._all_state_dicts: list[dict] = []
        self.optim: Optimizer = optimizer_class(self._partition_parameters()[self.rank], **defaults)
        _copy_hyperparameters(self.optim.param_groups, self.param_groups)    # the local optimizer's defaults
        self.initialized = True

    # -- the partition --------------------------------------------------------------------------
    def _partition_parameters(self) -> list[list[dict]]:
        """Per rank, its groups (one per global group, same settings, its share of the parameters)."""
        if not self._partition_cache:
            self._partition_cache = _partition(self.param_groups, self.world_size)
        return self._partition_cache

    @property
    def _param_to_rank(self) -> dict[Tensor, int]:
        """The group rank that owns (updates and broadcasts) each parameter."""
        return {p: rank for rank, groups in enumerate(self._partition_parameters())
                for g in groups for p in g["params"]}

    @property
    def _param_to_index(self) -> dict[Tensor, int]:
        """Each parameter's index in the global state_dict (numbered in group order)."""
        return {p: i for i, p in enumerate(chain.from_iterable(g["params"] for g in self.param_groups))}

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group on every rank (call it on all ranks alike): the earlier groups keep their owners, and
        this rank's share of the new group joins its local optimizer."""
        super().add_param_group(param_group)
        if self.initialized:
            self._partition_cache = []
            self.optim.add_param_group(self._partition_parameters()[self.rank][-1])
            _copy_hyperparameters(self.optim.param_groups[-1:], self.param_groups[-1:])

    # -- stepping -------------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None, **kwargs: Any):
        """The local optimizer's step over this rank's share (with the global groups' current
        hyperparameters), then every parameter broadcast from its owner. Returns the closure's loss."""
        _copy_hyperparameters(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(**kwargs) if closure is None else self.optim.step(closure=closure, **kwargs)
        _copy_hyperparameters(self.optim.param_groups, self.param_groups)
        for owner, groups in enumerate(self._partition_parameters()):
            _broadcast_share([p for g in groups for p in g["params"]], owner, self.rank, self.process_group)
        return loss

    # -- state dict -----------------------------------------------------------------------------
    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's local optimizer state (copied to the cpu) onto group rank `to`, for its
        `state_dict()`. Call it on all ranks."""
        pg = self.process_group if self.process_group is not None else dist.GroupMember.WORLD
        if getattr(pg, "fake", False):
            raise RuntimeError("consolidate_state_dict: on the 'fake' backend the other ranks' optimizer state does "
                               "not exist (the fake backend sizes one rank; it moves no data)")
        _copy_hyperparameters(self.param_groups, self.optim.param_groups)
        gathered = [None] * self.world_size if self.rank == to else None
        dist.gather_object(_to_cpu(self.optim.state_dict()), gathered, group=self.process_group, group_dst=to)
        self._all_state_dicts = gathered if self.rank == to else []

    def state_dict(self) -> dict[str, Any]:
        """The full state, as a plain optimizer over all the parameters would give it, as of the last
        `consolidate_state_dict` onto this rank; RuntimeError on a rank it was not consolidated onto."""
        if not self._all_state_dicts:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               f"`consolidate_state_dict(to={self.rank})` on all ranks beforehand if you meant to "
                               "save the global state.")
        full = super().state_dict()
        index = self._param_to_index
        for shares, local in zip(self._partition_parameters(), self._all_state_dicts):
            local_groups = local["param_groups"]
            if [len(g["params"]) for g in shares] != [len(g["params"]) for g in local_groups]:
                raise RuntimeError("ZeroRedundancyOptimizer.state_dict: the parameter groups changed since "
                                   "consolidate_state_dict(); call it again on all ranks")
            for share, local_group in zip(shares, local_groups):
                for p, i in zip(share["params"], local_group["params"]):
                    if i in local["state"]:
                        full["state"][index[p]] = local["state"][i]
        full["state"] = dict(sorted(full["state"].items()))
        return full

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a full state dict (from `state_dict()`) on every rank: the global groups take its
        hyperparameters, the local optimizer its groups' and the state of this rank's share; the rest
        of the state is not kept."""
        super().load_state_dict({"state": {}, "param_groups": state_dict["param_groups"]})   # checks the groups
        index, saved = self._param_to_index, state_dict["state"]
        groups, state, start = [], {}, 0
        for group, share in zip(self.param_groups, self._partition_parameters()[self.rank]):
            ids = list(range(start, start + len(share["params"])))
            state.update((i, saved[index[p]]) for p, i in zip(share["params"], ids) if index[p] in saved)
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
            start += len(ids)
        self.optim.load_state_dict({"state": state, "param_groups": groups})
