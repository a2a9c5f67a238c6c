"""What runs at a backend key: the four ways an op reaches a device.

    native_runner    shape rule -> backend kernel on native arrays -> wrap as Tensors
    python_runner    shape rule -> explicit kernel / decomposition (ember ops, with the
                     functionality keys excluded so inner calls go straight to the backend)
    fallback_runner  move the arguments to the backend's fallback device, run there, move back
    missing_kernel   an error naming the op, the backend and what to implement

Every path runs the op's shared shape rule first, so argument errors are identical on
every backend and a kernel only ever sees valid input.
"""
from __future__ import annotations

import warnings
from types import FunctionType
from typing import Callable

from ember.core.errors import MissingKernelError

from ._generated import unwraps as _unwraps      # the unwraps written out per tuple of tensor positions
from . import dispatch      # its Tensor and make_tensor, installed by the frontend
from . import keys as K
from .state import STATE


def _unwrapper(op) -> Callable[[tuple], tuple]:
    """A function turning the argument tuple into the kernel's native arguments.

    Built once per (op, key set) entry: for an op without Tensor[] arguments it is the unwrap generated
    for the op's tensor positions (`_unwrap_positions`), so a call pays no loop over them.
    """
    t_idx, l_idx = op.tensor_args, op.tensor_list_args
    if not l_idx and t_idx:
        return _unwrap_positions(t_idx)
    T = dispatch.Tensor

    def unwrap(args):
        nat = list(args)
        for i in t_idx:
            a = nat[i]
            if isinstance(a, T):
                nat[i] = a._data
        for i in l_idx:
            nat[i] = [t._data if t is not None else None for t in nat[i]]   # Tensor?[] entries may be None
        return nat
    return unwrap


def _unwrap_positions(t_idx: tuple) -> Callable[[tuple], tuple]:
    """The unwrap for tensors at the positions `t_idx` only, written out for them by `python -m codegen`
    (ember/dispatcher/_generated/unwraps.py, one per tuple of positions in the registry): a call pays
    neither a copy of the arguments into a list nor a loop over positions. For positions (0, 1):

        def unwrap_T0_T1(args):
            a0 = args[0]
            a1 = args[1]
            return (
                a0._data if isinstance(a0, Tensor) else a0,
                a1._data if isinstance(a1, Tensor) else a1,
            ) + args[2:]
    """
    return own_code(_unwraps.UNWRAPS[t_idx])


def own_code(fn: Callable) -> Callable:
    """`fn` (a generated function) with a code object of its own, a copy of its code: same source file,
    lines, globals and closure.

    CPython specialises bytecode per code object (each instruction's inline cache remembers the classes
    it saw): one generated function shared by many ops would see their different classes (node classes
    in a record function, Tensor and Parameter in an unwrap) at the same instructions and keep falling
    back to the generic forms. A copy per op (or entry) sees one op's, as a function compiled per op
    did. Made once per op or entry, never per call.
    """
    return FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def _output_device(op, backend, args):
    """Device of new outputs: the first tensor argument's, else the `device` argument's."""
    T = dispatch.Tensor
    for i in op.tensor_args:
        a = args[i]
        if isinstance(a, T):
            return a._device
    for i in op.tensor_list_args:
        if args[i]:
            return args[i][0]._device
    from ember.core.device import as_device, device

    dev = as_device(args[op.device_arg] if op.device_arg is not None else None)
    # as torch's cuda tensors, a tensor of a multi-device backend names its device's index ("opencl"
    # means the first device, opencl:0, as in ember.tensor(..., device="opencl") and indexing)
    return device(dev.type, 0) if dev.index is None and backend.multi_device else dev


def _cross_device_args(op, key, backend, args):
    """For copy_/_to_copy: bring tensor arguments on other devices to this backend via host."""
    from .plugins import REGISTRY

    T = dispatch.Tensor
    new = list(args)
    for i in op.tensor_args[1:]:
        a = new[i]
        if isinstance(a, T) and (a._keys & K.BACKEND_MASK) != key:
            host = REGISTRY.by_key[a._keys & K.BACKEND_MASK].to_host(a._data)
            out_dev = _output_device(op, backend, args)
            new[i] = dispatch.make_tensor(backend.from_host(host, out_dev.index), a._dtype, out_dev, key, None)
    return tuple(new)


