"""`ember.Tensor`: a strided view over a storage, on one device.

The data lives in a backend-native array (`_data`: a numpy array on cpu, a meta array on
meta, ...) which already encodes this view's shape, strides and offset. Views share the
`Storage` object of the tensor they view, which carries the version counter that in-place
ops bump and autograd checks. Operator methods (add, view, sum, __add__, ...) are
generated from the registry into `TensorMethods`; this file holds what is not an op:
metadata, conversion, autograd entry points and printing.
"""
from __future__ import annotations

from typing import Any

from ember._generated.tensor_methods import TensorMethods
from ember.frontend.bindings_support import OPERAND_CLASSES
from ember.dispatcher import dispatch as _dispatch
from ember.dispatcher import keys as K
from ember.dispatcher.plugins import REGISTRY
from ember.dispatcher.state import INFERENCE_THREADS as _INFERENCE_THREADS
from ember.dispatcher.state import STATE as _STATE
from ember.core.errors import ArgumentTypeError, ArgumentValueError, AutogradError, DimensionError

from ember.core import dtype as _dt
from ember.core import layout as _layout
from ember.core.spec import TensorSpec
from .conversion import ConversionMethods
from .metadata_methods import MetadataQueries
from .shape_conveniences import ShapeConveniences
from .random import default_generator
from .torch_function import default_torch_function, overrides_torch_function
from ember.core.device import device as _device_cls


class Storage:
    """A tensor allocation: byte size, device, and the version counter views share."""

    __slots__ = ("nbytes", "device", "version", "__weakref__")

    def __init__(self, nbytes: int, device) -> None:
        self.nbytes = nbytes
        self.device = device
        self.version = 0

    def __repr__(self) -> str:
        return f"<Storage {self.nbytes} bytes on {self.device}, version {self.version}>"


class AutogradMeta:
    """Autograd state of a tensor that requires grad (None on plain tensors)."""

    __slots__ = ("grad_fn", "output_nr", "input_meta", "__dict__")

    # One is made for every differentiable op result, which rarely sets the others: those
    # are class-level defaults (an instance that sets one keeps its own in __dict__).
    grad = None
    hooks = None
    post_accumulate_hooks = None    # [hook(leaf)] run after a backward accumulated into leaf.grad
    retains_grad = False
    is_view_of_leaf = False

    def __init__(self, grad_fn=None, output_nr: int = 0) -> None:
        self.grad_fn = grad_fn
        self.output_nr = output_nr
        # (shape, dtype, device) of the tensor as a recorded op's input (Node.input_meta), made on its
        # first use and kept: a tensor's shape, dtype and device change only through `Tensor.data = ...`,
        # which drops it
        self.input_meta = None


