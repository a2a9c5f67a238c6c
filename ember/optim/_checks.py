"""The constructor checks torch's optimizers share, with torch's messages (ValueError)."""
from __future__ import annotations


def check_nonnegative(**values) -> None:
    """Each of lr, eps, weight_decay, ... must be >= 0 ("Invalid learning rate: -1", torch's wording)."""
    words = {"lr": "learning rate", "eps": "epsilon value"}
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {words.get(name, name + ' value')}: {value}")


def check_betas(betas) -> None:
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
