"""`ember.ops`: every registry op by name, as printed graphs write them (torch.ops.aten's role).

`ember.ops.add.Tensor` is the op `add.Tensor` (an `OpDef`: call it with its arguments positionally, in
schema order; trailing ones with a default may be left out, as with torch.ops.aten); `ember.ops.neg` is `neg`, an op without an overload name, itself; `ember.ops.add` is the
packet of add's overloads (`.Tensor`, `.Scalar`, ..., `.default` for the unnamed one, and
`.overloads()`). A graph's code (`GraphModule.code`, `print(exported_program)`) names its targets
this way, so what it prints can be called.
"""
from __future__ import annotations

from ember.dispatcher import ALL_OPS

__all__ = ["OverloadPacket"]


class OverloadPacket:
    """The overloads of one op name: `packet.<overload>`; calling the packet calls the unnamed overload."""

    def __init__(self, name: str, overloads: dict) -> None:
        self._name = name
        self._overloads = overloads

    def overloads(self) -> list[str]:
        return sorted(self._overloads)

    def __getattr__(self, overload: str):
        try:
            return self._overloads[overload]
        except KeyError:
            raise AttributeError(f"ember.ops.{self._name} has no overload {overload!r}; it has "
                                 f"{self.overloads()}") from None

    def __call__(self, *args):
        return self.default(*args)

    def __repr__(self) -> str:
        return f"<ember.ops.{self._name}: overloads {self.overloads()}>"


def _packets() -> dict[str, object]:
    grouped: dict[str, dict] = {}
    for full_name, op in ALL_OPS.items():
        base, _, overload = full_name.partition(".")
        grouped.setdefault(base, {})[overload or "default"] = op
    return {base: overloads["default"] if set(overloads) == {"default"} else OverloadPacket(base, overloads)
            for base, overloads in grouped.items()}


_PACKETS: dict | None = None


def __getattr__(name: str):
    global _PACKETS
    if _PACKETS is None:
        _PACKETS = _packets()
    try:
        return _PACKETS[name]
    except KeyError:
        raise AttributeError(f"ember.ops has no op {name!r}") from None


def __dir__() -> list[str]:
    return sorted(_packets())
