"""ember.optim: optimizers (torch.optim's algorithms, signatures and state_dict format) and
`ember.optim.lr_scheduler`, `ember.optim.swa_utils` (weight averaging)."""
from __future__ import annotations

from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam
from .adamw import AdamW
from .rmsprop import RMSprop
from .adagrad import Adagrad
from .adadelta import Adadelta
from .lbfgs import LBFGS
from .adamax import Adamax
from .nadam import NAdam
from .radam import RAdam
from .asgd import ASGD
from .rprop import Rprop
from . import lr_scheduler  # noqa: E402
from . import swa_utils  # noqa: E402

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "LBFGS", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop",
           "lr_scheduler", "swa_utils"]
