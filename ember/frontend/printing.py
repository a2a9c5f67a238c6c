"""PyTorch-identical tensor printing, independent of Ember's Tensor class.

A port of ``torch/_tensor_str.py`` (PyTorch 2.13) to numpy: `tensor_repr` returns exactly
what ``repr(torch_tensor)`` would print for a dense tensor with the same values, dtype,
shape, device and autograd state. The structure and names follow torch's file so the two
can be compared side by side. numpy is only imported when something is printed, which
keeps ``import ember`` fast.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any

__all__ = ["tensor_repr", "set_printoptions", "get_printoptions", "printoptions"]


class _PrinterOptions:
    """torch._tensor_str.PRINT_OPTS: the module-level print options."""

    def __init__(self) -> None:
        self.precision: int = 4
        self.threshold: float = 1000
        self.edgeitems: int = 3
        self.linewidth: int = 80
        self.sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """Set options for printing, as torch.set_printoptions does.

    profile is one of "default", "short" or "full" and is applied first; the other
    arguments override it when given. sci_mode is always assigned (None means automatic),
    exactly as in PyTorch.
    """
    if profile is not None:
        if profile == "default":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, 1000
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
        elif profile == "short":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 2, 1000
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 80
        elif profile == "full":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, math.inf
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current print options, as a dict that can be passed to set_printoptions()."""
    return {
        "precision": PRINT_OPTS.precision, "threshold": PRINT_OPTS.threshold,
        "edgeitems": PRINT_OPTS.edgeitems, "linewidth": PRINT_OPTS.linewidth,
        "sci_mode": PRINT_OPTS.sci_mode,
    }


