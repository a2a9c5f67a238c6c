"""The workloads that the asv benchmarks and compare.py time, defined once for every framework.

Each builder takes `framework` ("ember", "torch" or "numpy") and returns a zero-argument callable
that runs one iteration of the workload (setup, such as building tensors or a model, is done by
the builder and not timed). The same code runs in ember and in torch: models are written against
a `lib` namespace (ember or torch), as ember/testing/models.py does, and start from the same
numpy-generated weights, so a ratio compares the same computation. numpy counterparts are
hand-written where one exists (the MLP's forward, backward and optimizer update); a builder raises
NotImplementedError for a framework without a counterpart (asv then skips that parameter).

The training workloads return the loss tensor (or float, for numpy) from their callable, so
tests/test_benchmarks.py can check that ember, torch and numpy compute the same values. The
convolutional workloads (the digits CNN, ResNet's basic blocks) are in conv_workloads.py. GPT-2 small's inference model (124M parameters) is built
once per process and framework and cached (gpt2_model). cold_start_code is not a builder: it returns
the source of a whole program, for timing a fresh interpreter (`python -c CODE`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

FRAMEWORKS = ("ember", "torch", "numpy")
ELEMENTWISE_OPS = ("add", "mul", "exp", "relu")
REDUCTION_OPS = ("sum", "mean", "amax", "sum_dim1")
OPTIMIZERS = ("sgd", "adam")
ADAM_VARIANTS = ("adam", "adamw")

# the digits MLP (sklearn's 8x8 digits: 64 features, 10 classes) and the GPT block's shapes
MLP_SIZES = (64, 128, 10)
MLP_BATCH = 64
LR = 1e-2
GPT_EMBD, GPT_HEADS, GPT_SEQ, GPT_BATCH = 128, 4, 64, 8


def _check_framework(framework: str) -> None:
    if framework not in FRAMEWORKS:
        raise ValueError(f"workloads: framework must be one of {FRAMEWORKS}, got {framework!r}")


def lib_of(framework: str):
    """The module that provides `framework`'s tensor API (ember or torch; numpy for "numpy")."""
    _check_framework(framework)
    if framework == "ember":
        import ember as lib
    elif framework == "torch":
        import torch as lib
    else:
        lib = np
    return lib


def _no_numpy(framework: str, what: str) -> None:
    if framework == "numpy":
        raise NotImplementedError(f"{what}: no numpy counterpart")


# --- tiny ops: the whole cost is per-call overhead -------------------------------------------------

def _tiny_pair(framework: str, requires_grad: bool = False):
    data = np.arange(8, dtype=np.float32)
    if framework == "numpy":
        if requires_grad:
            raise NotImplementedError("numpy has no autograd")
        return data.copy(), data.copy()
    lib = lib_of(framework)
    return lib.tensor(data, requires_grad=requires_grad), lib.tensor(data, requires_grad=requires_grad)


def tiny_add(framework: str, requires_grad: bool = False) -> Callable:
    """`a + b` on shape (8,) float32."""
    a, b = _tiny_pair(framework, requires_grad)
    return lambda: a + b


def tiny_method(framework: str) -> Callable:
    """A Tensor method call, `a.mul(b)` (numpy: `np.multiply(a, b)`), on shape (8,)."""
    a, b = _tiny_pair(framework)
    if framework == "numpy":
        return lambda: np.multiply(a, b)
    return lambda: a.mul(b)


def tiny_inplace(framework: str) -> Callable:
    """An in-place op, `a.mul_(b)` (numpy: `np.multiply(a, b, out=a)`), on shape (8,); b is ones."""
    a, _ = _tiny_pair(framework)
    b = _tiny_pair(framework)[1] * 0 + 1             # ones: the values stay put however often it runs
    if framework == "numpy":
        return lambda: np.multiply(a, b, out=a)
    return lambda: a.mul_(b)


# --- medium tensors: the work is numpy's; ember should add nothing measurable ---------------------

def _medium(framework: str, n: int = 256, count: int = 2):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((n, n), dtype=np.float32) for _ in range(count)]
    if framework == "numpy":
        return arrays
    lib = lib_of(framework)
    return [lib.from_numpy(a) for a in arrays]


