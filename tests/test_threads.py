"""ember.set_num_threads / get_num_threads: the cpu backend's BLAS thread pool, torch's API and errors."""
import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentTypeError, ArgumentValueError


@pytest.fixture
def restore_threads():
    before = ember.get_num_threads()
    yield
    ember.set_num_threads(before)


def test_set_and_get_round_trip_and_results_unchanged(restore_threads):
    from threadpoolctl import threadpool_info

    a = ember.tensor(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32))
    expected = (a @ a).numpy()
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1
    blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    assert blas and set(blas) == {1}                      # numpy's BLAS itself was limited
    np.testing.assert_array_equal((a @ a).numpy(), expected)


@pytest.mark.parametrize("value", [0, -2, 1.5, True, "2"])
def test_bad_values_raise_like_torch(value, restore_threads):
    with pytest.raises(RuntimeError) as torch_err:
        torch.set_num_threads(value)
    expected = ArgumentValueError if isinstance(value, int) and not isinstance(value, bool) else ArgumentTypeError
    with pytest.raises(expected) as err:
        ember.set_num_threads(value)
    assert str(err.value).startswith(str(torch_err.value).split(",")[0])
