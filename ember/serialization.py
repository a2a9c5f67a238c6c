"""`ember.save` / `ember.load`: checkpoints that never execute code when loaded.

File format: a safetensors file (an unsigned 64-bit little-endian header length N, N bytes
of UTF-8 JSON header, then the raw little-endian tensor bytes), readable by the
`safetensors` package and the tools built on it. Each distinct tensor is one entry named
"t0", "t1", ...; a view is saved compactly (only its elements, contiguous). The header's
`__metadata__` (string to string, as safetensors requires) holds:

* "format": "ember", "ember_version": "1";
* "ember_structure": the saved object as JSON: None, bools, ints and strings as themselves;
  {"float": repr}, {"tensor": name, "device": str, "requires_grad": bool}, {"list": [...]},
  {"tuple": [...]}, {"dict": [[key, value], ...]} (keys of any supported type, e.g. the int
  keys of an optimizer's state), {"dtype": name}, {"device": str}, {"size": [ints]}
  (ember.Size), {"odict": ...} (an OrderedDict), {"set": [...]}; namedtuples are saved as plain tuples;
  a Parameter's tensor reference has "parameter": true; a whole object (a module) is {"object": class name,
  "state": its state} and a function or class it refers to {"global": name}, rebuilt on loading only when
  allowed (ember/serialization_objects.py: add_safe_globals, safe_globals);
* "ember_digest": the SHA-256 of the header (with the digest's own 64 hex digits read as
  zeros) and of the tensor bytes, so a changed byte anywhere is detected.

Loading reads JSON and raw numbers only. A truncated, corrupt or hostile file raises
`CheckpointError` (a RuntimeError and a ValueError) with the reason; nothing in the file can
make the loader run code. A safetensors file written by another tool (no ember metadata)
loads as a dict of tensors, e.g. a state dict from `safetensors.torch.save_file`.

PyTorch checkpoints: `load` also reads what `torch.save` writes, the zip format (the file
starts with `PK\x03\x04`) and the legacy single-stream one (a pickle's `\x80` protocol mark),
so `model.load_state_dict(ember.load("model.pt"))` works for an ember model of the same
structure, as do optimizer states and nested checkpoints. Their pickles are read by an
allow-list unpickler (`ember.torch_unpickler`): only tensors, storages, dtypes, devices,
sizes, containers and numbers can be rebuilt, by ember's own functions; any other global
(`os.system`, `builtins.eval`, a model class) raises `CheckpointError` naming it, and nothing
from the file runs. `weights_only=False` does not change that: ember never unpickles
arbitrary objects. Tensors sharing a storage in the file share memory when loaded;
`map_location` places each storage; a tensor saved on a device this machine lacks raises
`CheckpointError` unless `map_location` says where it goes (torch raises there too).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import tempfile
from collections import OrderedDict
from typing import Any, Callable

from ember.core.errors import EmberError

from . import serialization_objects as objects
from .serialization_objects import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = ["save", "load", "CheckpointError", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals"]


class CheckpointError(EmberError, RuntimeError, ValueError):
    """A checkpoint file that cannot be loaded: truncated, corrupt, or not an ember/safetensors file."""


_DTYPE_CODES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
                "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64"}
_CODE_DTYPES = {v: k for k, v in _DTYPE_CODES.items()}
_MAX_HEADER = 100_000_000        # the safetensors package's own limit
_MAX_DEPTH = 200                 # nesting of the saved structure
_MAX_DIMS = 64                   # dimensions of a tensor
_DIGEST_KEY = b'"ember_digest":"'


def _np_dtype(name: str):
    import numpy as np

    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name).newbyteorder("<") if name != "bool" else np.dtype(np.bool_)


# -- saving ---------------------------------------------------------------------------------
class _Writer:
    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}
        self.chunks: list[bytes] = []
        self.offset = 0
        self.names: dict[int, str] = {}
        self.keep: list[Any] = []         # keeps saved tensors alive so id() stays unique

    def tensor(self, t) -> str:
        """The entry holding a tensor's elements, or a numpy array's."""
        name = self.names.get(id(t))
        if name is not None:
            return name
        import numpy as np

        if isinstance(t, np.ndarray):
            dtype_name = t.dtype.name
            if dtype_name not in _DTYPE_CODES:
                raise TypeError(f"ember.save: cannot save a numpy array of dtype {t.dtype}")
            arr = np.ascontiguousarray(t)
        else:
            dtype_name = t.dtype.name
            arr = np.ascontiguousarray(t.detach()._host())
        if dtype_name not in ("bool", "uint8", "int8", "bfloat16"):
            arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        data = arr.tobytes()
        name = f"t{len(self.entries)}"
        self.entries[name] = {"dtype": _DTYPE_CODES[dtype_name], "shape": list(t.shape),    # (0-d stays 0-d)
                              "data_offsets": [self.offset, self.offset + len(data)]}
        self.chunks.append(data)
        self.offset += len(data)
        self.names[id(t)] = name
        self.keep.append(t)
        return name

    def encode(self, obj: Any, depth: int = 0) -> Any:
        from ember.frontend.tensor import Tensor
        from ember.core.dtype import dtype as _dtype
        from ember.core.device import device as _device

        if depth > _MAX_DEPTH:
            raise ValueError(f"ember.save: the object is nested more than {_MAX_DEPTH} levels deep")
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return {"float": repr(float(obj))}
        if isinstance(obj, Tensor):
            ref = {"tensor": self.tensor(obj), "device": str(obj.device), "requires_grad": bool(obj.requires_grad)}
            if _is_parameter(obj):
                ref["parameter"] = True
            return ref
        if isinstance(obj, _dtype):
            return {"dtype": obj.name}
        if isinstance(obj, _device):
            return {"device": str(obj)}
        from ember.frontend.tensor import Size

        if isinstance(obj, Size):
            return {"size": [int(v) for v in obj]}
        if isinstance(obj, dict):
            kind = "odict" if type(obj) is OrderedDict else "dict"
            return {kind: [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in obj.items()]}
        if isinstance(obj, (set, frozenset)):
            return {"set": [self.encode(v, depth + 1) for v in obj]}
        import numpy as np

        if isinstance(obj, np.ndarray):
            return {"ndarray": self.tensor(obj)}                   # data, like a tensor: loads as a numpy array
        if isinstance(obj, list):
            return {"list": [self.encode(v, depth + 1) for v in obj]}
        if isinstance(obj, tuple):
            return {"tuple": [self.encode(v, depth + 1) for v in obj]}
        import numbers

        if isinstance(obj, numbers.Integral):
            return int(obj)
        if isinstance(obj, numbers.Real):
            return {"float": repr(float(obj))}
        if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__"):
            return {"global": objects.global_name(obj)}      # a class or function the object refers to
        if hasattr(obj, "__dict__") or hasattr(type(obj), "__getstate__"):
            return {"object": objects.global_name(type(obj)), "state": self.encode(objects.state_of(obj), depth + 1)}
        raise TypeError(f"ember.save: cannot save an object of type {type(obj).__name__}; checkpoints hold "
                        "tensors, numbers, strings, None, bools, dtypes, devices, dicts/lists/tuples/sets of them, "
                        "and objects with a __dict__ (modules)")


def _is_parameter(t) -> bool:
    from ember.nn.parameter import Parameter

    return isinstance(t, Parameter)


def _serialize(obj: Any) -> bytes:
    w = _Writer()
    structure = json.dumps(w.encode(obj), separators=(",", ":"), allow_nan=False)
    meta = {"format": "ember", "ember_version": "1", "ember_structure": structure, "ember_digest": "0" * 64}
    header = json.dumps({"__metadata__": meta, **w.entries}, separators=(",", ":")).encode("utf-8")
    header += b" " * (-len(header) % 8)     # safetensors aligns the data to 8 bytes with spaces
    digest = _digest(header, w.chunks)
    pos = header.index(_DIGEST_KEY) + len(_DIGEST_KEY)
    header = header[:pos] + digest.encode("ascii") + header[pos + 64:]
    return b"".join([struct.pack("<Q", len(header)), header, *w.chunks])


def _digest(header_zeroed: bytes, chunks) -> str:
    h = hashlib.sha256()
    h.update(header_zeroed)
    for c in chunks:
        h.update(c)
    return h.hexdigest()


def save(obj: Any, f, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Save `obj` (tensors, numbers, strings, None and dicts/lists/tuples of them) to `f`.

    `f` is a path (written atomically: to a temporary file in the same folder, then renamed
    over the target, so a crash mid-save leaves any old file intact) or a binary file
    object. Tensors on any device are copied to host memory; views store only their
    elements. `pickle_module` and the other torch arguments are accepted and ignored: no
    pickle is involved.
    """
    payload = _serialize(obj)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".ember-save-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(payload)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    else:
        f.write(payload)


