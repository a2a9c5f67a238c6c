"""ember.compile(step, mode="reduce-overhead"): a whole training step recorded once and replayed.

Each test trains two equal models side by side, one step function run eagerly and the same function
compiled, and checks every loss, parameter and gradient (the replay's numba cross entropy sums in float64
where the eager kernel sums float32, hence `close`); what the replay must redo in Python (gradients,
version counters) and what makes it record again (a hyper-parameter, a shape, a training flag) or refuse
(a read of values, random numbers) is checked as such. The numba kernels compiled code uses are checked
against the eager kernels, bit for bit where they promise it.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.compiler import logs

nn = ember.nn


def close(a, b, rtol=1e-5) -> None:
    assert tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=rtol, atol=1e-7)


def setup(optimizer=ember.optim.Adam, device="cpu", dtype=ember.float32, **opt_args):
    """(model, optimizer, x, y) of a small classifier on `device`."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 5)).to(device=device, dtype=dtype)
    x, y = ember.randn(16, 12, dtype=dtype).to(device), ember.randint(0, 5, (16,)).to(device)
    return model, optimizer(model.parameters(), **opt_args), x, y


def make_step(model, opt, x=None, y=None, zero_grad=True):
    """The step function: with x and y it closes over them, else it takes them as arguments."""
    def step(*batch):
        xb, yb = batch or (x, y)
        if zero_grad:
            opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss
    return step


def side_by_side(steps: int = 6, batches=None, **options):
    """Eager and reduce-overhead steps of two equal setups, checked equal after every step; the compiled
    function and its model."""
    zero_grad = options.pop("zero_grad", True)
    (m1, o1, x1, y1), (m2, o2, x2, y2) = setup(**options), setup(**options)
    eager = make_step(m1, o1, x1, y1, zero_grad)
    compiled = ember.compile(make_step(m2, o2, x2, y2, zero_grad), mode="reduce-overhead")
    for i in range(steps):
        args = batches[i] if batches else ()
        close(eager(*args), compiled(*args))
        for p, q in zip(m1.parameters(), m2.parameters()):
            close(p, q)
            close(p.grad, q.grad)
    return compiled, m2, o2


def eager_and_compiled(build, calls: int, read=float) -> list:
    """The step function build() makes (returned with the model it trains) run `calls` times as is, then
    made anew and compiled with mode="reduce-overhead": per run, (read(result) per call, model, function)."""
    runs = []
    for compiled in (False, True):
        step, model = build()
        fn = ember.compile(step, mode="reduce-overhead") if compiled else step
        runs.append(([read(fn()) for _ in range(calls)], model, fn))
    return runs


def slot_of(compiled):
    (slot,) = compiled._code.steps.slots.values()
    return slot


@pytest.mark.parametrize("optimizer, args", [
    (ember.optim.Adam, dict(lr=1e-2)),
    (ember.optim.AdamW, dict(lr=1e-2, weight_decay=0.1)),
    (ember.optim.Adam, dict(lr=1e-2, weight_decay=0.1, maximize=True, betas=(0.3, 0.99))),
    (ember.optim.SGD, dict(lr=0.1)),
    (ember.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    (ember.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.5)),
])
def test_a_recorded_step_trains_as_eager_code_does(optimizer, args):
    compiled, model, _ = side_by_side(optimizer=optimizer, **args)
    slot = slot_of(compiled)
    assert slot.program is not None and not slot.refused
    # replayed calls return the loss detached (its backward already ran) and leave fresh gradients
    loss = compiled()
    assert loss.grad_fn is None and not loss.requires_grad
    assert all(p.grad is not None and p.grad.grad_fn is None for p in model.parameters())


def test_the_recording_is_one_graph_of_forward_backward_and_update():
    compiled, _, _ = side_by_side(steps=3)
    graph = slot_of(compiled).program.graph
    recorded = [n.target.name for n in graph.nodes if n.op == "call_function" and hasattr(n.target, "name")]
    assert recorded[0] == "linear" and "linear_backward" in recorded and recorded[-1] == "_fused_adam_"
    assert "_fused_adam_" in str(graph)


