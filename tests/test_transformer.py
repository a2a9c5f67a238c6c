"""nn.Transformer, TransformerDecoder and TransformerDecoderLayer against PyTorch from the same state dicts
(float64, dropout off): outputs and every parameter's gradient, with masks, padding masks, pre-norm,
batch_first and gelu; torch's errors; the causal mask."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

TIGHT = dict(rtol=1e-9, atol=1e-10)


def twins(build):
    torch.manual_seed(0)
    t = build(torch).double()
    e = build(ember).to(ember.float64)
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    t.eval()        # dropout off in both (eval keeps torch on its math path; the values are the same)
    e.eval()
    return t, e


def compare(t_mod, e_mod, arrays: list, **kwargs) -> None:
    t_in = [torch.tensor(a, requires_grad=a.dtype == np.float64) for a in arrays]
    e_in = [ember.tensor(a, requires_grad=a.dtype == np.float64) for a in arrays]
    t_kw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    e_kw = {k: ember.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    with torch.enable_grad():
        t_out = t_mod(*t_in, **t_kw)
    e_out = e_mod(*e_in, **e_kw)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), **TIGHT)
    w = np.random.default_rng(9).standard_normal(tuple(t_out.shape))
    (t_out * torch.tensor(w)).sum().backward()
    (e_out * ember.tensor(w)).sum().backward()
    for (name, tp), ep in zip(t_mod.named_parameters(), e_mod.parameters()):
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), err_msg=name, **TIGHT)
    for ti, ei in zip(t_in, e_in):
        if ti.requires_grad:
            np.testing.assert_allclose(ei.grad.numpy(), ti.grad.numpy(), **TIGHT)


@pytest.mark.parametrize("options", [dict(), dict(norm_first=True, activation="gelu"), dict(batch_first=True)])
def test_transformer_matches_torch(options):
    t_mod, e_mod = twins(lambda lib: lib.nn.Transformer(16, 2, 2, 2, 32, dropout=0.0, **options))
    rng = np.random.default_rng(0)
    bf = options.get("batch_first", False)
    src = rng.standard_normal((3, 5, 16) if bf else (5, 3, 16))
    tgt = rng.standard_normal((3, 4, 16) if bf else (4, 3, 16))
    tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64).numpy()
    padding = np.zeros((3, 5), dtype=bool)
    padding[1, 3:] = True
    compare(t_mod, e_mod, [src, tgt], tgt_mask=tgt_mask, src_key_padding_mask=padding,
            memory_key_padding_mask=padding)


def test_a_decoder_stack_matches_torch():
    t_mod, e_mod = twins(lambda lib: lib.nn.TransformerDecoder(
        lib.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2, norm=lib.nn.LayerNorm(8)))
    rng = np.random.default_rng(1)
    compare(t_mod, e_mod, [rng.standard_normal((4, 2, 8)), rng.standard_normal((6, 2, 8))],
            tgt_mask=np.triu(np.ones((4, 4), dtype=bool), 1), tgt_is_causal=True)


def test_the_causal_mask_is_torchs():
    for n in (1, 4):
        np.testing.assert_array_equal(ember.nn.Transformer.generate_square_subsequent_mask(n).numpy(),
                                      torch.nn.Transformer.generate_square_subsequent_mask(n).numpy())


@pytest.mark.parametrize("shapes", [((3, 2, 16), (4, 3, 16)), ((3, 2, 16), (4, 2, 8))])
def test_errors_are_torchs(shapes):
    messages = []
    for lib in (torch, ember):
        model = lib.nn.Transformer(16, 2, 1, 1, 32)
        with pytest.raises(RuntimeError) as info:
            model(lib.zeros(*shapes[0]), lib.zeros(*shapes[1]))
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_parameters_and_repr_are_torchs():
    t, e = (lib.nn.Transformer(16, 2, 1, 1, 32) for lib in (torch, ember))
    assert [(n, tuple(p.shape)) for n, p in t.named_parameters()] == [(n, tuple(p.shape)) for n, p in e.named_parameters()]
    assert str(t) == str(e)
