"""The Distribution base class (torch.distributions.Distribution): shapes, argument and sample validation,
and the interface each family implements.

A distribution has a `batch_shape` (independent, not identically parametrised copies) and an
`event_shape` (one draw); a sample of `sample_shape` has shape sample_shape + batch_shape + event_shape.
With validation on (the default, as torch's under `__debug__`), the constructor checks every parameter
against `arg_constraints` and `log_prob` checks its value against `support`, raising ValueError with
torch's message.
"""
from __future__ import annotations

import warnings

import ember

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


class Distribution:
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None) -> None:
        self._batch_shape = ember.Size(batch_shape)
        self._event_shape = ember.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{type(self)} does not define `arg_constraints`. Please set `arg_constraints = {{}}` or "
                              "initialize the distribution with `validate_args=False` to turn off validation.")
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue                  # a parameter given the other way (probs for logits)
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{value}")

    # -- shapes --------------------------------------------------------------------------------------
    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return ember.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def expand(self, batch_shape, _instance=None):
        raise NotImplementedError

    def _expanded(self, new: "Distribution", batch_shape, event_shape=None) -> "Distribution":
        """`new` (an expand()'s instance, its parameters set) initialised with `batch_shape`, validating as this
        one does (its parameters were checked already)."""
        Distribution.__init__(new, batch_shape, self._event_shape if event_shape is None else event_shape,
                              validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    # -- the interface -------------------------------------------------------------------------------
    @property
    def arg_constraints(self) -> dict:
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A draw (no gradient flows through it)."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised draw: gradients flow to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int):
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning)
        return self.sample(ember.Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return ember.exp(self.entropy())

    # -- validation ----------------------------------------------------------------------------------
    def _validate_sample(self, value) -> None:
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.shape) - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.shape} vs "
                             f"{self._event_shape}.")
        actual_shape, expected_shape = tuple(value.shape), tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {value.shape} vs "
                                 f"{ember.Size(expected_shape)}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{type(self)} does not define `support` to enable sample validation. Please initialize "
                          "the distribution with `validate_args=False` to turn off validation.")
            return
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                         for p in names)
        return f"{type(self).__name__}({args})"


class _Expandable(Distribution):
    """expand() for a family whose parameters all have the batch shape: each parameter expanded. (A subclass
    with its own __init__ must define its own expand, as torch's families ask: the check is against the public
    family the instance belongs to, ember's own class nearest it.)"""

    _params: tuple = ()

    def expand(self, batch_shape, _instance=None):
        family = next(c for c in type(self).__mro__
                      if c.__module__.startswith(__package__ + ".") and not c.__name__.startswith("_"))
        new = self._get_checked_instance(family, _instance)
        batch_shape = ember.Size(batch_shape)
        for name in self._params:
            setattr(new, name, getattr(self, name).expand(batch_shape))
        return self._expanded(new, batch_shape)
