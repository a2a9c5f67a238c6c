"""The CTC loss on ember ops: the forward (alpha) recursion in log space, vectorised over the batch and
the extended label sequence (the targets with a blank before, between and after them), one step per
time frame. Autograd differentiates through the recursion (its adjoint is the beta recursion).

Each sequence starts from a state before its first frame (log-probability 0 at extended position 0);
frames past a sequence's input length leave its alphas unchanged, and its loss is read at the last
two extended positions of its own target length, so padding never enters a result. The log-sum-exp
of the recursion shifts by the (constant) largest term and guards the all -inf case, so impossible
alignments give an infinite loss with finite, zero gradients.

PyTorch's gradient with respect to `log_probs` is not the derivative of the loss: its kernel returns
exp(log_probs) - (the alignment posteriors), the derivative with respect to the logits when
log_probs = log_softmax(logits) (the two differ by a term log_softmax's backward removes). Ember adds
that term, exp(log_probs) over each sequence's frames, as a value-free summand (x - x.detach()), so a
gradient equals torch's whether log_probs is a leaf or the output of log_softmax.
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.dispatcher.operator import ALL_OPS
from ember.frontend.factories import tensor as _tensor
from ember.frontend.tensor import holds_data
from ember.shape_rules.pool_ctc import check_ctc_lengths

from . import decomposition

_NEG_INF = float("-inf")


def log_add(terms):
    """log(sum(exp(t) for t in terms)), elementwise, shifted by the largest term (held constant); where
    every term is -inf the result is -inf and the gradient 0 (never NaN)."""
    top = terms[0]
    for t in terms[1:]:
        top = F.maximum(top, t)
    shift = F.where(F.eq(top, _NEG_INF), 0.0, top).detach()
    total = None
    for t in terms:
        e = F.exp(F.sub(t, shift))
        total = e if total is None else F.add(total, e)
    empty = F.eq(total, 0)
    return F.where(empty, _NEG_INF, F.add(F.log(F.where(empty, 1.0, total)), shift))


def _shift_right(x, k: int):
    """x (N, L) moved k places to the right along L, -inf coming in."""
    return F.slice(F.constant_pad_nd(x, [k, 0], _NEG_INF), 1, 0, x.shape[1], 1)


def _labels(targets, tl, longest: int, blank: int, n: int):
    """(N, longest) int64: each sequence's labels, padded with `blank` past its length."""
    dev = targets.device
    steps = F.arange(longest, device=dev)
    valid = F.lt(F.unsqueeze(steps, 0), F.unsqueeze(tl, 1))
    fill = F.full((n, longest), blank, dtype=_dt.int64, device=dev)
    if targets.dim() == 2:
        got = F._to_copy(F.slice(targets, 1, 0, longest, 1), dtype=_dt.int64)
    elif targets.numel() == 0:
        return fill
    else:                                    # concatenated: sequence b starts after the lengths before it
        starts = F.sub(F.cumsum(tl, 0), tl)
        at = F.where(valid, F.add(F.unsqueeze(starts, 1), F.unsqueeze(steps, 0)), 0)
        got = F._to_copy(F.reshape(F.index_select(targets, 0, F.reshape(at, (-1,))), (n, longest)), dtype=_dt.int64)
    return F.where(valid, got, fill)


