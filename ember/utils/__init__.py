"""ember.utils: torch.utils's counterparts (`ember.utils.data`; `ember.utils.flop_counter` and
`ember.utils.module_tracker` are imported on demand, as torch's)."""
from __future__ import annotations

from . import data  # noqa: F401
