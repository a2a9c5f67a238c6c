"""ember.nn.modules: Module, the containers and the layers (one file per area, as torch.nn.modules)."""
from __future__ import annotations

from .module import Module, RemovableHandle  # noqa: F401
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .linear import Bilinear, Identity, Linear, NonDynamicallyQuantizableLinear  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AvgPool1d, AvgPool2d,  # noqa: F401
                      AvgPool3d, LPPool1d, LPPool2d, LPPool3d, MaxPool1d, MaxPool2d, MaxPool3d)
from .pooling import (AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d, FractionalMaxPool2d,  # noqa: F401
                      FractionalMaxPool3d)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401
from .normalization import GroupNorm, LayerNorm, RMSNorm  # noqa: F401
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout  # noqa: F401
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .activation import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .attention import MultiheadAttention  # noqa: F401
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,  # noqa: F401
                          TransformerEncoderLayer)
from .padding import *  # noqa: F401,F403
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LocalResponseNorm  # noqa: F401
from .upsampling import (ChannelShuffle, Fold, PixelShuffle, PixelUnshuffle, Unfold, Upsample,  # noqa: F401
                         UpsamplingBilinear2d, UpsamplingNearest2d)
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .unpooling import MaxUnpool1d, MaxUnpool2d, MaxUnpool3d  # noqa: F401
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from .lazy import LazyModuleMixin  # noqa: F401
from .linear import LazyLinear  # noqa: F401
from .conv import (LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,  # noqa: F401
                   LazyConvTranspose3d)
from .batchnorm import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d  # noqa: F401
from .instancenorm import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d  # noqa: F401

from . import activation as _activation, loss as _loss, padding as _padding  # noqa: E402

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity", "Linear",
           "Bilinear", "Flatten", "Unflatten", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "MaxPool1d",
           "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "BatchNorm1d",
           "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm", "RMSNorm", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
           "Embedding", "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "Transformer", "TransformerDecoder", "TransformerDecoderLayer",
           "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
           "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "Upsample", "UpsamplingNearest2d",
           "UpsamplingBilinear2d", "Fold", "Unfold", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle",
           "CosineSimilarity", "PairwiseDistance", "EmbeddingBag", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "LocalResponseNorm",
           "LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
           *_activation.__all__, *_loss.__all__, *_padding.__all__]
