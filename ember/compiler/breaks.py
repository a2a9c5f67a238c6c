"""Graph breaks: why a capture stopped, and the line of the program that made it stop."""
from __future__ import annotations

import traceback
from dataclasses import dataclass

from ember.utils.program_frames import innermost_program_line

__all__ = ["GraphBreakError", "GraphBreak", "program_line"]


class GraphBreakError(RuntimeError):
    """`fullgraph=True` and the program cannot be captured whole: the message names the reason and line."""


@dataclass(frozen=True)
class GraphBreak:
    """One graph break: `reason` in words, `where` the program line (`file:line`), `code` its text."""

    reason: str
    where: str
    code: str = ""

    def __str__(self) -> str:
        return f"{self.reason} ({self.where}{': ' + self.code if self.code else ''})"


def program_line(exc: BaseException) -> tuple[str, str]:
    """(`file:line`, source text) of the innermost frame of the program (not ember's, not the standard
    library's) where `exc` arose: in the traceback of the exception it was raised from first (a data
    read is re-raised with a clearer message, from a frame that no longer shows the read)."""
    for e in (exc.__cause__, exc.__context__, exc):
        if e is not None and e.__traceback__ is not None:
            found = innermost_program_line(traceback.walk_tb(e.__traceback__), outermost_first=True)
            if found is not None:
                return found
    return "", ""
