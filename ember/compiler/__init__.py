"""ember.compile: capture a program once, check what it depended on, run the captured graph.

    model = ember.compile(model)          # an OptimizedModule; model._orig_mod is the module
    step = ember.compile(train_step)      # a function wrapper

On the first call the callable is captured through the graph layer (ember.export's capture at the
dispatcher; capture.py) for the inputs it got, and the guards (guards.py) record what the capture
depended on: each tensor input's shape, dtype, device and requires_grad, the non-tensor inputs,
grad mode, autocast, the modules' training flags. A later call that passes the guards runs the
compiled graph (compiled.py); one that fails them compiles again (a *recompile*), up to
`recompile_limit`, after which the callable runs eagerly, with one warning. A size that changed
between compiles becomes a dynamic dimension (torch's automatic dynamic shapes); `dynamic=True`
makes every dimension dynamic from the start, `dynamic=False` never.

A branch on a tensor's truth (`if x.sum() > 0:`) is decided when captured and checked on every call
(branches.py; a call going the other way captures that variant once). Other code that reads a tensor's
values while it is captured (`.item()`, `.tolist()`, printing) is a *graph break* (breaks.py): inputs
of that kind run eagerly. Either counts as a break, and `fullgraph=True` raises `GraphBreakError`
naming the line. `explain(fn, *args)` reports graphs and breaks (explanation.py);
`EMBER_LOGS=recompiles,graph_breaks` prints them as they happen (logs.py).

A backend (backends.py) turns a captured graph into what runs: "eager" interprets it op by op
through the dispatcher; "aot_eager" runs the joint forward+backward capture op by op; the default
replays programs natively (native.py), in training as a joint forward+backward capture whose halves
run natively inside one autograd Function (joint.py), with chains of pointwise ops fused into kernels
the backend generates (fusion.py); a callable `backend(graph_module, example_inputs)` is called as
torch's custom backends are. Outputs carry grad_fn either way: `loss.backward()` and optimizers are
unchanged.

Only `compile` is imported with ember (it is `ember.compile`); the rest loads on first use.
"""
from .api import compile

__all__ = ["compile", "OptimizedModule", "GraphBreakError", "explain", "ExplainOutput", "reset", "list_backends"]

_LAZY = {"OptimizedModule": "optimized_module", "GraphBreakError": "breaks", "explain": "explanation",
         "ExplainOutput": "explanation", "reset": "compiled", "list_backends": "backends"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
