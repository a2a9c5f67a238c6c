"""`ember.special` (torch.special): the special functions under torch.special's names, the registry's ops where
they exist (gammaln is lgamma, psi digamma, expit sigmoid, ...), and logit, entr and the regularised
incomplete gamma functions in ember ops."""
from __future__ import annotations

from ember._generated import functions as _F

__all__ = ["digamma", "entr", "erf", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "log1p",
           "log_softmax", "logit", "logsumexp", "polygamma", "psi", "round", "softmax", "xlogy"]

digamma = psi = _F.digamma
erf, erfinv = _F.erf, _F.erfinv
expit = _F.sigmoid
exp2, expm1, log1p = _F.exp2, _F.expm1, _F.log1p
gammaln = _F.lgamma
logsumexp = _F.logsumexp
polygamma = _F.polygamma
round = _F.round          # noqa: A001  (torch.special.round)
xlogy = _F.xlogy


def logit(input, eps: float | None = None):
    """log(p / (1 - p)), p clamped into [eps, 1 - eps] when eps is given."""
    x = input if eps is None else _F.clamp(input, eps, 1 - eps)
    return _F.log(_F.div(x, _F.rsub(x, 1)))


def entr(input):
    """-x log(x) elementwise: 0 at 0, -inf below 0."""
    out = _F.neg(_F.mul(input, _F.log(input)))
    out = _F.where(_F.eq(input, 0), 0.0, out)
    return _F.where(_F.lt(input, 0), float("-inf"), out)


def softmax(input, dim: int, *, dtype=None):
    from ember.nn import functional

    return functional.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim: int, *, dtype=None):
    from ember.nn import functional

    return functional.log_softmax(input, dim, dtype=dtype)


def gammainc(input, other):
    """P(a, x), the regularised lower incomplete gamma function, for a = input and x = other (its series, or its
    continued fraction above x = a + 1)."""
    from ember.decompositions.special import _regularized_gamma_p

    from ember.functional import broadcast_tensors

    return _regularized_gamma_p(*broadcast_tensors(input, other))


def gammaincc(input, other):
    """Q(a, x) = 1 - P(a, x), the regularised upper incomplete gamma function."""
    return _F.rsub(gammainc(input, other), 1.0)
