"""Run under `mpiexec -n N` by tests/test_ddp.py: DistributedDataParallel against one process.

    python ddp_training.py MODEL

MODEL is `gpt` (examples/char_gpt.py's nanoGPT on the sonnets, AdamW, clip_grad_norm_) or `mlp`
(examples/digits_mlp.py's MLP on scikit-learn's digits, Adam). Every rank builds the model from
its own seed (so only DDP's broadcast from rank 0 makes the replicas equal), trains it for 20
steps on its share of each global batch, and checks after every backward that all ranks hold
bit-identical gradients; rank 0 trains the same model alone on the whole global batches and
checks losses and final parameters (float64 within 1e-10, float32 within 1e-5), in float64 and
in float32. With `mlp`, then the features: no_sync() gradient accumulation, find_unused_parameters, gradient_as_bucket_view,
broadcast_buffers, the launch-before-backward-ends timeline, and the errors. Prints
'rank R: K checks passed' at the end; a failure prints its traceback and aborts the job.
"""
from __future__ import annotations

import sys

import numpy as np

import ember
import ember.distributed as dist
from ember import nn
from ember.nn.parallel import DistributedDataParallel as DDP

from worker_support import PROGRAMS, TOL, check, close, report_and_finish, shard
def flat_grads(model) -> np.ndarray:
    return np.concatenate([p.grad.detach().numpy().ravel() for p in model.parameters() if p.grad is not None])


def same_on_every_rank(values: np.ndarray, what: str) -> None:
    """`values` are bit-identical on all ranks (compared with rank 0's, broadcast)."""
    mine = ember.from_numpy(np.ascontiguousarray(values))
    theirs = mine.clone()
    dist.broadcast(theirs, src=0)
    check(np.array_equal(mine.numpy(), theirs.numpy()), f"{what} differ between rank 0 and rank {dist.get_rank()}")


def train_and_compare(program: str, dtype_name: str) -> None:
    dtype = getattr(ember, dtype_name)
    rank, world = dist.get_rank(), dist.get_world_size()
    build, loss_of, make_optimizer, batches, clip = PROGRAMS[program](dtype, dist.get_world_size())

    local = build(seed=100 + rank)                 # only DDP's broadcast makes the replicas equal
    total_mb = sum(p.numel() * p.element_size() for p in local.parameters()) / 2**20
    model = DDP(local, bucket_cap_mb=total_mb / 4)   # a few buckets
    check(len(model.bucket_sizes()) > 1, "the test model should need several buckets")
    same_on_every_rank(np.concatenate([p.detach().numpy().ravel() for p in model.parameters()]),
                       "parameters after construction")
    opt = make_optimizer(model.module)
    losses = []
    for batch in batches:
        opt.zero_grad(set_to_none=True)
        loss = loss_of(model, shard(batch, rank, world))
        loss.backward()
        same_on_every_rank(flat_grads(model.module), "gradients")
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        losses.append(mean.item())
    timeline = [event for _, event in model.last_backward_timeline()]
    first_launch = next(i for i, e in enumerate(timeline) if e.startswith("all_reduce launched"))
    check(first_launch < timeline.index("last gradient ready"),
          f"the first bucket's all-reduce should start before backward ends: {timeline}")

    if rank == 0:                       # the same training in one process, on the whole batches
        alone = build(seed=100)
        opt = make_optimizer(alone)
        for step, batch in enumerate(batches):
            opt.zero_grad(set_to_none=True)
            loss = loss_of(alone, batch)
            loss.backward()
            if clip:
                nn.utils.clip_grad_norm_(alone.parameters(), clip)
            opt.step()
            close(losses[step], loss.item(), TOL[dtype_name], f"{program} {dtype_name} loss at step {step}")
        for (name, p), q in zip(model.module.named_parameters(), alone.parameters()):
            close(p.detach().numpy(), q.detach().numpy(), TOL[dtype_name], f"{program} {dtype_name} {name}")


