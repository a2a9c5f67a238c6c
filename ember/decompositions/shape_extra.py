"""Shape ops (flip, roll, tril/triu, repeat/tile, split/chunk/unbind/narrow, diagonal, diag, diag_embed,
diagflat, unflatten, alias), round to decimals,
einsum, lerp/addcmul/addcdiv and two factories, in terms of existing ember ops.

Splits are tuples of `slice`/`select` views, so they alias their input on every backend;
einsum contracts its operands pairwise with one `bmm` each, after summing the subscripts
no later operand or the output needs.
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.dispatcher.operator import ALL_OPS
from ember.core import dtype as _dt
from ember.core.errors import ArgumentTypeError
from ember.shape_rules.einsum import parse_einsum

from . import decomposition, explicit_kernel
from .shape_ops import _as_strided_view


def _wrap(dim: int, ndim: int) -> int:
    return dim % ndim if ndim else 0


@explicit_kernel("flip")
def flip(self, dims):
    """Reverses each dimension of `dims`: one index_select with the reversed positions per dimension."""
    x = self
    for d in {_wrap(d, self.dim()) for d in dims}:
        n = x.shape[d] if x.dim() else 1
        if n > 1:
            x = F.index_select(x, d, F.arange(n - 1, -1, -1, dtype=_dt.int64, device=x.device))
    return F.clone(x) if x is self else x


@decomposition("roll")
def roll(self, shifts, dims=()):
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if self.numel() == 0:                  # an empty input's dims are not read, as torch
        return F.clone(self)
    if not dims:
        flat = roll(F.reshape(self, (-1,)), shifts, (0,))
        return F.reshape(flat, tuple(self.shape))
    x = self
    for shift, dim in zip(shifts, dims):
        d = _wrap(dim, x.dim())
        n = x.shape[d] if x.dim() else 1
        if n == 0 or shift % n == 0 or not x.dim():
            continue
        s = shift % n
        x = F.cat([F.slice(x, d, n - s, n, 1), F.slice(x, d, 0, n - s, 1)], d)
    return F.clone(x) if x is self else x


def _triangle(self, diagonal: int, lower: bool):
    rows, cols = self.shape[-2], self.shape[-1]
    i = F.reshape(F.arange(rows, device=self.device), (rows, 1))
    j = F.reshape(F.arange(cols, device=self.device), (1, cols))
    offset = F.sub(j, i)
    keep = F.le(offset, diagonal) if lower else F.ge(offset, diagonal)
    return F.where(keep, self, F.zeros((), dtype=self.dtype, device=self.device))


@decomposition("tril")
def tril(self, diagonal=0):
    return _triangle(self, diagonal, True)


@decomposition("triu")
def triu(self, diagonal=0):
    return _triangle(self, diagonal, False)


@decomposition("repeat")
def repeat(self, repeats):
    """expand a (1, s0, 1, s1, ...) view to (r0, s0, r1, s1, ...), then merge each pair."""
    repeats = tuple(repeats)
    shape = (1,) * (len(repeats) - self.dim()) + tuple(self.shape)
    interleaved, expanded, out = [], [], []
    for r, s in zip(repeats, shape):
        interleaved += [1, s]
        expanded += [r, s]
        out.append(r * s)
    x = F.expand(F.reshape(self, tuple(interleaved)), tuple(expanded))
    x = F.reshape(x, tuple(out))
    return F.clone(x) if all(r == 1 for r in repeats) else x


@decomposition("tile")
def tile(self, dims):
    if not isinstance(dims, (list, tuple)):
        raise ArgumentTypeError(f"tile(): argument 'dims' (position 2) must be tuple of ints, not {type(dims).__name__}")
    dims = tuple(dims)
    dims = (1,) * (self.dim() - len(dims)) + dims
    return ALL_OPS["repeat"](self, dims)


@decomposition("split.Tensor")
def split(self, split_size, dim=0):
    d = _wrap(dim, self.dim())
    n = self.shape[d]
    if split_size == 0 or n == 0:
        return (F.slice(self, d, 0, n, 1),)
    return tuple(F.slice(self, d, i, min(i + split_size, n), 1) for i in range(0, n, split_size))


@decomposition("split_with_sizes")
def split_with_sizes(self, split_sizes, dim=0):
    d = _wrap(dim, self.dim())
    out, start = [], 0
    for size in split_sizes:
        out.append(F.slice(self, d, start, start + size, 1))
        start += size
    return tuple(out)


@decomposition("chunk")
def chunk(self, chunks, dim=0):
    d = _wrap(dim, self.dim())
    n = self.shape[d]
    size = -(-n // chunks)
    if n == 0:
        return tuple(F.slice(self, d, 0, 0, 1) for _ in range(chunks))
    return split(self, size, d)


@decomposition("unbind.int")
def unbind(self, dim=0):
    d = _wrap(dim, self.dim())
    return tuple(F.select(self, d, i) for i in range(self.shape[d]))


@decomposition("narrow")
def narrow(self, dim, start, length):
    d = _wrap(dim, self.dim())
    if start < 0:
        start += self.shape[d]
    return F.slice(self, d, start, start + length, 1)


@explicit_kernel("diagonal")
def diagonal(self, offset=0, dim1=0, dim2=1):
    return _as_strided_view("diagonal", self, offset, dim1, dim2)


@explicit_kernel("unfold")
def unfold(self, dimension, size, step):
    return _as_strided_view("unfold", self, dimension, size, step)


@explicit_kernel("alias")
def alias(self):
    return _as_strided_view("alias", self)


# -------------------------------------------------------------------------------- einsum
def _diagonals(x, letters: str):
    """Take the diagonal of every subscript repeated within one operand ("ii" -> "i")."""
    while len(set(letters)) != len(letters):
        c = next(c for c in letters if letters.count(c) > 1)
        i = letters.index(c)
        j = letters.index(c, i + 1)
        x = F.diagonal(x, 0, i, j)        # the diagonal becomes the last dimension
        letters = "".join(l for k, l in enumerate(letters) if k not in (i, j)) + c
    return x, letters


def _sum_out(x, letters: str, keep: set):
    gone = [i for i, c in enumerate(letters) if c not in keep]
    if not gone:
        return x, letters
    return F.sum(x, gone), "".join(c for c in letters if c in keep)


def _expand_to(x, letters: str, sizes: dict):
    target = tuple(sizes[c] for c in letters)
    return x if tuple(x.shape) == target else F.expand(x, target)


def _contract(a, la: str, b, lb: str, keep: set, sizes: dict):
    """a (subscripts la) times b (lb), summing the shared subscripts outside `keep`: one bmm."""
    batch = [c for c in la if c in lb and c in keep]
    inner = [c for c in la if c in lb and c not in keep]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]

    def size(cs):
        n = 1
        for c in cs:
            n *= sizes[c]
        return n

    a = F.permute(_expand_to(a, la, sizes), [la.index(c) for c in batch + left + inner])
    b = F.permute(_expand_to(b, lb, sizes), [lb.index(c) for c in batch + inner + right])
    a = F.reshape(a, (size(batch), size(left), size(inner)))
    b = F.reshape(b, (size(batch), size(inner), size(right)))
    out = F.bmm(a, b)
    letters = "".join(batch + left + right)
    return F.reshape(out, tuple(sizes[c] for c in letters)), letters


@decomposition("einsum")
def einsum(equation, tensors, path=None):
    terms, out, sizes = parse_einsum(ALL_OPS["einsum"], equation, [tuple(t.shape) for t in tensors])
    ops = []
    for k, (t, letters) in enumerate(zip(tensors, terms)):
        t, letters = _diagonals(t, letters)
        later = set(out).union(*[set(s) for j, s in enumerate(terms) if j != k])
        ops.append(_sum_out(t, letters, later))
    x, lx = ops[0]
    for k in range(1, len(ops)):
        y, ly = ops[k]
        keep = set(out).union(*[set(s) for s in terms[k + 1:]])
        x, lx = _sum_out(x, lx, keep | set(ly))
        y, ly = _sum_out(y, ly, keep | set(lx))
        x, lx = _contract(x, lx, y, ly, keep, sizes)
    x, lx = _sum_out(x, lx, set(out))
    x = _expand_to(x, lx, sizes)
    x = F.permute(x, [lx.index(c) for c in out])
    if len(tensors) == 1 and x._base is not None:
        x = F.clone(x)          # a result of its own, like every other einsum
    return x


# ---------------------------------------------------------------------------- pointwise
def _lerp(self, end, weight):
    """PyTorch's two-sided formula: exact at both ends and monotone in weight."""
    diff = F.sub(end, self)
    if not hasattr(weight, "dtype"):
        if abs(weight) < 0.5:
            return F.add(self, F.mul(diff, weight))
        return F.sub(end, F.mul(diff, 1 - weight))
    low = F.add(self, F.mul(diff, weight))
    high = F.sub(end, F.mul(diff, F.rsub(weight, 1)))
    return F.where(F.lt(F.abs(weight), 0.5), low, high)


