"""ember.utils.data: batching, collation and sampler semantics against torch.utils.data where
they are deterministic; properties of the random samplers; worker processes."""
from __future__ import annotations

import collections
import inspect
import random

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as eud

Point = collections.namedtuple("Point", ["x", "y"])


def _plain(obj):
    """A framework-neutral form of a batch: (kind, dtype name, values) for tensors."""
    if isinstance(obj, (torch.Tensor, ember.Tensor)):
        return ("tensor", str(obj.dtype).split(".")[-1], tuple(obj.shape), obj.detach().double().numpy().tolist())
    if isinstance(obj, dict):
        return ("dict", type(obj).__name__, [(k, _plain(v)) for k, v in obj.items()])
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return ("namedtuple", type(obj).__name__, [_plain(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_plain(v) for v in obj])
    return obj


SAMPLES = [
    [1, 2, 3],
    [1.5, 2.0],
    [True, False],
    ["a", "bc"],
    [np.arange(3, dtype=np.float32), np.ones(3, dtype=np.float32)],
    [np.int32(4), np.int32(5)],
    [np.float64(1.5), np.float64(-2)],
    [(1, 2.0, "s"), (3, 4.0, "t")],
    [[1, 2], [3, 4]],
    [{"a": 1, "b": {"c": np.zeros(2), "d": [1.0, 2.0]}}, {"a": 2, "b": {"c": np.ones(2), "d": [3.0, 4.0]}}],
    [Point(1, 2.5), Point(3, 4.5)],
    [{"p": Point(np.int64(1), (1, 2))}, {"p": Point(np.int64(2), (3, 4))}],
]


@pytest.mark.parametrize("batch", SAMPLES, ids=range(len(SAMPLES)))
def test_default_collate_matches_torch(batch):
    assert _plain(eud.default_collate(batch)) == _plain(tud.default_collate(batch))


def test_default_collate_tensors_and_errors():
    e = eud.default_collate([ember.ones(2, 3), ember.zeros(2, 3)])
    t = tud.default_collate([torch.ones(2, 3), torch.zeros(2, 3)])
    assert _plain(e) == _plain(t)
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        eud.default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="equal size"):
        eud.default_collate([[1, 2], [3]])
    with pytest.raises(TypeError):
        eud.default_collate([np.array(["a"]), np.array(["b"])])
    assert _plain(eud.default_convert({"a": np.arange(2), "b": "x"})) == _plain(tud.default_convert({"a": np.arange(2), "b": "x"}))


@pytest.mark.parametrize("kwargs", [dict(batch_size=4), dict(batch_size=4, drop_last=True), dict(batch_size=1),
                                    dict(batch_size=None), dict(batch_size=20), dict(batch_size=3, collate_fn=lambda b: b)])
def test_sequential_batches_match_torch(kwargs):
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    y = np.arange(10)
    e = list(eud.DataLoader(eud.TensorDataset(ember.tensor(x), ember.tensor(y)), **kwargs))
    t = list(tud.DataLoader(tud.TensorDataset(torch.tensor(x), torch.tensor(y)), **kwargs))
    assert _plain(e) == _plain(t)
    assert len(eud.DataLoader(eud.TensorDataset(ember.tensor(x)), **kwargs)) == len(t)


def test_dict_dataset_and_batch_sampler_match_torch():
    class DS:
        def __len__(self):
            return 7

        def __getitem__(self, i):
            return {"id": i, "name": f"s{i}", "feat": np.full(2, i, dtype=np.float32), "pair": (i, float(i))}

    batches = [[0, 1], [6, 2, 3], [5]]
    e = list(eud.DataLoader(DS(), batch_sampler=batches))
    t = list(tud.DataLoader(DS(), batch_sampler=batches))
    assert _plain(e) == _plain(t)
    sampler = [6, 5, 4, 3, 2, 1, 0]
    e = list(eud.DataLoader(DS(), batch_size=3, sampler=sampler))
    t = list(tud.DataLoader(DS(), batch_size=3, sampler=sampler))
    assert _plain(e) == _plain(t)


def test_argument_errors_match_torch():
    ds = eud.TensorDataset(ember.arange(4))
    tds = tud.TensorDataset(torch.arange(4))
    cases = [dict(batch_sampler=[[0]], batch_size=2), dict(sampler=[0, 1], shuffle=True),
             dict(batch_size=None, drop_last=True), dict(num_workers=-1), dict(prefetch_factor=2),
             dict(persistent_workers=True)]
    for kw in cases:
        with pytest.raises(ValueError) as te:
            tud.DataLoader(tds, **kw)
        with pytest.raises(ValueError) as ee:
            eud.DataLoader(ds, **kw)
        assert str(ee.value).split()[:3] == str(te.value).split()[:3], kw


def test_signatures_match_torch():
    for name in ["DataLoader", "RandomSampler", "SequentialSampler", "BatchSampler", "TensorDataset", "Subset",
                 "SubsetRandomSampler"]:
        e = inspect.signature(getattr(eud, name))
        t = inspect.signature(getattr(tud, name))
        assert [(p.name, p.kind, p.default) for p in e.parameters.values()] == \
               [(p.name, p.kind, p.default) for p in t.parameters.values()], name


