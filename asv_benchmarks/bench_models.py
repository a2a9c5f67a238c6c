"""Small models end to end, ember vs PyTorch (vs hand-written numpy where one exists): the digits
MLP training step, a GPT block's forward and backward, a nanoGPT-style training step (eager and compiled),
and GPT-2 small's construction on meta.
"""
from __future__ import annotations

from . import workloads as W


class MLPTrainingStep:
    """64-128-10 MLP, batch 64, cross_entropy: zero_grad, forward, backward, SGD or Adam step.
    numpy: the same step written by hand (forward, backward and update in numpy). `mode`: ember's step
    through ember.compile(step, mode=...) ("reduce-overhead": recorded once, replayed; torch's and
    numpy's steps are the same either way)."""

    params = (list(W.FRAMEWORKS), list(W.OPTIMIZERS), ["eager", "reduce-overhead"])
    param_names = ["framework", "optimizer", "mode"]

    def setup(self, framework, optimizer, mode):
        self.fn = W.mlp_step(framework, optimizer, mode=None if mode == "eager" else mode)
        for _ in range(3):                             # optimizer state made, the step recorded and replayed once
            self.fn()

    def time_step(self, framework, optimizer, mode):
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
    `compiled`: ember's whole step through ember.compile (recorded and replayed), torch's model through
    torch.compile."""

    params = (["ember", "torch"], [False, True])
    param_names = ["framework", "compiled"]

    def setup(self, framework, compiled):
        self.fn = W.nanogpt_step(framework, compiled="step" if compiled and framework == "ember" else compiled)
        for _ in range(3):                             # compiled (recorded, replayed once), optimizer state made
            self.fn()

    def time_step(self, framework, compiled):
        self.fn()


class LSTMLanguageModelStep:
    """word_language_model's training step: 2 LSTM layers of 256, embedding 256, vocabulary 10000, a batch of
    20 sequences of 35 tokens (state carried over, gradient clipping, SGD by hand)."""

    params = ["ember", "torch"]
    param_names = ["framework"]

    def setup(self, framework):
        self.fn = W.lstm_lm_step(framework)
        self.fn()

    def time_step(self, framework):
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
