"""The meta backend: tensors with shape, dtype, strides and byte size but no memory.

Every op runs on meta through one generic kernel: the shared shape rule already computed
the output spec, so the kernel only builds a MetaArray from it (a view shares its input's
storage size; an in-place op returns its input). Random and data-dependent ops need no
special care because no values exist. Engineers size models here before owning hardware.
"""
from __future__ import annotations

from ember.dispatcher import ALL_OPS, Backend, hookimpl, load_backend, replace_kernels, report_workspace

from ember.core.layout import contiguous_strides

from .array import MetaArray


def _new(spec) -> MetaArray:
    """A new array; strided when the shape rule gives strides: (shape, dtype, strides)."""
    shape, dtype = tuple(spec[0]), spec[1]
    if len(spec) == 3:
        n = 1
        for s in shape:
            n *= s
        return MetaArray(shape, dtype, tuple(spec[2]), 0, n * dtype.itemsize)
    return MetaArray(shape, dtype, contiguous_strides(shape), 0, None)


def _make_kernel(op):
    if op.mutated:
        m = op.mutated[0]

        def inplace(spec, *args):
            return args[m]
        return inplace
    if op.alias_return is not None:
        a = op.alias_return

        def view(spec, *args):
            shape, dtype, strides, offset = spec
            return MetaArray(tuple(shape), dtype, tuple(strides), offset, args[a].storage_nbytes)
        return view
    if op.n_outputs != 1:                   # several outputs, or none (the fused optimizer updates)
        return lambda specs, *args: tuple(None if s is None else _new(s) for s in specs)   # None: masked out
    return lambda spec, *args: _new(spec)


def _cpu_native_ops() -> set[str] | None:
    """The op names the cpu backend runs with its own kernels (None if it is not available). The memory
    tracker has loaded it already: loading it here would reinstall every backend's kernels."""
    from ember.core.errors import BackendUnavailableError

    try:
        record = load_backend("cpu")
    except BackendUnavailableError:
        return None
    if record.state != "available":
        return None
    return {name for name, op in ALL_OPS.items() if record.key in op.kernels}


def _may_leave_meta(op) -> bool:
    """Whether `op`'s output may live on another device than its tensor arguments (_to_copy, *_like(device=...)):
    such ops keep their explicit kernels or decompositions, which allocate on the target device."""
    return op.device_arg is not None and bool(op.tensor_args or op.tensor_list_args)


class MetaBackend(Backend):
    device_type = "meta"
    host_memory = True          # no data at all: from_host only reads the shape and dtype
    holds_data = False
    empty_strides_exact = True     # MetaArray keeps the strides its spec gave
    # memory tracking's kernel swaps (set_memory_tracking, predict_workspace): what is swapped out now
    _decomposed_while_tracking: tuple | None = None
    _parked: dict = {}
    _unwrapped: dict = {}
    _target_parked: dict = {}

    def to_host(self, array):
        from ember.core.errors import MissingKernelError

        raise MissingKernelError("Cannot copy out of meta tensor; no data! Meta tensors carry shapes only; "
                                 "materialise on a real device (e.g. Module.to_empty) to get values.")

    def from_host(self, ndarray, device_index=None):
        from ember.core.numpy_interop import from_numpy_dtype

        dt = from_numpy_dtype(ndarray.dtype)
        return MetaArray(tuple(ndarray.shape), dt, contiguous_strides(ndarray.shape), 0, None)

    def empty(self, shape, dtype, device_index=None):
        return MetaArray(tuple(shape), dtype, contiguous_strides(shape), 0, None)

    def storage_offset(self, array) -> int:
        return array.offset

    def storage_nbytes(self, array) -> int:
        return array.storage_nbytes

    def set_memory_tracking(self, on: bool) -> None:
        """While ember.memory tracks, composite ops run through the decompositions the cpu backend
        runs (instead of one meta kernel each), so a meta run allocates the storages a cpu run does,
        temporaries included. Outside tracking the single kernels stay: their outputs' strides are
        those of torch's meta device, which some decompositions do not reproduce (topk, lerp)."""
        key = self.key
        if on:
            decomposed = self._decomposed_while_tracking
            if decomposed is None:                          # the same ops every time: found once cpu is there
                native = _cpu_native_ops()
                decomposed = () if native is None else tuple(
                    op for name, op in ALL_OPS.items()
                    if op.impl == "composite" and name not in native and key in op.kernels
                    and (op.decomposition is not None or op.explicit is not None))
                if native is not None:
                    self._decomposed_while_tracking = decomposed
            # only these ops' entries change: the rest stay resolved
            self._parked = replace_kernels(key, {op: None for op in decomposed if key in op.kernels})
        else:
            replace_kernels(key, self._parked)
            self._parked = {}

    def predict_workspace(self, target, sink) -> None:
        """While ember.memory predicts for the backend `target` (None: stop), meta runs what `target`
        runs: an op `target` has no kernel for runs its explicit kernel or decomposition (as the
        dispatcher runs it there, temporaries included), and the meta kernels of
        `target.workspace_ops` report the scratch that backend's kernel would allocate
        (`report_workspace`: `sink` receives the byte sizes and the number of outputs before the
        outputs become storages; the tracker keeps the scratch alive until they are all recorded, so
        the peak sees inputs, scratch and outputs together)."""
        key = self.key
        replace_kernels(key, self._unwrapped)
        replace_kernels(key, self._target_parked)
        self._unwrapped, self._target_parked = {}, {}
        if target is not None:
            self._target_parked = replace_kernels(key, {
                op: None for name, op in ALL_OPS.items()
                if op.impl != "primitive" and target.key not in op.kernels and key in op.kernels
                and (op.explicit is not None or op.decomposition is not None)
                and not _may_leave_meta(op)})
            self._unwrapped = report_workspace(key, target, sink)

    def kernels(self):
        # ops whose output may live on another device (_to_copy, *_like(device=...)) keep
        # their explicit kernels/decompositions, which allocate on the target device;
        # composite ops returning an alias (reshape, contiguous, t) are a view or a copy
        # depending on their input's strides, so they run through their decompositions too
        return {name: _make_kernel(op) for name, op in ALL_OPS.items()
                if "data_dependent_shape" not in op.tags
                and not _may_leave_meta(op)
                and not (op.impl == "composite" and op.is_view)
                # composites that write some arguments and return new tensors (_native_batch_norm_legit)
                and not (op.impl == "composite" and op.mutated and op.n_outputs > 1)}


@hookimpl
def ember_backend():
    return MetaBackend()
