"""The allow-list unpickler that reads the pickles of `torch.save` checkpoints, running nothing.

Accepted: only the globals in `_ALLOWED_GLOBALS`, named as strings and mapped to functions of
this module (torch is never imported): torch's tensor and parameter rebuild functions, storage
classes and dtypes, `torch.Size`, `torch.device`, `collections.OrderedDict` and `Counter`, and the
builtins pickle needs for sets, bytes and complex numbers. Tensors may be bool, uint8, int8,
int16, int32, int64, float16, bfloat16, float32 or float64.

Refused, with `CheckpointError` naming it: any other global (with torch's reason where torch
could load it, or a hint for a pickled nn.Module or numpy), other dtypes (complex, uint16..64,
float8, quantized), backward hooks, tensors with Python attributes and attributes of an
OrderedDict or Counter other than a state dict's `_metadata`.

Why nothing runs: nothing is imported and no object of the file's choosing is created. Tensors,
storages and torch globals are inert records (`_Record`) whose `__setstate__` refuses BUILD;
each call is checked (every tensor against its storage, every zip storage against its record's
size) before any data is read. Before unpickling, `ember.pickle_scan.scan_pickle` walks the
opcodes (parsing only) and refuses what would harm the process before any check could run
(huge memo indices, deep nesting, impossible lengths).
`ember.serialization_torch` builds the ember objects.
"""
from __future__ import annotations

import functools
import inspect
import io
import math
import pickle
import struct
import zipfile
import zlib
from typing import Any, Callable

from ember.pickle_scan import scan_pickle
from ember.serialization import _DTYPE_CODES, _MAX_DIMS, CheckpointError, _fail, _is_shape, _np_dtype

_MAX_NUMEL_BYTES = 2 ** 62
# Errors the zip reader and the unpickler raise for damaged input (zipfile raises OSError for
# offsets before the file's start and RuntimeError for encrypted records).
_FORMAT_ERRORS = (zipfile.BadZipFile, zlib.error, pickle.UnpicklingError, EOFError, struct.error, ValueError,
                  TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError,
                  NotImplementedError, RuntimeError, OSError)


# -- dtypes ---------------------------------------------------------------------------------
_SUPPORTED_DTYPES = tuple(_DTYPE_CODES)          # the dtypes ember's own format stores
_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
_UNSUPPORTED_DTYPES = (
    "uint16", "uint32", "uint64", "complex32", "complex64", "complex128", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "qint8", "quint8", "qint32",
    "quint4x2", "quint2x4", "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
    *(f"uint{n}" for n in range(1, 8)), *(f"int{n}" for n in range(1, 8)))
# torch's typed storage classes (torch.FloatStorage, ...) by the dtype of their elements
_STORAGE_CLASSES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16",
    "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128", "QInt8Storage": "qint8", "QUInt8Storage": "quint8",
    "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4"}


def _itemsize(dtype: str) -> int:
    """Bytes per element of a supported dtype; `CheckpointError` naming any other."""
    if dtype not in _SUPPORTED_DTYPES:
        raise _fail(f"dtype torch.{dtype} is not supported by ember (supported: {', '.join(_SUPPORTED_DTYPES)})")
    return _np_dtype(dtype).itemsize


# -- what the unpickler builds ----------------------------------------------------------------
class _Record:
    """Base of the objects the unpickler creates; the pickle's BUILD on one is refused."""

    __slots__ = ()

    def describe(self) -> str:
        return "an object"

    def __setstate__(self, state: Any) -> None:
        raise _fail(f"the pickle's BUILD instruction targets {self.describe()}: refused (a weights-only "
                    "checkpoint sets no attributes on tensors, storages or torch globals)")


class _Token(_Record):
    """A torch global that is a value, not a function: a dtype, a storage class or a tensor class."""

    __slots__ = ("kind", "name", "value")

    def __init__(self, kind: str, name: str, value: str | None) -> None:
        self.kind, self.name, self.value = kind, name, value

    def describe(self) -> str:
        return f"the global {self.name!r}"

    def __call__(self, *args: Any) -> Any:
        raise _fail(f"the pickle calls {self.name!r}, which is not a function that can rebuild anything")


