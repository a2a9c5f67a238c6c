"""ember.distributed.checkpoint (torch.distributed.checkpoint): save a sharded state dict from every
rank at once, and load it back on any number of ranks.

    state = get_model_state_dict(model)                    # this rank's Shards
    ember.distributed.checkpoint.save(state, checkpoint_id="ckpt")
    ...                                                     # later, on another world size:
    state = get_model_state_dict(model)                    # Shards of the new layout
    ember.distributed.checkpoint.load(state, checkpoint_id="ckpt")
    set_model_state_dict(model, state)

The checkpoint is a directory: `rank<R>.safetensors` per rank (its Shards' rows and, on rank 0
only, the replicated tensors) written with ember.save (data only, no pickle), and
`metadata.json` (per key: dtype, global shape and which rank holds which rows; other values as
JSON). `load` fills the given state dict in place: a Shard gets exactly its rows, read from the
files that hold them (its global shape must be the saved one); a plain tensor gets the whole
value, so a process without a process group (or a model without units) loads a sharded
checkpoint as ordinary tensors.

Other values are JSON data: None, bools, numbers, strings, and lists, tuples and dicts (with
string keys) of them, which load back as they were saved, tuples as tuples. Anything else raises
TypeError naming the key before any rank writes a file: the ranks first agree that every value
can be saved, so a bad value on one rank stops them all instead of leaving the others waiting.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ember import distributed as dist
from ember.frontend.autograd.grad_mode import no_grad
from ember.frontend.tensor import Tensor

from . import state_dict
from .shard import Shard

__all__ = ["save", "load", "Shard", "state_dict"]

METADATA = "metadata.json"


def _rank_and_world(process_group) -> tuple[int, int]:
    if dist.is_initialized():
        return dist.get_rank(process_group), dist.get_world_size(process_group)
    return 0, 1


def save(state_dict: dict, *, checkpoint_id, process_group=None) -> None:
    """Write `state_dict` (Shards, tensors, and JSON data, see the module docstring) from every rank of the
    group into the directory `checkpoint_id`. Every rank of the group must call it."""
    from ember.serialization import save as save_file

    rank, world = _rank_and_world(process_group)
    mine, pieces, values, problem = {}, {}, {}, None
    for key, value in state_dict.items():
        if isinstance(value, Shard):
            mine[key] = value.local.detach().cpu().contiguous()
            pieces[key] = {"dtype": value.local.dtype.name, "global_shape": list(value.global_shape),
                           "row_offset": value.row_offset, "rows": value.rows}
        elif isinstance(value, Tensor):
            if rank == 0:
                mine[key] = value.detach().cpu().contiguous()
            pieces[key] = {"dtype": value.dtype.name, "global_shape": list(value.shape), "row_offset": 0,
                           "rows": value.shape[0] if value.dim() else 1, "replicated": True}
        elif problem is None:
            try:
                values[key] = _encoded(value, repr(key))
            except TypeError as e:
                problem = str(e)
    everyone = [(pieces, problem)]
    if world > 1:
        everyone = [None] * world
        dist.all_gather_object(everyone, (pieces, problem), group=process_group)
    for r, (_, theirs) in enumerate(everyone):
        if theirs is not None:
            raise TypeError(f"checkpoint.save: {theirs}{f' (on rank {r})' if world > 1 else ''}; nothing was written")
    directory = Path(checkpoint_id)
    directory.mkdir(parents=True, exist_ok=True)
    save_file(mine, directory / f"rank{rank}.safetensors")
    if rank == 0:
        keys = {}
        for r, (theirs, _) in enumerate(everyone):
            for key, piece in theirs.items():
                entry = keys.setdefault(key, {"dtype": piece["dtype"], "global_shape": piece["global_shape"],
                                              "pieces": []})
                if not piece.get("replicated") or r == 0:
                    if piece["rows"]:
                        entry["pieces"].append({"rank": r, "row_offset": piece["row_offset"], "rows": piece["rows"]})
        meta = {"world_size": world, "tensors": keys, "values": values}
        tmp = directory / (METADATA + ".tmp")
        tmp.write_text(json.dumps(meta, indent=1))
        os.replace(tmp, directory / METADATA)
    if world > 1:
        dist.barrier(group=process_group)


#: the JSON object a tuple is written as, and the one wrapping a dict that would read as such an object
_TUPLE, _DICT = "__tuple__", "__dict__"


def _encoded(value, where: str):
    """`value` as JSON data that `_decoded` turns back into it (tuples kept); TypeError naming `where` (the
    key, and the place inside it) for anything JSON cannot hold as it is."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_encoded(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {_TUPLE: [_encoded(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise TypeError(f"the value of {where} is not JSON data: a dict key must be a string, got {bad[0]!r}")
        out = {k: _encoded(v, f"{where}[{k!r}]") for k, v in value.items()}
        return {_DICT: out} if len(out) == 1 and next(iter(out)) in (_TUPLE, _DICT) else out
    raise TypeError(f"the value of {where} is not JSON data (None, a bool, number or string, or a list, tuple or "
                    f"dict of them), got {type(value).__name__}")


