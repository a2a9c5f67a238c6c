"""Constraints on distribution parameters and supports (torch.distributions.constraints): each `check(value)`
returns a bool tensor, True where `value` satisfies it, over the constraint's event dimensions."""
from __future__ import annotations

import ember

__all__ = ["Constraint", "boolean", "corr_cholesky", "dependent", "dependent_property", "greater_than", "greater_than_eq",
           "independent", "integer_interval", "interval", "half_open_interval", "is_dependent", "less_than",
           "lower_cholesky", "lower_triangular", "nonnegative", "nonnegative_integer", "positive",
           "positive_definite", "positive_integer", "real", "real_vector", "simplex", "square", "symmetric",
           "unit_interval"]


class Constraint:
    """A region of values: `is_discrete`, `event_dim` (the rightmost dimensions one check covers), `check`."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A placeholder for a support that depends on other parameters (checked where those are known)."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented) -> None:
        self._is_discrete, self._event_dim = is_discrete, event_dim

    @property
    def is_discrete(self) -> bool:
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented) -> "_Dependent":
        return _Dependent(is_discrete=self._is_discrete if is_discrete is NotImplemented else is_discrete,
                          event_dim=self._event_dim if event_dim is NotImplemented else event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose value is a constraint computed from the instance (`support` of Uniform), and a
    dependent constraint on the class."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented) -> None:
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


dependent_property = _DependentProperty


class _IndependentConstraint(Constraint):
    """`base_constraint` over `reinterpreted_batch_ndims` more rightmost dimensions (all of them must hold)."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        result = result.reshape(result.shape[:result.dim() - self.reinterpreted_batch_ndims] + (-1,))
        return result.all(-1)

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _Real(Constraint):
    def check(self, value):
        return value == value              # False for nan


class _GreaterThan(Constraint):
    def __init__(self, lower_bound) -> None:
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"{type(self).__name__.lstrip('_')}(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return self.lower_bound <= value


class _LessThan(Constraint):
    def __init__(self, upper_bound) -> None:
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{type(self).__name__.lstrip('_')}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _IntegerInterval(_Interval):
    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)


class _IntegerGreaterThan(_GreaterThan):
    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return ember.all(value >= 0, dim=-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Square(Constraint):
    """Square matrices (one check per matrix of a batch)."""

    event_dim = 2

    def check(self, value):
        return ember.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1], dtype=ember.bool,
                          device=value.device)


class _Symmetric(_Square):
    """Symmetric matrices, to torch's tolerance (isclose with atol 1e-6)."""

    def check(self, value):
        square = super().check(value)
        if not bool(square.all()):
            return square
        transposed = value.mT                      # torch's isclose(value, value.mT, atol=1e-6), rtol 1e-5
        close = ((value - transposed).abs() <= 1e-6 + 1e-5 * transposed.abs()) | (value == transposed)
        return close.all(-2).all(-1)


class _PositiveDefinite(_Symmetric):
    """Symmetric positive-definite matrices: those with a Cholesky factor."""

    def check(self, value):
        symmetric = super().check(value)
        if not bool(symmetric.all()):
            return symmetric
        return ember.linalg.cholesky_ex(value).info.eq(0)


class _LowerTriangular(Constraint):
    """Lower-triangular matrices."""

    event_dim = 2

    def check(self, value):
        return (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _LowerCholesky(Constraint):
    """Lower-triangular matrices with a positive diagonal: Cholesky factors."""

    event_dim = 2

    def check(self, value):
        lower = (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _CorrCholesky(Constraint):
    """Cholesky factors of correlation matrices: lower-triangular with a positive diagonal and rows of unit
    length (to 10 * n machine epsilons, as torch)."""

    event_dim = 2

    def check(self, value):
        tol = ember.finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = value.detach().pow(2).sum(-1).sqrt()
        unit_rows = ((row_norm - 1.0).abs() <= tol).all(-1)
        return _LowerCholesky().check(value) & unit_rows


dependent = _Dependent()
independent = _IndependentConstraint
boolean = _Boolean()
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
half_open_interval = _HalfOpenInterval
unit_interval = _Interval(0.0, 1.0)
integer_interval = _IntegerInterval
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
simplex = _Simplex()
square = _Square()
symmetric = _Symmetric()
positive_definite = _PositiveDefinite()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
