"""ember.utils.tensorboard: TensorBoard logging with torch.utils.tensorboard's `SummaryWriter`.

The event files are written by the `tensorboard` package (its protobufs and its event file
writer), an optional dependency: `pip install tensorboard` (or ember's `tensorboard` extra).
Importing this package without it raises ImportError saying so. `import ember` never imports
this package; it is imported on demand, as torch's is.
"""
from __future__ import annotations

try:
    import tensorboard  # noqa: F401
except ImportError as error:
    raise ImportError("ember.utils.tensorboard needs the tensorboard package, which is not installed: "
                      "pip install tensorboard (or pip install 'ember[tensorboard]')") from error

from .writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
