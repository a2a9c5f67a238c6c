"""Reading checkpoints written by `torch.save`, without running anything from the file.

`ember.load` sends a file here when its first bytes say it was written by PyTorch:

* the zip format (`torch.save`'s default since PyTorch 1.6): an archive whose records share
  one folder, `<name>/data.pkl` (the pickled object), `<name>/data/<key>` (the raw bytes of
  each storage), `<name>/byteorder` ("little" or "big"), `<name>/version` and a few more;
* the older single-stream format (`_use_new_zipfile_serialization=False`): a magic number,
  a protocol version and a system description, each pickled, then the object, then the list
  of storage keys, then each storage as a little-endian 64-bit element count and its bytes.

Every pickle is read by the allow-list unpickler of `ember.torch_unpickler`, which runs
nothing from the file and turns tensors, storages, sizes, devices and dtypes into inert
records. Each storage's size is checked before it is read: a zip storage record must be stored
uncompressed (torch never compresses storages) and the records read (data.pkl, byteorder and
the storages) must together fit in the archive, so overlapping records cannot multiply its
bytes; a legacy storage is checked against the element count saved before it and the file's
end. Only after the whole pickle is read and every tensor checked against its storage is any
storage read, and `_Builder` turns the records into ember tensors, dtypes, devices and sizes,
keeping shared objects shared.

Tensors sharing a storage in the file share one ember storage (each is an `as_strided`
view of it); `requires_grad` and `nn.Parameter` are restored as torch restores them. Each
storage is a 1-D tensor of its dtype when `map_location` sees it (a callable gets that
tensor and the saved location string, as torch's gets a storage). Without `map_location`
a tensor returns to its saved device; one saved on a device this machine lacks (e.g.
"cuda" without a GPU) raises `CheckpointError` suggesting `map_location="cpu"`, as torch
raises. The zip's `byteorder` record is honoured; the legacy format is always little-endian.
"""
from __future__ import annotations

import io
import struct
import sys
import zipfile
from collections import Counter, OrderedDict
from typing import Any, BinaryIO, Callable

import numpy as np

from ember.pickle_scan import read_fully, scan_pickle
from ember.serialization import _MAX_DEPTH, CheckpointError, _fail, _np_dtype
from ember.torch_unpickler import (_FORMAT_ERRORS, _itemsize, _LoadState, _MappingRecord,
                                   _StorageRecord, _TensorRecord, _Token, _unpickle, _Value, _what)

__all__ = ["load_zip", "load_legacy"]

Locate = Callable[[Any, str], Any]

_LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL_VERSION = 1001
_DEFLATE_MAX_RATIO = 1100           # deflate cannot expand data by more than about 1032:1
_READ_CHUNK = 1 << 24


# -- the pickles of a file ------------------------------------------------------------------
def _unpickle_args(pickle_load_args: dict[str, Any]) -> dict[str, Any]:
    """The arguments of torch.load that still mean something here: how Python 2 strings decode."""
    return {k: v for k, v in pickle_load_args.items() if k in ("encoding", "errors")}


def _next_pickle(stream: BinaryIO, load: _LoadState, unpickle_args: dict[str, Any]) -> Any:
    """Unpickle the next pickle of `stream` (checked by `scan_pickle` first); the stream ends after it."""
    start = stream.tell()
    n = scan_pickle(stream)
    stream.seek(start)
    return _unpickle(read_fully(stream, n), load, unpickle_args, scanned=True)


