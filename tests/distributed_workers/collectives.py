"""Run under `mpiexec -n N` by tests/test_distributed.py: every collective of ember.distributed, with
every reduction and the dtypes where it means something, checked on every rank against a numpy
reference computed here from all ranks' inputs (each rank can make any rank's input: they are
drawn from a generator seeded by the rank). Also async handles, subgroups, staging through a
device whose memory the host reaches by copies (the tests' fakegpu plugin), the errors, and the
DETAIL debug check. Prints 'rank R: K checks passed' at the end; on a failure it prints the
traceback and aborts the whole MPI job so no rank waits forever.
"""
from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import ml_dtypes
import numpy as np

import ember
import ember.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

NP = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32, "uint8": np.uint8,
      "bool": np.bool_, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
FLOATS = ("float32", "float64", "bfloat16", "float16")
CHECKS = [0]


def abort_on_error(kind, value, tb):
    traceback.print_exception(kind, value, tb)
    sys.stderr.flush()
    from mpi4py import MPI
    MPI.COMM_WORLD.Abort(1)


sys.excepthook = abort_on_error


def make(r: int, shape, dtype: str, seed: int = 0) -> np.ndarray:
    """Rank r's input: small integers for the 16-bit floats and integers (sums and products stay
    exact), normal draws for float32/float64, coin flips for bool."""
    rng = np.random.default_rng(1000 * seed + r)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("float32", "float64"):
        return rng.standard_normal(shape).astype(NP[dtype])
    low = 0 if dtype == "uint8" else -4
    return rng.integers(low, 5, shape).astype(NP[dtype])


def tensor(a: np.ndarray, device: str = "cpu"):
    return ember.from_numpy(np.array(a)).to(device)


def check(what: str, got, expected: np.ndarray) -> None:
    arr = got.detach().cpu().numpy() if isinstance(got, ember.Tensor) else np.asarray(got)
    assert arr.shape == expected.shape, f"{what}: shape {arr.shape} != {expected.shape}"
    assert arr.dtype == expected.dtype, f"{what}: dtype {arr.dtype} != {expected.dtype}"
    if expected.dtype in (np.float32, np.float64):
        tol = 1e-5 if expected.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(arr, expected, rtol=tol, atol=tol, err_msg=what)
    else:
        assert np.array_equal(arr.astype(np.float64), expected.astype(np.float64)), f"{what}: {arr} != {expected}"
    CHECKS[0] += 1


def raises(what: str, cls, fn, *needles) -> None:
    try:
        fn()
    except cls as e:
        for needle in needles:
            assert needle in str(e), f"{what}: {needle!r} not in {e}"
        CHECKS[0] += 1
        return
    raise AssertionError(f"{what}: did not raise {cls.__name__}")


def reference(op: str, stack: np.ndarray, dtype: str) -> np.ndarray:
    """op over axis 0 of the ranks' inputs, as ember.distributed defines it per dtype."""
    n = stack.shape[0]
    if dtype == "bool":
        return {"SUM": stack.any(0), "MAX": stack.any(0), "BOR": stack.any(0), "PRODUCT": stack.all(0),
                "MIN": stack.all(0), "BAND": stack.all(0), "BXOR": np.bitwise_xor.reduce(stack, 0)}[op]
    wide = stack.astype(np.float32) if dtype in ("bfloat16", "float16") else stack
    if op == "AVG":
        total = wide.sum(0)
        out = total / n if dtype in FLOATS else np.sign(total) * (np.abs(total) // n)
    else:
        out = {"SUM": lambda: wide.sum(0), "PRODUCT": lambda: wide.prod(0), "MIN": lambda: wide.min(0),
               "MAX": lambda: wide.max(0), "BAND": lambda: np.bitwise_and.reduce(wide, 0),
               "BOR": lambda: np.bitwise_or.reduce(wide, 0), "BXOR": lambda: np.bitwise_xor.reduce(wide, 0)}[op]()
    return np.asarray(out).astype(NP[dtype])


def ops_for(dtype: str) -> list[str]:
    if dtype == "bool":
        return ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
    ops = ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]
    return ops + ["BAND", "BOR", "BXOR"] if dtype not in FLOATS else ops


