"""Run under `mpiexec -n N` by tests/test_zero.py: ZeroRedundancyOptimizer across processes.

    python zero_training.py TORCH_PORT

Every rank, in float64:

* training: examples/digits_mlp.py's MLP under DistributedDataParallel with
  ZeroRedundancyOptimizer(AdamW) for 20 steps equals one process with plain AdamW on the whole
  batches (1e-10). Each rank keeps AdamW state for exactly its own share of the parameters; the
  shares are disjoint, cover the model, and the largest holds at most 1/N of all the parameters'
  bytes plus the largest parameter. The state consolidated onto rank 0 equals the single process's
  state_dict (the other ranks' state_dict() raises), and loaded on every rank into a fresh
  ZeroRedundancyOptimizer it continues exactly as the single process does.
* lr_scheduler: StepLR on the wrapper sets the local optimizer's lr for each step, and the
  training equals one process's AdamW under the same StepLR.
* against torch: the same model (two parameter groups, equal-sized parameters, a group added after
  two steps) stepped by torch's ZeroRedundancyOptimizer (on a gloo group at TORCH_PORT) and by
  ember's, with gradients that differ per rank, so each parameter ends as its owner's update: the
  partition, the parameters after every step (1e-12), the consolidated state and the error of a
  rank that did not consolidate match; on the default group, then on a subgroup whose group ranks
  differ from the global ones.
* mixed dtypes: float64 and float32 parameters (which torch refuses), a rank owning nothing (of
  four) and parameters_as_bucket_view=True give one process's AdamW result.
* errors: the constructor's against torch's; overlap_with_ddp=True raises NotImplementedError.

Prints 'rank R: K checks passed' at the end; a failure prints its traceback and aborts the job.
"""
from __future__ import annotations

import os
import sys
from itertools import chain

import numpy as np
import torch
import torch.distributed
from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZeRO

import ember
import ember.distributed as dist
from ember.distributed.optim import ZeroRedundancyOptimizer
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.optim import AdamW
from ember.optim.lr_scheduler import StepLR

from worker_support import PROGRAMS, TOL, check, close, report_and_finish, shard

TORCH_TOL = 1e-12


def flat(model) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])


def state_bytes(optimizer) -> int:
    """Bytes of an optimizer's per-parameter state tensors (AdamW: exp_avg, exp_avg_sq), `step` aside."""
    return sum(t.numel() * t.element_size() for s in optimizer.state.values() for k, t in s.items() if k != "step")


def train(model, optimizer, loss_of, batches, rank: int = 0, world: int = 1) -> None:
    for batch in batches:
        optimizer.zero_grad()
        loss_of(model, shard(batch, rank, world)).backward()
        optimizer.step()


def same_state_dict(ours: dict, reference: dict, what: str) -> None:
    """Equal param_groups, and the same state entries with values within float64's TOL."""
    check(ours["param_groups"] == reference["param_groups"],
          f"{what}: param_groups {ours['param_groups']} != {reference['param_groups']}")
    check(sorted(ours["state"]) == sorted(reference["state"]), f"{what}: state indices differ")
    for i, entry in reference["state"].items():
        check(sorted(ours["state"][i]) == sorted(entry), f"{what}: state {i} keys differ")
        for key, value in entry.items():
            close(ours["state"][i][key].numpy(), value.numpy(), TOL["float64"], f"{what}: state {i} {key}")


# ----------------------------------------------------------------------------- against one process
def check_shares(zero, model, reference) -> None:
    """Each rank's AdamW state covers exactly its share; the shares partition the model within the bound."""
    world = dist.get_world_size()
    params = list(model.parameters())
    index = {id(p): i for i, p in enumerate(params)}
    mine = [p for g in zero.optim.param_groups for p in g["params"]]
    check({id(p) for p in zero.optim.state} == {id(p) for p in mine}, "the local state is for this rank's share only")
    mine_bytes = sum(p.numel() * p.element_size() for p in mine)
    check(state_bytes(zero.optim) == 2 * mine_bytes, f"AdamW state of the share: {state_bytes(zero.optim)} bytes")
    shares = [None] * world
    dist.all_gather_object(shares, (sorted(index[id(p)] for p in mine), mine_bytes, state_bytes(zero.optim)))
    check(sorted(chain.from_iterable(s[0] for s in shares)) == list(range(len(params))),
          f"the shares must be disjoint and cover the model: {[s[0] for s in shares]}")
    check(all(s[0] for s in shares), "every rank owns some parameter")
    check(sum(s[2] for s in shares) == state_bytes(reference), "the shards add up to the single process's state")
    total = sum(p.numel() * p.element_size() for p in params)
    largest = max(p.numel() * p.element_size() for p in params)
    check(max(s[1] for s in shares) <= total / world + largest, f"share bytes {[s[1] for s in shares]}")


