"""torch.nn.functional's embedding and embedding_bag (lookup tables) and one_hot (the rows such a table
would hold for the identity), over the registry ops `embedding`, `embedding_bag` and `one_hot`."""
from __future__ import annotations

from ember._generated import functions as F


def embedding(input, weight, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False):
    """Rows of `weight` at the indices `input`, as torch.nn.functional.embedding.

    `padding_idx` (negative counts from the end) gets no gradient; `max_norm` first rescales,
    in place and without gradient, every looked-up row whose `norm_type`-norm exceeds it
    (torch's embedding_renorm_); `sparse=True` (sparse gradients) is not supported.
    """
    if padding_idx is not None:
        n = weight.shape[0]
        if padding_idx > 0:
            if padding_idx >= n:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    return F.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def _renorm_(weight, input, max_norm: float, norm_type: float) -> None:
    """torch.embedding_renorm_: rows of `weight` used by `input` with a norm above `max_norm`
    scaled to norm max_norm (scale max_norm / (norm + 1e-7)), in place, without autograd."""
    from ember.frontend.autograd.grad_mode import no_grad

    with no_grad():
        idx = F.reshape(input, (-1,))
        if idx.numel() == 0:
            return
        rows = F.index_select(weight, 0, idx)
        norms = F.pow(F.sum(F.pow(F.abs(rows), norm_type), 1, True), 1.0 / norm_type)
        scale = F.where(F.gt(norms, max_norm), F.div(max_norm, F.add(norms, 1e-7)), 1.0)
        F.index_put_(weight, [idx], F.mul(rows, F._to_copy(scale, dtype=rows.dtype)))


_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


def embedding_bag(input, weight, offsets=None, max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights=None, include_last_offset: bool = False, padding_idx: int | None = None):
    """Sums, means or maxima of bags of embedding rows, as torch.nn.functional.embedding_bag.

    A 2-D `input` (B, L) is B bags of L indices (`offsets` must then be None); a 1-D `input`
    is split into bags where `offsets` says. `per_sample_weights` (mode 'sum' only) weigh
    each looked-up row; `padding_idx` rows are left out of their bag (and of its count).
    """
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = F.arange(0, input.numel(), input.shape[1], dtype=input.dtype, device=input.device)
        include_last_offset = False
        input = F.reshape(input, (-1,))
        if per_sample_weights is not None:
            per_sample_weights = F.reshape(per_sample_weights, (-1,))
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in _BAG_MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    return F.embedding_bag(weight, input, offsets, scale_grad_by_freq, _BAG_MODES[mode], sparse, per_sample_weights,
                           include_last_offset, padding_idx)[0]


def one_hot(tensor, num_classes: int = -1):
    """int64 one-hot rows of the class indices `tensor` (int64), `num_classes` wide or, with -1, one more
    than the largest index (read from the data), as torch.nn.functional.one_hot."""
    return F.one_hot(tensor, num_classes)
