"""ember.memory sizes one rank of a DDP or FSDP job on the meta device, with the 'fake' backend and no
processes started: the prediction of every rank's peak (and its breakdown) matches what
ember.memory.track measures on cpu in the real 2- and 4-rank jobs."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import ember
import ember.distributed as dist
from distributed_support import RANK_ENV, WORKERS, launch

WORKER = str(WORKERS / "memory_prediction.py")


def _ranks(output: str) -> dict[int, tuple[int, dict]]:
    return {int(r): (int(peak), json.loads(parts))
            for r, peak, parts in re.findall(r"rank (\d+): peak (\d+) at_peak (\{[^}]*\})", output)}


@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
@pytest.mark.parametrize("n", [2, 4])
def test_meta_prediction_matches_every_rank(mpi_job, mode, n):
    measured = launch(n, WORKER, mode, "cpu", timeout=300)
    assert measured.returncode == 0, measured.stdout + measured.stderr
    real = _ranks(measured.stdout)
    assert sorted(real) == list(range(n)), measured.stdout
    for rank in range(n):
        predicted = subprocess.run([sys.executable, WORKER, mode, "meta", str(rank), str(n)], capture_output=True,
                                   text=True, timeout=300, env=RANK_ENV)
        assert predicted.returncode == 0, predicted.stderr
        (peak, parts), = _ranks(predicted.stdout).values()
        assert abs(peak - real[rank][0]) <= 0.03 * real[rank][0], (rank, peak, real[rank])
        assert parts == real[rank][1], (rank, parts, real[rank][1])


@pytest.fixture
def fake():
    """This process as rank 1 of a 4-rank job of the 'fake' backend."""
    dist.init_process_group("fake", rank=1, world_size=4)
    yield
    dist.destroy_process_group()


def _meta(*shape, dtype=ember.float32):
    return ember.empty(*shape, dtype=dtype, device="meta")


def test_fake_backend_group_and_data(fake):
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (1, 4, "fake")
    t = ember.ones(3)
    assert dist.all_reduce(t) is None and t.tolist() == [1.0, 1.0, 1.0]          # no data moves
    work = dist.all_reduce(t, async_op=True)
    assert work.is_completed() and work.wait() and work.result()[0] is t
    sub = dist.new_group([1, 3])
    assert (dist.get_rank(sub), dist.get_world_size(sub)) == (0, 2)
    outside = dist.new_group([0, 2])
    with pytest.warns(UserWarning, match="does not belong to the given group") as caught:
        assert dist.all_reduce(t, group=outside) is None
        assert dist.broadcast_object_list([1], src=0, group=outside) is None
    assert len(caught) == 2                                                   # one warning per call


def test_fake_backend_rank_must_lie_in_the_world():
    with pytest.raises(ValueError, match="0 <= rank < world_size"):
        dist.init_process_group("fake", rank=4, world_size=4)
    assert not dist.is_initialized()


def test_fake_backend_runs_every_call_on_meta_tensors(fake):
    """Rank 1 of 4 with arguments a real job accepts: every call completes at once, on meta tensors."""
    m = _meta
    calls = [lambda: dist.all_reduce(m(2, 3), op=dist.ReduceOp.MAX),
             lambda: dist.reduce(m(2), dst=0), lambda: dist.broadcast(m(2), src=3),
             lambda: dist.all_gather_into_tensor(m(8), m(2)), lambda: dist.reduce_scatter_tensor(m(2), m(8)),
             lambda: dist.all_gather([m(3), m(2), m(1), m(3)], m(2)),
             lambda: dist.reduce_scatter(m(2), [m(1), m(2), m(3), m(4)]),
             lambda: dist.gather(m(2), [m(2), m(2), m(5), m(1)], dst=1), lambda: dist.gather(m(2), dst=0),
             lambda: dist.scatter(m(2), src=0), lambda: dist.scatter(m(2), [m(2)] * 4, src=1),
             lambda: dist.all_to_all_single(m(6, 2), m(8, 2), [1, 3, 2, 0], [2, 2, 2, 2]),
             lambda: dist.all_to_all([m(1)] * 4, [m(3)] * 4), lambda: dist.barrier(),
             lambda: dist.all_reduce(m(4, dtype=ember.bool), op=dist.ReduceOp.BAND),
             lambda: dist.send(m(2), dst=0)]
    for call in calls:
        assert call() is None
    assert dist.recv(m(2), src=3) == 3 and dist.recv(m(2)) == 2                  # none named: the next rank
    work = dist.irecv(m(2), group_src=0)
    assert work.wait() and work.source_rank() == 0
    assert dist.isend(m(2), dst=2).is_completed()
    assert dist.all_gather_into_tensor(m(8), m(2), async_op=True).is_completed()


M = _meta
CHECKS = {
    "all_gather_into_tensor size": (lambda: dist.all_gather_into_tensor(M(7), M(2)), ValueError,
                                    r"all_gather_into_tensor: output tensor must be world_size \(4\) times the input"),
    "reduce_scatter_tensor size": (lambda: dist.reduce_scatter_tensor(M(2), M(7)), ValueError,
                                   r"reduce_scatter_tensor: input tensor must be world_size \(4\) times the output"),
    "all_gather list length": (lambda: dist.all_gather([M(2)] * 3, M(2)), ValueError,
                               r"all_gather: `tensor_list` must have world_size \(4\) tensors, got 3"),
    "all_gather own slot": (lambda: dist.all_gather([M(2), M(5), M(2), M(2)], M(2)), ValueError,
                            r"tensor_list\[1\] has 5 elements but this rank's tensor has 2"),
    "all_gather dtypes": (lambda: dist.all_gather([M(2)] * 4, M(2, dtype=ember.float64)), ValueError,
                          "tensors must all have the same dtype"),
    "reduce_scatter list": (lambda: dist.reduce_scatter(M(2), [M(2)] * 3), ValueError,
                            r"input_list must have world_size \(4\) tensors, got 3"),
    "all_to_all lists": (lambda: dist.all_to_all([M(2)] * 4, [M(2)] * 3), ValueError,
                         r"`input_tensor_list` must have world_size \(4\) tensors"),
    "all_to_all_single splits": (lambda: dist.all_to_all_single(M(8), M(8), [1, 2, 3, 1]), RuntimeError,
                                 "Split sizes doesn't match"),
    "all_to_all_single even": (lambda: dist.all_to_all_single(M(6), M(6)), ValueError, "must divide evenly"),
    "broadcast src": (lambda: dist.broadcast(M(2), src=4), ValueError, r"global rank 4 is not part of group"),
    "reduce group_dst": (lambda: dist.reduce(M(2), group_dst=9), ValueError, "group rank 9 is out of range"),
    "both ranks": (lambda: dist.broadcast(M(2), src=0, group_src=0), ValueError, "Can't specify both"),
    "op type": (lambda: dist.all_reduce(M(2), op="sum"), ValueError, "op must be a ReduceOp"),
    "bool AVG": (lambda: dist.all_reduce(M(2, dtype=ember.bool), op=dist.ReduceOp.AVG), ValueError,
                 "ReduceOp.AVG is not defined on bool tensors"),
    "float BAND": (lambda: dist.reduce(M(2), dst=0, op=dist.ReduceOp.BAND), ValueError,
                   "needs an integer or bool tensor"),
    "PREMUL_SUM": (lambda: dist.reduce_scatter_tensor(M(1), M(4), op=dist.ReduceOp.PREMUL_SUM), ValueError,
                   "PREMUL_SUM is not supported"),
    "gather_list off destination": (lambda: dist.gather(M(2), [M(2)] * 4, dst=0), ValueError,
                                    "must NOT be specified on non-destination ranks"),
    "gather_list on destination": (lambda: dist.gather(M(2), dst=1), ValueError,
                                   "must be specified on destination rank"),
    "scatter_list on source": (lambda: dist.scatter(M(2), src=1), ValueError, "must be specified on source rank"),
    "send to self": (lambda: dist.send(M(2), dst=1), ValueError, "Invalid destination rank"),
    "recv from self": (lambda: dist.irecv(M(2), group_src=1), ValueError, "Invalid source rank"),
    "isend dst": (lambda: dist.isend(M(2), dst=7), ValueError, "global rank 7 is not part of group"),
    "not a tensor": (lambda: dist.broadcast([1.0], src=0), TypeError, "Expected parameter `tensor` of type Tensor"),
    "not a tensor in a list": (lambda: dist.all_gather([M(2)] * 3 + [1.0], M(2)), TypeError,
                               "Expected parameter `tensor_list` of type Tensor"),
    "sparse": (lambda: dist.all_reduce(ember.ones(2).to_sparse()), RuntimeError, "sparse tensor"),
    "all_gather_object list": (lambda: dist.all_gather_object([None] * 3, 1), ValueError,
                               r"object_list must have world_size \(4\) items"),
    "gather_object list": (lambda: dist.gather_object(1, None, dst=1), ValueError,
                           "object_gather_list must be a list of world_size"),
    "scatter_object_list output": (lambda: dist.scatter_object_list([], [1, 2, 3, 4], src=1), ValueError,
                                   "list of size at least 1"),
    "object src": (lambda: dist.broadcast_object_list([1], src=5), ValueError, "global rank 5 is not part of group"),
}


@pytest.mark.parametrize("case", CHECKS)
def test_fake_backend_checks_as_the_real_collectives(fake, case):
    call, error, message = CHECKS[case]
    with pytest.raises(error, match=message):
        call()


def test_fake_backend_object_collectives(fake):
    """What rank 1 of 4 can know of the other ranks' objects (see ember/distributed/fake.py)."""
    gathered = [None] * 4
    dist.all_gather_object(gathered, {"rank": 1})
    assert gathered == [{"rank": 1}] * 4                            # as if every rank had passed it
    mine = ["untouched"]
    dist.gather_object("state of rank 1", mine, dst=0)              # not the destination: nothing changes
    assert mine == ["untouched"]
    slots = ["x"] * 4
    dist.gather_object("state of rank 1", slots, dst=1)
    assert slots == [None, "state of rank 1", None, None]          # the others' objects are unknowable
    config = [{"lr": 0.1}, (3, 4)]
    dist.broadcast_object_list(config, src=0)                       # not the source: keeps its own list
    assert config == [{"lr": 0.1}, (3, 4)]
    with pytest.raises(ValueError, match="its own object_list holds only None"):
        dist.broadcast_object_list([None, None], src=0)
    dist.broadcast_object_list([None], src=1)                       # the source's own list is fine
    out = [None]
    dist.scatter_object_list(out, ["a", "b", "c", "d"], src=0)
    assert out == ["b"]
    dist.scatter_object_list(out, ["e", "f", "g", "h"], src=1)
    assert out == ["f"]
    with pytest.raises(ValueError, match="cannot receive the objects of the source rank 0"):
        dist.scatter_object_list(out, None, src=0)
    with pytest.raises(ValueError, match=r"scatter_object_input_list must have world_size \(4\) items on the source"):
        dist.scatter_object_list(out, ["a"], src=1)


