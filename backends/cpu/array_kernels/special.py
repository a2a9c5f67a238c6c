"""Special functions against the array-module API: scipy.special's ufuncs on numpy (cupyx.scipy.special's on
cupy), imported on first use; and the implicit gradient of a gamma draw. float16/bfloat16 compute in float32 and round once. The few points where
scipy's convention differs from torch's (lgamma(-inf), polygamma(n >= 1, -inf)) follow torch."""
from __future__ import annotations

import importlib

from .context import ArrayModule


def _special(am: ArrayModule):
    """scipy.special, or cupyx.scipy.special on cupy (imported on first use; sys.modules keeps it)."""
    return importlib.import_module("scipy.special" if am.is_numpy else "cupyx.scipy.special")


def _apply(am: ArrayModule, spec, a, fn):
    dt = am.native_of[spec[1]]
    x = a.astype(am.compute_of[dt], copy=False)
    return am.xp.asarray(fn(x)).astype(dt, copy=False)


def lgamma(am: ArrayModule, spec, a):
    xp = am.xp
    return _apply(am, spec, a, lambda x: xp.where(x == -xp.inf, xp.inf, _special(am).gammaln(x)))


def digamma(am: ArrayModule, spec, a):
    return _apply(am, spec, a, _special(am).psi)


def polygamma(am: ArrayModule, spec, n, a):
    xp = am.xp
    if n == 0:
        return digamma(am, spec, a)
    return _apply(am, spec, a, lambda x: xp.where(x == -xp.inf, xp.nan, _special(am).polygamma(n, x)))


def erfinv(am: ArrayModule, spec, a):
    return _apply(am, spec, a, _special(am).erfinv)


def standard_gamma_grad(am: ArrayModule, spec, alpha, x):
    """-(dP/da)(a, x) / p(x; a) in float64: dP/da by central differences on scipy's regularised incomplete gamma
    (step 1e-5 * max(a, 1)), the density from gammaln."""
    xp, special = am.xp, _special(am)
    a, x = alpha.astype(am.f64), x.astype(am.f64)
    step = 1e-5 * xp.maximum(a, 1.0)
    d_p = (special.gammainc(a + step, x) - special.gammainc(a - step, x)) / (2 * step)
    density = xp.exp((a - 1) * xp.log(x) - x - special.gammaln(a))
    return (-d_p / density).astype(am.native_of[spec[1]], copy=False)


KERNELS = {"lgamma": lgamma, "digamma": digamma, "polygamma": polygamma, "erfinv": erfinv,
           "_standard_gamma_grad": standard_gamma_grad}