def test_a_step_taking_its_batch_as_arguments_reads_each_calls_batch():
    ember.manual_seed(1)
    batches = [(ember.randn(16, 12), ember.randint(0, 5, (16,))) for _ in range(6)]
    side_by_side(batches=batches)


def test_gradients_accumulated_over_calls_are_read_from_the_parameters():
    """Without zero_grad the step adds to the gradients the previous call left (read through `.grad`)."""
    compiled, _, _ = side_by_side(optimizer=ember.optim.SGD, lr=0.01, zero_grad=False)
    assert "grad" in {kind for kind, _ in slot_of(compiled).program.sources}


def test_compiling_an_optimizers_step_compiles_the_update():
    """`ember.compile(opt.step)`: its capture breaks (it reads the gradients), so the update is recorded and
    replayed (the numba loops on cpu), reading each call's gradients from the parameters."""
    (m1, o1, x1, y1), (m2, o2, x2, y2) = setup(), setup()
    update = ember.compile(o2.step)
    for _ in range(5):
        for model, opt, x, y, step in ((m1, o1, x1, y1, o1.step), (m2, o2, x2, y2, update)):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            step()
        for p, q in zip(m1.parameters(), m2.parameters()):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    (slot,) = update._code._broken.slots.values()
    assert slot.program is not None and {kind for kind, _ in slot.program.sources} == {"object", "grad", "hyper"}


def test_a_hand_written_update_reading_gradients_first_reads_each_calls():
    (m1, _, x, y), (m2, _, _, _) = setup(), setup()

    def step(model):
        grads = [p.grad for p in model.parameters()]       # read before their parameters are met
        with ember.no_grad():
            for p, g in zip(model.parameters(), grads):
                if g is not None:
                    p.sub_(0.1 * g)
        model.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss.detach()
    compiled = ember.compile(step, mode="reduce-overhead")
    for _ in range(5):
        close(step(m1), compiled(m2))
    for p, q in zip(m1.parameters(), m2.parameters()):
        close(p, q)


@pytest.mark.parametrize("optimizer", [ember.optim.AdamW, ember.optim.SGD])
def test_a_learning_rate_schedule_is_read_on_each_replay(optimizer, capfd):
    """A scheduler changing the learning rate between calls (every call here, as a warm-up and cosine
    schedule does): the update reads its group's lr on each replay, so the step is recorded once and trains
    as eager code does. Another hyper-parameter changing records the step again."""
    (m1, o1, x1, y1), (m2, o2, x2, y2) = setup(optimizer, lr=0.05), setup(optimizer, lr=0.05)
    eager, compiled = make_step(m1, o1, x1, y1), ember.compile(make_step(m2, o2, x2, y2), mode="reduce-overhead")
    s1, s2 = (ember.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10) for o in (o1, o2))
    with logs.logging("recompiles"):
        for _ in range(8):
            close(eager(), compiled())
            s1.step()
            s2.step()
        assert compiled._code.compiles == 1 and "recording" not in capfd.readouterr().err
        for opt in (o1, o2):
            opt.param_groups[0]["weight_decay"] = 0.5
        for _ in range(3):
            close(eager(), compiled())
        assert "hyper-parameters" in capfd.readouterr().err
    _same(m1, m2, o1, o2)


def test_a_new_batch_size_and_a_training_flag_are_guards():
    (m1, o1, _, _), (m2, o2, _, _) = setup(), setup()
    eager, compiled = make_step(m1, o1), ember.compile(make_step(m2, o2), mode="reduce-overhead")
    ember.manual_seed(2)
    for n in (16, 16, 16, 8, 8, 8, 16):
        x, y = ember.randn(n, 12), ember.randint(0, 5, (n,))
        close(eager(x, y), compiled(x, y))
    assert len(compiled._code.steps.slots) == 2
    m1.eval(), m2.eval()
    close(eager(x, y), compiled(x, y))
    for p, q in zip(m1.parameters(), m2.parameters()):
        close(p, q)


def test_the_replay_advances_the_version_counters_of_what_it_writes():
    compiled, model, opt = side_by_side(steps=3)
    p = next(iter(model.parameters()))
    state = opt.state[p]["exp_avg"]
    before = p._version, state._version
    compiled()
    assert p._version > before[0] and state._version > before[1]


