"""`python -m ember.memory MODULE:FACTORY --batch B [...]`: size one training step on meta.

Builds the model on the meta device, runs one step (forward, cross-entropy loss, backward,
optimizer step) under FlopCounterMode and ember.memory.track, and prints the parameter count,
FLOPs, the memory breakdown and the predicted peak (raw and through an allocator model).
With `--measure DEVICE` it runs the same step for real and prints the prediction error.

Inputs: with `--seq S`, token ids of shape (B, S) below the first nn.Embedding's vocabulary and
the same ids as targets (a language model); otherwise `--input-shape` (default: the first
nn.Linear's in_features) and random class targets below the output's last dimension.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time

import ember
from ember import nn

from .allocators import MODELS

_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}
_OPTIMIZERS = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ember.memory", description=__doc__.split("\n\n")[0])
    p.add_argument("factory", help="MODULE:FACTORY, a function returning an nn.Module (e.g. ember.testing.models:llama7b)")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--seq", type=int, default=None, help="sequence length: token-id inputs (language models)")
    p.add_argument("--input-shape", default=None, help="per-sample input shape, e.g. 1,28,28 (default: first Linear's in_features)")
    p.add_argument("--dtype", choices=sorted(_DTYPES), default="float32")
    p.add_argument("--optimizer", choices=sorted(_OPTIMIZERS), default="adamw")
    p.add_argument("--allocator", choices=MODELS, default="exact")
    p.add_argument("--json", default=None, help="write the record as JSON here")
    p.add_argument("--plot", default=None, help="write a timeline PNG here (needs matplotlib)")
    p.add_argument("--measure", default=None, metavar="DEVICE", help="also run for real on DEVICE and print the error")
    return p


def _load_factory(spec: str):
    if spec.count(":") != 1:
        raise SystemExit(f"python -m ember.memory: argument FACTORY must be MODULE:FACTORY, got {spec!r}")
    mod_name, fn_name = spec.split(":")
    try:
        fn = getattr(importlib.import_module(mod_name), fn_name)
    except (ImportError, AttributeError) as e:
        raise SystemExit(f"python -m ember.memory: cannot load factory {spec!r}: {e}") from None
    return fn


def _first(model, cls):
    return next((m for m in model.modules() if isinstance(m, cls)), None)


def _inputs(model, args, device):
    if args.seq is not None:
        emb = _first(model, nn.Embedding)
        if emb is None:
            raise SystemExit("python -m ember.memory: --seq needs a model with an nn.Embedding (token ids)")
        x = ember.randint(0, emb.num_embeddings, (args.batch, args.seq), device=device)
        return x, x.reshape(-1)
    if args.input_shape:
        shape = tuple(int(s) for s in args.input_shape.split(","))
    else:
        lin = _first(model, nn.Linear)
        if lin is None:
            raise SystemExit("python -m ember.memory: give --input-shape (the model has no nn.Linear to infer it from)")
        shape = (lin.in_features,)
    return ember.randn(args.batch, *shape, device=device, dtype=getattr(ember, _DTYPES[args.dtype])), None


def run_step(factory, args, device: str):
    """Build on `device`, run one training step under the tracker; returns (tracker, model, flops)."""
    from ember.utils.flop_counter import FlopCounterMode

    ember.manual_seed(0)
    with ember.device(device):
        model = factory()
    model = model.to(getattr(ember, _DTYPES[args.dtype]))
    opt = getattr(ember.optim, _OPTIMIZERS[args.optimizer])(model.parameters(), lr=1e-4)
    x, target = _inputs(model, args, device)
    flops = FlopCounterMode(display=False)
    with ember.memory.track(model=model, optimizer=opt, device=device) as mem, flops:
        out = model(x)
        out = out[0] if isinstance(out, tuple) else out
        logits = out.reshape(-1, out.shape[-1]).float()
        if target is None:
            target = ember.randint(0, out.shape[-1], (logits.shape[0],), device=device)
        loss = nn.functional.cross_entropy(logits, target)
        loss.backward()
        opt.step()
        opt.zero_grad()
    return mem, model, flops.get_total_flops()


def main(argv: list[str] | None = None) -> int:
    from .report import _fmt

    args = _parser().parse_args(argv)
    factory = _load_factory(args.factory)
    t0 = time.perf_counter()
    mem, model, flops = run_step(factory, args, "meta")
    seconds = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    sim = mem.simulate(args.allocator, device="meta")
    print(f"model {args.factory}: {n_params:,} parameters, dtype {args.dtype}, optimizer {args.optimizer}, "
          f"batch {args.batch}" + (f", seq {args.seq}" if args.seq else ""))
    print(f"FLOPs (one training step, ops with a formula): {flops:,}")
    print(mem.report())
    print(f"predicted peak: {mem.peak_bytes:,} bytes ({_fmt(mem.peak_bytes)}); allocator {args.allocator}: "
          f"peak allocated {sim['peak_allocated']:,}, peak reserved {sim['peak_reserved']:,} bytes "
          f"({_fmt(sim['peak_reserved'])}); {seconds:.1f} s")
    if args.json:
        mem.to_json(args.json)
    if args.plot:
        mem.plot(args.plot)
    if args.measure:
        real, _, _ = run_step(factory, args, args.measure)
        err = (mem.peak_bytes - real.peak_bytes) / real.peak_bytes
        print(f"measured on {args.measure}: peak {real.peak_bytes:,} bytes; prediction error {100 * err:+.3f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
