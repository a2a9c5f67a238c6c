"""`ember.optim.lr_scheduler`: torch's learning-rate schedulers, with the same recursive (chainable) updates
in `step()` and closed forms for `step(epoch)`, so the lr sequence is torch's to the last bit. Schedulers
only touch `param_group["lr"]` (and momentum/betas for OneCycleLR and CyclicLR); they are plain Python and
device independent. base.py holds the base class; schedules.py the schedules that are a function of the
epoch; cyclic.py the cyclic ones; plateau.py ReduceLROnPlateau; combinators.py SequentialLR and
ChainedScheduler.
"""
from __future__ import annotations

from .base import EPOCH_DEPRECATION_WARNING, LRScheduler
from .combinators import ChainedScheduler, SequentialLR
from .cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from .plateau import ReduceLROnPlateau
from .schedules import (ConstantLR, CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, MultiplicativeLR,
                        MultiStepLR, PolynomialLR, StepLR)

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "PolynomialLR", "SequentialLR", "CosineAnnealingLR", "ChainedScheduler", "ReduceLROnPlateau",
           "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR", "EPOCH_DEPRECATION_WARNING"]