def training_equals_one_process() -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    build, loss_of, _, batches, _ = PROGRAMS["mlp"](ember.float64, world)
    model = DDP(build(seed=100 + rank))          # only DDP's broadcast makes the replicas equal
    zero = ZeroRedundancyOptimizer(model.parameters(), AdamW, lr=2e-3)
    train(model, zero, loss_of, batches, rank, world)
    alone = build(seed=100)
    reference = AdamW(alone.parameters(), lr=2e-3)
    train(alone, reference, loss_of, batches)
    close(flat(model.module), flat(alone), TOL["float64"], "parameters after 20 steps")
    check_shares(zero, model.module, reference)

    zero.consolidate_state_dict(to=0)
    if rank == 0:
        same_state_dict(zero.state_dict(), reference.state_dict(), "consolidated state")
    else:
        try:
            zero.state_dict()
        except RuntimeError as e:
            check(f"consolidate_state_dict(to={rank})" in str(e), str(e))
        else:
            check(False, "state_dict() on a rank that did not consolidate should raise")

    saved = [zero.state_dict() if rank == 0 else None]
    dist.broadcast_object_list(saved, src=0)
    fresh = ZeroRedundancyOptimizer(model.parameters(), AdamW, lr=0.5)
    fresh.load_state_dict(saved[0])
    check(fresh.param_groups[0]["lr"] == fresh.optim.param_groups[0]["lr"] == 2e-3, "the loaded lr")
    check({id(p) for p in fresh.optim.state} == {id(p) for p in zero.optim.state}, "loaded state: the share only")
    train(model, fresh, loss_of, batches[:3], rank, world)
    train(alone, reference, loss_of, batches[:3])
    close(flat(model.module), flat(alone), TOL["float64"], "parameters after loading and 3 more steps")


def lr_scheduler() -> None:
    """Every rank takes the whole batch (equal gradients), so ZeRO + StepLR must equal AdamW + StepLR."""
    build, loss_of, _, batches, _ = PROGRAMS["mlp"](ember.float64, 1)
    models = []
    for make in (lambda ps: ZeroRedundancyOptimizer(ps, AdamW, lr=0.01), lambda ps: AdamW(ps, lr=0.01)):
        model = build(seed=5)
        optimizer = make(model.parameters())
        scheduler = StepLR(optimizer, step_size=1, gamma=0.5)
        for step, batch in enumerate(batches[:4]):
            train(model, optimizer, loss_of, [batch])
            if isinstance(optimizer, ZeroRedundancyOptimizer):
                lrs = [g["lr"] for g in optimizer.optim.param_groups]
                check(lrs == [0.01 * 0.5 ** step], f"local lr at step {step}: {lrs}")
            scheduler.step()
        models.append(model)
    close(flat(models[0]), flat(models[1]), TOL["float64"], "ZeRO + StepLR against AdamW + StepLR")


# ----------------------------------------------------------------------------- against torch
def values(t) -> np.ndarray:
    return np.array(t.detach().tolist(), dtype=np.float64)


def deterministic(lib, module):
    """float64 parameters of fixed values (the same in both libraries)."""
    module = module.double()
    with lib.no_grad():
        for i, p in enumerate(module.parameters()):
            v = 0.5 * np.sin(np.arange(p.numel()) * 0.7 + 1.3 * i)
            p.copy_(lib.tensor(v.tolist(), dtype=lib.float64).reshape(p.shape))
    return module


def zero_run(lib, zero_class, group) -> dict:
    """Four steps (a group added after two) with per-rank gradients on `group`; what matters, recorded."""
    nn, rank, last = lib.nn, lib.distributed.get_rank(group), lib.distributed.get_world_size(group) - 1
    body = deterministic(lib, nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                                            nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4)))
    head = deterministic(lib, nn.Linear(4, 3))
    names = {id(p): n for n, p in chain(body.named_parameters(), (("head." + n, p) for n, p in head.named_parameters()))}
    ps = list(body.parameters())
    zero = zero_class([{"params": ps[:4], "lr": 0.01}, {"params": ps[4:], "lr": 0.02, "weight_decay": 0.1}],
                      optimizer_class=lib.optim.AdamW, process_group=group, lr=0.005, betas=(0.8, 0.95))
    record = {}

    def partition(label):
        record[label] = [[[names[id(p)] for p in g["params"]] for g in groups] for groups in zero._partition_parameters()]

    partition("partition")
    for step in range(4):
        if step == 2:
            zero.add_param_group({"params": list(head.parameters()), "lr": 0.05})
            partition("partition after add_param_group")
        x = np.random.default_rng([step, rank]).standard_normal((5, 6))
        out = body(lib.tensor(x.tolist(), dtype=lib.float64))
        zero.zero_grad()
        (head(out) if step >= 2 else out).pow(2).mean().backward()
        zero.step()
        record[f"step {step}"] = {names[id(p)]: values(p) for p in chain(ps, head.parameters())}
        record[f"step {step} lr"] = [g["lr"] for g in zero.param_groups]
    zero.consolidate_state_dict(to=last)
    if rank == last:
        full = zero.state_dict()
        record["state"] = {i: {k: values(v) for k, v in s.items()} for i, s in full["state"].items()}
        record["groups"] = [{k: g[k] for k in ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "params")}
                            for g in full["param_groups"]]
    else:
        try:
            zero.state_dict()
        except RuntimeError as e:
            record["state_dict error"] = str(e)
    return record


