"""Native kernels of cross_entropy_loss / nll_loss_nd (log_softmax and the class pick fused)
and randperm (an argsort of the same Philox keys the decomposition ranks), against the
array-module API. They compute what the decompositions in ember/decompositions compute, in
one pass: the class is picked with take_along_axis instead of a one-hot mask.

randperm draws from `generator`, which the dispatcher always passes (the device's default
generator when the caller gave none).
"""
from __future__ import annotations

from ember.core.errors import DimensionError

from . import philox
from .context import ArrayModule, quiet, row_sums

# {signed integer dtype: the unsigned dtype of its size}, filled on first use (numpy's dtype
# objects, which cupy's arrays have as well)
_UNSIGNED_OF: dict = {}


def _quiet(am: ArrayModule):
    """0/0 (an all-ignored mean) is NaN, as in PyTorch, without numpy's warning."""
    return quiet(am.xp, invalid="ignore", divide="ignore")


def _along(w, cdim, ndim):
    """The 1-D `w` shaped to broadcast along dim `cdim` of an `ndim`-D array."""
    shape = [1] * ndim
    shape[cdim] = w.shape[0]
    return w.reshape(shape)


def _class_target(am: ArrayModule, logp, target, ignore_index):
    """(targets as int64, which are not ignored, targets with the ignored ones set to class 0);
    a target out of range raises nll_loss's error."""
    xp = am.xp
    classes = logp.shape[1 if logp.ndim >= 2 else 0]
    t = target.astype(am.int64)
    if logp.ndim == 1 and t.ndim == 1:
        t = t.reshape(())
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= classes))
    if bool(bad.any()):
        value = int(t[bad][0]) if int(bad.sum()) == 1 else "some target"
        raise DimensionError(f"nll_loss(): Target {value} is out of bounds (classes: {classes}).")
    return t, valid, xp.where(valid, t, 0)


def _target_weights(am: ArrayModule, weight, safe, valid, dt):
    """Each target's class weight in `dt` (1 without a weight), 0 where the target is ignored."""
    xp = am.xp
    w = weight.astype(dt)[safe] if weight is not None else xp.ones(safe.shape, dt)
    return xp.where(valid, w, xp.zeros((), dt))


def _nll_gradient(am: ArrayModule, x, grad, target, weight, reduction, ignore_index):
    """(d nll_loss / d x as a dense array of x's shape and dtype, which targets count, the incoming gradient
    per target, over the total weight for a mean): -weight[target] * that gradient at each target's class,
    0 elsewhere and for ignored targets (also when a mean divides by a total weight of 0)."""
    xp = am.xp
    dt = x.dtype
    cdim = 1 if x.ndim >= 2 else 0
    t, valid, safe = _class_target(am, x, target, ignore_index)
    w = _target_weights(am, weight, safe, valid, dt)
    with _quiet(am):
        scale = grad.astype(dt) / w.sum() if reduction == 1 else grad.astype(dt)
        scale = xp.broadcast_to(scale, safe.shape)
        picked = xp.where(valid, -scale * w, xp.zeros((), dt))
    # the target class as a one-hot mask (a comparison, which cupy has as numpy does)
    onehot = xp.expand_dims(safe, cdim) == _along(xp.arange(x.shape[cdim]), cdim, x.ndim)
    return xp.where(onehot, xp.expand_dims(picked, cdim), xp.zeros((), dt)), valid, scale


def _nll(am: ArrayModule, logp, target, weight, reduction, ignore_index):
    """(nll loss of the log-probabilities `logp`, which targets are not ignored, their weights)."""
    xp = am.xp
    cdim = 1 if logp.ndim >= 2 else 0
    t, valid, safe = _class_target(am, logp, target, ignore_index)
    picked = xp.take_along_axis(logp, xp.expand_dims(safe, cdim), axis=cdim).squeeze(cdim)
    w = _target_weights(am, weight, safe, valid, logp.dtype)
    loss = -picked * w
    if reduction == 0:
        return loss, valid, w
    if reduction == 2:
        return loss.sum(), valid, w
    return loss.sum() / w.sum(), valid, w


