"""The workloads `python -m ember.memory audit` measures a device's kernels with: every op's conformance
samples, then a few training steps for the kernels only a backward or an optimizer reaches (the
convolution's, layer norm's, attention's and the recurrent layer's backward, the fused optimizers)."""
from __future__ import annotations

from typing import Callable, Iterable, Iterator

import ember
from ember import nn

from .models import GPT2Config, build_gpt2
from .op_db import OP_DB, materialize


def conformance_workloads(device: str, ops: Iterable[str] | None, dtypes: tuple, per_op: int) -> Iterator[Callable]:
    """One callable per sample: the first `per_op` samples of each OpInfo (of `ops`, default all; its
    shape-only ones left out) in each of `dtypes` it supports, materialised and called on `device`; then,
    when `ops` is not given, `training_workloads(device)`."""
    wanted = None if ops is None else set(ops)
    for info in OP_DB:
        if (wanted is not None and info.name not in wanted) or info.kind == "shape_only":
            continue
        for dtype in dtypes:
            if dtype not in info.dtypes:
                continue
            for sample in info.samples(info.rng(dtype), dtype)[:per_op]:
                def run(info=info, sample=sample):
                    args, kwargs, _ = materialize(ember, sample, device)
                    (sample.fn or info.call)(ember, *args, **kwargs)       # a sample's own call, as the suite's
                yield run
    if wanted is None:
        yield from training_workloads(device)


def _step(model, optimizer, loss_of) -> Callable:
    def run():
        optimizer.zero_grad()
        loss_of(model).backward()
        optimizer.step()
    run.warm_runs = 2           # the second step is the first with the optimizer's state (and fused loops)
    return run


def training_workloads(device: str) -> Iterator[Callable]:
    """Small training steps (each a callable running one step): a CNN with max pooling and dropout under
    Adam, a GPT block stack under AdamW, an LSTM under Adadelta, an MLP under SGD with momentum; and a
    Gamma draw's gradient, an integer xor and all/any over several dims (called by name: `ember.all` with a
    tuple of dims binds the int overload), which neither these nor float samples reach."""
    ember.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),
                        nn.Linear(8 * 6 * 6, 5)).to(device)
    images, labels = ember.randn(8, 3, 12, 12, device=device), ember.randint(0, 5, (8,), device=device)
    yield _step(cnn, ember.optim.Adam(cnn.parameters(), lr=1e-3),
                lambda m: nn.functional.cross_entropy(m(images), labels))

    gpt = build_gpt2(GPT2Config(vocab_size=64, n_ctx=16, n_embd=32, n_layer=1, n_head=2), device=device)
    tokens = ember.randint(0, 64, (2, 16), device=device)
    yield _step(gpt, ember.optim.AdamW(gpt.parameters(), lr=1e-3),
                lambda m: nn.functional.cross_entropy(m(tokens).reshape(-1, 64), tokens.reshape(-1)))

    lstm = nn.LSTM(8, 16, 2).to(device)
    sequence = ember.randn(5, 3, 8, device=device)
    yield _step(lstm, ember.optim.Adadelta(lstm.parameters()), lambda m: m(sequence)[0].square().mean())

    concentration = ember.full((64,), 2.5, device=device, requires_grad=True)
    yield lambda: ember.distributions.Gamma(concentration, 1.0).rsample().sum().backward()   # _standard_gamma_grad
    bits = ember.arange(64, device=device)
    yield lambda: bits ^ (bits + 1)                     # bitwise_xor: a float32 audit reaches no integer op else
    flags = ember.arange(120, device=device).reshape(4, 5, 6) % 3 > 0
    yield lambda: (ember.ops.all.dims(flags, [0, 2], False), ember.ops.any.dims(flags, [1, 2], True))

    mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).to(device)
    inputs = ember.randn(6, 8, device=device)
    yield _step(mlp, ember.optim.SGD(mlp.parameters(), lr=0.1, momentum=0.9), lambda m: m(inputs).square().mean())
