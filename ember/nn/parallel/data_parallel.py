"""DataParallel on one device: the wrapper torch programs put around a model, running it as is.

torch's DataParallel splits each batch across the GPUs of one process; ember's runs the module on
its single device (a cpu, opencl or one cuda device), so programs written for it run unchanged.
For several devices or processes, DistributedDataParallel is the tool (as torch recommends too).
"""
from __future__ import annotations

from ember.nn.modules.module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """torch.nn.DataParallel for one device: `forward` calls the wrapped module. For a module on an
    accelerator `device_ids` may name at most one device (None: the module's own); for a cpu module
    they are ignored, as torch ignores them without GPUs."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        ids = [] if device_ids is None else [getattr(d, "index", d) for d in device_ids]
        on_accelerator = any(p.device.type not in ("cpu", "meta") for p in module.parameters())
        if not on_accelerator:
            ids = []                # as torch on a machine without its GPUs: device_ids do not apply
        elif len(ids) > 1:
            raise ValueError(f"DataParallel: ember runs a DataParallel module on one device, got device_ids {ids}; "
                             "use DistributedDataParallel (one process per device) to train on several")
        self.module = module
        self.device_ids = ids
        self.output_device = output_device if output_device is not None else (ids[0] if ids else None)
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
