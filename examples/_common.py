"""What the examples share: choosing the device and drawing progress (tqdm).

Kept out of ember itself: a program chooses its device and draws its own progress; these
are the few lines every example would otherwise repeat.
"""
from __future__ import annotations

import ember
from tqdm import tqdm

#: the --device option's help, the same in every example
DEVICE_HELP = "auto (the accelerator: cuda or an OpenCL GPU, never an OpenCL driver on this CPU; else cpu), cpu, cuda, opencl, ..."


def pick_device(requested: str = "auto") -> ember.device:
    """`auto`: the accelerator (`ember.accelerator`: cuda, else another plugin's GPU-class device, never
    an OpenCL driver running on this same CPU such as PoCL), else cpu; anything else as given."""
    if requested != "auto":
        return ember.device(requested)
    return ember.accelerator.current_accelerator() or ember.device("cpu")


def progress(iterable=None, desc: str = "", total: int | None = None, initial: int = 0, file=None,
             disable: bool = False) -> tqdm:
    """A tqdm progress bar over `iterable` (or updated by hand: `total`, `initial`), on stderr.

    Drawn only while the stream is a terminal (tqdm's `disable=None`) and not `disable`d, and
    cleared when done: the examples print their own one-line summaries (through `tqdm.write`, which
    keeps a live bar intact), which read the same on a terminal and in a log file or CI output.
    """
    return tqdm(iterable, desc=desc, total=total, initial=initial, file=file, leave=False,
                disable=True if disable else None, dynamic_ncols=True)
