"""torch.nn.functional's embedding (a lookup table), over the registry op `embedding`."""
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
