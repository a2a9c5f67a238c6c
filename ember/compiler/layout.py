"""Layout copies folded into the batched products that read them.

A product of two 4-d tensors whose two batch dimensions do not merge into one stride (attention's
`q @ k.transpose(-2, -1)` over heads split out of one projection, say) decomposes into bmm's 3-d
operands, so eager code first copies each operand into contiguous memory (`empty`, `copy_`, a 3-d view
of the copy). A backend whose product kernel reads two batch strides offers it as its fused-kernel
generator's `strided_bmm` (hookspec `ember_fused_kernel_compiler`); `fold_layout_copies` then makes such
a bmm read the copied tensor in place, as a `strided_bmm` node, and the copy, unread, is gone: one kernel
launch and one pass over the operand fewer per product. Likewise a `copy_` whose source is a contiguous
view of such a copy (a head's gradient transposed back to (batch, time, heads, size), seen as (batch,
time, channels), then written into the projection's gradient) copies from the copy's source directly,
into its destination split into the source's shape.

A fold applies where nothing can tell the difference: the copy is into a fresh contiguous tensor of the
source's shape and dtype, read only through one contiguous view of all of it (for a product: its two
leading dimensions merged), that view is read only by the product or the copy, and no node between the
copy and its reader writes into the source's memory. The graph it changes is a copy; the caller's stays
as it was.
"""
from __future__ import annotations

import math

from ember.dispatcher import ALL_OPS
from ember.export.trace import view_base
from ember.frontend.autograd.grad_mode import no_grad
from ember.fx import Graph, Node

from .fusion import values_written

__all__ = ["fold_layout_copies", "strided_bmm"]


def strided_bmm(a, b):
    """bmm of operands whose leading dimensions are all batch dimensions, flattened in order: what a folded
    product computes (`ember.bmm` of the operands reshaped to 3-d). Native replay runs the backend's kernel
    instead, which reads the batch strides in place."""
    return a.reshape(-1, *a.shape[-2:]).bmm(b.reshape(-1, *b.shape[-2:]))


def fold_layout_copies(nodes: list, inputs: list, outputs, shape_spec) -> tuple[list, list, object]:
    """(nodes, inputs, outputs) of the graph with every foldable layout copy folded (see the module
    docstring): the same lists when there is none, else those of a changed copy of the graph.
    `shape_spec(node)`: the spec bmm's kernel takes for the bmm `node` (its op's shape rule), kept on the
    new node as meta["spec"]."""
    order = {n: i for i, n in enumerate(nodes)}
    products, copies = {}, {}
    for node in nodes:
        if _is_op(node, "bmm"):
            sources = [_copied(a, node, nodes, order, _merges_batch) for a in node.args[:2]]
            if any(s is not None for s in sources):
                products[node] = sources
        elif _is_op(node, "copy_") and not node.users and len(node.args) >= 2 and _is_view(node.args[1]) \
                and isinstance(node.args[0], Node) and _same_shape(node.args[0], node.args[1]):
            source = _copied(node.args[1], node, nodes, order, _merges)
            if source is not None:
                copies[node] = source
    if not products and not copies or any(n.op != "placeholder" for n in inputs) \
            or any(a not in order for n in nodes for a in n.all_input_nodes):
        return nodes, inputs, outputs       # (a backward half reading the forward's values: left as it is)
    graph = Graph()
    copied: dict = {}
    for node in nodes:
        copied[node] = graph.node_copy(node, copied.__getitem__)
    for product, sources in products.items():
        new_product = copied[product]
        operands = tuple(copied[s] if s is not None else new_product.args[i] for i, s in enumerate(sources))
        with graph.inserting_before(new_product):
            folded = graph.call_function(strided_bmm, operands)
        folded.meta = dict(new_product.meta, spec=shape_spec(product))
        new_product.replace_all_uses_with(folded)
        graph.erase_node(new_product)
        for position, source in enumerate(sources):
            if source is not None:
                _erase_copy(graph, copied[product.args[position]])
    for copy, source in copies.items():
        _fold_copy(graph, copied[copy], copied[source])
    outputs = type(outputs)(copied[o] if isinstance(o, Node) else o for o in outputs)
    return list(graph.nodes), [copied[n] for n in inputs], outputs