def test_a_step_reading_values_or_drawing_random_numbers_is_not_replayed(capfd):
    """`.item()` inside the step, or dropout: the recording refuses (logged) and the calls run as eager code."""
    def check(extra, read=True):
        (m1, o1, x1, y1), (m2, o2, x2, y2) = setup(), setup()

        def body(model, opt, x, y):
            def step():
                opt.zero_grad()
                loss = nn.functional.cross_entropy(extra(model(x)), y)
                loss.backward()
                opt.step()
                return loss.item() if read else loss.detach()
            return step
        eager, compiled = body(m1, o1, x1, y1), ember.compile(body(m2, o2, x2, y2), mode="reduce-overhead")
        for _ in range(4):
            ember.manual_seed(5)
            a = eager()
            ember.manual_seed(5)
            b = compiled()
            assert a == b if read else np.array_equal(a.numpy(), b.numpy())
        assert slot_of(compiled).refused
    with logs.logging("graph_breaks"):
        check(lambda h: h)
        assert "reads a tensor's values" in capfd.readouterr().err
        check(lambda h: nn.functional.dropout(h, 0.5), read=False)
        assert "draws random numbers" in capfd.readouterr().err


def test_results_still_waiting_for_a_backward_are_not_a_step():
    """A function returning a loss it has not differentiated keeps the default path (its result has a
    grad_fn for the caller's backward)."""
    model, _, x, y = setup()
    compiled = ember.compile(lambda: nn.functional.cross_entropy(model(x), y), mode="reduce-overhead")
    for _ in range(3):
        loss = compiled()
        assert loss.grad_fn is not None
    assert slot_of(compiled).refused


def test_float64_steps_replay_too():
    side_by_side(dtype=ember.float64, optimizer=ember.optim.Adam, lr=1e-2)


def _opencl_reason() -> str:
    try:
        from test_conformance_opencl import REASON
    except Exception as exc:                # noqa: BLE001
        return f"ember-opencl is not importable: {exc}"
    return REASON


@pytest.mark.skipif(bool(_opencl_reason()), reason=_opencl_reason() or "opencl available")
def test_an_opencl_step_replays_with_its_ops_decomposed_and_fused():
    compiled, _, _ = side_by_side(device="opencl", steps=4)
    assert slot_of(compiled).program is not None


# --- the numba kernels compiled code runs ---------------------------------------------------------------

