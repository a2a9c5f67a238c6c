"""Run under `mpiexec -n N` by tests/test_fsdp.py: fully_shard against one process.

    python fsdp_training.py train MODEL       # MODEL: gpt or mlp (see worker_support.py)
    python fsdp_training.py save DIR          # 10 steps of the GPT, a sharded checkpoint, the next loss
    python fsdp_training.py load DIR          # the checkpoint on this world size (1: no process group)

`train`: every rank builds the same model (fully_shard needs equal values), shards each block (the
GPT) or each Linear (the MLP) and the root, trains 20 steps on its share of each global batch,
in float64 and float32, and rank 0 compares the losses and the gathered parameters with one
process trained on the whole batches (float64 within 1e-10, float32 within 1e-5). It also checks
that a rank's parameter + gradient + optimizer-state bytes after a step, measured by
ember.memory.track, are at most 1/N of one process's plus 5%. `save` and `load` print
'next loss L' (rank 0): the loss of the 11th global batch under the saved weights. `train`
prints 'rank R: K checks passed' at the end.
"""
from __future__ import annotations

import sys

import numpy as np

import ember
import ember.distributed as dist
import ember.distributed.checkpoint as dcp
from ember import nn
from ember.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, set_model_state_dict
from ember.distributed.fsdp import fully_shard
from worker_support import PROGRAMS, TOL, check, close, report_and_finish, shard

STATE = ("parameters", "gradients", "optimizer_state")


def shard_model(model, program: str):
    units = model.transformer.h if program == "gpt" else [m for m in model if isinstance(m, nn.Linear)]
    for unit in units:
        fully_shard(unit)
    return fully_shard(model)


def step(model, opt, loss_of, batch, clip: float, rank: int, world: int) -> float:
    opt.zero_grad(set_to_none=True)
    loss = loss_of(model, shard(batch, rank, world))
    loss.backward()
    if clip:
        model.clip_grad_norm_(clip)
    opt.step()
    return global_mean(loss)


def global_mean(loss) -> float:
    mean = loss.detach().clone()
    if dist.is_initialized():
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
    return mean.item()


def state_bytes(model, opt, loss_of, batch) -> int:
    """Parameter + gradient + optimizer-state bytes live after one more training step."""
    with ember.memory.track(model=model, optimizer=opt) as mem:
        opt.zero_grad(set_to_none=True)
        loss_of(model, batch).backward()
        opt.step()
    return sum(mem.breakdown[c]["at_end"] for c in STATE)


def train_and_compare(program: str, dtype_name: str) -> None:
    dtype = getattr(ember, dtype_name)
    rank, world = dist.get_rank(), dist.get_world_size()
    build, loss_of, make_optimizer, batches, clip = PROGRAMS[program](dtype, world)
    model = shard_model(build(seed=100), program)
    opt = make_optimizer(model)
    losses = [step(model, opt, loss_of, b, clip, rank, world) for b in batches]
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    sharded_bytes = state_bytes(model, opt, loss_of, shard(batches[0], rank, world))
    whole = [None]
    if rank == 0:
        whole[0] = compare_with_one_process(program, dtype_name, losses, full)
    dist.broadcast_object_list(whole, src=0)
    check(sharded_bytes <= whole[0] / world * 1.05,
          f"{program} {dtype_name}: {sharded_bytes} bytes of state on rank {rank}, one process {whole[0]} "
          f"(limit {whole[0] / world * 1.05:.0f})")
    print(f"{program} {dtype_name}: state bytes {sharded_bytes} of {whole[0]} on rank {rank} of {world}", flush=True)


def compare_with_one_process(program: str, dtype_name: str, losses: list, full: dict) -> int:
    """Train the same model alone on the whole batches and compare; returns its state bytes after a step."""
    build, loss_of, make_optimizer, batches, clip = PROGRAMS[program](getattr(ember, dtype_name),
                                                                      dist.get_world_size())
    alone = build(seed=100)
    opt = make_optimizer(alone)
    for i, batch in enumerate(batches):
        opt.zero_grad(set_to_none=True)
        loss = loss_of(alone, batch)
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(alone.parameters(), clip)
        opt.step()
        close(losses[i], loss.item(), TOL[dtype_name], f"{program} {dtype_name} loss at step {i}")
    for name, value in alone.state_dict().items():
        close(full[name].numpy(), value.numpy(), TOL[dtype_name], f"{program} {dtype_name} {name}")
    return state_bytes(alone, opt, loss_of, shard(batches[0], 0, dist.get_world_size()))


