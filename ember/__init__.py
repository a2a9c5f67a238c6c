"""Ember: a PyTorch-compatible deep learning framework with pluggable backends.

`import ember as torch` covers the common surface: tensors, ops, autograd, autocast.
The call path of every op is

    ember.add (generated binding) -> dispatcher (Mode > Autocast > Autograd > backend key)
        -> backend kernel (cpu: numpy, meta: shapes only, plugins: opencl, cuda, ...)

and is spelled out in ember/dispatcher/dispatch.py.
"""
from __future__ import annotations


# 1. the operator table generated from ops_registry.yaml
from ember._generated import op_table as _op_table  # noqa: F401
# 2. the frontend (Tensor first: everything else refers to it)
from ember.frontend.tensor import Tensor, Size, Storage
from ember.frontend.legacy_types import TYPES as _LEGACY_TYPES
from ember.frontend.type_info import finfo, iinfo
from ember.frontend.wiring import wire as _wire
_wire()

from ember.core.dtype import (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,  # noqa: A004
                                  dtype, get_default_dtype, set_default_dtype)
from ember.core.dtype import ALIASES as _ALIASES
from ember.core.device import device, get_default_device, set_default_device
from ember.frontend.factories import tensor, as_tensor, from_numpy, from_dlpack, is_tensor, numel
from ember.frontend.random import Generator, manual_seed, seed, initial_seed, get_rng_state, set_rng_state
from ember.frontend.random import default_generator as _default_generator
from ember.frontend.autograd.grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,
                                               is_grad_enabled, is_inference_mode_enabled)
from ember.frontend.autocast import autocast, is_autocast_enabled, get_autocast_dtype
from ember.frontend.mode import DispatchMode
from ember.frontend.printing import set_printoptions, get_printoptions
from ember.core.type_promotion import promote_types, result_type, can_cast
from ember._generated.functions import *  # noqa: F401,F403  (every public op)
from ember.functional import (allclose, atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes,  # noqa: E402
                              broadcast_tensors, broadcast_to, cartesian_prod, chain_matmul, column_stack, dsplit, dstack, einsum, equal, flatten,
                              hsplit, hstack, tensor_split, tensordot, unravel_index, vsplit,
                              is_complex, is_floating_point, is_nonzero, is_same_size, meshgrid, nonzero, norm,
                              positive, split, unique, unique_consecutive, vstack)  # (torch/functional.py's signatures)
from ember.frontend import resize as _resize  # noqa: E402,F401  (Tensor.resize_)
from ember import autograd, backends, dispatcher, errors  # noqa: E402
from ember.errors import OutOfMemoryError  # noqa: E402  (torch.OutOfMemoryError)
from ember import sparse  # noqa: E402  (sparse COO tensors; wiring has loaded it already)
from ember.sparse import sparse_coo_tensor  # noqa: E402
from ember.core.layout import layout, strided, sparse_coo  # noqa: E402
spmm = sparse.mm

long, int, short, float, double, half = (_ALIASES[n] for n in ("long", "int", "short", "float", "double", "half"))  # noqa: A001
from ember.backends.cuda import get_float32_matmul_precision, set_float32_matmul_precision  # noqa: E402
from ember.threads import get_num_threads, set_num_threads  # noqa: E402

from ember.dispatcher.plugins import REGISTRY as _REGISTRY
_REGISTRY.discover()

__version__ = "0.1.0"

# Imported on first use, so `import ember` stays fast: ember.nn, ember.optim, ember.utils, ember.serialization,
# ember.amp, the device helper modules ember.cuda / ember.opencl / ember.cpu / ember.accelerator
# (none loads a plugin before one of its functions is called), and ember.save / ember.load
# (torch.save/torch.load's counterparts, in ember/serialization.py).
_LAZY_MODULES = {"nn", "optim", "utils", "serialization", "amp", "cuda", "opencl", "cpu", "accelerator", "export", "fx", "onnx", "jit", "ops", "compiler",
                 "distributions", "special", "linalg", "distributed", "memory"}


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor", mode=None,  # noqa: A001
            options=None, name=None, disable: bool = False, recompile_limit=None, isolate_recompiles: bool = False,
            shapes_spec=None):
    """torch.compile's counterpart: see ember.compiler.compile (the compiler, above the graph layer, is
    loaded on the first call, so `import ember` does not pay for it)."""
    import importlib

    return importlib.import_module("ember.compiler.api").compile(
        model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options, name=name,
        disable=disable, recompile_limit=recompile_limit, isolate_recompiles=isolate_recompiles,
        shapes_spec=shapes_spec)


def save(obj, f, pickle_module=None, pickle_protocol: int = 2, _use_new_zipfile_serialization: bool = True) -> None:
    """Save `obj` to a path or binary file; see ember.serialization.save."""
    from ember.serialization import save as _save

    _save(obj, f, pickle_module, pickle_protocol, _use_new_zipfile_serialization)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load what ember.save wrote, a safetensors file, or a torch.save checkpoint (its pickle read with
    an allow-list: no code from the file is ever run); see ember.serialization.load."""
    from ember.serialization import load as _load

    return _load(f, map_location, pickle_module, weights_only=weights_only, mmap=mmap, **pickle_load_args)


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY_MODULES)


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module(f"ember.{name}")
    raise AttributeError(f"module 'ember' has no attribute {name!r}")

globals().update(_LEGACY_TYPES)      # FloatTensor, LongTensor, ...: torch's legacy constructors and types