# -- loading --------------------------------------------------------------------------------
def _fail(reason: str) -> CheckpointError:
    return CheckpointError(f"ember.load: not a valid checkpoint: {reason}")


def _read_header(buf: bytes) -> tuple[dict, bytes, memoryview]:
    if len(buf) < 8:
        raise _fail(f"the file has {len(buf)} bytes, fewer than the 8-byte header length")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > _MAX_HEADER:
        raise _fail(f"the header claims {n} bytes (at most {_MAX_HEADER} allowed)")
    if 8 + n > len(buf):
        raise _fail(f"the header claims {n} bytes but only {len(buf) - 8} follow (truncated file?)")
    raw = buf[8:8 + n]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _fail(f"the header is not UTF-8 ({e})") from None

    def no_duplicates(pairs):
        d = {}
        for k, v in pairs:
            if k in d:
                raise _fail(f"the header repeats the key {k!r}")
            d[k] = v
        return d

    try:
        header = json.loads(text, object_pairs_hook=no_duplicates,
                            parse_constant=lambda c: (_ for _ in ()).throw(_fail(f"non-standard JSON {c}")))
    except CheckpointError:
        raise
    except (ValueError, RecursionError) as e:
        raise _fail(f"the header is not valid JSON ({type(e).__name__}: {e})") from None
    if not isinstance(header, dict):
        raise _fail("the header is not a JSON object")
    return header, raw, memoryview(buf)[8 + n:]


