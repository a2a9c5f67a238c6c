"""Every tolerance of the conformance suite, in one place.

Values are compared with `torch.testing.assert_close(actual, expected, rtol, atol)`: an
element passes when ``|actual - expected| <= atol + rtol * |expected|`` (NaN equals NaN).
Pairs below are ``(rtol, atol)``, chosen by the dtype of the *result*. Integer and bool
results must be exact. The tolerances are the same for every device: the oracle is torch on
the CPU, and a device's float32 result must agree with it as closely as ember's own cpu
backend does (a few ulps for elementwise math; wider for sums, products and softmax, whose
rounding depends on the order of accumulation).

An `OpInfo` in `ember.testing.op_db` may widen them for its results (`tol=`, `grad_tol=`)
with one of the named tables below, never with numbers of its own, so this module stays
the one list to read.
"""
from __future__ import annotations

# ------------------------------------------------------------------ forward values
# The default for every op's results.
VALUE_TOL: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "float16": (2e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
}
EXACT = (0.0, 0.0)          # integer and bool results

# Overrides, per op family (results that accumulate many terms).
REDUCTION_TOL = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 2e-2)}          # sum, mean
SOFTMAX_TOL = {"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}              # softmax, log_softmax
LINALG_TOL = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 2e-2)}  # mm, bmm, ...

# ------------------------------------------------------------------ gradients
# Leaf gradients vs torch's. When any floating input of a sample is float16 or bfloat16,
# the backward ran in low precision and the tolerance of the lowest input dtype applies to
# every gradient of that sample.
GRAD_TOL: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-2),
    "bfloat16": (5e-2, 5e-2),
}
POW_GRAD_TOL = {"float32": (1e-3, 1e-4)}      # pow: x ** y * log(x) amplifies rounding
# grad of grad (create_graph=True): one more pass of rounding in float32
SECOND_ORDER_TOL = {**GRAD_TOL, "float32": (1e-4, 1e-4)}

# Finite differences (ember.autograd.gradcheck / gradgradcheck), float64 inputs only:
# central differences with step GRADCHECK_EPS; Jacobians agree when numpy.allclose(
# analytical, numerical, rtol=GRADCHECK_RTOL, atol=GRADCHECK_ATOL). Samples with more than
# GRADCHECK_MAX_NUMEL input elements are left out (each element costs two forward calls).
GRADCHECK_EPS = 1e-6
GRADCHECK_ATOL = 1e-5
GRADCHECK_RTOL = 1e-3
GRADCHECK_MAX_NUMEL = 40

# ------------------------------------------------------------------ random numbers
# Statistics of RANDOM_N draws. The standard error of the mean is 0.2% of the width for a
# uniform and 0.7% of sigma for a normal, so the moment bounds sit 4 to 5 standard errors
# out (the seed is fixed, so the test is deterministic anyway) and still catch a wrong
# range, a wrong scale, a shifted mean or a lumpy histogram.
RANDOM_N = 20000
UNIFORM_MOMENT_TOL = 0.01     # |mean - (lo+hi)/2| and |std - width/sqrt(12)|, times the width
NORMAL_MOMENT_TOL = 0.03      # |mean - mu| and |std - sigma|, times sigma
LOWP_FACTOR = 3               # float16 / bfloat16 draws: moment tolerances times this
HISTOGRAM_MIN_FRACTION = 0.85  # each of 10 equal bins holds at least this share of N/10
BELL_TOL = 0.02               # |P(|x - mu| < sigma) - 0.6827|
INT_MEAN_TOL = 0.1            # randint / random_: |mean - (lo + hi - 1) / 2|

# One seed, two devices: uniform and integer draws must be bit-identical (Philox, spec in
# backends/cpu/array_kernels/philox.py). Normals (Box-Muller) share the uniforms bit for bit,
# but log/cos/sin come from each platform's math library (numpy's SIMD loops on cpu, the
# OpenCL/CUDA library elsewhere), which differ by an ulp or two; so a normal `x` drawn with
# (mean, std) passes when |x - x_cpu| <= NORMAL_MATCH_ULPS * eps * (|x_cpu - mean| + |x_cpu|),
# eps that of the compute dtype (float32 for float16/bfloat16), plus one ulp of the result
# for float16/bfloat16 (a float32 difference can flip the final rounding). Measured on PoCL:
# at most 2 of these ulps over 200k draws per dtype.
NORMAL_MATCH_ULPS = 4


def value_tol(dtype: str, overrides: dict | None = None, *, table: dict | None = None) -> tuple[float, float]:
    """(rtol, atol) for a result of `dtype` (a name such as 'float32')."""
    if overrides and dtype in overrides:
        return overrides[dtype]
    return (table or VALUE_TOL).get(dtype, EXACT)
