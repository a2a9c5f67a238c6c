"""The training steps the memory tests predict and measure: each case builds (model, AdamW
optimizer, inputs, targets) on a device, and its step runs forward, backward, optimizer step and
zero_grad; `true_peak` measures one steady-state cpu step with tracemalloc and `predicted` sizes one
on meta."""
from __future__ import annotations

import gc
import sys
import tracemalloc
from pathlib import Path

import numpy as np

import ember
from ember import nn
from ember.testing.models import GPT2Config, build_gpt2

SMALL_GPT = GPT2Config(vocab_size=256, n_ctx=32, n_embd=64, n_layer=2, n_head=2)


def build_mlp(device):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(device)
    opt = ember.optim.AdamW(model.parameters(), lr=1e-3)
    return model, opt, ember.randn(64, 128, device=device), ember.randint(0, 10, (64,), device=device)


def step_mlp(model, opt, x, y):
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    opt.zero_grad()


def build_gpt(device, config: GPT2Config = SMALL_GPT, batch: int = 2):
    ember.manual_seed(0)
    model = build_gpt2(config, device=device)
    opt = ember.optim.AdamW(model.parameters(), lr=1e-3)
    x = ember.randint(0, config.vocab_size, (batch, config.n_ctx), device=device)
    return model, opt, x, x.reshape(-1)


#: the GPT training step users size machines by: vocabulary 2048, 384 wide, 6 heads, 4 layers, batch 8 x 128
TRUE_PEAK_GPT = GPT2Config(vocab_size=2048, n_ctx=128, n_embd=384, n_layer=4, n_head=6)


def build_true_peak_gpt(device):
    return build_gpt(device, TRUE_PEAK_GPT, batch=8)


def step_gpt(model, opt, x, y):
    logits = model(x)
    nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y).backward()
    opt.step()
    opt.zero_grad()


def build_cnn(device):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    from digits_cnn import cnn_model

    ember.manual_seed(0)
    model = cnn_model(ember)().to(device)
    opt = ember.optim.AdamW(model.parameters(), lr=1e-3)
    return model, opt, ember.randn(32, 1, 8, 8, device=device), ember.randint(0, 10, (32,), device=device)


def step_cnn(model, opt, x, y):
    nn.functional.nll_loss(model(x), y).backward()
    opt.step()
    opt.zero_grad()


def build_lstm_lm(device):
    """word_language_model's shape at a small size: embedding 2000 x 128, two LSTM layers of 128, the decoder."""
    ember.manual_seed(0)

    class LanguageModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding, self.rnn = nn.Embedding(2000, 128), nn.LSTM(128, 128, 2)
            self.decoder = nn.Linear(128, 2000)

        def forward(self, tokens):
            return self.decoder(self.rnn(self.embedding(tokens))[0])

    model = LanguageModel().to(device)
    opt = ember.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = ember.randint(0, 2000, (35, 20), device=device)
    return model, opt, tokens, tokens.reshape(-1)


def amp_step(dtype):
    """One mixed-precision step as PyTorch's recipe has it: float32 parameters, forward and loss
    under autocast, and for float16 a GradScaler (scale, unscale + inf check, step, update)."""
    def step(model, opt, x, y):
        dev = x.device.type
        scaler = ember.amp.GradScaler(dev, enabled=dtype is ember.float16)
        with ember.autocast(dev, dtype=dtype):
            loss = nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    return step


CASES = {"mlp": (build_mlp, step_mlp), "gpt2": (build_gpt, step_gpt), "cnn": (build_cnn, step_cnn),
         "gpt": (build_true_peak_gpt, step_gpt),
         "lstm": (build_lstm_lm, step_gpt), "mlp amp float16": (build_mlp, amp_step(ember.float16)),
         "mlp amp bfloat16": (build_mlp, amp_step(ember.bfloat16))}


def predicted(build, step, steady: bool = True, **track):
    """ember.memory's prediction of a step on meta: steady (one step first, so that the optimizer's state
    exists, then the tracked one), or a first step."""
    import ember.memory

    model, opt, x, y = build("meta")
    if steady:
        step(model, opt, x, y)
    with ember.memory.track(model=model, optimizer=opt, **track) as mem:
        step(model, opt, x, y)
    return mem


def true_peak(build, step, process: list | None = None) -> tuple[int, int]:
    """(peak, live at the end) of one steady-state cpu step as a user measures it: tracemalloc's own peak,
    every allocation of every numpy call included (scratch inside kernels too), less the Python objects
    alive before the step (modules, the model's objects; those the step's graph makes count, a percent or
    two of a small model). One step runs first, so that the optimizer's state exists, with the cpu kernels
    in their steady state (`Backend.settle_kernels`: the numba loops a process switches to after its first calls).
    `process`, when given, receives the peak as a script measures it without that subtraction: everything
    traced since the model was built, the Python objects the first step imported (numba's) included."""
    from ember.dispatcher.plugins import REGISTRY

    REGISTRY.load("cpu").backend.settle_kernels()
    domain = np.lib.tracemalloc_domain
    tracemalloc.start(1)
    try:
        model, opt, x, y = build("cpu")
        step(model, opt, x, y)
        gc.collect()
        python_bytes = tracemalloc.get_traced_memory()[0] - sum(t[1] for t in tracemalloc._get_traces() if t[0] == domain)
        tracemalloc.reset_peak()
        step(model, opt, x, y)
        peak = tracemalloc.get_traced_memory()[1] - python_bytes
        if process is not None:
            process.append(tracemalloc.get_traced_memory()[1])
        end = sum(t[1] for t in tracemalloc._get_traces() if t[0] == domain)
    finally:
        tracemalloc.stop()
    return peak, end


def process_peak(build, step) -> tuple[int, int]:
    """(peak, live at the end) of a second step as a script measures it in a fresh process: tracemalloc
    started after `import ember`, before the model is built, one step, then the peak of the next one with
    everything traced counted (the Python objects of the modules the first step imports, numba's, too)."""
    tracemalloc.start(1)
    try:
        model, opt, x, y = build("cpu")
        step(model, opt, x, y)
        tracemalloc.reset_peak()
        step(model, opt, x, y)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, current


if __name__ == "__main__":      # python tests/memory_steps.py: the GPT step's peak, measured in this process
    peak, current = process_peak(*CASES["gpt"])
    print(f"gpt step (4 layers, 384 wide, vocab 2048, batch 8 x 128, AdamW): tracemalloc's peak {peak / 2**20:.1f} "
          f"MiB over the second step, {current / 2**20:.1f} MiB traced at its end")
