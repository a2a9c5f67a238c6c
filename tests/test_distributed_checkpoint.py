"""ember.distributed.checkpoint's save and load beyond the FSDP round trips of tests/test_fsdp.py: the
non-tensor values (JSON data, tuples kept, anything else refused before a file is written, on every
rank of a job at once) and a Shard whose global shape is not the saved one."""
from __future__ import annotations

import re

import pytest

import ember
import ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint import Shard
from distributed_support import launch

VALUES = {"step": 3, "lr": 0.5, "name": "run", "none": None, "flag": True, "betas": (0.9, 0.95),
          "nested": {"milestones": [1, (2, 3)], "pair": ((1, 2), [3, (4,)])},
          "looks_like_a_tuple": {"__tuple__": [1, 2]}, "looks_like_a_dict": {"__dict__": {"a": 1}}, "empty": ()}


def test_values_load_back_as_they_were_saved(tmp_path):
    state = {"w": ember.arange(6.0).reshape(3, 2), **VALUES}
    dcp.save(state, checkpoint_id=tmp_path)
    loaded = {"w": ember.zeros(3, 2), **{k: None for k in VALUES}}
    dcp.load(loaded, checkpoint_id=tmp_path)
    assert loaded["w"].tolist() == state["w"].tolist()
    for key, value in VALUES.items():
        assert loaded[key] == value and repr(loaded[key]) == repr(value), key     # tuples stay tuples


@pytest.mark.parametrize("value, message", [
    ({1, 2}, r"the value of 'bad' is not JSON data .* got set"),
    ({"a": [1, object()]}, r"the value of 'bad'\['a'\]\[1\] is not JSON data .* got object"),
    ({1: "x"}, r"the value of 'bad' is not JSON data: a dict key must be a string, got 1"),
    ([ember.ones(1)], r"the value of 'bad'\[0\] is not JSON data .* got Tensor"),
])
def test_a_value_that_is_not_json_data_is_refused_before_any_file(tmp_path, value, message):
    directory = tmp_path / "ckpt"
    with pytest.raises(TypeError, match=rf"^checkpoint.save: {message}; nothing was written$"):
        dcp.save({"w": ember.ones(2), "bad": value}, checkpoint_id=directory)
    assert not directory.exists()


def test_a_shard_loads_only_into_the_saved_global_shape(tmp_path):
    dcp.save({"w": ember.arange(12.0).reshape(4, 3)}, checkpoint_id=tmp_path)
    rows = {"w": Shard(ember.zeros(2, 3), (4, 3), 2)}
    dcp.load(rows, checkpoint_id=tmp_path)
    assert rows["w"].local.tolist() == [[6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]
    for shape in [(5, 3), (4, 2), (12,)]:
        wrong = {"w": Shard(ember.zeros(0, 3), shape, 0)}           # even a rank holding no rows checks it
        with pytest.raises(ValueError, match=rf"checkpoint.load: 'w' has global shape \[{', '.join(map(str, shape))}\] "
                                             r"here but \[4, 3\] in the checkpoint"):
            dcp.load(wrong, checkpoint_id=tmp_path)
    with pytest.raises(KeyError, match="'v' is not in the checkpoint"):
        dcp.load({"v": Shard(ember.zeros(0, 3), (4, 3), 0)}, checkpoint_id=tmp_path)


RANKS = """
import sys
import ember, ember.distributed as dist, ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint import Shard

dist.init_process_group("gloo")
rank = dist.get_rank()
state = {"w": Shard(ember.full((2, 3), float(rank)), (4, 3), 2 * rank), "step": 7}
if rank == 1:
    state["extra"] = {"seen": {1, 2}}
try:
    dcp.save(state, checkpoint_id=sys.argv[1])
except TypeError as e:
    print(f"rank {rank}: {e}", flush=True)
dist.destroy_process_group()
"""


def test_a_bad_value_on_one_rank_stops_every_rank_before_any_file(mpi_job, tmp_path):
    script = tmp_path / "save.py"
    script.write_text(RANKS)
    result = launch(2, str(script), str(tmp_path / "ckpt"), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    expected = ("checkpoint.save: the value of 'extra'['seen'] is not JSON data (None, a bool, number or string, or a "
                "list, tuple or dict of them), got set (on rank 1); nothing was written")
    # the ranks' lines may interleave in mpiexec's output
    said = re.findall(r"rank (\d): (checkpoint\.save: .*?nothing was written)", result.stdout)
    assert sorted(said) == [(str(r), expected) for r in range(2)], result.stdout
    assert not (tmp_path / "ckpt").exists()