# -- the storages' bytes --------------------------------------------------------------------
class _ZipArchive:
    """A torch zip checkpoint's records, each size checked against the archive before reading."""

    def __init__(self, fh: BinaryIO) -> None:
        fh.seek(0, io.SEEK_END)
        self.archive_size = fh.tell()
        fh.seek(0)
        self.claimed: set[str] = set()              # the records read (or to be read)
        self.claimed_bytes = 0                      # the archive's bytes they span
        self.zf = zipfile.ZipFile(fh)
        infos = self.zf.infolist()
        self.infos = {i.filename: i for i in infos}
        if len(self.infos) != len(infos):
            raise _fail("the archive names a record twice")
        pickles = [n for n in self.infos if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise _fail("the archive has no <name>/data.pkl record (is it a torch.save checkpoint?)"
                        if not pickles else "the archive has several data.pkl records")
        self.prefix = pickles[0][:-len("data.pkl")]
        if self.prefix + "constants.pkl" in self.infos:
            raise _fail("this is a TorchScript archive (torch.jit.save); ember loads torch.save checkpoints")
        order = self.record("byteorder", optional=True)
        if order not in (None, b"little", b"big"):
            raise _fail(f"unknown byteorder record {order[:20]!r}")
        self.byteorder = "little" if order is None else order.decode()

    def _info(self, name: str) -> zipfile.ZipInfo | None:
        info = self.infos.get(self.prefix + name)
        if info is None:
            return None
        if info.flag_bits & 1:
            raise _fail(f"the record {name!r} is encrypted")
        if info.compress_type == zipfile.ZIP_STORED:
            if info.compress_size != info.file_size:
                raise _fail(f"the uncompressed record {name!r} gives two different sizes")
            limit = self.archive_size
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            limit = min(info.compress_size, self.archive_size) * _DEFLATE_MAX_RATIO + 64
        else:
            raise _fail(f"the record {name!r} uses compression method {info.compress_type}")
        if not 0 <= info.file_size <= limit or info.compress_size > self.archive_size:
            raise _fail(f"the record {name!r} claims {info.file_size} bytes, more than the archive can hold")
        return info

    def _claim(self, name: str, info: zipfile.ZipInfo) -> None:
        """Count a record to be read against the archive. The records of a real archive lie apart,
        so together they span at most its size; records whose spans overlap each pass the check
        of `_info` alone and would load the same bytes many times over (Python 3.11's zipfile
        does not look for overlaps)."""
        if name in self.claimed:
            return
        self.claimed.add(name)
        self.claimed_bytes += info.compress_size
        if self.claimed_bytes > self.archive_size:
            raise _fail(f"the {len(self.claimed)} records read so far span {self.claimed_bytes} bytes, more than "
                        f"the {self.archive_size}-byte archive holds (its records overlap)")

    def record(self, name: str, optional: bool = False) -> bytes | None:
        """A whole small record (data.pkl, byteorder)."""
        info = self._info(name)
        if info is None:
            if optional:
                return None
            raise _fail(f"the archive has no {self.prefix + name!r} record")
        self._claim(name, info)
        return self.zf.read(info)

    def storage_nbytes(self, key: str) -> int:
        """The size of a storage's record; `CheckpointError` if it is missing, compressed, or
        more than the archive holds besides the records already counted."""
        name = f"data/{key}"
        info = self._info(name)
        if info is None:
            raise _fail(f"the archive has no record for storage {key!r} ({self.prefix}{name})")
        if info.compress_type != zipfile.ZIP_STORED:
            raise _fail(f"the storage record {key!r} is compressed (method {info.compress_type}); torch.save "
                        "never compresses storages")
        self._claim(name, info)
        return info.file_size

    def read_storage(self, key: str, nbytes: int) -> np.ndarray:
        """A storage's bytes, read in chunks into one new array."""
        out = np.empty(nbytes, dtype=np.uint8)
        view = memoryview(out)
        got = 0
        try:
            with self.zf.open(self._info(f"data/{key}")) as src:
                while got < nbytes:
                    n = src.readinto(view[got:got + _READ_CHUNK])
                    if not n:
                        break
                    got += n
                src.read(1)              # reaches the end, where zipfile checks the CRC
        except _FORMAT_ERRORS as e:
            raise _fail(f"the storage {key!r} cannot be read ({type(e).__name__}: {e})") from None
        if got != nbytes:
            raise _fail(f"the storage {key!r} holds {got} bytes, {nbytes} needed")
        return out


class _LegacyStorages:
    """The storages after the pickles of a legacy (non-zip) file: each an int64 element count, then
    its bytes, in the order of the saved key list; always little-endian."""

    byteorder = "little"

    def __init__(self, fh: BinaryIO, keys: Any, storages: dict[str, _StorageRecord]) -> None:
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys) or len(set(keys)) != len(keys):
            raise _fail("the list of storage keys is not a list of distinct strings")
        if set(keys) != set(storages):
            raise _fail(f"the storage keys {sorted(set(keys) ^ set(storages))[:5]} are saved or used, not both")
        self.fh = fh
        self.where: dict[str, int] = {}
        pos = fh.tell()
        fh.seek(0, io.SEEK_END)
        end = fh.tell()
        for key in keys:
            rec = storages[key]
            fh.seek(pos)
            head = fh.read(8)
            if len(head) != 8:
                raise _fail(f"the file ends before storage {key!r}")
            (count,) = struct.unpack("<q", head)
            if count != rec.numel:
                raise _fail(f"the storage {key!r} holds {count} elements, the pickle says {rec.numel}")
            self.where[key] = pos + 8
            pos += 8 + rec.nbytes
            if pos > end:
                raise _fail(f"the file ends inside storage {key!r} ({rec.nbytes} bytes)")

    def read_storage(self, key: str, nbytes: int) -> np.ndarray:
        """A storage's bytes, read into one new array with `read` alone (torch.load asks a file
        object only for read, readline, seek and tell; a raw stream's read may return less)."""
        out = np.empty(nbytes, dtype=np.uint8)
        self.fh.seek(self.where[key])
        got = 0
        while got < nbytes:
            chunk = self.fh.read(min(nbytes - got, _READ_CHUNK))
            if not chunk:
                raise _fail(f"the file ends inside storage {key!r}")
            out[got:got + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
            got += len(chunk)
        return out


# -- from records to ember objects ----------------------------------------------------------
class _Builder:
    """Turns the unpickled structure into ember objects, reading each storage once."""

    def __init__(self, source: _ZipArchive | _LegacyStorages, locate: Locate) -> None:
        self.source = source
        self.locate = locate
        self.storages: dict[str, Any] = {}
        self.memo: dict[int, Any] = {}
        self.busy: set[int] = set()

    def storage(self, rec: _StorageRecord) -> Any:
        """The storage as a 1-D ember tensor of its dtype, placed by `map_location`."""
        t = self.storages.get(rec.key)
        if t is None:
            raw = self.source.read_storage(rec.key, rec.nbytes)
            t = self._place(_tensor_of(raw, rec.element_dtype, self.source.byteorder), rec.location)
            self.storages[rec.key] = t
        return t

    def _place(self, t: Any, location: str) -> Any:
        from ember.core.errors import BackendUnavailableError

        try:
            return self.locate(t, location)
        except BackendUnavailableError as e:
            raise CheckpointError(f"ember.load: cannot place the tensors saved on {location!r} ({e}); pass "
                                  "map_location='cpu' (or a device string, dict or function) to load them "
                                  "on a device this machine has") from e

    def tensor(self, rec: _TensorRecord) -> Any:
        if rec.storage is None:
            import ember
            from ember.core.dtype import dtype_from_name

            t = ember.empty_strided(rec.size, rec.stride, dtype=dtype_from_name(rec.dtype), device="meta")
        else:
            t = self.storage(rec.storage).as_strided(rec.size, rec.stride, rec.offset).detach()
        if rec.parameter:
            from ember.nn.parameter import Parameter

            return Parameter(t, requires_grad=rec.requires_grad)
        return t.requires_grad_(True) if rec.requires_grad else t

    def build(self, obj: Any, depth: int = 0) -> Any:
        """`obj` with every record replaced; shared objects stay shared."""
        if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes, bytearray)):
            return obj
        if depth > _MAX_DEPTH:
            raise _fail(f"the object is nested more than {_MAX_DEPTH} levels deep")
        key = id(obj)
        if key in self.memo:
            return self.memo[key]
        if key in self.busy:
            raise _fail("the object contains itself through a tuple")
        self.busy.add(key)
        out = self._build(obj, depth + 1)
        self.busy.discard(key)
        self.memo[key] = out
        return out

    def _build(self, obj: Any, depth: int) -> Any:
        build = self.build
        if type(obj) is list:
            out = self.memo[id(obj)] = []
            out.extend(build(v, depth) for v in obj)
            return out
        try:
            if type(obj) is dict or isinstance(obj, _MappingRecord):
                out = self.memo[id(obj)] = _new_mapping(obj)
                for k, v in obj.items():
                    out[build(k, depth)] = build(v, depth)
                if isinstance(obj, _MappingRecord):
                    for k, v in obj.attrs.items():
                        out.__dict__[k] = build(v, depth)
                return out
            if type(obj) in (set, frozenset):
                return type(obj)(build(v, depth) for v in obj)
        except TypeError as e:           # a key or member that is no longer hashable as an ember object
            raise _fail(f"a dict key or set member cannot be loaded ({e})") from None
        if type(obj) is tuple:
            return tuple(build(v, depth) for v in obj)
        if isinstance(obj, _TensorRecord):
            return self.tensor(obj)
        if isinstance(obj, _StorageRecord):
            return self.storage(obj)
        if isinstance(obj, _Value):
            return _value(obj)
        if isinstance(obj, _Token) and obj.kind == "dtype":
            from ember.core.dtype import dtype_from_name

            _itemsize(obj.value)
            return dtype_from_name(obj.value)
        raise _fail(f"{_what(obj)} cannot be loaded as a value")


