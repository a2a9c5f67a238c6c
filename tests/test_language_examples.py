"""Programs built like PyTorch's sequence examples, run in ember and torch from the same weights.

word_language_model: its RNNModel (ember.testing.language_models) with each recurrent type, tied
weights too, and its TransformerModel, trained by its train() step (truncated backpropagation through time with the state carried
over, gradient clipping, SGD by hand). mnist_rnn: its network (an LSTM over image rows, batch norm,
two linear layers) trained with Adadelta and a StepLR schedule. Dropout is off (p = 0): the two
frameworks draw different random numbers. Losses and final weights must agree.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.testing.language_models import init_hidden, rnn_lm_classes, train_step, transformer_lm_classes


def load_same_weights(models, seed: int = 0) -> None:
    """Every model gets the same uniform(-0.1, 0.1) float32 weights, by state dict key."""
    rng = np.random.default_rng(seed)
    values = {k: rng.uniform(-0.1, 0.1, tuple(v.shape)).astype(np.float32)
              for k, v in models[0][1].state_dict().items() if v.dtype.is_floating_point}
    for lib, model in models:
        state = model.state_dict()
        model.load_state_dict({k: lib.tensor(values[k]) if k in values else state[k] for k in state})


def same_weights(models) -> None:
    (_, a), (_, b) = models
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("rnn_type, tied", [("LSTM", False), ("GRU", False), ("RNN_TANH", False),
                                            ("RNN_RELU", False), ("LSTM", True)])
def test_word_language_model_trains_as_in_torch(rnn_type, tied):
    models = [(lib, rnn_lm_classes(lib).RNNModel(rnn_type, 50, 16, 16, 2, dropout=0.0, tie_weights=tied))
              for lib in (torch, ember)]
    load_same_weights(models)
    rng = np.random.default_rng(1)
    batches = [(rng.integers(0, 50, (7, 4)), rng.integers(0, 50, (28,))) for _ in range(3)]
    losses = []
    for lib, model in models:
        hidden, run = init_hidden(lib, model, 4), []
        for data, targets in batches:
            loss, hidden = train_step(lib, model, lib.tensor(data), lib.tensor(targets), hidden, lr=1.0)
            run.append(float(loss.detach()))
        losses.append(run)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
    same_weights(models)


def test_word_language_models_transformer_trains_as_in_torch():
    models = []
    for lib in (torch, ember):
        model = transformer_lm_classes(lib).TransformerModel(50, 16, 2, 32, 2, dropout=0.0)
        models.append((lib, model))
    load_same_weights(models)
    for lib, model in models:
        model.pos_encoder.pe = lib.tensor(models[0][1].pos_encoder.pe.numpy())   # the same positions, bit for bit
        for module in model.modules():          # the layers' own dropout (nn.Transformer's default 0.1) off too
            if isinstance(module, lib.nn.Dropout):
                module.p = 0.0
            if isinstance(module, lib.nn.MultiheadAttention):
                module.dropout = 0.0
    rng = np.random.default_rng(3)
    batches = [(rng.integers(0, 50, (7, 4)), rng.integers(0, 50, (28,))) for _ in range(3)]
    losses = []
    for lib, model in models:
        model.train()
        losses.append([float(train_step(lib, model, lib.tensor(d), lib.tensor(t), None, lr=0.5)[0].detach())
                       for d, t in batches])
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
    same_weights(models)


def mnist_rnn_net(lib):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(input_size=28, hidden_size=64, batch_first=True)
            self.batchnorm = nn.BatchNorm1d(64)
            self.dropout1 = nn.Dropout(0.0)
            self.dropout2 = nn.Dropout(0.0)
            self.fc1 = nn.Linear(64, 32)
            self.fc2 = nn.Linear(32, 10)

        def forward(self, input):
            input = input.reshape(-1, 28, 28)
            output, _ = self.rnn(input)
            output = self.batchnorm(output[:, -1, :])
            output = self.fc2(self.dropout2(F.relu(self.fc1(self.dropout1(output)))))
            return F.log_softmax(output, dim=1)
    return Net()


def test_mnist_rnn_trains_as_in_torch():
    models = [(lib, mnist_rnn_net(lib)) for lib in (torch, ember)]
    load_same_weights(models)
    rng = np.random.default_rng(2)
    batches = [(rng.random((16, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, (16,))) for _ in range(4)]
    losses = []
    for lib, model in models:
        opt = lib.optim.Adadelta(model.parameters(), lr=1.0)
        schedule = lib.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
        model.train()
        run = []
        for data, target in batches:
            opt.zero_grad()
            loss = lib.nn.functional.nll_loss(model(lib.tensor(data)), lib.tensor(target))
            loss.backward()
            opt.step()
            schedule.step()
            run.append(float(loss.detach()))
        losses.append(run)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
    same_weights(models)
