"""ember.optim.lr_scheduler against torch's: the lr sequences (and OneCycleLR's momentum/betas)
are equal to the last bit, per group; state_dict round trips; closed forms for step(epoch)."""
from __future__ import annotations

import inspect
import math
import warnings

import pytest
import torch

import ember


class _Warmup:
    """A callable object (not a function): its __dict__ goes into LambdaLR's state_dict."""

    def __init__(self, n):
        self.n = n

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.n)


SCHEDULERS = [
    ("StepLR", dict(step_size=3)),
    ("StepLR", dict(step_size=2, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=7)),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
    ("LambdaLR", dict(lr_lambda=lambda e: 0.95 ** e)),
    ("LambdaLR", dict(lr_lambda=_Warmup(4))),
    ("LinearLR", dict()),
    ("LinearLR", dict(start_factor=0.1, end_factor=0.6, total_iters=7)),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=30)),
    ("OneCycleLR", dict(max_lr=[0.5, 0.2], epochs=3, steps_per_epoch=10, anneal_strategy="linear",
                        three_phase=True, pct_start=0.25)),
    ("OneCycleLR", dict(max_lr=0.3, total_steps=30, cycle_momentum=False, div_factor=10.0)),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.9 if e % 2 else 1.05)),
    ("ConstantLR", dict()),
    ("ConstantLR", dict(factor=0.5, total_iters=4)),
    ("PolynomialLR", dict(total_iters=8, power=2.0)),
    ("CosineAnnealingWarmRestarts", dict(T_0=4)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.01)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("CyclicLR", dict(base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=3, step_size_down=5, mode="triangular2")),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range", gamma=0.9, base_momentum=0.7)),
]
# the schedulers without a closed form for step(epoch), or whose step(epoch) differs (their own step)
NO_CLOSED_FORM = ("OneCycleLR", "CyclicLR", "MultiplicativeLR")


def _make(lib, opt_name, sched_name, kwargs, groups=2):
    ps = [lib.zeros(2, requires_grad=True) for _ in range(groups)]
    opt_kwargs = {"lr": 0.1}
    if opt_name == "SGD":
        opt_kwargs["momentum"] = 0.9
    opt = getattr(lib.optim, opt_name)([{"params": [ps[0]]}] + [{"params": [p], "lr": 0.05 * (i + 1)}
                                                               for i, p in enumerate(ps[1:])], **opt_kwargs)
    sched = getattr(lib.optim.lr_scheduler, sched_name)(opt, **kwargs)
    return opt, sched


def _trace(opt, sched, steps, key):
    out = [[g["lr"] for g in opt.param_groups]]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(list(sched.get_last_lr()) + [g.get(key) if key != "betas" else g["betas"][0]
                                                for g in opt.param_groups])
    return out


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@pytest.mark.parametrize("name,kwargs", SCHEDULERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SCHEDULERS)])
def test_lr_sequence_equals_torch(name, kwargs, opt_name):
    steps = 30 if name == "OneCycleLR" else 25
    key = "momentum" if opt_name == "SGD" else "betas"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = _trace(*_make(torch, opt_name, name, kwargs), steps, key)
        e = _trace(*_make(ember, opt_name, name, kwargs), steps, key)
    assert e == t        # exact: the same float operations in the same order


def test_reduce_lr_on_plateau_equals_torch():
    metrics = [1.0, 0.9, 0.9, 0.91, 0.95, 0.89, 0.9, 0.9, 0.9, 0.9, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.49] * 2
    for kwargs in (dict(patience=1), dict(mode="max", factor=0.5, patience=2, cooldown=1, threshold_mode="abs"),
                   dict(patience=0, min_lr=[0.02, 0.001], threshold=0.1, eps=1e-3)):
        seqs = []
        for lib in (torch, ember):
            opt = lib.optim.SGD([{"params": [lib.zeros(1, requires_grad=True)]},
                                 {"params": [lib.zeros(1, requires_grad=True)], "lr": 0.05}], lr=0.1)
            sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
            seq = []
            for m in metrics:
                sched.step(m)
                seq.append((tuple(sched.get_last_lr()), sched.num_bad_epochs, sched.cooldown_counter, sched.best))
            seqs.append(seq)
        assert seqs[0] == seqs[1], kwargs