@decomposition("lerp.Scalar")
def lerp_scalar(self, end, weight):
    return _lerp(self, end, weight)


@decomposition("lerp.Tensor")
def lerp_tensor(self, end, weight):
    return _lerp(self, end, weight)


@decomposition("addcmul")
def addcmul(self, tensor1, tensor2, value=1):
    prod = F.mul(tensor1, tensor2)
    return F.add(self, prod if value == 1 else F.mul(prod, value))


@decomposition("addcdiv")
def addcdiv(self, tensor1, tensor2, value=1):
    quot = F.div(tensor1, tensor2)
    return F.add(self, quot if value == 1 else F.mul(quot, value))


# ---------------------------------------------------------------------------- factories
@decomposition("scalar_tensor")
def scalar_tensor(s, dtype=None, device=None, requires_grad=False):
    if hasattr(s, "item"):
        s = s.item()
    return F.full((), s, dtype=dtype or _dt.get_default_dtype(), device=device)


@decomposition("empty_strided")
def empty_strided(size, stride, dtype=None, device=None, requires_grad=False):
    size, stride = tuple(size), tuple(stride)
    if 0 in size and any(st < 0 for st in stride):      # no element: the shape rule's contiguous strides
        return F.empty(size, dtype=dtype or _dt.get_default_dtype(), device=device)
    extent = 0 if 0 in size else 1 + sum((n - 1) * st for n, st in zip(size, stride))
    base = F.empty((extent,), dtype=dtype or _dt.get_default_dtype(), device=device)
    return F.as_strided(base, size, stride, 0)