class _Global(_Record):
    """An allowed torch function, bound to the load in progress; calling it builds a record."""

    __slots__ = ("name", "fn", "load")

    def __init__(self, name: str, fn: Callable[..., Any], load: _LoadState) -> None:
        self.name, self.fn, self.load = name, fn, load

    def describe(self) -> str:
        return f"the global {self.name!r}"

    def __call__(self, *args: Any) -> Any:
        try:
            _signature(self.fn).bind(self.load, *args)
        except TypeError:
            raise _fail(f"{self.name} called with {len(args)} arguments") from None
        try:
            return self.fn(self.load, *args)
        except CheckpointError:
            raise
        except (TypeError, ValueError, OverflowError) as e:
            raise _fail(f"{self.name} given invalid arguments ({type(e).__name__}: {e})") from None


@functools.lru_cache(maxsize=None)
def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(fn)


class _Value(_Record):
    """A torch.Size or torch.device, kept inert until the pickle is read."""

    __slots__ = ("kind", "args")

    def __init__(self, kind: str, args: tuple) -> None:
        self.kind, self.args = kind, args

    def describe(self) -> str:
        return f"a torch.{self.kind}"


class _MappingRecord(dict):
    """An OrderedDict or Counter being unpickled: its items, plus the one attribute BUILD may set,
    `_metadata` (which a module's state dict carries)."""

    __slots__ = ("kind", "attrs")

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.attrs: dict[str, Any] = {}

    def __setstate__(self, state: Any) -> None:
        if type(state) is not dict or not all(k == "_metadata" for k in state):
            what = (f"the attributes {', '.join(sorted(map(repr, state)))[:80]}" if type(state) is dict
                    else f"the state {type(state).__name__}")
            raise _fail(f"the pickle's BUILD instruction gives a collections.{self.kind} {what}: only "
                        "_metadata (a state dict's) is accepted")
        self.attrs.update(state)


class _StorageRecord(_Record):
    """A storage named by the pickle: its key in the file, element dtype, size and location.

    A typed storage (torch.FloatStorage, ...) has its dtype and counts elements; an untyped one
    (torch.UntypedStorage) counts bytes and takes the dtype of the first tensor viewing it.
    """

    __slots__ = ("key", "dtype", "untyped", "numel", "location")

    def __init__(self, key: str, dtype: str | None, numel: int, location: str) -> None:
        self.key, self.dtype, self.untyped, self.numel, self.location = key, dtype, dtype is None, numel, location

    def describe(self) -> str:
        return f"the storage {self.key!r}"

    @property
    def nbytes(self) -> int:
        return self.numel if self.untyped else self.numel * _itemsize(self.dtype)

    @property
    def element_dtype(self) -> str:
        return self.dtype or "uint8"


class _TensorRecord(_Record):
    """A tensor to build: a strided view of a storage (or, on meta, no storage at all)."""

    __slots__ = ("storage", "dtype", "offset", "size", "stride", "requires_grad", "parameter")

    def __init__(self, storage: _StorageRecord | None, dtype: str, offset: int, size: tuple, stride: tuple,
                 requires_grad: bool, parameter: bool = False) -> None:
        self.storage, self.dtype, self.offset = storage, dtype, offset
        self.size, self.stride, self.requires_grad, self.parameter = size, stride, requires_grad, parameter

    def describe(self) -> str:
        return "a tensor"

    def as_parameter(self, requires_grad: bool) -> _TensorRecord:
        """The same tensor wrapped as an nn.Parameter."""
        _check_requires_grad(self.dtype, requires_grad)
        return _TensorRecord(self.storage, self.dtype, self.offset, self.size, self.stride, requires_grad, True)


