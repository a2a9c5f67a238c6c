"""The special functions in ember ops (lgamma, digamma, polygamma, erfinv): their explicit kernels, for the
backends with no native kernel (the cpu's are scipy.special's, array_kernels/special.py), and xlogy.

lgamma: the Lanczos approximation (g = 7, nine coefficients) for x >= 0.5, the reflection formula below.
digamma: the reflection formula below 0.5, the recurrence up to x >= 6, then the asymptotic series.
polygamma(n): the recurrence up to x >= 10 + n, then the asymptotic series with Bernoulli numbers.
erfinv: Giles' single-precision approximation, then two Newton steps on erf, which make it
float64-accurate. Each is computed in the input's floating dtype (float32 for float16/bfloat16).
The draws that need them live here too, in ember ops so that every backend has them: Gamma (Marsaglia and
Tsang), Poisson (multiplication, then PTRS) and binomial (geometric waiting times, then BTRS).
"""
from __future__ import annotations

import math

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.type_promotion import result_type

from . import as_float, decomposition, explicit_kernel, wrapped_number

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
# the Bernoulli numbers B_2, B_4, ..., B_16 of the asymptotic series
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def _compute(x):
    """`x` in the dtype the functions are computed in (float32 for the half types), and the result dtype."""
    x = as_float(x)
    if x.dtype in (_dt.float16, _dt.bfloat16):
        return F._to_copy(x, dtype=_dt.float32), x.dtype
    return x, x.dtype


def _back(y, dtype):
    return y if y.dtype is dtype else F._to_copy(y, dtype=dtype)


def _lanczos_lgamma(x):
    """log Gamma(x) for x >= 0.5."""
    z = F.sub(x, 1.0)
    a = F.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], 1):
        a = F.add(a, F.div(c, F.add(z, float(i))))
    t = F.add(z, _LANCZOS_G + 0.5)
    return F.add(F.sub(F.mul(F.add(z, 0.5), F.log(t)), t), F.add(F.log(a), 0.5 * math.log(2 * math.pi)))


@explicit_kernel("lgamma")
def lgamma(self):
    x, dtype = _compute(self)
    low = F.lt(x, 0.5)
    right = _lanczos_lgamma(F.where(low, F.rsub(x, 1.0), x))            # at 1 - x where x < 0.5
    # Gamma(x) Gamma(1 - x) = pi / sin(pi x)
    reflected = F.sub(F.log(F.div(math.pi, F.abs(F.sin(F.mul(x, math.pi))))), right)
    out = F.where(low, reflected, right)
    out = F.where(F.eq(F.abs(x), math.inf), math.inf, out)               # lgamma(+-inf) = inf, as torch's
    return _back(out, dtype)


def _digamma_positive(x):
    """digamma(x) for x > 0: the recurrence up to x >= 6, then the asymptotic series."""
    shift = F.zeros_like(x)
    for _ in range(6):
        small = F.lt(x, 6.0)
        shift = F.where(small, F.add(shift, F.reciprocal(x)), shift)
        x = F.where(small, F.add(x, 1.0), x)
    inv2 = F.reciprocal(F.mul(x, x))
    series, power = F.zeros_like(x), inv2
    for k, b in enumerate(_BERNOULLI, 1):
        series = F.add(series, F.mul(power, b / (2 * k)))
        power = F.mul(power, inv2)
    return F.sub(F.sub(F.sub(F.log(x), F.div(0.5, x)), series), shift)


@explicit_kernel("digamma")
def digamma(self):
    x, dtype = _compute(self)
    low = F.lt(x, 0.5)
    right = _digamma_positive(F.where(low, F.rsub(x, 1.0), x))
    # digamma(1 - x) - digamma(x) = pi cot(pi x)
    reflected = F.sub(right, F.div(math.pi, F.tan(F.mul(x, math.pi))))
    out = F.where(low, reflected, right)
    out = F.where(F.eq(x, 0.0), -math.inf, out)
    out = F.where(F.logical_and(F.lt(x, 0.0), F.eq(x, F.floor(x))), math.nan, out)     # the poles below 0
    out = F.where(F.eq(x, math.inf), math.inf, F.where(F.eq(x, -math.inf), math.nan, out))
    return _back(out, dtype)


