"""Checks of a pickle made before it is unpickled: its opcodes are parsed, never run.

`scan_pickle` walks one pickle's opcodes (with `pickletools`' opcode table, reading arguments the
way the unpickler does) and refuses, with `CheckpointError`, what would harm the process before
any later check could run:

* memo indices a pickler could not have written: the C unpickler grows its memo list up to the
  index, so one opcode could ask for gigabytes;
* objects nested more than `_MAX_DEPTH` deep: hashing a tuple hashes its items recursively in C,
  so a deep enough tuple used as a dict key or set member overflows the C stack;
* STRING opcodes with escapes a pickler never writes (decoding them warns);
* length claims past the end of the stream (reads are capped at what is left, so a claim of
  2**45 bytes is refused rather than allocated).

`ember.torch_unpickler` runs it before its allow-list unpickler reads the same bytes.
"""
from __future__ import annotations

import codecs
import io
import pickletools
import re
import struct
from typing import Any, BinaryIO, Iterator

from ember.serialization import _MAX_DEPTH, CheckpointError, _fail


_OPCODES = {op.code.encode("latin-1"): op for op in pickletools.opcodes}
_MEMO_PUTS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_MEMO_GETS = frozenset({"GET", "BINGET", "LONG_BINGET"})
# Opcodes that change the container below their arguments and leave it on the stack.
_IN_PLACE = frozenset({"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"})
# An escape sequence of a STRING opcode's argument, as `codecs.escape_decode` reads them, left to right.
_ESCAPE = re.compile(rb"\\([0-7]{1,3}|[\s\S]?)")
_SIMPLE_ESCAPES = frozenset(b"\n\\'\"abfnrtvx")
_OCTAL = frozenset(b"01234567")
_BIG_READ = 1 << 16