def reductions(rank: int, n: int) -> None:
    shape = (3, 4)
    for dtype in ("float32", "float64", "int64", "int32", "bfloat16", "float16", "bool"):
        stack = np.stack([make(r, shape, dtype, 1) for r in range(n)])
        for op in ops_for(dtype):
            expected = reference(op, stack, dtype)
            t = tensor(stack[rank])
            version = t._version
            assert dist.all_reduce(t, op=getattr(dist.ReduceOp, op)) is None
            check(f"all_reduce {op} {dtype}", t, expected)
            assert t._version > version, "all_reduce must bump the storage version"
            dst = n - 1
            t = tensor(stack[rank])
            dist.reduce(t, dst=dst, op=getattr(dist.ReduceOp, op))
            check(f"reduce {op} {dtype}", t, expected if rank == dst else stack[rank])
        # reduce_scatter_tensor: each rank's input is n chunks of 3; rank i gets the reduced chunk i
        big = np.stack([make(r, (n * 3,), dtype, 2) for r in range(n)])
        for op in ops_for(dtype)[:5 if dtype != "bool" else 4]:
            out = tensor(np.zeros(3, NP[dtype]))
            dist.reduce_scatter_tensor(out, tensor(big[rank]), op=getattr(dist.ReduceOp, op))
            check(f"reduce_scatter_tensor {op} {dtype}", out, reference(op, big, dtype)[3 * rank:3 * rank + 3])
        out = tensor(np.zeros(3, NP[dtype]))
        dist.reduce_scatter(out, [tensor(c) for c in np.split(big[rank], n)])
        check(f"reduce_scatter {dtype}", out, reference("SUM", big, dtype)[3 * rank:3 * rank + 3])


def non_contiguous(rank: int, n: int) -> None:
    for dtype in ("float64", "bfloat16", "int64"):
        stack = np.stack([make(r, (4, 3), dtype, 3) for r in range(n)])
        base = tensor(stack[rank])
        view = base.t()                                  # (3, 4), not contiguous
        assert not view.is_contiguous()
        version = base._version
        dist.all_reduce(view)
        check(f"all_reduce through a transposed view {dtype}", base, reference("SUM", stack, dtype))
        assert base._version > version
        view = tensor(stack[rank]).t()
        dist.broadcast(view, src=0)
        check(f"broadcast into a transposed view {dtype}", view, stack[0].T)


def copies(rank: int, n: int) -> None:
    for dtype in ("float32", "float64", "int64", "bfloat16", "float16", "bool", "uint8"):
        mine = make(rank, (2, 3), dtype, 4)
        every = [make(r, (2, 3), dtype, 4) for r in range(n)]
        src = n - 1
        t = tensor(mine)
        dist.broadcast(t, src=src)
        check(f"broadcast {dtype}", t, every[src])
        # all_gather: equal sizes, then rank r contributing r+1 rows
        outs = [tensor(np.zeros((2, 3), NP[dtype])) for _ in range(n)]
        dist.all_gather(outs, tensor(mine))
        for r in range(n):
            check(f"all_gather {dtype} [{r}]", outs[r], every[r])
        uneven = [make(r, (r + 1, 2), dtype, 5) for r in range(n)]
        outs = [tensor(np.zeros((r + 1, 2), NP[dtype])) for r in range(n)]
        dist.all_gather(outs, tensor(uneven[rank]))
        for r in range(n):
            check(f"all_gather uneven {dtype} [{r}]", outs[r], uneven[r])
        cat = tensor(np.zeros((2 * n, 3), NP[dtype]))
        dist.all_gather_into_tensor(cat, tensor(mine))
        check(f"all_gather_into_tensor cat {dtype}", cat, np.concatenate(every))
        stacked = tensor(np.zeros((n, 2, 3), NP[dtype]))
        dist.all_gather_into_tensor(stacked, tensor(mine))
        check(f"all_gather_into_tensor stack {dtype}", stacked, np.stack(every))
        # gather to rank 0, scatter from the last rank
        gl = [tensor(np.zeros((2, 3), NP[dtype])) for _ in range(n)] if rank == 0 else None
        dist.gather(tensor(mine), gl, dst=0)
        if rank == 0:
            for r in range(n):
                check(f"gather {dtype} [{r}]", gl[r], every[r])
        pieces = [make(100 + r, (2, 3), dtype, 6) for r in range(n)]
        out = tensor(np.zeros((2, 3), NP[dtype]))
        dist.scatter(out, [tensor(p) for p in pieces] if rank == src else None, src=src)
        check(f"scatter {dtype}", out, pieces[rank])
        # all_to_all_single: equal rows, then rank r sending (j + r) % 2 + 1 rows to rank j
        sent = [make(r, (2 * n, 3), dtype, 7) for r in range(n)]
        out = tensor(np.zeros((2 * n, 3), NP[dtype]))
        dist.all_to_all_single(out, tensor(sent[rank]))
        check(f"all_to_all_single {dtype}", out, np.concatenate([sent[r][2 * rank:2 * rank + 2] for r in range(n)]))
        uneven_all_to_all(rank, n, dtype, tensor, "")