@pytest.mark.parametrize("name,kwargs", [s for s in SCHEDULERS if s[0] not in NO_CLOSED_FORM],
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(SCHEDULERS) if n not in NO_CLOSED_FORM])
def test_closed_form_step_epoch_equals_torch(name, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seqs = []
        for lib in (torch, ember):
            opt, sched = _make(lib, "SGD", name, kwargs)
            seq = []
            for epoch in (3, 7, 2, 11, 0):
                sched.step(epoch)
                seq.append(sched.get_last_lr())
            seqs.append(seq)
    assert seqs[0] == seqs[1]


@pytest.mark.parametrize("name,kwargs", SCHEDULERS[:10:3] + [SCHEDULERS[7], SCHEDULERS[10]])
def test_state_dict_resume(name, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt, sched = _make(ember, "SGD", name, kwargs)
        for _ in range(6):
            opt.step()
            sched.step()
        sd_opt, sd_sched = opt.state_dict(), sched.state_dict()
        assert "optimizer" not in sd_sched
        ref = _trace(opt, sched, 10, "momentum")
        opt2, sched2 = _make(ember, "SGD", name, kwargs)
        opt2.load_state_dict(sd_opt)
        sched2.load_state_dict(sd_sched)
        assert sched2.last_epoch == 6
        assert _trace(opt2, sched2, 10, "momentum")[1:] == ref[1:]


def test_signatures_match_torch():
    for name in ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR",
                 "LinearLR", "OneCycleLR", "ReduceLROnPlateau", "MultiplicativeLR", "ConstantLR", "PolynomialLR",
                 "CosineAnnealingWarmRestarts", "CyclicLR", "SequentialLR", "ChainedScheduler"]:
        e = inspect.signature(getattr(ember.optim.lr_scheduler, name))
        t = inspect.signature(getattr(torch.optim.lr_scheduler, name))
        assert [(p.name, p.kind, p.default) for p in e.parameters.values()] == \
               [(p.name, p.kind, p.default) for p in t.parameters.values()], name


def test_warnings_and_errors():
    opt, sched = _make(ember, "SGD", "StepLR", dict(step_size=2))
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.raises(TypeError, match="is not an Optimizer"):
        ember.optim.lr_scheduler.StepLR(object(), step_size=1)
    opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(KeyError, match="initial_lr"):
        ember.optim.lr_scheduler.StepLR(opt, step_size=1, last_epoch=3)
    with pytest.raises(ValueError, match="total_steps"):
        ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0)
    opt2, sched2 = _make(ember, "SGD", "OneCycleLR", dict(max_lr=0.5, total_steps=3))
    for _ in range(3):
        opt2.step()
        sched2.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        sched2.step()



def _composite(lib, opt_name, kind):
    opt, _ = _make(lib, opt_name, "StepLR", dict(step_size=1000))          # (a scheduler that does nothing here)
    S = lib.optim.lr_scheduler
    for group in opt.param_groups:
        group["lr"] = group["initial_lr"]
    if kind == "sequential":
        members = [S.LinearLR(opt, start_factor=0.2, total_iters=4), S.ExponentialLR(opt, gamma=0.8),
                   S.StepLR(opt, step_size=2)]
        return opt, S.SequentialLR(opt, members, milestones=[4, 9])
    members = [S.ConstantLR(opt, factor=0.5, total_iters=3), S.ExponentialLR(opt, gamma=0.9)]
    return opt, S.ChainedScheduler(members)


@pytest.mark.parametrize("kind", ["sequential", "chained"])
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_composite_schedulers_equal_torch(kind, opt_name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = _trace(*_composite(torch, opt_name, kind), 16, "momentum")
        e = _trace(*_composite(ember, opt_name, kind), 16, "momentum")
    assert e == t
    opt, sched = _composite(ember, "SGD", kind)
    state = sched.state_dict()
    assert "optimizer" not in state and len(state["_schedulers"]) in (2, 3)
    sched.load_state_dict(state)


def test_warm_restarts_with_fractional_epochs_equal_torch():
    seqs = []
    for lib in (torch, ember):
        opt, sched = _make(lib, "SGD", "CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2))
        seq = []
        for epoch in (0.5, 1.25, 2.0, 3.5, 9.75, 20.0):
            sched.step(epoch)
            seq.append(sched.get_last_lr())
        seqs.append(seq)
    assert seqs[0] == seqs[1]


def test_new_scheduler_errors_match_torch():
    for make in (lambda S, o: S.ConstantLR(o, factor=1.5), lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=0),
                 lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
                 lambda S, o: S.SequentialLR(o, [S.StepLR(o, 2)], milestones=[3]),
                 lambda S, o: S.ChainedScheduler([]),
                 lambda S, o: S.CyclicLR(o, 0.1, 1.0, mode="nope")):
        messages = []
        for lib in (torch, ember):
            opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
            with pytest.raises(ValueError) as info:
                make(lib.optim.lr_scheduler, opt)
            messages.append(str(info.value))
        assert messages[0] == messages[1]
