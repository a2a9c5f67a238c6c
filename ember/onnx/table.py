"""The op table: how each registry op becomes ONNX, one entry per op (review it like the registry).

`TABLE = {registry op name: lowering}`. Most entries are made by a constructor that says the
whole mapping in one line: `unary("Relu")` (argument 0 in, one ONNX op), `binary("Mul")`
(arguments 0 and 1, a Python number taking the tensor's dtype), `same()` (the value itself:
dropout in eval, contiguous), `attr_op("Softmax", axis=1)` (argument 1 as the attribute
`axis`). Ops whose mapping needs several ONNX nodes have a named lowering below the
constructors. A lowering receives a `LoweringContext` (emitter.py) and returns the ONNX value
name(s) of the op's result(s). An op missing here raises UnsupportedOperatorError at export.
Every lowering targets opset 17 and later (LayerNormalization is the newest op used).
"""
from __future__ import annotations

import math

import numpy as np

from ember.core import dtype as _dt

from .emitter import LoweringContext, onnx_type

__all__ = ["TABLE", "MIN_OPSET"]

MIN_OPSET = 17
_INT64_MAX = 2**63 - 1


# ------------------------------------------------------------------------------ constructors
def unary(op_type: str):
    def lower(ctx: LoweringContext):
        return ctx.add(op_type, [ctx.operand(0, ctx.compute_dtype(0))])
    lower.__qualname__ = f"unary({op_type!r})"
    return lower


def binary(op_type: str):
    def lower(ctx: LoweringContext):
        dtype = ctx.compute_dtype(0, 1)
        return ctx.add(op_type, [ctx.operand(0, dtype), ctx.operand(1, dtype)])
    lower.__qualname__ = f"binary({op_type!r})"
    return lower


def same():
    def lower(ctx: LoweringContext):
        return ctx.add("Identity", [ctx.args[0]])
    lower.__qualname__ = "same()"
    return lower


def attr_op(op_type: str, **positions):
    """`op_type` of argument 0, with attributes read from argument positions."""
    def lower(ctx: LoweringContext):
        return ctx.add(op_type, [ctx.args[0]], **{k: ctx.args[i] for k, i in positions.items()})
    lower.__qualname__ = f"attr_op({op_type!r}, {positions})"
    return lower


# ------------------------------------------------------------------------------ lowerings
def _ints(ctx: LoweringContext, values) -> str:
    return ctx.const(np.array(list(values), dtype=np.int64))


def _scaled(ctx: LoweringContext, value: str, alpha) -> str:
    return value if alpha == 1 else ctx.add("Mul", [value, ctx.const(np.array(alpha), ctx.out_val.dtype)])


def add(ctx: LoweringContext):
    dtype = ctx.compute_dtype(0, 1)
    return ctx.add("Add", [ctx.operand(0, dtype), _scaled(ctx, ctx.operand(1, dtype), ctx.args[2])])


def sub(ctx: LoweringContext):
    dtype = ctx.compute_dtype(0, 1)
    return ctx.add("Sub", [ctx.operand(0, dtype), _scaled(ctx, ctx.operand(1, dtype), ctx.args[2])])


def div(ctx: LoweringContext):
    if ctx.args[2] is not None:
        raise _unsupported_argument(ctx, f"rounding_mode={ctx.args[2]!r}")
    dtype = ctx.compute_dtype(0, 1)
    return ctx.add("Div", [ctx.operand(0, dtype), ctx.operand(1, dtype)])


def linear(ctx: LoweringContext):
    x, w, b = ctx.args
    y = ctx.add("MatMul", [x, ctx.add("Transpose", [w], perm=[1, 0])])
    return y if b is None else ctx.add("Add", [y, b])


def reshape(ctx: LoweringContext):
    # a dynamic program's target shape is the op's argument, with the sizes the graph computes
    shape = _ints(ctx, ctx.out_val.shape) if ctx.static else ctx.sizes(ctx.args[1])
    return ctx.add("Reshape", [ctx.args[0], shape])


