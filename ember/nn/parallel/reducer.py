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

import time

from ember import distributed as dist
from ember.frontend.autograd.engine import queue_callback
from ember.frontend.autograd.grad_mode import no_grad
from ember.frontend.autograd.graph import AccumulateGrad
from ember._generated.functions import zeros
from ember.core.dtype import int32
from ember.frontend.factories import tensor
from ember.frontend.tensor import Tensor
from ember.utils.pytree import tree_flatten

__all__ = ["Reducer", "bucket_assignment", "FIRST_BUCKET_BYTES"]

FIRST_BUCKET_BYTES = 1024 * 1024        # torch's dist._DEFAULT_FIRST_BUCKET_BYTES


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
        self.enabled = True                 # False inside no_sync(): gradients only accumulate
        self.unused: list[Tensor] = []      # parameters the last forward did not reach (find_unused)
        self.timeline: list[tuple[float, str]] = []
        self._reset()
        self.handles = [p.register_post_accumulate_grad_hook(self._on_grad_ready) for p in self.params]

    # ------------------------------------------------------------------ one iteration
    def _reset(self) -> None:
        self.in_backward = False
        self.next_to_launch = 0
        self.ready: set[int] = set()
        self.locally_used: set[int] = set()
        self.start = 0.0
        for b in self.buckets:
            b.pending = len(b.params)
            b.work = None

    def prepare_for_backward(self, outputs) -> None:
        """Called after each forward that will be followed by a synced backward: with
        find_unused_parameters, find the parameters `outputs` do not depend on."""
        self._reset()
        if self.find_unused:
            reached = _leaves_reached(outputs)
            self.unused = [p for p in self.params if id(p) not in reached]

    def unfinished_names(self) -> list[str]:
        """Names of the parameters that did not get a gradient in a backward pass that started reducing."""
        if not self.in_backward:
            return []
        return [n for n, p in zip(self.names, self.params) if id(p) not in self.ready]

    def _on_grad_ready(self, param: Tensor) -> None:
        if not self.enabled:
            return
        if not self.in_backward:                 # the first gradient of this backward pass
            self.in_backward = True
            self.start = time.perf_counter()
            self.timeline = []
            queue_callback(self._finalize)
            for p in self.unused:
                self._mark_ready(p, used=False)
        self._mark_ready(param, used=True)

    def _mark_ready(self, param: Tensor, used: bool) -> None:
        key = id(param)
        if key in self.ready:
            raise RuntimeError(f"DistributedDataParallel: parameter {self.names[self.params.index(param)]!r} got its "
                               "gradient twice in one backward pass (a parameter used by two backward passes "
                               "without an optimizer step in between needs no_sync() around the first)")
        self.ready.add(key)
        bucket, pos = self.slot[key]
        view = bucket.views[pos]
        with no_grad():
            if not used or param.grad is None:
                view.zero_()
            else:
                self.locally_used.add(key)
                if param.grad is not view:
                    view.copy_(param.grad)
                    if self.as_bucket_view:
                        param.grad = view
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready()
        self._progress()
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
        if self.next_to_launch < len(self.buckets):
            return          # some parameter got no gradient: the next forward raises (as torch does)
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
        self._event("reduction finished")
        self.in_backward = False

    def _globally_used(self) -> set[int]:
        """The parameters some rank used (an all-reduce of the per-rank "used" flags)."""
        used = tensor([id(p) in self.locally_used for p in self.params], dtype=int32)
        dist.all_reduce(used, op=dist.ReduceOp.MAX, group=self.group)
        return {id(p) for p, u in zip(self.params, used.tolist()) if u}

    def remove_hooks(self) -> None:
        for h in self.handles:
            h.remove()


def _leaves_reached(outputs) -> set[int]:
    """ids of the leaf tensors whose gradients the tensors in `outputs` (any nesting) depend on."""
    stack = []
    for t in tree_flatten(outputs)[0]:
        if isinstance(t, Tensor) and t._ag is not None:
            if t._ag.grad_fn is None:
                stack.append(("leaf", t))
            else:
                stack.append(("node", t._ag.grad_fn))
    seen: set[int] = set()
    reached: set[int] = set()
    while stack:
        kind, item = stack.pop()
        if kind == "leaf":
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
                stack.append(("node", edge[0]))
    return reached
