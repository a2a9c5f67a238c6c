"""The convolutional workloads that the asv benchmarks and compare.py time: examples/digits_cnn.py's training
step, and forward + backward through ResNet's basic blocks. Builders as in workloads.py: each takes
`framework` ("ember" or "torch"; numpy has no counterpart) and returns a zero-argument callable running one
iteration, which returns the loss; the weights come from a numpy rng, the same in both frameworks."""
from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Callable

import numpy as np

from .workloads import _no_numpy, lib_of

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# --- the digits CNN training step (examples/digits_cnn.py) -------------------------------------------

CNN_BATCH = 64


@functools.lru_cache(maxsize=None)
def example(name: str) -> ModuleType:
    """examples/<name>.py imported as a module (once), so a workload runs the example's own model and step."""
    spec = importlib.util.spec_from_file_location(f"ember_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cnn_step(framework: str, seed: int = 0, dropout: tuple[float, float] = (0.25, 0.5)) -> Callable:
    """One training step of examples/digits_cnn.py's CNN, the example's own `cnn_model(lib)` and `train_step`:
    conv 1->16 3x3, relu, conv 16->32 3x3, relu, max_pool 2, dropout, linear 128->64, relu, dropout,
    linear 64->10, log_softmax; nll_loss; Adadelta at the example's lr 1.0. A batch of 64 single-channel
    8x8 images (64, 1, 8, 8) and their labels from a numpy rng; weights from it too (uniform within
    1/sqrt(fan_in), torch's default bound). zero_grad, forward, loss, backward, step; the callable returns
    the loss as a float (the example's step calls .item()). `dropout`: the two dropout probabilities (the
    example's by default; the tests pass (0, 0), as ember's and torch's dropout masks differ). The callable's
    `model` is the network."""
    _no_numpy(framework, "cnn_step")
    lib = lib_of(framework)
    digits_cnn = example("digits_cnn")
    model = digits_cnn.cnn_model(lib)(*dropout)
    rng = np.random.default_rng(seed)
    state = {}
    for name, value in model.state_dict().items():
        fan_in = int(np.prod(tuple(model.get_submodule(name.rsplit(".", 1)[0]).weight.shape)[1:]))
        state[name] = lib.from_numpy(rng.uniform(-1, 1, tuple(value.shape)).astype(np.float32) / np.sqrt(fan_in))
    model.load_state_dict(state)
    x = lib.from_numpy(rng.standard_normal((CNN_BATCH, 1, 8, 8)).astype(np.float32))
    y = lib.from_numpy(rng.integers(0, 10, CNN_BATCH))
    optimizer = lib.optim.Adadelta(model.parameters(), lr=1.0)

    def step():
        return digits_cnn.train_step(lib, model, optimizer, x, y)
    step.model = model
    return step


# --- ResNet's basic blocks, forward and backward --------------------------------------------------

#: two basic blocks of a CIFAR-style ResNet stage boundary: 32 -> 32 channels at 32 x 32, then 32 -> 64 at
#: stride 2 with its 1x1 projection shortcut; a batch of 8 feature maps
RESNET_BLOCKS = ((32, 32, 1), (32, 64, 2))
RESNET_INPUT = (8, 32, 32, 32)


def resnet_classes(lib) -> type:
    """torchvision's BasicBlock written against `lib` (ember or torch): 3x3 conv (no bias), batch norm, relu,
    3x3 conv, batch norm, the shortcut added (a 1x1 conv and batch norm where the stride or the width
    changes), relu."""
    nn, F = lib.nn, lib.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                                nn.BatchNorm2d(planes))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + (x if self.downsample is None else self.downsample(x)))

    return BasicBlock


def resnet_blocks_step(framework: str, seed: int = 0) -> Callable:
    """Forward and backward through RESNET_BLOCKS on a batch of RESNET_INPUT feature maps from a numpy rng,
    in training mode (batch statistics; the running ones updated): the gradients set to None, the output
    squared and averaged as the loss, backward. Conv weights uniform within 1/sqrt(fan_in), batch norms at
    their initial scale and shift. The callable returns the loss; its `model` is the blocks."""
    _no_numpy(framework, "resnet_blocks_step")
    lib = lib_of(framework)
    block = resnet_classes(lib)
    model = lib.nn.Sequential(*(block(*config) for config in RESNET_BLOCKS))
    rng = np.random.default_rng(seed)
    state = model.state_dict()
    for name, value in state.items():
        if value.dim() == 4:                                   # a convolution's weight
            fan_in = int(np.prod(tuple(value.shape)[1:]))
            state[name] = lib.from_numpy(rng.uniform(-1, 1, tuple(value.shape)).astype(np.float32) / np.sqrt(fan_in))
    model.load_state_dict(state)
    x = lib.from_numpy(rng.standard_normal(RESNET_INPUT).astype(np.float32))
    parameters = list(model.parameters())

    def step():
        for p in parameters:
            p.grad = None
        loss = model(x).square().mean()
        loss.backward()
        return loss
    step.model = model
    return step
