"""What the examples share: choosing the device and a dependency-free progress bar.

Kept out of ember itself: a program chooses its device and draws its own progress; these
are the few lines every example would otherwise repeat.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO

import ember

#: the --device option's help, the same in every example
DEVICE_HELP = "auto (the accelerator: cuda or an OpenCL GPU, never an OpenCL driver on this CPU; else cpu), cpu, cuda, opencl, ..."


def pick_device(requested: str = "auto") -> ember.device:
    """`auto`: the accelerator (`ember.accelerator`: cuda, else another plugin's GPU-class device, never
    an OpenCL driver running on this same CPU such as PoCL), else cpu; anything else as given."""
    if requested != "auto":
        return ember.device(requested)
    return ember.accelerator.current_accelerator() or ember.device("cpu")


class ProgressBar:
    """`for batch in ProgressBar(loader, desc="epoch 1"):` draws `desc [#####.....] 12/23 loss 0.31 0.4s`.

    On a terminal the line is redrawn in place (at most every 0.1 s); elsewhere (a log
    file, CI) only the finished line is written, so logs stay readable. `set(loss=...)`
    adds values to the line.
    """

    def __init__(self, iterable, desc: str = "", total: int | None = None, width: int = 24,
                 stream: TextIO | None = None) -> None:
        self.iterable = iterable
        self.desc = desc
        self.total = total if total is not None else len(iterable)
        self.width = width
        self.stream = stream if stream is not None else sys.stderr
        self.values: dict[str, float] = {}
        self.count = 0
        self._start = self._drawn = 0.0

    def set(self, **values: float) -> None:
        """Show these values (e.g. the running loss) after the counter."""
        self.values.update(values)

    def line(self) -> str:
        done = self.count * self.width // max(self.total, 1)
        bar = "#" * done + "." * (self.width - done)
        shown = " ".join(f"{k} {v:.4f}" for k, v in self.values.items())
        elapsed = time.perf_counter() - self._start
        return f"{self.desc} [{bar}] {self.count}/{self.total} {shown} {elapsed:.1f}s".replace("  ", " ")

    def __iter__(self):
        tty = self.stream.isatty()
        self._start = time.perf_counter()
        for item in self.iterable:
            yield item
            self.count += 1
            now = time.perf_counter()
            if tty and (now - self._drawn > 0.1 or self.count == self.total):
                self.stream.write("\r" + self.line())
                self.stream.flush()
                self._drawn = now
        self.stream.write(("\r" if tty else "") + self.line() + "\n")
        self.stream.flush()