def read_fully(stream: BinaryIO, n: int) -> bytes:
    """`n` bytes of `stream`, fewer only at its end (a raw stream's read may return less than asked)."""
    data = stream.read(n)
    if len(data) >= n or not data:
        return data
    parts, got = [data], len(data)
    while got < n:
        more = stream.read(n - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


class _ScanReader:
    """The stream as the opcode walk reads it. `read(n)` returns at most the bytes left in the
    stream: an argument's length comes from the file, and a `BufferedReader` allocates the `n`
    bytes asked for before reading (a BINBYTES8 claiming 2**45 bytes would raise MemoryError)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.tell = stream.tell
        self.readline = stream.readline
        start = stream.tell()
        stream.seek(0, io.SEEK_END)
        self.end = stream.tell()
        stream.seek(start)

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0 or n > _BIG_READ:
            left = max(0, self.end - self.stream.tell())
            n = left if n is None or n < 0 else min(n, left)
        data = self.stream.read(n)
        if 0 < len(data) < n:                   # a short read before the end
            data += read_fully(self.stream, n - len(data))
        return data


def _check_escapes(raw: bytes, pos: int) -> str:
    """A STRING opcode's argument (within its quotes), decoded; refused if it has an escape
    sequence that decoding it (here and in the unpickler) would warn of: an unknown escape, or
    an octal one above 0o377. Python 2's pickler writes none."""
    for m in _ESCAPE.finditer(raw):
        esc = m.group(1)
        if not esc or esc[0] in _SIMPLE_ESCAPES or esc[0] in _OCTAL and int(esc, 8) <= 0o377:
            continue                 # (a trailing backslash or a bad \x escape fails to decode: malformed)
        raise _fail(f"the pickle's STRING at byte {pos} has the invalid escape sequence {m.group(0)!r}")
    return codecs.escape_decode(raw)[0].decode("ascii")


def _line(f: _ScanReader) -> bytes:
    """A GLOBAL, INST or PERSID line, not decoded: `pickletools` would undo escape sequences in
    it (and warn of invalid ones), which the unpickler does not."""
    return pickletools.read_stringnl(f, decode=False, stripquotes=False)


def _opcodes(f: _ScanReader) -> Iterator[tuple[pickletools.OpcodeInfo, Any, int]]:
    """`pickletools.genops` (opcode, argument, position), except that a STRING's argument is
    checked by `_check_escapes` before it is decoded and GLOBAL, INST and PERSID lines are not
    decoded: decoding warns of nothing, so no warning filter needs changing."""
    while True:
        pos = f.tell()
        code = f.read(1)
        op = _OPCODES.get(code)
        if op is None:
            raise ValueError(f"opcode {code!r} at byte {pos} unknown" if code else "the pickle ends before its STOP")
        kind = op.arg
        if kind is None:
            arg = None
        elif kind is pickletools.stringnl:
            arg = _check_escapes(pickletools.read_stringnl(f, decode=False), pos)
        elif kind is pickletools.stringnl_noescape:
            arg = _line(f)
        elif kind is pickletools.stringnl_noescape_pair:
            arg = (_line(f), _line(f))
        else:
            arg = kind.reader(f)
        yield op, arg, pos
        if op.name == "STOP":
            return


def scan_pickle(stream: BinaryIO) -> int:
    """Walk one pickle's opcodes without running them; return how many bytes it spans.

    Refuses memo indices larger than the count of opcodes before them (a pickler numbers its
    memo from 0; the C unpickler would allocate a list up to the index), and objects nested
    more than `_MAX_DEPTH` deep: hashing a tuple hashes its items recursively in C, so a
    dict key, set member or frozenset member nested a million deep overflows the C stack and
    kills the process while the unpickler builds it. The walk follows the unpickler's stack
    with the nesting depth of each object on it (opcodes' `stack_before` and `stack_after`):
    a new object is one deeper than the deepest it consumes (constants are 0), an in-place
    opcode (APPEND, SETITEMS, BUILD, ...) keeps its container, one deeper than what it added
    if that is deeper, and the memo keeps the depth of what it stores. A mutable container
    changed after it was memoized keeps a stale depth in the memo, and objects built from that
    copy are shallower here than in fact: harmless, since only tuples and frozensets (which
    cannot change after they are built) can be hashed, and lists, dicts and sets cannot; the
    builder limits the nesting it walks itself. A STRING with an invalid escape is refused
    (`_check_escapes`), and no read asks for more than the stream holds (`_ScanReader`).
    """
    reader = _ScanReader(stream)
    start = reader.tell()
    stack: list[int] = []                   # the depth of each object on the unpickler's stack above the mark
    below: list[list[int]] = []             # the stacks below each MARK still open
    memo: dict[int, int] = {}
    mark = pickletools.markobject
    try:
        for n, (op, arg, pos) in enumerate(_opcodes(reader)):
            name = op.name
            if name in _MEMO_PUTS or name == "MEMOIZE":
                if name != "MEMOIZE" and not (type(arg) is int and 0 <= arg <= n):
                    raise _fail(f"the pickle stores memo entry {arg!r} at byte {pos}, out of range")
                if not stack:
                    raise _fail(f"the pickle's {name} at byte {pos} finds nothing to store")
                memo[len(memo) if name == "MEMOIZE" else arg] = stack[-1]
                continue
            if name in _MEMO_GETS:
                if arg not in memo:
                    raise _fail(f"the pickle is malformed (memo entry {arg!r} read at byte {pos} before it is "
                                "stored)")
                stack.append(memo[arg])
                continue
            if name == "MARK":
                below.append(stack)
                stack = []
                continue
            if name == "POP" and not stack and below:       # POP on an empty stack pops the mark
                stack = below.pop()
                continue
            before = op.stack_before
            taken: list[int] = []
            if mark in before:                               # the objects above the mark, then those below it
                if not below:
                    raise _fail(f"the pickle's {name} at byte {pos} has no MARK before it")
                taken, stack = stack, below.pop()
                count = before.index(mark)
            else:
                count = len(before)
            if len(stack) < count:
                raise _fail(f"the pickle is malformed ({name} at byte {pos} finds too few objects on the stack)")
            if count:
                taken = stack[-count:] + taken
                del stack[-count:]
            if name == "DUP":
                stack += taken * 2
                continue
            if not op.stack_after:                           # POP, POP_MARK, STOP, PROTO, FRAME
                continue
            if name in _IN_PLACE:                            # the container stays, holding the rest
                depth = max(taken[0], 1 + max(taken[1:])) if len(taken) > 1 else taken[0]
            else:
                depth = 1 + max(taken) if taken else 0
            if depth > _MAX_DEPTH:
                raise _fail(f"the pickle's objects are nested more than {_MAX_DEPTH} levels deep (at byte {pos})")
            stack.append(depth)
    except CheckpointError:
        raise
    except (ValueError, EOFError, struct.error, OverflowError, UnicodeDecodeError) as e:
        raise _fail(f"the pickle is malformed ({type(e).__name__}: {e})") from None
    return reader.tell() - start
