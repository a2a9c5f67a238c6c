"""diagonal_scatter, narrow_copy, renorm and isreal in ember ops: diagonal_scatter writes src through the
diagonal's window of a contiguous copy (as_strided_scatter), then lays the result out as self; narrow_copy is
narrow made contiguous; renorm scales each sub-tensor along dim whose p-norm exceeds maxnorm by
maxnorm / (norm + 1e-7), as torch's; isreal is all true for ember's real dtypes."""
from __future__ import annotations

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.layout import contiguous_strides
from ember.dispatcher import ALL_OPS
from ember.shape_rules.shape_ops import diagonal_window

from . import decomposition


@decomposition("diagonal_scatter")
def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    shape = tuple(self.shape)
    size, stride, at = diagonal_window(ALL_OPS["diagonal"], shape, contiguous_strides(shape), 0, offset, dim1, dim2)
    src = src if src.dtype is self.dtype else F._to_copy(src, dtype=self.dtype)
    written = F.as_strided_scatter(self, src, size, stride, at)                  # contiguous
    return written if self.is_contiguous() else F.copy(F.empty_like(self), written)


@decomposition("narrow_copy")
def narrow_copy(self, dim, start, length):
    return F.contiguous(F.clone(F.narrow(self, dim, start, length)))


@decomposition("renorm")
def renorm(self, p, dim, maxnorm):
    d = dim % self.dim()
    others = [k for k in range(self.dim()) if k != d]
    norms = F._dispatch_norm_ScalarOpt_dim((self, p, others, True))
    factor = F.where(F.gt(norms, maxnorm), F.div(maxnorm, F.add(norms, 1e-7)), 1.0)
    return F.mul(self, factor)


@decomposition("isreal")
def isreal(self):
    return F.ones_like(self, dtype=_dt.bool)