def elementwise(framework: str, op: str) -> Callable:
    """One elementwise op (ELEMENTWISE_OPS) on 256x256 float32."""
    a, b = _medium(framework)
    if framework == "numpy":
        fns = {"add": lambda: a + b, "mul": lambda: a * b, "exp": lambda: np.exp(a),
               "relu": lambda: np.maximum(a, 0)}
    else:
        lib = lib_of(framework)
        fns = {"add": lambda: a + b, "mul": lambda: a * b, "exp": lambda: lib.exp(a), "relu": lambda: lib.relu(a)}
    return fns[op]


def reduction(framework: str, op: str) -> Callable:
    """One reduction (REDUCTION_OPS: full sum, mean, amax; sum over dim 1) of 256x256 float32."""
    (a,) = _medium(framework, count=1)
    if framework == "numpy":
        fns = {"sum": lambda: a.sum(), "mean": lambda: a.mean(), "amax": lambda: a.max(),
               "sum_dim1": lambda: a.sum(axis=1)}
    else:
        fns = {"sum": lambda: a.sum(), "mean": lambda: a.mean(), "amax": lambda: a.amax(),
               "sum_dim1": lambda: a.sum(dim=1)}
    return fns[op]


def matmul(framework: str, n: int = 1024) -> Callable:
    """`a @ b` of two n x n float32 matrices (1024: a BLAS-bound workload)."""
    a, b = _medium(framework, n=n)
    return lambda: a @ b


# --- the digits MLP training step -------------------------------------------------------------------

def mlp_weights(seed: int = 0) -> dict[str, np.ndarray]:
    """The 64-128-10 MLP's weights in torch's Linear layout ((out, in) weights), plus a batch."""
    rng = np.random.default_rng(seed)
    (i, h, o) = MLP_SIZES
    return {"0.weight": rng.uniform(-1, 1, (h, i)).astype(np.float32) / np.sqrt(i),
            "0.bias": rng.uniform(-1, 1, h).astype(np.float32) / np.sqrt(i),
            "2.weight": rng.uniform(-1, 1, (o, h)).astype(np.float32) / np.sqrt(h),
            "2.bias": rng.uniform(-1, 1, o).astype(np.float32) / np.sqrt(h),
            "x": rng.standard_normal((MLP_BATCH, i)).astype(np.float32),
            "y": rng.integers(0, o, MLP_BATCH)}


def mlp_step(framework: str, optimizer: str = "sgd", seed: int = 0, mode: str | None = None) -> Callable:
    """One training step of the 64-128-10 MLP on a batch of 64: zero_grad, forward, cross_entropy,
    backward, optimizer step (OPTIMIZERS: SGD, Adam; lr LR). Returns the callable; it returns the loss.
    `mode`: ember's step through `ember.compile(step, mode=mode)` (torch's and numpy's stay as they are)."""
    w = mlp_weights(seed)
    if framework == "numpy":
        return _NumpyMLP(w, optimizer).step
    lib = lib_of(framework)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(MLP_SIZES[0], MLP_SIZES[1]), nn.ReLU(), nn.Linear(MLP_SIZES[1], MLP_SIZES[2]))
    model.load_state_dict({k: lib.tensor(v) for k, v in w.items() if "." in k})
    x, y = lib.tensor(w["x"]), lib.tensor(w["y"])
    opt = {"sgd": lib.optim.SGD, "adam": lib.optim.Adam}[optimizer](model.parameters(), lr=LR)
    cross_entropy = nn.functional.cross_entropy

    def step():
        opt.zero_grad()
        loss = cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return lib.compile(step, mode=mode) if mode is not None and framework == "ember" else step


class _NumpyMLP:
    """The MLP step written by hand in numpy: what a framework with no overhead at all would cost."""

    def __init__(self, w: dict[str, np.ndarray], optimizer: str) -> None:
        self.params = [w["0.weight"].copy(), w["0.bias"].copy(), w["2.weight"].copy(), w["2.bias"].copy()]
        self.x, self.y = w["x"], w["y"]
        self.onehot = np.eye(MLP_SIZES[2], dtype=np.float32)[self.y]
        self.adam = _NumpyAdam(self.params, LR) if optimizer == "adam" else None

    def step(self) -> float:
        w1, b1, w2, b2 = self.params
        x, n = self.x, self.x.shape[0]
        h = x @ w1.T + b1
        r = np.maximum(h, 0)
        logits = r @ w2.T + b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        s = e.sum(axis=1, keepdims=True)
        loss = float(np.log(s).mean() - (shifted * self.onehot).sum() / n)
        dlogits = (e / s - self.onehot) / n
        dr = dlogits @ w2
        dr *= h > 0
        grads = [dr.T @ x, dr.sum(axis=0), dlogits.T @ r, dlogits.sum(axis=0)]
        if self.adam is not None:
            self.adam.step(grads)
        else:
            for p, g in zip(self.params, grads):
                p -= LR * g
        return loss


