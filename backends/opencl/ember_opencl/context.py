"""Platform and device choice: which OpenCL devices `opencl:0`, `opencl:1`, ... are.

`EMBER_OPENCL_DEVICE` selects them: a comma-separated list of selectors, each one of

    P:D      device D of platform P (indices as listed by `ember_opencl.devices(all=True)`)
    P        every device of platform P
    TEXT     every device whose "platform name / device name" contains TEXT (case-insensitive)
    gpu|cpu|accelerator   every device of that type

in that order, duplicates dropped: `EMBER_OPENCL_DEVICE=0:1`, `=pocl`, `=gpu,cpu`. Unset, ember
takes every GPU (and accelerator) of every platform, or, when there is none, every device
(PoCL's CPU device, say). `opencl` means `opencl:0`.

A chosen device must also compile: each is asked to build a one-line kernel when it is first
selected, and a device whose OpenCL compiler fails (a driver that does not know the host CPU,
say) is left out, its compiler's message becoming the plugin's unavailable reason
(`python -m ember info`), rather than failing later inside the first real kernel.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

ENV_DEVICE = "EMBER_OPENCL_DEVICE"


@dataclass
class DeviceInfo:
    """One OpenCL device: its ember index (None when not selected) and its OpenCL identity."""

    index: int | None
    platform_index: int
    device_index: int
    platform: str
    name: str
    type: str
    fp64: bool
    global_mem_size: int
    cl_device: Any = None

    @property
    def selector(self) -> str:
        return f"{self.platform_index}:{self.device_index}"

    def describe(self) -> str:
        return f"{self.name} ({self.platform}, {self.type}, {self.global_mem_size // 2**20} MiB)"


def _type_name(t: int) -> str:
    import pyopencl as cl

    for flag, name in ((cl.device_type.GPU, "gpu"), (cl.device_type.ACCELERATOR, "accelerator"),
                       (cl.device_type.CPU, "cpu")):
        if t & flag:
            return name
    return "other"


def _all_devices() -> list[DeviceInfo]:
    import pyopencl as cl

    found = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:            # no ICD / no platform at all
        return []
    for p_i, p in enumerate(platforms):
        try:
            devs = p.get_devices()
        except cl.Error:
            continue
        for d_i, d in enumerate(devs):
            found.append(DeviceInfo(None, p_i, d_i, p.name.strip(), d.name.strip(),
                                    _type_name(d.type),
                                    "cl_khr_fp64" in d.extensions, int(d.global_mem_size), d))
    return found


def select(spec: str | None, available: list[DeviceInfo]) -> list[DeviceInfo]:
    """The devices a selector string chooses (see the module docstring), in order."""
    if not spec or not spec.strip():
        gpus = [d for d in available if "gpu" in d.type or "accelerator" in d.type]
        return gpus or list(available)
    chosen: list[DeviceInfo] = []
    for part in (s.strip() for s in spec.split(",")):
        if not part:
            continue
        if part.replace(":", "").isdigit() and part.count(":") <= 1:
            if ":" in part:
                p, d = (int(x) for x in part.split(":"))
                hits = [x for x in available if x.platform_index == p and x.device_index == d]
            else:
                hits = [x for x in available if x.platform_index == int(part)]
        elif part.lower() in ("gpu", "cpu", "accelerator"):
            hits = [x for x in available if part.lower() in x.type]
        else:
            hits = [x for x in available if part.lower() in f"{x.platform} / {x.name}".lower()]
        if not hits:
            raise ValueError(f"{ENV_DEVICE}={spec!r}: selector {part!r} matches no OpenCL device "
                             f"(found: {', '.join(f'{x.selector} {x.platform} / {x.name}' for x in available) or 'none'})")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


#: built once per selected device; a driver that cannot compile this cannot run any of ember's kernels
PROBE_SOURCE = "__kernel void ember_probe(__global float *x) { x[get_global_id(0)] += 1.0f; }"


def compiler_error(context) -> str:
    """'' when the OpenCL compiler of `context`'s device builds `PROBE_SOURCE`, else its message."""
    import pyopencl as cl

    try:
        cl.Program(context, PROBE_SOURCE).build()
    except cl.Error as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.lower().startswith("error")]
        return "; ".join(errors) or (lines[-1] if lines else type(exc).__name__)
    return ""


class Device:
    """A selected device: its context, in-order queue and program cache."""

    def __init__(self, info: DeviceInfo) -> None:
        import pyopencl as cl

        self.info = info
        self.cl_device = info.cl_device
        self.context = cl.Context([info.cl_device])
        self.queue = cl.CommandQueue(self.context)
        self.programs: dict = {}
        self.max_wg = int(info.cl_device.max_work_group_size)
        self.lock = threading.Lock()           # program builds
        # A pyopencl Kernel keeps its arguments between set_args and the enqueue: two threads launching
        # the same kernel must not interleave the two (codegen.launch_nd holds this around both).
        self.launch_lock = threading.Lock()


_lock = threading.Lock()
_selected: list[Device] | None = None
_error: str = ""


def selected() -> list[Device]:
    """The selected devices (created once per process; empty when there is none)."""
    global _selected, _error
    if _selected is None:
        with _lock:
            if _selected is None:
                try:
                    infos = select(os.environ.get(ENV_DEVICE), _all_devices())
                except ValueError as exc:
                    _error = str(exc)
                    infos = []
                else:
                    if not infos:
                        _error = "no OpenCL platform/device found (install a driver, or PoCL with `pip install ./backends/opencl[pocl]` from ember's source tree)"
                devs, failed = [], []
                for info in infos:
                    dev = Device(info)
                    why = compiler_error(dev.context)
                    if why:
                        failed.append(f"{info.platform} / {info.name} cannot compile OpenCL kernels ({why})")
                        continue
                    info.index = len(devs)
                    devs.append(dev)
                if failed and not devs:
                    _error = "; ".join(failed)
                _selected = devs
    return _selected


def selection_error() -> str:
    selected()
    return _error


def device(index: int | None) -> Device:
    devs = selected()
    i = 0 if index is None else index
    if not 0 <= i < len(devs):
        raise IndexError(f"opencl:{i} does not exist: {len(devs)} OpenCL device(s) selected")
    return devs[i]


def devices(all: bool = False) -> list[DeviceInfo]:   # noqa: A002 - mirrors a flag
    """The selected devices (`opencl:N` is the N-th), or with `all=True` every device found."""
    if all:
        return _all_devices()
    return [d.info for d in selected()]