@explicit_kernel("polygamma")
def polygamma(n, self):
    if n == 0:
        return digamma(self)
    x, dtype = _compute(self)
    sign = 1.0 if n % 2 else -1.0                     # (-1)^(n+1)
    shift = F.zeros_like(x)
    threshold = 10.0 + n
    for _ in range(int(threshold) + 30):          # (from below 0 too)
        small = F.lt(x, threshold)
        shift = F.where(small, F.add(shift, F.pow(x, -(n + 1.0))), shift)
        x = F.where(small, F.add(x, 1.0), x)
    # (n-1)!/x^n + n!/(2 x^(n+1)) + sum_k B_2k (2k+n-1)! / ((2k)! x^(2k+n))
    series = F.add(F.mul(F.pow(x, -float(n)), math.factorial(n - 1)), F.mul(F.pow(x, -(n + 1.0)), math.factorial(n) / 2))
    for k, b in enumerate(_BERNOULLI, 1):
        coefficient = b * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
        series = F.add(series, F.mul(F.pow(x, -(2.0 * k + n)), coefficient))
    out = F.mul(F.add(series, F.mul(shift, math.factorial(n))), sign)
    return _back(out, dtype)


@explicit_kernel("erfinv")
def erfinv(self):
    y, dtype = _compute(self)
    w = F.neg(F.log1p(F.neg(F.mul(y, y))))
    small = F.lt(w, 5.0)
    ws, wl = F.sub(w, 2.5), F.sub(F.sqrt(w), 3.0)
    ps, pl = F.full_like(y, 2.81022636e-08), F.full_like(y, -0.000200214257)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        ps = F.add(F.mul(ps, ws), c)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        pl = F.add(F.mul(pl, wl), c)
    x = F.mul(F.where(small, ps, pl), y)
    for _ in range(2):
        x = F.sub(x, F.div(F.sub(F.erf(x), y), F.mul(F.exp(F.neg(F.mul(x, x))), 2.0 / math.sqrt(math.pi))))
    x = F.where(F.eq(F.abs(y), 1.0), F.mul(y, math.inf), x)
    x = F.where(F.gt(F.abs(y), 1.0), math.nan, x)
    return _back(x, dtype)


@decomposition("xlogy.Tensor")
def xlogy(self, other):
    """self * log(other); 0 where self is 0 and other is not nan (torch's rule). Either may be a Python number."""
    if not hasattr(other, "dtype"):
        other = F.full_like(as_float(self), float(other))
    elif not hasattr(self, "dtype"):                   # eq takes no number for self
        self = wrapped_number(self, other)
    dtype = result_type(self, other)                   # both in the result's dtype first, as torch computes
    dtype = dtype if dtype.is_floating_point else _dt.get_default_dtype()
    if hasattr(self, "dtype") and self.dtype is not dtype:
        self = F._to_copy(self, dtype=dtype)
    if other.dtype is not dtype:
        other = F._to_copy(other, dtype=dtype)
    zero = F.logical_and(F.eq(self, 0), F.logical_not(F.isnan(other)))
    return F.where(zero, 0.0, F.mul(self, F.log(other)))


# -- gamma draws and their implicit gradient -------------------------------------------------------------
def _regularized_gamma_p(a, x, terms: int = 300):
    """P(a, x) = gamma(a, x) / Gamma(a), the regularised lower incomplete gamma function: its series below
    x = a + 1 and 1 - its continued fraction (modified Lentz) above (Numerical Recipes' gser and gcf)."""
    tiny = 1e-300 if x.dtype is _dt.float64 else 1e-30
    log_front = F.sub(F.sub(F.mul(a, F.log(x)), x), F.lgamma(a))
    total, term = F.reciprocal(a), F.reciprocal(a)
    for n in range(1, terms):
        term = F.mul(term, F.div(x, F.add(a, float(n))))
        total = F.add(total, term)
    series = F.mul(total, F.exp(log_front))
    b = F.sub(F.add(x, 1.0), a)
    c, d = F.full_like(x, 1.0 / tiny), F.reciprocal(b)
    h = d
    for i in range(1, terms):
        an = F.mul(-float(i), F.sub(float(i), a))
        b = F.add(b, 2.0)
        d = F.add(F.mul(an, d), b)
        d = F.reciprocal(F.where(F.lt(F.abs(d), tiny), tiny, d))
        c = F.add(b, F.div(an, c))
        c = F.where(F.lt(F.abs(c), tiny), tiny, c)
        h = F.mul(h, F.mul(d, c))
    fraction = F.rsub(F.mul(F.exp(log_front), h), 1.0)
    return F.where(F.lt(x, F.add(a, 1.0)), series, fraction)