class _NumpyAdam:
    """Adam, or AdamW with a `weight_decay` (decoupled: p *= 1 - lr * weight_decay), written by hand over a
    list of numpy arrays updated in place, with torch's defaults (betas 0.9, 0.999, eps 1e-8)."""

    def __init__(self, params: list[np.ndarray], lr: float, weight_decay: float = 0.0) -> None:
        self.params, self.lr, self.weight_decay = params, lr, weight_decay
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads: list[np.ndarray], beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> None:
        self.t += 1
        c1, c2 = 1 - beta1 ** self.t, 1 - beta2 ** self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            if self.weight_decay:
                p *= 1 - self.lr * self.weight_decay
            m *= beta1
            m += (1 - beta1) * g
            v *= beta2
            v += (1 - beta2) * g * g
            p -= (self.lr / c1) * m / (np.sqrt(v / c2) + eps)


# --- a GPT block forward + backward ----------------------------------------------------------------

def gpt_block_config():
    """GPT-2's block at n_embd 128, 4 heads (ember.testing.models' definition, run with lib=ember or torch)."""
    from ember.testing.models import GPT2Config

    return GPT2Config(n_ctx=GPT_SEQ, n_embd=GPT_EMBD, n_head=GPT_HEADS, n_layer=1)


def gpt_block_step(framework: str, seed: int = 0, compiled: bool = False) -> Callable:
    """Forward and backward of one GPT-2 block (n_embd 128, 4 heads, seq 64, batch 8), loss mean(out**2).
    The block is ember.testing.models' GPT-2 Block built with `lib`; weights from a numpy rng.
    `compiled`: the block through `ember.compile` (for ember; torch's block stays eager)."""
    _no_numpy(framework, "gpt_block_step")
    block, x = _gpt_block(framework, seed)
    model = block if not compiled or framework != "ember" else lib_of(framework).compile(block)

    def step():
        block.zero_grad()
        out = model(x)
        loss = (out * out).mean()
        loss.backward()
        return loss

    step.block = block                               # for tests: the gradients to compare
    return step


def gpt_block_inference(framework: str, seed: int = 0, compiled: bool = False) -> Callable:
    """The GPT-2 block's forward without autograd (`no_grad`), through `ember.compile` when `compiled`
    (for ember; torch's block stays eager)."""
    _no_numpy(framework, "gpt_block_inference")
    lib = lib_of(framework)
    block, x = _gpt_block(framework, seed)
    model = block if not compiled or framework != "ember" else lib.compile(block)

    def forward():
        with lib.no_grad():
            return model(x)
    return forward


def load_gpt2_init(lib, module, rng: np.random.Generator, draw_dtype=np.float64) -> None:
    """Load float32 GPT-2-style weights drawn from `rng` into `module` (a GPT-2 or a block of one, built with
    `lib`), in its state_dict's order: N(0, 0.02) everywhere, plus 1 for the LayerNorms' weights (1 + noise,
    so their gradients differ from the biases'). `draw_dtype`: the draws' (float32 takes half the time and
    memory of float64, for GPT-2 small's 124M parameters; the values then differ from float64's)."""
    ln_weights = ("ln_1.weight", "ln_2.weight", "ln_f.weight")
    module.load_state_dict({k: lib.from_numpy((rng.standard_normal(tuple(v.shape), dtype=draw_dtype) * 0.02 +
                                               (1.0 if k.endswith(ln_weights) else 0.0)).astype(np.float32, copy=False))
                            for k, v in module.state_dict().items()})


def _gpt_block(framework: str, seed: int):
    """(the GPT-2 block, its input batch), weights from a numpy rng."""
    from ember.testing.models import _gpt2_classes

    lib = lib_of(framework)
    block = _gpt2_classes(lib).Block(gpt_block_config())
    rng = np.random.default_rng(seed)
    load_gpt2_init(lib, block, rng)
    x = lib.tensor(rng.standard_normal((GPT_BATCH, GPT_SEQ, GPT_EMBD)).astype(np.float32))
    return block, x


# --- a nanoGPT-style training step -------------------------------------------------------------------

NANOGPT = dict(vocab_size=256, n_ctx=64, n_embd=128, n_head=4, n_layer=2)
NANOGPT_BATCH = 8


