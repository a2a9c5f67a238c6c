"""The outputs README.md and docs/*.md quote are current, and the README's examples print what they say.

* Every output marker (docs/regenerate.py) parses; every block whose output does not depend on the
  machine is rerun and must equal the quoted text (`make docs` rewrites them). Blocks marked
  `regenerate-only` (timings) are only checked to have been generated.
* Each ```python block of README.md runs, and on every `print(...)  # value` line the comment is
  exactly what that print printed.
"""
from __future__ import annotations

import importlib.util
import io
import re
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_tool():
    spec = importlib.util.spec_from_file_location("docs_regenerate", ROOT / "docs" / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


regen = _load_tool()


def _blocks():
    try:
        return regen.all_blocks()
    except regen.MarkerError:
        return []                  # reported by test_every_marker_parses


BLOCKS = _blocks()


def test_every_marker_parses():
    blocks = regen.all_blocks()
    assert blocks, "no output markers found in README.md or docs/*.md"
    for block in blocks:
        lines = block.quoted.splitlines()
        if block.regenerate_only and lines[:1] and lines[0].startswith("# one run on "):
            lines = lines[1:]
        assert block.has_fence and lines[:1] == [f"$ {block.command}"] and len(lines) > 1, \
            f"{block.where}: the block below the marker was not generated from it; run `make docs`"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.checked], ids=lambda b: b.where)
def test_quoted_output_is_current(block):
    stale = regen.check(block, timeout=120)
    assert not stale, (f"{block.where} quotes an output that `{block.command}` no longer prints; "
                       f"run `make docs` (or `python docs/regenerate.py --checked-only`):\n{stale}")


def test_tool_writes_masks_cuts_and_checks(tmp_path):
    doc = tmp_path / "page.md"
    doc.write_text("text\n<!-- output mask='took ([0-9]+) s' head=1 tail=1: printf 'a\\nb\\ntook 12 s\\n' -->\nend\n")
    assert regen.regenerate(doc) == [f"{doc}:2"]
    assert doc.read_text() == ("text\n<!-- output mask='took ([0-9]+) s' head=1 tail=1: printf 'a\\nb\\ntook 12 s\\n' -->\n"
                               "```\n$ printf 'a\\nb\\ntook 12 s\\n'\na\n...\ntook … s\n```\nend\n")
    [block] = regen.parse(doc)
    assert block.checked and regen.check(block) == ""
    doc.write_text(doc.read_text().replace("\na\n", "\nz\n"))
    [block] = regen.parse(doc)
    assert "-z\n+a\n" in regen.check(block)
    assert regen.regenerate(doc) == [f"{doc}:2"] and regen.check(regen.parse(doc)[0]) == ""


def test_tool_rejects_a_malformed_marker(tmp_path):
    doc = tmp_path / "page.md"
    doc.write_text("<!-- output colour=red: echo hi -->\n")
    with pytest.raises(regen.MarkerError, match="unknown marker option"):
        regen.parse(doc)
    doc.write_text("<!-- output echo hi -->\n")
    with pytest.raises(regen.MarkerError, match="malformed marker"):
        regen.parse(doc)


# ------------------------------------------------------------------------ the README's examples
def _python_blocks(path: Path) -> list[tuple[int, str]]:
    """(line number of the first code line, source) of each ```python block."""
    lines, blocks = path.read_text(encoding="utf-8").splitlines(), []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            blocks.append((i + 2, "\n".join(lines[i + 1:end]) + "\n"))
            i = end
        i += 1
    return blocks


def _expected_prints(source: str) -> dict[int, str]:
    """{line: the comment} for each line that calls print and ends in a `# comment`."""
    lines = source.splitlines()
    return {tok.start[0]: tok.string[1:].strip()
            for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT and re.match(r"\s*print\(", lines[tok.start[0] - 1])}


README_BLOCKS = _python_blocks(ROOT / "README.md")


def test_readme_has_examples_with_printed_values():
    assert README_BLOCKS and all(_expected_prints(src) for _, src in README_BLOCKS)


@pytest.mark.parametrize("first_line, source", README_BLOCKS, ids=[f"README.md:{n}" for n, _ in README_BLOCKS])
def test_readme_example_prints_what_its_comments_say(first_line, source):
    printed: dict[int, list[str]] = {}

    def record(*args, sep=" ", end="\n", file=None, flush=False):
        printed.setdefault(sys._getframe(1).f_lineno, []).append(sep.join(map(str, args)))

    exec(compile(source, f"README.md:{first_line}", "exec"), {"__name__": "__readme__", "print": record})
    for line, want in _expected_prints(source).items():
        where = f"README.md:{first_line + line - 1}"
        assert line in printed, f"{where}: the print never ran"
        assert printed[line] == [want] * len(printed[line]), f"{where}: printed {printed[line]}, the comment says {want!r}"


# what a file in the repository must not hold: a link out of it (a web address, the folder above the
# checkout) or a reference to the project's tracker that a reader cannot follow
_OUTSIDE = re.compile(r"https?://|\.\./shared|DESIGN\.md")
_TRACKER = re.compile(r"\biss" + r"ue\s*#?\d+", re.IGNORECASE)


def test_no_file_links_outside_the_repository_or_names_a_tracker_issue():
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    found = []
    for name in listed.stdout.split("\0"):
        path = ROOT / name
        if not name or name.startswith("examples/data/") or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue                      # binary files
        for number, line in enumerate(text.splitlines(), 1):
            if _OUTSIDE.search(line) or _TRACKER.search(line):
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    assert not found, "\n".join(found)
