"""Run under `mpiexec -n N` by tests/test_ddp_vs_torch.py: Ember's DistributedDataParallel against torch's.

    python ddp_vs_torch.py TORCH_PORT [SCENARIO ...]

Each rank starts both libraries' process groups (ember's on MPI, torch's gloo group on TORCH_PORT,
rank and size from mpiexec's PMI_RANK / PMI_SIZE) and runs every scenario (or the ones named)
twice, once with `lib = torch` and once with `lib = ember`: the scenario is written once, against
`lib`, in float64, with deterministic inputs that differ per rank and parameters that differ per
rank until DDP broadcasts rank 0's. A scenario records what matters as it goes (every parameter's
`.grad`, None included; buffers; outputs; whether a step raised, with its exception class and a
key phrase of the message) and the two records are compared exactly (to 1e-12). Each scenario
gets fresh process groups (with a short timeout), so one that leaves its collectives out of step
cannot disturb the next. Prints 'rank R scenario NAME: ok' or 'rank R scenario NAME: MISMATCH
...' per scenario, then 'rank R: K scenarios matched of M'.
"""
from __future__ import annotations

import dataclasses
import datetime
import gc
import os
import sys

import numpy as np
import torch
import torch.distributed

import ember
import ember.distributed

from worker_support import abort_on_error

sys.excepthook = abort_on_error
TOL = 1e-12
TIMEOUT = datetime.timedelta(seconds=15)   # a scenario whose ranks fall out of step raises instead of hanging
SHOWN = 4                                  # differences printed per scenario
SCENARIOS: dict = {}


def scenario(fn):
    """Register a scenario `fn(lib, rec, group)` under its name."""
    SCENARIOS[fn.__name__] = fn
    return fn


# ----------------------------------------------------------------------------- recording and comparing
class Raised:
    """What a step raised: its class name, its message, and whether the message holds the phrase
    the scenario named (compared instead of the whole message, which differs between the libraries)."""

    def __init__(self, error: BaseException, phrase: str | None) -> None:
        self.kind = type(error).__name__
        self.message = str(error)
        self.has_phrase = phrase is None or phrase in self.message

    def key(self) -> tuple:
        return self.kind, self.has_phrase

    def __repr__(self) -> str:
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        return f"{self.kind}({first[:150]!r})"


class Record:
    """The observations of one run of a scenario, in order: (label, None | ndarray | Raised | str)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, object]] = []

    def value(self, label: str, t) -> None:
        self.items.append((label, None if t is None else np.array(t.detach().tolist(), dtype=np.float64)))

    def grads(self, label: str, module) -> None:
        """Every parameter's .grad (None stays None)."""
        for name, p in module.named_parameters():
            self.value(f"{label}: {name}.grad", p.grad)

    def params(self, label: str, module) -> None:
        for name, p in module.named_parameters():
            self.value(f"{label}: {name}", p)

    def buffers(self, label: str, module) -> None:
        for name, b in module.named_buffers():
            self.value(f"{label}: {name}", b)

    def attempt(self, label: str, step, phrase: str | None = None):
        """Run `step()`; record 'no error' or what it raised. Returns the step's result (None if it raised)."""
        try:
            result = step()
        except Exception as e:           # what a step raises is an observation
            self.items.append((label, Raised(e, phrase)))
            return None
        self.items.append((label, "no error"))
        return result


def same(a, b) -> bool:
    """Arrays equal to TOL (relative to the larger of 1 and torch's largest magnitude), errors of the
    same class with the phrase present or absent alike, anything else equal."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.shape != b.shape:
            return False
        return a.size == 0 or float(np.max(np.abs(a - b))) <= TOL * max(1.0, float(np.max(np.abs(a))))
    if isinstance(a, Raised) and isinstance(b, Raised):
        return a.key() == b.key()
    return type(a) is type(b) and a == b


def describe(v) -> str:
    """An observation in a few words: an array's first values and its shape."""
    if isinstance(v, np.ndarray):
        flat = v.ravel()
        shown = np.array2string(flat[:4], precision=6, separator=",")
        return f"{shown[:-1]}{',...' if flat.size > 4 else ''}] shape {v.shape}"
    return repr(v)


