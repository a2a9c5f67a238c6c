"""Regenerate, or check, the command outputs quoted in README.md and docs/*.md.

    python docs/regenerate.py                  # rerun every marked command and rewrite its block
    python docs/regenerate.py --checked-only   # the same for the checked blocks only (skips timings)
    python docs/regenerate.py --check          # rerun the checked commands; exit 1 if a block differs
    python docs/regenerate.py --list           # list the marked blocks

`make docs` runs the first form. A quoted output is a fenced block right below a marker line: a
line that starts with `<!-- output`, an HTML comment (invisible when the Markdown is rendered)
naming the command:

    <!-- output: python -m ember.memory ember.testing.models:llama7b --batch 1 --seq 2048 -->
    ```
    $ python -m ember.memory ember.testing.models:llama7b --batch 1 --seq 2048
    model ember.testing.models:llama7b: 6,738,415,616 parameters, ...
    ```

The block holds `$ COMMAND` and then what the command printed, so the command a reader sees is
the one that was run. A marker with no fenced block below it gets one on the next regeneration.
Options go between `output` and the colon, separated by spaces (quote a value with single
quotes if it holds spaces or a colon):

    regenerate-only  the output depends on the machine or on timing (benchmark tables): it is
                     rewritten by a regeneration, never compared by --check, and the block starts
                     with a `# one run on ...` line naming the machine and its load
    mask=REGEX       every match of REGEX (of its first group, if it has groups) is written as
                     `…`, so a timing inside an otherwise deterministic output does not break the
                     check; may be repeated
    head=N, tail=N   quote only the first N and the last N lines; a `...` line marks the cut

Every other block is *checked*: its output must not depend on the machine, and tests/test_docs.py
fails when the quoted text differs from what the command prints now. Keep checked commands cheap
(a couple of seconds): the test runs each of them.

Commands run with bash (`-o pipefail`) in the repository root, with the directory of the Python
running this script first on PATH, so `python` in a marker is that interpreter (the .venv's, under
`make docs`). Only standard output is quoted; a command that fails stops the tool with its stderr.
"""
from __future__ import annotations

import argparse
import difflib
import os
import platform
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MASK = "…"
CUT = "..."