def torch_compile(model):
    """torch.compile (inductor), the compiled torch variant; tests replace it by the identity, leaving its
    tens of seconds of compiling to compare.py."""
    import torch

    return torch.compile(model)


def nanogpt_step(framework: str, seed: int = 0, compiled: bool | str = False, approximate: str = "tanh",
                 dtype: str = "float32", device: str = "cpu", wrap: Callable | None = None) -> Callable:
    """One training step of a nanoGPT-style model (GPT-2's blocks at vocab 256, d 128, 4 heads, 2 layers,
    context 64; batch 8): zero_grad, forward, cross_entropy over the vocabulary, backward, AdamW (lr 1e-3).
    `compiled`: the model through ember.compile (ember) or torch.compile (torch), or "step": ember's whole
    step through `ember.compile(step, mode="reduce-overhead")`; `approximate`: the GELU's ("tanh", or
    "none" for the exact one); `dtype`: the parameters' ("float32", "float64"); `device`: ember's device;
    `wrap`: applied to the model before the step runs it (DistributedDataParallel in ddp_scaling.py).
    Weights from a numpy rng; returns the loss. "numpy": the step's GEMMs alone (nanogpt_gemms), the floor
    under any step of this model on the CPU."""
    if framework == "numpy":
        return nanogpt_gemms(dtype)
    from ember.testing.models import GPT2Config, _gpt2_classes

    lib = lib_of(framework)
    model = _gpt2_classes(lib).GPT2(GPT2Config(**NANOGPT, gelu_approximate=approximate))
    rng = np.random.default_rng(seed)
    load_gpt2_init(lib, model, rng)
    model.to(getattr(lib, dtype))
    idx = lib.tensor(rng.integers(0, NANOGPT["vocab_size"], (NANOGPT_BATCH, NANOGPT["n_ctx"])))
    targets = lib.tensor(rng.integers(0, NANOGPT["vocab_size"], (NANOGPT_BATCH, NANOGPT["n_ctx"])))
    if device != "cpu":
        model.to(device)
        idx, targets = idx.to(device), targets.to(device)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    run = model if compiled in (False, "step") else lib.compile(model) if framework == "ember" else \
        torch_compile(model)
    if wrap is not None:
        run = wrap(run)
    cross_entropy = lib.nn.functional.cross_entropy

    def step():
        opt.zero_grad()
        loss = cross_entropy(run(idx).view(-1, NANOGPT["vocab_size"]), targets.view(-1))
        loss.backward()
        opt.step()
        return loss

    step.model = model
    if compiled == "step":
        whole = lib.compile(step, mode="reduce-overhead")
        whole.model = model
        return whole
    return step


def nanogpt_gemms(dtype: str = "float32") -> Callable:
    """The matrix products of one nanoGPT training step (nanogpt_step's model and batch) and nothing else,
    through numpy's BLAS into preallocated outputs: what no compiler removes, so the time of the fastest
    possible step. Per linear layer (M = batch * context rows), x @ W.T forward, grad @ W and grad.T @ x
    backward: 9 layers (4 per block and the head), 27 products. Per attention (batch * heads products of
    context x head size), q @ k.T and p @ v forward, and their four gradients: 12 batched products."""
    C, V, T, H, L = (NANOGPT[k] for k in ("n_embd", "vocab_size", "n_ctx", "n_head", "n_layer"))
    M, BH, hs = NANOGPT_BATCH * T, NANOGPT_BATCH * H, C // H
    rng = np.random.default_rng(0)
    pairs = []

    def product(a_shape: tuple, b_shape: tuple) -> None:
        a, b = (rng.standard_normal(s).astype(dtype) for s in (a_shape, b_shape))
        pairs.append((a, b, np.empty(a_shape[:-1] + b_shape[-1:], dtype)))

    for fan_in, fan_out in [(C, 3 * C), (C, C), (C, 4 * C), (4 * C, C)] * L + [(C, V)]:
        product((M, fan_in), (fan_in, fan_out))      # forward
        product((M, fan_out), (fan_out, fan_in))     # the input's gradient
        product((fan_out, M), (M, fan_in))           # the weight's gradient
    for _ in range(L):
        for a, b in [((T, hs), (hs, T)), ((T, T), (T, hs)),                            # q @ k.T, p @ v
                     ((T, hs), (hs, T)), ((T, T), (T, hs)), ((T, T), (T, hs)), ((T, T), (T, hs))]:
            product((BH,) + a, (BH,) + b)

    def step():
        for a, b, out in pairs:
            np.matmul(a, b, out=out)
        return out
    step.shapes = [(a.shape, b.shape) for a, b, _ in pairs]
    return step


