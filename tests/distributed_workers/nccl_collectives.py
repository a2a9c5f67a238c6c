"""Run under `mpiexec -n N` (N <= the GPUs visible) by tests/test_nccl.py: the 'nccl' backend on cuda
tensors, rank r on cuda:r. Every collective with the reductions NCCL has, on the dtypes cuda holds,
against the numpy references of collectives.py; async handles and the current stream; subgroups;
the errors; then DDP and FSDP training steps against one process. Prints 'rank R: K checks
passed' at the end; a failure prints its traceback and aborts the job.

With one GPU (make gpu-check) N is 1: every call still goes through NCCL's communicator and the
group's stream, and the training steps compare DDP/FSDP over NCCL with the plain model.
"""
from __future__ import annotations

import os

import numpy as np

import ember
import ember.distributed as dist
from ember import nn

from collectives import CHECKS, NP, check, make, raises, reference, uneven_all_to_all

DTYPES = ("float32", "float64", "float16", "int64", "int32", "uint8", "bool")
DEVICE = ["cuda"]


def tensor(a) -> ember.Tensor:
    return ember.from_numpy(np.array(a)).to(DEVICE[0])


def ops_for(dtype: str) -> list[str]:
    """The reductions NCCL serves: no bitwise ones, except BAND/BOR on bool (a logical and/or)."""
    return ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR"] if dtype == "bool" else ["SUM", "AVG", "PRODUCT", "MIN",
                                                                                    "MAX"]


def reductions(rank: int, n: int) -> None:
    for dtype in DTYPES:
        stack = np.stack([make(r, (3, 4), dtype, 1) for r in range(n)])
        for op in ops_for(dtype):
            expected = reference(op, stack, dtype)
            t = tensor(stack[rank])
            version = t._version
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            check(f"nccl all_reduce {op} {dtype}", t, expected)
            assert t._version > version, "all_reduce must bump the storage version"
            t = tensor(stack[rank])
            dist.reduce(t, dst=n - 1, op=getattr(dist.ReduceOp, op))
            check(f"nccl reduce {op} {dtype}", t, expected if rank == n - 1 else stack[rank])
        big = np.stack([make(r, (n * 3,), dtype, 2) for r in range(n)])
        out = tensor(np.zeros(3, NP[dtype]))
        dist.reduce_scatter_tensor(out, tensor(big[rank]), op=dist.ReduceOp.MAX)
        check(f"nccl reduce_scatter_tensor MAX {dtype}", out, reference("MAX", big, dtype)[3 * rank:3 * rank + 3])
        out = tensor(np.zeros(3, NP[dtype]))
        dist.reduce_scatter(out, [tensor(c) for c in np.split(big[rank], n)])
        check(f"nccl reduce_scatter {dtype}", out, reference("SUM", big, dtype)[3 * rank:3 * rank + 3])
    stack = np.stack([make(r, (4, 3), "float64", 3) for r in range(n)])
    base = tensor(stack[rank])
    dist.all_reduce(base.t())                             # a non-contiguous view: copied and written back
    check("nccl all_reduce through a transposed view", base, stack.sum(0))
    z = np.stack([make(r, (3,), "float64", 4) + 1j * make(r, (3,), "float64", 5) for r in range(n)])
    t = tensor(z[rank])
    dist.all_reduce(t)
    check("nccl all_reduce complex128", t.real, z.sum(0).real)
    check("nccl all_reduce complex128 (imaginary)", t.imag, z.sum(0).imag)


def copies(rank: int, n: int) -> None:
    for dtype in DTYPES:
        every = [make(r, (2, 3), dtype, 6) for r in range(n)]
        t = tensor(every[rank])
        dist.broadcast(t, src=n - 1)
        check(f"nccl broadcast {dtype}", t, every[n - 1])
        uneven = [make(r, (r + 1, 2), dtype, 7) for r in range(n)]
        outs = [tensor(np.zeros((r + 1, 2), NP[dtype])) for r in range(n)]
        dist.all_gather(outs, tensor(uneven[rank]))
        for r in range(n):
            check(f"nccl all_gather uneven {dtype} [{r}]", outs[r], uneven[r])
        cat = tensor(np.zeros((2 * n, 3), NP[dtype]))
        dist.all_gather_into_tensor(cat, tensor(every[rank]))
        check(f"nccl all_gather_into_tensor {dtype}", cat, np.concatenate(every))
        gl = [tensor(np.zeros((2, 3), NP[dtype])) for _ in range(n)] if rank == 0 else None
        dist.gather(tensor(every[rank]), gl, dst=0)
        for r in range(n if rank == 0 else 0):
            check(f"nccl gather {dtype} [{r}]", gl[r], every[r])
        pieces = [make(100 + r, (2, 3), dtype, 8) for r in range(n)]
        out = tensor(np.zeros((2, 3), NP[dtype]))
        dist.scatter(out, [tensor(p) for p in pieces] if rank == n - 1 else None, src=n - 1)
        check(f"nccl scatter {dtype}", out, pieces[rank])
        uneven_all_to_all(rank, n, dtype, tensor, "nccl ")
    if n > 1:
        right, left = (rank + 1) % n, (rank - 1) % n
        out = tensor(np.zeros(5, np.float32))
        works = [dist.irecv(out, src=left), dist.isend(tensor(make(rank, 5, "float32", 11)), dst=right)]
        for w in works:
            w.wait()
        assert works[0].source_rank() == left
        check("nccl isend/irecv", out, make(left, 5, "float32", 11))


