"""Whole objects in ember checkpoints (`ember.save(model)`), and the allow-list that decides which of them
loading may rebuild: torch's weights-only loading, `add_safe_globals` and the `safe_globals` context.

An object is saved as its class's importable name and its state (its `__getstate__()`, else its
`__dict__`), encoded like the rest of the checkpoint, and a function or class it refers to (a layer's
activation function) as its importable name. Loading rebuilds an object only when its class is on the
allow-list (`cls.__new__`, then `__setstate__` or the `__dict__` update, as pickle does), and looks a name
up only there: nothing is imported or called by name from the file, so a checkpoint still runs no code of
its own. The list is process-wide, as torch's: `add_safe_globals([...])` adds to it, `safe_globals([...])`
adds for the duration of a `with` block.
"""
from __future__ import annotations

import importlib
from typing import Any, Iterable

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "global_name", "resolve", "safe_globals"]

_SAFE: dict[str, Any] = {}       # "module:qualname" -> the allowed class or function


def global_name(obj: Any) -> str:
    """The importable name of a class or function, "module:qualname"; TypeError if it has none (a lambda, a
    local class) or if importing that name does not give `obj` back."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        raise TypeError(f"ember.save: cannot save {obj!r}: it has no importable name (a lambda or a local "
                        "definition)")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if found is not obj:
        raise TypeError(f"ember.save: cannot save {obj!r}: {module}.{qualname} does not name it")
    return f"{module}:{qualname}"


def add_safe_globals(objects: Iterable[Any]) -> None:
    """Allow loading to rebuild instances of these classes and to refer to these functions."""
    for obj in objects:
        obj = obj[0] if isinstance(obj, tuple) else obj          # torch also takes (object, name) pairs
        _SAFE[global_name(obj)] = obj


def get_safe_globals() -> list[Any]:
    return list(_SAFE.values())


def clear_safe_globals() -> None:
    _SAFE.clear()


class safe_globals:
    """A context in which loading may also rebuild the given classes and refer to the given functions."""

    def __init__(self, objects: Iterable[Any]) -> None:
        self.objects = list(objects)
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> "safe_globals":
        self._saved = dict(_SAFE)
        add_safe_globals(self.objects)
        return self

    def __exit__(self, *exc) -> None:
        _SAFE.clear()
        _SAFE.update(self._saved)


def resolve(name: str, fail) -> Any:
    """The allowed object of that name; `fail(reason)` (an exception) raised when it is not allowed."""
    if not isinstance(name, str) or name not in _SAFE:
        shown = name.replace(":", ".") if isinstance(name, str) else repr(name)
        raise fail(f"it holds {shown}, which is not an allowed global; if you trust the file, allow it with "
                   f"ember.serialization.add_safe_globals([{shown.rsplit('.', 1)[-1]}]) or within "
                   f"ember.serialization.safe_globals([...])")
    return _SAFE[name]


def state_of(obj: Any) -> Any:
    """What pickle would save of `obj`: its __getstate__(), or its __dict__."""
    getstate = getattr(type(obj), "__getstate__", None)
    if getstate is not None and getstate is not object.__getstate__:
        return obj.__getstate__()
    return obj.__dict__


def rebuild(cls: type, state: Any) -> Any:
    """An instance of `cls` holding `state`, without calling __init__ (as pickle does)."""
    obj = cls.__new__(cls)
    if hasattr(obj, "__setstate__"):
        obj.__setstate__(state)
    else:
        obj.__dict__.update(state)
    return obj