def ctc_nll(lp, targets, il, tl, longest: int, blank: int):
    """(N,): -log p(target | input) of each sequence; lp (T, N, C), il/tl (N,) int64 lengths."""
    T, N, _ = lp.shape
    dev, dtype = lp.device, lp.dtype
    labels = _labels(targets, tl, longest, blank, N)
    blanks = F.full((N, longest), blank, dtype=_dt.int64, device=dev)
    ext = F.cat([F.reshape(F.stack([blanks, labels], 2), (N, 2 * longest)),
                 F.full((N, 1), blank, dtype=_dt.int64, device=dev)], 1)                 # (N, L)
    L = 2 * longest + 1
    pos = F.arange(L, device=dev)
    before = F.cat([F.full((N, 2), blank, dtype=_dt.int64, device=dev), F.slice(ext, 1, 0, L - 2, 1)], 1) \
        if L > 2 else F.full((N, L), blank, dtype=_dt.int64, device=dev)
    skip = F.logical_and(F.ne(ext, before), F.ge(pos, 2))      # (even positions hold blanks: never a skip)
    emit = F.gather(lp, 2, F.expand(F.unsqueeze(ext, 0), (T, N, L)))                      # (T, N, L)
    alpha = F.expand(F.unsqueeze(F.where(F.eq(pos, 0), 0.0, F.full((), _NEG_INF, dtype=dtype, device=dev)), 0),
                     (N, L))
    live = F.unsqueeze(il, 1)
    for t in range(T):
        step = log_add([alpha, _shift_right(alpha, 1), F.where(skip, _shift_right(alpha, 2), _NEG_INF)])
        alpha = F.where(F.gt(live, t), F.add(step, F.select(emit, 0, t)), alpha)
    last = F.unsqueeze(F.mul(tl, 2), 1)
    end = F.gather(alpha, 1, last)
    before_end = F.where(F.unsqueeze(F.gt(tl, 0), 1), F.gather(alpha, 1, F.clamp(F.sub(last, 1), 0)), _NEG_INF)
    return F.neg(F.squeeze(log_add([end, before_end]), [1]))


def _torch_gradient_term(lp, il):
    """(N,) zeros whose gradient is exp(lp) over each sequence's frames (torch's extra term, see above)."""
    frames = F.lt(F.unsqueeze(F.arange(lp.shape[0], device=lp.device), 1), F.unsqueeze(il, 0))   # (T, N)
    mass = F.sum(F.where(F.unsqueeze(frames, 2), F.exp(lp), 0.0), [0, 2])
    return F.sub(mass, mass.detach())


def ctc_loss(log_probs, targets, il, tl, longest: int, blank: int, reduction: int, zero_infinity: bool):
    """The loss of (T, N, C) or unbatched (T, C) log_probs; il/tl (N,) int64 tensors on its device."""
    batched = log_probs.dim() == 3
    lp = log_probs if batched else F.unsqueeze(log_probs, 1)
    nll = ctc_nll(lp, targets, il, tl, longest, blank)
    loss = F.add(nll, _torch_gradient_term(lp, il)) if lp.requires_grad else nll
    if zero_infinity:
        loss = F.where(F.eq(nll, float("inf")), 0.0, loss)
    if reduction == 1:                       # each loss over its target length, then the batch's mean
        return F.mean(F.div(loss, F._to_copy(F.clamp(tl, 1), dtype=loss.dtype)))
    if reduction == 2:
        return F.sum(loss)
    return loss if batched else F.squeeze(loss, [0])


@decomposition("ctc_loss.IntList")
def ctc_loss_intlist(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    dev = log_probs.device
    il_list = list(input_lengths) if isinstance(input_lengths, (list, tuple)) else [input_lengths]
    tl_list = list(target_lengths) if isinstance(target_lengths, (list, tuple)) else [target_lengths]
    il = _tensor(il_list, dtype=_dt.int64, device=dev)
    tl = _tensor(tl_list, dtype=_dt.int64, device=dev)
    return ctc_loss(log_probs, targets, il, tl, max(tl_list, default=0), blank, reduction, zero_infinity)


@decomposition("ctc_loss.Tensor")
def ctc_loss_tensor(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    dev = log_probs.device
    il = F._to_copy(F.reshape(input_lengths, (-1,)), dtype=_dt.int64, device=dev)
    tl = F._to_copy(F.reshape(target_lengths, (-1,)), dtype=_dt.int64, device=dev)
    if holds_data(input_lengths) and holds_data(target_lengths):         # the checks torch makes of the values
        tl_list = tl.tolist()
        batch = log_probs.shape[1] if log_probs.dim() == 3 else 1
        check_ctc_lengths(ALL_OPS["ctc_loss.Tensor"], tuple(targets.shape), il.tolist(), tl_list,
                          log_probs.shape[0], batch)
        longest = max(tl_list, default=0)
    else:                                    # no values (meta): an upper bound gives the same shapes
        longest = targets.shape[-1]
    return ctc_loss(log_probs, targets, il, tl, longest, blank, reduction, zero_infinity)
