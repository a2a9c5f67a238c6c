"""The backend plugin contract: the hooks a plugin may implement.

A plugin is a module (or object) named by an entry point in the group `ember.backends`;
the entry point's name is the device type it provides. Ember reads the names at import
and imports the module only when its device is first used. Mark implementations with
`ember.dispatcher.hookimpl`:

    from ember.dispatcher import hookimpl

    @hookimpl
    def ember_backend():
        return MyBackend()          # a subclass of ember.dispatcher.Backend

    @hookimpl
    def ember_kernels(device_type):
        if device_type == "mydev":
            return {"add.Tensor": my_add, ...}

Kernels never see `ember.Tensor`: they take the backend's native arrays, Python scalars and
plain values, in the op schema's argument order, preceded by the output spec computed by
the op's shared shape rule (see ember.dispatcher.backend.Backend for the spec format), and
return native arrays. The set of ops a backend must implement is the registry's
`primitive` ops (`ember.dispatcher.primitive_ops()`); every other op reaches it through an
explicit kernel or a decomposition. `python -m ember info` and `ember.backends.status()`
report whether each plugin is available, unavailable (with the reason) or broken.
"""
from __future__ import annotations

import pluggy

PROJECT = "ember"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec(firstresult=True)
def ember_backend():
    """Return the plugin's Backend object (see ember.dispatcher.backend.Backend).

    Called once, when the plugin's device is first used. Raising here marks the plugin
    broken; returning a backend whose `is_available()` is False marks it unavailable.
    """


@hookspec
def ember_kernels(device_type: str):
    """Return a dict {op name: kernel} for `device_type`, or None.

    Every loaded plugin is asked, so one plugin may add or replace kernels of another's
    device (an accelerated kernel pack for cpu, say). Later registrations win.
    """


@hookspec(firstresult=True)
def ember_fused_kernel_compiler(device_type: str):
    """Return the fused-kernel generator for `device_type`, or None (the first plugin answering wins).

    `ember.compile` merges chains of pointwise ops into one `ember.core.fused_kernel.FusedKernel` and
    asks this object's `compile(kernel)` for a launcher `launch(inputs, scalars, shape, out_shapes) -> tuple of
    arrays` (see that module for the contract). The generator writes its source into the on-disk kernel
    cache (`ember.core.kernel_cache`) and loads it from there, so every frame of a compiled call has a
    file and a line. `compile` may return None for a kernel it cannot generate; a backend without a
    generator runs the chain op by op, each op through its own kernel.

    The object declares `functions` (the registry vocabulary it computes well) and `reductions` (whether it
    generates row-wise reducing kernels; then `min_rows`, optional, is the fewest rows worth one: a
    generator with a thread per row leaves a whole sum to the backend's own kernels). It may also have
    `kernels`: {op name: kernel} for whole ops that compiled code runs with
    another kernel than eager code (an optimizer update as one compiled loop, whose compilation eager
    code should not wait for). Each is called as the backend's registered kernel is, `kernel(spec,
    *args)`, and returns NotImplemented for a call it does not take, which the registered kernel then
    runs. And `strided_bmm(spec, a, b)`: bmm (`spec` as bmm's) of operands that may be 4-d, their two
    leading dimensions both batch dimensions read with their own strides, so compiled code need not copy
    a transposed attention operand into contiguous memory first (ember/compiler/layout.py).
    """
