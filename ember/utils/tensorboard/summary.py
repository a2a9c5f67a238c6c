"""Summary protobufs for scalars, histograms, text and hyperparameters (torch.utils.tensorboard.summary).

Each function returns a `Summary` of tensorboard's own protobuf classes, laid out as torch's
writer lays it out, so TensorBoard (and anything that reads torch's event files) shows ember's
runs the same way: a scalar as a `simple_value` (or, `new_style`, a scalars-plugin tensor), a
histogram as a `HistogramProto` over TensorFlow's default bucket edges, text as a text-plugin
string tensor under `<tag>/text_summary`, hyperparameters as the hparams plugin's three
summaries. Images are in `_image.py`.
"""
from __future__ import annotations

import numpy as np
from tensorboard.compat.proto.histogram_pb2 import HistogramProto
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

from ember.frontend.tensor import Tensor

from ._convert import make_np
from ._image import image

__all__ = ["default_bins", "hparams", "histogram", "histogram_raw", "image", "make_histogram", "scalar", "text"]


def default_bins() -> list[float]:
    """TensorFlow's histogram bucket edges, torch's default (`bins="tensorflow"`): +-1e-12 growing by
    10% up to 1e20, mirrored around a bucket edge at 0."""
    positive = []
    edge = 1e-12
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1
    return [-e for e in reversed(positive)] + [0] + positive


def scalar(tag: str, value, new_style: bool = False, double_precision: bool = False) -> Summary:
    """One number: a `simple_value` (float32), or with `new_style` a scalars-plugin tensor (float32 or,
    `double_precision`, float64)."""
    array = make_np(value, "scalar_value").squeeze()
    if array.ndim != 0:
        raise AssertionError(f"SummaryWriter.add_scalar: scalar_value must hold one element, got {array.size} "
                             f"elements in {array.ndim} dimensions")
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=number)])
    proto = (TensorProto(double_val=[number], dtype="DT_DOUBLE") if double_precision
             else TensorProto(float_val=[number], dtype="DT_FLOAT"))
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=metadata)])


def histogram(tag: str, values, bins, max_bins: int | None = None) -> Summary:
    """A histogram of `values` (any shape) over `bins` (numpy.histogram's: edges, a count or a rule name)."""
    array = make_np(values, "values").astype(float)
    return Summary(value=[Summary.Value(tag=tag, histo=make_histogram(array, bins, max_bins))])


def histogram_raw(tag: str, min, max, num, sum, sum_squares, bucket_limits, bucket_counts) -> Summary:
    """A histogram given by its statistics and buckets (each bucket's upper edge and count)."""
    proto = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                           bucket_limit=list(bucket_limits), bucket=list(bucket_counts))
    return Summary(value=[Summary.Value(tag=tag, histo=proto)])


def make_histogram(values: np.ndarray, bins, max_bins: int | None = None) -> HistogramProto:
    """`values` counted into `bins`, merged down to at most `max_bins` buckets, trimmed to the buckets
    between the first and last non-empty one.

    TensorBoard stores only each bucket's right edge, so the bucket left of the first non-empty one
    is kept (empty) for its right edge, the data's left edge; with no bucket there, an empty bucket
    whose right edge is the lowest edge is put first.
    """
    if values.size == 0:
        raise ValueError("SummaryWriter.add_histogram: values has no element")
    values = values.reshape(-1)
    counts, edges = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % group)).reshape(-1, group).sum(axis=1)
        edges = np.append(edges[:-1:group], edges[-1])
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        raise ValueError("SummaryWriter.add_histogram: no value falls inside the bins (the histogram is empty)")
    first, last = int(nonzero[0]), int(nonzero[-1])
    if first > 0:
        counts = counts[first - 1:last + 1]
    else:
        counts = np.concatenate([[0], counts[:last + 1]])
    limits = edges[first:last + 2]
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist())


def text(tag: str, text_string: str) -> Summary:
    """A string for the text plugin (rendered as markdown), under `<tag>/text_summary` as torch's."""
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

    if not isinstance(text_string, str):
        raise TypeError(f"SummaryWriter.add_text: text_string must be a str, got {type(text_string).__name__}")
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    proto = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf-8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=proto)])


def hparams(hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None):
    """The hparams plugin's experiment, session-start and session-end summaries for one run."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("SummaryWriter.add_hparams: hparam_dict and metric_dict must be dicts, got "
                        f"{type(hparam_dict).__name__} and {type(metric_dict).__name__}")
    discrete = hparam_domain_discrete or {}
    if not isinstance(discrete, dict):
        raise TypeError(f"SummaryWriter.add_hparams: hparam_domain_discrete must be a dict, got "
                        f"{type(discrete).__name__}")
    for name, domain in discrete.items():
        if name not in hparam_dict or not isinstance(domain, list) or \
                not all(isinstance(d, type(hparam_dict[name])) for d in domain):
            raise TypeError(f"SummaryWriter.add_hparams: hparam_domain_discrete[{name!r}] must be a list of values "
                            f"of hparam_dict[{name!r}]'s type")
    infos, start = [], SessionStartInfo()
    for name, value in hparam_dict.items():
        if value is None:
            continue
        if isinstance(value, (Tensor, np.ndarray, np.generic)):
            value = float(make_np(value, f"hparam_dict[{name!r}]").reshape(-1)[0])
        if isinstance(value, (int, float)):         # bools too: torch logs them as numbers
            field, data_type = "number_value", "DATA_TYPE_FLOAT64"
        elif isinstance(value, str):
            field, data_type = "string_value", "DATA_TYPE_STRING"
        else:
            raise ValueError(f"SummaryWriter.add_hparams: hparam_dict[{name!r}] must be an int, float, str, bool or "
                             f"tensor, got {type(value).__name__}")
        setattr(start.hparams[name], field, value)
        domain = None
        if name in discrete:
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in discrete[name]])
        infos.append(HParamInfo(name=name, type=DataType.Value(data_type), domain_discrete=domain))

    def summary(tag: str, **data) -> Summary:
        content = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **data).SerializeToString()
        plugin = SummaryMetadata.PluginData(plugin_name=metadata.PLUGIN_NAME, content=content)
        return Summary(value=[Summary.Value(tag=tag, metadata=SummaryMetadata(plugin_data=plugin))])

    experiment = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    return (summary(metadata.EXPERIMENT_TAG, experiment=experiment),
            summary(metadata.SESSION_START_INFO_TAG, session_start_info=start),
            summary(metadata.SESSION_END_INFO_TAG,
                    session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))))
