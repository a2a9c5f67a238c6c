"""DistributedDataParallel: one model replica per process, gradients averaged across the processes
while backward runs, so every replica takes the same optimizer step.

Construction checks that every rank holds the same parameters (count and shapes), broadcasts the
parameters and buffers from rank 0 and builds the gradient buckets (`reducer.py`). A forward
with grad enabled outside `no_sync()` prepares the reducer, and the backward pass that follows
all-reduces the gradients. With `broadcast_buffers`, a forward first copies rank 0's buffers to
every rank when the previous forward was such a synced one (the first forward always), as torch. Training
with N processes on batches b_0..b_{N-1} thus equals training one process on their concatenation
(for a loss that is a mean over equal per-rank batches), to floating-point rounding.
"""
from __future__ import annotations

import contextlib
import weakref
from collections import defaultdict

from ember import distributed as dist
from ember.frontend.autograd.grad_mode import is_grad_enabled, no_grad
from ember.frontend.tensor import Tensor
from ember.nn.modules.module import Module

from .reducer import Reducer

__all__ = ["DistributedDataParallel"]

_UNFINISHED = ("Expected to have finished reduction in the prior iteration before starting a new one. This error "
               "indicates that your module has parameters that were not used in producing loss. You can enable "
               "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
               "`ember.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
               "participate in calculating loss.")


class DistributedDataParallel(Module):
    """Data parallelism across the processes of a process group (torch.nn.parallel.DistributedDataParallel).

    Wrap the model after `ember.distributed.init_process_group`; each process feeds its own shard of
    the data (`DistributedSampler`) and calls `backward()` and `optimizer.step()` as usual.
    `bucket_cap_mb`: the gradient bucket size (the first bucket holds at most 1 MiB); `find_unused_parameters`:
    trace each forward's outputs to parameters it did not use (their gradient counts as zero);
    `gradient_as_bucket_view`: `.grad` tensors live in the buckets (no copy, less memory);
    `broadcast_buffers`: rank 0's buffers are copied to every rank before a forward (see above);
    `static_graph`: parameters never used count as unused, as with find_unused_parameters.
    `device_ids` and `output_device` are for a module on one accelerator ([index] or None); a cpu
    or opencl module takes None (or []). `mixed_precision`, `device_mesh` and the all-reduce delay
    options are not supported (NotImplementedError). `last_backward_timeline()` tells when each
    bucket's all-reduce started relative to the backward computation.
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group=None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None, mixed_precision=None,
                 device_mesh=None) -> None:
        super().__init__()
        if not dist.is_initialized():
            raise ValueError(dist.errors.NOT_INITIALIZED)
        devices = {p.device for p in module.parameters()}
        if len(devices) > 1:
            raise ValueError("DistributedDataParallel's input module must be on the same type of devices, but input "
                             f"module parameters locate in {sorted(str(d) for d in devices)}.")
        device = next(iter(devices)) if devices else None
        for name, value in (("mixed_precision", mixed_precision), ("device_mesh", device_mesh),
                            ("delay_all_reduce_named_params", delay_all_reduce_named_params),
                            ("param_to_hook_all_reduce", param_to_hook_all_reduce)):
            if value is not None:
                raise NotImplementedError(f"DistributedDataParallel: {name} is not supported by ember's DDP")
        device_ids = device_ids or None                 # [] means none, as torch takes it
        if device_ids is not None and (device is None or device.type in ("cpu", "meta", "opencl")):
            raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                             "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                             f"{device_ids}, output_device {output_device}, and module parameters {devices}.")
        if device_ids is not None and len(device_ids) != 1:
            raise ValueError(f"device_ids can only be None or contain a single element, got {device_ids}")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.process_group = process_group if process_group is not None else dist.GroupMember.WORLD
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        _verify_same_parameters(named, self.process_group)
        if init_sync:
            self._broadcast_from_rank0([p for _, p in module.named_parameters()] + list(module.buffers()))
        # static_graph: the same parameters are used every iteration; those never used count as
        # unused from the first backward on, as with find_unused_parameters
        self.reducer = Reducer(named, self.process_group, self.bucket_bytes_cap / (1024 * 1024),
                               find_unused_parameters or static_graph, gradient_as_bucket_view)
        weakref.finalize(self, self.reducer.remove_hooks)     # a dropped wrapper leaves no hooks behind

    # ------------------------------------------------------------------ forward
    def forward(self, *inputs, **kwargs):
        grad_enabled = is_grad_enabled()
        if grad_enabled and self.reducer.unfinished:
            names = self.reducer.unfinished
            indices = [self.reducer.names.index(n) for n in names]
            rank = dist.get_rank(self.process_group)
            raise RuntimeError(f"{_UNFINISHED}\nParameter indices which did not receive grad for rank {rank}: "
                               f"{' '.join(map(str, indices))}\nParameters which did not receive grad for rank "
                               f"{rank}: {', '.join(names)}")
        # as torch: the previous forward decides whether this one first copies rank 0's buffers
        if self.broadcast_buffers and self.require_forward_param_sync:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast_from_rank0(buffers)
        out = self.module(*inputs, **kwargs)
        sync = grad_enabled and self.require_backward_grad_sync
        self.require_forward_param_sync = sync
        if sync:
            self.reducer.prepare_for_backward(out)
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward passes only accumulate into `.grad`; the first backward after the block
        all-reduces the accumulated gradients (gradient accumulation without extra communication)."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def last_backward_timeline(self) -> list[tuple[float, str]]:
        """The last synced backward pass's events, as (seconds after its first gradient, event):
        'all_reduce launched: bucket i', 'last gradient ready' (the backward computation's end) and
        'reduction finished'."""
        return list(self.reducer.timeline)

    def bucket_sizes(self) -> list[int]:
        """The number of parameters in each gradient bucket, in launch order."""
        return [len(b.params) for b in self.reducer.buckets]

    # ------------------------------------------------------------------ helpers
    def _broadcast_from_rank0(self, tensors: list[Tensor]) -> None:
        """Copy rank 0's values of `tensors` to every rank: one broadcast per dtype and device."""
        root = dist.get_global_rank(self.process_group, 0)
        groups: dict = defaultdict(list)
        for t in tensors:
            if t.numel():
                groups[(t.dtype, str(t.device))].append(t)
        with no_grad():
            for members in groups.values():
                flat = _flatten(members)
                dist.broadcast(flat, src=root, group=self.process_group)
                offset = 0
                for t in members:
                    t.copy_(flat[offset:offset + t.numel()].view(t.shape))
                    offset += t.numel()


def _flatten(tensors: list[Tensor]) -> Tensor:
    from ember._generated.functions import cat

    return cat([t.detach().reshape(-1) for t in tensors])


def _verify_same_parameters(named: list[tuple[str, Tensor]], group) -> None:
    """Every rank must wrap the same model: the same number of parameters, with the same shapes."""
    mine = [(tuple(p.shape), str(p.dtype)) for _, p in named]
    everyone: list = [None] * dist.get_world_size(group)
    dist.all_gather_object(everyone, mine, group=group)
    ref = everyone[0]
    for rank, theirs in enumerate(everyone):
        if len(theirs) != len(ref):
            raise RuntimeError(f"DDP expects same model across all ranks, but Rank {dist.get_rank(group)} has "
                               f"{len(mine)} params, while rank {rank} has inconsistent {len(theirs)} params.")
        for i, (a, b) in enumerate(zip(ref, theirs)):
            if a != b:
                raise RuntimeError(f"DDP expects same model across all ranks, but parameter {i} "
                                   f"({named[i][0]}) has shape/dtype {a} on rank 0 and {b} on rank {rank}.")