@decomposition("diag_embed")
def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    """Zeros with the input written into the diagonal view (diagonal appends the diagonal as the last
    dimension and keeps the others in order: the input's layout)."""
    op = ALL_OPS["diag_embed"]
    out = F.zeros(op.shape_rule(op, self, offset, dim1, dim2)[0], dtype=self.dtype, device=self.device)
    F.copy_(F.diagonal(out, offset, dim1, dim2), self)
    return out


@decomposition("diag")
def diag(self, diagonal=0):
    ALL_OPS["diag"].shape_rule(ALL_OPS["diag"], self, diagonal)          # (1-d or 2-d, with torch's message)
    if self.dim() == 1:
        return diag_embed(self, diagonal, 0, 1)
    return F.clone(F.diagonal(self, diagonal, 0, 1))


@decomposition("diagflat")
def diagflat(self, offset=0):
    return diag_embed(F.reshape(self, (-1,)), offset, 0, 1)


@decomposition("unflatten.int")
def unflatten(self, dim, sizes):
    op = ALL_OPS["unflatten.int"]
    return F.reshape(self, op.shape_rule(op, self, dim, sizes)[0])


@decomposition("round.decimals")
def round_decimals(self, decimals):
    """torch's kernel: round(x * 10^d) / 10^d, or round(x / 10^-d) * 10^-d for negative d."""
    if decimals == 0:
        return F.round(self)
    scale = 10.0 ** abs(decimals)
    low = self.dtype in (_dt.float16, _dt.bfloat16)         # computed in float32, rounded once (torch's opmath)
    x = F._to_copy(self, dtype=_dt.float32) if low else self
    x = F.div(F.round(F.mul(x, scale)), scale) if decimals > 0 else F.mul(F.round(F.div(x, scale)), scale)
    return F._to_copy(x, dtype=self.dtype) if low else x
