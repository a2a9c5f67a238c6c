"""Ember's exceptions, as users import them (`from ember.errors import ShapeError`).

Defined in `ember.core.errors`, the bottom layer every part of ember builds on; see there. Each
class also derives from the built-in exception PyTorch raises in the same situation.
"""
from ember.core.errors import *  # noqa: F401,F403
from ember.core.errors import __all__  # noqa: F401