def compare(theirs: Record, ours: Record) -> list[str]:
    """The differences between torch's record and ember's (matched by label), as readable lines."""
    a, b = dict(theirs.items), dict(ours.items)
    missing = "(not recorded)"
    return [f"{label}: torch={describe(a.get(label, missing))} ember={describe(b.get(label, missing))}"
            for label in [*a, *(lab for lab in b if lab not in a)]
            if label not in a or label not in b or not same(a[label], b[label])]


def summary(problems: list[str]) -> str:
    """One line for a scenario: the first few differences, each cut short (so ranks' lines stay apart)."""
    if not problems:
        return "ok"
    shown = " | ".join(p[:300] for p in problems[:SHOWN])
    more = f" | (+{len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
    return f"MISMATCH {shown}{more}"


# ----------------------------------------------------------------------------- models and data
def rank() -> int:
    return int(os.environ["PMI_RANK"])


def data(lib, seed: int, *shape: int):
    """Deterministic float64 input, different on every rank."""
    values = np.random.default_rng([seed, rank()]).standard_normal(shape)
    return lib.tensor(values.tolist(), dtype=lib.float64)


def initialize(lib, module):
    """float64, with parameters that differ per rank (only DDP's broadcast from rank 0 makes them equal)."""
    module = module.double()
    with lib.no_grad():
        for i, p in enumerate(module.parameters()):
            values = 0.5 * np.sin(np.arange(p.numel()) * 0.7 + 1.3 * i + 0.25 * rank())
            p.copy_(lib.tensor(values.tolist(), dtype=lib.float64).reshape(p.shape))
    return module


def mlp(lib):
    nn = lib.nn
    return initialize(lib, nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3)))


@dataclasses.dataclass
class Output:
    value: object


_HEADS: dict = {}


def heads(lib, boxed: bool = False):
    """A trunk and three heads; forward(x, use) sums the heads named in `use` (so the caller decides
    which parameters a forward reaches); `boxed` returns the sum inside an `Output` dataclass."""
    if lib not in _HEADS:
        class Heads(lib.nn.Module):
            def __init__(self, boxed: bool) -> None:
                super().__init__()
                self.boxed = boxed
                self.trunk = lib.nn.Linear(4, 6)
                self.a = lib.nn.Linear(6, 3)
                self.b = lib.nn.Linear(6, 3)
                self.c = lib.nn.Linear(6, 3)

            def forward(self, x, use: str = "a"):
                h = lib.tanh(self.trunk(x))
                out = sum(getattr(self, k)(h) for k in use)
                return Output(out) if self.boxed else out
        _HEADS[lib] = Heads
    return initialize(lib, _HEADS[lib](boxed))


_AFFINE: dict = {}


def affine_function(lib):
    """x @ w.T + b, whose backward returns None for b."""
    if lib not in _AFFINE:
        class AffineNoBiasGrad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, w, b):
                ctx.save_for_backward(x, w)
                return x @ w.t() + b

            @staticmethod
            def backward(ctx, grad):
                x, w = ctx.saved_tensors
                return grad @ w, grad.t() @ x, None
        _AFFINE[lib] = AffineNoBiasGrad
    return _AFFINE[lib]


def loss_of(out):
    return out.pow(2).mean()


def ddp(lib, module, group, **kwargs):
    return lib.nn.parallel.DistributedDataParallel(module, process_group=group, **kwargs)


# ----------------------------------------------------------------------------- the scenarios
@scenario
def baseline(lib, rec, group):
    """Two SGD steps; bucket_cap_mb small enough for several buckets."""
    model = ddp(lib, mlp(lib), group, bucket_cap_mb=300 / 2**20)
    rec.params("after construction", model.module)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        loss = loss_of(model(data(lib, step, 5, 4)))
        rec.value(f"step {step} loss", loss)
        loss.backward()
        rec.grads(f"step {step}", model.module)
        opt.step()
    rec.params("after 2 steps", model.module)


