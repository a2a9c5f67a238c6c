"""The user-facing layer: Tensor, autograd, autocast, random numbers (dtypes and devices are ember.core's)."""
