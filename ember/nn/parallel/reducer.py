"""DistributedDataParallel's gradient reducer: parameters in buckets, each bucket all-reduced as
soon as its last gradient is ready, while the backward pass goes on.

The parameters that need gradients are laid out, in reverse registration order (roughly the
order backward produces their gradients), in flat buckets of one dtype and device: the first
bucket holds up to 1 MiB (so communication starts early; less if the cap is smaller), the others up to `bucket_cap_mb`.
A post-accumulate-grad hook on each parameter copies its fresh `.grad` into its slot of the
bucket (with `gradient_as_bucket_view` the `.grad` *is* that slot, so nothing is copied) and,
when a bucket is complete, launches its asynchronous all-reduce (ReduceOp.AVG) - buckets are
launched in index order, the same on every rank, as MPI requires of collectives on one
communicator. A callback queued on the autograd engine runs when the backward pass ends: it
waits for the outstanding all-reduces and writes the averages into the parameters' `.grad`.

With `find_unused_parameters`, the forward's outputs are traced back through the autograd graph;
the parameters they do not reach count as ready (with zero gradient) at the first hook, and an
extra all-reduce of the "used" flags leaves `.grad` untouched for parameters no rank used.

`timeline` keeps the last backward pass's events, seconds after its first gradient arrived:
when each bucket's all-reduce was launched, when the last gradient arrived (the end of the
backward computation) and when the reduction finished.
"""
from __future__ import annotations

import dataclasses
import time

from ember import distributed as dist
from ember.frontend.autograd.engine import queue_callback
from ember.frontend.autograd.grad_mode import no_grad
from ember.frontend.autograd.graph import AccumulateGrad
from ember._generated.functions import zeros
from ember.core.dtype import int32
from ember.frontend.factories import tensor
from ember.frontend.tensor import Tensor

__all__ = ["Reducer", "bucket_assignment", "FIRST_BUCKET_BYTES"]

FIRST_BUCKET_BYTES = 1024 * 1024        # the size of torch's small bucket (dist._DEFAULT_FIRST_BUCKET_BYTES)


def bucket_assignment(params: list[Tensor], cap_bytes: int, first_cap_bytes: int = FIRST_BUCKET_BYTES) -> list[list[int]]:
    """Indices into `params` grouped into buckets of one dtype and device each, in order: a bucket is
    closed once it holds at least its cap (for the first bucket of each kind the smaller of
    `first_cap_bytes` and `cap_bytes`, so the first all-reduce starts early; `cap_bytes` after)."""
    filling: dict = {}               # (dtype, device) -> [indices, bytes so far]
    closed_kinds: set = set()
    done: list[list[int]] = []
    for i, p in enumerate(params):
        kind = (p.dtype, str(p.device))
        entry = filling.setdefault(kind, [[], 0])
        entry[0].append(i)
        entry[1] += p.numel() * p.element_size()
        if entry[1] >= (cap_bytes if kind in closed_kinds else min(first_cap_bytes, cap_bytes)):
            done.append(entry[0])
            closed_kinds.add(kind)
            del filling[kind]
    done.extend(indices for indices, _ in filling.values())
    return sorted(done, key=lambda b: b[0])


class _Bucket:
    """One flat buffer: the parameters' gradients side by side, reduced by one all-reduce."""

    __slots__ = ("index", "params", "flat", "views", "pending", "work")

    def __init__(self, index: int, params: list[Tensor]) -> None:
        self.index = index
        self.params = params
        self.flat = zeros(sum(p.numel() for p in params), dtype=params[0].dtype, device=params[0].device)
        self.views: list[Tensor] = []
        offset = 0
        for p in params:
            self.views.append(self.flat[offset:offset + p.numel()].view(p.shape))
            offset += p.numel()
        self.pending = len(params)
        self.work = None