@scenario
def backward_twice_retain_graph(lib, rec, group):
    """One synced forward, backward twice (retain_graph): the second only accumulates locally."""
    model = ddp(lib, mlp(lib), group)
    loss = loss_of(model(data(lib, 10, 5, 4)))
    rec.attempt("first backward", lambda: loss.backward(retain_graph=True))
    rec.grads("after the first backward", model.module)
    rec.attempt("second backward", lambda: loss.backward())
    rec.grads("after the second backward", model.module)
    rec.attempt("next synced step", lambda: loss_of(model(data(lib, 11, 5, 4))).backward())
    rec.grads("after the next synced step", model.module)


@scenario
def wrapped_twice(lib, rec, group):
    """The same module wrapped twice in succession (the first wrapper trained once, then dropped)."""
    module = mlp(lib)
    first = ddp(lib, module, group)
    loss_of(first(data(lib, 20, 5, 4))).backward()
    del first
    gc.collect()
    module.zero_grad()
    model = rec.attempt("wrap again", lambda: ddp(lib, module, group))
    if model is None:
        return
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        rec.attempt(f"step {step}", lambda: loss_of(model(data(lib, 21 + step, 5, 4))).backward())
        rec.grads(f"step {step}", module)
        opt.step()
    rec.params("after 2 steps", module)


@scenario
def backward_through_module(lib, rec, group):
    """A synced step, then a backward through `ddp.module` (accumulates locally), then a synced step."""
    model = ddp(lib, mlp(lib), group)
    loss_of(model(data(lib, 30, 5, 4))).backward()
    rec.grads("after the synced step", model.module)
    rec.attempt("backward through .module", lambda: loss_of(model.module(data(lib, 31, 5, 4))).backward())
    rec.grads("after the .module step", model.module)
    rec.attempt("next synced step", lambda: loss_of(model(data(lib, 32, 5, 4))).backward())
    rec.grads("after the next synced step", model.module)


@scenario
def no_grad_forward_before_backward(lib, rec, group):
    """loss = m(x); with no_grad(): m(x2); loss.backward(): still averaged."""
    model = ddp(lib, mlp(lib), group)
    loss = loss_of(model(data(lib, 40, 5, 4)))
    with lib.no_grad():
        rec.value("the no_grad output", model(data(lib, 41, 5, 4)))
    rec.attempt("backward", loss.backward)
    rec.grads("after the backward", model.module)
    rec.attempt("next synced step", lambda: loss_of(model(data(lib, 42, 5, 4))).backward())
    rec.grads("after the next synced step", model.module)


@scenario
def unused_after_no_sync(lib, rec, group):
    """find_unused_parameters: head b used only in the no_sync micro-batch, not in the synced one."""
    model = ddp(lib, heads(lib), group, find_unused_parameters=True)
    with model.no_sync():
        rec.attempt("no_sync micro-batch", lambda: loss_of(model(data(lib, 50, 5, 4), "ab")).backward())
    rec.grads("after no_sync", model.module)
    rec.attempt("synced micro-batch", lambda: loss_of(model(data(lib, 51, 5, 4), "a")).backward())
    rec.grads("after the synced micro-batch", model.module)
    rec.attempt("next step", lambda: loss_of(model(data(lib, 52, 5, 4), "a")).backward())
    rec.grads("after the next step", model.module)


@scenario
def unused_on_one_rank_bucket_view(lib, rec, group):
    """find_unused_parameters + gradient_as_bucket_view, 2 steps accumulated (no zero_grad); rank 0
    never uses head b, the others do."""
    model = ddp(lib, heads(lib), group, find_unused_parameters=True, gradient_as_bucket_view=True)
    use = "a" if rank() == 0 else "ab"
    for step in range(2):
        rec.attempt(f"step {step}", lambda: loss_of(model(data(lib, 60 + step, 5, 4), use)).backward())
        rec.grads(f"step {step}", model.module)


@scenario
def unused_with_dataclass_output(lib, rec, group):
    """find_unused_parameters with a forward returning a dataclass holding the output."""
    model = ddp(lib, heads(lib, boxed=True), group, find_unused_parameters=True)
    for step in range(2):
        rec.attempt(f"step {step}", lambda: loss_of(model(data(lib, 70 + step, 5, 4), "ab").value).backward())
        rec.grads(f"step {step}", model.module)
        model.module.zero_grad()


