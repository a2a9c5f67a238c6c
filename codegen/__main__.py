"""`python -m codegen [--check]`: regenerate ember/_generated/, ember/dispatcher/_generated/ and docs/ops.md.

With --check nothing is written; the exit status is 1 when any generated file differs
from what the registry produces (CI runs this so stale output cannot land).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from .gen_call_path import gen_dispatch_module, gen_recorders, gen_unwrap_module
from .gen_docs import gen_ops_md
from .gen_backward import gen_backward
from .gen_python import gen_autocast_table, gen_functions, gen_op_table, gen_tensor_methods
from .gen_stubs import gen_pyi
from .registry import ROOT, RegistryError, SourceIndex, check_sparse_kernels, load_registry

GENERATED = ROOT / "ember" / "_generated"
# the dispatcher's own generated modules: the dispatcher layer imports nothing of ember/_generated/
DISPATCHER_GENERATED = ROOT / "ember" / "dispatcher" / "_generated"


def python_outputs(registry, sources) -> dict[Path, str]:
    return {
        GENERATED / "__init__.py": '"""Files generated from ops_registry.yaml by `python -m codegen`."""\n',
        GENERATED / "op_table.py": gen_op_table(registry),
        GENERATED / "autocast_policy.py": gen_autocast_table(registry),
        GENERATED / "functions.py": gen_functions(registry),
        GENERATED / "tensor_methods.py": gen_tensor_methods(registry),
        GENERATED / "backward.py": gen_backward(registry, sources.formula_helpers),
        GENERATED / "recorders.py": gen_recorders(registry),
        DISPATCHER_GENERATED / "__init__.py": '"""The dispatcher\'s per-call functions, generated from ops_registry.yaml by '
                                             '`python -m codegen`."""\n',
        DISPATCHER_GENERATED / "dispatchers.py": gen_dispatch_module(registry),
        DISPATCHER_GENERATED / "unwraps.py": gen_unwrap_module(registry),
        GENERATED / "functions.pyi": gen_pyi(registry, methods=False),
        GENERATED / "tensor_methods.pyi": gen_pyi(registry, methods=True),
    }


def coverage() -> dict:
    """Ask a fresh interpreter (importing the generated code) how each op runs per backend."""
    proc = subprocess.run([sys.executable, "-m", "codegen.coverage_probe"], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode:
        raise SystemExit(f"codegen: computing the coverage matrix failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if generated files are stale; write nothing")
    args = parser.parse_args(argv)
    try:
        sources = SourceIndex.scan()
        registry = load_registry(sources=sources)
        check_sparse_kernels(registry, sources)
    except RegistryError as exc:
        print(f"codegen: {exc}", file=sys.stderr)
        return 2
    outputs = python_outputs(registry, sources)
    stale = [p for p, text in outputs.items() if not p.exists() or p.read_text() != text]
    if args.check and stale:
        for p in stale:
            print(f"codegen: stale: {p.relative_to(ROOT)}", file=sys.stderr)
        print("codegen: run `python -m codegen` and commit the result", file=sys.stderr)
        return 1
    if not args.check:
        GENERATED.mkdir(parents=True, exist_ok=True)
        DISPATCHER_GENERATED.mkdir(parents=True, exist_ok=True)
        for p, text in outputs.items():
            if not p.exists() or p.read_text() != text:
                p.write_text(text)
    docs = ROOT / "docs" / "ops.md"
    text = gen_ops_md(registry, coverage())
    if args.check:
        if not docs.exists() or docs.read_text() != text:
            print(f"codegen: stale: {docs.relative_to(ROOT)}", file=sys.stderr)
            return 1
        print(f"codegen: {len(outputs) + 1} generated files are fresh ({len(registry.ops)} ops)")
        return 0
    docs.parent.mkdir(exist_ok=True)
    docs.write_text(text)
    print(f"codegen: wrote {len(outputs) + 1} files for {len(registry.ops)} ops")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