def native_runner(op, key: int, kernel: Callable) -> Callable:
    """Entry for a backend's own kernel."""
    from .plugins import REGISTRY

    make_tensor = dispatch.make_tensor
    backend = REGISTRY.by_key[key]
    rule = op.shape_rule
    unwrap = _unwrapper(op)
    single_device = None
    if not backend.multi_device:
        from ember.core.device import device

        single_device = device(backend.device_type)

    def device_of(args):
        return single_device if single_device is not None else _output_device(op, backend, args)

    if op.cross_device:
        inner = _native_body(op, key, kernel, rule, unwrap, device_of, single_device, make_tensor)

        def run_cross(args):
            return inner(_cross_device_args(op, key, backend, args))
        return run_cross
    body = _native_body(op, key, kernel, rule, unwrap, device_of, single_device, make_tensor)
    if op.generator_arg is not None:
        return _with_generator(op.generator_arg, device_of, body)
    return with_fast_entry(op, key, body) if kernel is not None else body


def with_fast_entry(op, key: int, body: Callable) -> Callable:
    """`body`, or the entry a single-device backend's `fast_entry` builds around it. A fast entry skips
    the shape rule for the calls it takes: the backend answers only calls its own conditions make
    valid, and declines ops whose registry checks it cannot vouch for."""
    from .plugins import REGISTRY

    backend = REGISTRY.by_key[key]
    if backend.multi_device:
        return body
    from ember.core.device import device

    fast = backend.fast_entry(op, body, dispatch.Tensor, dispatch.make_tensor, device(backend.device_type), key)
    return body if fast is None else fast


def _with_generator(position: int, device_of: Callable, body: Callable) -> Callable:
    """`body`, given the output device's default generator where the call passed none: a random
    kernel always receives the generator it draws from."""
    default_generator = dispatch.default_generator

    def run(args):
        if args[position] is None:
            args = args[:position] + (default_generator(device_of(args)),) + args[position + 1:]
        return body(args)
    return run


def _native_body(op, key, kernel, rule, unwrap, device_of, single_device, make_tensor):
    if op.mutated:
        m = op.mutated[0]

        def run_inplace(args):
            spec = rule(op, *args)
            kernel(spec, *unwrap(args))
            t = args[m]
            t._storage.version += 1
            return t
        return run_inplace

    if op.alias_return is not None:
        a = op.alias_return

        def run_view(args):
            spec = rule(op, *args)
            out = kernel(spec, *unwrap(args))
            src = args[a]
            base = src._base
            return make_tensor(out, spec[1], src._device, key, src._storage, src if base is None else base)
        return run_view

    if op.n_outputs == 1:
        dev = single_device
        if dev is not None and op.tensor_args == (0, 1) and not op.tensor_list_args:
            T = dispatch.Tensor
            on_args = getattr(rule, "on_args", None)     # the rule's form taking the tuple
            if on_args is not None:
                def run_binary_on_args(args):
                    spec = on_args(op, args)
                    a, b = args[0], args[1]
                    out = kernel(spec, a._data if isinstance(a, T) else a, b._data if isinstance(b, T) else b,
                                 *args[2:])
                    return make_tensor(out, spec[1], dev, key, None)
                return run_binary_on_args

            def run_binary(args):
                # the commonest call (a + b, matmul, ...): `unwrap` inlined
                spec = rule(op, *args)
                a, b = args[0], args[1]
                out = kernel(spec, a._data if isinstance(a, T) else a, b._data if isinstance(b, T) else b, *args[2:])
                return make_tensor(out, spec[1], dev, key, None)
            return run_binary
        if dev is not None:
            def run_single_device(args):
                spec = rule(op, *args)
                return make_tensor(kernel(spec, *unwrap(args)), spec[1], dev, key, None)
            return run_single_device

        def run(args):
            spec = rule(op, *args)
            out = kernel(spec, *unwrap(args))
            return make_tensor(out, spec[1], device_of(args), key, None)
        return run

    def run_multi(args):
        specs = rule(op, *args)
        outs = kernel(specs, *unwrap(args))
        dev = single_device if single_device is not None else device_of(args)
        # a loop, not a comprehension (a frame of its own) or a generator (a resumption per output)
        results = []
        for o, s in zip(outs, specs):
            results.append(None if o is None else make_tensor(o, s[1], dev, key, None))
        return tuple(results)
    return run_multi


def writing_lists(op, entry: Callable) -> Callable:
    """`entry`, advancing the version counter of every tensor in the op's written lists (`Tensor(a!)[]`)
    after it runs, as an in-place op's runner does for its one written tensor (autograd then refuses
    a saved tensor the op changed). Ops without written lists get `entry` itself."""
    lists = op.written_lists
    if not lists:
        return entry

    def run_writing_lists(args):
        out = entry(args)
        for i in lists:
            for t in args[i]:
                t._storage.version += 1
        return out
    return run_writing_lists


