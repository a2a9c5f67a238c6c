"""Sparse COO tensors (ember/sparse) against torch: construction and its errors, coalesce, to_dense /
to_sparse, the ops of the Sparse dispatch key, gradients of the dense side, printing, a graph
network's training step, and sizing on meta."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.memory

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")

IDX = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]          # (0, 2) twice: uncoalesced
VAL = [3.0, 4.0, 5.0, -1.0, 2.0]


def pair(indices=IDX, values=VAL, size=(3, 3), dtype="float64"):
    e = ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values, dtype=getattr(ember, dtype)), size)
    t = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values, dtype=getattr(torch, dtype)), size)
    return e, t


def same_sparse(e, t):
    assert e.is_sparse and t.is_sparse
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    ec, tc = e.coalesce(), t.coalesce()
    np.testing.assert_array_equal(ec.indices().numpy(), tc.indices().numpy())
    np.testing.assert_allclose(ec.values().numpy(), tc.values().numpy(), rtol=1e-12)


def test_construction_matches_torch_and_reports_its_structure():
    e, t = pair()
    assert e.layout is ember.sparse_coo and repr(e.layout) == "ember.sparse_coo"
    assert ember.ones(2).layout is ember.strided and not ember.ones(2).is_sparse
    assert (e.sparse_dim(), e.dense_dim(), e._nnz(), e.is_coalesced()) == (
        t.sparse_dim(), t.dense_dim(), t._nnz(), t.is_coalesced())
    np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
    np.testing.assert_array_equal(e.to_dense().numpy(), t.to_dense().numpy())
    inferred = ember.sparse_coo_tensor(ember.tensor(IDX), ember.tensor(VAL))
    assert tuple(inferred.shape) == tuple(torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL)).shape)
    legacy = ember.sparse.FloatTensor(ember.tensor(IDX), ember.tensor(VAL), ember.Size([3, 3]))
    assert legacy.dtype is ember.float32 and legacy.is_sparse


def test_hybrid_tensor_with_dense_dims():
    values = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    e, t = pair([[0, 2, 0]], values, (3, 2))
    assert (e.sparse_dim(), e.dense_dim()) == (1, 1)
    np.testing.assert_array_equal(e.to_dense().numpy(), t.to_dense().numpy())
    same_sparse(e, t)
    same_sparse(ember.sparse.sum(e, 1), torch.sparse.sum(t, 1))
    np.testing.assert_allclose(ember.sparse.sum(e, 0).numpy(), torch.sparse.sum(t, 0).numpy())


@pytest.mark.parametrize("indices, values, size", [
    (IDX, VAL, (1, 3)),                  # index past the size
    ([[0, -1, 1, 0, 2], [2, 0, 2, 2, 1]], VAL, (3, 3)),   # negative index
    (IDX, VAL[:2], (3, 3)),              # nnz differs
    (IDX[0], VAL, (3, 3)),               # indices not 2-D
    (IDX, VAL, (3,)),                    # size has too few dims
])
def test_bad_construction_raises_torchs_class(indices, values, size):
    with pytest.raises(RuntimeError) as theirs:
        torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), size, check_invariants=True)
    with pytest.raises(type(theirs.value)) as ours:
        ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values), size)
    assert "sparse_coo_tensor()" in str(ours.value)


def test_float_indices_and_a_wrong_dense_size_are_refused():
    with pytest.raises(RuntimeError, match="int64"):
        ember.sparse_coo_tensor(ember.tensor(IDX).float(), ember.tensor(VAL), (3, 3))
    with pytest.raises(RuntimeError, match="values has incorrect size"):
        ember.sparse_coo_tensor(ember.tensor([[0, 1]]), ember.ones(2, 3), (2, 2))


def test_coalesce_sums_duplicates_and_sorts():
    e, t = pair()
    ec, tc = e.coalesce(), t.coalesce()
    assert ec.is_coalesced() and ec._nnz() == tc._nnz() == 4
    same_sparse(e, t)
    with pytest.raises(RuntimeError, match="uncoalesced"):
        e.indices()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        t.indices()


def test_to_sparse_round_trip():
    dense = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, -3.0]])
    e, t = ember.tensor(dense).to_sparse(), torch.tensor(dense).to_sparse()
    assert e.is_coalesced()
    same_sparse(e, t)
    same_sparse(ember.tensor(dense).to_sparse(1), torch.tensor(dense).to_sparse(1))
    np.testing.assert_array_equal(e.to_dense().numpy(), dense)


def test_pointwise_and_reductions_match_torch():
    e, t = pair()
    e2, t2 = pair([[2, 1], [0, 1]], [7.0, 8.0])
    same_sparse(e + e2, t + t2)
    same_sparse(e - e2, t - t2)
    same_sparse(e * 2.5, t * 2.5)
    same_sparse(e / 4, t / 4)
    same_sparse(-e, -t)
    same_sparse(e * ember.tensor(3.0, dtype=ember.float64), t * torch.tensor(3.0, dtype=torch.float64))
    dense = np.arange(9.0).reshape(3, 3)
    same_sparse(e * ember.tensor(dense), t * torch.tensor(dense))
    np.testing.assert_allclose((ember.tensor(dense) + e).numpy(), (torch.tensor(dense) + t).numpy())
    np.testing.assert_allclose(ember.add(ember.tensor(dense), e, alpha=2).numpy(),
                               torch.add(torch.tensor(dense), t, alpha=2).numpy())
    assert e.sum().item() == t.sum().item()
    same_sparse(e.sum(0), t.sum(0))
    same_sparse(e.t(), t.t())
    same_sparse(e.transpose(0, 1), t.transpose(0, 1))
    same_sparse(e.float(), t.float())
    same_sparse(e.clone(), t.clone())
    same_sparse(e.detach(), t.detach())


def test_unsupported_ops_and_operand_orders_raise_torchs_classes():
    e, t = pair()
    with pytest.raises(NotImplementedError) as theirs:
        torch.exp(t)
    with pytest.raises(NotImplementedError, match="'exp'.*'SparseCPU'"):
        ember.exp(e)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        t + torch.ones(3, 3, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        e + ember.ones(3, 3, dtype=ember.float64)
    with pytest.raises(TypeError, match="Sparse layout"):
        t.numpy()
    with pytest.raises(TypeError, match="Sparse layout"):
        e.numpy()
    with pytest.raises(RuntimeError):
        ember.mm(e, ember.ones(4, 2, dtype=ember.float64))
    with pytest.raises(RuntimeError):
        torch.mm(t, torch.ones(4, 2, dtype=torch.float64))
    assert theirs.type is NotImplementedError


def test_mm_values_and_gradients_of_the_dense_operand_match_torch():
    e, t = pair()
    x = np.random.default_rng(0).standard_normal((3, 4))
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    for mm_e, mm_t in [(ember.sparse.mm, torch.sparse.mm), (ember.mm, torch.mm), (ember.spmm, torch.spmm),
                       (ember.matmul, torch.matmul)]:
        ex.grad = tx.grad = None
        ey, ty = mm_e(e, ex), mm_t(t, tx)
        np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
        w = np.random.default_rng(1).standard_normal((3, 4))
        (ey * ember.tensor(w)).sum().backward()
        (ty * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    bias = np.ones((3, 4))
    np.testing.assert_allclose(
        ember.addmm(ember.tensor(bias), e, ex, beta=0.5, alpha=2).detach().numpy(),
        torch.addmm(torch.tensor(bias), t, tx, beta=0.5, alpha=2).detach().numpy(), rtol=1e-12)
    dense_left = np.random.default_rng(2).standard_normal((2, 3))
    np.testing.assert_allclose(ember.mm(ember.tensor(dense_left), e).numpy(),
                               torch.mm(torch.tensor(dense_left), t).numpy(), rtol=1e-12)
    same_sparse(ember.mm(e, e), torch.mm(t, t))


def test_a_sparse_leaf_of_mm_gets_torch_mms_dense_gradient():
    e = ember.sparse_coo_tensor(ember.tensor(IDX), ember.tensor(VAL, dtype=ember.float64), (3, 3), requires_grad=True)
    t = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL, dtype=torch.float64), (3, 3),
                                requires_grad=True)
    x = np.random.default_rng(3).standard_normal((3, 2))
    ember.mm(e, ember.tensor(x)).sum().backward()
    torch.mm(t, torch.tensor(x)).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_printing_matches_torch():
    for dtype in ("float32", "float64"):
        e, t = pair(dtype=dtype)
        assert repr(e) == repr(t).replace("torch.", "ember.")
    e, t = pair([[0, 1]], [[1.0, 2.0], [3.0, 4.0]], (3, 2), "float32")
    assert repr(e) == repr(t).replace("torch.", "ember.")
    e = ember.sparse_coo_tensor(ember.tensor(IDX), ember.tensor(VAL), (3, 3), requires_grad=True)
    t = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL), (3, 3), requires_grad=True)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert repr(e * 2).split("grad_fn")[0] == repr(t * 2).split("grad_fn")[0].replace("torch.", "ember.")
    m = ember.sparse_coo_tensor(ember.tensor([[0, 1]], device="meta"), ember.ones(2, 2, device="meta"), (3, 2))
    tm = torch.sparse_coo_tensor(torch.tensor([[0, 1]], device="meta"), torch.ones(2, 2, device="meta"), (3, 2))
    assert repr(m) == repr(tm).replace("torch.", "ember.")


def _gcn_step(lib, adjacency, features, labels, state):
    """Two graph-convolution layers (Kipf and Welling's GCN) and one SGD step; returns the loss."""
    layer1, layer2 = lib.nn.Linear(6, 8, dtype=lib.float64), lib.nn.Linear(8, 3, dtype=lib.float64)
    layer1.load_state_dict({k[2:]: lib.tensor(v) for k, v in state.items() if k.startswith("1.")})
    layer2.load_state_dict({k[2:]: lib.tensor(v) for k, v in state.items() if k.startswith("2.")})
    opt = lib.optim.SGD([*layer1.parameters(), *layer2.parameters()], lr=0.5)
    losses = []
    for _ in range(3):
        hidden = lib.relu(lib.spmm(adjacency, layer1(features)))
        logits = lib.sparse.mm(adjacency, layer2(hidden))
        loss = lib.nn.functional.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, layer1.weight.grad.numpy()


def test_a_graph_convolution_network_trains_as_in_torch():
    rng = np.random.default_rng(4)
    n = 10
    edges = rng.integers(0, n, size=(2, 30))
    weights = rng.random(30)
    feats, labels = rng.standard_normal((n, 6)), rng.integers(0, 3, n)
    state = {"1.weight": rng.standard_normal((8, 6)) * 0.3, "1.bias": np.zeros(8),
             "2.weight": rng.standard_normal((3, 8)) * 0.3, "2.bias": np.zeros(3)}
    ours = _gcn_step(ember, ember.sparse_coo_tensor(ember.tensor(edges), ember.tensor(weights), (n, n)),
                     ember.tensor(feats), ember.tensor(labels), state)
    theirs = _gcn_step(torch, torch.sparse_coo_tensor(torch.tensor(edges), torch.tensor(weights), (n, n)),
                       torch.tensor(feats), torch.tensor(labels), state)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-9, atol=1e-12)


