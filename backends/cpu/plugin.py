"""The cpu backend: numpy arrays, kernels from the shared array-module library.

Registered through the `ember.backends` entry point `cpu = "ember_cpu.plugin"` like any
external plugin, and importing only ember's public modules. It is the worked example a
vendor copies: a Backend subclass for data movement and allocation, plus kernels.
"""
from __future__ import annotations

import importlib
import warnings

import numpy as np

from ember.dispatcher import Backend, hookimpl
from ember.core.numpy_interop import numpy_dtype_lookup, to_numpy_dtype

from .array_kernels import make_kernels
from .array_kernels.shape import root_of
from .fast_path import fast_entry
from .workspace import WORKSPACE

#: numpy reports overflow / division by zero as RuntimeWarnings; PyTorch is silent. The modules whose
#: numpy calls are silenced (a filter costs nothing per call, where np.errstate costs ~1 us): the
#: plugin's own (kernels, fast path).
#: The filters are installed when the plugin loads; a `warnings.catch_warnings()` block around that
#: first load drops them with its other filters (pytest's capture per test does: tests/conftest.py
#: adds them to the run's filters).
QUIET_MODULES = (r"ember_cpu(\..*)?$",)
for _module in QUIET_MODULES:
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=_module)


class CPUBackend(Backend):
    device_type = "cpu"
    host_memory = True

    def device_description(self, index: int = 0) -> str:
        import platform

        return f"cpu ({platform.machine()}, numpy {np.__version__})"

    def to_host(self, array):
        return array

    def from_host(self, ndarray, device_index=None):
        return np.array(ndarray, order="C", copy=True)

    def empty(self, shape, dtype, device_index=None):
        return np.empty(shape, dtype=to_numpy_dtype(dtype))

    # numpy's ufunc is the whole kernel of a + b, a - b, a * b on two arrays alike (fast_path.py)
    fast_entry = staticmethod(fast_entry)

    # the scratch some kernels allocate inside a call, for ember.memory's predictions (workspace.py)
    workspace_ops = frozenset(WORKSPACE)

    def workspace(self, op_name: str, arrays: tuple) -> tuple[int, ...]:
        nbytes = WORKSPACE[op_name](*arrays)
        return (nbytes,) if nbytes > 0 else ()

    def settle_kernels(self) -> None:
        serve_numba_now()

    def storage_offset(self, array) -> int:
        if array.base is None:          # owns its memory (every fresh op result): no pointer arithmetic
            return 0
        root = root_of(array)
        return (array.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // array.itemsize

    def is_shared(self, a, b) -> bool:
        return np.shares_memory(a, b)

    def kernels(self):
        table = make_kernels(np, numpy_dtype_lookup())
        for name, (module, eager_calls) in NUMBA_KERNELS.items():
            table[name] = _numba_after(eager_calls, module, name, table[name])
        return table


#: op -> (module of its numba-compiled version, how many calls the eager kernel serves first). The exact GELU's
#: loops (gelu_numba.py) are 20x faster in float32 and round differently, and layer norm's (norm_numba.py) and
#: the fused attention's (attention_numba.py) sum in another order: numba from the first call (a saved output
#: recomputed in the backward must get the forward's bits). The optimizer updates' loops (optimizers_numba.py),
#: max pooling's (pool_numba.py), the convolution input gradient's col2im (conv_numba.py), relu's
#: (activations_numba.py), embedding's backward (indexing_numba.py) and cross entropy with class indices on
#: logits of one scratch block (cross_entropy_numba.py: numpy's exp, log and BLAS row sums between two loops)
#: give the eager kernel's results: a program's first calls keep numpy, so a script that runs a step or two
#: never pays numba's import (a few tenths of a second), and a training loop switches after them.
NUMBA_KERNELS = {"gelu": ("gelu_numba", 0), "gelu_backward": ("gelu_numba", 0),
                 "_fused_adam_": ("optimizers_numba", 16), "_fused_adadelta_": ("optimizers_numba", 16),
                 "_fused_sgd_": ("optimizers_numba", 16),
                 "max_pool2d_with_indices": ("pool_numba", 16), "convolution_backward": ("conv_numba", 16),
                 "relu": ("activations_numba", 16), "threshold_backward": ("activations_numba", 16),
                 "embedding_dense_backward": ("indexing_numba", 16),
                 "_cross_entropy_indices": ("cross_entropy_numba", 16),
                 "_cross_entropy_indices_backward": ("cross_entropy_numba", 16),
                 "native_layer_norm": ("norm_numba", 0), "native_layer_norm_backward": ("norm_numba", 0),
                 "_scaled_dot_product_attention_fused": ("attention_numba", 0),
                 "_scaled_dot_product_attention_fused_backward": ("attention_numba", 0)}


#: the switch state of every kernel _numba_after made ({"calls", "fast", "eager_calls"}): serve_numba_now
_SWITCHES: list[dict] = []


def serve_numba_now() -> None:
    """Have every kernel of NUMBA_KERNELS switch to its numba loops at its next call, and random draws to the
    Philox loop at the next draw of its size, as a process does after its first calls (the same results;
    less scratch, which `workspace.py` declares for the loops).
    ember.memory's tests measure that steady state from a step's first call."""
    for state in _SWITCHES:
        state["calls"] = max(state["calls"], state["eager_calls"])
    from .array_kernels import philox

    blocks = philox.BLOCK_FUNCTIONS.get("numpy")
    if blocks is not None:                  # and the Philox loop, which a training loop's 65th draw loads
        blocks.draws = max(blocks.draws, blocks.eager_draws)


def _numba_after(eager_calls: int, module: str, name: str, eager):
    """`name`'s kernel: after `eager_calls` calls of the eager kernel, the numba version (its module imported
    then, numba with it) for the calls it serves (NotImplemented: the eager kernel's); the eager kernel
    always where numba is not installed."""
    state = {"calls": 0, "fast": None, "eager_calls": eager_calls}
    _SWITCHES.append(state)

    def kernel(spec, *args, **kwargs):
        fast = state["fast"]
        if fast is None:
            state["calls"] += 1
            if state["calls"] <= eager_calls:
                return eager(spec, *args, **kwargs)
            from . import fused_numba

            fast = state["fast"] = importlib.import_module(f"{__package__}.{module}").KERNELS[name] \
                if fused_numba.available() else False
        if fast is not False:
            result = fast(spec, *args, **kwargs)
            if result is not NotImplemented:
                return result
        return eager(spec, *args, **kwargs)

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


@hookimpl
def ember_backend():
    from .host_memory import keep_freed_memory

    keep_freed_memory()                 # freed blocks are reused, not faulted in afresh each step
    _register_philox_loop()
    return CPUBackend()


def _register_philox_loop() -> None:
    """A random draw of 2M Philox blocks (8M numbers) or more loads the numba loop (philox_numba.py, the
    same bits, 7x faster than numpy's array arithmetic on large draws, 10x on a dropout mask's), as does the
    65th draw (a training loop) or any draw once numba is imported anyway; then it serves every draw."""
    import sys

    from . import fused_numba
    from .array_kernels import philox

    if fused_numba.available():
        def load():
            from .philox_numba import philox_blocks
            return philox_blocks

        philox.BLOCK_FUNCTIONS["numpy"] = philox.BlockFunction(load, worth_loading=2_000_000,
                                                               cheap=lambda: "numba" in sys.modules)


@hookimpl
def ember_fused_kernel_compiler(device_type):
    """numba-compiled fused pointwise kernels for cpu (fused_numba.py), where numba is installed."""
    if device_type != "cpu":
        return None
    from . import fused_numba

    return fused_numba.NumbaFusedCompiler() if fused_numba.available() else None
