"""Variable-length sequences for the recurrent layers (torch.nn.utils.rnn).

A PackedSequence holds the steps of several sequences back to back, longest sequence first: `data`
is every sequence's step 0, then every step 1 of the sequences that long, and so on; `batch_sizes[t]`
counts the sequences with a step t (int64, on the cpu). `sorted_indices` maps the packed order to the
caller's batch and `unsorted_indices` back (None when the caller's batch was already sorted). The
recurrent layers take one and return one, each sequence ending at its own length.
"""
from __future__ import annotations

from typing import NamedTuple

import ember

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence", "pack_sequence",
           "unpad_sequence", "unpack_sequence"]


class PackedSequence(NamedTuple):
    data: object
    batch_sizes: object
    sorted_indices: object = None
    unsorted_indices: object = None

    def to(self, *args, **kwargs) -> "PackedSequence":
        """The same sequences with `data` (and the indices, to its device) converted as Tensor.to does;
        batch_sizes stays on the cpu."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = lambda t: None if t is None else t.to(data.device)    # noqa: E731
        return PackedSequence(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def _lengths_list(lengths) -> list[int]:
    if isinstance(lengths, ember.Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                               f"{lengths.device.type} {str(lengths.dtype).removeprefix('ember.')} tensor")
        return [int(n) for n in lengths.tolist()]
    return [int(n) for n in lengths]


def pack_padded_sequence(input, lengths, batch_first: bool = False, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *) with batch_first) of sequences of `lengths`."""
    n = _lengths_list(lengths)
    if enforce_sorted:
        if any(a < b for a, b in zip(n, n[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = sorted(range(len(n)), key=lambda b: -n[b])          # stable, as torch's sort here
        sorted_indices = ember.tensor(order, dtype=ember.int64, device=input.device)
        n = [n[b] for b in order]
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    if len(n) != input.shape[1]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(n)} "
                           f"(batch_size={input.shape[1]})")
    if n and n[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if n and n[0] > input.shape[0]:
        raise RuntimeError(f"Expected a sequence of length at most {input.shape[0]} (the padded length), got {n[0]}")
    steps = max(n) if n else 0
    sizes = [sum(1 for m in n if m > t) for t in range(steps)]
    data = _packed_steps(input, sizes)
    unsorted = None if sorted_indices is None else _inverse(sorted_indices)
    return PackedSequence(data, ember.tensor(sizes, dtype=ember.int64), sorted_indices, unsorted)


def _packed_steps(padded, sizes) -> object:
    """A PackedSequence's data from its time-major padded form: step t's first sizes[t] sequences, in turn."""
    return ember.cat([padded[t, :size] for t, size in enumerate(sizes)], 0)


def _inverse(permutation):
    inverse = [0] * permutation.shape[0]
    for i, p in enumerate(permutation.tolist()):
        inverse[p] = i
    return ember.tensor(inverse, dtype=ember.int64, device=permutation.device)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple:
    """(padded (T, B, *) or (B, T, *), lengths): the inverse of pack_padded_sequence, in the caller's batch
    order; `total_length` pads to that many steps."""
    data, sizes = sequence.data, [int(b) for b in sequence.batch_sizes.tolist()]
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    batch = sizes[0] if sizes else 0
    rows, start = [], 0
    for size in sizes:
        step = data[start:start + size]
        start += size
        if size < batch:
            fill = ember.full((batch - size,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype,
                              device=data.device)
            step = ember.cat([step, fill], 0)
        rows.append(step)
    rows += [ember.full((batch,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
             for _ in range(steps - len(sizes))]
    padded = ember.stack(rows, 0)
    lengths = [sum(1 for size in sizes if size > b) for b in range(batch)]
    lengths = ember.tensor(lengths, dtype=ember.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices.cpu())
    return (padded.transpose(0, 1) if batch_first else padded), lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right"):
    """Stack tensors of shape (L_i, *) into (max L, B, *) (or (B, max L, *)), padded with `padding_value`."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            fill = ember.full((missing,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = ember.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        rows.append(s)
    return ember.stack(rows, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors (L_i, *) (longest first, unless enforce_sorted=False)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list:
    """The tensors pad_sequence stacked, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences, _lengths_list(lengths))]


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The tensors pack_sequence packed."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