class _LoadState:
    """What one load has seen so far: its storages by key."""

    def __init__(self, storage_nbytes: Callable[[str], int] | None) -> None:
        self.storage_nbytes = storage_nbytes      # checks a key against the archive (zip) or None (legacy)
        self.storages: dict[str, _StorageRecord] = {}

    def storage(self, pid: Any) -> _StorageRecord:
        """`persistent_load`: the record of a storage the pickle refers to."""
        if not isinstance(pid, tuple) or not pid:
            raise _fail(f"a persistent id must be a tuple, got {type(pid).__name__}")
        tag = _ascii(pid[0])
        legacy = self.storage_nbytes is None
        if tag != "storage" or len(pid) != (6 if legacy else 5):
            raise _fail(f"unknown persistent id {pid[:1]!r} with {len(pid)} fields")
        storage_type, key, location, numel = pid[1:5]
        if legacy and pid[5] is not None:
            raise _fail("the file holds a storage view (written by PyTorch before 1.0); re-save it with a "
                        "recent torch.save")
        if not isinstance(storage_type, _Token) or storage_type.kind != "storage":
            raise _fail(f"a storage's type must be a torch storage class, got {_what(storage_type)}")
        key, location = _ascii(key), _ascii(location)
        if (not isinstance(key, str) or not isinstance(location, str) or len(key) > 256 or len(location) > 256
                or type(numel) is not int or numel < 0):
            raise _fail(f"invalid storage record (key {str(key)[:40]!r}, location {str(location)[:40]!r}, "
                        f"size {str(numel)[:40]})")
        dtype = storage_type.value
        rec = self.storages.get(key)
        if rec is not None:
            if (rec.untyped, rec.numel, rec.location) != (dtype is None, numel, location) or (
                    dtype is not None and rec.dtype != dtype):
                raise _fail(f"the storage {key!r} is described twice, differently")
            return rec
        if dtype is not None:
            _itemsize(dtype)
        _check_location(location)
        rec = _StorageRecord(key, dtype, numel, location)
        if self.storage_nbytes is not None:
            have = self.storage_nbytes(key)
            if have != rec.nbytes:
                raise _fail(f"the storage {key!r} needs {rec.nbytes} bytes ({numel} x {dtype}) but its record "
                            f"holds {have}")
        self.storages[key] = rec
        return rec


def _ascii(v: Any) -> Any:
    """torch writes some internal strings as bytes in files from Python 2; read them as ascii."""
    if isinstance(v, bytes):
        try:
            return v.decode("ascii")
        except UnicodeDecodeError:
            raise _fail(f"non-ascii name {v[:40]!r}") from None
    return v


def _what(v: Any) -> str:
    """How an error message names something the pickle built."""
    if isinstance(v, _MappingRecord):
        return f"a collections.{v.kind}"
    return v.describe() if isinstance(v, _Record) else type(v).__name__


@functools.lru_cache(maxsize=64)
def _check_location(location: str) -> None:
    from ember.core.device import device

    try:
        device(location)
    except Exception:
        raise _fail(f"unknown storage location {location[:40]!r}") from None


def _check_requires_grad(dtype: str, requires_grad: Any) -> None:
    if type(requires_grad) is not bool:
        raise _fail(f"requires_grad must be a bool, got {_what(requires_grad)}")
    if requires_grad and dtype not in _FLOAT_DTYPES:
        raise _fail(f"{dtype} tensors cannot require grad (only floating point ones can)")


# -- the allowed globals --------------------------------------------------------------------
def _dims(v: Any, what: str) -> tuple[int, ...]:
    if isinstance(v, _Value) and v.kind == "Size":
        v = v.args
    if not isinstance(v, (tuple, list)) or not _is_shape(v):
        raise _fail(f"a tensor's {what} must be at most {_MAX_DIMS} non-negative ints, got {_what(v)}")
    return tuple(v)


def _layout(dtype: str, size: Any, stride: Any, requires_grad: Any) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """Check what every tensor has, with or without a storage: a supported dtype, a size and a
    stride of the same length, at most `_MAX_NUMEL_BYTES` of elements and a valid requires_grad.
    Returns the size, the stride and the element count."""
    item = _itemsize(dtype)
    size, stride = _dims(size, "size"), _dims(stride, "stride")
    if len(size) != len(stride):
        raise _fail(f"a tensor's size {size} and stride {stride} differ in length")
    numel = math.prod(size)
    if numel * item > _MAX_NUMEL_BYTES:
        raise _fail(f"a tensor of size {size} is too large")
    _check_requires_grad(dtype, requires_grad)
    return size, stride, numel