def asynchronous(rank: int, n: int) -> None:
    """Async handles: the result is right once the current stream waited, and a kernel queued
    after wait() sees it (stream order, no host synchronisation needed)."""
    stack = np.stack([make(r, (1 << 16,), "float32", 12) for r in range(n)])
    t = tensor(stack[rank])
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    work.wait()
    doubled = t * 2                                      # queued on the current stream after the wait
    check("nccl async all_reduce, then a kernel", doubled, stack.sum(0) * 2)
    work = dist.broadcast(tensor(stack[rank]), src=0, async_op=True)
    while not work.is_completed():
        pass
    assert work.is_success()
    dist.barrier()
    CHECKS[0] += 1


def groups(rank: int, n: int) -> None:
    solo = dist.new_group([n - 1])
    if rank == n - 1:
        assert dist.get_backend(solo) == "nccl"
        t = tensor(np.arange(3.0))
        dist.all_reduce(t, group=solo)
        check("nccl one-rank subgroup", t, np.arange(3.0))
    host = dist.new_group(backend="gloo")               # host tensors beside a 'nccl' world
    t = ember.ones(2)
    dist.all_reduce(t, group=host)
    check("gloo subgroup in a nccl job", t, np.full(2, float(n), np.float32))
    got = [None] * n
    dist.all_gather_object(got, rank)
    assert got == list(range(n))
    CHECKS[0] += 1


def errors(rank: int, n: int) -> None:
    raises("a cpu tensor", RuntimeError, lambda: dist.all_reduce(ember.ones(2)), "'nccl' backend serves cuda",
           "cpu")
    raises("BXOR", ValueError, lambda: dist.all_reduce(tensor(np.ones(2, np.int64)), op=dist.ReduceOp.BXOR),
           "BXOR", "NCCL")
    raises("recv from any source", RuntimeError, lambda: dist.recv(tensor(np.zeros(2))), "any source")


def training(rank: int, n: int) -> None:
    """5 DDP steps and 5 FSDP steps on cuda over NCCL, each rank on its share of every batch,
    against one process on the whole batches (float64, within 1e-10)."""
    from ember.distributed.fsdp import fully_shard
    from ember.nn.parallel import DistributedDataParallel as DDP

    g = np.random.default_rng(5)
    batches = [(tensor(g.standard_normal((4 * n, 8))), tensor(g.standard_normal((4 * n, 2)))) for _ in range(5)]

    def build():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2)).double().to(DEVICE[0])

    def train(model, params, whole: bool) -> list[float]:
        opt = ember.optim.Adam(params, lr=1e-2)
        losses = []
        for x, y in batches:
            if not whole:
                x, y = x[rank * 4:(rank + 1) * 4], y[rank * 4:(rank + 1) * 4]
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            mean = loss.detach().clone()
            if not whole:
                dist.all_reduce(mean, op=dist.ReduceOp.AVG)
            losses.append(mean.item())
        return losses

    plain = build()
    alone = train(plain, plain.parameters(), True)
    ddp = DDP(build(), device_ids=[ember.cuda.current_device()])
    losses = train(ddp, ddp.parameters(), False)
    np.testing.assert_allclose(losses, alone, rtol=1e-10, atol=1e-12, err_msg="DDP over NCCL")
    CHECKS[0] += 1
    sharded = build()
    for layer in (sharded[0], sharded[2]):
        fully_shard(layer)
    fully_shard(sharded)
    losses = train(sharded, sharded.parameters(), False)
    np.testing.assert_allclose(losses, alone, rtol=1e-10, atol=1e-12, err_msg="FSDP over NCCL")
    CHECKS[0] += 1


def main() -> None:
    local = int(os.environ.get("LOCAL_RANK", os.environ.get("PMI_RANK", 0)))
    ember.cuda.set_device(local)
    DEVICE[0] = f"cuda:{local}"
    dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    assert dist.get_backend() == "nccl" and dist.is_nccl_available()
    for part in (reductions, copies, asynchronous, groups, errors, training):
        part(rank, n)
    dist.barrier()
    print(f"rank {rank}: {CHECKS[0]} checks passed", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