def _is_shape(dims: list | tuple) -> bool:
    """Whether `dims` (a list or tuple) can be a tensor's shape or strides: at most `_MAX_DIMS`
    non-negative ints, each below 2**62."""
    return len(dims) <= _MAX_DIMS and all(type(d) is int and 0 <= d < 2 ** 62 for d in dims)


def _check_entries(header: dict, data_len: int) -> dict[str, tuple[str, tuple[int, ...], int, int]]:
    import numpy as np

    entries = {}
    spans = []
    for name, e in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise _fail(f"tensor entry {name!r} must have exactly 'dtype', 'shape' and 'data_offsets'")
        code, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
        if code not in _CODE_DTYPES:
            raise _fail(f"tensor {name!r} has an unsupported dtype {code!r}")
        if not isinstance(shape, list) or not _is_shape(shape):
            raise _fail(f"tensor {name!r} has an invalid shape {shape!r}")
        if (not isinstance(offs, list) or len(offs) != 2 or not all(type(o) is int for o in offs)
                or not 0 <= offs[0] <= offs[1] <= data_len):
            raise _fail(f"tensor {name!r} has data_offsets {offs!r} outside the {data_len} data bytes")
        dtype_name = _CODE_DTYPES[code]
        nbytes = int(np.prod(shape, dtype=object)) * _np_dtype(dtype_name).itemsize
        if offs[1] - offs[0] != nbytes:
            raise _fail(f"tensor {name!r} of shape {shape} and dtype {code} needs {nbytes} bytes, "
                        f"its data_offsets give {offs[1] - offs[0]}")
        entries[name] = (dtype_name, tuple(shape), offs[0], offs[1])
        spans.append((offs[0], offs[1], name))
    end = 0
    for begin, stop, name in sorted(spans):
        if begin != end:
            raise _fail(f"tensor {name!r} starts at byte {begin}, expected {end} (overlapping or missing data)")
        end = stop
    if end != data_len:
        raise _fail(f"the tensors cover {end} data bytes but the file holds {data_len}")
    return entries


