"""ember.optim.swa_utils against torch.optim.swa_utils: the same model and training, float64; averaged
parameters and buffers (SWA, EMA by avg_fn and by multi_avg_fn, with and without use_buffers), SWALR's
learning rates, update_bn's statistics, and the errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _pair_of_models():
    torch.manual_seed(0)
    t_model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(),
                                  torch.nn.Linear(6, 2)).double()
    e_model = ember.nn.Sequential(ember.nn.Linear(4, 6), ember.nn.BatchNorm1d(6), ember.nn.ReLU(),
                                  ember.nn.Linear(6, 2)).to(ember.float64)
    e_model.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_model.state_dict().items()})
    return t_model, e_model


BATCHES = [np.random.default_rng(k).standard_normal((8, 4)) for k in range(5)]


def _assert_same_state(e_module, t_module):
    t_state = t_module.state_dict()
    e_state = e_module.state_dict()
    assert list(e_state) == list(t_state)
    for name, value in t_state.items():
        np.testing.assert_allclose(e_state[name].numpy(), value.numpy(), rtol=1e-12, atol=1e-14, err_msg=name)


@pytest.mark.parametrize("averaging", ["swa", "ema avg_fn", "ema multi_avg_fn", "swa use_buffers"])
def test_averaged_model_follows_torchs_over_a_training_run(averaging):
    t_model, e_model = _pair_of_models()
    kw = {"swa": ({}, {}), "swa use_buffers": ({"use_buffers": True}, {"use_buffers": True}),
          "ema avg_fn": ({"avg_fn": torch.optim.swa_utils.get_ema_avg_fn(0.8)},
                         {"avg_fn": ember.optim.swa_utils.get_ema_avg_fn(0.8)}),
          "ema multi_avg_fn": ({"multi_avg_fn": torch.optim.swa_utils.get_ema_multi_avg_fn(0.9), "use_buffers": True},
                               {"multi_avg_fn": ember.optim.swa_utils.get_ema_multi_avg_fn(0.9),
                                "use_buffers": True})}[averaging]
    t_avg = torch.optim.swa_utils.AveragedModel(t_model, **kw[0])
    e_avg = ember.optim.swa_utils.AveragedModel(e_model, **kw[1])
    t_opt = torch.optim.SGD(t_model.parameters(), lr=0.1)
    e_opt = ember.optim.SGD(e_model.parameters(), lr=0.1)
    for batch in BATCHES:
        for model, opt, avg, lib in ((t_model, t_opt, t_avg, torch), (e_model, e_opt, e_avg, ember)):
            opt.zero_grad()
            model(lib.tensor(batch)).square().mean().backward()
            opt.step()
            avg.update_parameters(model)
    assert int(e_avg.n_averaged) == int(t_avg.n_averaged) == len(BATCHES)
    _assert_same_state(e_avg, t_avg)
    x = BATCHES[0]
    t_avg.eval()
    e_avg.eval()
    np.testing.assert_allclose(e_avg(ember.tensor(x)).detach().numpy(), t_avg(torch.tensor(x)).detach().numpy(),
                               rtol=1e-12)


def test_update_bn_recomputes_torchs_statistics():
    t_model, e_model = _pair_of_models()
    t_model.eval()
    e_model.eval()
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in BATCHES], t_model)
    ember.optim.swa_utils.update_bn([(ember.tensor(b), 0) for b in BATCHES], e_model)
    _assert_same_state(e_model, t_model)
    assert not e_model.training and e_model[1].momentum == t_model[1].momentum == 0.1


@pytest.mark.parametrize("strategy, anneal_epochs, swa_lr", [("cos", 3, 0.05), ("linear", 4, [0.05, 0.02]),
                                                            ("cos", 0, 0.01)])
def test_swalr_gives_torchs_learning_rates(strategy, anneal_epochs, swa_lr):
    lrs = []
    for lib in (torch, ember):
        w = [lib.zeros(2, requires_grad=True), lib.zeros(2, requires_grad=True)]
        opt = lib.optim.SGD([{"params": [w[0]]}, {"params": [w[1]], "lr": 0.3}], lr=0.5)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr, anneal_epochs=anneal_epochs, anneal_strategy=strategy)
        seen = []
        for _ in range(7):
            opt.step()
            sched.step()
            seen.append(sched.get_last_lr())
        lrs.append(seen)
    np.testing.assert_allclose(lrs[1], lrs[0], rtol=1e-15)


@pytest.mark.parametrize("call", [
    lambda lib: lib.optim.swa_utils.get_ema_avg_fn(1.5),
    lambda lib: lib.optim.swa_utils.get_ema_multi_avg_fn(-0.1),
    lambda lib: lib.optim.swa_utils.SWALR(lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1), 0.05,
                                          anneal_strategy="exp"),
    lambda lib: lib.optim.swa_utils.SWALR(lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1), 0.05,
                                          anneal_epochs=-1),
])
def test_errors_are_torchs(call):
    with pytest.raises(ValueError) as want:
        call(torch)
    with pytest.raises(ValueError) as got:
        call(ember)
    assert str(got.value) == str(want.value)