# --- a word-level LSTM language model (PyTorch's word_language_model example) -----------------------
LSTM_LM = dict(ntoken=10000, ninp=256, nhid=256, nlayers=2)   # Penn Treebank's vocabulary, the classic setting
LSTM_LM_SEQ, LSTM_LM_BATCH = 35, 20


def lstm_lm_step(framework: str, rnn_type: str = "LSTM", seed: int = 0, dtype: str = "float32") -> Callable:
    """One training step of word_language_model's RNNModel (2 layers of 256, embedding 256, vocabulary
    10000, no dropout) on a batch of 20 sequences of 35 tokens: the example's train() step (state
    detached and carried over, zero_grad, forward, NLL loss, backward, clip_grad_norm_ 0.25, SGD by hand,
    lr 20). Weights from a numpy rng; returns the loss."""
    _no_numpy(framework, "lstm_lm_step")
    from ember.testing.language_models import init_hidden, rnn_lm_classes, train_step

    lib = lib_of(framework)
    model = rnn_lm_classes(lib).RNNModel(rnn_type, dropout=0.0, **LSTM_LM)
    rng = np.random.default_rng(seed)
    model.load_state_dict({k: lib.tensor(rng.uniform(-0.1, 0.1, tuple(v.shape)).astype(dtype))
                           for k, v in model.state_dict().items()})
    data = lib.tensor(rng.integers(0, LSTM_LM["ntoken"], (LSTM_LM_SEQ, LSTM_LM_BATCH)))
    targets = lib.tensor(rng.integers(0, LSTM_LM["ntoken"], (LSTM_LM_SEQ * LSTM_LM_BATCH,)))
    state = {"hidden": init_hidden(lib, model, LSTM_LM_BATCH)}

    def step():
        loss, state["hidden"] = train_step(lib, model, data, targets, state["hidden"])
        return loss

    step.model = model
    return step


# --- GPT-2 small built on the meta device ----------------------------------------------------------

def gpt2_small_meta(framework: str) -> Callable:
    """Construct GPT-2 small (124M parameters) on the meta device: module and parameter creation
    without allocation, i.e. the framework's own Python overhead."""
    _no_numpy(framework, "gpt2_small_meta")
    from ember.testing.models import build_gpt2

    lib = lib_of(framework)
    return lambda: build_gpt2(lib=lib, device="meta")


# --- GPT-2 small inference ---------------------------------------------------------------------------

_GPT2_MODELS: dict = {}


def gpt2_inference_config():
    """GPT-2 small's GPT2Config, gpt2_model's default; tests replace it by a 2-layer one, leaving the seconds
    of drawing GPT-2 small's weights to compare.py and asv."""
    from ember.testing.models import gpt2_small_config

    return gpt2_small_config()


def gpt2_model(framework: str, config=None, seed: int = 0):
    """ember.testing.models' GPT-2 for `config` (default: gpt2_inference_config, GPT-2 small, 124M parameters)
    in float32, built with `framework`'s lib, weights from a numpy rng (load_gpt2_init, float32 draws), in
    eval mode. Built once per process per (framework, config, seed) and cached in a module-level dict:
    GPT-2 small's weights take seconds to draw, which neither asv's setup nor compare.py's rows should pay
    twice."""
    from ember.testing.models import build_gpt2

    config = config or gpt2_inference_config()
    key = (framework, config, seed)
    if key not in _GPT2_MODELS:
        lib = lib_of(framework)
        # built on meta and materialised uninitialised: the weights are loaded below, so the framework's own
        # initialisation (seconds of random draws) would be thrown away
        model = build_gpt2(config, lib=lib, device="meta").to_empty(device="cpu")
        model.lm_head.weight = model.wte.weight          # tied again: torch's to_empty unties them
        load_gpt2_init(lib, model, np.random.default_rng(seed), draw_dtype=np.float32)
        _GPT2_MODELS[key] = model.eval()
    return _GPT2_MODELS[key]


