"""What the whole suite shares: the run's warning filters (ember.testing.plugin.add_warning_filters),
the `mpi_job` fixture of the multi-process tests (distributed_support.py), and a lean selection of
the opencl and cuda conformance runs.

Lean runs: the opencl and cuda conformance runs select the checks that matter most, and primdev (the
primitives-only device of tests/test_conformance.py) leaves the finite-difference gradchecks to cpu.

On two cores the full suite on one more device costs several minutes; the selection keeps
the checks of the primitive ops (what the device kernels implement) and of the ops a training
step leans on, except finite-difference gradchecks, and the suite's device-wide tests.
On opencl the lean run leaves out the float64 and int32 cases of the per-dtype checks: their
kernels are the float32 and int64 ones with another type name (ember_opencl/codegen.py), and on a
new machine every dtype's kernels cost an OpenCL build (about a third of the run).
EMBER_OPENCL_FULL=1 / EMBER_CUDA_FULL=1 run everything. The cuda run (GPU machines only,
`make gpu-check`) also keeps the ops with fused cuda kernels and drops bfloat16 cases (cupy
has no bfloat16). The suite's thread stress (ember/testing/test_threads.py) trains 20 steps per
thread here rather than 200: a race shows within a few steps, and 8 threads of 200 steps take
minutes on PoCL. Its fuzzer runs 40 cases per seed on opencl, where each new kernel is a build, and
its default 300 elsewhere.
"""
from __future__ import annotations

import os
import tempfile

# ember.compile's generated kernels go to a cache shared by the run's workers (and by later runs, as a
# user's cache is), never into the home directory
os.environ.setdefault("EMBER_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"ember-test-cache-{os.getuid()}"))
os.environ.setdefault("EMBER_STRESS_STEPS", "20")
os.environ.setdefault("EMBER_FUZZ_CASES_OPENCL", "40")     # each new opencl kernel the fuzzer meets is a build

from ember.testing.plugin import add_warning_filters  # noqa: E402

from distributed_support import mpi_job  # noqa: E402,F401 (the multi-process tests' fixture)


def pytest_configure(config):
    add_warning_filters(config)


LEAN_EXTRA = {"mm", "matmul", "linear", "softmax.int", "log_softmax.int", "relu", "sum.dim_IntList", "mean.dim",
              "sub.Tensor", "clone", "view", "expand", "t", "cat", "nll_loss", "cross_entropy_loss", "addmm",
              "_to_copy", "max.dim", "gt.Tensor", "ne.Tensor", "sigmoid", "maximum"}


# finite-difference and higher-order checks verify the autograd formulas and decompositions, which
# are the same code on every device and run on cpu and primdev; on opencl, test_grad still compares
# every gradient value with torch's
LEAN_SKIP_TESTS = {"test_gradcheck", "test_nn_second_order", "test_nn_gradgradcheck", "test_gradgradcheck",
                   "test_second_order", "test_functional_wrappers"}


# the ops with fused cuda kernels (ember_cuda.kernels.fused) and the Philox random kernels
CUDA_EXTRA = {"native_layer_norm", "layer_norm", "cross_entropy_loss", "uniform_", "normal_", "random_.from",
              "randperm", "dropout", "log_softmax.int"}

#: dtypes whose per-dtype checks the lean opencl run leaves out (their kernels are twins of kept ones')
OPENCL_LEAN_SKIP_DTYPES = {"float64", "int32"}

#: test_conformance.py's checks that run on cpu but not on primdev: a finite-difference gradcheck tests
#: the autograd formulas, the same code on every device, and primdev's kernels (the decompositions) are
#: held to tighter bounds by test_grad, which compares every float64 gradient there with torch's to 1e-7
#: (a gradcheck allows 1e-3). Decomposed, primdev's gradchecks were a tenth of the suite's time.
PRIMDEV_SKIP_TESTS = {"test_gradcheck"}

LEAN_FILES = {"test_conformance_opencl": ("EMBER_OPENCL_FULL", set()),
              "test_conformance_cuda": ("EMBER_CUDA_FULL", CUDA_EXTRA)}


def _lean_file(item):
    for name, (env, extra) in LEAN_FILES.items():
        if name in item.nodeid:
            return name, os.environ.get(env) == "1", extra
    return None, True, set()


def pytest_collection_modifyitems(config, items):
    from ember.dispatcher import primitive_ops

    keep = set(primitive_ops()) | LEAN_EXTRA
    selected, dropped = [], []
    for item in items:
        if "test_conformance.py" in item.nodeid and item.name.split("[", 1)[0] in PRIMDEV_SKIP_TESTS \
                and "[primdev-" in item.name:
            dropped.append(item)
            continue
        name, full, extra = _lean_file(item)
        if name == "test_conformance_cuda" and "bfloat16" in item.name:
            dropped.append(item)
            continue
        if name == "test_conformance_opencl" and not full and "[" in item.name \
                and item.name.rstrip("]").rsplit("-", 1)[-1] in OPENCL_LEAN_SKIP_DTYPES:
            dropped.append(item)
            continue
        if name is None or full or "[" not in item.name:
            selected.append(item)
            continue
        if item.name.split("[", 1)[0] in LEAN_SKIP_TESTS:
            dropped.append(item)
            continue
        op = item.name.split("[", 1)[1].rstrip("]").split("-")[0]
        ops_param = getattr(item, "callspec", None)
        if op in keep or op in extra or (ops_param is not None and not any(p == "op" for p in ops_param.params)):
            selected.append(item)
        else:
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = selected