def _eager_kernel(name):
    """The cpu backend's registered kernel of `name`."""
    from ember.dispatcher import ALL_OPS
    from ember.dispatcher import keys as K

    return ALL_OPS[name].kernels[ember.zeros(1)._keys & K.BACKEND_MASK][0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("options", [
    dict(weight_decay=0.0, maximize=False, decoupled_weight_decay=False, beta1=0.9),
    dict(weight_decay=0.1, maximize=True, decoupled_weight_decay=False, beta1=0.9),
    dict(weight_decay=0.1, maximize=False, decoupled_weight_decay=True, beta1=0.3),
])
def test_numba_adam_is_bit_identical_to_the_eager_kernel(dtype, options):
    from ember_cpu.optimizers_numba import fused_adam_

    rng = np.random.default_rng(0)
    shapes = [(7, 5), (5,), (3, 4, 2)]

    def state():
        return ([rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(4))
    rng = np.random.default_rng(0)
    a = [list(x) for x in state()] + [[np.array(3.0, np.float32) for _ in shapes]]
    rng = np.random.default_rng(0)
    b = [list(x) for x in state()] + [[np.array(3.0, np.float32) for _ in shapes]]
    for arrays in (a, b):
        arrays[3] = [np.abs(v) for v in arrays[3]]          # exp_avg_sq >= 0
    args = dict(lr=1e-2, beta2=0.999, eps=1e-8, amsgrad=False, **options)
    eager = _eager_kernel("_fused_adam_")
    for _ in range(3):
        assert fused_adam_(None, a[0], a[1], a[2], a[3], [], a[4], **args) == ()
        eager(None, b[0], b[1], b[2], b[3], [], b[4], **args)
    for x, y in zip(sum(a, []), sum(b, [])):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("options", [dict(momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0),
                                     dict(momentum=0.9, dampening=0.0, nesterov=True, weight_decay=1e-2),
                                     dict(momentum=0.9, dampening=0.3, nesterov=False, weight_decay=0.0)])
def test_numba_sgd_is_bit_identical_to_the_eager_kernel(options):
    from ember_cpu.optimizers_numba import fused_sgd_

    rng = np.random.default_rng(1)
    base = [[rng.standard_normal((6, 3)).astype(np.float32) for _ in range(2)] for _ in range(3)]
    a, b = ([[x.copy() for x in group] for group in base] for _ in range(2))
    eager = _eager_kernel("_fused_sgd_")
    for first in (True, False, False):
        fused_sgd_(None, a[0], a[1], a[2], lr=0.1, maximize=False, is_first_step=first, **options)
        eager(None, b[0], b[1], b[2], lr=0.1, maximize=False, is_first_step=first, **options)
    for x, y in zip(sum(a, []), sum(b, [])):
        np.testing.assert_array_equal(x, y)


def test_numba_kernels_decline_what_they_do_not_take():
    from ember_cpu.losses_numba import cross_entropy_indices
    from ember_cpu.optimizers_numba import fused_adam_

    p = np.ones((4, 3), np.float32).T                               # not C-contiguous
    z = np.zeros((3, 4), np.float32)
    assert fused_adam_(None, [p], [z], [z], [z], [], [np.array(0.0, np.float32)], lr=0.1, beta1=0.9, beta2=0.9,
                       weight_decay=0, eps=1e-8, amsgrad=False, maximize=False) is NotImplemented
    x = np.zeros((4, 3), np.float32)
    spec = (((), ember.float32), ((4, 3), ember.float32))
    assert cross_entropy_indices(spec, x, np.array([0, 1, 2, 3])) is NotImplemented          # a target >= classes
    assert cross_entropy_indices(spec, x, np.array([0, 1, 2, 0]), np.ones(3, np.float32)) is NotImplemented


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_numba_cross_entropy_matches_the_eager_kernel(reduction):
    import torch

    from ember_cpu.losses_numba import cross_entropy_indices, cross_entropy_indices_backward

    rng = np.random.default_rng(2)
    x = rng.standard_normal((9, 7)).astype(np.float32) * 4
    t = rng.integers(0, 7, 9)
    loss_shape = (9,) if reduction == 0 else ()
    loss, lse = cross_entropy_indices(((loss_shape, ember.float32), ((9,), ember.float32)), x, t, None,
                                      reduction, -100, 0.0)
    xt = torch.tensor(x, requires_grad=True)
    expected = torch.nn.functional.cross_entropy(xt, torch.tensor(t), reduction=["none", "mean", "sum"][reduction])
    np.testing.assert_allclose(loss, expected.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(lse, torch.logsumexp(xt, 1).detach().numpy(), rtol=1e-6, atol=1e-6)
    grad = np.ones(loss_shape, np.float32)
    expected.backward(torch.ones(loss_shape))
    dx = cross_entropy_indices_backward(((9, 7), ember.float32), grad, x, lse, t, None, reduction, -100, 0.0)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_other_threads_are_untouched_while_a_step_is_captured_or_recorded(mode):
    """The capture's and the recording's hooks are process-wide, but answer their own thread only: another
    thread's optimizer steps and reads values as usual meanwhile, and the recording is not refused."""
    import threading

    w = ember.ones(3, requires_grad=True)
    w.grad = ember.ones(3)
    other_opt = ember.optim.SGD([w], lr=0.5)
    seen = []

    def other():
        try:
            other_opt.step()
            seen.append(w.detach().sum().item())
        except Exception as exc:            # noqa: BLE001 (what the test looks for)
            seen.append(exc)

    model, opt, x, y = setup()

    def step():
        opt.zero_grad()
        out = model(x)
        helper = threading.Thread(target=other)
        helper.start()
        helper.join()
        loss = nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        return loss.detach()
    compiled = ember.compile(step, mode=mode)
    for _ in range(3):
        compiled()
    assert not [s for s in seen if isinstance(s, Exception)], seen
    slots = (compiled._code.steps or compiled._code._broken).slots
    (slot,) = slots.values()
    assert slot.program is not None and not slot.refused


def test_a_step_stepping_its_lr_scheduler_or_under_autocast_is_not_replayed(capfd):
    """A replay runs no Python: an LR scheduler stepping inside the step would never step again, and the
    casts of autocast happen below the recording. Both refuse (logged) and run as eager code does."""
    def run(extra):
        def build():
            model, opt, x, y = setup()
            sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

            def step():
                opt.zero_grad()
                with extra():
                    loss = nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                sched.step()
                return loss.detach()
            return step, model
        runs = eager_and_compiled(build, 4, read=lambda loss: loss)
        for a, b in zip(runs[0][0], runs[1][0]):
            np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())
        assert slot_of(runs[1][2]).refused
    import contextlib

    with logs.logging("graph_breaks"):
        run(contextlib.nullcontext)
        assert "changes an optimizer's hyper-parameters" in capfd.readouterr().err
        run(lambda: ember.autocast("cpu", dtype=ember.bfloat16))
        assert "autocast" in capfd.readouterr().err


def test_a_step_making_its_batch_from_numpy_is_not_replayed():
    """`ember.tensor(batch)` inside the step: a replay would read the first batch forever, so the recording
    refuses and every call runs as eager code, reading its own batch."""
    rng = np.random.default_rng(7)
    batches = [(rng.standard_normal((16, 12)).astype(np.float32), rng.integers(0, 5, 16)) for _ in range(5)]

    def build():
        model, opt, _, _ = setup()
        loader = iter(batches)

        def step():
            xb, yb = next(loader)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(ember.tensor(xb)), ember.tensor(yb))
            loss.backward()
            opt.step()
            return loss.detach()
        return step, model
    runs = eager_and_compiled(build, len(batches), read=lambda loss: loss.numpy())
    np.testing.assert_array_equal(np.array(runs[0][0]), np.array(runs[1][0]))
    assert slot_of(runs[1][2]).refused


def test_a_step_clipping_its_gradients_replays_as_eager():
    """clip_grad_norm_ inside the step (the norm and the scaling are ops): recorded, replayed, and each
    call's norm returned, as eager code returns it."""
    def build():
        model, opt, x, y = setup()

        def step():
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            return loss.detach(), norm
        return step, model
    runs = eager_and_compiled(build, 5, read=lambda r: tuple(float(v) for v in r))
    np.testing.assert_allclose(np.array(runs[1][0]), np.array(runs[0][0]), rtol=1e-5)
    assert slot_of(runs[1][2]).program is not None
    for p, q in zip(runs[0][1].parameters(), runs[1][1].parameters()):
        close(q, p)


# --- what a replay must notice changed (each found by driving a step the way training code does) --------------

def _same(m1, m2, o1=None, o2=None):
    """Parameters, gradients and optimizer state of two setups equal (up to the numba cross entropy)."""
    for p, q in zip(m1.parameters(), m2.parameters()):
        close(p, q)
        assert (p.grad is None) == (q.grad is None)
        if p.grad is not None:
            close(p.grad, q.grad)
        for key, value in (o1.state.get(p, {}) if o1 is not None else {}).items():
            if isinstance(value, ember.Tensor):
                close(value, o2.state[q][key])


def test_micro_batches_accumulated_outside_the_step_keep_adding():
    """The compiled function is forward and backward only; the optimizer steps and zeroes every other call
    outside. Calls with gradients present (accumulating) and absent (made afresh) replay different records."""
    (m1, o1, x, y), (m2, o2, _, _) = setup(ember.optim.SGD, lr=0.1), setup(ember.optim.SGD, lr=0.1)

    def micro(model):
        def run():
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            return loss.detach()
        return run
    eager, compiled = micro(m1), ember.compile(micro(m2), mode="reduce-overhead")
    for i in range(8):
        close(eager(), compiled())
        if i % 2:
            for opt in (o1, o2):
                opt.step()
                opt.zero_grad()
        _same(m1, m2)
    assert len(slot_of(compiled).programs) == 2


@pytest.mark.parametrize("change", ["add_param_group", "load_state_dict", "freeze", "unfreeze"])
def test_state_changed_between_calls_is_seen(change):
    """A new parameter group or optimizer state (the optimizer makes new state on its next step), a frozen or
    an unfrozen parameter: the step is recorded anew, and trains as eager code does."""
    def build():
        model, _, x, y = setup()
        if change == "unfreeze":
            model[0].weight.requires_grad_(False)
        params = list(model[0].parameters()) if change == "add_param_group" else list(model.parameters())
        return model, ember.optim.SGD(params, lr=0.1, momentum=0.9), x, y
    (m1, o1, x, y), (m2, o2, _, _) = build(), build()
    eager, compiled = make_step(m1, o1, x, y), ember.compile(make_step(m2, o2, x, y), mode="reduce-overhead")
    for i in range(7):
        if i == 3:
            for model, opt in ((m1, o1), (m2, o2)):
                if change == "add_param_group":
                    opt.add_param_group({"params": list(model[2].parameters())})
                elif change == "load_state_dict":
                    opt.load_state_dict(ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9).state_dict())
                else:
                    model[0].weight.requires_grad_(change == "unfreeze")
        close(eager(), compiled())
        _same(m1, m2, o1, o2)


