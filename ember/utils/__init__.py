"""ember.utils: torch.utils's counterparts (`ember.utils.data`)."""
from __future__ import annotations

from . import data  # noqa: F401
