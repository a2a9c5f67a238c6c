"""optim.LBFGS against torch's: the same losses, closure evaluations and parameters, step after step.

The model is PyTorch's time_sequence_prediction example at a small size (two LSTMCells and a Linear over
sine waves, float64, MSE), trained as it trains: `optimizer.step(closure)` with lr 0.8; with and
without the strong Wolfe line search. Also the Rosenbrock function from torch's optimizer tests, and
torch's errors. The iterates agree to rounding: ember's dot products are BLAS's as torch's are, but not
necessarily summed in the same order, and tens of iterations amplify a last-bit difference (to ~1e-10
after four Rosenbrock steps; the evaluation counts stay equal).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def sequence_model(lib, hidden: int = 8):
    nn = lib.nn

    class Sequence(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm1 = nn.LSTMCell(1, hidden)
            self.lstm2 = nn.LSTMCell(hidden, hidden)
            self.linear = nn.Linear(hidden, 1)

        def forward(self, input, future: int = 0):
            zeros = lambda: lib.zeros(input.size(0), hidden, dtype=lib.double)   # noqa: E731
            h, c, h2, c2 = zeros(), zeros(), zeros(), zeros()
            outputs = []
            for input_t in input.split(1, dim=1):
                h, c = self.lstm1(input_t, (h, c))
                h2, c2 = self.lstm2(h, (h2, c2))
                outputs.append(self.linear(h2))
            for _ in range(future):                  # predicting the future from its own outputs
                h, c = self.lstm1(outputs[-1], (h, c))
                h2, c2 = self.lstm2(h, (h2, c2))
                outputs.append(self.linear(h2))
            return lib.cat(outputs, dim=1)
    return Sequence()


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_time_sequence_prediction_trains_as_in_torch(line_search_fn):
    torch.manual_seed(0)
    t_model = sequence_model(torch).double()
    e_model = sequence_model(ember).to(ember.float64)
    e_model.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t_model.state_dict().items()})
    waves = np.sin(np.arange(21)[None, :] / 3.0 + np.arange(4)[:, None])
    runs = []
    for lib, model in ((torch, t_model), (ember, e_model)):
        inp, target = lib.tensor(waves[:, :-1]), lib.tensor(waves[:, 1:])
        opt = lib.optim.LBFGS(model.parameters(), lr=0.8, line_search_fn=line_search_fn)
        criterion = lib.nn.MSELoss()
        losses = []
        for _ in range(3):
            def closure():
                opt.zero_grad()
                loss = criterion(model(inp), target)
                loss.backward()
                return loss
            losses.append(float(opt.step(closure).detach()))
        with lib.no_grad():
            future = model(inp[:1], future=5).numpy()
        state = opt.state[opt.param_groups[0]["params"][0]]
        runs.append((losses, state["func_evals"], state["n_iter"], future))
    (t_losses, t_evals, t_iter, t_future), (e_losses, e_evals, e_iter, e_future) = runs
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-9)
    assert (e_evals, e_iter) == (t_evals, t_iter)
    np.testing.assert_allclose(e_future, t_future, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("options", [dict(), dict(line_search_fn="strong_wolfe", history_size=3, max_iter=7)])
def test_rosenbrock_as_in_torch(options):
    def rosenbrock(x):
        return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    results = []
    for lib in (torch, ember):
        x = lib.tensor([-1.5, 1.5], dtype=lib.float64, requires_grad=True)
        opt = lib.optim.LBFGS([x], **options)

        def closure():
            opt.zero_grad()
            loss = rosenbrock(x)
            loss.backward()
            return loss
        for _ in range(4):
            opt.step(closure)
        results.append((x.detach().numpy(), opt.state[x]["func_evals"]))
    (t_x, t_evals), (e_x, e_evals) = results
    assert e_evals == t_evals
    np.testing.assert_allclose(e_x, t_x, rtol=1e-8)


@pytest.mark.parametrize("case", [
    lambda lib, p: lib.optim.LBFGS([{"params": [p]}, {"params": [p * 1]}]),
    lambda lib, p: lib.optim.LBFGS([p], lr=-1),
])
def test_constructor_errors_are_torchs(case):
    messages = []
    for lib in (torch, ember):
        with pytest.raises(ValueError) as info:
            case(lib, lib.zeros(2, requires_grad=True))
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_an_unknown_line_search_is_refused_as_torch_refuses_it():
    for lib in (torch, ember):
        x = lib.ones(2, requires_grad=True)
        opt = lib.optim.LBFGS([x], line_search_fn="armijo")

        def closure():
            opt.zero_grad()
            loss = (x * x).sum()
            loss.backward()
            return loss
        with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
            opt.step(closure)