def test_values_the_step_keeps_in_python_are_not_replayed():
    """`p.data = p.data.clamp(...)` and a running average kept in a dict: a replay would update neither, so
    the recording refuses and the calls run as eager code does."""
    for keep in ("rebind", "dict"):
        runs = []
        for compiled in (False, True):
            model, opt, x, y = setup()
            kept = {"ema": ember.zeros(())}

            def step():
                opt.zero_grad()
                loss = nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                if keep == "rebind":
                    for p in model.parameters():
                        p.data = p.data.clamp(-0.05, 0.05)
                else:
                    kept["ema"] = kept["ema"] * 0.9 + loss.detach() * 0.1
                return loss.detach()
            fn = ember.compile(step, mode="reduce-overhead") if compiled else step
            for _ in range(4):
                fn()
            runs.append((model, float(kept["ema"])))
            if compiled:
                assert slot_of(fn).refused
        _same(runs[0][0], runs[1][0])
        assert runs[0][1] == runs[1][1]


def test_inputs_that_were_one_tensor_and_inputs_needing_gradients():
    """Recorded with the same tensor passed twice, replayed with two: recorded again. An input requiring
    grad gets its gradient on each call's own tensor."""
    (m1, o1, x, y), (m2, o2, _, _) = setup(), setup()

    def two(model, opt):
        def step(a, b, target):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(a) + model(b), target)
            loss.backward()
            opt.step()
            return loss.detach()
        return step
    eager, compiled = two(m1, o1), ember.compile(two(m2, o2), mode="reduce-overhead")
    x2 = x.flip(0)
    for i in range(6):
        b = x if i < 3 else x2
        close(eager(x, b, y), compiled(x, b, y))
    _same(m1, m2, o1, o2)
    for i in range(4):
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        close(eager(xa, x2, y), compiled(xb, x2, y))
        close(xa.grad, xb.grad)