def checkpoint(mode: str, directory: str) -> None:
    distributed = mode == "save" or int(__import__("os").environ.get("PMI_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    build, loss_of, make_optimizer, batches, clip = PROGRAMS["gpt"](ember.float64, 4)
    model = build(seed=100)
    if distributed:
        model = shard_model(model, "gpt")
    if mode == "save":
        opt = make_optimizer(model)
        for batch in batches[:10]:
            step(model, opt, loss_of, batch, clip, rank, world)
        dcp.save(get_model_state_dict(model), checkpoint_id=directory)
    else:
        state = get_model_state_dict(model)
        dcp.load(state, checkpoint_id=directory)
        set_model_state_dict(model, state)
    with ember.no_grad():
        loss = global_mean(loss_of(model, shard(batches[10], rank, world)))
    if rank == 0:
        print(f"next loss {loss!r}", flush=True)
    if distributed:
        dist.destroy_process_group()


def wrapper_and_mixed_precision() -> None:
    """FullyShardedDataParallel (FSDP1's API) with an auto-wrap policy equals fully_shard by hand; a
    bfloat16 MixedPrecision gathers bfloat16 parameters and still trains."""
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision, StateDictType
    from ember.distributed.fsdp.wrap import ModuleWrapPolicy

    rank, world = dist.get_rank(), dist.get_world_size()
    build, loss_of, make_optimizer, batches, _ = PROGRAMS["mlp"](ember.float64, world)
    by_hand, wrapped = shard_model(build(seed=5), "mlp"), FSDP(build(seed=5), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
    check(sum(isinstance(m, type(by_hand)) or hasattr(m, "_fsdp_group") for m in wrapped.modules()) == 4,
          "the policy makes the three Linear layers and the root units")
    for model in (by_hand, wrapped):
        opt = make_optimizer(model)
        model.losses = [step(model, opt, loss_of, b, 0.0, rank, world) for b in batches[:5]]
    check(by_hand.losses == wrapped.losses, f"{by_hand.losses} != {wrapped.losses}")
    full = wrapped.state_dict()
    check(sorted(full) == sorted(build(seed=5).state_dict()) and full["0.weight"].shape == (32, 64),
          f"FSDP1 full state dict keys and shapes: {sorted(full)}")
    with FSDP.state_dict_type(wrapped, StateDictType.SHARDED_STATE_DICT):
        check(wrapped.state_dict()["0.weight"].local.shape[0] == 32 // world, "sharded state dict holds this rank's rows")
    seen = []
    mixed = FSDP(build(seed=5).float(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}),
                 mixed_precision=MixedPrecision(param_dtype=ember.bfloat16, reduce_dtype=ember.float32,
                                                cast_forward_inputs=True))
    mixed.module[0].register_forward_pre_hook(lambda m, a: seen.append(m.weight.dtype))     # after FSDP's gather
    mixed.module[0].register_forward_hook(lambda m, a, out: seen.append(out.dtype))
    opt = ember.optim.Adam(mixed.parameters(), lr=2e-3)
    x, y = shard(batches[0], rank, world)
    first = step(mixed, opt, loss_of, (x.float(), y), 0.0, 0, 1)
    later = [step(mixed, opt, loss_of, (x.float(), y), 0.0, 0, 1) for _ in range(5)][-1]
    check(seen[:2] == [ember.bfloat16, ember.bfloat16], f"gathered dtype and compute dtype: {seen[:2]}")
    check(all(p.dtype == ember.float32 for p in mixed.parameters()), "the shards stay float32")
    check(later < first, f"bfloat16 training lowers the loss: {first} -> {later}")


def _mlp(seed: int = 3):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3)).double()


def _x(rank: int):
    return ember.from_numpy(np.random.default_rng(50 + rank).standard_normal((3, 4)))


def _reference_grads(freeze=(), backwards: int = 1) -> dict:
    """One process's gradients of the averaged per-rank losses (what FSDP's shards must hold)."""
    ref = _mlp()
    for name in freeze:
        ref.get_parameter(name).requires_grad_(False)
    world = dist.get_world_size()
    for _ in range(backwards):
        for r in range(world):
            (ref(_x(r)).pow(2).sum() / world).backward()
    return {n: p.grad for n, p in ref.named_parameters()}


def _check_shards(model, expected: dict, what: str) -> None:
    rank = dist.get_rank()
    for name, part in model.named_parameters():
        want = expected[name]
        if want is None:
            check(part.grad is None, f"{what}: {name} should have no gradient")
            continue
        block = -(-want.shape[0] // dist.get_world_size())
        rows = want[min(rank * block, want.shape[0]):min(rank * block + block, want.shape[0])]
        close(part.grad.numpy(), rows.numpy(), 1e-12, f"{what}: {name}")


def _sharded(reshard_after_forward: bool = True):
    model = _mlp()
    for i in (0, 2, 4):
        fully_shard(model[i], reshard_after_forward=reshard_after_forward)
    return fully_shard(model, reshard_after_forward=reshard_after_forward)


def scenarios() -> None:
    """Cases beyond plain training, each against one process's averaged gradients."""
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
    from ember.distributed.fsdp._param_group import UNSHARDED

    rank = dist.get_rank()
    loss = lambda m: m(_x(rank)).pow(2).sum()      # noqa: E731
    # frozen before and after fully_shard
    before = _mlp()
    before[0].weight.requires_grad_(False)
    for i in (0, 2, 4):
        fully_shard(before[i])
    fully_shard(before)
    loss(before).backward()
    _check_shards(before, _reference_grads(freeze=["0.weight"]), "frozen before fully_shard")
    after = _sharded()
    after[0].weight.requires_grad_(False)
    loss(after).backward()
    _check_shards(after, _reference_grads(freeze=["0.weight"]), "frozen after fully_shard")
    # accumulation over two backward passes, parameters kept gathered after forward
    kept = _sharded(reshard_after_forward=False)
    seen = []
    for _ in range(2):
        out = kept(_x(rank))
        out.register_hook(lambda g: seen.append(len(UNSHARDED)))
        out.pow(2).sum().backward()
    _check_shards(kept, _reference_grads(backwards=2), "two backward passes, reshard_after_forward=False")
    check(not UNSHARDED and all(p.shape[0] <= 3 for p in kept.parameters()), "everything resharded after backward")
    # a unit whose output is not used, kept gathered after forward: resharded by the end of backward
    lazy = _sharded(reshard_after_forward=False)
    lazy[0](_x(rank)).sum().backward()
    check(not UNSHARDED, f"a unit unused by the loss stays gathered: {len(UNSHARDED)}")
    # in backward, each unit is freed once its gradients are reduced (at most two gathered at a time)
    deep = _sharded()
    gathered = []

    def count_in_backward(module, args, out) -> None:
        out.register_hook(lambda g: gathered.append(len(UNSHARDED)))

    for i in (1, 3):
        deep[i].register_forward_hook(count_in_backward)
    deep(_x(rank)).pow(2).sum().backward()
    check(len(gathered) == 2 and max(gathered) <= 2, f"units gathered during backward: {gathered}")
    # clip_grad_norm_ over shards equals one process's
    clipped = _sharded()
    loss(clipped).backward()
    ref = _reference_grads()
    total = nn.utils.clip_grad_norm_(clipped.parameters(), 0.01)
    whole = float(sum((g * g).sum() for g in ref.values()) ** 0.5)
    close(float(total), whole, 1e-12, "nn.utils.clip_grad_norm_ over shards")
    # double backward through a unit, shared parameters, bad state dicts: clear errors
    twice = _sharded()
    x = _x(rank).requires_grad_()
    try:
        ember.autograd.grad(twice(x).pow(2).sum(), x, create_graph=True)
    except RuntimeError as e:
        check("create_graph" in str(e), str(e))
    else:
        check(False, "double backward through a unit should raise")
    shared = _mlp()
    fully_shard(shared)
    try:
        fully_shard(shared[0])
    except ValueError as e:
        check("already managed" in str(e), str(e))
    else:
        check(False, "fully_shard on a child after its parent should raise")
    state = get_model_state_dict(_sharded())
    del state["2.weight"]
    try:
        set_model_state_dict(_sharded(), state)
    except RuntimeError as e:
        check("2.weight" in str(e), str(e))
    else:
        check(False, "a strict load without a sharded key should raise")
    # nested FSDP1 wrappers: the full state dict has every key, as the plain model's
    nested = _mlp()
    nested[2] = FSDP(nested[2])
    nested = FSDP(nested)
    keys = sorted(nested.state_dict())
    check(keys == sorted(_mlp().state_dict()), f"nested wrappers' state dict keys: {keys}")


def main() -> None:
    mode, arg = sys.argv[1], sys.argv[2]
    if mode in ("save", "load"):
        return checkpoint(mode, arg)
    dist.init_process_group("gloo")
    for dtype_name in ("float64", "float32"):
        train_and_compare(arg, dtype_name)
    if arg == "mlp":
        wrapper_and_mixed_precision()
        scenarios()
    report_and_finish()


if __name__ == "__main__":
    main()