@explicit_kernel("_standard_gamma_grad")
def standard_gamma_grad(self, output):
    """-(dP/da) / p(x; a): dP/da by central differences (step 1e-5 * max(a, 1)) in the compute dtype."""
    a, dtype = _compute(self)
    x = F._to_copy(output, dtype=a.dtype)
    step = F.mul(F.clamp(a, min=1.0), 1e-5)
    d_p = F.div(F.sub(_regularized_gamma_p(F.add(a, step), x), _regularized_gamma_p(F.sub(a, step), x)),
                F.mul(step, 2.0))
    density = F.exp(F.sub(F.sub(F.mul(F.sub(a, 1.0), F.log(x)), x), F.lgamma(a)))
    return _back(F.neg(F.div(d_p, density)), dtype)


@explicit_kernel("_standard_gamma")
def standard_gamma(self, generator=None):
    """Marsaglia and Tsang's method: for a >= 1, d (1 + c z)^3 with d = a - 1/3, c = 1 / sqrt(9 d), z normal,
    accepted when log u < z^2 / 2 + d - d v + d log v; for a < 1, a draw at a + 1 times u^(1/a). Each round
    accepts over 95% of the pending draws; the rounds repeat until none is pending."""
    a, dtype = _compute(self)
    boosted = F.lt(a, 1.0)
    shape = F.where(boosted, F.add(a, 1.0), a)
    d = F.sub(shape, 1.0 / 3.0)
    c = F.rsqrt(F.mul(d, 9.0))
    out = F.zeros_like(a)
    pending = F.ones_like(a, dtype=_dt.bool)
    while bool(F.any(pending)):
        z = F.normal_(F.empty_like(a), 0.0, 1.0, generator=generator)
        u = F.uniform_(F.empty_like(a), 0.0, 1.0, generator=generator)
        v = F.pow(F.add(F.mul(c, z), 1.0), 3)
        safe_v = F.where(F.gt(v, 0.0), v, 1.0)
        accept = F.logical_and(F.gt(v, 0.0), F.lt(F.log(u), F.add(F.mul(F.mul(z, z), 0.5),
                                                                  F.mul(d, F.add(F.rsub(safe_v, 1.0), F.log(safe_v))))))
        take = F.logical_and(pending, accept)
        out = F.where(take, F.mul(d, v), out)
        pending = F.logical_and(pending, F.logical_not(accept))
    u = F.uniform_(F.empty_like(a), 0.0, 1.0, generator=generator)
    out = F.where(boosted, F.mul(out, F.pow(u, F.reciprocal(a))), out)
    tiny = 1.1754943508222875e-38 if a.dtype is _dt.float32 else 2.2250738585072014e-308
    return _back(F.clamp(out, min=tiny), dtype)              # (torch's smallest draw is the smallest normal)


