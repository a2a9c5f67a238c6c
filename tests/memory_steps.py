"""The training steps the memory tests predict and measure: each case builds (model, AdamW
optimizer, inputs, targets) on a device, and its step runs forward, backward, optimizer step and
zero_grad. Small shapes: the measurements sample memory after every allocation."""
from __future__ import annotations

import sys
from pathlib import Path

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


CASES = {"mlp": (build_mlp, step_mlp), "gpt2": (build_gpt, step_gpt), "cnn": (build_cnn, step_cnn)}