@contextmanager
def printoptions(**kwargs):
    """Context manager that temporarily changes the print options."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# ----------------------------------------------------------------------------- formatting

class _Formatter:
    """Chooses int / fixed / scientific notation and the common width of all elements.

    `arr` is a numpy array: float64 for floating dtypes (every float dtype converts to it
    exactly, and torch also does its range computations in double), ints or bools else.
    """

    def __init__(self, arr, floating_dtype: bool) -> None:
        import numpy as np

        self.floating_dtype = floating_dtype
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        tensor_view = arr.reshape(-1)

        if not floating_dtype:
            for value in tensor_view.tolist():
                self.max_width = max(self.max_width, len(f"{value}"))
            return

        nonzero_finite_vals = tensor_view[np.isfinite(tensor_view) & (tensor_view != 0)]
        if nonzero_finite_vals.size == 0:
            # no valid number, do nothing
            return

        nonzero_finite_abs = np.abs(nonzero_finite_vals)
        nonzero_finite_min = float(nonzero_finite_abs.min())
        nonzero_finite_max = float(nonzero_finite_abs.max())
        self.int_mode = bool(np.all(nonzero_finite_vals == np.ceil(nonzero_finite_vals)))
        self.sci_mode = (
            nonzero_finite_max / nonzero_finite_min > 1000.0
            or nonzero_finite_max > 1.0e8
            or nonzero_finite_min < 1.0e-4
            if PRINT_OPTS.sci_mode is None
            else PRINT_OPTS.sci_mode
        )

        precision = PRINT_OPTS.precision
        values = nonzero_finite_vals.tolist()
        if self.sci_mode:
            widths = [len(f"{value:.{precision}e}") for value in values]
        elif self.int_mode:
            # floats that are all integers print as "3." : one extra character for the dot
            widths = [len(f"{value:.0f}") + 1 for value in values]
        else:
            widths = [len(f"{value:.{precision}f}") for value in values]
        self.max_width = max(self.max_width, max(widths))

    def width(self) -> int:
        return self.max_width

    def format(self, value) -> str:
        if self.floating_dtype:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{PRINT_OPTS.precision}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _val_str(val, formatter1: _Formatter, formatter2: _Formatter | None = None) -> str:
    """One element; formatter2 formats the imaginary part of complex values."""
    if formatter2 is None:
        return formatter1.format(val)
    real_str = formatter1.format(val.real)
    imag_str = (formatter2.format(val.imag) + "j").lstrip()
    # handles negative numbers, +0.0, -0.0
    if imag_str[0] == "+" or imag_str[0] == "-":
        return real_str + imag_str
    return real_str + "+" + imag_str


def _vector_str(arr, indent, summarize, formatter1, formatter2=None) -> str:
    # length includes spaces and comma between elements
    element_length = formatter1.width() + 2
    if formatter2 is not None:
        # width for imag_formatter + an extra j for complex
        element_length += formatter2.width() + 1
    elements_per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    edge = PRINT_OPTS.edgeitems

    if summarize and not edge:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * edge:
        data = ([_val_str(v, formatter1, formatter2) for v in arr[:edge].tolist()]
                + [" ..."]
                + [_val_str(v, formatter1, formatter2) for v in arr[-edge:].tolist()])
    else:
        data = [_val_str(v, formatter1, formatter2) for v in arr.tolist()]

    lines = [", ".join(data[i:i + elements_per_line])
             for i in range(0, len(data), elements_per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_with_formatter(arr, indent, summarize, formatter1, formatter2=None) -> str:
    dim = arr.ndim
    if dim == 0:
        return _val_str(arr.item(), formatter1, formatter2)
    if dim == 1:
        return _vector_str(arr, indent, summarize, formatter1, formatter2)

    edge = PRINT_OPTS.edgeitems
    if summarize and arr.shape[0] > 2 * edge:
        rows = list(range(edge)) + [None] + list(range(len(arr) - edge, len(arr)))
    else:
        rows = list(range(arr.shape[0]))
    slices = ["..." if i is None else
              _tensor_str_with_formatter(arr[i], indent + 1, summarize, formatter1, formatter2)
              for i in rows]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def _get_summarized_data(arr):
    """The elements that the summarised print shows (they alone decide the format)."""
    import numpy as np

    edge = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        if arr.shape[0] > 2 * edge:
            # arr[-0:] is the whole vector, as in torch, when edgeitems is 0
            return np.concatenate((arr[:edge], arr[-edge:]))
        return arr
    if not edge:
        return np.empty((0,) * arr.ndim, dtype=arr.dtype)
    if arr.shape[0] > 2 * edge:
        rows = list(range(edge)) + list(range(len(arr) - edge, len(arr)))
    else:
        rows = range(arr.shape[0])
    return np.stack([_get_summarized_data(arr[i]) for i in rows])


def _tensor_str(arr, indent: int, kind: str) -> str:
    if arr.size == 0:
        return "[]"
    summarize = arr.size > PRINT_OPTS.threshold
    if kind == "complex":
        real, imag = arr.real, arr.imag
        real_formatter = _Formatter(_get_summarized_data(real) if summarize else real, True)
        imag_formatter = _Formatter(_get_summarized_data(imag) if summarize else imag, True)
        return _tensor_str_with_formatter(arr, indent, summarize, real_formatter, imag_formatter)
    formatter = _Formatter(_get_summarized_data(arr) if summarize else arr, kind == "float")
    return _tensor_str_with_formatter(arr, indent, summarize, formatter)


def _add_suffixes(tensor_str: str, suffixes: list[str], indent: int, force_newline: bool) -> str:
    tensor_strs = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        suffix_len = len(suffix)
        if force_newline or last_line_len + suffix_len + 2 > PRINT_OPTS.linewidth:
            tensor_strs.append(",\n" + " " * indent + suffix)
            last_line_len = indent + suffix_len
            force_newline = False
        else:
            tensor_strs.append(", " + suffix)
            last_line_len += suffix_len + 2
    tensor_strs.append(")")
    return "".join(tensor_strs)


# ----------------------------------------------------------------------------- entry point

_ALIASES = {
    "long": "int64", "int": "int32", "short": "int16", "float": "float32",
    "double": "float64", "half": "float16", "cfloat": "complex64", "cdouble": "complex128",
    "chalf": "complex32",
}


def _canonical_dtype_name(name: str) -> str:
    name = str(name).rsplit(".", 1)[-1]  # accept "torch.float32" / "ember.float32"
    return _ALIASES.get(name, name)


def _dtype_kind(name: str) -> str:
    if name.startswith("complex"):
        return "complex"
    if name.startswith("float") or name == "bfloat16":
        return "float"
    return "int"  # integers and bool: printed with str()


def tensor_repr(values, *, dtype_name: str, shape: tuple[int, ...], device: str,
                requires_grad: bool = False, grad_fn: str | None = None,
                default_float_dtype: str = "float32", is_leaf_param: bool = False) -> str:
    """What ``repr()`` of the matching torch tensor prints.

    values: a numpy array with the data (bfloat16 as an ml_dtypes array), or None for
    tensors on the "meta" device. dtype_name: "float32", "int64", ... (PyTorch aliases and
    a "torch." prefix are accepted). device: "cpu", "meta", "cuda:0", "opencl:0", ...
    grad_fn: the backward node's class name ("MulBackward0"), shown instead of
    requires_grad=True. default_float_dtype: torch.get_default_dtype()'s name.
    is_leaf_param: print as an nn.Parameter does ("Parameter containing:" first).
    """
    dtype_name = _canonical_dtype_name(dtype_name)
    default_dtype = _canonical_dtype_name(default_float_dtype)
    shape = tuple(int(s) for s in shape)
    kind = _dtype_kind(dtype_name)

    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    device = str(device)
    device_type = device.split(":", 1)[0]
    # Note [Print tensor device]: shown whenever it is not the default device (cpu).
    if device_type != "cpu":
        suffixes.append("device='" + device + "'")

    default_complex = "complex128" if default_dtype == "float64" else "complex64"
    has_default_dtype = dtype_name in (default_dtype, default_complex, "int64", "bool")
    dtype_suffix = "dtype=ember." + dtype_name
    size_suffix = "size=" + str(shape)

    if values is None or device_type == "meta":
        suffixes.append(size_suffix)
        if dtype_name != default_dtype:
            suffixes.append(dtype_suffix)
        tensor_str = "..."
    elif math.prod(shape) == 0:
        # Explicitly print the shape if it is not (0,), to match NumPy behavior
        if len(shape) != 1:
            suffixes.append(size_suffix)
        # In an empty tensor, there are no elements to infer if the dtype should be int64
        if dtype_name != default_dtype:
            suffixes.append(dtype_suffix)
        tensor_str = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(size_suffix)
        if not has_default_dtype:
            suffixes.append(dtype_suffix)
        tensor_str = _tensor_str(_to_printable(values, shape, kind), indent, kind)

    if grad_fn:
        suffixes.append(f"grad_fn=<{str(grad_fn).strip('<>')}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")

    string_repr = _add_suffixes(prefix + tensor_str, suffixes, indent, force_newline=False)
    if is_leaf_param:
        string_repr = "Parameter containing:\n" + string_repr
    return string_repr


def _to_printable(values, shape, kind: str):
    """The data as a numpy array that formats like torch's .item()/.tolist() values."""
    import numpy as np

    arr = np.asarray(values).reshape(shape)
    if kind == "float":
        return arr.astype(np.float64)  # exact for every float dtype, bfloat16 included
    if kind == "complex":
        return arr.astype(np.complex128)
    return arr


