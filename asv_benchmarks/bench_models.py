"""Small models end to end, ember vs PyTorch (vs hand-written numpy where one exists): the digits
MLP training step, a GPT block's forward and backward, a nanoGPT-style training step (eager and compiled),
and GPT-2 small's construction on meta.
"""
from __future__ import annotations

from . import workloads as W


class MLPTrainingStep:
    """64-128-10 MLP, batch 64, cross_entropy: zero_grad, forward, backward, SGD or Adam step.
    numpy: the same step written by hand (forward, backward and update in numpy)."""

    params = (list(W.FRAMEWORKS), list(W.OPTIMIZERS))
    param_names = ["framework", "optimizer"]

    def setup(self, framework, optimizer):
        self.fn = W.mlp_step(framework, optimizer)
        self.fn()                                      # optimizer state exists before timing

    def time_step(self, framework, optimizer):
        self.fn()


class GPTBlock:
    """One GPT-2 block (n_embd 128, 4 heads), seq 64, batch 8: forward, mean(out**2), backward."""

    params = ["ember", "torch"]
    param_names = ["framework"]

    def setup(self, framework):
        self.fn = W.gpt_block_step(framework)

    def time_forward_backward(self, framework):
        self.fn()


class NanoGPTStep:
    """A nanoGPT-style training step (vocab 256, d 128, 4 heads, 2 layers, context 64, batch 8, AdamW);
    `compiled`: the model through ember.compile / torch.compile."""

    params = (["ember", "torch"], [False, True])
    param_names = ["framework", "compiled"]

    def setup(self, framework, compiled):
        self.fn = W.nanogpt_step(framework, compiled=compiled)
        self.fn()                                      # compiled, optimizer state made

    def time_step(self, framework, compiled):
        self.fn()


class GPT2SmallMeta:
    """ember.testing.models.build_gpt2(lib=...) on device="meta": module and parameter construction."""

    params = ["ember", "torch"]
    param_names = ["framework"]
    timeout = 120

    def setup(self, framework):
        self.fn = W.gpt2_small_meta(framework)

    def time_construct(self, framework):
        self.fn()