@explicit_kernel("poisson")
def poisson(self, generator=None):
    """Below rate 10, the count of uniforms multiplied before their product falls under exp(-rate); at or above
    it, Hoermann's transformed rejection with squeeze (PTRS, numpy's algorithm), repeated for the rejected."""
    from ember.core.errors import ArgumentValueError

    rate, dtype = _compute(self)
    if bool(F.any(F.lt(rate, 0))) or bool(F.any(F.isnan(rate))):
        raise ArgumentValueError("poisson(): invalid Poisson rate, expected rate to be non-negative")
    uniform = lambda: F.uniform_(F.empty_like(rate), 0.0, 1.0, generator=generator)     # noqa: E731
    small = F.lt(rate, 10.0)
    # multiplication: count while the running product stays above exp(-rate)
    limit = F.exp(F.neg(F.where(small, rate, 0.0)))
    product, count = F.ones_like(rate), F.zeros_like(rate)
    running = small
    while bool(F.any(running)):
        product = F.where(running, F.mul(product, uniform()), product)
        running = F.logical_and(running, F.gt(product, limit))
        count = F.where(running, F.add(count, 1.0), count)
    # PTRS for the others
    lam = F.where(small, 10.0, rate)
    slam, loglam = F.sqrt(lam), F.log(lam)
    b = F.add(F.mul(slam, 2.53), 0.931)
    a = F.add(F.mul(b, 0.02483), -0.059)
    log_invalpha = F.log(F.add(F.div(1.1328, F.sub(b, 3.4)), 1.1239))
    vr = F.sub(0.9277, F.div(3.6224, F.sub(b, 2.0)))
    large = F.zeros_like(rate)
    pending = F.logical_not(small)
    while bool(F.any(pending)):
        u, v = F.sub(uniform(), 0.5), uniform()
        us = F.sub(0.5, F.abs(u))
        k = F.floor(F.add(F.mul(F.add(F.div(F.mul(a, 2.0), us), b), u), F.add(lam, 0.43)))
        quick = F.logical_and(F.ge(us, 0.07), F.le(v, vr))
        rejected = F.logical_or(F.lt(k, 0), F.logical_and(F.lt(us, 0.013), F.gt(v, us)))
        log_lhs = F.sub(F.add(F.log(v), log_invalpha), F.log(F.add(F.div(a, F.mul(us, us)), b)))
        log_rhs = F.sub(F.sub(F.mul(k, loglam), lam), F.lgamma(F.add(F.clamp(k, min=0.0), 1.0)))
        accept = F.logical_or(quick, F.logical_and(F.logical_not(rejected), F.le(log_lhs, log_rhs)))
        take = F.logical_and(pending, accept)
        large = F.where(take, k, large)
        pending = F.logical_and(pending, F.logical_not(accept))
    return _back(F.where(small, count, large), dtype)


def _stirling_tail(k):
    """log k! less Stirling's (k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2, for k >= 0: through lgamma below 10,
    by its series in 1 / (k + 1) from there (where lgamma's rounding would swamp the small remainder)."""
    k1 = F.add(k, 1.0)
    stirling = F.add(F.sub(F.mul(F.add(k, 0.5), F.log(k1)), k1), 0.5 * math.log(2 * math.pi))
    exact = F.sub(F.lgamma(k1), stirling)
    inv = F.reciprocal(k1)
    inv2 = F.mul(inv, inv)
    series = F.mul(inv, F.sub(1 / 12, F.mul(inv2, F.sub(1 / 360, F.mul(inv2, 1 / 1260)))))
    return F.where(F.lt(k, 10.0), exact, series)


def _binomial_waiting_times(n, p, running, uniform):
    """Successes among n trials of probability p where `running`: the count of geometric waiting times
    (trials up to and including a success, ceil(log u / log(1 - p))) that fit in n. About n p + 1 rounds."""
    log_q = F.log1p(F.neg(p))
    used, successes = F.zeros_like(n), F.zeros_like(n)
    while bool(F.any(running)):
        wait = F.ceil(F.div(F.log(uniform()), log_q))
        used = F.where(running, F.add(used, wait), used)
        running = F.logical_and(running, F.le(used, n))
        successes = F.where(running, F.add(successes, 1.0), successes)
    return successes


