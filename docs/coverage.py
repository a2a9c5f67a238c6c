"""Which of PyTorch's torch.nn, torch.optim, torch.optim.lr_scheduler and torch.distributions classes ember
has, read from both libraries; docs/coverage.md quotes its output (docs/regenerate.py).

    python docs/coverage.py

Every torch class ember lacks must have its reason in MISSING below; the command fails naming any
that has none (a class torch adds shows up here, and tests/test_docs.py fails, until it is given a
reason or built), and naming any reason whose class ember now has.
"""
from __future__ import annotations

import inspect
import sys

DISTRIBUTIONS = "not built yet"
SPECIAL = "not built yet (ember has the special functions and gamma draws it needs)"

MISSING: dict[str, str] = {
    # torch.nn
    "nn.AdaptiveLogSoftmaxWithLoss": "not built yet",
    "nn.Container": "deprecated in torch (an nn.Module holding submodules by keyword); nn.Module does that",
    "nn.CrossMapLRN2d": "not built yet (LocalResponseNorm's legacy twin, computed by a different formula)",
    "nn.SyncBatchNorm": "not built yet (ember.distributed has the collectives it needs)",
    "nn.LinearCrossEntropyLoss": "not built yet (a fused linear layer and cross entropy)",
    "nn.NLLLoss2d": "deprecated in torch: NLLLoss takes (N, C, H, W) input",
    # torch.distributions
    **{f"distributions.{name}": SPECIAL for name in (
        "FisherSnedecor", "InverseGamma", "Kumaraswamy", "VonMises", "Weibull")},
    # torch.optim
    "optim.Adafactor": "not built yet",
    "optim.Muon": "not built yet",
    "optim.SparseAdam": "ember has no sparse gradients yet",
}


def _classes(module, base) -> list[str]:
    return sorted(n for n, v in vars(module).items()
                  if not n.startswith("_") and inspect.isclass(v) and issubclass(v, base) and v is not base)


def namespaces():
    """(title, prefix, torch's class names, the ember module) per namespace."""
    import torch
    import torch.distributions

    import ember

    return [("torch.nn (modules)", "nn", _classes(torch.nn, torch.nn.Module), ember.nn),
            ("torch.optim", "optim", _classes(torch.optim, torch.optim.Optimizer), ember.optim),
            ("torch.optim.lr_scheduler", "optim.lr_scheduler",
             _classes(torch.optim.lr_scheduler, torch.optim.lr_scheduler.LRScheduler), ember.optim.lr_scheduler),
            ("torch.distributions", "distributions",
             _classes(torch.distributions, torch.distributions.Distribution), getattr(ember, "distributions", None))]


def main() -> int:
    problems = []
    for title, prefix, names, module in namespaces():
        have = [n for n in names if module is not None and hasattr(module, n)]
        lacking = [n for n in names if n not in have]
        print(f"## {title}: {len(have)} of {len(names)}\n")
        print("Present: " + (", ".join(f"`{n}`" for n in have) or "none") + ".\n")
        if lacking:
            print("| missing | why |\n|---|---|")
            for n in lacking:
                key = f"{prefix}.{n}"
                reason = MISSING.get(key, DISTRIBUTIONS if prefix == "distributions" else None)
                if reason is None:
                    problems.append(f"{key} is missing and has no reason in docs/coverage.py's MISSING")
                print(f"| `{n}` | {reason} |")
            print()
        problems += [f"{key} has a reason in MISSING but ember has it" for key in MISSING
                     if key.rsplit(".", 1)[0] == prefix and key.rsplit(".", 1)[1] in have]
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
