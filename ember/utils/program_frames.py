"""The line of the user's program in a stack: where a shape guard or a graph break comes from.

A frame belongs to the program unless it runs ember or one of its plugins (a module named `ember...`)
or the standard library (contextlib's wrappers, say).
"""
from __future__ import annotations

import linecache
import os
import traceback
from typing import Iterable

__all__ = ["innermost_program_line"]

_STDLIB_DIR = os.path.dirname(os.path.abspath(traceback.__file__))


def innermost_program_line(frames: Iterable[tuple], outermost_first: bool) -> tuple[str, str] | None:
    """(`file:line`, the line's source text) of the innermost program frame among `frames` ((frame, line
    number) pairs, as traceback.walk_tb gives them outermost first and walk_stack innermost first), or None."""
    found = None
    for frame, line in frames:
        name = str(frame.f_globals.get("__name__", ""))
        if name.startswith("ember") or frame.f_code.co_filename.startswith(_STDLIB_DIR):
            continue
        found = (frame, line)
        if not outermost_first:
            break
    if found is None:
        return None
    frame, line = found
    return f"{frame.f_code.co_filename}:{line}", linecache.getline(frame.f_code.co_filename, line).strip()
