"""ember.ops: the registry ops by the names printed graphs use."""
from __future__ import annotations

import pytest

import ember
import ember.ops as ops
from ember.dispatcher import ALL_OPS


def test_every_op_is_reachable_by_its_printed_name():
    for name, op in ALL_OPS.items():
        base, _, overload = name.partition(".")
        found = getattr(ops, base)
        if overload:
            found = getattr(found, overload)
        elif not hasattr(found, "schema"):
            found = found.default
        assert found is op, name


def test_ops_are_callable_and_name_their_overloads():
    x = ember.tensor([1.0, -2.0])
    assert ops.neg(x).tolist() == [-1.0, 2.0]
    assert ops.add.Tensor(x, x, 1).tolist() == [2.0, -4.0]
    assert "Tensor" in ops.add.overloads()
    with pytest.raises(AttributeError, match="has no overload 'nope'"):
        ops.add.nope
    with pytest.raises(AttributeError, match="has no op 'no_such_op'"):
        ops.no_such_op


def test_the_code_of_an_exported_program_names_callable_targets():
    from ember.export import export

    ep = export(ember.nn.Linear(2, 3), (ember.ones(1, 2),))
    assert "ember.ops.linear(" in ep.graph_module.code
    assert ops.linear is ALL_OPS["linear"]