class _Decoder:
    def __init__(self, tensors: dict[str, Any], restore: Callable[[Any, str, bool], Any]) -> None:
        self.tensors = tensors
        self.restore = restore
        self.made: dict = {}

    def arrays(self, name: str):
        """A saved numpy array: a native-byte-order copy of its entry's elements."""
        arr, dtype_name = self.tensors[name]
        return arr.astype(arr.dtype.newbyteorder("="), copy=True) if dtype_name not in ("bool", "bfloat16") \
            else arr.copy()

    def decode(self, v: Any, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise _fail(f"the structure is nested more than {_MAX_DEPTH} levels deep")
        if v is None or isinstance(v, (bool, str)):
            return v
        if type(v) is int:
            return v
        if isinstance(v, dict) and len(v) >= 1:
            kind = next(iter(v))
            body = v[kind]
            if kind == "float" and len(v) == 1 and isinstance(body, str):
                try:
                    return float(body)
                except ValueError:
                    raise _fail(f"invalid float {body!r}") from None
            if kind == "tensor" and set(v) - {"parameter"} == {"tensor", "device", "requires_grad"}:
                if not isinstance(body, str) or body not in self.tensors:
                    raise _fail(f"the structure refers to a tensor {body!r} the file does not hold")
                if not isinstance(v["device"], str) or not isinstance(v["requires_grad"], bool):
                    raise _fail("a tensor reference has an invalid device or requires_grad")
                key = (body, v.get("parameter") is True)
                if key not in self.made:
                    t = self.restore(self.tensors[body], v["device"], v["requires_grad"])
                    if key[1]:
                        from ember.nn.parameter import Parameter

                        t = Parameter(t, requires_grad=v["requires_grad"])
                    self.made[key] = t
                return self.made[key]
            if kind == "set" and len(v) == 1 and isinstance(body, list):
                try:
                    return {self.decode(x, depth + 1) for x in body}
                except TypeError:
                    raise _fail("a set holds an unhashable value") from None
            if kind == "ndarray" and len(v) == 1:
                if not isinstance(body, str) or body not in self.tensors:
                    raise _fail(f"the structure refers to an array {body!r} the file does not hold")
                return self.arrays(body)
            if kind == "global" and len(v) == 1:
                return objects.resolve(body, _fail)
            if kind == "object" and set(v) == {"object", "state"}:
                cls = objects.resolve(v["object"], _fail)
                if not isinstance(cls, type):
                    raise _fail(f"{v['object']} is allowed but is no class")
                return objects.rebuild(cls, self.decode(v["state"], depth + 1))
            if kind in ("list", "tuple") and len(v) == 1 and isinstance(body, list):
                items = [self.decode(x, depth + 1) for x in body]
                return items if kind == "list" else tuple(items)
            if kind in ("dict", "odict") and len(v) == 1 and isinstance(body, list):
                out = {} if kind == "dict" else OrderedDict()
                for pair in body:
                    if not isinstance(pair, list) or len(pair) != 2:
                        raise _fail("a dict item is not a [key, value] pair")
                    key = self.decode(pair[0], depth + 1)
                    try:
                        hash(key)
                    except TypeError:
                        raise _fail(f"a dict key of type {type(key).__name__} is not hashable") from None
                    out[key] = self.decode(pair[1], depth + 1)
                return out
            if kind == "size" and len(v) == 1 and isinstance(body, list) and all(type(x) is int for x in body):
                from ember.frontend.tensor import Size

                return Size(body)
            if kind == "dtype" and len(v) == 1 and body in _DTYPE_CODES:
                from ember.core.dtype import dtype_from_name

                return dtype_from_name(body)
            if kind == "device" and len(v) == 1 and isinstance(body, str):
                from ember.core.device import device

                try:
                    return device(body)
                except Exception:
                    raise _fail(f"invalid device {body!r}") from None
        raise _fail(f"unexpected value in the structure: {json.dumps(v)[:80]}")


def _location_fn(map_location) -> Callable[[Any, str], Any]:
    """The `map_location` argument as fn(cpu tensor, saved device string) -> tensor."""
    from ember.core.device import device as _device

    if map_location is None:
        return lambda t, loc: t.to(loc) if loc != "cpu" else t
    if isinstance(map_location, (str, _device)):
        target = str(map_location)
        return lambda t, loc: t.to(target) if target != "cpu" else t
    if isinstance(map_location, dict):
        mapping = {str(k): str(v) for k, v in map_location.items()}
        return lambda t, loc: t.to(mapping.get(loc, loc)) if mapping.get(loc, loc) != "cpu" else t
    if callable(map_location):
        def call(t, loc):
            out = map_location(t, loc)
            return t.to(loc) if out is None and loc != "cpu" else (t if out is None else out)
        return call
    raise TypeError(f"ember.load: map_location must be None, a str, an ember.device, a dict or a callable, "
                    f"not {type(map_location).__name__}")


_SNIFF_BYTES = 262                 # enough for a tar header's "ustar" at byte 257


def _detect_format(head: bytes) -> str:
    """The format of a file from its first bytes: "torch-zip", "torch-legacy", "torch-tar" or
    "safetensors" (ember's own format and any other safetensors file)."""
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "torch-zip"
    # a pickle's PROTO opcode; a safetensors file always has "{" after its 8-byte header length
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5 and head[8:9] != b"{":
        return "torch-legacy"
    if head[257:262] == b"ustar":
        return "torch-tar"
    return "safetensors"


def load(f, map_location=None, pickle_module: Any = None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Load a checkpoint: one saved by `ember.save`, any safetensors file (as a dict of
    tensors), or one written by `torch.save` (zip or legacy format; see
    `ember.serialization_torch`). The format is told from the file's first bytes.

    `map_location` moves tensors: a device string or `ember.device` (all tensors), a dict
    mapping saved device strings to new ones, or a callable `fn(tensor, saved_location)`
    returning the tensor to use (None keeps the default; for a torch checkpoint it is called
    once per storage, with the storage as a 1-D tensor). Without it tensors return to the
    device they were saved from. The loader runs no code from the file: loading is always
    weights-only, whatever `weights_only` says, and `pickle_module` and `mmap` are accepted
    and ignored (`encoding` and `errors` still decode Python 2 strings of torch files).
    Anything malformed or refused raises `CheckpointError`.
    """
    locate = _location_fn(map_location)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _load_stream(fh, locate, pickle_load_args)
    try:
        seekable = f.seekable()
    except AttributeError:
        seekable = False
    if not seekable:
        buf = f.read()
        if not isinstance(buf, (bytes, bytearray)):
            raise TypeError("ember.load: the file object must be opened in binary mode")
        f = io.BytesIO(buf)
    return _load_stream(f, locate, pickle_load_args)


def _load_stream(fh, locate: Callable[[Any, str], Any], pickle_load_args: dict[str, Any]) -> Any:
    """Load from a seekable binary file, by the format its first bytes show."""
    start = fh.tell()
    head = fh.read(_SNIFF_BYTES)
    if not isinstance(head, (bytes, bytearray)):
        raise TypeError("ember.load: the file object must be opened in binary mode")
    fh.seek(start)
    kind = _detect_format(bytes(head))
    if kind in ("torch-zip", "torch-legacy"):
        from ember import serialization_torch

        reader = serialization_torch.load_zip if kind == "torch-zip" else serialization_torch.load_legacy
        return reader(fh, locate, pickle_load_args)
    if kind == "torch-tar":
        raise _fail("this is PyTorch's tar format (torch < 0.4), which ember does not read; re-save it with a "
                    "recent torch.save")
    return _load_native(bytes(fh.read()), locate)


def _load_native(buf: bytes, locate: Callable[[Any, str], Any]) -> Any:
    """Load ember's format or any safetensors file from its bytes."""
    import numpy as np
    from ember.frontend.factories import from_numpy

    header, raw, data = _read_header(buf)
    meta = header.get("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise _fail("__metadata__ must map strings to strings")
    entries = _check_entries(header, len(data))
    is_ember = meta.get("format") == "ember" or any(k.startswith("ember") for k in meta)
    if is_ember:
        for key in ("ember_structure", "ember_digest", "ember_version"):
            if key not in meta:
                raise _fail(f"ember metadata without {key!r}")
        if meta["ember_version"] != "1" or meta.get("format") != "ember":
            raise _fail(f"unsupported ember format {meta.get('format')!r} version {meta['ember_version']!r}")
        pos = raw.find(_DIGEST_KEY)
        if pos < 0 or raw.find(_DIGEST_KEY, pos + 1) >= 0:
            raise _fail("the digest is missing or repeated")
        pos += len(_DIGEST_KEY)
        zeroed = raw[:pos] + b"0" * 64 + raw[pos + 64:]
        if _digest(zeroed, [data]) != meta["ember_digest"]:
            raise _fail("the SHA-256 digest does not match its contents (the file was changed or damaged)")
        try:
            structure = json.loads(meta["ember_structure"])
        except (ValueError, RecursionError) as e:
            raise _fail(f"the structure is not valid JSON ({e})") from None
    else:
        structure = {"dict": [[n, {"tensor": n, "device": "cpu", "requires_grad": False}] for n in entries]}

    arrays = {}
    for name, (dtype_name, shape, begin, stop) in entries.items():
        arr = np.frombuffer(data[begin:stop], dtype=_np_dtype(dtype_name)).reshape(shape)
        arrays[name] = (arr, dtype_name)

    def restore(item, loc: str, requires_grad: bool):
        arr, dtype_name = item
        host = arr.astype(arr.dtype.newbyteorder("="), copy=True) if dtype_name not in ("bool", "bfloat16") \
            else arr.copy()
        t = locate(from_numpy(host), loc)
        if requires_grad:
            t.requires_grad_(True)
        return t

    return _Decoder(arrays, restore).decode(structure)
