"""Small models end to end, ember vs PyTorch (vs hand-written numpy where one exists): the digits
MLP and CNN training steps, a GPT block's forward and backward, a nanoGPT-style training step (eager and
compiled, tanh or exact GELU), an LSTM language model's step, an Adam/AdamW step alone, GPT-2 small's
inference latency, and its construction on meta.
"""
from __future__ import annotations

from . import conv_workloads as C, workloads as W


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


class CNNTrainingStep:
    """examples/digits_cnn.py's CNN and step: conv 1->16, conv 16->32 (3x3), max_pool, dropout, linear
    128->64->10, log_softmax, nll_loss, Adadelta; a batch of 64 images (64, 1, 8, 8)."""

    params = ["ember", "torch"]
    param_names = ["framework"]

    def setup(self, framework):
        self.fn = C.cnn_step(framework)
        self.fn()                                      # optimizer state made

    def time_step(self, framework):
        self.fn()


class ResNetBlocks:
    """Forward and backward through two of ResNet's basic blocks (conv 3x3, batch norm, relu, conv 3x3, batch
    norm, shortcut, relu; 32 -> 32 channels at 32 x 32, then 32 -> 64 at stride 2), a batch of 8."""

    params = ["ember", "torch"]
    param_names = ["framework"]

    def setup(self, framework):
        self.fn = C.resnet_blocks_step(framework)

    def time_forward_backward(self, framework):
        self.fn()


class NanoGPTStep:
    """A nanoGPT-style training step (vocab 256, d 128, 4 heads, 2 layers, context 64, batch 8, AdamW);
    `compiled`: ember's whole step through ember.compile (recorded and replayed), torch's model through
    torch.compile; `approximate`: the GELU's, "tanh" (GPT-2's) or "none" (the exact one, nanoGPT's nn.GELU())."""

    params = (["ember", "torch"], [False, True], ["tanh", "none"])
    param_names = ["framework", "compiled", "approximate"]

    def setup(self, framework, compiled, approximate):
        self.fn = W.nanogpt_step(framework, compiled="step" if compiled and framework == "ember" else compiled,
                                 approximate=approximate)
        for _ in range(3):                             # compiled (recorded, replayed once), optimizer state made
            self.fn()

    def time_step(self, framework, compiled, approximate):
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


class OptimizerStep:
    """`opt.step()` alone, Adam or AdamW (torch's defaults), over 100 float32 parameters of mixed shapes
    ((1024, 256), (256, 256), (256, 64), (64, 64) and vectors: 3.5M elements), gradients set once.
    numpy: the same update written by hand over the arrays."""

    params = (list(W.FRAMEWORKS), list(W.ADAM_VARIANTS))
    param_names = ["framework", "optimizer"]

    def setup(self, framework, optimizer):
        self.fn = W.optimizer_step(framework, optimizer)
        self.fn()                                      # optimizer state made

    def time_step(self, framework, optimizer):
        self.fn()


class GPT2SmallInference:
    """GPT-2 small (124M parameters, float32) at batch 1: one forward under no_grad over a 32-token prompt,
    logits (1, 32, 50257); the model is built (seconds) in setup."""

    params = ["ember", "torch"]
    param_names = ["framework"]
    timeout = 300

    def setup(self, framework):
        self.fn = W.gpt2_small_inference(framework)
        self.fn()

    def time_forward(self, framework):
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
