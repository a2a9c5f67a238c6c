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
from ember.frontend.wiring import wire as _wire
_wire()

from ember.frontend.dtype import (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,  # noqa: A004
                                  dtype, get_default_dtype, set_default_dtype)
from ember.frontend.dtype import ALIASES as _ALIASES
from ember.frontend.device import device, get_default_device, set_default_device
from ember.frontend.factories import tensor, as_tensor, from_numpy, from_dlpack, is_tensor, numel
from ember.frontend.random import Generator, manual_seed, seed, initial_seed, get_rng_state, set_rng_state
from ember.frontend.random import default_generator as _default_generator
from ember.frontend.autograd.grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,
                                               is_grad_enabled, is_inference_mode_enabled)
from ember.frontend.autocast import autocast, is_autocast_enabled, get_autocast_dtype
from ember.frontend.mode import DispatchMode
from ember.frontend.printing import set_printoptions, get_printoptions
from ember.frontend.type_promotion import promote_types, result_type, can_cast
from ember._generated.functions import *  # noqa: F401,F403  (every public op)
from ember.functional import einsum, nonzero, norm, split  # noqa: E402  (torch/functional.py's signatures)
from ember.frontend import resize as _resize  # noqa: E402,F401  (Tensor.resize_)
from ember import autograd, backends, dispatcher, errors, nn  # noqa: E402

long, int, short, float, double, half = (_ALIASES[n] for n in ("long", "int", "short", "float", "double", "half"))  # noqa: A001

from ember.dispatcher.plugins import REGISTRY as _REGISTRY
_REGISTRY.discover()

__version__ = "0.1.0"
