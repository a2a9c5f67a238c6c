"""ember.fx's IR: building, printing, editing and running graphs (torch.fx's behaviour)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatcher import ALL_OPS
from ember.export import export
from ember.fx import Graph, GraphModule, Interpreter, Transformer

nn, F = ember.nn, ember.nn.functional


def hand_built() -> Graph:
    g = Graph()
    x = g.placeholder("x")
    w = g.get_attr("weight")
    y = g.call_function(ALL_OPS["mul.Tensor"], (x, w))
    z = g.call_function(ALL_OPS["relu"], (y,))
    g.output(z)
    return g


def test_a_hand_built_graph_prints_runs_and_reads_its_attributes():
    g = hand_built()
    g.lint()
    assert str(g) == (
        "graph():\n"
        "    %x : [num_users=1] = placeholder[target=x]\n"
        "    %weight : [num_users=1] = get_attr[target=weight]\n"
        "    %mul : [num_users=1] = call_function[target=ember.ops.mul.Tensor](args = (%x, %weight), kwargs = {})\n"
        "    %relu : [num_users=1] = call_function[target=ember.ops.relu](args = (%mul,), kwargs = {})\n"
        "    return %relu")
    gm = GraphModule({"weight": ember.tensor([1.0, -2.0, 3.0])}, g)
    assert gm.code == ("def forward(self, x):\n    weight = self.weight\n    mul = ember.ops.mul.Tensor(x, weight)\n"
                       "    relu = ember.ops.relu(mul)\n    return relu\n")
    out = gm(ember.tensor([2.0, 2.0, -1.0]))
    np.testing.assert_array_equal(out.numpy(), [2.0, 0.0, 0.0])
    assert dict(gm.named_buffers())["weight"].tolist() == [1.0, -2.0, 3.0]


def test_print_tabular_lists_every_node():
    text = hand_built().tabular()
    lines = text.split("\n")
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert lines[5].split() == ["call_function", "relu", "ember.ops.relu", "(mul,)", "{}"]
    assert lines[4].split() == ["call_function", "mul", "ember.ops.mul.Tensor", "(x,", "weight)", "{}"]
    assert lines[-1].split()[:3] == ["output", "output", "output"]


def test_editing_a_graph_keeps_users_consistent():
    g = hand_built()
    mul, relu = g.find_nodes(op="call_function")
    with g.inserting_after(mul):
        neg = g.call_function(ALL_OPS["neg"], (mul,))
    relu.replace_input_with(mul, neg)
    assert list(mul.users) == [neg] and list(neg.users) == [relu]
    with pytest.raises(RuntimeError, match="Tried to erase Node mul but it still had 1 users"):
        g.erase_node(mul)
    g.lint()
    gm = GraphModule({"weight": ember.tensor([1.0, 1.0])}, g)
    np.testing.assert_array_equal(gm(ember.tensor([2.0, -3.0])).numpy(), [0.0, 3.0])
    relu.replace_input_with(neg, mul)
    assert g.eliminate_dead_code() and "neg" not in [n.name for n in g.nodes]


def test_lint_refuses_a_node_reading_a_later_one():
    g = hand_built()
    mul, relu = g.find_nodes(op="call_function")
    with g.inserting_before(mul):
        g.call_function(ALL_OPS["neg"], (relu,))
    with pytest.raises(RuntimeError, match="reads relu, which is not defined before it"):
        g.lint()


class ReluToGelu(Transformer):
    def call_function(self, target, args, kwargs):
        if target is ALL_OPS["relu"]:
            return super().call_function(ALL_OPS["gelu"], (args[0], "none"), {})
        return super().call_function(target, args, kwargs)


def test_a_transformer_rewriting_every_relu_matches_the_rewrite_by_hand():
    ember.manual_seed(0)
    relu_net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    gelu_net = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 2))
    gelu_net.load_state_dict(relu_net.state_dict())
    x = ember.randn(3, 4)
    ep = export(relu_net, (x,))
    rewritten = ReluToGelu(ep.graph_module).transform()
    targets = [n.target.name for n in rewritten.graph.nodes if n.op == "call_function"]
    assert targets == ["linear", "gelu", "linear", "gelu", "linear"]
    state = ep.state_inputs()
    got = rewritten(*state, x)[0]
    np.testing.assert_array_equal(got.detach().numpy(), gelu_net(x).detach().numpy())


def test_an_interpreter_subclass_sees_every_node():
    ember.manual_seed(1)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
    ep = export(net, (ember.randn(2, 4),))
    shapes = []

    class Shapes(Interpreter):
        def run_node(self, node):
            value = super().run_node(node)
            if node.op == "call_function":
                shapes.append((node.name, tuple(value.shape)))
            return value

    Shapes(ep.graph_module).run(*ep.state_inputs(), ember.randn(2, 4))
    assert shapes == [("linear", (2, 8)), ("relu", (2, 8))]


def test_a_dispatch_mode_sees_calls_mixing_devices():
    from ember.frontend.mode import DispatchMode

    seen = []

    class Record(DispatchMode):
        def __ember_dispatch__(self, op, args):
            seen.append((op.name, tuple(a.device.type for a in args if isinstance(a, ember.Tensor))))
            return None

    a, b = ember.ones(2), ember.empty(2, device="meta")
    with Record():
        a + b
    assert seen == [("add.Tensor", ("cpu", "meta"))]
    with pytest.raises(RuntimeError, match="expected all tensors to be on the same device"):
        a + b
