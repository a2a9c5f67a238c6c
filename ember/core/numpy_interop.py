"""Host (numpy) dtypes: the common currency between backends and the frontend.

Backends move data to and from numpy arrays on the host, so the mapping between ember
dtypes and numpy dtypes (bfloat16 through ml_dtypes) lives here, shared by all of them.
numpy is imported on first use, keeping `import ember` light.
"""
from __future__ import annotations

from . import dtype as _dt

_TO_NUMPY: dict = {}
_FROM_NUMPY: dict = {}


def _build() -> None:
    import ml_dtypes
    import numpy as np

    pairs = [(_dt.bool, np.dtype(np.bool_)), (_dt.uint8, np.dtype(np.uint8)), (_dt.int8, np.dtype(np.int8)),
             (_dt.int16, np.dtype(np.int16)), (_dt.int32, np.dtype(np.int32)), (_dt.int64, np.dtype(np.int64)),
             (_dt.float16, np.dtype(np.float16)), (_dt.bfloat16, np.dtype(ml_dtypes.bfloat16)),
             (_dt.float32, np.dtype(np.float32)), (_dt.float64, np.dtype(np.float64))]
    for e, n in pairs:
        _TO_NUMPY[e] = n
        _FROM_NUMPY[n] = e


def to_numpy_dtype(dtype: _dt.dtype):
    """The numpy dtype holding values of an ember dtype."""
    if not _TO_NUMPY:
        _build()
    return _TO_NUMPY[dtype]


def numpy_dtype_lookup():
    """`to_numpy_dtype` as the table's own lookup, a call with no Python frame: what a numpy kernel
    library calls on (nearly) every op. Unknown dtypes raise KeyError, as `to_numpy_dtype` does."""
    if not _TO_NUMPY:
        _build()
    return _TO_NUMPY.__getitem__


def from_numpy_dtype(np_dtype) -> _dt.dtype:
    """The ember dtype of a numpy dtype; TypeError naming it if ember has none."""
    if not _FROM_NUMPY:
        _build()
    import numpy as np

    key = np.dtype(np_dtype)
    if key.byteorder == ">":
        raise TypeError(f"numpy arrays with non-native byte order ({key}) are not supported")
    try:
        return _FROM_NUMPY[key.newbyteorder("=") if key.byteorder == "<" else key]
    except KeyError:
        raise TypeError(f"can't convert np.ndarray of type numpy.{key}. The only supported types are: float64, "
                        "float32, float16, bfloat16, int64, int32, int16, int8, uint8, and bool.") from None


# -- DLPack ------------------------------------------------------------------------------------
# numpy exchanges every ember dtype through DLPack except bfloat16 (an ml_dtypes extension
# type numpy cannot describe). DLPack itself has a bfloat16 type code, so bfloat16 travels as
# a uint16 capsule whose DLDataType is rewritten in place: uint16 -> bfloat16 when exporting,
# bfloat16 -> uint16 (then viewed as bfloat16) when importing. The structs below are the
# stable DLPack C ABI (dlpack.h, both the legacy and the 1.x versioned capsule).

_DL_UINT, _DL_BFLOAT = 1, 4
_DL_CPU = 1
_dl: dict = {}


def _dl_structs() -> dict:
    if _dl:
        return _dl
    import ctypes as C

    class DLDevice(C.Structure):
        _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]

    class DLDataType(C.Structure):
        _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]

    class DLTensor(C.Structure):
        _fields_ = [("data", C.c_void_p), ("device", DLDevice), ("ndim", C.c_int32), ("dtype", DLDataType),
                    ("shape", C.POINTER(C.c_int64)), ("strides", C.POINTER(C.c_int64)),
                    ("byte_offset", C.c_uint64)]

    class DLManagedTensor(C.Structure):
        _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", C.c_void_p), ("deleter", C.c_void_p)]

    class DLPackVersion(C.Structure):
        _fields_ = [("major", C.c_uint32), ("minor", C.c_uint32)]

    class DLManagedTensorVersioned(C.Structure):
        _fields_ = [("version", DLPackVersion), ("manager_ctx", C.c_void_p), ("deleter", C.c_void_p),
                    ("flags", C.c_uint64), ("dl_tensor", DLTensor)]

    api = C.pythonapi
    api.PyCapsule_GetName.restype = C.c_char_p
    api.PyCapsule_GetName.argtypes = [C.py_object]
    api.PyCapsule_GetPointer.restype = C.c_void_p
    api.PyCapsule_GetPointer.argtypes = [C.py_object, C.c_char_p]
    _dl.update(ctypes=C, api=api, legacy=DLManagedTensor, versioned=DLManagedTensorVersioned)
    return _dl


def dlpack_tensor_struct(capsule):
    """The DLTensor inside an unconsumed DLPack capsule (legacy or versioned), or None."""
    dl = _dl_structs()
    api = dl["api"]
    name = api.PyCapsule_GetName(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        return None                                  # consumed ("used_dltensor") or foreign
    ptr = api.PyCapsule_GetPointer(capsule, name)
    kind = dl["legacy"] if name == b"dltensor" else dl["versioned"]
    return dl["ctypes"].cast(ptr, dl["ctypes"].POINTER(kind)).contents.dl_tensor


def retype_dlpack_capsule(capsule, src: tuple, dst: tuple) -> bool:
    """Rewrite the capsule's DLDataType (code, bits) from `src` to `dst`; True if it did."""
    t = dlpack_tensor_struct(capsule)
    if t is None or (t.dtype.code, t.dtype.bits) != src:
        return False
    t.dtype.code, t.dtype.bits = dst
    return True


def bfloat16_dlpack(array, kwargs: dict):
    """A DLPack capsule (typed bfloat16) over a host bfloat16 numpy array, sharing memory."""
    import numpy as np

    capsule = array.view(np.uint16).__dlpack__(**kwargs)
    retype_dlpack_capsule(capsule, (_DL_UINT, 16), (_DL_BFLOAT, 16))
    return capsule


class DLPackHostImport:
    """Wraps a DLPack producer (or a bare capsule) for np.from_dlpack, letting bfloat16 through.

    After np.from_dlpack(wrapper), `was_bfloat16` says whether the array (then typed uint16)
    must be viewed as bfloat16.
    """

    def __init__(self, ext) -> None:
        self.ext = ext
        self.was_bfloat16 = False

    def device(self) -> tuple:
        ext = self.ext
        if hasattr(ext, "__dlpack_device__"):
            dev_type, dev_id = ext.__dlpack_device__()
            return int(dev_type), int(dev_id)
        t = dlpack_tensor_struct(ext)
        if t is None:
            raise TypeError(f"from_dlpack(): expected an object with __dlpack__ or an unconsumed DLPack "
                            f"capsule, got {type(ext).__name__}")
        return int(t.device.device_type), int(t.device.device_id)

    def __dlpack_device__(self):
        return self.device()

    def __dlpack__(self, **kwargs):
        ext = self.ext
        capsule = ext.__dlpack__(**kwargs) if hasattr(ext, "__dlpack__") else ext
        if retype_dlpack_capsule(capsule, (_DL_BFLOAT, 16), (_DL_UINT, 16)):
            self.was_bfloat16 = True
        return capsule