@scenario
def function_returning_none_grad(lib, rec, group):
    """A custom autograd Function whose backward returns None for the bias: DDP treats it as zero."""
    module = initialize(lib, lib.nn.Linear(4, 3))
    function = affine_function(lib)

    class Wrapped(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = module

        def forward(self, x):
            return function.apply(x, self.inner.weight, self.inner.bias)

    model = ddp(lib, Wrapped(), group)
    for step in range(2):
        rec.attempt(f"step {step}", lambda: loss_of(model(data(lib, 80 + step, 5, 4))).backward())
        rec.grads(f"step {step}", model.module)
        model.module.zero_grad()


@scenario
def batchnorm_buffers(lib, rec, group):
    """broadcast_buffers: a training step, then an eval forward (running stats after each); then a
    fresh wrapper whose buffers are changed per rank and whose first forward is inside no_sync."""
    nn = lib.nn
    model = ddp(lib, initialize(lib, nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))), group)
    loss_of(model(data(lib, 90, 6, 3))).backward()
    rec.buffers("after the training step", model.module)
    rec.grads("after the training step", model.module)
    model.eval()
    with lib.no_grad():
        rec.value("eval output", model(data(lib, 91, 6, 3)))
    rec.buffers("after the eval forward", model.module)

    bn = initialize(lib, nn.BatchNorm1d(4))
    fresh = ddp(lib, bn, group)
    with lib.no_grad():
        bn.running_mean.fill_(float(rank()))
    with fresh.no_sync():
        out = fresh(data(lib, 92, 6, 4))
        rec.value("no_sync output", out)
        loss_of(out).backward()
    rec.buffers("after the first forward, inside no_sync", bn)
    rec.grads("after the no_sync backward", bn)


@scenario
def no_sync_accumulation(lib, rec, group):
    """A no_sync micro-batch leaves each rank its own gradient; the synced one the average of the sums."""
    model = ddp(lib, mlp(lib), group)
    with model.no_sync():
        loss_of(model(data(lib, 100, 5, 4))).backward()
    rec.grads("after no_sync", model.module)
    loss_of(model(data(lib, 101, 5, 4))).backward()
    rec.grads("after the synced micro-batch", model.module)


@scenario
def unused_without_find_unused(lib, rec, group):
    """find_unused_parameters=False and an unused head: the next forward raises."""
    model = ddp(lib, heads(lib), group)
    rec.attempt("backward leaving b and c unused", lambda: loss_of(model(data(lib, 110, 5, 4), "a")).backward())
    rec.grads("after the backward", model.module)
    rec.attempt("next forward", lambda: model(data(lib, 111, 5, 4), "a"),
                phrase="Expected to have finished reduction in the prior iteration")


@scenario
def static_graph_never_used(lib, rec, group):
    """static_graph=True with head b never used, 3 steps."""
    model = ddp(lib, heads(lib), group, static_graph=True)
    for step in range(3):
        rec.attempt(f"step {step}", lambda: loss_of(model(data(lib, 120 + step, 5, 4), "ac")).backward())
        rec.grads(f"step {step}", model.module)
        model.module.zero_grad()


# ----------------------------------------------------------------------------- running
def run(name: str) -> list[str]:
    """Run scenario `name` with torch, then ember, each on fresh groups; the differences."""
    records = []
    for lib, group in ((torch, torch.distributed.new_group(timeout=TIMEOUT)),
                       (ember, ember.distributed.new_group(timeout=TIMEOUT))):
        lib.manual_seed(0)
        rec = Record()
        rec.attempt("the scenario", lambda: SCENARIOS[name](lib, rec, group))
        records.append(rec)
    return compare(*records)


def main() -> None:
    port, names = int(sys.argv[1]), sys.argv[2:] or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise SystemExit(f"unknown scenarios {unknown}; known: {list(SCENARIOS)}")
    torch.set_num_threads(1)
    r, world = rank(), int(os.environ["PMI_SIZE"])
    ember.distributed.init_process_group("gloo", timeout=TIMEOUT)
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=r, world_size=world,
                                         timeout=TIMEOUT)
    matched = 0
    for name in names:
        problems = run(name)
        matched += not problems
        print(f"rank {r} scenario {name}: {summary(problems)}", flush=True)
    print(f"rank {r}: {matched} scenarios matched of {len(names)}", flush=True)
    torch.distributed.destroy_process_group()
    ember.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
