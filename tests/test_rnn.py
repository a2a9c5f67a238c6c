"""nn.RNN, nn.LSTM, nn.GRU, their cells and nn.utils.rnn against PyTorch, from the same state dicts.

Every configuration runs forward and backward in float64 in both frameworks: outputs, final states and
the gradients of the input, the initial states and every parameter must agree to 1e-10. Double backward
(a gradient of a gradient) is compared where torch's cpu layers support it, packed sequences through
layers too, and errors are PyTorch's classes and messages.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.nn.utils import rnn as ember_rnn

TIGHT = dict(rtol=1e-10, atol=1e-10)


def to_ember(t: torch.Tensor, grad: bool = False):
    out = ember.tensor(t.detach().numpy())
    return out.requires_grad_() if grad else out


def twins(name: str, *args, **kwargs):
    """(torch module, ember module) of class `name`, float64, ember's loaded with torch's state dict."""
    torch.manual_seed(0)
    t = getattr(torch.nn, name)(*args, **kwargs).double()
    e = getattr(ember.nn, name)(*args, **kwargs).to(ember.float64)
    e.load_state_dict({k: to_ember(v) for k, v in t.state_dict().items()})
    return t, e


def flat(result) -> list:
    """The tensors of a layer's result ((output, h_n) or (output, (h_n, c_n))), in order."""
    if isinstance(result, (tuple, list)):
        return [x for r in result for x in flat(r)]
    return [result] if result is not None else []


def close(e, t, **tol) -> None:
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **(tol or TIGHT))


def run_both(t_mod, e_mod, x: np.ndarray, states=None):
    """Forward both on the same input (and initial states), backward a fixed weighting of every result,
    then compare results and the gradients of the input, states and parameters."""
    tx = torch.tensor(x, requires_grad=True)
    ex = to_ember(tx, grad=True)
    ts = es = None
    if states is not None:
        ts = tuple(torch.tensor(s, requires_grad=True) for s in states)
        es = tuple(to_ember(s, grad=True) for s in ts)
        if len(states) == 1:
            ts, es = ts[0], es[0]
    t_out, e_out = flat(t_mod(tx, ts)), flat(e_mod(ex, es))
    assert len(t_out) == len(e_out)
    for e, t in zip(e_out, t_out):
        assert tuple(e.shape) == tuple(t.shape)
        close(e, t)
    weights = [np.random.default_rng(k).standard_normal(tuple(t.shape)) for k, t in enumerate(t_out)]
    torch.autograd.backward(t_out, [torch.tensor(w) for w in weights])
    ember.autograd.backward(e_out, [ember.tensor(w) for w in weights])
    close(ex.grad, tx.grad)
    if states is not None:
        for e, t in zip(es if isinstance(es, tuple) else (es,), ts if isinstance(ts, tuple) else (ts,)):
            close(e.grad, t.grad)
    for (name, tp), ep in zip(t_mod.named_parameters(), e_mod.parameters()):
        assert ep.grad is not None, name
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), err_msg=name, **TIGHT)


LAYERS = [
    ("LSTM", (4, 6), {}),
    ("LSTM", (4, 6, 2), dict(bidirectional=True)),
    ("LSTM", (4, 6, 2), dict(proj_size=3, batch_first=True)),
    ("LSTM", (4, 6), dict(bias=False, bidirectional=True, proj_size=2)),
    ("GRU", (4, 6, 2), dict(bidirectional=True)),
    ("GRU", (4, 6), dict(bias=False, batch_first=True)),
    ("RNN", (4, 6, 2), {}),
    ("RNN", (4, 6), dict(nonlinearity="relu", bidirectional=True)),
]