def _log_softmax(am: ArrayModule, x, cdim, dt):
    """(log_softmax of `x` along `cdim`, rounded to `dt` and back to x's dtype; the logsumexp along
    `cdim`, kept dims, in x's dtype)."""
    xp = am.xp
    if x.size == 0:
        return x, xp.full(x.shape[:cdim] + (1,) + x.shape[cdim + 1:], -xp.inf, x.dtype)
    top = xp.max(x, axis=cdim, keepdims=True)
    shifted = x - top
    log_sum = xp.log(xp.sum(xp.exp(shifted), axis=cdim, keepdims=True))
    logp = shifted - log_sum
    return logp.astype(dt).astype(x.dtype), top + log_sum       # rounded as the log_softmax op rounds


def _row_max(am: ArrayModule, x):
    """x's row maxima as a column: a row's first maximum (NaN if any) taken at argmax, whose loop is
    several times faster than a max reduction on short rows (the classes of a batch)."""
    n = x.shape[0]
    return x[am.constant(("row column", n), lambda: am.xp.arange(n)[:, None]), x.argmax(axis=1, keepdims=True)]


def _exp_row_sums(am: ArrayModule, x, top):
    """The row sums of exp(x - top) (x 2-D, top its row maxima as a column), exponentiated a block of rows
    at a time (`am.scratch_block` elements) into one scratch buffer instead of a whole exp(x - top): with a
    large vocabulary that is the size of the logits. Each row's sum is the same either way."""
    xp = am.xp
    n, classes = x.shape
    rows = n if am.scratch_block is None else max(1, am.scratch_block // max(classes, 1))
    if rows >= n:
        shifted = x - top
        return row_sums(am, xp.exp(shifted, out=shifted))
    sums = xp.empty(n, x.dtype)
    scratch = xp.empty((rows, classes), x.dtype)
    for start in range(0, n, rows):
        block = scratch[:min(rows, n - start)]
        xp.subtract(x[start:start + rows], top[start:start + rows], out=block)
        xp.exp(block, out=block)
        sums[start:start + rows] = row_sums(am, block)
    return sums


def _plain_targets(am: ArrayModule, x, target, weight, ignore_index, label_smoothing):
    """The commonest cross entropy (2-D float32/64 logits or log-probabilities, class indices all in
    range, none ignored, no weight, no smoothing) as (row indices, targets); None for any other
    call, which takes the general path."""
    if weight is not None or label_smoothing != 0 or x.ndim != 2 or target.ndim != 1 \
            or target.dtype.kind not in "iu" or x.dtype not in (am.f32, am.f64) or x.size == 0:
        return None
    n, classes = x.shape
    if 0 <= ignore_index < classes or target.shape[0] != n:
        return None
    # one search checks both bounds: a negative target viewed as unsigned is out of range (argmax,
    # whose loop is simpler than a max reduction's, finds the largest)
    if target.dtype.kind == "i":
        unsigned_dt = _UNSIGNED_OF.get(target.dtype)
        if unsigned_dt is None:
            unsigned_dt = _UNSIGNED_OF[target.dtype] = am.xp.dtype(f"u{target.dtype.itemsize}")
        unsigned = target.view(unsigned_dt)
    else:
        unsigned = target
    if int(unsigned[unsigned.argmax()]) >= classes:
        return None                                  # the general path names the bad target
    return am.constant(("rows", n), lambda: am.xp.arange(n)), target


def nll_loss_nd(am: ArrayModule, spec, x, target, weight=None, reduction=1, ignore_index=-100):
    dt = am.native_of[spec[1]]
    plain = _plain_targets(am, x, target, weight, ignore_index, 0) if x.dtype == dt else None
    if plain is not None:                            # a classifier's batch: one fancy read and a sum
        rows, t = plain
        picked = x[rows, t]
        if reduction == 0:
            return -picked
        total = -am.add_reduce(picked)
        return am.xp.asarray(total / x.dtype.type(x.shape[0]) if reduction == 1 else total)
    with _quiet(am):
        out, _, _ = _nll(am, x.astype(am.compute_of[dt]), target, weight, reduction, ignore_index)
    return am.xp.asarray(out).astype(dt)


def nll_loss_backward(am: ArrayModule, spec, grad, target, weight, self_size, reduction, ignore_index):
    """d nll_loss / d self: -weight[target] * grad (over the total weight for a mean) at each target's
    class, zeros elsewhere."""
    xp = am.xp
    dt = am.native_of[spec[1]]
    shape = tuple(int(n) for n in self_size)
    out = xp.zeros(shape, dt)
    if out.size == 0:
        return out
    plain = _plain_targets(am, out, target, weight, ignore_index, 0) if grad.dtype == dt else None
    if plain is not None:
        rows, t = plain
        # the batch as the dtype's own scalar: numpy 1's promotion would make a float32 / int float64
        scale = grad / dt.type(shape[0]) if reduction == 1 else grad                  # per row when unreduced
        out[rows, t] = -scale
        return out
    g, _, _ = _nll_gradient(am, out.astype(am.compute_of[dt]), grad, target, weight, reduction, ignore_index)
    return g.astype(dt)


def _cross_entropy(am: ArrayModule, dt, x, target, weight, reduction, ignore_index, label_smoothing):
    """(loss of dtype dt, logsumexp of x along the class dim in the opmath dtype: float32 for
    float16/bfloat16). The loss is picked from the log-probabilities `(x - max) - log(sum(exp(x - max)))`
    as nll_loss picks it, rounded to dt as the log_softmax op rounds them; the plain path computes only
    the picked ones and exponentiates a block of rows at a time."""
    xp = am.xp
    plain = _plain_targets(am, x, target, weight, ignore_index, label_smoothing) if x.dtype == dt else None
    if plain is not None:
        rows, t = plain
        top = _row_max(am, x)
        log_sum = xp.log(_exp_row_sums(am, x, top))
        top = top.reshape(-1)
        picked = x[rows, t]
        picked -= top
        picked -= log_sum                                                      # (x - max) - log(sum)
        lse = xp.add(top, log_sum, out=log_sum)
        if reduction == 0:
            return xp.negative(picked, out=picked), lse
        # numpy's ufunc method skips np.sum's Python wrapper: the plain path is ~15 array calls
        total = -am.add_reduce(picked)
        return xp.asarray(total / x.dtype.type(x.shape[0]) if reduction == 1 else total), lse
    cdt = am.compute_of[dt]
    cdim = 1 if x.ndim >= 2 else 0
    classes = x.shape[cdim]
    logp, lse = _log_softmax(am, x.astype(cdt), cdim, dt)
    lse = lse.squeeze(cdim)
    wb = _along(weight.astype(cdt), cdim, x.ndim) if weight is not None else None
    with _quiet(am):
        if target.dtype.kind not in "iu":                  # class probabilities (bfloat16 is kind "V")
            tgt = target.astype(cdt)
            if label_smoothing > 0:
                tgt = tgt * (1.0 - label_smoothing) + label_smoothing / classes
            weighted = logp * wb if wb is not None else logp
            loss = -(weighted * tgt).sum(axis=cdim)
            if reduction == 1:
                loss = loss.sum() / (x.size // classes) if x.size else xp.asarray(float("nan"), cdt)
            elif reduction == 2:
                loss = loss.sum()
            return xp.asarray(loss).astype(dt), lse
        out, valid, w = _nll(am, logp, target, weight, reduction, ignore_index)
        if label_smoothing == 0:
            return xp.asarray(out).astype(dt), lse
        weighted = logp * wb if wb is not None else logp
        smooth = xp.where(valid, -weighted.sum(axis=cdim), xp.zeros((), cdt))
        if reduction == 0:
            ret = smooth
        elif reduction == 2:
            ret = smooth.sum()
        elif weight is not None:
            ret = smooth.sum() / w.sum()
        else:
            ret = smooth.sum() / valid.sum()
        return xp.asarray(out * (1.0 - label_smoothing) + ret * (label_smoothing / classes)).astype(dt), lse


def cross_entropy_loss(am: ArrayModule, spec, x, target, weight=None, reduction=1, ignore_index=-100,
                       label_smoothing=0.0):
    return _cross_entropy(am, am.native_of[spec[1]], x, target, weight, reduction, ignore_index, label_smoothing)[0]


def cross_entropy_indices(am: ArrayModule, specs, x, target, weight=None, reduction=1, ignore_index=-100,
                          label_smoothing=0.0):
    """(loss of the logits' dtype, logsumexp of the opmath dtype)."""
    return _cross_entropy(am, am.native_of[specs[0][1]], x, target, weight, reduction, ignore_index, label_smoothing)


def randperm(am: ArrayModule, spec, n, generator=None, dtype=None, device=None, requires_grad=False):
    xp = am.xp
    keys = generator.draw(lambda seed, offset: philox.uniform(xp, seed, offset, (n,), "float64", 0.0, 1.0))
    ranks = xp.empty(n, dtype=am.int64)
    ranks[xp.argsort(keys, kind="stable")] = xp.arange(n, dtype=am.int64)
    return ranks.astype(am.native_of[spec[1]])


def cross_entropy_indices_backward(am: ArrayModule, spec, grad, x, lse, target, weight, reduction, ignore_index,
                                   label_smoothing):
    """d loss / d x of cross entropy with class indices from the logits and their logsumexp, in one pass:
    the gradient nll_loss (and label smoothing) sends to the log-probabilities `x - lse`, through
    log_softmax's backward (g - exp(logp) * sum(g), as torch computes it)."""
    xp = am.xp
    dt = am.native_of[spec[1]]
    cdt = am.compute_of[dt]
    cdim = 1 if x.ndim >= 2 else 0
    classes = x.shape[cdim]
    if x.size == 0:
        return xp.zeros(x.shape, dt)
    plain = _plain_targets(am, x, target, weight, ignore_index, label_smoothing) \
        if x.dtype == dt and grad.dtype == dt and lse.dtype == dt else None
    if plain is not None:
        rows, t = plain
        # the batch as the dtype's own scalar: numpy 1's promotion would make a float32 / int float64
        scale = grad / x.dtype.type(x.shape[0]) if reduction == 1 else grad         # per row when unreduced
        out = xp.subtract(x, lse[:, None])
        xp.exp(out, out=out)
        out *= scale[:, None] if reduction == 0 else scale                            # softmax * scale
        if am.is_numpy:
            xp.subtract.at(out, (rows, t), scale)    # ufunc.at (numpy's API): one call for the fancy read and write
        else:
            out[rows, t] -= scale
        return out
    logp = x.astype(cdt) - xp.expand_dims(lse.astype(cdt), cdim)
    g, valid, scale = _nll_gradient(am, logp, grad, target, weight, reduction, ignore_index)
    with _quiet(am):
        if label_smoothing > 0:
            g *= 1.0 - label_smoothing
            smooth = xp.expand_dims(xp.where(valid, scale, xp.zeros((), cdt)) * (-label_smoothing / classes),
                                    cdim)
            g = g + (smooth * _along(weight.astype(cdt), cdim, logp.ndim) if weight is not None else smooth)
        out = g - xp.exp(logp) * g.sum(axis=cdim, keepdims=True)
    return out.astype(dt)


KERNELS = {"nll_loss_nd": nll_loss_nd, "_nll_loss_backward": nll_loss_backward, "cross_entropy_loss": cross_entropy_loss,
           "randperm": randperm,
           "_cross_entropy_indices": cross_entropy_indices,
           "_cross_entropy_indices_backward": cross_entropy_indices_backward}
