"""Dispatch keys: one bit each in an int key set, higher bit = higher priority.

Functionality keys (TorchFunction > Mode > Autocast > Autograd > Sparse) sit above every backend key.
Sparse is a layout key: sparse COO tensors carry it beside their device's backend key, so their ops
reach ember/sparse/kernels.py where a dense tensor's would reach its backend (torch's SparseCPU).
TorchFunction is carried by instances of Tensor subclasses that define `__torch_function__`
(never by plain tensors, so their calls pay nothing for it). Backend keys
are allocated at run time, one per device type (cpu, meta, opencl, cuda and any number of
vendor devices), so a plugin never competes for a fixed "private use" slot.
"""
from __future__ import annotations

MAX_BACKENDS = 25   # so every key set fits one 30-bit digit of a Python int (fast int operations)
BACKEND_MASK = (1 << MAX_BACKENDS) - 1
SPARSE = 1 << MAX_BACKENDS
AUTOGRAD = 1 << (MAX_BACKENDS + 1)
AUTOCAST = 1 << (MAX_BACKENDS + 2)
MODE = 1 << (MAX_BACKENDS + 3)
TORCH_FUNCTION = 1 << (MAX_BACKENDS + 4)
FUNCTIONALITY_MASK = SPARSE | AUTOGRAD | AUTOCAST | MODE | TORCH_FUNCTION

_FUNCTIONALITY_NAMES = {SPARSE: "Sparse", AUTOGRAD: "Autograd", AUTOCAST: "Autocast", MODE: "Mode",
                        TORCH_FUNCTION: "TorchFunction"}
_backend_names: dict[int, str] = {}
_backend_by_device_type: dict[str, int] = {}


def allocate_backend_key(device_type: str) -> int:
    """The key bit of a device type, allocated on first request."""
    key = _backend_by_device_type.get(device_type)
    if key is None:
        if len(_backend_names) >= MAX_BACKENDS:
            raise RuntimeError(f"cannot register backend {device_type!r}: all {MAX_BACKENDS} backend keys are in use")
        key = 1 << len(_backend_names)
        _backend_names[key] = device_type.upper() if len(device_type) <= 4 else device_type.capitalize()
        _backend_by_device_type[device_type] = key
    return key


def backend_key(device_type: str) -> int | None:
    return _backend_by_device_type.get(device_type)


def device_type_of_key(key: int) -> str:
    for dt, k in _backend_by_device_type.items():
        if k == key:
            return dt
    raise KeyError(key)


def key_name(key: int) -> str:
    return _FUNCTIONALITY_NAMES.get(key) or _backend_names.get(key) or f"Key{key.bit_length() - 1}"


def keyset_names(ks: int) -> str:
    """A key set as "Autograd|CPU", highest priority first."""
    names = []
    while ks:
        top = 1 << (ks.bit_length() - 1)
        names.append(key_name(top))
        ks ^= top
    return "|".join(names) or "(empty)"
