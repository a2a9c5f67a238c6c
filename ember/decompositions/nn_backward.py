"""The backward helpers of the nn layers, by name (formulas call them via formulas.nn_backward)."""
from __future__ import annotations

from .convolution import conv_backward_bias, conv_backward_input, conv_backward_weight  # noqa: F401
from .normalization import (batch_norm_backward_bias, batch_norm_backward_input,  # noqa: F401
                            batch_norm_backward_weight, group_norm_backward_input, group_norm_backward_weight,
                            layer_norm_backward_bias, layer_norm_backward_input, layer_norm_backward_weight)
from .padding import constant_pad_backward  # noqa: F401
from .pooling import avg_pool2d_backward, max_pool2d_backward  # noqa: F401