def _dtype_arg(v: Any, what: str) -> str:
    """The name of the torch dtype `v` names; `CheckpointError` if `v` is not a dtype."""
    if not isinstance(v, _Token) or v.kind != "dtype":
        raise _fail(f"{what} must be a torch dtype, got {_what(v)}")
    return v.value


def _no_hooks(hooks: Any, what: str) -> None:
    """Refuse backward hooks (torch saves an empty OrderedDict, or None, when there are none)."""
    if hooks is not None and not (isinstance(hooks, dict) and not hooks):
        raise _fail(f"a {what} with backward hooks: hooks are code and are not loaded")


def _tensor(load: _LoadState, storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any,
            hooks: Any, metadata: Any, dtype: str | None) -> _TensorRecord:
    """Check one tensor against its storage (dtype, bounds, requires_grad) and record it."""
    if not isinstance(storage, _StorageRecord):
        raise _fail(f"a tensor's storage must come from the file's storages, got {_what(storage)}")
    if type(offset) is not int or offset < 0:
        raise _fail(f"a tensor's storage offset must be a non-negative int, got {offset!r}")
    _no_hooks(hooks, "tensor")
    if metadata is not None and not (isinstance(metadata, dict) and not any(metadata.values())):
        raise _fail(f"tensor metadata {str(metadata)[:80]} (conjugate or negative bits) is not supported")
    dtype = dtype or storage.element_dtype
    size, stride, numel = _layout(dtype, size, stride, requires_grad)
    item = _itemsize(dtype)
    if storage.dtype is None:
        if storage.numel % item:
            raise _fail(f"the storage {storage.key!r} of {storage.numel} bytes is not a whole number of {dtype}")
        storage.dtype = dtype
    elif storage.dtype != dtype:
        raise _fail(f"a {dtype} tensor on the {storage.dtype} storage {storage.key!r}")
    elements = storage.nbytes // item
    end = offset + sum((d - 1) * s for d, s in zip(size, stride)) + 1 if numel else offset
    if end > elements:
        raise _fail(f"a tensor of size {size}, stride {stride} and offset {offset} reaches element {end - 1} "
                    f"of the storage {storage.key!r}, which has {elements}")
    return _TensorRecord(storage, dtype, offset, size, stride, requires_grad)


def _rebuild_tensor(load: _LoadState, storage: Any, storage_offset: Any, size: Any, stride: Any) -> _TensorRecord:
    return _tensor(load, storage, storage_offset, size, stride, False, None, None, None)


def _rebuild_tensor_v2(load: _LoadState, storage: Any, storage_offset: Any, size: Any, stride: Any,
                       requires_grad: Any, backward_hooks: Any, metadata: Any = None) -> _TensorRecord:
    return _tensor(load, storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata, None)


def _rebuild_tensor_v3(load: _LoadState, storage: Any, storage_offset: Any, size: Any, stride: Any,
                       requires_grad: Any, backward_hooks: Any, dtype: Any, metadata: Any = None) -> _TensorRecord:
    return _tensor(load, storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata,
                   _dtype_arg(dtype, "_rebuild_tensor_v3's dtype"))


def _rebuild_meta_tensor_no_storage(load: _LoadState, dtype: Any, size: Any, stride: Any,
                                    requires_grad: Any) -> _TensorRecord:
    dtype = _dtype_arg(dtype, "a meta tensor's dtype")
    size, stride, _ = _layout(dtype, size, stride, requires_grad)
    return _TensorRecord(None, dtype, 0, size, stride, requires_grad)


def _rebuild_parameter(load: _LoadState, data: Any, requires_grad: Any, backward_hooks: Any) -> _TensorRecord:
    if not isinstance(data, _TensorRecord):
        raise _fail(f"a Parameter's data must be a tensor, got {_what(data)}")
    _no_hooks(backward_hooks, "Parameter")
    return data.as_parameter(requires_grad)


