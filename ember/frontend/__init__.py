"""The user-facing layer: Tensor, dtypes, devices, autograd, autocast, random numbers."""