def _new_mapping(obj: dict) -> dict:
    if isinstance(obj, _MappingRecord):
        return OrderedDict() if obj.kind == "OrderedDict" else Counter()
    return {}


def _value(v: _Value) -> Any:
    if v.kind == "Size":
        from ember.frontend.tensor import Size

        return Size(v.args)
    from ember.core.device import device

    try:
        return device(*v.args) if v.args[1] is not None else device(v.args[0])
    except Exception:
        raise _fail(f"invalid torch.device{v.args!r}") from None


def _tensor_of(raw: np.ndarray, dtype: str, byteorder: str) -> Any:
    """A 1-D cpu tensor over `raw` (bytes in `byteorder`), converted to native order in place."""
    from ember.frontend.factories import from_numpy

    item = _np_dtype(dtype).itemsize
    if item > 1 and byteorder != sys.byteorder:
        raw.view(f"u{item}").byteswap(inplace=True)
    if dtype == "bool":
        return from_numpy(np.not_equal(raw, 0, out=raw.view(np.bool_)))
    return from_numpy(raw.view(_np_dtype(dtype).newbyteorder("=")))


# -- entry points ---------------------------------------------------------------------------
def load_zip(fh: BinaryIO, locate: Locate, pickle_load_args: dict[str, Any] | None = None) -> Any:
    """Load a torch zip checkpoint from the seekable binary file `fh`.

    `locate(storage_tensor, saved_location)` places each storage (see `ember.load`'s
    `map_location`). Raises `CheckpointError` for anything it refuses or cannot read.
    """
    try:
        archive = _ZipArchive(fh)
        data = archive.record("data.pkl")
    except CheckpointError:
        raise
    except _FORMAT_ERRORS as e:
        raise _fail(f"a damaged zip archive ({type(e).__name__}: {e})") from None
    try:
        load = _LoadState(archive.storage_nbytes)
        obj = _unpickle(data, load, _unpickle_args(pickle_load_args or {}))
        return _Builder(archive, locate).build(obj)
    finally:
        archive.zf.close()


