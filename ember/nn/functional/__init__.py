"""ember.nn.functional: PyTorch's torch.nn.functional, signature for signature.

Each function is a thin wrapper that maps torch.nn.functional's Python signature onto a
registry op (`ember._generated.functions`), so dispatch, autograd and autocast behave as for
every other op. One submodule per area; this module re-exports them all.
"""
from __future__ import annotations

from .conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d  # noqa: F401,E402  (nn layers)
from .pooling import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, avg_pool1d,  # noqa: F401,E402
                      avg_pool2d, avg_pool3d, max_pool1d, max_pool1d_with_indices, max_pool2d, max_pool2d_with_indices,
                      max_pool3d, max_pool3d_with_indices, lp_pool1d, lp_pool2d, lp_pool3d)
from .normalization import (batch_norm, group_norm, instance_norm, layer_norm, local_response_norm,  # noqa: F401,E402
                            rms_norm)
from .padding import pad  # noqa: F401,E402
from .unpooling import max_unpool1d, max_unpool2d, max_unpool3d  # noqa: F401,E402
from .vision import (channel_shuffle, interpolate, pixel_shuffle, pixel_unshuffle, upsample,  # noqa: F401,E402
                     upsample_bilinear, upsample_nearest)
from .sparse import embedding, embedding_bag, one_hot  # noqa: E402,F401
from .activation import *  # noqa: E402,F401,F403
from .attention import *  # noqa: E402,F401,F403
from .dropout import *  # noqa: E402,F401,F403
from .linear import *  # noqa: E402,F401,F403
from .loss import *  # noqa: E402,F401,F403
from .more_losses import *  # noqa: E402,F401,F403
from .folding import fold, unfold  # noqa: F401,E402
from .sampling import affine_grid, grid_sample  # noqa: E402,F401
from .adaptive_fractional import *  # noqa: E402,F401,F403
from .ctc import ctc_loss  # noqa: E402,F401
