"""Ember's exceptions.

Each class also derives from the built-in exception PyTorch raises in the same situation,
so `except RuntimeError` (shape and device mismatches), `except TypeError` (wrong argument
types) and `except NotImplementedError` (a missing kernel) work as users expect.
Messages name the op, the argument, what was expected and what was given.
"""
from __future__ import annotations

__all__ = ["EmberError", "ShapeError", "DeviceMismatchError", "DTypeError", "ArgumentTypeError", "ArgumentValueError", "ArgumentListError", "DimensionError", "MissingKernelError", "AutogradError", "BackendUnavailableError", "IndexOutOfRangeError", "LinAlgError", "OutOfMemoryError"]


class EmberError(Exception):
    """Base class of every error Ember raises on purpose."""


class ShapeError(EmberError, RuntimeError):
    """Shapes that do not fit the op (broadcasting, matmul, view)."""


class DeviceMismatchError(EmberError, RuntimeError):
    """Tensors on different devices in one call."""


class DTypeError(EmberError, RuntimeError):
    """A dtype the op does not accept (PyTorch raises RuntimeError for these)."""


class ArgumentTypeError(EmberError, TypeError):
    """An argument of the wrong Python type."""


class ArgumentValueError(EmberError, RuntimeError):
    """An argument with a value out of range (PyTorch raises IndexError/RuntimeError)."""


class ArgumentListError(EmberError, ValueError):
    """A list argument with the wrong length (e.g. cat of no tensors)."""


class DimensionError(EmberError, IndexError):
    """A dimension index out of range."""


class MissingKernelError(EmberError, NotImplementedError):
    """No kernel, decomposition or fallback can run an op on a backend."""


class AutogradError(EmberError, RuntimeError):
    """Autograd misuse: modified saved tensors, second backward, leaf in-place, ..."""


class BackendUnavailableError(EmberError, RuntimeError):
    """A device whose backend plugin is missing, broken or has no device."""


class IndexOutOfRangeError(EmberError, IndexError):
    """An index value or index tensor that does not fit the indexed tensor (PyTorch's IndexError)."""


class OutOfMemoryError(EmberError, RuntimeError):
    """A device could not allocate what an op asked for (torch.OutOfMemoryError, also a RuntimeError).
    Raised by the dispatcher for a backend's MemoryError, with the op, the device and its allocator's
    counters; nothing was changed, and the process goes on. Users reach it as ember.OutOfMemoryError."""


class LinAlgError(EmberError, RuntimeError):
    """A matrix a factorisation or solve cannot handle (not positive-definite, singular): PyTorch's
    torch.linalg.LinAlgError, also a RuntimeError. Users reach it as ember.linalg.LinAlgError."""

    @classmethod
    def not_positive_definite(cls, name: str, batch_element: int | None, order: int) -> "LinAlgError":
        """torch's error for a matrix (of a batch, when `batch_element` is given) whose leading minor of
        `order` is not positive-definite, raised by `name`."""
        where = "" if batch_element is None else f"(Batch element {batch_element}): "
        return cls(f"{name}: {where}The factorization could not be completed because the input is not "
                   f"positive-definite (the leading minor of order {order} is not positive-definite).")

    @classmethod
    def singular(cls, name: str, batch_element: int | None, order: int) -> "LinAlgError":
        """torch's error for a singular matrix (of a batch, when `batch_element` is given) whose LU factor has
        its first zero on the diagonal at `order`: linalg.inv(_ex) names the element, linalg.solve(_ex) does not."""
        where = "" if batch_element is None else f"(Batch element {batch_element}): "
        if name.startswith("linalg.inv"):
            return cls(f"{name}: {where}The diagonal element {order} is zero, the inversion could not be completed "
                       "because the input matrix is singular.")
        return cls(f"torch.{name}: {where}The solver failed because the input matrix is singular.")


# users import these from `ember.errors`, and tracebacks name them so (`ember.errors.ShapeError: ...`)
for _name in __all__:
    globals()[_name].__module__ = "ember.errors"
del _name