def _no_storages(key: str) -> int:
    raise _fail(f"a header pickle of the legacy format refers to storage {key!r}")


def load_legacy(fh: BinaryIO, locate: Locate, pickle_load_args: dict[str, Any] | None = None) -> Any:
    """Load a checkpoint in torch's legacy single-stream format from the seekable binary file `fh`."""
    args = _unpickle_args(pickle_load_args or {})
    header = _LoadState(_no_storages)
    magic = _next_pickle(fh, header, args)
    if type(magic) is not int or magic != _LEGACY_MAGIC_NUMBER:
        raise _fail("a pickle without torch's magic number (not a torch.save file)")
    version = _next_pickle(fh, header, args)
    if version != _LEGACY_PROTOCOL_VERSION:
        raise _fail(f"unsupported legacy torch protocol version {version!r}")
    if not isinstance(_next_pickle(fh, header, args), dict):
        raise _fail("the legacy header's system description is not a dict")
    load = _LoadState(None)
    obj = _next_pickle(fh, load, args)
    keys = _next_pickle(fh, header, args)
    try:
        storages = _LegacyStorages(fh, keys, load.storages)
    except CheckpointError:
        raise
    except (OSError, ValueError, struct.error) as e:
        raise _fail(f"the storages cannot be read ({type(e).__name__}: {e})") from None
    return _Builder(storages, locate).build(obj)
