"""Views, copies and joins against the array-module API.

Views must share memory with their input: `as_strided` builds any view from the storage
root and the strides/offset computed by the shape rule; the others use the array
module's own (cheaper) view functions where those give exactly the same layout.

`view` and `slice_` fall back to this module's `as_strided(am, spec, a)` where the array
module's reshape/slicing would not give PyTorch's layout (a reshape that copies, an empty
slice); that `as_strided` is numpy's (a new array over the root's buffer): an array module
without a `buffer=` constructor (cupy) needs its own `as_strided`, `expand`, `view` and `slice_`.
"""
from __future__ import annotations

from .context import ArrayModule
from ember.core.dtype import wrap_unsigned


def root_of(a):
    """The array owning the memory `a` views (the end of its `.base` chain)."""
    root = a
    base = root.base
    while base is not None and hasattr(base, "strides") and hasattr(base, "base"):
        root = base
        base = root.base
    return root


def as_strided(am: ArrayModule, spec, a, *unused):
    """The view `spec` = (shape, dtype, strides, offset) of `a`'s storage, in elements.

    numpy: a new array over the root's buffer (cupy overrides this kernel).
    """
    shape, _, strides, offset = spec
    item = a.itemsize
    root = root_of(a)
    if not root.flags.c_contiguous:
        # a ufunc's result keeps its inputs' memory order (Fortran, permuted): the same dense
        # block, seen C-contiguous once its dimensions are sorted by stride
        dense = root.transpose(sorted(range(root.ndim), key=lambda d: -root.strides[d]))
        if dense.flags.c_contiguous:
            root = dense
    # an empty view reads nothing: its offset may lie past its storage's end (an empty storage), where numpy
    # refuses it; it is kept at the end there
    offset = offset * item if 0 not in shape else min(offset * item, root.nbytes)
    return am.ndarray(shape, dtype=a.dtype, buffer=root, offset=offset, strides=tuple(s * item for s in strides))


def view(am: ArrayModule, spec, a, size):
    """A reshape when it is a view, else `as_strided(am, spec, a)`."""
    out = a.reshape(spec[0])
    return out if out.base is not None else as_strided(am, spec, a)


def view_dtype(am: ArrayModule, spec, a, dtype):
    """The same memory read as `dtype` (numpy's and cupy's `view(dtype)` give the spec's layout)."""
    return a.view(am.native_of[spec[1]])


def permute(am: ArrayModule, spec, a, dims):
    return a.transpose(dims)


def transpose(am: ArrayModule, spec, a, dim0, dim1):
    return am.xp.swapaxes(a, dim0, dim1) if a.ndim else a.view()


def squeeze(am: ArrayModule, spec, a, dim=None):
    return a.reshape(spec[0])


def unsqueeze(am: ArrayModule, spec, a, dim):
    return a.reshape(spec[0])


def slice_(am: ArrayModule, spec, a, dim=0, start=None, end=None, step=1):
    """Basic slicing, or `as_strided(am, spec, a)` for an empty result."""
    d = dim % a.ndim
    out = a[(slice(None),) * d + (slice(start, end, step),)]
    # numpy places an empty slice anywhere; keep PyTorch's storage offset for it
    return out if out.size else as_strided(am, spec, a)


def select(am: ArrayModule, spec, a, dim, index):
    d = dim % a.ndim
    return a[(slice(None),) * d + (index, Ellipsis)]


def copy_(am: ArrayModule, spec, self, src, non_blocking=False):
    am.xp.copyto(self, src, casting="unsafe")
    return self


def fill_(am: ArrayModule, spec, self, value):
    self.fill(wrap_unsigned(value, self.dtype))
    return self


def empty_like_spec(am: ArrayModule, spec):
    """A new array for an output spec: contiguous, or laid out as (shape, dtype, strides) says.

    A strided spec (a dense permutation of a contiguous layout) is an `empty` of the
    permuted shape, transposed back.
    """
    xp = am.xp
    shape, dt = tuple(spec[0]), am.native_of[spec[1]]
    if len(spec) != 3:
        return xp.empty(shape, dtype=dt)
    strides = spec[2]
    order = sorted(range(len(shape)), key=lambda d: -strides[d])
    return xp.empty(tuple(shape[d] for d in order), dtype=dt).transpose([order.index(d) for d in range(len(shape))])


def clone(am: ArrayModule, spec, a):
    out = empty_like_spec(am, spec)
    am.xp.copyto(out, a)
    return out


def cat(am: ArrayModule, spec, tensors, dim=0):
    xp = am.xp
    dt = am.native_of[spec[1]]
    shape = spec[0]
    parts = [t for t in tensors if not (t.shape == (0,) and len(shape) != 1)]
    if not parts:
        return xp.empty(shape, dtype=dt)
    out = xp.concatenate([p.astype(dt, copy=False) for p in parts], axis=dim % len(shape))
    # numpy may lay the result out like broadcast inputs; views of it need a C-contiguous buffer
    return out if out.flags.c_contiguous else xp.ascontiguousarray(out)


KERNELS = {"as_strided": as_strided, "view": view, "view.dtype": view_dtype, "permute": permute, "transpose.int": transpose,
           "squeeze.dims": squeeze, "unsqueeze": unsqueeze, "slice.Tensor": slice_, "select.int": select,
           "expand": as_strided, "copy_": copy_, "fill_.Scalar": fill_, "clone": clone, "cat": cat}
