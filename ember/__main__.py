"""`python -m ember info [--ops] [--json]`: installed backends and their state."""
from __future__ import annotations

import argparse
import json
import sys


def _info(args) -> int:
    import ember
    from ember.dispatcher import primitive_ops
    from ember.dispatcher.coverage import coverage_matrix

    rows = ember.backends.status()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"ember {ember.__version__} ({len(ember.dispatcher.ALL_OPS)} ops, {len(primitive_ops())} primitive)")
    print("backend plugins:")
    for r in rows:
        line = f"  {r['name']:<10} {r['state']:<12}"
        if r["state"] == "available":
            line += f" {len(r['devices'])} device(s): {'; '.join(r['devices'])}  [{r['kernels']} kernels]"
        else:
            line += f" {r['reason']}"
        print(line)
    if args.ops:
        names = [r["name"] for r in rows if r["state"] == "available"]
        matrix = coverage_matrix(names)
        print("\nop coverage (native / explicit / decomposed / fallback / missing):")
        print(f"  {'op':<24}" + "".join(f"{n:<12}" for n in names))
        for op, row in sorted(matrix.items()):
            print(f"  {op:<24}" + "".join(f"{row.get(n, '?'):<12}" for n in names))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="list backend plugins: available / unavailable (reason) / broken (error)")
    info.add_argument("--ops", action="store_true", help="also print the op coverage matrix per backend")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    if args.command == "info":
        return _info(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