def uneven_all_to_all(rank: int, n: int, dtype: str, make_tensor, label: str) -> None:
    """all_to_all_single and all_to_all with rank r sending (j + r) % 2 + 1 rows to rank j, tensors made by
    `make_tensor` (on the device of the backend under test; nccl_collectives.py runs this on cuda)."""
    rows = [[(j + r) % 2 + 1 for j in range(n)] for r in range(n)]
    sent = [make(r, (sum(rows[r]), 3), dtype, 8) for r in range(n)]
    starts = [np.cumsum([0] + rows[r]) for r in range(n)]
    expected = np.concatenate([sent[r][starts[r][rank]:starts[r][rank + 1]] for r in range(n)])
    out = make_tensor(np.zeros(expected.shape, NP[dtype]))
    dist.all_to_all_single(out, make_tensor(sent[rank]), [rows[r][rank] for r in range(n)], rows[rank])
    check(f"{label}all_to_all_single uneven {dtype}", out, expected)
    outs = [make_tensor(np.zeros(rows[r][rank], NP[dtype])) for r in range(n)]
    dist.all_to_all(outs, [make_tensor(make(rank * n + j, rows[rank][j], dtype, 9)) for j in range(n)])
    for r in range(n):
        check(f"{label}all_to_all {dtype} [{r}]", outs[r], make(r * n + rank, rows[r][rank], dtype, 9))


def point_to_point(rank: int, n: int) -> None:
    right, left = (rank + 1) % n, (rank - 1) % n
    for dtype in ("float32", "int64", "bfloat16"):
        out = tensor(np.zeros(5, NP[dtype]))
        if rank % 2 == 0:
            dist.send(tensor(make(rank, 5, dtype, 10)), dst=right)
            source = dist.recv(out, src=left)
        else:
            source = dist.recv(out)                      # from any rank
            dist.send(tensor(make(rank, 5, dtype, 10)), dst=right)
        assert source == left, (source, left)
        check(f"send/recv {dtype}", out, make(left, 5, dtype, 10))
        out = tensor(np.zeros(5, NP[dtype]))
        works = [dist.irecv(out, src=left, tag=7), dist.isend(tensor(make(rank, 5, dtype, 11)), dst=right, tag=7)]
        for w in reversed(works):
            assert w.wait() is True and w.is_completed()
        assert works[0].source_rank() == left
        check(f"isend/irecv {dtype}", out, make(left, 5, dtype, 11))


def asynchronous(rank: int, n: int) -> None:
    stacks = [np.stack([make(r, (64,), "float64", 20 + k) for r in range(n)]) for k in range(3)]
    ts = [tensor(s[rank]) for s in stacks]
    works = [dist.all_reduce(ts[0], async_op=True), dist.all_reduce(ts[1], op=dist.ReduceOp.MAX, async_op=True)]
    gathered = tensor(np.zeros((n, 64)))
    works.append(dist.all_gather_into_tensor(gathered, ts[2], async_op=True))
    works.append(dist.barrier(async_op=True))
    for w in reversed(works):                            # waited in another order than started
        assert isinstance(w, dist.Work)
        w.wait()
        assert w.is_completed() and w.is_success()
    check("async all_reduce SUM", ts[0], stacks[0].sum(0))
    check("async all_reduce MAX", ts[1], stacks[1].max(0))
    check("async all_gather_into_tensor", gathered, stacks[2])
    t = tensor(make(rank, (8,), "bfloat16", 23))         # staged (bf16 in float32): written when done
    w = dist.all_reduce(t, async_op=True)
    while not w.is_completed():
        pass
    check("async bf16 all_reduce by polling", t, reference("SUM", np.stack([make(r, (8,), "bfloat16", 23)
                                                                            for r in range(n)]), "bfloat16"))
    assert w.result()[0] is t


