"""The __torch_function__ protocol on Tensor subclasses, against PyTorch's documented behaviour."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher import keys as K


def logging_tensor_class(lib):
    """The docs' LoggingTensor: log each call, then let the default run it."""
    class LoggingTensor(lib.Tensor):
        log: list = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.log.append((func.__name__, tuple(t.__name__ for t in types)))
            return super().__torch_function__(func, types, args, kwargs)
    return LoggingTensor


def program(lib, t):
    a = lib.exp(t)
    b = a.sum()
    c = lib.add(t, t, alpha=2)
    d, e = lib.split(c, 2)
    return a, b, c, d, e


def test_a_logging_tensor_sees_each_call_and_its_results_keep_its_type():
    E, T = logging_tensor_class(ember), logging_tensor_class(torch)
    values = np.arange(4, dtype=np.float32)
    ours = program(ember, ember.tensor(values).as_subclass(E))
    theirs = program(torch, torch.tensor(values).as_subclass(T))
    ours_log, theirs_log = list(E.log), list(T.log)
    assert [type(r).__name__ for r in ours] == [type(r).__name__ for r in theirs] == ["LoggingTensor"] * 5
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-6)
    # the same public functions, in the same order
    assert [name for name, _ in ours_log] == [name for name, _ in theirs_log] == ["exp", "sum", "add", "split"]
    assert all(types == ("LoggingTensor",) for _, types in ours_log)


def test_a_subclass_without_its_own_protocol_keeps_its_type_and_parameters_do_not():
    class Plain(ember.Tensor):
        pass

    class TorchPlain(torch.Tensor):
        pass

    x, tx = ember.ones(2).as_subclass(Plain), torch.ones(2).as_subclass(TorchPlain)
    assert type(x * 2) is Plain and type(tx * 2) is TorchPlain
    p, tp = ember.nn.Parameter(ember.ones(2)), torch.nn.Parameter(torch.ones(2))
    assert type(p * 2) is ember.Tensor and type(tp * 2) is torch.Tensor
    assert not p._keys & K.TORCH_FUNCTION and not ember.ones(2)._keys & K.TORCH_FUNCTION


def test_not_implemented_from_every_type_is_a_type_error():
    class Refuses(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    x = ember.ones(2).as_subclass(Refuses)
    with pytest.raises(TypeError, match=r"no implementation found for 'exp' on types that implement "
                                        r"__torch_function__: \['.*Refuses'\]"):
        ember.exp(x)


def test_an_override_can_replace_the_result():
    class Constant(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is ember.exp:
                return "replaced"
            return super().__torch_function__(func, types, args, kwargs)

    x = ember.zeros(3).as_subclass(Constant)
    assert ember.exp(x) == "replaced" and x.exp() == "replaced"
    assert isinstance(ember.neg(x), Constant)


def test_the_subclass_is_preferred_when_several_types_override():
    order = []

    class Base(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append(("Base", [t.__name__ for t in types]))
            return super().__torch_function__(func, types, args, kwargs)

    class Child(Base):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append(("Child", [t.__name__ for t in types]))
            return super().__torch_function__(func, types, args, kwargs)

    r = ember.add(ember.ones(2).as_subclass(Base), ember.ones(2).as_subclass(Child))
    assert order[0] == ("Child", ["Child", "Base"])
    assert isinstance(r, Child)


def test_make_subclass_and_autograd_through_a_subclass():
    class Wrapped(ember.Tensor):
        pass

    w = ember.Tensor._make_subclass(Wrapped, ember.ones(3), True)
    assert isinstance(w, Wrapped) and w.requires_grad
    (w * 3).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0, 3.0])


def test_named_tuple_results_keep_their_type_and_the_subclass():
    E = logging_tensor_class(ember)
    values, indices = ember.tensor([[1.0, 5.0], [7.0, 2.0]]).as_subclass(E).max(0)
    T = logging_tensor_class(torch)
    tv, ti = torch.tensor([[1.0, 5.0], [7.0, 2.0]]).as_subclass(T).max(0)
    assert type(values).__name__ == type(tv).__name__ == "LoggingTensor"
    assert values.tolist() == tv.tolist() and indices.tolist() == ti.tolist()