def _binomial_btrs(n, p, pending, uniform):
    """Hoermann's transformed rejection with squeeze (BTRS) where `pending`, for p <= 1/2 and n p >= 10: a
    candidate k from the transformed uniform, taken at once inside the squeeze, else accepted when the
    scaled uniform lies under log(f(k) / f(m)) (m the mode), written with Stirling tails and log1p of ratios
    near 1 so that float32 keeps its accuracy at large n. Repeated for the rejected (about 1 in 5)."""
    q = F.rsub(p, 1.0)
    spq = F.sqrt(F.mul(F.mul(n, p), q))
    b = F.add(F.mul(spq, 2.53), 1.15)
    a = F.add(F.add(F.mul(b, 0.0248), F.mul(p, 0.01)), -0.0873)
    c = F.add(F.mul(n, p), 0.5)
    v_r = F.rsub(F.div(4.2, b), 0.92)
    log_alpha = F.log(F.mul(F.add(F.div(5.1, b), 2.83), spq))
    m = F.floor(F.mul(F.add(n, 1.0), p))
    p_n2 = F.mul(p, F.add(n, 2.0))                                  # p (n + 2), shared by both ratios below
    # the k-free part of the bound: (m + 1/2) log((m + 1) q / (p (n - m + 1))) and the Stirling tails of m, n - m
    at_mode = F.add(F.mul(F.add(m, 0.5), F.log1p(F.div(F.sub(F.add(m, 1.0), p_n2), F.mul(p, F.add(F.sub(n, m), 1.0))))),
                    F.add(_stirling_tail(m), _stirling_tail(F.sub(n, m))))
    out = F.zeros_like(n)
    while bool(F.any(pending)):
        u, v = F.sub(uniform(), 0.5), uniform()
        us = F.rsub(F.abs(u), 0.5)
        k = F.floor(F.add(F.mul(F.add(F.div(F.mul(a, 2.0), us), b), u), c))
        in_range = F.logical_and(F.ge(k, 0.0), F.le(k, n))
        quick = F.logical_and(F.ge(us, 0.07), F.le(v, v_r))
        kc = F.where(in_range, k, m)                                # keeps the bound finite off the range
        n_k1 = F.add(F.sub(n, kc), 1.0)
        bound = F.add(at_mode, F.add(
            F.mul(F.add(n, 1.0), F.log1p(F.div(F.sub(kc, m), n_k1))),
            F.mul(F.add(kc, 0.5), F.log1p(F.div(F.sub(F.sub(p_n2, kc), 1.0), F.mul(q, F.add(kc, 1.0)))))))
        bound = F.sub(bound, F.add(_stirling_tail(kc), _stirling_tail(F.sub(n, kc))))
        lhs = F.sub(F.add(F.log(v), log_alpha), F.log(F.add(F.div(a, F.mul(us, us)), b)))
        accept = F.logical_and(in_range, F.logical_or(quick, F.le(lhs, bound)))
        out = F.where(F.logical_and(pending, accept), k, out)
        pending = F.logical_and(pending, F.logical_not(accept))
    return out


@explicit_kernel("binomial")
def binomial(count, prob, generator=None):
    """A Binomial(count, prob) draw per element, drawn for p = min(prob, 1 - prob) (the failures counted
    where prob > 1/2): geometric waiting times while count p < 10, BTRS from there. As torch's: 0 where
    count <= 0 or prob <= 0, else count where prob >= 1, else nan where prob is nan or count not finite."""
    n = F.add(count, F.zeros_like(prob))                        # both broadcast to one shape
    p = F.add(prob, F.zeros_like(count))
    uniform = lambda: F.uniform_(F.empty_like(n), 0.0, 1.0, generator=generator)     # noqa: E731
    finite = F.isfinite(n)
    drawn = F.logical_and(F.logical_and(finite, F.gt(n, 0.0)), F.logical_and(F.gt(p, 0.0), F.lt(p, 1.0)))
    flip = F.gt(p, 0.5)
    low = F.where(drawn, F.where(flip, F.rsub(p, 1.0), p), 0.5)     # min(p, 1 - p); a harmless 1/2 elsewhere
    n_drawn = F.where(drawn, n, 0.0)
    small = F.logical_and(drawn, F.lt(F.mul(n_drawn, low), 10.0))
    large = F.logical_and(drawn, F.logical_not(small))
    k = F.where(small, _binomial_waiting_times(n_drawn, low, small, uniform), 0.0)
    k = F.where(large, _binomial_btrs(F.where(large, n, 20.0), low, large, uniform), k)
    k = F.where(flip, F.sub(n_drawn, k), k)
    k = F.where(F.logical_or(F.isnan(p), F.logical_not(finite)), math.nan, k)
    k = F.where(F.ge(p, 1.0), n, k)                                # prob >= 1: every trial succeeds
    return F.where(F.logical_or(F.le(n, 0.0), F.le(p, 0.0)), 0.0, k)   # no trials, or none can succeed