def transpose(ctx: LoweringContext):
    ndim = len(ctx.vals[0].shape)
    perm = list(range(ndim))
    d0, d1 = ctx.args[1] % ndim, ctx.args[2] % ndim
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ctx.add("Transpose", [ctx.args[0]], perm=perm)


def permute(ctx: LoweringContext):
    ndim = len(ctx.vals[0].shape)
    return ctx.add("Transpose", [ctx.args[0]], perm=[d % ndim for d in ctx.args[1]])


def slice_(ctx: LoweringContext):
    x, dim, start, end, step = ctx.args
    size = ctx.vals[0].shape[dim]
    start = 0 if start is None else start
    if isinstance(size, int) and isinstance(end, (int, type(None))):
        end = size if end is None else min(end, size)
    elif end is None:
        end = _INT64_MAX                    # ONNX's Slice clamps the end to the dimension, as Python does
    return ctx.add("Slice", [x, ctx.sizes([start]), ctx.sizes([end]), _ints(ctx, [dim]), _ints(ctx, [step])])


def split(ctx: LoweringContext):
    x, size, dim = ctx.args
    n = ctx.vals[0].shape[dim]
    sizes = [size] * (n // size) + ([n % size] if n % size else [])
    return ctx.add("Split", [x, _ints(ctx, sizes)], n_outputs=len(sizes), axis=dim)


def softmax(ctx: LoweringContext, op_type: str = "Softmax"):
    x, dim, dtype = ctx.args
    if dtype is not None and dtype is not ctx.dtype(0):
        x = ctx.add("Cast", [x], to=onnx_type(dtype))
    return ctx.add(op_type, [x], axis=dim)


def log_softmax(ctx: LoweringContext):
    return softmax(ctx, "LogSoftmax")


def gelu(ctx: LoweringContext):
    x, approximate = ctx.args
    dtype = ctx.dtype(0)
    half, one = ctx.const(0.5, dtype), ctx.const(1.0, dtype)
    if approximate == "tanh":
        inner = ctx.add("Mul", [ctx.const(math.sqrt(2 / math.pi), dtype),
                                ctx.add("Add", [x, ctx.add("Mul", [ctx.const(0.044715, dtype),
                                                                   ctx.add("Pow", [x, ctx.const(3.0, dtype)])])])])
        cdf = ctx.add("Add", [one, ctx.add("Tanh", [inner])])
    else:
        cdf = ctx.add("Add", [one, ctx.add("Erf", [ctx.add("Mul", [x, ctx.const(1 / math.sqrt(2), dtype)])])])
    return ctx.add("Mul", [ctx.add("Mul", [half, x]), cdf])


def layer_norm(ctx: LoweringContext):
    x, shape, w, b, eps, _cudnn = ctx.args
    if w is None:                       # ONNX needs a scale: ones
        w = ctx.const(np.ones(tuple(shape)), ctx.dtype(0))
    return ctx.add("LayerNormalization", [x, w, b], axis=-len(shape), epsilon=float(eps))


def batch_norm(ctx: LoweringContext):
    x, w, b, mean, var, training, _momentum, eps, _cudnn = ctx.args
    if training or mean is None:
        raise _training_only(ctx, "batch_norm in training mode (or without running statistics)")
    c = ctx.vals[0].shape[1]
    dtype = ctx.dtype(0)
    w = w if w is not None else ctx.const(np.ones(c), dtype)
    b = b if b is not None else ctx.const(np.zeros(c), dtype)
    return ctx.add("BatchNormalization", [x, w, b, mean, var], epsilon=float(eps))


def dropout(ctx: LoweringContext):
    x, p, train = ctx.args
    if train and p > 0:
        raise _training_only(ctx, "dropout in training mode")
    return ctx.add("Identity", [x])


def _training_only(ctx: LoweringContext, what: str):
    from .emitter import UnsupportedOperatorError

    return UnsupportedOperatorError(f"ember.onnx.export: {what} (graph node {ctx.node.name}, in "
                                    f"{ctx.node.meta.get('nn_module') or 'the top-level module'}) has no ONNX "
                                    "inference form; call model.eval() before exporting")


def _pair(v, n: int = 2) -> list[int]:
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


def conv2d(ctx: LoweringContext):
    x, w, b, stride, padding, dilation, groups = ctx.args
    if isinstance(padding, str):
        raise _unsupported_argument(ctx, f"padding={padding!r}")
    pads = _pair(padding)
    return ctx.add("Conv", [x, w, b], strides=_pair(stride), pads=pads + pads, dilations=_pair(dilation),
                   group=groups)


def max_pool2d(ctx: LoweringContext):
    x, kernel, stride, padding, dilation, ceil_mode = ctx.args
    kernel = _pair(kernel)
    pads = _pair(padding)
    if ceil_mode:
        # ONNX rounds up without PyTorch's rule that the last window starts inside the input
        size, steps, dil = ctx.vals[0].shape[-2:], _pair(stride) if stride else kernel, _pair(dilation)
        onnx = [math.ceil((n + 2 * p - d * (k - 1) - 1) / s) + 1 for n, p, d, k, s in zip(size, pads, dil, kernel, steps)]
        if onnx != list(ctx.out_val.shape[-2:]):
            raise _unsupported_argument(ctx, "ceil_mode=True where ONNX's output size differs from PyTorch's")
    return ctx.add("MaxPool", [x], kernel_shape=kernel, strides=_pair(stride) if stride else kernel,
                   pads=pads + pads, dilations=_pair(dilation), ceil_mode=int(bool(ceil_mode)))


def _unsupported_argument(ctx: LoweringContext, what: str):
    from .emitter import UnsupportedOperatorError

    return UnsupportedOperatorError(f"ember.onnx.export: {ctx.node.target.name} with {what} has no ONNX lowering "
                                    f"(graph node {ctx.node.name})")


def embedding(ctx: LoweringContext):
    weight, indices = ctx.args[0], ctx.args[1]
    return ctx.add("Gather", [weight, indices], axis=0)


def masked_fill(ctx: LoweringContext):
    x, mask, value = ctx.args
    return ctx.add("Where", [mask, ctx.const(np.array(value), ctx.dtype(0)), x])


def arange(ctx: LoweringContext):
    """arange(start, end, step): a constant of the graph when all are numbers, else ONNX's Range (a bound the
    graph computes: a dynamic size)."""
    dtype = ctx.out_val.dtype
    if all(isinstance(v, (int, float)) for v in ctx.args[:3]):
        return ctx.const(np.arange(*ctx.args[:3]), dtype)
    return ctx.add("Range", [ctx.operand(i, dtype) for i in range(3)])


def arange_end(ctx: LoweringContext):
    """arange(end): as arange(0, end, 1)."""
    dtype = ctx.out_val.dtype
    if isinstance(ctx.args[0], (int, float)):
        return ctx.const(np.arange(ctx.args[0]), dtype)
    return ctx.add("Range", [ctx.const(np.array(0), dtype), ctx.operand(0, dtype), ctx.const(np.array(1), dtype)])


def sdpa(ctx: LoweringContext):
    q, k, v, mask, dropout_p, is_causal, scale = ctx.args[:7]
    if dropout_p:
        raise _training_only(ctx, "scaled_dot_product_attention with dropout")
    dtype = ctx.dtype(0)
    qv, kv = ctx.vals[0], ctx.vals[1]
    scale = scale if scale is not None else 1 / math.sqrt(qv.shape[-1])
    ndim = len(kv.shape)
    perm = list(range(ndim - 2)) + [ndim - 1, ndim - 2]
    scores = ctx.add("Mul", [ctx.add("MatMul", [q, ctx.add("Transpose", [k], perm=perm)]), ctx.const(scale, dtype)])
    if is_causal:
        scores = ctx.add("Where", [_causal_mask(ctx, qv.shape[-2], kv.shape[-2]), scores, ctx.const(-np.inf, dtype)])
    if mask is not None:
        if ctx.vals[3].dtype is _dt.bool:
            scores = ctx.add("Where", [mask, scores, ctx.const(-np.inf, dtype)])
        else:
            scores = ctx.add("Add", [scores, mask])
    return ctx.add("MatMul", [ctx.add("Softmax", [scores], axis=-1), v])


def _causal_mask(ctx: LoweringContext, lq, lk) -> str:
    """The (lq, lk) bool mask of `j <= i` (a constant; for dynamic lengths, computed from two Ranges)."""
    if isinstance(lq, int) and isinstance(lk, int):
        return ctx.const(np.tril(np.ones((lq, lk), dtype=bool)))
    q, k = ctx.args[0], ctx.args[1]
    zero, one = ctx.const(np.array(0, np.int64)), ctx.const(np.array(1, np.int64))
    lengths = [ctx.add("Reshape", [ctx.add("Shape", [x], start=-2, end=-1), ctx.const(np.zeros(0, np.int64))])
               for x in (q, k)]
    rows = ctx.add("Unsqueeze", [ctx.add("Range", [zero, lengths[0], one]), _ints(ctx, [1])])
    cols = ctx.add("Range", [zero, lengths[1], one])
    return ctx.add("LessOrEqual", [cols, rows])


def to_copy(ctx: LoweringContext):
    x, dtype = ctx.args[0], ctx.args[1]
    return ctx.add("Identity", [x]) if dtype is None or dtype is ctx.dtype(0) else \
        ctx.add("Cast", [x], to=onnx_type(dtype))


def unsqueeze(ctx: LoweringContext):
    x, dim = ctx.args
    return ctx.add("Unsqueeze", [x, _ints(ctx, [dim % (len(ctx.vals[0].shape) + 1)])])


def squeeze(ctx: LoweringContext):
    if ctx.static:
        return ctx.add("Reshape", [ctx.args[0], _ints(ctx, ctx.out_val.shape)])
    shape = ctx.vals[0].shape          # squeeze the dims of size 1 (a dynamic dimension is never 1 in a trace)
    dims = ctx.args[1] if isinstance(ctx.args[1], (list, tuple)) else [ctx.args[1]]
    axes = [d % len(shape) for d in dims if isinstance(shape[d], int) and shape[d] == 1]
    return ctx.add("Squeeze", [ctx.args[0], _ints(ctx, axes)]) if axes else ctx.add("Identity", [ctx.args[0]])


def cat(ctx: LoweringContext):
    tensors, dim = ctx.args
    return ctx.add("Concat", list(tensors), axis=dim)


def where(ctx: LoweringContext):
    dtype = ctx.out_val.dtype
    return ctx.add("Where", [ctx.args[0], ctx.operand(1, dtype), ctx.operand(2, dtype)])


def reduce(op_type: str):
    def lower(ctx: LoweringContext):
        x, dim, keepdim = ctx.args[0], ctx.args[1], ctx.args[2]
        axes = [] if dim is None else list(dim) if isinstance(dim, (list, tuple)) else [dim]
        inputs = [x] + ([_ints(ctx, axes)] if axes else [])
        return ctx.add(op_type, inputs, keepdims=int(bool(keepdim)))
    lower.__qualname__ = f"reduce({op_type!r})"
    return lower


def t(ctx: LoweringContext):
    return ctx.add("Transpose", [ctx.args[0]], perm=[1, 0]) if len(ctx.vals[0].shape) == 2 else \
        ctx.add("Identity", [ctx.args[0]])


def constant(fill=None):
    """A factory whose arguments are all numbers: its value, computed now (`fill`: the value, or None for
    full's fill argument)."""
    def lower(ctx: LoweringContext):
        from ember.core.numpy_interop import to_numpy_dtype

        value = ctx.args[1] if fill is None else fill
        dtype = to_numpy_dtype(ctx.out_val.dtype)
        if ctx.static:
            return ctx.const(np.full(tuple(ctx.out_val.shape), value, dtype=dtype))
        from onnx import numpy_helper

        return ctx.add("ConstantOfShape", [ctx.sizes(ctx.args[0])],
                       value=numpy_helper.from_array(np.array([value], dtype=dtype)))
    lower.__qualname__ = f"constant({fill!r})"
    return lower


def eye(ctx: LoweringContext):
    from ember.core.numpy_interop import to_numpy_dtype

    return ctx.const(np.eye(*ctx.out_val.shape, dtype=to_numpy_dtype(ctx.out_val.dtype)))


def bitwise(bool_op: str, int_op: str):
    def lower(ctx: LoweringContext):
        dtype = ctx.compute_dtype(*range(len(ctx.args)))
        op_type = bool_op if dtype is _dt.bool else int_op
        return ctx.add(op_type, [ctx.operand(i, dtype) for i in range(len(ctx.args))])
    lower.__qualname__ = f"bitwise({bool_op!r}, {int_op!r})"
    return lower


def expand(ctx: LoweringContext):
    if ctx.static:
        return ctx.add("Expand", [ctx.args[0], _ints(ctx, ctx.out_val.shape)])
    # Expand broadcasts: a 1 keeps the input's size where expand's -1 does
    return ctx.add("Expand", [ctx.args[0], ctx.sizes([1 if s == -1 else s for s in ctx.args[1]])])


TABLE = {
    # elementwise
    "add.Tensor": add, "sub.Tensor": sub, "mul.Tensor": binary("Mul"), "div.Tensor_mode": div,
    "neg": unary("Neg"), "abs": unary("Abs"), "exp": unary("Exp"), "log": unary("Log"), "sqrt": unary("Sqrt"),
    "tanh": unary("Tanh"), "sigmoid": unary("Sigmoid"), "relu": unary("Relu"), "erf": unary("Erf"),
    "sin": unary("Sin"), "cos": unary("Cos"), "reciprocal": unary("Reciprocal"),
    "pow.Tensor_Tensor": binary("Pow"),
    "maximum": binary("Max"), "minimum": binary("Min"), "where.self": where,
    "eq.Tensor": binary("Equal"), "lt.Tensor": binary("Less"), "gt.Tensor": binary("Greater"),
    "le.Tensor": binary("LessOrEqual"), "ge.Tensor": binary("GreaterOrEqual"),
    "logical_not": unary("Not"), "masked_fill.Scalar": masked_fill, "gelu": gelu,
    "bitwise_and.Tensor": bitwise("And", "BitwiseAnd"), "bitwise_or.Tensor": bitwise("Or", "BitwiseOr"),
    "bitwise_xor.Tensor": bitwise("Xor", "BitwiseXor"), "bitwise_not": bitwise("Not", "BitwiseNot"),
    # layers
    "linear": linear, "matmul": binary("MatMul"), "bmm": binary("MatMul"), "mm": binary("MatMul"),
    "conv2d": conv2d, "max_pool2d": max_pool2d, "batch_norm": batch_norm, "layer_norm": layer_norm,
    "embedding": embedding, "dropout": dropout, "scaled_dot_product_attention": sdpa,
    "softmax.int": softmax, "log_softmax.int": log_softmax,
    # shapes and copies
    "view": reshape, "reshape": reshape,
    "transpose.int": transpose, "permute": permute, "slice.Tensor": slice_, "split.Tensor": split,
    "unsqueeze": unsqueeze, "squeeze.dims": squeeze, "cat": cat, "expand": expand,
    "contiguous": same(), "clone": same(), "alias": same(), "_to_copy": to_copy,
    "arange": arange_end, "arange.start_step": arange, "t": t,
    "zeros": constant(0), "ones": constant(1), "full": constant(), "eye": eye, "eye.m": eye,
    # reductions
    "sum.dim_IntList": reduce("ReduceSum"), "mean.dim": reduce("ReduceMean"),
}