def differences(ours, theirs, where: str = "") -> list[str]:
    """Where two records differ: arrays beyond TORCH_TOL (relative to 1 + |torch's|), anything else unequal."""
    if isinstance(theirs, dict):
        if not isinstance(ours, dict) or sorted(ours, key=str) != sorted(theirs, key=str):
            return [f"{where}: keys {sorted(ours, key=str)} != {sorted(theirs, key=str)}"]
        return [d for k in theirs for d in differences(ours[k], theirs[k], f"{where}/{k}")]
    if isinstance(theirs, np.ndarray):
        err = float(np.max(np.abs(ours - theirs) / (1 + np.abs(theirs)))) if theirs.size else 0.0
        return [] if ours.shape == theirs.shape and err <= TORCH_TOL else [f"{where}: relative difference {err:.3g}"]
    return [] if ours == theirs else [f"{where}: ember {ours!r} != torch {theirs!r}"]


def against_torch() -> None:
    """On the default group, then on a subgroup of ranks 1.. (ranks 0 and 1 of two), whose group ranks are
    not the global ones."""
    world = dist.get_world_size()
    members = list(range(1, world)) if world > 2 else [0, 1]
    runs = [("default group", None, None, world),
            (f"subgroup {members}", torch.distributed.new_group(members), dist.new_group(members), len(members))]
    for label, theirs_group, our_group, size in runs:
        if our_group is not None and dist.get_rank() not in members:
            continue
        theirs = zero_run(torch, TorchZeRO, theirs_group)
        ours = zero_run(ember, ZeroRedundancyOptimizer, our_group)
        problems = differences(ours, theirs)
        check(not problems, f"{label}: ZeroRedundancyOptimizer differs from torch's: " + "; ".join(problems[:6]))
        check(len(ours["partition"]) == size and "step 3" in ours, f"{label}: the record is complete")


def mixed_dtypes() -> None:
    """Parameters of two dtypes (torch refuses them; ember broadcasts each dtype of an owner apart: rank 1 of
    two owns one of each), a rank owning nothing (of four), parameters_as_bucket_view=True: every rank takes
    the same batch, so the result must equal one process's AdamW."""
    results = []
    for wrapped in (True, False):
        ember.manual_seed(3)
        model = ember.nn.Sequential(ember.nn.Linear(3, 4).double(), ember.nn.Linear(4, 2, bias=False))
        params = list(model.parameters())
        optimizer = (ZeroRedundancyOptimizer(params, AdamW, parameters_as_bucket_view=True, lr=0.1) if wrapped
                     else AdamW(params, lr=0.1))
        x = ember.tensor(np.linspace(-1, 1, 15).reshape(5, 3))
        for _ in range(3):
            optimizer.zero_grad()
            model[1](model[0](x).float()).pow(2).sum().backward()
            optimizer.step()
        results.append([p.detach().double().numpy() for p in params])
    for i, (ours, reference) in enumerate(zip(*results)):
        close(ours, reference, TOL["float64"], f"mixed dtypes: parameter {i}")


def constructor_errors() -> None:
    """The same exception class and message as torch's (the library's name aside)."""
    for make in (lambda lib, p: [p], lambda lib, p: p, lambda lib, p: [], lambda lib, p: [p, {"params": [p]}],
                 lambda lib, p: [{"lr": 0.1}]):
        raised = []
        for lib, zero_class in ((torch, TorchZeRO), (ember, ZeroRedundancyOptimizer)):
            p = lib.zeros(3, requires_grad=True)
            try:
                zero_class(make(lib, p), lib.optim.AdamW, lr=0.1)
                raised.append(None)
            except (TypeError, ValueError) as e:
                raised.append((type(e).__name__, str(e).replace(lib.__name__ + ".", "LIB.")))
        check(raised[0] == raised[1], f"constructor error: torch {raised[0]} ember {raised[1]}")
    try:
        ZeroRedundancyOptimizer([ember.zeros(3, requires_grad=True)], AdamW, overlap_with_ddp=True)
    except NotImplementedError as e:
        check("overlap_with_ddp=True" in str(e), str(e))
    else:
        check(False, "overlap_with_ddp=True should raise NotImplementedError")


def main() -> None:
    port = int(sys.argv[1])
    rank, world = int(os.environ["PMI_RANK"]), int(os.environ["PMI_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    training_equals_one_process()
    lr_scheduler()
    against_torch()
    mixed_dtypes()
    constructor_errors()
    torch.distributed.destroy_process_group()
    report_and_finish()


if __name__ == "__main__":
    main()