class Reducer:
    """The buckets of one DistributedDataParallel module and the hooks that fill and reduce them."""

    def __init__(self, named_params: list[tuple[str, Tensor]], process_group, bucket_cap_mb: float,
                 find_unused_parameters: bool, gradient_as_bucket_view: bool) -> None:
        self.names = [n for n, _ in named_params]
        self.params = [p for _, p in named_params]
        self.name_of = {id(p): n for n, p in named_params}
        self.group = process_group
        self.world_size = dist.get_world_size(process_group)
        self.find_unused = find_unused_parameters
        self.as_bucket_view = gradient_as_bucket_view
        order = list(reversed(range(len(self.params))))     # backward meets the last layers first
        cap = int(bucket_cap_mb * 1024 * 1024)
        self.buckets: list[_Bucket] = []
        self.slot: dict[int, tuple[_Bucket, int]] = {}     # id(param) -> (bucket, position)
        for b, positions in enumerate(bucket_assignment([self.params[i] for i in order], cap)):
            members = [self.params[order[k]] for k in positions]
            bucket = _Bucket(b, members)
            self.buckets.append(bucket)
            for pos, p in enumerate(members):
                self.slot[id(p)] = (bucket, pos)
        self.expecting = False              # between a synced forward and the end of its backward
        self.unused: list[Tensor] = []      # parameters the last synced forward did not reach (find_unused)
        self.locally_used: set[int] = set() # parameters with a gradient since the last reduction (find_unused)
        self.unfinished: list[str] = []     # parameters a finished backward left without gradient
        self.timeline: list[tuple[float, str]] = []
        self._reset()
        self.handles = [p.register_post_accumulate_grad_hook(self._on_grad_ready) for p in self.params]

    # ------------------------------------------------------------------ one iteration
    def _reset(self) -> None:
        self.in_backward = False
        self.next_to_launch = 0
        self.ready: set[int] = set()
        self.start = 0.0
        for b in self.buckets:
            b.pending = len(b.params)
            b.work = None

    def prepare_for_backward(self, outputs) -> None:
        """After a forward with grad enabled outside no_sync(): the backward that follows reduces. With
        find_unused_parameters, the parameters `outputs` do not depend on count as ready from its
        first gradient on."""
        self._reset()
        self.expecting = True
        if self.find_unused:
            reached = _leaves_reached([t._ag.grad_fn or t for t in find_tensors(outputs) if t._ag is not None])
            self.unused = [p for p in self.params if id(p) not in reached]

    def _on_grad_ready(self, param: Tensor) -> None:
        """A parameter's gradient is accumulated (or was None): count it, and while a synced
        backward runs, put it in its bucket."""
        if self.find_unused and param.grad is not None:
            self.locally_used.add(id(param))       # also inside no_sync(): used since the last reduction
        if not self.expecting:
            return                                  # no_sync(), or a backward no synced forward prepared
        if not self.in_backward:                    # the first gradient of this backward pass
            self.in_backward = True
            self.start = time.perf_counter()
            self.timeline = []
            queue_callback(self._finalize)
            for p in self.unused:
                self._mark_ready(p)
        self._mark_ready(param)

    def _mark_ready(self, param: Tensor) -> None:
        key = id(param)
        if key in self.ready:
            raise RuntimeError(f"DistributedDataParallel: parameter {self.name_of[id(param)]!r} was "
                               "marked ready twice in one backward pass (is it reached twice by a reentrant "
                               "backward?)")
        self.ready.add(key)
        bucket, pos = self.slot[key]
        view = bucket.views[pos]
        grad = param.grad
        with no_grad():
            if grad is None:
                view.zero_()                        # unused here, or a None gradient: zero (as torch)
            elif grad is not view:
                if grad.dtype != view.dtype or grad.device != view.device:
                    raise RuntimeError(f"DistributedDataParallel: the gradient of {self.name_of[id(param)]!r}"
                                       f" is {grad.dtype} on {grad.device}, but its bucket holds {view.dtype} on "
                                       f"{view.device}: change a module's dtype or device before wrapping it")
                view.copy_(grad)
                if self.as_bucket_view:
                    param.grad = view
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready()
            self._progress()        # at bucket boundaries only: a poll per gradient costs more than it moves
        if len(self.ready) == len(self.params):
            self._event("last gradient ready")

    def _launch_ready(self) -> None:
        while self.next_to_launch < len(self.buckets) and self.buckets[self.next_to_launch].pending == 0:
            bucket = self.buckets[self.next_to_launch]
            bucket.work = dist.all_reduce(bucket.flat, op=dist.ReduceOp.AVG, group=self.group, async_op=True)
            self._event(f"all_reduce launched: bucket {bucket.index}")
            self.next_to_launch += 1

    def _progress(self) -> None:
        """Let MPI move the launched all-reduces on (it progresses only inside its own calls)."""
        for b in self.buckets[:self.next_to_launch]:
            if b.work is not None:
                b.work.is_completed()

    def _event(self, what: str) -> None:
        self.timeline.append((time.perf_counter() - self.start, what))

    def _finalize(self) -> None:
        """End of backward: wait for every bucket and hand the averaged gradients to `.grad`."""
        self.expecting = False
        if self.next_to_launch < len(self.buckets):
            # a parameter the backward never reached: the next forward raises, as torch's does
            self.unfinished = [n for n, p in zip(self.names, self.params) if id(p) not in self.ready]
            return
        globally_used = self._globally_used() if self.find_unused else None
        for bucket in self.buckets:
            bucket.work.wait()
        with no_grad():
            for bucket in self.buckets:
                for p, view in zip(bucket.params, bucket.views):
                    if globally_used is not None and id(p) not in globally_used:
                        continue
                    if p.grad is view:
                        continue
                    if p.grad is None or self.as_bucket_view:
                        p.grad = view if self.as_bucket_view else view.clone()
                    else:
                        p.grad.copy_(view)
        self.locally_used.clear()
        self._event("reduction finished")
        self.in_backward = False

    def _globally_used(self) -> set[int]:
        """The parameters some rank used (an all-reduce of the per-rank "used" flags)."""
        used = tensor([id(p) in self.locally_used for p in self.params], dtype=int32, device=self.params[0].device)
        dist.all_reduce(used, op=dist.ReduceOp.MAX, group=self.group)
        return {id(p) for p, u in zip(self.params, used.tolist()) if u}

    def remove_hooks(self) -> None:
        for h in self.handles:
            h.remove()


def find_tensors(value) -> list[Tensor]:
    """The tensors in a forward's output: itself, or inside lists, tuples, dicts and dataclasses (as torch's DDP looks)."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in find_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in find_tensors(v)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) for t in find_tensors(getattr(value, f.name))]
    return []


def _leaves_reached(roots) -> set[int]:
    """ids of the leaf tensors reachable from `roots` (graph nodes, or leaf tensors themselves)."""
    stack = list(roots)
    seen: set[int] = set()
    reached: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            reached.add(id(item))
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, AccumulateGrad):
            var = item.variable
            if var is not None:
                reached.add(id(var))
            continue
        for edge in item.next_edges:
            if edge is not None:
                stack.append(edge[0])
    return reached
