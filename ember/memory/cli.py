"""`python -m ember.memory MODULE:FACTORY --batch B [...]`: size one training step on meta.

Builds the model on the meta device, runs one step (forward, cross-entropy loss, backward,
optimizer step) under FlopCounterMode and ember.memory.track, and prints the parameter count,
FLOPs, the memory breakdown, the closed-form model-state bytes it should agree with, and the
predicted peak (raw and through an allocator model). With `--measure DEVICE` it runs the same
step for real and prints the prediction error.

Inputs: with `--seq S`, token ids of shape (B, S) below the first nn.Embedding's vocabulary and
the same ids as targets (a language model); otherwise `--input-shape` (default: the first
nn.Linear's in_features) and random class targets below the output's last dimension.

`--amp float16|bfloat16`: mixed precision as PyTorch's recipe has it: float32 parameters, the
forward and the loss under `ember.autocast(device, dtype)`, and (float16 only) a GradScaler
scaling the loss, unscaling the gradients and checking them for inf/NaN before the step.

`python -m ember.memory audit [--device D] [--ops OP ...]`: measure every native kernel's scratch on a
device against what its backend declares (ember/memory/audit.py); exit status 1 when any differs.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time

import ember
from ember import nn

from .allocators import MODELS

_DTYPES = ("float32", "bfloat16", "float16")
_OPTIMIZERS = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW"}
_PROG = "python -m ember.memory"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=_PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("factory", help="MODULE:FACTORY, a function returning an nn.Module (e.g. ember.testing.models:llama7b)")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--seq", type=int, default=None, help="sequence length: token-id inputs (language models)")
    p.add_argument("--input-shape", default=None, help="per-sample input shape, e.g. 1,28,28 (default: first Linear's in_features)")
    p.add_argument("--dtype", choices=_DTYPES, default="float32", help="parameter dtype (float32 with --amp)")
    p.add_argument("--amp", choices=_DTYPES[1:], default=None,
                   help="autocast dtype: float32 parameters, forward under autocast, GradScaler for float16")
    p.add_argument("--optimizer", choices=sorted(_OPTIMIZERS), default="adamw")
    p.add_argument("--allocator", choices=MODELS, default="exact")
    p.add_argument("--json", default=None, help="write the record as JSON here")
    p.add_argument("--plot", default=None, help="write a timeline PNG here (needs matplotlib: pip install ember[plot])")
    p.add_argument("--measure", default=None, metavar="DEVICE", help="also run for real on DEVICE and print the error")
    p.add_argument("--target", default=None, metavar="DEVICE",
                   help="predict for DEVICE's kernels: the scratch its plugin declares is added "
                        "(default: the --measure device, else cpu)")
    return p


def _load_factory(spec: str):
    if spec.count(":") != 1:
        raise SystemExit(f"{_PROG}: argument FACTORY must be MODULE:FACTORY, got {spec!r}")
    mod_name, fn_name = spec.split(":")
    try:
        fn = getattr(importlib.import_module(mod_name), fn_name)
    except (ImportError, AttributeError) as e:
        raise SystemExit(f"{_PROG}: cannot load factory {spec!r}: {e}") from None
    return fn


def _first(model, cls):
    return next((m for m in model.modules() if isinstance(m, cls)), None)


def _inputs(model, args, device):
    if args.seq is not None:
        emb = _first(model, nn.Embedding)
        if emb is None:
            raise SystemExit(f"{_PROG}: --seq needs a model with an nn.Embedding (token ids)")
        x = ember.randint(0, emb.num_embeddings, (args.batch, args.seq), device=device)
        return x, x.reshape(-1)
    if args.input_shape:
        shape = tuple(int(s) for s in args.input_shape.split(","))
    else:
        lin = _first(model, nn.Linear)
        if lin is None:
            raise SystemExit(f"{_PROG}: give --input-shape (the model has no nn.Linear to infer it from)")
        shape = (lin.in_features,)
    return ember.randn(args.batch, *shape, device=device, dtype=getattr(ember, args.dtype)), None


_PHASES = ("build", "forward", "backward", "optimizer step")


def _progress(desc: str):
    """A tqdm bar over the step's phases on stderr, drawn only on a terminal and cleared when done
    (a big model's step on meta takes seconds; on a real device much longer)."""
    from tqdm import tqdm

    return tqdm(total=len(_PHASES), desc=desc, unit="phase", leave=False, file=sys.stderr, disable=None,
                bar_format="{desc}: {n}/{total} {bar} {postfix}")


def run_step(factory, args, device: str, progress: bool = False):
    """Build on `device`, run one training step under the tracker; returns (tracker, model, optimizer, flops).

    The tracker records every device (not only `device`): the optimizers' `step` counters are
    0-d float32 cpu tensors whatever the parameters' device, as in PyTorch, and belong to the
    optimizer state a run holds. `simulate(..., device=)` replays one device's events only.
    `progress`: show the phases as they run (on a terminal)."""
    if not progress:
        return _run_step(factory, args, device, lambda: None)
    with _progress(f"{args.factory} on {device}") as bar:
        phases = iter(_PHASES)

        def phase_done() -> None:
            bar.update()
            bar.set_postfix_str(next(phases, ""))

        bar.set_postfix_str(next(phases))
        return _run_step(factory, args, device, phase_done)


def _run_step(factory, args, device: str, phase_done):
    from ember.utils.flop_counter import FlopCounterMode

    ember.manual_seed(0)
    with ember.device(device):
        model = factory()
    model = model.to(getattr(ember, args.dtype))
    phase_done()
    opt = getattr(ember.optim, _OPTIMIZERS[args.optimizer])(model.parameters(), lr=1e-4)
    x, target = _inputs(model, args, device)
    amp = getattr(ember, args.amp) if args.amp else None
    dev_type = ember.device(device).type
    scaler = ember.amp.GradScaler(dev_type) if amp is ember.float16 else None
    flops = FlopCounterMode(display=False)
    predict_for = (args.target or args.measure) if device == "meta" else None
    with ember.memory.track(model=model, optimizer=opt, target=predict_for) as mem, flops:
        with ember.autocast(dev_type, dtype=amp, enabled=amp is not None):
            out = model(x)
            out = out[0] if isinstance(out, tuple) else out
            logits = out.reshape(-1, out.shape[-1]).float()
            if target is None:
                target = ember.randint(0, out.shape[-1], (logits.shape[0],), device=device)
            loss = nn.functional.cross_entropy(logits, target)
        phase_done()
        if scaler is None:
            loss.backward()
            phase_done()
            opt.step()
        else:
            scaler.scale(loss).backward()
            phase_done()
            scaler.step(opt)
            scaler.update()
        opt.zero_grad()
        phase_done()
    return mem, model, opt, flops.get_total_flops()


def closed_form(model, optimizer: str) -> dict[str, int]:
    """Model-state bytes a training step must hold, from the parameter count alone: parameters and
    gradients P x itemsize each; Adam/AdamW two moments (2 x P x itemsize) plus one 0-d float32
    `step` counter per parameter tensor (4 bytes each, on the host); plain SGD (no momentum) none."""
    params = list(model.parameters())
    per_dtype: dict = {}
    for p in params:
        per_dtype[p.dtype] = per_dtype.get(p.dtype, 0) + p.numel()
    state_bytes = sum(n * dt.itemsize for dt, n in per_dtype.items())
    opt_state = 2 * state_bytes + 4 * len(params) if optimizer in ("adam", "adamw") else 0
    return {"parameters": state_bytes, "gradients": state_bytes, "optimizer_state": opt_state}


def audit_main(argv: list[str]) -> int:
    from .audit import WORKLOADS, audit

    p = argparse.ArgumentParser(prog=f"{_PROG} audit", description="Every native kernel's scratch on DEVICE "
                                "against its backend's declaration (Backend.workspace).")
    p.add_argument("--device", default="cpu")
    p.add_argument("--ops", nargs="*", default=None, help="only these ops' samples (default: all, and training steps)")
    p.add_argument("--dtypes", default="float32,float16,int64,bool", help="comma-separated sample dtypes")
    p.add_argument("--per-op", type=int, default=2, help="samples per op and dtype")
    p.add_argument("--workloads", default=WORKLOADS, help="MODULE:FUNCTION yielding the workloads")
    args = p.parse_args(argv)
    result = audit(args.device, args.ops, tuple(args.dtypes.split(",")), args.per_op, args.workloads)
    print(result.report())
    return 1 if result.failures else 0


def main(argv: list[str] | None = None) -> int:
    from .report import _fmt

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["audit"]:
        return audit_main(argv[1:])
    args = _parser().parse_args(argv)
    if args.amp and args.dtype != "float32":
        raise SystemExit(f"{_PROG}: --amp {args.amp} keeps float32 parameters (PyTorch's AMP recipe); "
                         f"got --dtype {args.dtype}: drop --dtype or --amp")
    factory = _load_factory(args.factory)
    t0 = time.perf_counter()
    mem, model, _, flops = run_step(factory, args, "meta", progress=True)
    seconds = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    sim = mem.simulate(args.allocator, device="meta")
    print(f"model {args.factory}: {n_params:,} parameters, dtype {args.dtype}"
          + (f", autocast {args.amp}" + (" + GradScaler" if args.amp == "float16" else "") if args.amp else "")
          + f", optimizer {args.optimizer}, batch {args.batch}" + (f", seq {args.seq}" if args.seq else ""))
    print(f"FLOPs (one training step, ops with a formula): {flops:,}")
    print(mem.report())
    print("\nmodel state, closed form (P = parameter count, b = bytes per element) vs the breakdown's max:")
    b = mem.breakdown
    for cat, want in closed_form(model, args.optimizer).items():
        got = b[cat]["max"]
        verdict = "agrees" if got == want else f"differs by {got - want:+,} bytes"
        print(f"  {cat:<16}{want:>22,} bytes  breakdown {got:>22,}  {verdict}")
    print(f"\npredicted peak: {mem.peak_bytes:,} bytes ({_fmt(mem.peak_bytes)}); allocator {args.allocator} "
          f"(device storages): peak allocated {sim['peak_allocated']:,}, peak reserved {sim['peak_reserved']:,} "
          f"bytes ({_fmt(sim['peak_reserved'])}); {seconds:.1f} s")
    if args.json:
        mem.to_json(args.json)
    if args.plot:
        mem.plot(args.plot)
    if args.measure:
        real, _, _, _ = run_step(factory, args, args.measure, progress=True)
        err = (mem.peak_bytes - real.peak_bytes) / real.peak_bytes
        print(f"measured on {args.measure}: peak {real.peak_bytes:,} bytes; prediction error {100 * err:+.3f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