def _no_state(state: Any) -> None:
    if state is not None and not (isinstance(state, dict) and not state):
        keys = sorted(map(str, state)) if isinstance(state, dict) else [type(state).__name__]
        raise _fail(f"a tensor with Python attributes ({', '.join(keys)[:80]}): not loaded by ember")


def _rebuild_parameter_with_state(load: _LoadState, data: Any, requires_grad: Any, backward_hooks: Any,
                                  state: Any) -> _TensorRecord:
    _no_state(state)
    return _rebuild_parameter(load, data, requires_grad, backward_hooks)


def _rebuild_from_type_v2(load: _LoadState, func: Any, new_type: Any, args: Any, state: Any) -> _TensorRecord:
    if not isinstance(func, _Global) or not isinstance(args, tuple):
        raise _fail(f"_rebuild_from_type_v2 must call an allowed rebuild function, got {_what(func)}")
    if not isinstance(new_type, _Token) or new_type.kind != "class":
        raise _fail(f"_rebuild_from_type_v2's type must be torch.Tensor or nn.Parameter, got {_what(new_type)}")
    _no_state(state)
    out = func(*args)
    if not isinstance(out, _TensorRecord):
        raise _fail(f"_rebuild_from_type_v2's function built {_what(out)}, not a tensor")
    return out.as_parameter(out.requires_grad) if new_type.value == "Parameter" else out


def _ordered_dict(load: _LoadState, items: Any = ()) -> _MappingRecord:
    out = _MappingRecord("OrderedDict")
    if not isinstance(items, (list, tuple)):
        raise _fail(f"OrderedDict given {_what(items)}")
    for pair in items:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise _fail("OrderedDict given an item that is not a (key, value) pair")
        out[pair[0]] = pair[1]
    return out


def _counter(load: _LoadState, counts: Any = None) -> _MappingRecord:
    out = _MappingRecord("Counter")
    if counts is not None:
        if type(counts) is not dict:
            raise _fail(f"Counter given {_what(counts)}")
        out.update(counts)
    return out


def _items(v: Any, what: str) -> list | tuple:
    if not isinstance(v, (list, tuple)):
        raise _fail(f"{what} given {_what(v)}")
    return v


def _set(load: _LoadState, items: Any = ()) -> set:
    return set(_items(items, "set"))


def _frozenset(load: _LoadState, items: Any = ()) -> frozenset:
    return frozenset(_items(items, "frozenset"))


def _latin1(text: Any, encoding: Any, what: str) -> bytes:
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise _fail(f"{what} accepts only (str, 'latin1'), as pickle writes bytes")
    return text.encode("latin-1")


def _encode(load: _LoadState, text: Any, encoding: Any = "utf-8") -> bytes:
    return _latin1(text, encoding, "_codecs.encode")


def _bytearray(load: _LoadState, data: Any = b"", encoding: Any = None) -> bytearray:
    if isinstance(data, (bytes, bytearray)) and encoding is None:
        return bytearray(data)
    return bytearray(_latin1(data, encoding, "bytearray"))


def _complex(load: _LoadState, real: Any = 0.0, imag: Any = 0.0) -> complex:
    if not all(type(v) in (int, float) for v in (real, imag)):
        raise _fail("complex accepts only two numbers")
    return complex(real, imag)


def _size(load: _LoadState, dims: Any = ()) -> _Value:
    if not isinstance(dims, (tuple, list)) or not all(type(d) is int for d in dims):
        raise _fail(f"torch.Size given {_what(dims)}")
    return _Value("Size", tuple(dims))


def _device(load: _LoadState, kind: Any, index: Any = None) -> _Value:
    if not isinstance(kind, str) or not (index is None or type(index) is int):
        raise _fail("torch.device accepts only a device string and an optional index")
    return _Value("device", (kind, index))


def _tokens(kind: str, names: dict[str, str | None]) -> dict[str, _Token]:
    return {name: _Token(kind, name, value) for name, value in names.items()}