def objects(rank: int, n: int) -> None:
    objs = [{"rank": rank, "tensor": ember.tensor([float(rank)])} if rank == 1 else None, "x"]
    dist.broadcast_object_list(objs, src=1)
    assert objs[0]["rank"] == 1 and objs[0]["tensor"].tolist() == [1.0] and objs[1] == "x"
    got = [None] * n
    dist.all_gather_object(got, ("from", rank))
    assert got == [("from", r) for r in range(n)]
    got = [None] * n if rank == 0 else None
    dist.gather_object(rank * 10, got, dst=0)
    assert rank != 0 or got == [r * 10 for r in range(n)]
    out = [None]
    dist.scatter_object_list(out, [f"to {r}" for r in range(n)] if rank == n - 1 else None, src=n - 1)
    assert out[0] == f"to {rank}"
    CHECKS[0] += 4


def groups(rank: int, n: int) -> None:
    members = list(range(1, n))                          # every rank but 0
    g = dist.new_group(members)
    backwards = dist.new_group([n - 1, 0])               # sorted: group rank 0 is global rank 0
    if rank == 0:
        assert g is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1 and dist.get_world_size(g) == -1
        import warnings
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            assert dist.all_reduce(tensor(np.ones(2)), group=g) is None
    else:
        assert dist.get_rank(g) == rank - 1 and dist.get_world_size(g) == n - 1
        assert dist.get_process_group_ranks(g) == members and dist.get_global_rank(g, 0) == 1
        assert dist.get_group_rank(g, n - 1) == n - 2 and dist.get_backend(g) == "gloo"
        stack = np.stack([make(r, (3,), "float64", 30) for r in members])
        t = tensor(make(rank, (3,), "float64", 30))
        dist.all_reduce(t, group=g)
        check("subgroup all_reduce", t, stack.sum(0))
        t = tensor(make(rank, (3,), "int64", 31))
        dist.broadcast(t, src=n - 1, group=g)            # a global rank
        check("subgroup broadcast src", t, make(n - 1, (3,), "int64", 31))
        t = tensor(make(rank, (3,), "int64", 31))
        dist.broadcast(t, group=g, group_src=0)          # group rank 0 = global rank 1
        check("subgroup broadcast group_src", t, make(1, (3,), "int64", 31))
        gl = [tensor(np.zeros(3)) for _ in members] if rank == n - 1 else None
        w = dist.gather(tensor(make(rank, (3,), "float64", 32)), gl, group=g, group_dst=n - 2, async_op=True)
        w.wait()
        if rank == n - 1:
            for i, r in enumerate(members):
                check(f"subgroup gather [{i}]", gl[i], make(r, (3,), "float64", 32))
        raises("broadcast from a rank outside the group", ValueError, lambda: dist.broadcast(t, src=0, group=g),
               "global rank 0 is not part of group")
    if rank in (0, n - 1):
        assert dist.get_rank(backwards) == (0 if rank == 0 else 1)
        t = tensor(make(rank, (2,), "float32", 33))
        dist.all_reduce(t, op=dist.ReduceOp.MIN, group=backwards)
        check("two-rank group all_reduce MIN", t, np.minimum(make(0, (2,), "float32", 33),
                                                             make(n - 1, (2,), "float32", 33)))
    dist.barrier()


def staged_device(rank: int, n: int) -> None:
    """A device whose memory the host reaches only by copies (as opencl): staged through host memory."""
    import ember_fakegpu
    ember.backends.register("fakegpu", ember_fakegpu.FakeGPU())
    stack = np.stack([make(r, (2, 3), "float32", 40) for r in range(n)])
    t = tensor(stack[rank], "fakegpu")
    version = t._version
    dist.all_reduce(t)
    assert t.device.type == "fakegpu" and t._version > version
    check("fakegpu all_reduce", t, stack.sum(0))
    out = tensor(np.zeros((n, 2, 3), np.float32), "fakegpu")
    dist.all_gather_into_tensor(out, tensor(stack[rank], "fakegpu"))
    check("fakegpu all_gather_into_tensor", out, stack)
    t = tensor(make(rank, (4,), "bfloat16", 41), "fakegpu")
    dist.broadcast(t, src=0)
    check("fakegpu broadcast bf16", t, make(0, (4,), "bfloat16", 41))