def test_the_replay_advances_versions_by_the_writes_eager_code_makes():
    versions = []
    for compiled in (False, True):
        model, opt, x, y = setup()

        def step():
            opt.zero_grad(set_to_none=False)
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.step()                              # two updates per call
            return loss.detach()
        fn = ember.compile(step, mode="reduce-overhead") if compiled else step
        for _ in range(5):
            fn()
        p = next(iter(model.parameters()))
        versions.append((p._version, p.grad._version, opt.state[p]["exp_avg"]._version))
    assert versions[0] == versions[1]


def test_random_numbers_drawn_by_another_thread_do_not_refuse_a_recording():
    """The recording asks whether its own thread drew random numbers, not whether any thread did."""
    import threading

    pairs = [(setup(), setup()) for _ in range(3)]          # (seeded before the other thread draws)
    stop = threading.Event()

    def draw():
        while not stop.is_set():
            ember.randn(4)
    helper = threading.Thread(target=draw)
    helper.start()
    try:
        for (m1, o1, x, y), (m2, o2, _, _) in pairs:
            eager, compiled = make_step(m1, o1, x, y), ember.compile(make_step(m2, o2, x, y), mode="reduce-overhead")
            for _ in range(4):
                close(eager(), compiled())
            assert not slot_of(compiled).refused
            _same(m1, m2, o1, o2)
    finally:
        stop.set()
        helper.join()


