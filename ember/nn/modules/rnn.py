"""RNN, LSTM, GRU and their cells (torch.nn.modules.rnn).

Each layer and direction is one `_rnn_layer` op (ops_registry.yaml): the time loop runs inside its
kernel (the cpu's loops over arrays; other backends step with ember ops below autograd), and its
backward is one op too, so a layer costs two dispatches per step of training, not one per gate. The
modules do what torch's do around it: parameters named and initialised as torch's (uniform in
+-1/sqrt(hidden_size)), `batch_first`, unbatched input, initial states, dropout between layers in
training, bidirectional layers (the reverse direction's outputs concatenated after the forward's),
an LSTM's projection (`proj_size`), and PackedSequence input (ember.nn.utils.rnn). A cell is one step:
the same op over a sequence of length one.
"""
from __future__ import annotations

import math
import numbers
import warnings

import ember
from ember._generated import functions as _F
from ember.shape_rules.recurrent import GATES
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _nonlinearity_mode(nonlinearity: str) -> str:
    if nonlinearity == "tanh":
        return "RNN_TANH"
    if nonlinearity == "relu":
        return "RNN_RELU"
    raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")


_ROLES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")    # _rnn_layer's weight arguments, in order


class RNNBase(Module):
    """The layers' common part: parameters, checks, and the loop over layers and directions."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__()
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          UserWarning, stacklevel=2)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        directions = 2 if bidirectional else 1
        gate_size = GATES[mode] * hidden_size
        real_hidden = proj_size or hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        self._layer_names: list[tuple] = []      # per layer and direction: _ROLES' names, None where absent
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else real_hidden * directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = {}
                for base, shape in shapes:
                    names[base] = f"{base}_l{layer}{suffix}"
                    setattr(self, names[base], Parameter(ember.empty(shape, device=device, dtype=dtype)))
                self._flat_weights_names.extend(names.values())
                self._all_weights.append(list(names.values()))
                self._layer_names.append(tuple(names.get(role) for role in _ROLES))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """torch's cuDNN weight packing: nothing to do here (each layer reads its parameters as they are)."""

    def _layer_weights(self, k: int) -> tuple:
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of layer-and-direction `k`, None where absent."""
        return tuple(None if name is None else getattr(self, name) for name in self._layer_names[k])

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- the forward pass -------------------------------------------------------------------------
    def _state_shapes(self, batch: int) -> tuple[tuple, tuple]:
        layers = self.num_layers * (2 if self.bidirectional else 1)
        return (layers, batch, self.proj_size or self.hidden_size), (layers, batch, self.hidden_size)

    def forward(self, input, hx=None):
        from ..utils.rnn import PackedSequence

        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        name = type(self).__name__
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        states = self._initial_states(input, hx, batched)
        output, h_n, c_n = self._run(input, *states)
        if not batched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, ((h_n, c_n) if self.mode == "LSTM" else h_n)

    def _initial_states(self, input, hx, batched: bool) -> tuple:
        """(h0, c0 or None), checked against torch's expected shapes; zeros when `hx` is None."""
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")
        h_shape, c_shape = self._state_shapes(input.shape[1])
        lstm = self.mode == "LSTM"
        if hx is None:
            make = lambda shape: ember.zeros(shape, dtype=input.dtype, device=input.device)  # noqa: E731
            return make(h_shape), (make(c_shape) if lstm else None)
        h0, c0 = (hx[0], hx[1]) if lstm else (hx, None)      # (indexed as torch does: a tensor's rows too)
        if batched and (h0.dim() != 3 or (lstm and c0.dim() != 3)):
            if lstm:
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({h0.dim()}-D, {c0.dim()}-D) tensors")
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {h0.dim()}-D tensor")
        if not batched:
            if h0.dim() != 2 or (lstm and c0.dim() != 2):
                if lstm:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D but got "
                                       f"({h0.dim()}-D, {c0.dim()}-D) tensors")
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {h0.dim()}-D tensor")
            h0, c0 = h0.unsqueeze(1), (c0.unsqueeze(1) if lstm else None)
        for state, expected, label in ((h0, h_shape, "hidden[0]" if lstm else "hidden"), (c0, c_shape, "hidden[1]")):
            if state is not None and tuple(state.shape) != expected:
                raise RuntimeError(f"Expected {label} size {expected}, got {list(state.shape)}")
        return h0, c0

    def _run(self, x, h0, c0) -> tuple:
        """(output, h_n, c_n) over time-major `x` (T, B, features) from the stacked initial states."""
        directions = 2 if self.bidirectional else 1
        mode = self.mode
        h_last, c_last = [], []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                k = layer * directions + direction
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_weights(k)
                out, h, c, _ = _F._rnn_layer(x, h0[k], c0[k] if c0 is not None else None, w_ih, w_hh, b_ih, b_hh,
                                             w_hr, mode, direction == 1)
                outputs.append(out)
                h_last.append(h)
                c_last.append(c)
            x = outputs[0] if directions == 1 else ember.cat(outputs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, ember.stack(h_last), (ember.stack(c_last) if mode == "LSTM" else None)

    def _forward_packed(self, packed, hx):
        """A PackedSequence through the layers: each sequence's steps end at its length (padded steps leave
        the state as it was and output zeros), so h_n is each sequence's state after its own last step."""
        from ..utils.rnn import PackedSequence, _packed_steps, pad_packed_sequence

        padded, lengths = pad_packed_sequence(PackedSequence(packed.data, packed.batch_sizes))   # sorted order
        states = self._initial_states(padded, _permuted(hx, packed.sorted_indices), True)
        output, h_n, c_n = self._run_masked(padded, lengths, *states)
        out = PackedSequence(_packed_steps(output, packed.batch_sizes.tolist()), packed.batch_sizes,
                             packed.sorted_indices, packed.unsorted_indices)
        h_n = _permuted(h_n, packed.unsorted_indices)
        c_n = _permuted(c_n, packed.unsorted_indices)
        return out, ((h_n, c_n) if self.mode == "LSTM" else h_n)

    def _run_masked(self, x, lengths, h0, c0) -> tuple:
        """_run over sequences of several lengths: one run per distinct length, on the sequences at least that
        long (packed input is sorted longest first), each stopping at its own end (the reverse direction
        starting from it)."""
        groups = []                           # (length, first sequence, end sequence) of equal lengths
        for b, n in enumerate(lengths.tolist()):
            if groups and groups[-1][0] == n:
                groups[-1][2] = b + 1
            else:
                groups.append([n, b, b + 1])
        outs, hs, cs = [], [], []
        for n, lo, hi in groups:
            out, h, c = self._run(x[:n, lo:hi], h0[:, lo:hi], c0[:, lo:hi] if c0 is not None else None)
            if n < x.shape[0]:
                pad = ember.zeros((x.shape[0] - n, hi - lo, out.shape[2]), dtype=out.dtype, device=out.device)
                out = ember.cat([out, pad], 0)
            outs.append(out)
            hs.append(h)
            cs.append(c)
        return ember.cat(outs, 1), ember.cat(hs, 1), (ember.cat(cs, 1) if c0 is not None else None)


def _permuted(hx, indices):
    """The states `hx` (a tensor, or LSTM's pair) with their batch dimension (1) reordered by `indices`."""
    if hx is None or indices is None:
        return hx
    if isinstance(hx, tuple):
        return tuple(h.index_select(1, indices) for h in hx)
    return hx.index_select(1, indices)


class RNN(RNNBase):
    """An Elman RNN: h_t = tanh(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh) (or relu), layered and optionally
    bidirectional. Arguments as torch's, by position or keyword (input_size, hidden_size, num_layers,
    nonlinearity, bias, batch_first, dropout, bidirectional)."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            nonlinearity, args = args[3], args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop("nonlinearity", "tanh")
        super().__init__(_nonlinearity_mode(nonlinearity), *args, **kwargs)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory layers, optionally with projections (`proj_size`): torch's gates i, f, g, o."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent units: torch's reset, update and new gates, h_t = (1 - z) n + z h_(t-1)."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ------------------------------------------------------------------------------------------------ cells
class RNNCellBase(Module):
    """One step of a layer: weight_ih, weight_hh, bias_ih, bias_hh as torch's cells name them."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, bias: bool, device=None, dtype=None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gate_size = GATES[mode] * hidden_size
        self.weight_ih = Parameter(ember.empty((gate_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(ember.empty((gate_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ember.empty(gate_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(ember.empty(gate_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _step(self, input, hx):
        """(h, c) after one step from `hx` ((h, c) for LSTM), checked as torch's cells check."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        states = hx if isinstance(hx, tuple) else (hx,)
        for state in states:
            if state is not None and state.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {state.dim()}D instead")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected {self.input_size}")
        lstm = self.mode == "LSTM"
        if hx is None:
            zeros = ember.zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)
            states = (zeros, zeros) if lstm else (zeros,)
        elif not batched:
            states = tuple(s.unsqueeze(0) for s in states)
        for k, state in enumerate(states):
            if state.shape[0] != x.shape[0]:
                raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden{k} batch size "
                                   f"{state.shape[0]}")
            if state.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {state.shape[1]}, expected "
                                   f"{self.hidden_size}")
        _, h, c, _ = _F._rnn_layer(x.unsqueeze(0), states[0], states[1] if lstm else None, self.weight_ih,
                                   self.weight_hh, self.bias_ih, self.bias_hh, None, self.mode, False)
        if not batched:
            h, c = h.squeeze(0), c.squeeze(0)
        return h, c


class RNNCell(RNNCellBase):
    """One Elman step: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(_nonlinearity_mode(nonlinearity), input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return self._step(input, hx)[0]


class LSTMCell(RNNCellBase):
    """One LSTM step: returns (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        return self._step(input, hx)


class GRUCell(RNNCellBase):
    """One GRU step: returns h'."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__("GRU", input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        return self._step(input, hx)[0]
