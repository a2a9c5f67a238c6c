"""`ember.backends.cuda`: torch.backends.cuda's flags, kept so programs that set them run.

Ember's kernels do not read these flags yet (the cpu and opencl backends compute float32
matmuls in float32 whatever they say); a cuda plugin may. `matmul.allow_tf32` is tied to
`ember.set_float32_matmul_precision` as in PyTorch: "highest" means False; "high" and
"medium" mean True; setting allow_tf32 sets the precision to "high" or "highest".
"""
from __future__ import annotations

import warnings

__all__ = ["is_built", "matmul", "get_float32_matmul_precision", "set_float32_matmul_precision",
           "flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp",
           "math_sdp_enabled", "enable_math_sdp", "cudnn_sdp_enabled", "enable_cudnn_sdp"]

_PRECISIONS = ("highest", "high", "medium")
_state = {"precision": "highest"}


def get_float32_matmul_precision() -> str:
    """"highest" (the default), "high" or "medium" (torch.get_float32_matmul_precision)."""
    return _state["precision"]


def set_float32_matmul_precision(precision: str) -> None:
    """Record the internal precision of float32 matmuls; an unknown value warns and is ignored, as in torch."""
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", stacklevel=2)
        return
    _state["precision"] = precision


class _Flags:
    """An object with a fixed set of attributes (an unknown one is an AttributeError, as in torch)."""

    _defaults: dict = {}

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(self._defaults))

    def __getattr__(self, name: str):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value) -> None:
        if name not in self._values:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = bool(value)


class _MatmulFlags(_Flags):
    """`ember.backends.cuda.matmul`: allow_tf32 (False) and the reduced-precision reductions (True)."""

    _defaults = {"allow_fp16_reduced_precision_reduction": True, "allow_bf16_reduced_precision_reduction": True}

    @property
    def allow_tf32(self) -> bool:
        return _state["precision"] != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        _state["precision"] = "high" if value else "highest"

    def __setattr__(self, name: str, value) -> None:
        if name == "allow_tf32":
            object.__setattr__(self, name, value)       # the property
        else:
            super().__setattr__(name, value)


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether a cuda backend plugin is installed (torch: whether PyTorch was built with CUDA)."""
    from ember.dispatcher.plugins import REGISTRY

    return "cuda" in REGISTRY.records


_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = bool(enabled)