def test_a_step_zeroing_its_gradients_after_the_update_and_returning_its_loss_replays():
    """`backward(); step(); zero_grad()` returning the attached loss: the call ran its backward, so its loss
    awaits none; the step is recorded and replayed (its gradients left None, as eager leaves them)."""
    def build():
        model, opt, x, y = setup()

        def step():
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return step, model
    runs = eager_and_compiled(build, 5)
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-5)
    assert slot_of(runs[1][2]).program is not None
    _same(runs[0][1], runs[1][1])
    assert all(p.grad is None for p in runs[1][1].parameters())


def test_a_step_switching_its_model_to_training_replays_after_evaluations():
    """train_step begins with model.train(); evaluation between calls leaves the model in eval mode. The
    step switched the mode itself when recorded, so its replays switch it too (no recording anew): batch
    norm's statistics, the losses, the evaluations and the flags are eager's."""
    nets = []
    for compiled in (False, True):
        _, _, x, y = setup()
        ember.manual_seed(3)
        model = nn.Sequential(nn.Linear(12, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 5))
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def train_step():
            model.train()
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()
        fn = ember.compile(train_step, mode="reduce-overhead") if compiled else train_step
        losses, evals = [], []
        for _ in range(6):
            losses.append(float(fn()))
            assert model.training
            model.eval()
            with ember.no_grad():
                evals.append(float(nn.functional.cross_entropy(model(x), y)))
        nets.append((losses, evals, model, fn))
    np.testing.assert_allclose(nets[1][0], nets[0][0], rtol=1e-5)
    np.testing.assert_allclose(nets[1][1], nets[0][1], rtol=1e-5)
    slot = slot_of(nets[1][3])
    assert len(slot.programs) == 1 and not slot.refused
    assert nets[1][3]._code.compiles == 1


@pytest.mark.skipif(bool(_opencl_reason()), reason=_opencl_reason() or "opencl available")
def test_an_opencl_step_reads_its_learning_rate_on_each_replay_too():
    """On opencl the step's graph is re-traced with explicit ops decomposed; the optimizer update, kept whole,
    still reads its group's learning rate from the call."""
    (m1, o1, x, y), (m2, o2, _, _) = setup(ember.optim.AdamW, device="opencl", lr=0.05), \
        setup(ember.optim.AdamW, device="opencl", lr=0.05)
    eager, compiled = make_step(m1, o1, x, y), ember.compile(make_step(m2, o2, x, y), mode="reduce-overhead")
    s1, s2 = (ember.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10) for o in (o1, o2))
    for _ in range(6):
        close(eager(), compiled())
        s1.step()
        s2.step()
    assert compiled._code.compiles == 1
    _same(m1, m2, o1, o2)


def test_a_custom_optimizers_learning_rate_is_a_guard():
    """A group of `params` and `lr` only (a minimal custom optimizer on the fused SGD update): its learning
    rate, which the step could scale as it likes, is a guard (ember's optimizers' is read each replay), so
    a change records the step again, and training is eager's."""
    class Plain(ember.optim.Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, dict(lr=lr))

        def step(self):
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                ember._fused_sgd_(params, [p.grad for p in params], [], weight_decay=0.0, momentum=0.0,
                                  lr=group["lr"], dampening=0.0, nesterov=False, maximize=False,
                                  is_first_step=False)
    (m1, _, x, y), (m2, _, _, _) = setup(), setup()
    o1, o2 = Plain(m1.parameters(), 0.1), Plain(m2.parameters(), 0.1)
    eager, compiled = make_step(m1, o1, x, y), ember.compile(make_step(m2, o2, x, y), mode="reduce-overhead")
    for i in range(6):
        close(eager(), compiled())
        if i % 3 == 2:
            for opt in (o1, o2):
                opt.param_groups[0]["lr"] *= 0.9
    assert compiled._code.compiles == 2
    _same(m1, m2)
