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


# ------------------------------------------------------------------------------ symbolic tracing
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from ember.fx import TraceError, symbolic_trace  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import char_gpt  # noqa: E402
import digits_cnn  # noqa: E402


def test_symbolic_trace_of_a_sequential_keeps_its_layers_as_call_module_nodes():
    ember.manual_seed(2)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    gm = symbolic_trace(model)
    assert [(n.op, n.target) for n in gm.graph.nodes] == [
        ("placeholder", "input"), ("call_module", "0"), ("call_module", "1"), ("call_module", "2"),
        ("output", "output")]
    assert "_0 = getattr(self, '0')(input)" in gm.code
    x = ember.randn(3, 4)
    np.testing.assert_array_equal(gm(x).detach().numpy(), model(x).detach().numpy())


def test_symbolic_trace_of_the_digits_cnn_records_its_functions_and_runs_exactly():
    import torch

    ember.manual_seed(3)
    net = digits_cnn.cnn_model(ember)().eval()
    gm = symbolic_trace(net)
    ours = [(n.op, n.target if isinstance(n.target, str) else n.target.__name__) for n in gm.graph.nodes]
    theirs = [(n.op, n.target if isinstance(n.target, str) else n.target.__name__)
              for n in torch.fx.symbolic_trace(digits_cnn.cnn_model(torch)()).graph.nodes]
    assert ours == theirs          # the same calls, kinds and order as torch.fx records for the torch model
    x = ember.randn(2, 1, 8, 8)
    np.testing.assert_array_equal(gm(x).detach().numpy(), net(x).detach().numpy())


def test_rewriting_every_relu_of_a_symbolic_trace_matches_the_rewrite_by_hand():
    ember.manual_seed(4)
    F_ = ember.nn.functional

    class Block(nn.Module):
        def __init__(self, act):
            super().__init__()
            self.fc1, self.act, self.fc2 = nn.Linear(4, 8), act, nn.Linear(8, 4)

        def forward(self, x):
            return F_.relu(self.fc2(self.act(self.fc1(x)))) + x

    relu_net, gelu_net = Block(nn.ReLU()), Block(nn.GELU())
    gelu_net.load_state_dict(relu_net.state_dict())
    gm = symbolic_trace(relu_net)
    for node in gm.graph.nodes:
        if node.op == "call_module" and isinstance(getattr(gm, node.target), nn.ReLU):
            setattr(gm, node.target, nn.GELU())
        elif node.op == "call_function" and node.target is F_.relu or getattr(node.target, "__name__", "") == "relu":
            node.target = ember.nn.functional.gelu
    gm.recompile()
    targets = [getattr(n.target, "__name__", None) for n in gm.graph.nodes if n.op == "call_function"]
    assert "relu" not in targets and targets.count("gelu") == 1 and "gelu(fc2)" in gm.code
    assert all(not isinstance(m, nn.ReLU) for m in gm.modules())

    class GeluBlock(Block):
        def forward(self, x):
            return F_.gelu(self.fc2(self.act(self.fc1(x)))) + x

    by_hand = GeluBlock(nn.GELU())
    by_hand.load_state_dict(relu_net.state_dict())
    x = ember.randn(3, 4)
    np.testing.assert_array_equal(gm(x).detach().numpy(), by_hand(x).detach().numpy())


def test_unpacking_a_traced_value_and_methods_and_attributes_are_recorded():
    class Halves(nn.Module):
        def forward(self, x):
            a, b = x.split(2, dim=1)
            n = x.shape[0]
            return a * b, n

    gm = symbolic_trace(Halves())
    kinds = [(n.op, getattr(n.target, "__name__", n.target)) for n in gm.graph.nodes]
    assert ("call_method", "split") in kinds and kinds.count(("call_function", "getitem")) == 3
    assert ("call_function", "getattr") in kinds
    x = ember.randn(3, 4)
    got, n = gm(x)
    a, b = x.split(2, dim=1)
    np.testing.assert_array_equal(got.numpy(), (a * b).numpy())
    assert n == 3


def test_control_flow_on_a_traced_value_fails_as_in_torch_fx():
    import torch

    cfg = char_gpt.GPTConfig(vocab_size=20, block_size=8, n_layer=1, n_head=2, n_embd=16, dropout=0.0)
    with pytest.raises(TraceError, match="symbolically traced variables cannot be used as inputs to control flow"):
        symbolic_trace(char_gpt.gpt_model(ember)(cfg))
    with pytest.raises(torch.fx.proxy.TraceError, match="symbolically traced variables cannot be used as inputs "
                                                         "to control flow"):
        torch.fx.symbolic_trace(char_gpt.gpt_model(torch)(cfg))


def test_replace_pattern_rewrites_every_occurrence_and_leaves_shared_values_alone():
    from ember.fx import subgraph_rewriter

    class M(nn.Module):
        def forward(self, x, y):
            a = ember.relu(x + y)
            b = ember.relu(a + y)
            c = x + y                      # the same sum, but its relu is not taken: not a match
            return a, b, c * 2

    def pattern(u, v):
        return ember.relu(u + v)

    def replacement(u, v):
        return ember.sigmoid(u - v)

    gm = symbolic_trace(M())
    matches = subgraph_rewriter.replace_pattern(gm, pattern, replacement)
    assert len(matches) == 2
    names = [getattr(n.target, "__name__", n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert names.count("sigmoid") == 2 and "relu" not in names and names.count("add") == 1
    x, y = ember.randn(3), ember.randn(3)
    a, b, c = gm(x, y)
    want_a = ember.sigmoid(x - y)
    np.testing.assert_array_equal(a.numpy(), want_a.numpy())
    np.testing.assert_array_equal(b.numpy(), ember.sigmoid(want_a - y).numpy())
    np.testing.assert_array_equal(c.numpy(), ((x + y) * 2).numpy())


def test_nested_insertion_points_keep_their_places():
    import operator

    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.neg, (x,))
    c = g.call_function(operator.abs, (a,))
    g.output(c)
    with g.inserting_before(c):
        with g.inserting_before(a):
            g.call_function(operator.pos, (x,), name="inner")
        g.call_function(operator.pos, (a,), name="outer")
    assert [n.name for n in g.nodes] == ["x", "inner", "neg", "outer", "abs", "output"]     # torch.fx's order
    g.lint()


def test_a_dict_root_may_name_nested_attributes_by_their_dotted_path():
    g = Graph()
    x = g.placeholder("x")
    w = g.get_attr("lin.weight")
    g.output(g.call_function(ALL_OPS["mul.Tensor"], (x, w)))
    gm = GraphModule({"lin.weight": ember.tensor([2.0, 3.0])}, g)
    np.testing.assert_array_equal(gm(ember.ones(2)).numpy(), [2.0, 3.0])
