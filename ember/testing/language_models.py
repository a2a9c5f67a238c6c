"""Word-level language models as PyTorch's word_language_model example builds them, in ember or torch.

`rnn_lm_classes(lib)` defines, against `lib.nn` (`ember` or `torch`), the example's RNNModel: an
embedding, dropout, a recurrent stack (LSTM, GRU, RNN_TANH or RNN_RELU), dropout, and a linear decoder
to log-probabilities over the vocabulary, optionally tied to the embedding; and its TransformerModel:
an nn.Transformer whose encoder stack alone runs, over scaled embeddings plus sinusoidal positions,
under a causal mask. `train_step(...)` is the example's training step: detach the carried state (the
recurrent model's), zero the gradients, forward, NLL loss, backward, clip the gradient norm, update
each parameter by -lr * grad. The same definitions in both libraries
let tests and benchmarks compare losses from the same weights. This module imports neither torch nor
pytest.
"""
from __future__ import annotations

import functools
import math
from types import SimpleNamespace

__all__ = ["rnn_lm_classes", "transformer_lm_classes", "init_hidden", "repackage_hidden", "train_step"]


@functools.cache
def rnn_lm_classes(lib) -> SimpleNamespace:
    nn = lib.nn
    F = nn.functional

    class RNNModel(nn.Module):
        """Encoder, a recurrent stack, decoder (word_language_model's model.RNNModel)."""

        def __init__(self, rnn_type: str, ntoken: int, ninp: int, nhid: int, nlayers: int, dropout: float = 0.5,
                     tie_weights: bool = False) -> None:
            super().__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            if rnn_type in ("LSTM", "GRU"):
                self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
            else:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
                self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie_weights:
                if nhid != ninp:
                    raise ValueError("When using the tied flag, nhid must be equal to emsize")
                self.decoder.weight = self.encoder.weight
            self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output).view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

    return SimpleNamespace(RNNModel=RNNModel)


@functools.cache
def transformer_lm_classes(lib) -> SimpleNamespace:
    nn = lib.nn
    F = nn.functional

    class PositionalEncoding(nn.Module):
        """Sinusoidal positions added to the embeddings, then dropout (the example's PositionalEncoding)."""

        def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000) -> None:
            super().__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = lib.zeros(max_len, d_model)
            position = lib.arange(0, max_len, dtype=lib.float).unsqueeze(1)
            div_term = lib.exp(lib.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = lib.sin(position * div_term)
            pe[:, 1::2] = lib.cos(position * div_term)
            self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

        def forward(self, x):
            return self.dropout(x + self.pe[:x.size(0), :])

    class TransformerModel(nn.Transformer):
        """The encoder of an nn.Transformer as a causal language model (the example's TransformerModel)."""

        def __init__(self, ntoken: int, ninp: int, nhead: int, nhid: int, nlayers: int, dropout: float = 0.5):
            super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers)
            self.model_type = "Transformer"
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, dropout)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)
            initrange = 0.1
            nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, src, has_mask: bool = True):
            if has_mask:
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    self.src_mask = lib.log(lib.tril(lib.ones(len(src), len(src)))).to(src.device)
            else:
                self.src_mask = None
            src = self.pos_encoder(self.input_emb(src) * math.sqrt(self.ninp))
            output = self.decoder(self.encoder(src, mask=self.src_mask))
            return F.log_softmax(output, dim=-1)

    return SimpleNamespace(TransformerModel=TransformerModel, PositionalEncoding=PositionalEncoding)


def init_hidden(lib, model, batch: int):
    """The zero state for `batch` sequences (a pair for LSTM)."""
    weight = next(model.parameters())
    shape = (model.nlayers, batch, model.nhid)
    if model.rnn_type == "LSTM":
        return weight.new_zeros(shape), weight.new_zeros(shape)
    return weight.new_zeros(shape)


def repackage_hidden(h):
    """The state detached from the graph that made it (truncated backpropagation through time)."""
    return tuple(repackage_hidden(v) for v in h) if isinstance(h, tuple) else h.detach()


def train_step(lib, model, data, targets, hidden, lr: float = 20.0, clip: float = 0.25):
    """(loss, the new state) of one step of word_language_model's train(): SGD by hand after clipping. A
    Transformer model carries no state (`hidden` None)."""
    model.zero_grad()
    if hidden is None:
        output = model(data).view(-1, model.decoder.out_features)
    else:
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
    loss = lib.nn.functional.nll_loss(output, targets)
    loss.backward()
    lib.nn.utils.clip_grad_norm_(model.parameters(), clip)
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)
    return loss, hidden