class Tensor(ShapeConveniences, TensorMethods, ConversionMethods, MetadataQueries, TensorSpec):
    """A multi-dimensional array on a device, with autograd support (a TensorSpec: shape rules read
    its fields)."""

    __slots__ = ("_data", "_dtype", "_device", "_keys", "_storage", "_ag", "_base", "__dict__", "__weakref__")
    __hash__ = object.__hash__
    # numpy defers to ember in mixed operator expressions (np.float32(2) * t calls t.__rmul__),
    # while np.add(t, 1) still works through __array__, as with PyTorch
    __array_priority__ = 1000
    # a leaf's AccumulateGrad node (autograd.graph.accumulator_of), set in the instance's __dict__ on the
    # leaf's first use in a graph: a class default, so reading it is one attribute load, not a dict's get
    _grad_accumulator = None

    def __new__(cls, *args, **kwargs):
        if cls is Tensor:
            # torch's legacy constructor: Tensor(2, 3), Tensor([1, 2]), Tensor() (the default dtype)
            from .legacy_types import new

            if set(kwargs) - {"device"}:
                raise ArgumentTypeError(f"Tensor(): unexpected keyword arguments {sorted(set(kwargs) - {'device'})}")
            return new(_dt.get_default_dtype(), args, kwargs.get("device"))
        return object.__new__(cls)

    # -- metadata --------------------------------------------------------------------------
    @property
    def shape(self) -> "Size":
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        shape = self._data.shape
        if dim is None:
            return Size(shape)
        return shape[_wrap_dim("size", dim, len(shape))]

    @property
    def dtype(self) -> _dt.dtype:
        return self._dtype

    @property
    def device(self) -> _device_cls:
        return self._device

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    def dim(self) -> int:
        return len(self._data.shape)

    def numel(self) -> int:
        n = 1
        for s in self._data.shape:
            n *= s
        return n

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self._dtype.itemsize

    def stride(self, dim: int | None = None):
        shape = self._data.shape
        if 0 in shape and self._base is None and not REGISTRY.by_key[self._keys & K.BACKEND_MASK].empty_strides_exact:
            # a new empty tensor has PyTorch's contiguous strides (sizes of 0 counted as 1),
            # whatever numpy reports; an empty view keeps the strides of its window
            strides, n = [], 1
            for size in reversed(shape):
                strides.append(n)
                n *= max(size, 1)
            strides = tuple(reversed(strides))
        else:
            item = self._dtype.itemsize
            strides = tuple(s // item for s in self._data.strides)
        if dim is None:
            return strides
        return strides[_wrap_dim("stride", dim, len(strides))]

    # -- the __torch_function__ protocol (ember/frontend/torch_function.py) ------------------------
    __torch_function__ = classmethod(default_torch_function)

    def as_subclass(self, cls: type) -> "Tensor":
        """A `cls` instance viewing this tensor's data (and autograd history), as torch's."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise ArgumentTypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, not {cls!r}")
        t = _new_object(cls)
        t._data, t._dtype, t._device, t._storage = self._data, self._dtype, self._device, self._storage
        t._ag, t._base = self._ag, self._base
        keys = self._keys & ~K.TORCH_FUNCTION
        t._keys = keys | K.TORCH_FUNCTION if overrides_torch_function(cls) else keys
        return t

    @staticmethod
    def _make_subclass(cls: type, data: "Tensor", require_grad: bool = False) -> "Tensor":
        """A `cls` instance over `data`'s storage, detached, requiring grad if asked (subclasses' __new__)."""
        t = data.detach().as_subclass(cls)
        if require_grad:
            t.requires_grad_(True)
        return t

    def storage_offset(self) -> int:
        return REGISTRY.by_key[self._keys & K.BACKEND_MASK].storage_offset(self._data)

    def is_contiguous(self, memory_format=None) -> bool:
        if 0 in self._data.shape:
            return True                       # as in PyTorch: an empty tensor is contiguous
        expected = 1
        for size, stride in zip(reversed(self._data.shape), reversed(self.stride())):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        return False

    @property
    def is_meta(self) -> bool:
        return self._device.type == "meta"

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_sparse(self) -> bool:
        """Whether this is a sparse COO tensor (ember/sparse)."""
        return bool(self._keys & K.SPARSE)

    @property
    def layout(self):
        return _layout.sparse_coo if self._keys & K.SPARSE else _layout.strided

    # torch's other device and layout predicates: devices and layouts ember has none of
    is_xpu = is_mps = is_ipu = is_xla = is_mtia = is_maia = is_vulkan = is_mkldnn = \
        is_sparse_csr = is_quantized = is_nested = property(lambda self: False)

    @property
    def _version(self) -> int:
        return self._storage.version

    def data_ptr(self) -> int:
        """The address of the first element: host memory (cpu), device memory (cuda); 0 where the
        backend keeps no addressable memory (meta, opencl buffers)."""
        data = self._data
        iface = getattr(data, "__array_interface__", None) or getattr(data, "__cuda_array_interface__", None)
        return iface["data"][0] if iface else 0

    def untyped_storage(self) -> Storage:
        return self._storage

    def __len__(self) -> int:
        if not self._data.shape:
            raise ArgumentTypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if not self._data.shape:
            raise ArgumentTypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    # -- conversion to Python and numpy ---------------------------------------------------
    def _host(self):
        """The values as a numpy array (a view when on cpu)."""
        if HOST_READ_HOOK is not None:           # ember.compile's step recording: a read it cannot replay
            HOST_READ_HOOK(self)
        if self._keys & K.SPARSE:
            raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")
        backend = REGISTRY.by_key[self._keys & K.BACKEND_MASK]
        return backend.to_host(self._data)

    def numpy(self, *, force: bool = False):
        if self.requires_grad and not force:
            raise AutogradError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self._device.type != "cpu" and not force:
            raise TypeError(f"can't convert {self._device.type} device type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
        return self._host()

    def __array__(self, dtype=None, copy=None):
        """numpy's array protocol: a view of cpu memory unless numpy asks for a copy or a cast."""
        import numpy as np

        arr = self.detach()._host()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(f"Unable to avoid copy while creating an array as requested: the tensor is "
                                 f"{self._dtype}, numpy asked for {np.dtype(dtype)}")
            return arr.astype(dtype)
        if copy:
            return arr.copy()
        return arr

    def item(self):
        if self._device.type == "meta":
            raise ArgumentValueError("Tensor.item() cannot be called on meta tensors")
        if self.numel() != 1:
            raise ArgumentValueError(
                f"item(): a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._host().reshape(()).item() if self._dtype is not _dt.bfloat16 else float(self._host().reshape(()))

    def tolist(self):
        arr = self._host()
        if self._dtype is _dt.bfloat16:
            arr = arr.astype("float32")
        return arr.tolist()

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        if BOOL_HOOK is not None:                # ember.compile's capture: it decides a traced branch
            decided = BOOL_HOOK(self)
            if decided is not None:
                return decided
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._dtype.category != 1 or self.numel() != 1:
            raise ArgumentTypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __dlpack__(self, *args, **kwargs):
        """A DLPack capsule sharing this tensor's memory (bfloat16 included)."""
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        data = self._data
        if not hasattr(data, "__dlpack__"):
            raise BufferError(f"Cannot export a {self._device.type} tensor through DLPack: its backend keeps no "
                              "memory that DLPack can describe")
        if self._dtype is _dt.bfloat16 and self._device.type == "cpu":
            from ember.core.numpy_interop import bfloat16_dlpack

            if args:
                kwargs = dict(kwargs, stream=args[0])
            return bfloat16_dlpack(data, kwargs)
        return data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        data = self._data
        if not hasattr(data, "__dlpack_device__"):
            raise BufferError(f"Cannot export a {self._device.type} tensor through DLPack")
        return data.__dlpack_device__()

    def __repr__(self) -> str:
        from .printing import tensor_repr

        if self._keys & K.SPARSE:
            from ember.sparse.methods import sparse_repr
            return sparse_repr(self)
        ag = self._ag
        grad_fn = ag.grad_fn.name() if ag is not None and ag.grad_fn is not None else None
        # no values on meta, nor in an export's fakes (a real device over meta arrays): a fake shows its size,
        # except while a program is being captured, where printing it reads its values (a data read: the
        # capture says so, and ember.compile runs such a program eagerly, printing each call as eager does)
        fake = self._device.type != "meta" and not holds_data(self)
        values = None if self._device.type == "meta" or (fake and not _STATE.modes) else self._host()
        return tensor_repr(values, dtype_name=self._dtype.name, shape=tuple(self._data.shape),
                           device=str(self._device), requires_grad=ag is not None and grad_fn is None,
                           grad_fn=grad_fn, default_float_dtype=_dt.get_default_dtype().name,
                           is_leaf_param=getattr(self, "_is_param", False))

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            return self.item().__format__(spec)
        return repr(self) if not spec else object.__format__(self, spec)

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self.detach().cpu().numpy(), str(self._device), self.requires_grad))

    # -- indexing --------------------------------------------------------------------------
    def __getitem__(self, index):
        from .indexing import getitem

        return getitem(self, index)

    def __setitem__(self, index, value) -> None:
        from .indexing import setitem

        setitem(self, index, value)

    # -- autograd ----------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._ag is not None

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        ag = self._ag
        if ag is not None and ag.grad_fn is not None:
            if not requires_grad:
                raise AutogradError("you can only change requires_grad flags of leaf variables. If you want to "
                                    "use a computed variable in a subgraph that doesn't require differentiation "
                                    "use var_no_grad = var.detach().")
            return self
        if requires_grad:
            if not (self._dtype.is_floating_point or self._dtype.is_complex):
                raise AutogradError("only Tensors of floating point and complex dtype can require gradients")
            if ag is None:
                self._ag = AutogradMeta()
                self._keys |= K.AUTOGRAD
        else:
            self._ag = None
            self._keys &= ~K.AUTOGRAD
        return self

    @property
    def grad(self):
        ag = self._ag
        if ag is not None:
            return ag.grad
        return self.__dict__.get("_plain_grad")     # a grad assigned to a tensor not requiring grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise ArgumentTypeError(f"assigned grad expected to be a Tensor or None but got {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(f"assigned grad has data of a different size: expected {list(self.shape)}, "
                                   f"got {list(value.shape)}")
        if self._ag is None:
            self.__dict__["_plain_grad"] = value
        else:
            self._ag.grad = value

    @property
    def grad_fn(self):
        ag = self._ag
        return ag.grad_fn if ag is not None else None

    @property
    def is_leaf(self) -> bool:
        ag = self._ag
        return ag is None or ag.grad_fn is None

    @property
    def output_nr(self) -> int:
        ag = self._ag
        return ag.output_nr if ag is not None else 0

    @property
    def data(self) -> "Tensor":
        return self.detach()

    @data.setter
    def data(self, value: "Tensor") -> None:
        if self._ag is not None:
            self._ag.input_meta = None
        self._data = value._data
        self._dtype = value._dtype
        self._device = value._device
        self._storage = value._storage
        self._base = value._base          # now a view of whatever `value` views
        self._keys = (value._keys & ~K.AUTOGRAD) | (self._keys & K.AUTOGRAD)

    def detach(self) -> "Tensor":
        """A tensor sharing storage (and version counter) with no autograd history."""
        return make_tensor(self._data, self._dtype, self._device, self._keys & ~K.AUTOGRAD, self._storage)

    def detach_(self) -> "Tensor":
        self._ag = None
        self._keys &= ~K.AUTOGRAD
        return self

    def retain_grad(self) -> None:
        from .autograd.graph import retain_grad

        retain_grad(self)

    @property
    def retains_grad(self) -> bool:
        return self._ag is not None and self._ag.retains_grad

    def register_hook(self, hook):
        from .autograd.graph import register_tensor_hook

        return register_tensor_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """hook(self) runs after a backward pass has accumulated a gradient into this leaf's `.grad`
        (torch's API; DistributedDataParallel launches its all-reduces from these)."""
        from .autograd.graph import register_post_accumulate_hook

        return register_post_accumulate_hook(self, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
        from ember.frontend.autograd.engine import backward     # absolute: no package lookup per call

        backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph, inputs)

    def is_inference(self) -> bool:
        return getattr(self, "_inference", False)