_OPTION = r"""[\w-]+(?:=(?:'[^']*'|"[^"]*"|[^\s:'"]+))?"""
_MARKER = re.compile(rf"^<!-- output((?:\s+{_OPTION})*)\s*:\s+(?P<command>.+?)\s*-->\s*$")
_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})[^`]*$")


class MarkerError(ValueError):
    """A marker that does not parse, or a fenced block that does not close."""


@dataclass
class Block:
    """One marked output: the command, its options, and where its fenced block sits in the file."""

    path: Path
    line: int                      # 1-based line number of the marker
    marker: str                    # the marker line itself
    command: str
    regenerate_only: bool = False
    masks: list[re.Pattern[str]] = field(default_factory=list)
    head: int | None = None
    tail: int | None = None
    start: int = 0                 # index of the first line inside the fence (0-based)
    end: int = 0                   # index of the closing fence line; start == end: empty or no block
    has_fence: bool = True
    quoted: str = ""               # the block's current text

    @property
    def where(self) -> str:
        return f"{_shown(self.path)}:{self.line}"

    @property
    def checked(self) -> bool:
        return not self.regenerate_only


def _shown(path: Path) -> str:
    """`path` relative to the repository root when it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def doc_files() -> list[Path]:
    """README.md and docs/*.md."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _parse_options(block: Block, text: str) -> None:
    for token in shlex.split(text):
        name, _, value = token.partition("=")
        if name == "regenerate-only" and not value:
            block.regenerate_only = True
        elif name == "mask" and value:
            try:
                block.masks.append(re.compile(value, re.MULTILINE))
            except re.error as e:
                raise MarkerError(f"{block.where}: mask {value!r} is not a regular expression: {e}") from None
        elif name in ("head", "tail") and value.isdigit():
            setattr(block, name, int(value))
        else:
            raise MarkerError(f"{block.where}: unknown marker option {token!r}")


def parse(path: Path, lines: list[str] | None = None) -> list[Block]:
    """The marked blocks of one Markdown file (lines without their newlines)."""
    if lines is None:
        lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    for i, text in enumerate(lines):
        if not text.startswith("<!-- output"):
            continue
        m = _MARKER.match(text)
        if m is None:
            raise MarkerError(f"{_shown(path)}:{i + 1}: malformed marker: {text}")
        block = Block(path, i + 1, text.strip(), m.group("command"))
        _parse_options(block, m.group(1))
        fence = _FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if fence is None:
            block.has_fence, block.start, block.end = False, i + 1, i + 1
        else:
            close = fence.group("fence")
            end = next((j for j in range(i + 2, len(lines))
                        if lines[j].rstrip().startswith(close) and set(lines[j].rstrip()) == {close[0]}), None)
            if end is None:
                raise MarkerError(f"{block.where}: the fenced block below the marker never closes")
            block.start, block.end = i + 2, end
            block.quoted = "\n".join(lines[block.start:end])
        blocks.append(block)
    return blocks


def all_blocks(paths: list[Path] | None = None) -> list[Block]:
    """The marked blocks of `paths` (default: README.md and docs/*.md), in file order."""
    return [b for p in (paths or doc_files()) for b in parse(p)]


def run(command: str, timeout: float | None = None) -> str:
    """Standard output of `command`, run by bash in the repository root with this Python first on PATH."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"`{command}` exited with status {proc.returncode}:\n{proc.stderr.strip()}")
    return proc.stdout


def _mask(pattern: re.Pattern[str], text: str) -> str:
    """`text` with each match of `pattern` (its first group, if it has groups) replaced by MASK."""
    def one(m: re.Match[str]) -> str:
        if not pattern.groups:
            return MASK
        s, e = m.span(1)
        return m.group(0)[:s - m.start()] + MASK + m.group(0)[e - m.start():]
    return pattern.sub(one, text)


def machine() -> str:
    """The processor, the cpus this process may use, the OS and the load: what a timing depends on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = f", load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
    return f"{cpu}, {cpus} cpus, {platform.system()} {platform.release()}{load}"


def render(block: Block, output: str, machine_line: str | None = None) -> str:
    """The block's text: the machine line (regenerate-only), `$ command`, then the output as quoted."""
    text = "\n".join(line.rstrip() for line in output.rstrip("\n").splitlines())
    for pattern in block.masks:
        text = _mask(pattern, text)
    lines = text.splitlines()
    head, tail = block.head, block.tail
    if (head is not None or tail is not None) and (head or 0) + (tail or 0) < len(lines):
        lines = lines[:head or 0] + [CUT] + (lines[len(lines) - tail:] if tail else [])
    first = [f"# one run on {machine_line}"] if block.regenerate_only and machine_line else []
    return "\n".join(first + [f"$ {block.command}"] + lines)


def diff(block: Block, new: str) -> str:
    """A unified diff from the quoted text to `new` ('' when they agree)."""
    return "".join(difflib.unified_diff((block.quoted + "\n").splitlines(keepends=True),
                                        (new + "\n").splitlines(keepends=True),
                                        f"{block.where} (quoted)", f"{block.where} (printed now)"))


def check(block: Block, timeout: float | None = 300) -> str:
    """The diff between a checked block and what its command prints now ('' when current)."""
    return diff(block, render(block, run(block.command, timeout)))


def regenerate(path: Path, checked_only: bool = False, timeout: float | None = 1800) -> list[str]:
    """Rerun the file's marked commands and write their outputs into it; returns the blocks changed.

    The file is read again once the commands have run (a benchmark takes minutes), so edits made
    meanwhile elsewhere in it are kept."""
    host = machine()
    outputs: dict[str, str] = {}
    for block in parse(path):
        if (checked_only and not block.checked) or block.marker in outputs:
            continue
        print(f"{block.where}: {block.command}", file=sys.stderr, flush=True)
        outputs[block.marker] = render(block, run(block.command, timeout), host)
    lines = path.read_text(encoding="utf-8").splitlines()
    new_lines: list[str] = []
    changed, pos = [], 0
    for block in parse(path, lines):
        if block.marker not in outputs:
            continue
        text = outputs[block.marker]
        fenced = text.splitlines() if block.has_fence else ["```", *text.splitlines(), "```"]
        new_lines += lines[pos:block.start] + fenced
        pos = block.end
        if text != block.quoted:
            changed.append(block.where)
    new_lines += lines[pos:]
    if changed:
        path.write_text("\n".join(new_lines) + "\n", encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Marker syntax: see the module docstring (docs/regenerate.py).")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare the checked blocks; write nothing")
    mode.add_argument("--checked-only", action="store_true", help="regenerate the checked blocks only")
    mode.add_argument("--list", action="store_true", help="list the marked blocks")
    parser.add_argument("files", nargs="*", type=Path, help="Markdown files (default: README.md, docs/*.md)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.files] or doc_files()
    try:
        if args.list:
            for b in all_blocks(paths):
                print(f"{b.where:<28} {'checked' if b.checked else 'regenerate-only':<16} {b.command}")
            return 0
        if args.check:
            stale = [d for b in all_blocks(paths) if b.checked for d in [check(b)] if d]
            for d in stale:
                print(d)
            print(f"{len(stale)} quoted output(s) out of date" + ("; run `make docs`" if stale else ""))
            return 1 if stale else 0
        for p in paths:
            for where in regenerate(p, checked_only=args.checked_only):
                print(f"updated {where}")
        return 0
    except (MarkerError, RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"{parser.prog}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