def test_fake_backend_starts_no_mpi():
    """A script running collectives of every kind on the fake backend never imports mpi4py."""
    script = (
        "import sys, ember, ember.distributed as dist\n"
        "dist.init_process_group('fake', rank=2, world_size=3)\n"
        "t = ember.empty(6, device='meta')\n"
        "dist.all_reduce(t); dist.all_gather_into_tensor(t, t[:2]); dist.barrier(); dist.send(t, dst=0)\n"
        "dist.all_gather_object([None] * 3, 1); dist.recv(t)\n"
        "dist.destroy_process_group()\n"
        "print('mpi4py' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=RANK_ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_zero_redundancy_optimizer_steps_on_the_fake_backend(fake):
    """DDP with ZeroRedundancyOptimizer(AdamW) runs training steps on meta as rank 1 of 4, holding optimizer
    state for its own share of the parameters only."""
    from ember.distributed.optim import ZeroRedundancyOptimizer
    from ember.nn.parallel import DistributedDataParallel as DDP

    with ember.device("meta"):
        model = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(), ember.nn.Linear(16, 4))
    model = DDP(model)
    opt = ZeroRedundancyOptimizer(model.parameters(), ember.optim.AdamW, lr=1e-3)
    x = ember.empty(5, 8, device="meta")
    for _ in range(2):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    share = [p for g in opt.optim.param_groups for p in g["params"]]
    assert 0 < len(share) < 4 and set(opt.optim.state) == set(share)
    assert all(s["exp_avg"].device.type == "meta" for s in opt.optim.state.values())