@pytest.mark.parametrize("name, args, kwargs", LAYERS, ids=lambda v: str(v))
@pytest.mark.parametrize("given_states", [False, True])
def test_layers_match_torch(name, args, kwargs, given_states):
    t_mod, e_mod = twins(name, *args, **kwargs)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 4) if kwargs.get("batch_first") else (5, 3, 4))
    states = None
    if given_states:
        layers = args[2] if len(args) > 2 else 1
        d = 2 if kwargs.get("bidirectional") else 1
        h = rng.standard_normal((layers * d, 3, kwargs.get("proj_size") or 6))
        states = (h, rng.standard_normal((layers * d, 3, 6))) if name == "LSTM" else (h,)
    run_both(t_mod, e_mod, x, states)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_unbatched_input(name):
    t_mod, e_mod = twins(name, 4, 6, 2, bidirectional=True)
    run_both(t_mod, e_mod, np.random.default_rng(1).standard_normal((5, 4)))


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(name, batched):
    t_mod, e_mod = twins(name, 4, 6)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4) if batched else (4,))
    hshape = (3, 6) if batched else (6,)
    for states in (None, (rng.standard_normal(hshape),) * (2 if name == "LSTMCell" else 1)):
        tx = torch.tensor(x, requires_grad=True)
        ex = to_ember(tx, grad=True)
        th = eh = None
        if states is not None:
            th = tuple(torch.tensor(s, requires_grad=True) for s in states)
            eh = tuple(to_ember(s, grad=True) for s in th)
            if name != "LSTMCell":
                th, eh = th[0], eh[0]
        t_out, e_out = flat(t_mod(tx, th)), flat(e_mod(ex, eh))
        for e, t in zip(e_out, t_out):
            close(e, t)
        sum(o.sum() * (k + 1) for k, o in enumerate(t_out)).backward()
        sum(o.sum() * (k + 1) for k, o in enumerate(e_out)).backward()
        close(ex.grad, tx.grad)
        for tp, ep in zip(t_mod.parameters(), e_mod.parameters()):
            close(ep.grad, tp.grad)
            tp.grad = None
            ep.grad = None


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_double_backward_matches_torch(name):
    """A gradient penalty: d/dparams of |d loss / d input|^2, through the layer's backward."""
    t_mod, e_mod = twins(name, 3, 4, 2, bidirectional=name != "RNN", **({"proj_size": 2} if name == "LSTM" else {}))
    x = np.random.default_rng(4).standard_normal((4, 2, 3))
    results = []
    for lib, mod in ((torch, t_mod), (ember, e_mod)):
        xt = lib.tensor(x, requires_grad=True)
        out = flat(mod(xt))
        loss = sum((o * o).sum() for o in out)
        (gx,) = lib.autograd.grad(loss, xt, create_graph=True)
        (gx * gx).sum().backward()
        results.append([p.grad for p in mod.parameters()])
    for t, e in zip(*results):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-9, atol=1e-10)


def test_float32_and_dropout_between_layers():
    t_mod, e_mod = twins("LSTM", 4, 6, 3, dropout=0.5)
    t_mod.float()
    e_mod.to(ember.float32)
    x = np.random.default_rng(5).standard_normal((5, 3, 4)).astype(np.float32)
    t_mod.eval()
    e_mod.eval()                     # no dropout in eval: torch's values
    for e, t in zip(flat(e_mod(ember.tensor(x))), flat(t_mod(torch.tensor(x)))):
        close(e, t, rtol=1e-5, atol=1e-6)
    e_mod.train()
    ember.manual_seed(0)
    first = e_mod(ember.tensor(x))[0]
    ember.manual_seed(1)
    assert not np.allclose(first.detach().numpy(), e_mod(ember.tensor(x))[0].detach().numpy())


@pytest.mark.parametrize("name, kwargs", [("LSTM", dict(bidirectional=True, num_layers=2)),
                                          ("GRU", dict(batch_first=True))])
def test_packed_sequences_through_layers_match_torch(name, kwargs):
    t_mod, e_mod = twins(name, 4, 5, **kwargs)
    batch_first = kwargs.get("batch_first", False)
    lengths = [3, 6, 1, 6]
    x = np.random.default_rng(6).standard_normal((4, 6, 4) if batch_first else (6, 4, 4))
    tx = torch.tensor(x, requires_grad=True)
    ex = to_ember(tx, grad=True)
    t_packed = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, batch_first=batch_first, enforce_sorted=False)
    e_packed = ember_rnn.pack_padded_sequence(ex, lengths, batch_first=batch_first, enforce_sorted=False)
    close(e_packed.data, t_packed.data)
    assert e_packed.batch_sizes.tolist() == t_packed.batch_sizes.tolist()
    assert e_packed.sorted_indices.tolist() == t_packed.sorted_indices.tolist()
    t_res, e_res = t_mod(t_packed), e_mod(e_packed)
    close(e_res[0].data, t_res[0].data)
    t_pad, t_len = torch.nn.utils.rnn.pad_packed_sequence(t_res[0], batch_first=batch_first)
    e_pad, e_len = ember_rnn.pad_packed_sequence(e_res[0], batch_first=batch_first)
    close(e_pad, t_pad)
    assert e_len.tolist() == t_len.tolist()
    t_states, e_states = flat(t_res[1]), flat(e_res[1])
    for e, t in zip(e_states, t_states):
        close(e, t)
    (t_pad.sum() + sum((s * s).sum() for s in t_states)).backward()
    (e_pad.sum() + sum((s * s).sum() for s in e_states)).backward()
    close(ex.grad, tx.grad)
    for tp, ep in zip(t_mod.parameters(), e_mod.parameters()):
        close(ep.grad, tp.grad)