class Size(tuple):
    """A tensor's shape: a tuple of ints printed as `ember.Size([2, 3])`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out

    # like torch.Size, concatenation and repetition stay a Size
    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        if not isinstance(n, int):
            return NotImplemented
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__



def _wrap_dim(op: str, dim: int, ndim: int) -> int:
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise DimensionError(f"{op}: Dimension out of range (expected to be in range of [{-bound}, {bound - 1}], but got {dim})")
    return dim + bound if dim < 0 else dim


def holds_data(t: Tensor) -> bool:
    """Whether `t`'s backend keeps values (not meta's shapes-only arrays: meta tensors, and the fakes
    an export traces with, which show a real device over meta arrays)."""
    return REGISTRY.by_key[t._keys & K.BACKEND_MASK].holds_data


def make_tensor(data: Any, dtype: _dt.dtype, device, keys: int, storage: Storage | None, base=None) -> Tensor:
    """Wrap a native array as a Tensor; a new Storage when `storage` is None.

    Every op result is made here, so it sets the slots (its own and its Storage's) directly, with
    no __init__ call.
    """
    t = _new_object(Tensor)
    t._data = data
    t._dtype = dtype
    t._device = device
    t._keys = keys
    t._ag = None
    t._base = base
    if storage is None:
        storage = _new_object(Storage)          # Storage.__init__'s stores, without its frame
        storage.nbytes = data.nbytes
        storage.device = device
        storage.version = 0
        if ALLOC_HOOK is not None:          # ember.memory.track: the only cost when not tracking
            ALLOC_HOOK(storage)
    t._storage = storage
    if _INFERENCE_THREADS and _STATE.inference_mode:
        t.__dict__["_inference"] = True
    return t


_new_object = object.__new__

#: set by `ember.memory.track` while it records: called with each new Storage
ALLOC_HOOK = None

#: set by ember.compile while it captures a program: called with a tensor whose truth the program asks
#: (`if t:`); returns the answer, or None to let `bool()` read the value as usual
BOOL_HOOK = None

#: set by ember.compile while it records a step (compiler/recording.py): called with a tensor whose
#: values are read into Python (`.item()`, `.tolist()`, printing)
HOST_READ_HOOK = None


def _rebuild(array, device: str, requires_grad: bool) -> Tensor:
    from .factories import tensor

    return tensor(array, device=device, requires_grad=requires_grad)


_dispatch.install_frontend(Tensor, make_tensor, default_generator)
OPERAND_CLASSES.add(Tensor)