# ----------------------------------------------------------------------------- the features
def no_sync_accumulates() -> None:
    """Two micro-batches, the first under no_sync: the gradients equal one process's on all four."""
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(0)
    net = nn.Linear(5, 3).double()
    ref = nn.Linear(5, 3).double()
    ref.load_state_dict(net.state_dict())
    model = DDP(net)
    g = np.random.default_rng(11)
    xs = [ember.tensor(g.standard_normal((2 * world, 5))) for _ in range(2)]
    with model.no_sync():
        model(shard((xs[0],), rank, world)[0]).pow(2).mean().backward()
    own = nn.Linear(5, 3).double()                   # this rank's gradient alone: what no_sync must leave
    own.load_state_dict(ref.state_dict())
    own(shard((xs[0],), rank, world)[0]).pow(2).mean().backward()
    close(net.weight.grad.numpy(), own.weight.grad.numpy(), 1e-12, "no_sync leaves the local gradient")
    theirs = net.weight.grad.clone()
    dist.broadcast(theirs, src=0)
    check(rank == 0 or not np.allclose(theirs.numpy(), net.weight.grad.numpy()), "no_sync did not reduce")
    model(shard((xs[1],), rank, world)[0]).pow(2).mean().backward()
    for x in xs:
        ref(x).pow(2).mean().backward()
    close(net.weight.grad.numpy(), ref.weight.grad.numpy(), 1e-12, "no_sync accumulation, then the average")


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Linear(4, 4)
        self.a = nn.Linear(4, 2)
        self.b = nn.Linear(4, 2)
        self.never = nn.Linear(4, 2)

    def forward(self, x, head: str):
        return getattr(self, head)(self.trunk(x))


def unused_parameters() -> None:
    """Rank 0 uses head a, the others head b; `never` is used by nobody and keeps grad None."""
    rank = dist.get_rank()
    ember.manual_seed(0)
    model = DDP(TwoHeads().double(), find_unused_parameters=True)
    x = ember.ones(3, 4, dtype=ember.float64)
    model(x, "a" if rank == 0 else "b").sum().backward()
    m = model.module
    check(m.never.weight.grad is None, "a parameter no rank used keeps grad None")
    check(m.a.weight.grad is not None and m.b.weight.grad is not None, "parameters some rank used get a gradient")
    same_on_every_rank(flat_grads(m), "gradients with unused parameters")

    plain = DDP(TwoHeads().double())                # without find_unused_parameters: torch's error next time
    plain(x, "a").sum().backward()
    try:
        plain(x, "a")
    except RuntimeError as e:
        check("Expected to have finished reduction in the prior iteration" in str(e) and "b.weight" in str(e), str(e))
    else:
        check(False, "a forward after a backward that left parameters without gradient should raise")


def bucket_view_and_buffers() -> None:
    rank = dist.get_rank()
    ember.manual_seed(rank)                          # different buffers on each rank before the broadcast
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).double()
    model = DDP(net, gradient_as_bucket_view=True, broadcast_buffers=True)
    x = ember.tensor(np.random.default_rng(rank).standard_normal((6, 3)))
    model(x).sum().backward()
    grad = net[0].weight.grad
    bucket_storages = {b.flat._storage for b in model.reducer.buckets}
    check(grad._storage in bucket_storages, "gradient_as_bucket_view: .grad lives in a bucket")
    model(x).sum().backward()                        # accumulates in place, in the bucket
    check(net[0].weight.grad._storage in bucket_storages, "the bucket view survives accumulation")
    same_on_every_rank(flat_grads(net), "bucket-view gradients")
    # broadcast_buffers: each training forward first copies rank 0's buffers to every rank (momentum 0
    # keeps the running stats as they were, so what the forward leaves is what it received)
    for broadcast, expected in ((True, 0.0), (False, float(rank))):
        bn = nn.BatchNorm1d(4, momentum=0.0).double()
        model = DDP(bn, broadcast_buffers=broadcast)
        bn.running_mean.fill_(float(rank))
        model(ember.ones(5, 4, dtype=ember.float64)).sum().backward()
        check(bn.running_mean.tolist() == [expected] * 4, f"broadcast_buffers={broadcast}: {bn.running_mean}")


def errors() -> None:
    rank = dist.get_rank()
    try:
        DDP(nn.Linear(3, 2 + (rank > 0)))
    except RuntimeError as e:
        check("DDP expects same model across all ranks" in str(e), str(e))
    else:
        check(False, "different models on the ranks should raise")
    try:
        DDP(nn.Linear(3, 2), device_ids=[0])
    except ValueError as e:
        check("device_ids" in str(e), str(e))
    else:
        check(False, "device_ids with a cpu module should raise")
    frozen = nn.Linear(2, 2).requires_grad_(False)
    try:
        DDP(frozen)
    except RuntimeError as e:
        check("doesn't have any parameter that requires a gradient" in str(e), str(e))
    else:
        check(False, "a module without trainable parameters should raise")


def main() -> None:
    program = sys.argv[1]
    dist.init_process_group("gloo")
    for dtype_name in ("float64", "float32"):
        train_and_compare(program, dtype_name)
    if program == "mlp":
        no_sync_accumulates()
        unused_parameters()
        bucket_view_and_buffers()
        errors()
    report_and_finish()


if __name__ == "__main__":
    main()