def _copied(view, reader: Node, nodes: list, order: dict, fits) -> Node | None:
    """The tensor that `view`, read by `reader`, shows through a contiguous copy of it, when `reader` may read
    that tensor instead: the copy is into a fresh tensor of the source's shape and dtype, read only through
    `view` (a contiguous view of all of it, shaped as `fits(view shape, source shape)` accepts), and no node
    between the copy and `reader` writes into the source's memory. Else None."""
    if not _is_view(view) or len(view.users) != 1:
        return None
    made = view.args[view.target.alias_return]
    if not _is_op(made, "empty.memory_format") or len(made.users) != 2:
        return None
    (copy,) = [u for u in made.users if u is not view]
    if not _is_op(copy, "copy_") or copy.args[0] is not made or not isinstance(copy.args[1], Node) \
            or order[copy] > order[view]:
        return None
    source = copy.args[1]
    shape, source_val, seen = tuple(made.meta["val"].shape), source.meta.get("val"), view.meta["val"]
    if getattr(source_val, "shape", None) is None or tuple(source_val.shape) != shape \
            or source_val.dtype != made.meta["val"].dtype or math.prod(shape) == 0:
        return None
    if not seen.is_contiguous() or seen.storage_offset() != 0 or not fits(tuple(seen.shape), shape):
        return None
    base = view_base(source)
    for node in nodes[order[copy] + 1:order[reader]]:
        if any(view_base(w) is base for w in values_written(node) if isinstance(w, Node)):
            return None                     # the source changes between the copy and its reader
    return source


def _same_shape(a: Node, b: Node) -> bool:
    return tuple(a.meta["val"].shape) == tuple(b.meta["val"].shape)


def _merges_batch(size: tuple, shape: tuple) -> bool:
    """A 4-d shape seen as bmm's 3-d operand: its two batch dimensions merged."""
    return len(shape) == 4 and size == (shape[0] * shape[1],) + shape[2:]


def _merges(size: tuple, shape: tuple) -> bool:
    """Whether each dimension of `size` is a run of consecutive dimensions of `shape` (a pure merge)."""
    return _runs(size, shape) is not None


def _runs(size: tuple, shape: tuple) -> list | None:
    """Per dimension of `size`, the dimensions of `shape` it merges (consecutive, their product its size);
    None when `size` is no merge of `shape`'s dimensions."""
    runs, i = [], 0
    for n in size:
        run, product = [], 1
        while i < len(shape) and (product < n or not run) and product * shape[i] <= n:
            product *= shape[i]
            run.append(i)
            i += 1
        if product != n:
            return None
        runs.append(run)
    return runs if i == len(shape) else None


def _contiguous(size: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(size):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _fold_copy(graph: Graph, copy: Node, source: Node) -> None:
    """copy_(dst, view of a copy of `source`) as copy_(dst split into `source`'s shape, `source`)."""
    dst, view = copy.args[0], copy.args[1]
    shape, dst_val = tuple(source.meta["val"].shape), dst.meta["val"]
    strides = []
    for stride, run in zip(dst_val.stride(), _runs(tuple(view.meta["val"].shape), shape)):
        inner = math.prod(shape[d] for d in run)
        for d in run:
            inner //= shape[d]
            strides.append(stride * inner)
    base, offset = view_base(dst), dst_val.storage_offset()
    with graph.inserting_before(copy):
        split = graph.call_function(ALL_OPS["as_strided"], (base, shape, tuple(strides), offset))
        folded = graph.call_function(copy.target, (split, source) + tuple(copy.args[2:]), dict(copy.kwargs))
    with no_grad():
        split.meta = {"val": base.meta["val"].as_strided(shape, tuple(strides), offset)}
    folded.meta = dict(copy.meta, val=split.meta["val"])
    graph.erase_node(copy)
    _erase_copy(graph, view)


def _erase_copy(graph: Graph, view: Node) -> None:
    """Drop the view a reader read and, when nothing else reads it, the copy behind it."""
    made = view.args[view.target.alias_return]
    if not view.users:
        graph.erase_node(view)
    copies = [u for u in made.users if _is_op(u, "copy_")]
    if len(made.users) == len(copies) == 1:
        graph.erase_node(copies[0])
        graph.erase_node(made)


def _is_op(node, name: str) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and getattr(node.target, "name", None) == name


def _is_view(node) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and getattr(node.target, "is_view", False) \
        and isinstance(node.args[node.target.alias_return], Node)