def _sparse_layer_peak(device: str) -> tuple[int, tuple]:
    """Peak bytes of one sparse-times-dense layer's forward and backward on `device`."""
    n, nnz = 64, 300
    indices = ember.tensor(np.random.default_rng(5).integers(0, n, size=(2, nnz)), device=device)
    adjacency = ember.sparse_coo_tensor(indices, ember.ones(nnz, device=device), (n, n))
    layer = ember.nn.Linear(32, 16, device=device)
    x = ember.ones(n, 32, device=device)
    with ember.memory.track(model=layer) as mem:
        out = ember.sparse.mm(adjacency, layer(x))
        out.sum().backward()
    return mem.peak_bytes, tuple(out.shape)


def test_meta_sizes_a_sparse_layer_as_cpu_allocates():
    cpu_peak, cpu_shape = _sparse_layer_peak("cpu")
    meta_peak, meta_shape = _sparse_layer_peak("meta")
    assert meta_shape == cpu_shape == (64, 16)
    assert meta_peak == cpu_peak > 0


def test_meta_coalesce_keeps_the_most_entries_there_can_be():
    e = ember.sparse_coo_tensor(ember.tensor(IDX, device="meta"), ember.ones(5, device="meta"), (3, 3))
    c = e.coalesce()
    assert c.is_coalesced() and c._nnz() == 5 and c.device.type == "meta"


def test_sparse_mm_from_several_threads():
    from concurrent.futures import ThreadPoolExecutor

    e, t = pair()
    x = np.random.default_rng(6).standard_normal((3, 5))
    expected = torch.sparse.mm(t, torch.tensor(x)).numpy()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: ember.sparse.mm(e, ember.tensor(x)).numpy(), range(16)))
    for r in results:
        np.testing.assert_allclose(r, expected, rtol=1e-12)


@pytest.mark.parametrize("sparse_dim", [3, 0])
def test_to_sparse_refuses_a_sparse_dim_torch_refuses(sparse_dim):
    with pytest.raises(RuntimeError):
        torch.ones(2, 2).to_sparse(sparse_dim)
    with pytest.raises(RuntimeError, match="sparse_dim"):
        ember.ones(2, 2).to_sparse(sparse_dim)
    same_sparse(ember.tensor(3.0, dtype=ember.float64).to_sparse(), torch.tensor(3.0, dtype=torch.float64).to_sparse())