# The allow-list: each torch (or builtin) global a weights-only checkpoint may name, and what
# it becomes here. Functions build records when the pickle calls them; tokens are values.
_ALLOWED_GLOBALS: dict[str, Callable[..., Any] | _Token] = {
    "torch._utils._rebuild_tensor": _rebuild_tensor,
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
    "torch._utils._rebuild_meta_tensor_no_storage": _rebuild_meta_tensor_no_storage,
    "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    "torch.Size": _size,
    "torch.device": _device,
    "collections.OrderedDict": _ordered_dict,
    "collections.Counter": _counter,
    "builtins.set": _set,
    "builtins.frozenset": _frozenset,
    "builtins.bytearray": _bytearray,
    "builtins.complex": _complex,
    "_codecs.encode": _encode,
    **_tokens("class", {"torch.Tensor": "Tensor", "torch.nn.parameter.Parameter": "Parameter"}),
    **_tokens("dtype", {f"torch.{d}": d for d in (*_SUPPORTED_DTYPES, *_UNSUPPORTED_DTYPES)}),
    **_tokens("storage", {f"{module}.{cls}": dtype for cls, dtype in _STORAGE_CLASSES.items()
                          for module in ("torch", "torch.cuda")}),
    **_tokens("storage", {"torch.storage.UntypedStorage": None, "torch.UntypedStorage": None}),
}

# Globals torch itself can load but ember does not, with the reason given.
_KNOWN_REFUSALS = {
    "torch._utils._rebuild_sparse_tensor": "sparse tensors are not supported",
    "torch._utils._rebuild_qtensor": "quantized tensors are not supported",
    "torch._utils._rebuild_nested_tensor": "nested tensors are not supported",
    "torch._utils._rebuild_wrapper_subclass": "tensor subclasses are not supported",
    "torch._utils._rebuild_device_tensor_from_numpy": "tensors of devices without storage are not supported",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor": "tensors of devices without storage are not supported",
}

# Hints for refused globals by the start of their name.
_REFUSAL_HINTS = {
    "torch.nn.": "a whole nn.Module is pickled; save and load model.state_dict() instead",
    "numpy.": "numpy arrays and scalars are not loaded; save tensors or Python numbers instead",
}

# Module names as protocol 0-2 pickles (and old torch versions) spell them.
_MODULE_ALIASES = {"__builtin__": "builtins", "copy_reg": "copyreg", "torch.tensor": "torch._tensor"}


# -- unpickling -----------------------------------------------------------------------------

class _AllowListUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the names in `_ALLOWED_GLOBALS`, to functions of this module."""

    def __init__(self, data: bytes, load: _LoadState, **kwargs: Any) -> None:
        super().__init__(io.BytesIO(data), **kwargs)
        self._load = load

    def find_class(self, module: str, name: str) -> Any:
        module = _MODULE_ALIASES.get(module, module)
        full = f"{module}.{name}" if isinstance(module, str) and isinstance(name, str) else repr((module, name))
        entry = _ALLOWED_GLOBALS.get(full)
        if entry is None:
            hints = [hint for prefix, hint in _REFUSAL_HINTS.items() if full.startswith(prefix)]
            reason = _KNOWN_REFUSALS.get(full) or (hints[0] if hints else "only tensors, storages, dtypes, devices, "
                                                   "sizes, containers and numbers can be loaded")
            raise _fail(f"refused the global {full!r} ({reason}); nothing from the file was run")
        return entry if isinstance(entry, _Token) else _Global(full, entry, self._load)

    def persistent_load(self, pid: Any) -> Any:
        return self._load.storage(pid)


def _unpickle(data: bytes, load: _LoadState, unpickle_args: dict[str, Any], scanned: bool = False) -> Any:
    """Unpickle `data` with the allow-list; `CheckpointError` for anything refused or malformed."""
    if not scanned:
        scan_pickle(io.BytesIO(data))
    unpickler = _AllowListUnpickler(data, load, **unpickle_args)     # a bad argument raises its own TypeError
    try:
        return unpickler.load()
    except CheckpointError:
        raise
    except _FORMAT_ERRORS as e:
        raise _fail(f"the pickle is malformed ({type(e).__name__}: {e})") from None