def below_functionality(fn: Callable) -> Callable:
    """An entry calling `fn(*args)` with the functionality keys excluded, so the ops it calls go straight
    to the backends (the sparse kernels' entries; explicit kernels get python_runner's, which adds the
    shape rule and version resets)."""
    mask = K.FUNCTIONALITY_MASK

    def run(args):
        st = STATE
        prev = st.keys
        st.keys = (prev[0], prev[1] | mask)
        try:
            return fn(*args)
        finally:
            st.keys = (st.keys[0], prev[1])     # the excluded keys as they were
    return run


def python_runner(op, key: int, fn: Callable) -> Callable:
    """Entry for an explicit kernel or decomposition, run with functionality keys excluded."""
    rule = op.shape_rule
    mask = K.FUNCTIONALITY_MASK

    # a copy made by an op that may alias (contiguous, reshape) is fresh too: _reset_versions leaves
    # outputs that do share an input's storage alone
    fresh_output = not op.mutated
    T = dispatch.Tensor
    t_idx, l_idx = op.tensor_args, op.tensor_list_args

    def run(args):
        if rule is not None:
            rule(op, *args)
        st = STATE
        prev = st.keys
        st.keys = (prev[0], prev[1] | mask)
        try:
            out = fn(*args)
        finally:
            st.keys = (st.keys[0], prev[1])     # the excluded keys as they were
        if fresh_output:
            _reset_versions(out, args, t_idx, l_idx, T)
        return out
    return run


def _reset_versions(out, args: tuple, t_idx: tuple, l_idx: tuple, T) -> None:
    """A new tensor built by in-place steps (empty + fill_) starts at version 0, as in PyTorch;
    an output that is one of the inputs (or shares its storage) keeps its version."""
    for o in (out if isinstance(out, tuple) else (out,)):
        if isinstance(o, T) and not _is_input_storage(o._storage, args, t_idx, l_idx, T):
            o._storage.version = 0


def _is_input_storage(storage, args: tuple, t_idx: tuple, l_idx: tuple, T) -> bool:
    """Whether a tensor at the op's tensor (or tensor list) positions has `storage`."""
    if any(isinstance(args[i], T) and args[i]._storage is storage for i in t_idx):
        return True
    return any(isinstance(t, T) and t._storage is storage for i in l_idx for t in args[i])


_warned: set[tuple[str, str]] = set()


def fallback_runner(op, key: int) -> Callable | None:
    """Entry running `op` on the backend's fallback device, or None if it declares none."""
    from .plugins import REGISTRY

    backend = REGISTRY.by_key[key]
    target = backend.fallback_device
    if not target or op.is_view:
        return None
    T = dispatch.Tensor
    call = dispatch.call

    def move(value, dev):
        if isinstance(value, T):
            return value.to(dev)
        if isinstance(value, (list, tuple)) and any(isinstance(v, T) for v in value):
            return [v.to(dev) if isinstance(v, T) else v for v in value]     # Tensor?[] may hold None
        return value

    def run(args):
        if (op.name, backend.device_type) not in _warned:
            _warned.add((op.name, backend.device_type))
            warnings.warn(f"{op.name}: backend '{backend.device_type}' has no kernel for this op; "
                          f"running it on '{target}' (copying inputs there and results back)", stacklevel=4)
        home = _output_device(op, backend, args)
        gi = op.generator_arg
        if gi is not None and args[gi] is None:      # a random op draws from its own device's generator
            args = args[:gi] + (dispatch.default_generator(home),) + args[gi + 1:]
        st = STATE
        prev = st.keys
        st.keys = (prev[0], prev[1] | K.FUNCTIONALITY_MASK)
        try:
            moved = tuple(move(a, target) for a in args)
            out = call(op, moved)
            if op.mutated:
                m = op.mutated[0]
                args[m].copy_(moved[m])
                return args[m]
            if isinstance(out, tuple):
                return tuple(o.to(home) for o in out)
            return out.to(home)
        finally:
            st.keys = (st.keys[0], prev[1])     # the excluded keys as they were
    return run


def missing_kernel(op, key: int) -> Callable:
    from .plugins import REGISTRY

    backend = REGISTRY.by_key[key]

    def run(args):
        raise MissingKernelError(
            f"{op.name}: could not run on backend '{backend.device_type}': it has no kernel for this "
            f"{op.impl} op and declares no fallback device. A backend must implement every primitive op "
            f"(ember.dispatcher.primitive_ops()), including '{op.name}'.")
    return run