def sparse_tensor_repr(indices: str, values: str, *, dtype_name: str, shape: tuple[int, ...], nnz: int,
                       device: str, requires_grad: bool = False, grad_fn: str | None = None,
                       default_float_dtype: str = "float32") -> str:
    """What ``repr()`` of the matching torch sparse COO tensor prints, given the reprs of its indices and
    values (printed without their dtype: the sparse tensor's own suffix names it)."""
    indent = len("tensor(")
    body = ("tensor(indices=" + indices.replace("\n", "\n" + " " * (indent + len("indices="))) + ",\n"
            + " " * indent + "values=" + values.replace("\n", "\n" + " " * (indent + len("values="))))
    dtype_name = _canonical_dtype_name(dtype_name)
    meta = str(device).split(":", 1)[0] == "meta"
    suffixes = [] if str(device).split(":", 1)[0] == "cpu" else ["device='" + str(device) + "'"]
    suffixes.append("size=" + str(tuple(int(s) for s in shape)))
    if not meta:
        suffixes.append(f"nnz={nnz}")
    if dtype_name not in (_canonical_dtype_name(default_float_dtype), "int64", "bool"):
        suffixes.append("dtype=ember." + dtype_name)
    suffixes.append("layout=ember.sparse_coo")
    if grad_fn:
        suffixes.append(f"grad_fn=<{str(grad_fn).strip('<>')}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(body, suffixes, indent, force_newline=True)
