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
files that hold them; a plain tensor gets the whole value, so a process without a process group
(or a model without units) loads a sharded checkpoint as ordinary tensors.
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
    """Write `state_dict` (Shards, tensors, and JSON-able values) from every rank of the group into the
    directory `checkpoint_id`. Every rank of the group must call it."""
    from ember.serialization import save as save_file

    rank, world = _rank_and_world(process_group)
    directory = Path(checkpoint_id)
    directory.mkdir(parents=True, exist_ok=True)
    mine, pieces, values = {}, {}, {}
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
        else:
            values[key] = value
    save_file(mine, directory / f"rank{rank}.safetensors")
    everyone = [None] * world
    if world > 1:
        dist.all_gather_object(everyone, pieces, group=process_group)
    else:
        everyone = [pieces]
    if rank == 0:
        keys = {}
        for r, theirs in enumerate(everyone):
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

    with no_grad():
        for key, value in state_dict.items():
            if isinstance(value, Shard):
                if value.rows:
                    part, _ = rows_of(key, value.row_offset, value.row_offset + value.rows)
                    value.local.copy_(part.reshape(value.local.shape))
            elif isinstance(value, Tensor):
                entry = meta["tensors"].get(key)
                rows = entry["global_shape"][0] if entry and entry["global_shape"] else 1
                whole, entry = rows_of(key, 0, rows)
                if list(value.shape) != entry["global_shape"]:
                    raise ValueError(f"checkpoint.load: {key!r} has shape {list(value.shape)} here but "
                                     f"{entry['global_shape']} in the checkpoint")
                value.copy_(whole.reshape(value.shape))
            elif key in meta["values"]:
                state_dict[key] = meta["values"][key]
            else:
                raise KeyError(f"checkpoint.load: {key!r} is not in the checkpoint {str(directory)!r}")
