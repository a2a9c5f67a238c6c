"""Training in several threads at once: the workload of the suite's thread-safety checks.

Every backend must be safe to use from several threads, as torch's are. `train_in_threads(device,
threads, steps)` starts `threads` Python threads at one barrier; each trains its own small model
(linear, layer norm, GELU, linear, cross entropy, AdamW: the kernels, the allocator, the autograd
engine and the optimizer all run concurrently) for `steps` steps on the same data from the same
weights. Each thread's losses and final weights must equal those of the same training run alone
(`train_alone`), bit for bit: the kernels are deterministic, so any difference is a race (a kernel
launched with another thread's arguments, a buffer reused while still in use, a lost update).

`backward_in_threads(device, threads, passes)` runs backward passes in several threads over one
shared parameter, whose `.grad` must end up holding every pass's gradient.

The weights come from numpy (seeded), not from ember's generator: threads share that generator,
so models built in threads would draw different weights in every run.
"""
from __future__ import annotations

import threading

import numpy as np

import ember

__all__ = ["train_alone", "train_in_threads", "backward_in_threads", "TrainingRun"]

WIDTH, HIDDEN, CLASSES, BATCH = 8, 16, 4, 12


class TrainingRun:
    """The losses of every step and the final weights of one training run (host numpy arrays)."""

    def __init__(self, losses: list[np.ndarray], weights: dict[str, np.ndarray]) -> None:
        self.losses = losses
        self.weights = weights

    def differences(self, other: "TrainingRun") -> list[str]:
        """What differs from `other`, bit for bit ([] when they are the same)."""
        found = [f"loss of step {i}: {a} != {b}" for i, (a, b) in enumerate(zip(self.losses, other.losses))
                 if not np.array_equal(a, b)]
        if len(self.losses) != len(other.losses):
            found.append(f"{len(self.losses)} steps != {len(other.losses)} steps")
        found += [f"final {name} differs (largest difference {np.abs(w - other.weights[name]).max()})"
                  for name, w in self.weights.items() if not np.array_equal(w, other.weights[name])]
        return found


def _start(seed: int) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    weights = {"fc1.weight": rng.standard_normal((HIDDEN, WIDTH)) / WIDTH ** 0.5, "fc1.bias": rng.standard_normal(HIDDEN) * 0.1,
               "norm.weight": 1 + rng.standard_normal(HIDDEN) * 0.1, "norm.bias": rng.standard_normal(HIDDEN) * 0.1,
               "fc2.weight": rng.standard_normal((CLASSES, HIDDEN)) / HIDDEN ** 0.5, "fc2.bias": np.zeros(CLASSES)}
    x = rng.standard_normal((BATCH, WIDTH))
    y = rng.integers(0, CLASSES, BATCH)
    return {k: v.astype(np.float32) for k, v in weights.items()}, x.astype(np.float32), y


def _model(weights: dict[str, np.ndarray], device: str):
    nn = ember.nn
    model = nn.Sequential()
    model.add_module("fc1", nn.Linear(WIDTH, HIDDEN))
    model.add_module("norm", nn.LayerNorm(HIDDEN))
    model.add_module("act", nn.GELU())
    model.add_module("fc2", nn.Linear(HIDDEN, CLASSES))
    model.load_state_dict({k: ember.tensor(v) for k, v in weights.items()})
    return model.to(device)


def _train(device: str, steps: int, seed: int, ready: threading.Barrier | None = None) -> TrainingRun:
    weights, x_host, y_host = _start(seed)
    model = _model(weights, device)
    x, y = ember.tensor(x_host, device=device), ember.tensor(y_host, device=device)
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    if ready is not None:
        ready.wait()
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return TrainingRun([_host(loss) for loss in losses], {k: _host(v) for k, v in model.state_dict().items()})


def _host(t) -> np.ndarray:
    """`t`'s values on the host; a meta tensor, which has none, gives its shape as an empty array."""
    if t.device.type == "meta":
        return np.empty(tuple(t.shape), dtype=np.float32)
    return t.detach().cpu().numpy()


def train_alone(device: str, steps: int, seed: int = 0) -> TrainingRun:
    """The training run on `device`, in this thread with no other running."""
    return _train(device, steps, seed)


def _in_threads(count: int, work) -> list:
    """`work(barrier)` in `count` threads at once: their results in order; a thread's exception is raised."""
    ready = threading.Barrier(count)
    results: list = [None] * count
    errors: list = []

    def run(i: int) -> None:
        try:
            results[i] = work(ready)
        except BaseException as exc:       # noqa: BLE001 - handed to the calling thread
            ready.abort()
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(i,), name=f"ember-stress-{i}") for i in range(count)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return results


def train_in_threads(device: str, threads: int, steps: int, seed: int = 0) -> list[TrainingRun]:
    """The training run in `threads` threads at once, each on its own model: every thread's run."""
    return _in_threads(threads, lambda ready: _train(device, steps, seed, ready))


def backward_in_threads(device: str, threads: int, passes: int) -> tuple[np.ndarray, np.ndarray]:
    """`passes` backward passes in each of `threads` threads over one shared weight: its `.grad` and what
    it must be. The inputs are small integers, so every sum is exact in float32 whatever the order."""
    rng = np.random.default_rng(0)
    w = ember.tensor(rng.integers(-3, 4, (24, 16)).astype(np.float32), device=device, requires_grad=True)
    inputs = [ember.tensor(rng.integers(-3, 4, (8, 24)).astype(np.float32), device=device) for _ in range(threads)]

    def work(ready: threading.Barrier, box=iter(inputs), lock=threading.Lock()) -> None:
        with lock:
            x = next(box)
        ready.wait()
        for _ in range(passes):
            (x @ w).sum().backward()

    _in_threads(threads, work)
    expected = sum(_host(x).sum(axis=0) for x in inputs) * passes
    return _host(w.grad), np.broadcast_to(expected[:, None], (24, 16)).astype(np.float32)