def test_random_sampler_properties():
    data = range(10)
    g = ember.Generator().manual_seed(3)
    perm = list(eud.RandomSampler(data, generator=g))
    assert sorted(perm) == list(range(10)) and perm != list(range(10))
    assert list(eud.RandomSampler(data, generator=ember.Generator().manual_seed(3))) == perm   # reproducible
    assert list(eud.RandomSampler(data, generator=g)) != perm                                 # the stream moves on
    long = list(eud.RandomSampler(data, num_samples=25, generator=g))
    assert len(long) == 25 and sorted(long[:10]) == list(range(10)) and sorted(long[10:20]) == list(range(10))
    rep = list(eud.RandomSampler(data, replacement=True, num_samples=100, generator=g))
    assert len(rep) == 100 and set(rep) <= set(range(10)) and len(set(rep)) < 100 and len(set(rep)) > 5
    ember.manual_seed(7)
    a = list(eud.RandomSampler(data))
    ember.manual_seed(7)
    assert list(eud.RandomSampler(data)) == a
    with pytest.raises(ValueError, match="num_samples"):
        eud.RandomSampler(data, num_samples=0)
    # a shuffled loader visits every sample once per epoch, and epochs differ
    ds = eud.TensorDataset(ember.arange(20))
    loader = eud.DataLoader(ds, batch_size=6, shuffle=True, generator=ember.Generator().manual_seed(0))
    e1 = [v for b in loader for v in b[0].tolist()]
    e2 = [v for b in loader for v in b[0].tolist()]
    assert sorted(e1) == sorted(e2) == list(range(20)) and e1 != e2
    assert [len(b[0]) for b in loader] == [6, 6, 6, 2]


def test_random_split_and_subset():
    for lengths in ([3, 7], [0.3, 0.7], [0.33, 0.33, 0.34], [0.5, 0.5], [1 / 3] * 3):
        e = eud.random_split(range(11 if isinstance(lengths[0], float) else 10), lengths,
                             generator=ember.Generator().manual_seed(0))
        t = tud.random_split(range(11 if isinstance(lengths[0], float) else 10), lengths,
                             generator=torch.Generator().manual_seed(0))
        assert [len(s) for s in e] == [len(s) for s in t]
        flat = sorted(i for s in e for i in s.indices)
        assert flat == list(range(len(flat)))
    with pytest.raises(ValueError, match="Sum of input lengths"):
        eud.random_split(range(10), [3, 3])
    s = eud.Subset(list("abcdef"), [5, 0, 2])
    assert len(s) == 3 and [s[i] for i in range(3)] == ["f", "a", "c"]


class _Squares(eud.Dataset):
    def __len__(self):
        return 23

    def __getitem__(self, i):
        info = eud.get_worker_info()
        return {"x": ember.tensor([float(i * i)]), "worker": -1 if info is None else info.id,
                "rand": random.random()}


def test_workers_give_the_same_batches_in_order():
    ref = list(eud.DataLoader(_Squares(), batch_size=4))
    out = list(eud.DataLoader(_Squares(), batch_size=4, num_workers=2, pin_memory=True))
    assert [b["x"].tolist() for b in out] == [b["x"].tolist() for b in ref]
    assert {w for b in out for w in b["worker"].tolist()} == {0, 1}
    assert all(w == -1 for b in ref for w in b["worker"].tolist())
    assert eud.get_worker_info() is None


def _init_fn(worker_id):
    info = eud.get_worker_info()
    assert info.id == worker_id and info.num_workers == 3
    random.seed(1000 + worker_id)


def test_worker_seeding_and_init_fn():
    loader = eud.DataLoader(_Squares(), batch_size=2, num_workers=3, generator=ember.Generator().manual_seed(5))
    r1 = [b["rand"].tolist() for b in loader]
    r2 = [b["rand"].tolist() for b in eud.DataLoader(_Squares(), batch_size=2, num_workers=3,
                                                     generator=ember.Generator().manual_seed(5))]
    assert r1 == r2                                           # same generator seed: same worker seeds
    flat = [v for b in r1 for v in b]
    assert len(set(flat)) == len(flat)                        # workers do not share a random stream
    r3 = [b["rand"].tolist() for b in eud.DataLoader(_Squares(), batch_size=2, num_workers=3,
                                                     worker_init_fn=_init_fn)]
    first = random.Random(1000).random()
    assert r3[0][0] == first                                  # worker 0 ran _init_fn before its first sample


class _Stream(eud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = eud.get_worker_info()
        wid, nw = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(wid, self.n, nw))


def test_iterable_dataset_single_and_workers():
    assert [b.tolist() for b in eud.DataLoader(_Stream(10), batch_size=4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [b.tolist() for b in eud.DataLoader(_Stream(10), batch_size=4, drop_last=True)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    t = [b.tolist() for b in tud.DataLoader(_TorchStream(11), batch_size=2, num_workers=2)]
    e = [b.tolist() for b in eud.DataLoader(_Stream(11), batch_size=2, num_workers=2)]
    assert e == t          # round robin over the workers, as torch
    with pytest.raises(ValueError, match="shuffle"):
        eud.DataLoader(_Stream(3), shuffle=True)


class _TorchStream(tud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = tud.get_worker_info()
        return iter(range(info.id, self.n, info.num_workers))


class _Faulty(eud.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise KeyError("sample 5 is broken")
        return i


def test_worker_errors_are_reraised():
    with pytest.raises(KeyError, match="sample 5 is broken"):
        list(eud.DataLoader(_Faulty(), batch_size=2, num_workers=2))
    with pytest.raises(KeyError, match="sample 5 is broken"):
        list(eud.DataLoader(_Faulty(), batch_size=2))


def test_breaking_out_of_an_epoch_stops_the_workers():
    import gc
    import multiprocessing as mp
    import time

    ds = eud.TensorDataset(ember.arange(100))
    for _ in range(2):
        for b in eud.DataLoader(ds, batch_size=4, num_workers=2):
            assert b[0].tolist() == [0, 1, 2, 3]
            break
    gc.collect()
    deadline = time.time() + 10
    while mp.active_children() and time.time() < deadline:
        time.sleep(0.1)
    assert mp.active_children() == []