def test_sequence_utilities_match_torch():
    rng = np.random.default_rng(7)
    seqs = [rng.standard_normal((n, 2)) for n in (2, 5, 3)]
    T = torch.nn.utils.rnn
    for kwargs in (dict(), dict(batch_first=True, padding_value=-1.0), dict(padding_side="left")):
        close(ember_rnn.pad_sequence([ember.tensor(s) for s in seqs], **kwargs),
              T.pad_sequence([torch.tensor(s) for s in seqs], **kwargs))
    e_packed = ember_rnn.pack_sequence([ember.tensor(s) for s in seqs], enforce_sorted=False)
    t_packed = T.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    close(e_packed.data, t_packed.data)
    assert e_packed.unsorted_indices.tolist() == t_packed.unsorted_indices.tolist()
    for e, t in zip(ember_rnn.unpack_sequence(e_packed), T.unpack_sequence(t_packed)):
        close(e, t)
    e_pad, _ = ember_rnn.pad_packed_sequence(e_packed, total_length=7)
    t_pad, _ = T.pad_packed_sequence(t_packed, total_length=7)
    close(e_pad, t_pad)


def _error(fn):
    try:
        fn()
    except Exception as exc:     # noqa: BLE001
        return type(exc), str(exc)
    return None


@pytest.mark.parametrize("case", [
    lambda nn, t: nn.LSTM(4, 6, 2)(t.zeros(3, 2, 5)),
    lambda nn, t: nn.LSTM(4, 6, 2)(t.zeros(3, 2, 4), (t.zeros(1, 2, 6), t.zeros(2, 2, 6))),
    lambda nn, t: nn.LSTM(4, 6, 2)(t.zeros(3, 2, 4), (t.zeros(2, 2, 6), t.zeros(1, 2, 6))),
    lambda nn, t: nn.LSTM(4, 6)(t.zeros(2, 3, 2, 4)),
    lambda nn, t: nn.GRU(4, 6)(t.zeros(3, 2, 4), t.zeros(1, 3, 6)),
    lambda nn, t: nn.LSTM(4, 6, proj_size=6),
    lambda nn, t: nn.GRU(4, 6, proj_size=2),
    lambda nn, t: nn.RNN(4, 6, nonlinearity="x"),
    lambda nn, t: nn.RNN(4, 6, dropout=1.5),
    lambda nn, t: nn.LSTM(4, 0),
    lambda nn, t: nn.LSTM(4, 6)(t.zeros(3, 2, 4), t.zeros(1, 2, 6)),
    lambda nn, t: nn.LSTMCell(4, 6)(t.zeros(2, 5)),
    lambda nn, t: nn.GRUCell(4, 6)(t.zeros(2, 4), t.zeros(3, 6)),
    lambda nn, t: nn.RNNCell(4, 6)(t.zeros(2, 3, 4)),
    lambda nn, t: nn.LSTM(4, 6)(t.zeros(0, 2, 4)),
    lambda nn, t: nn.utils.rnn.pack_padded_sequence(t.zeros(3, 2, 4), [1, 3]),
])
def test_errors_are_torchs(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, got = _error(lambda: case(torch.nn, torch)), _error(lambda: case(ember.nn, ember))
    assert want is not None and got is not None
    assert issubclass(got[0], want[0]), (got, want)
    assert got[1].split("(): ")[-1] == want[1] or want[1] in got[1], (got, want)


def test_a_dropout_with_one_layer_warns_as_torch():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        ember.nn.GRU(3, 4, dropout=0.2)


def test_meta_device_sizes_a_layer():
    m = ember.nn.LSTM(8, 16, 2, bidirectional=True, device="meta")
    out, (h, c) = m(ember.empty(7, 3, 8, device="meta"))
    assert tuple(out.shape) == (7, 3, 32) and tuple(h.shape) == tuple(c.shape) == (4, 3, 16)
    assert out.device.type == "meta"


@pytest.mark.parametrize("args, names", [
    ((ember.zeros(3, 2, 4), ember.zeros(2, 5), ember.zeros(2, 5), ember.zeros(20, 3), ember.zeros(20, 5)), "w_ih"),
    ((ember.zeros(3, 2, 4), ember.zeros(3, 5), ember.zeros(3, 5), ember.zeros(20, 4), ember.zeros(20, 5)), "hx"),
    ((ember.zeros(3, 2, 4), ember.zeros(2, 5), None, ember.zeros(20, 4), ember.zeros(20, 5)), "cx"),
])
def test_the_layer_op_checks_what_torchs_functional_layers_do_not(args, names):
    """torch.lstm(...) reads mismatched weights or states without a check; ember's op refuses them, naming
    the argument (the modules check first, with torch's messages)."""
    from ember._generated import functions as F

    with pytest.raises(RuntimeError, match=rf"_rnn_layer\(\).*{names}"):
        F._rnn_layer(*args, None, None, None, "LSTM")