def _decoded(data):
    """The value `_encoded` wrote as `data`."""
    if isinstance(data, list):
        return [_decoded(v) for v in data]
    if isinstance(data, dict):
        if len(data) == 1 and _TUPLE in data:
            return tuple(_decoded(v) for v in data[_TUPLE])
        if len(data) == 1 and _DICT in data:
            data = data[_DICT]
        return {k: _decoded(v) for k, v in data.items()}
    return data


def load(state_dict: dict, *, checkpoint_id, process_group=None) -> None:
    """Fill `state_dict` in place from the checkpoint in `checkpoint_id`, whatever world size wrote it:
    each Shard gets its rows, each tensor its whole value, other keys their saved value."""
    from ember.serialization import load as load_file

    directory = Path(checkpoint_id)
    meta = json.loads((directory / METADATA).read_text())
    files: dict[int, dict] = {}

    def rows_of(key: str, lo: int, hi: int):
        """Rows [lo, hi) of the saved tensor `key`, assembled from the ranks' files."""
        from ember._generated.functions import cat

        entry = meta["tensors"].get(key)
        if entry is None:
            raise KeyError(f"checkpoint.load: {key!r} is not in the checkpoint {str(directory)!r}")
        parts = []
        for piece in sorted(entry["pieces"], key=lambda p: p["row_offset"]):
            a, b = max(lo, piece["row_offset"]), min(hi, piece["row_offset"] + piece["rows"])
            if a < b:
                if piece["rank"] not in files:
                    files[piece["rank"]] = load_file(directory / f"rank{piece['rank']}.safetensors")
                saved = files[piece["rank"]][key]
                saved = saved.reshape(1) if saved.dim() == 0 else saved
                parts.append(saved[a - piece["row_offset"]:b - piece["row_offset"]])
        got = sum(p.shape[0] for p in parts)
        if got != hi - lo:
            raise ValueError(f"checkpoint.load: the checkpoint holds {got} of rows [{lo}, {hi}) of {key!r}")
        return cat(parts) if parts else None, entry

    def saved_shape(key: str, shape, what: str) -> list:
        """The global shape the checkpoint holds for `key`, which must be `shape` (this state dict's)."""
        entry = meta["tensors"].get(key)
        if entry is None:
            raise KeyError(f"checkpoint.load: {key!r} is not in the checkpoint {str(directory)!r}")
        if list(shape) != entry["global_shape"]:
            raise ValueError(f"checkpoint.load: {key!r} has {what} {list(shape)} here but {entry['global_shape']} "
                             "in the checkpoint")
        return entry["global_shape"]

    with no_grad():
        for key, value in state_dict.items():
            if isinstance(value, Shard):
                saved_shape(key, value.global_shape, "global shape")
                if value.rows:
                    part, _ = rows_of(key, value.row_offset, value.row_offset + value.rows)
                    value.local.copy_(part.reshape(value.local.shape))
            elif isinstance(value, Tensor):
                shape = saved_shape(key, value.shape, "shape")
                whole, _ = rows_of(key, 0, shape[0] if shape else 1)
                value.copy_(whole.reshape(value.shape))
            elif key in meta["values"]:
                state_dict[key] = _decoded(meta["values"][key])
            else:
                raise KeyError(f"checkpoint.load: {key!r} is not in the checkpoint {str(directory)!r}")
