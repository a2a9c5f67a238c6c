"""torch.nn.functional.ctc_loss: the connectionist temporal classification loss."""
from __future__ import annotations

from ember.dispatcher.operator import ALL_OPS
from ember.frontend.tensor import Tensor

from .loss import _reduction

__all__ = ["ctc_loss"]


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False):
    """The CTC loss of log-probabilities (T, N, C) (or unbatched (T, C)) against targets padded (N, S) or
    concatenated (sum of target_lengths,). The lengths are tensors or sequences of ints; 'mean' divides
    each loss by its target length (at least 1) before averaging over the batch, as torch does;
    zero_infinity replaces infinite losses (impossible alignments) and their gradients by zeros."""
    tensors = isinstance(input_lengths, Tensor) and isinstance(target_lengths, Tensor)
    op = ALL_OPS["ctc_loss.Tensor" if tensors else "ctc_loss.IntList"]
    return op(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction), zero_infinity)