def errors(rank: int, n: int) -> None:
    meta = ember.empty(3, device="meta")
    raises("a meta tensor", RuntimeError, lambda: dist.all_reduce(meta), "meta", "'gloo' backend")
    raises("not a tensor", TypeError, lambda: dist.all_reduce([1.0]), "Expected parameter `tensor`")
    raises("twice", ValueError, lambda: dist.init_process_group("mpi"), "twice")
    x = tensor(np.zeros(2, np.float32))
    raises("all_gather_into_tensor size", ValueError,
           lambda: dist.all_gather_into_tensor(tensor(np.zeros(3, np.float32)), x), "world_size")
    raises("all_gather_into_tensor dtype", ValueError,
           lambda: dist.all_gather_into_tensor(tensor(np.zeros(2 * n)), x), "float64", "float32")
    raises("all_gather list length", ValueError, lambda: dist.all_gather([x], x) if n > 1 else None, "world_size")
    raises("broadcast without src", ValueError, lambda: dist.broadcast(x), "Must specify")
    raises("broadcast with both", ValueError, lambda: dist.broadcast(x, src=0, group_src=0), "both")
    raises("send to self", ValueError, lambda: dist.send(x, dst=rank), "Invalid destination rank")
    raises("gather_list on a non-destination rank", ValueError,
           lambda: dist.gather(x, [x] * n, dst=(rank + 1) % n), "must NOT be specified")
    raises("all_to_all_single bad splits", RuntimeError,
           lambda: dist.all_to_all_single(tensor(np.zeros(n, np.float32)), tensor(np.zeros(n, np.float32)),
                                          [1] * n, [2] * n), "Split sizes")
    raises("AVG on bool", ValueError, lambda: dist.all_reduce(tensor(np.ones(2, bool)), op=dist.ReduceOp.AVG),
           "AVG")
    raises("BAND on floats", ValueError, lambda: dist.all_reduce(x, op=dist.ReduceOp.BAND), "BAND")
    raises("new_group duplicates", ValueError, lambda: dist.new_group([0, 0]), "duplicate")
    raises("rank mismatch", RuntimeError, lambda: (dist.destroy_process_group(),
                                                   dist.init_process_group("mpi", rank=(rank + 1) % n)), "mpiexec")
    dist.init_process_group("gloo")


def debug_detail(rank: int, n: int) -> None:
    """EMBER_DISTRIBUTED_DEBUG=DETAIL: mismatched shapes (or collectives) raise on every rank."""
    dist.destroy_process_group()
    assert not dist.is_initialized()
    os.environ["EMBER_DISTRIBUTED_DEBUG"] = "DETAIL"
    dist.init_process_group("mpi")
    assert dist.get_backend() == "mpi"
    t = tensor(np.ones(2 + rank, np.float32))
    raises("DETAIL shape mismatch", RuntimeError, lambda: dist.all_reduce(t), "Detected mismatch",
           "Rank 0", "TensorShape=[[2]]", "Rank 1", "TensorShape=[[3]]")
    t = tensor(np.ones(2, np.float32))
    raises("DETAIL collective mismatch", RuntimeError,
           lambda: dist.all_reduce(t) if rank == 0 else dist.broadcast(t, src=0), "OpType=all_reduce",
           "OpType=broadcast")
    dist.all_reduce(t)                                   # consistent calls still work
    check("DETAIL all_reduce", t, np.full(2, n, np.float32))
    dist.destroy_process_group()
    del os.environ["EMBER_DISTRIBUTED_DEBUG"]


def main() -> None:
    dist.init_process_group("gloo", init_method="env://")
    rank, n = dist.get_rank(), dist.get_world_size()
    assert dist.is_initialized() and dist.get_backend() == "gloo" and dist.group.WORLD is not None
    for part in (reductions, non_contiguous, copies, point_to_point, asynchronous, objects, groups, staged_device,
                 errors, debug_detail):
        part(rank, n)
    print(f"rank {rank}: {CHECKS[0]} checks passed", flush=True)


if __name__ == "__main__":
    main()