def gpt2_small_inference(framework: str, seed: int = 0, tokens: int = 32, config=None) -> Callable:
    """Inference latency of GPT-2 small (gpt2_model: 12 layers, 768 wide, 12 heads, vocabulary 50257; 124M
    parameters, float32) at batch 1: one forward under no_grad over a prompt of `tokens` token ids (1, tokens)
    from a numpy rng; the callable returns the logits, (1, tokens, 50257). `config`: another GPT2Config
    (the tests' small one)."""
    _no_numpy(framework, "gpt2_small_inference")
    lib = lib_of(framework)
    model = gpt2_model(framework, config, seed)
    idx = lib.tensor(np.random.default_rng(seed).integers(0, model.cfg.vocab_size, (1, tokens)))

    def forward():
        with lib.no_grad():
            return model(idx)
    return forward


# --- an optimizer's step alone ----------------------------------------------------------------------

# one transformer-ish layer's parameters, repeated: a (1024, 256) and a (256, 256) weight with their biases,
# norms' weights and biases, a small (256, 64) projection: 350,080 elements per 10 tensors (100: 3.5M)
OPTIMIZER_SHAPES = ((1024, 256), (1024,), (256, 256), (256,), (256,), (256,), (256, 64), (64,), (64, 64), (64,))


def optimizer_step(framework: str, optimizer: str = "adamw", n_params: int = 100, seed: int = 0) -> Callable:
    """`opt.step()` alone of Adam or AdamW (ADAM_VARIANTS; torch's defaults: lr 1e-3, AdamW's weight decay
    0.01) over `n_params` float32 parameters whose shapes cycle through OPTIMIZER_SHAPES (100: 3.5M elements
    in 100 tensors), gradients set once from a numpy rng (parameters N(0, 0.02), gradients N(0, 1)). numpy:
    the same update written by hand (_NumpyAdam). The callable's `params` are the parameters it updates."""
    if optimizer not in ADAM_VARIANTS:
        raise ValueError(f"optimizer_step: optimizer must be one of {ADAM_VARIANTS}, got {optimizer!r}")
    rng = np.random.default_rng(seed)
    shapes = [OPTIMIZER_SHAPES[i % len(OPTIMIZER_SHAPES)] for i in range(n_params)]
    values = [rng.standard_normal(s, dtype=np.float32) * np.float32(0.02) for s in shapes]
    grads = [rng.standard_normal(s, dtype=np.float32) for s in shapes]
    weight_decay = 0.01 if optimizer == "adamw" else 0.0
    if framework == "numpy":
        opt = _NumpyAdam(values, 1e-3, weight_decay)

        def numpy_step():
            opt.step(grads)
        numpy_step.params = values
        return numpy_step
    lib = lib_of(framework)
    params = [lib.nn.Parameter(lib.from_numpy(v)) for v in values]
    for p, g in zip(params, grads):
        p.grad = lib.from_numpy(g)
    opt = {"adam": lib.optim.Adam, "adamw": lib.optim.AdamW}[optimizer](params, lr=1e-3, weight_decay=weight_decay)

    def step():
        opt.step()
    step.params = params
    return step


# --- cold start: a fresh interpreter's first training step ------------------------------------------

_COLD_START = '''\
import numpy as np
{import_line}

i, h, o = {sizes}
rng = np.random.default_rng(0)
model = torch.nn.Sequential(torch.nn.Linear(i, h), torch.nn.ReLU(), torch.nn.Linear(h, o))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.1, 0.1, tuple(p.shape)).astype(np.float32)))
x = torch.from_numpy(rng.standard_normal(({batch}, i)).astype(np.float32))
y = torch.from_numpy(rng.integers(0, o, {batch}))
optimizer = torch.optim.SGD(model.parameters(), lr={lr})
optimizer.zero_grad()
loss = torch.nn.functional.cross_entropy(model(x), y)
loss.backward()
optimizer.step()
print(loss.item(), model[0].weight.sum().item())
'''


def cold_start_code(framework: str) -> str:
    """The source of a whole program, for `python -c CODE` in a fresh interpreter: import the framework
    (ember as `import ember as torch`), build the digits MLP (64-128-10, nn.Sequential of Linear/ReLU)
    with weights from a numpy rng, one training step on a batch of 64 (zero_grad, forward, cross_entropy,
    backward, SGD at lr LR); it prints the loss and the sum of the first layer's updated weight."""
    _check_framework(framework)
    _no_numpy(framework, "cold_start_code")
    import_line = "import torch" if framework == "torch" else "import ember as torch"
    return _COLD_START.format(import_line=import_line, sizes=MLP_SIZES, batch=MLP_BATCH, lr=LR)
