"""Error inputs of every op on the device under test (meta included: the checks run in the
shared shape rules, before any kernel, so every device raises the same errors).

For each error input: torch (on cpu) still raises the recorded built-in class (else the
expectation is stale); ember raises an EmberError deriving from that same built-in class,
and its message names the op and the offending argument.
"""
from __future__ import annotations

import pytest
import torch

import ember
from ember.core.errors import EmberError

from .compare import calls
from .op_db import OP_DB, materialize
from .plugin import NUMPY_WARNINGS, failure_reason, known_failure

pytestmark = NUMPY_WARNINGS

_BUILTIN = (NotImplementedError, IndexError, TypeError, ValueError, KeyError, RuntimeError)


def builtin_class(exc: BaseException) -> type:
    """The most specific built-in exception class `exc` is an instance of."""
    for cls in type(exc).__mro__:
        if cls in _BUILTIN:
            return cls
    return type(exc)


ERROR_CASES = [pytest.param(op, i, id=f"{op.name}-{err.sample.desc}") for op in OP_DB if op.errors is not None
               for i, err in enumerate(op.errors(op.rng("errors")))]


@pytest.mark.parametrize("op,index", ERROR_CASES)
def test_errors(op, index, ember_device):
    err = op.errors(op.rng("errors"))[index]
    s = err.sample
    if ember_device.is_meta and not s.meta:
        pytest.skip("a data-dependent check (the values are read): meta tensors carry no data")
    where = f"{op.name} error input '{s.desc}' on {ember_device.name}"
    if ember_device.is_meta and not s.meta:
        pytest.skip("a data-dependent error (index values): meta tensors carry no data, and torch's meta device "
                    "does not raise it either")
    call_e, call_t = calls(op, s)
    t_args, t_kw, _ = materialize(torch, s, "cpu")
    with pytest.raises(Exception) as t_info:
        call_t(torch, *t_args, **t_kw)
    assert builtin_class(t_info.value) is err.exc, \
        f"{where}: the expectation is stale: torch raises {type(t_info.value).__name__}: {t_info.value}"
    with known_failure(failure_reason(op, f"errors:{s.desc}", None, ember_device)):
        e_args, e_kw, _ = materialize(ember, s, ember_device.name)
        try:
            call_e(ember, *e_args, **e_kw)
        except Exception as exc:    # noqa: BLE001
            e = exc
        else:
            pytest.fail(f"{where}: ember raised nothing; torch raises {err.exc.__name__}: {t_info.value}")
        assert builtin_class(e) is err.exc, \
            f"{where}: ember raised {type(e).__name__} ({builtin_class(e).__name__}): {e}; torch raises " \
            f"{err.exc.__name__}: {t_info.value}"
        assert isinstance(e, EmberError), f"{where}: {type(e).__module__}.{type(e).__name__} is not an EmberError: {e}"
        for m in err.match:
            assert m in str(e), f"{where}: message {str(e)!r} does not name {m!r}"
