"""`Proxy`: the value a symbolic trace passes through a program in place of each tensor.

A proxy holds the graph node that produced it. Every operation on it records a node and
returns a new proxy: ember functions reach `Proxy.__torch_function__` (call_function), Python
operators record `operator.<op>` calls, method calls (`x.view(...)`) record call_method nodes,
attribute reads (`x.shape`) record `getattr` calls. A proxy has no value, so Python control
flow on it cannot be traced: `bool(proxy)` raises `TraceError`, as torch.fx's does; unpacking
(`b, t, c = x.size()`) works when the unpacking target says how many values it wants.
"""
from __future__ import annotations

import dis
import operator
import sys
from typing import Any

from .node import Node

__all__ = ["Proxy", "Attribute", "TraceError"]


class TraceError(ValueError):
    """A program does what a symbolic trace cannot follow (control flow on a traced value)."""


class Proxy:
    def __init__(self, node: Node, tracer) -> None:
        self.node = node
        self.tracer = tracer

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        tracer = _tracer_of((args, kwargs))
        return tracer.create_proxy("call_function", func, args, kwargs or {})

    def __getattr__(self, name: str) -> "Attribute":
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Attribute(self, name)

    def __call__(self, *args, **kwargs) -> "Proxy":
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __bool__(self) -> bool:
        raise TraceError(f"symbolically traced variables cannot be used as inputs to control flow (the value of "
                         f"{self.node.name} is not known while tracing)")

    def __len__(self) -> int:
        raise TraceError(f"'len' is not supported in symbolic tracing by default ({self.node.name}); trace with "
                         "concrete_args or mark the module a leaf")

    def __iter__(self):
        count = _unpack_count(sys._getframe(1))
        if count is None:
            raise TraceError(f"Proxy object cannot be iterated ({self.node.name}): only unpacking into a fixed number "
                             "of names is traced")
        return iter([self[i] for i in range(count)])

    def __index__(self) -> int:
        raise TraceError(f"{self.node.name} is used as a Python int; its value is not known while tracing")


class Attribute(Proxy):
    """`proxy.name`: a getattr node when used as a value, a call_method node when called."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _tracer_of(value) -> Any:
    found = []

    def visit(v):
        if isinstance(v, Proxy):
            found.append(v.tracer)
        elif isinstance(v, (list, tuple)):
            for e in v:
                visit(e)
        elif isinstance(v, dict):
            for e in v.values():
                visit(e)
    visit(value)
    return found[0]


def _unpack_count(frame) -> int | None:
    """How many values the running instruction unpacks (`a, b = proxy` iterates the proxy from inside
    UNPACK_SEQUENCE), if it is one."""
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            return inst.argval if inst.opname == "UNPACK_SEQUENCE" else None
    return None


def _binary(op):
    def forward(self, other):
        return self.tracer.create_proxy("call_function", op, (self, other), {})

    def reflected(self, other):
        return self.tracer.create_proxy("call_function", op, (other, self), {})
    return forward, reflected


for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv), ("mod", operator.mod),
                   ("pow", operator.pow), ("matmul", operator.matmul), ("and", operator.and_),
                   ("or", operator.or_), ("xor", operator.xor), ("lshift", operator.lshift),
                   ("rshift", operator.rshift)):
    _forward, _reflected = _binary(_op)
    setattr(Proxy, f"__{_name}__", _forward)
    setattr(Proxy, f"__r{_name}__", _reflected)

for _name, _op in (("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt), ("le", operator.le),
                   ("gt", operator.gt), ("ge", operator.ge), ("getitem", operator.getitem)):
    setattr(Proxy, f"__{_name}__", _binary(_op)[0])

for _name, _op in (("neg", operator.neg), ("pos", operator.pos), ("invert", operator.invert), ("abs", abs)):
    setattr(Proxy, f"__{_name}__", lambda self, _op=_op: self.tracer.create_proxy("call_function", _op, (self,), {}))

Proxy.__hash__ = object.__hash__
