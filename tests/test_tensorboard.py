"""ember.utils.tensorboard.SummaryWriter: events written by ember, read back with tensorboard's own
EventAccumulator, and compared with what torch.utils.tensorboard.SummaryWriter writes for the same
inputs (scalars, histograms, pixels, text, hyperparameters, the purge marks, the graph's module
scopes and input/output shapes)."""
from __future__ import annotations

import io
import os
import re
import socket
import sys

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import torch  # noqa: E402
from PIL import Image  # noqa: E402
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData  # noqa: E402
from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: E402

import ember  # noqa: E402
from ember import nn  # noqa: E402
from ember.utils.tensorboard import SummaryWriter  # noqa: E402


def _read(log_dir) -> event_accumulator.EventAccumulator:
    """Everything in `log_dir`'s event files (no sampling)."""
    acc = event_accumulator.EventAccumulator(str(log_dir), size_guidance={k: 0 for k in
                                                                           event_accumulator.DEFAULT_SIZE_GUIDANCE})
    return acc.Reload()


def _both(tmp_path, write_ember, write_torch):
    """The accumulators of an ember run and a torch run written by the two callbacks."""
    with SummaryWriter(tmp_path / "ember") as w:
        write_ember(w)
    with TorchWriter(tmp_path / "torch") as w:
        write_torch(w)
    return _read(tmp_path / "ember"), _read(tmp_path / "torch")


def _events(log_dir) -> list:
    """The raw Event protos of the (single) event file in `log_dir`."""
    [name] = [f for f in os.listdir(log_dir) if f.startswith("events.out.tfevents")]
    return list(EventFileLoader(os.path.join(log_dir, name)).Load())


# -- scalars -------------------------------------------------------------------------------------
SCALARS = [1, 2.5, np.float64(-3.25), np.array(7.0), "tensor0d", "tensor1", 1e-40, 3.14159265358979]


def _scalar(value, lib):
    if value == "tensor0d":
        return lib.tensor(0.1, dtype=lib.float64)
    if value == "tensor1":
        return lib.tensor([4.75], dtype=lib.float32)
    return value


def test_scalars_equal_torchs(tmp_path):
    def write(lib):
        return lambda w: [w.add_scalar("loss", _scalar(v, lib), step) for step, v in enumerate(SCALARS)]
    ours, theirs = _both(tmp_path, write(ember), write(torch))
    got = [(e.step, e.value) for e in ours.Scalars("loss")]
    assert got == [(e.step, e.value) for e in theirs.Scalars("loss")]
    assert [v for _, v in got] == [float(np.float32(float(np.asarray(v)) if not isinstance(v, str) else
                                                    {"tensor0d": 0.1, "tensor1": 4.75}[v])) for v in SCALARS]


@pytest.mark.parametrize("double_precision", [False, True])
def test_new_style_scalar_equals_torchs(tmp_path, double_precision):
    def write(w):
        w.add_scalar("acc", 0.1, 3, new_style=True, double_precision=double_precision)
    ours, theirs = _both(tmp_path, write, write)
    [mine], [ref] = ours.Tensors("acc"), theirs.Tensors("acc")
    assert (mine.step, mine.tensor_proto) == (ref.step, ref.tensor_proto)
    assert ours.SummaryMetadata("acc") == theirs.SummaryMetadata("acc")
    value = mine.tensor_proto.double_val[0] if double_precision else mine.tensor_proto.float_val[0]
    assert value == (0.1 if double_precision else float(np.float32(0.1)))


def test_scalar_errors_match_torch(tmp_path):
    with SummaryWriter(tmp_path / "e") as w, TorchWriter(tmp_path / "t") as tw:
        with pytest.raises(AssertionError) as ref:
            tw.add_scalar("x", torch.ones(2))
        with pytest.raises(AssertionError, match="add_scalar: scalar_value must hold one element, got 2"):
            w.add_scalar("x", ember.ones(2))
        with pytest.raises(NotImplementedError):
            tw.add_scalar("x", [1.0])
        with pytest.raises(NotImplementedError, match="must be an ember tensor, a numpy array or a Python number, "
                                                      "got list"):
            w.add_scalar("x", [1.0])
        with pytest.raises(ValueError, match="meta device"):
            w.add_scalar("x", ember.empty((), device="meta"))
    assert ref.type is AssertionError


def test_add_scalars_writes_one_run_per_series(tmp_path):
    def write(lib):
        def go(w):
            for step in range(3):
                w.add_scalars("train/loss", {"a": lib.tensor(step * 0.5), "b": float(-step)}, step)
        return go
    ours, theirs = _both(tmp_path, write(ember), write(torch))
    def subdirs(lib):
        return sorted(d for d in os.listdir(tmp_path / lib) if os.path.isdir(tmp_path / lib / d))
    assert subdirs("ember") == subdirs("torch") == ["train_loss_a", "train_loss_b"]
    for series, values in (("a", [0.0, 0.5, 1.0]), ("b", [0.0, -1.0, -2.0])):
        mine = _read(tmp_path / "ember" / f"train_loss_{series}").Scalars("train/loss")
        ref = _read(tmp_path / "torch" / f"train_loss_{series}").Scalars("train/loss")
        assert [(e.step, e.value) for e in mine] == [(e.step, e.value) for e in ref] == list(enumerate(values))
        assert len({e.wall_time for e in mine} | {e.wall_time for e in ref}) > 1     # one walltime per call


# -- histograms ----------------------------------------------------------------------------------
def _numpy_histogram(values: np.ndarray, edges) -> tuple[list, list]:
    """TensorBoard's buckets (right edges and counts) from numpy, trimmed to the occupied range with one
    empty bucket on the left."""
    counts, edges = np.histogram(values, bins=edges)
    occupied = np.flatnonzero(counts)
    lo, hi = occupied[0], occupied[-1]
    return list(edges[lo:hi + 2]), [0.0] + list(counts[lo:hi + 1].astype(float))


@pytest.mark.parametrize("kind", ["float64", "float32", "int64", "numpy"])
def test_histogram_matches_numpy_and_torch(tmp_path, kind):
    rng = np.random.default_rng(0)
    data = rng.normal(2.0, 3.0, size=(40, 25))
    if kind == "int64":
        data = np.round(data * 10)
    values = {"float64": lambda lib: lib.tensor(data), "float32": lambda lib: lib.tensor(data, dtype=lib.float32),
              "int64": lambda lib: lib.tensor(data.astype(np.int64)), "numpy": lambda lib: data}[kind]
    ours, theirs = _both(tmp_path, lambda w: w.add_histogram("w", values(ember), 5),
                         lambda w: w.add_histogram("w", values(torch), 5))
    [mine], [ref] = ours.Histograms("w"), theirs.Histograms("w")
    assert mine.step == 5 and mine.histogram_value == ref.histogram_value
    flat = np.asarray(values(ember).numpy() if kind != "numpy" else data, dtype=np.float64).reshape(-1)
    h = mine.histogram_value
    assert (h.min, h.max, h.num) == (flat.min(), flat.max(), flat.size)
    assert h.sum == pytest.approx(flat.sum(), rel=1e-12) and h.sum_squares == pytest.approx(flat @ flat, rel=1e-12)
    with SummaryWriter(tmp_path / "bins") as w:
        limits, counts = _numpy_histogram(flat, w.default_bins)
    assert (list(h.bucket_limit), list(h.bucket)) == (limits, counts)
    assert sum(h.bucket) == flat.size


@pytest.mark.parametrize("bins,max_bins", [("auto", None), (10, None), (np.linspace(-4, 4, 9), None),
                                           ("tensorflow", 50), (30, 7)])
def test_histogram_bins_and_max_bins_equal_torchs(tmp_path, bins, max_bins):
    data = np.random.default_rng(1).standard_normal(500)
    ours, theirs = _both(tmp_path, lambda w: w.add_histogram("h", ember.tensor(data), 0, bins, max_bins=max_bins),
                         lambda w: w.add_histogram("h", torch.tensor(data), 0, bins, max_bins=max_bins))
    assert ours.Histograms("h")[0].histogram_value == theirs.Histograms("h")[0].histogram_value
    if max_bins is not None:                      # merged in groups of len // max_bins, plus the empty left bucket
        count = len(np.histogram(data, ember.utils.tensorboard.summary.default_bins() if bins == "tensorflow"
                                 else bins)[0])
        assert len(ours.Histograms("h")[0].histogram_value.bucket) <= -(-count // (count // max_bins)) + 1


def test_histogram_raw_and_errors(tmp_path):
    args = dict(min=0.0, max=3.0, num=6, sum=9.0, sum_squares=19.0, bucket_limits=[1.0, 2.0, 3.0],
                bucket_counts=[1, 2, 3])
    ours, theirs = _both(tmp_path, lambda w: w.add_histogram_raw("r", global_step=2, **args),
                         lambda w: w.add_histogram_raw("r", global_step=2, **args))
    assert ours.Histograms("r")[0].histogram_value == theirs.Histograms("r")[0].histogram_value
    assert list(ours.Histograms("r")[0].histogram_value.bucket) == [1, 2, 3]
    with SummaryWriter(tmp_path / "e") as w:
        with pytest.raises(ValueError, match="bucket_limits and bucket_counts must have the same length, got 2 and 3"):
            w.add_histogram_raw("r", **{**args, "bucket_limits": [1.0, 2.0]})
        with pytest.raises(ValueError, match="add_histogram: values has no element"):
            w.add_histogram("h", ember.zeros(0))
    with TorchWriter(tmp_path / "t") as tw, pytest.raises(ValueError):
        tw.add_histogram("h", torch.zeros(0))


# -- images --------------------------------------------------------------------------------------
def _pixels(event) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(event.encoded_image_string)))


IMAGE_CASES = [  # (dataformats, shape, uint8?)
    ("CHW", (3, 5, 7), False), ("HWC", (5, 7, 3), True), ("HW", (5, 7), False), ("CHW", (1, 6, 4), False),
    ("HWC", (4, 6, 4), False), ("WH", (7, 5), True), ("CWH", (3, 7, 5), False),
]


@pytest.mark.parametrize("dataformats,shape,uint8", IMAGE_CASES)
def test_image_pixels_equal_torchs(tmp_path, dataformats, shape, uint8):
    rng = np.random.default_rng(2)
    data = rng.integers(0, 256, shape).astype(np.uint8) if uint8 else rng.uniform(-0.2, 1.2, shape).astype(np.float32)
    ours, theirs = _both(tmp_path, lambda w: w.add_image("im", ember.tensor(data), 4, dataformats=dataformats),
                         lambda w: w.add_image("im", torch.tensor(data), 4, dataformats=dataformats))
    [mine], [ref] = ours.Images("im"), theirs.Images("im")
    hwc = data.transpose([dataformats.index(c) for c in "HWC" if c in dataformats])
    expected = hwc if uint8 else (hwc.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)
    if expected.ndim == 2:
        expected = expected[:, :, None]
    if expected.shape[2] == 1:
        expected = np.repeat(expected, 3, axis=2)
    assert (mine.step, mine.height, mine.width) == (4, expected.shape[0], expected.shape[1])
    assert np.array_equal(_pixels(mine), expected)
    assert np.array_equal(_pixels(mine), _pixels(ref)) and (mine.height, mine.width) == (ref.height, ref.width)


@pytest.mark.parametrize("count,dataformats", [(10, "NCHW"), (3, "NHWC"), (8, "NCHW")])
def test_images_grid_equals_torchs(tmp_path, count, dataformats):
    data = np.random.default_rng(3).uniform(0, 1, (count, 1, 4, 5)).astype(np.float64)
    if dataformats == "NHWC":
        data = np.repeat(data, 3, axis=1).transpose(0, 2, 3, 1)
    ours, theirs = _both(tmp_path, lambda w: w.add_images("b", ember.tensor(data), dataformats=dataformats),
                         lambda w: w.add_images("b", torch.tensor(data), dataformats=dataformats))
    [mine], [ref] = ours.Images("b"), theirs.Images("b")
    columns = min(count, 8)
    rows = -(-count // columns)
    assert (mine.height, mine.width) == (4 * rows, 5 * columns)
    pixels = _pixels(mine)
    assert np.array_equal(pixels, _pixels(ref))
    first = data[0] if dataformats == "NHWC" else np.repeat(data[0], 3, axis=0).transpose(1, 2, 0)
    assert np.array_equal(pixels[:4, :5], (first * 255).astype(np.uint8))
    if count % columns:
        assert not pixels[-4:, -5:].any()        # the grid's unfilled cells are black


def test_image_errors_match_torch(tmp_path):
    with SummaryWriter(tmp_path / "e") as w, TorchWriter(tmp_path / "t") as tw:
        for bad in [("HWC", (3, 4)), ("CHH", (3, 4, 4))]:
            with pytest.raises(AssertionError):
                tw.add_image("i", torch.zeros(bad[1]), dataformats=bad[0])
        with pytest.raises(AssertionError, match=r"add_image: img_tensor has 2 dimensions \(shape \(3, 4\)\) but "
                                                 "dataformats 'HWC' names 3"):
            w.add_image("i", ember.zeros(3, 4), dataformats="HWC")
        with pytest.raises(AssertionError, match="dataformats must name each dimension once, got 'CHH'"):
            w.add_image("i", ember.zeros(3, 4, 4), dataformats="CHH")
        with pytest.raises(AssertionError, match="add_images: a batch of images needs 1 or 3 channels, got 4"):
            w.add_images("i", ember.zeros(2, 4, 3, 3))
        with pytest.raises(ValueError, match="an image needs 1, 3 or 4 channels, got 2"):
            w.add_image("i", ember.zeros(2, 3, 3))


# -- text, hyperparameters -----------------------------------------------------------------------
def test_text_equals_torchs(tmp_path):
    def write(w):
        w.add_text("notes", "lr **0.1**, ünïcode", 7)
        w.add_text("notes", "second", 8)
    ours, theirs = _both(tmp_path, write, write)
    mine, ref = ours.Tensors("notes/text_summary"), theirs.Tensors("notes/text_summary")
    assert [(e.step, e.tensor_proto) for e in mine] == [(e.step, e.tensor_proto) for e in ref]
    assert [e.tensor_proto.string_val[0].decode() for e in mine] == ["lr **0.1**, ünïcode", "second"]
    assert ours.SummaryMetadata("notes/text_summary") == theirs.SummaryMetadata("notes/text_summary")
    with SummaryWriter(tmp_path / "e") as w, pytest.raises(TypeError, match="text_string must be a str, got int"):
        w.add_text("notes", 3)


def test_hparams_equal_torchs(tmp_path):
    def write(lib):
        return lambda w: w.add_hparams({"lr": 0.01, "layers": 3, "opt": "adam", "bn": True, "drop": None,
                                        "wd": lib.tensor([1e-4])}, {"hparam/acc": 0.75},
                                       hparam_domain_discrete={"opt": ["adam", "sgd"]}, run_name="run0",
                                       global_step=2)
    _both(tmp_path, write(ember), write(torch))
    ours, theirs = _read(tmp_path / "ember" / "run0"), _read(tmp_path / "torch" / "run0")
    tags = ours.PluginTagToContent("hparams")
    assert tags.keys() == theirs.PluginTagToContent("hparams").keys() == {"_hparams_/experiment",
                                                                          "_hparams_/session_start_info",
                                                                          "_hparams_/session_end_info"}
    for tag, content in tags.items():
        mine, ref = HParamsPluginData.FromString(content), HParamsPluginData.FromString(theirs.PluginTagToContent(
            "hparams")[tag])
        assert mine == ref, tag
    start = HParamsPluginData.FromString(tags["_hparams_/session_start_info"]).session_start_info
    assert start.hparams["opt"].string_value == "adam" and start.hparams["layers"].number_value == 3
    assert start.hparams["wd"].number_value == pytest.approx(1e-4) and "drop" not in start.hparams
    assert [(e.step, e.value) for e in ours.Scalars("hparam/acc")] == [(2, 0.75)]
    with SummaryWriter(tmp_path / "e") as w:
        with pytest.raises(TypeError, match="hparam_dict and metric_dict must be dicts, got list and dict"):
            w.add_hparams([("lr", 1)], {})
        with pytest.raises(ValueError, match=r"hparam_dict\['f'\] must be an int, float, str, bool or tensor, "
                                             "got function"):
            w.add_hparams({"f": lambda: 0}, {})


# -- the writer: files, purge_step, log_dir ------------------------------------------------------
def test_purge_step_events_equal_torchs(tmp_path):
    def write(w):
        w.add_scalar("x", 1.0, 12)
    with SummaryWriter(tmp_path / "ember", purge_step=10) as w:
        write(w)
    with TorchWriter(tmp_path / "torch", purge_step=10) as w:
        write(w)

    def shape(events):
        return [(e.step, e.WhichOneof("what"), e.session_log.status if e.HasField("session_log") else None)
                for e in events]
    mine = shape(_events(tmp_path / "ember"))
    assert mine == shape(_events(tmp_path / "torch"))
    assert mine[1:] == [(10, "file_version", None), (10, "session_log", 1), (12, "summary", None)]


def test_default_log_dir_comment_suffix_and_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1", filename_suffix=".ember", max_queue=3, flush_secs=1)
    pattern = r"runs/[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_" + re.escape(socket.gethostname()) + r"_lr0\.1"
    assert re.fullmatch(pattern, w.get_logdir()) and w.log_dir == w.get_logdir()
    w.add_scalar("a", 1.0, 0)
    w.flush()                                      # visible before close
    assert [(e.step, e.value) for e in _read(w.log_dir).Scalars("a")] == [(0, 1.0)]
    [name] = os.listdir(w.log_dir)
    assert name.startswith("events.out.tfevents.") and name.endswith(".ember")
    w.close()
    w.close()                                      # closing twice is fine
    w.add_scalar("a", 2.0, 1)                      # used after close: a new event file
    w.close()
    assert len(os.listdir(w.log_dir)) == 2
    assert [(e.step, e.value) for e in _read(w.log_dir).Scalars("a")] == [(0, 1.0), (1, 2.0)]


def test_context_manager_closes_and_walltime(tmp_path):
    with SummaryWriter(str(tmp_path / "r")) as w:
        w.add_scalar("a", 3, 5, walltime=123.5)
        w.add_text("t", "x", walltime=99.0)
    assert w.all_writers is None and w.file_writer is None
    acc = _read(tmp_path / "r")
    assert [(e.wall_time, e.step, e.value) for e in acc.Scalars("a")] == [(123.5, 5, 3.0)]
    assert acc.Tensors("t/text_summary")[0].wall_time == 99.0


def test_import_without_tensorboard_says_how_to_install(monkeypatch):
    for name in [m for m in sys.modules if m.startswith("ember.utils.tensorboard")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ImportError, match="pip install tensorboard"):
        import ember.utils.tensorboard  # noqa: F401


# -- the graph -----------------------------------------------------------------------------------
def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(4, 3)
            self.act = lib.nn.ReLU()
            self.seq = lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.Tanh())

        def forward(self, x):
            h = self.act(self.fc(x)) + x[:, :3] * 2
            return self.seq(h).sum(dim=1)
    return Net()


def _module_scopes(graph) -> set:
    """The module scopes (`Net/Linear[fc]`, ...) the graph's node names are grouped by."""
    return {n.name[:n.name.rindex("]") + 1] for n in graph.node if "]" in n.name}


def _io(graph) -> dict:
    return {n.name: [[d.size for d in s.dim] for s in n.attr["_output_shapes"].list.shape]
            for n in graph.node if n.op == "IO Node"}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # torch.jit.trace, which torch's add_graph calls
def test_graph_has_the_models_nodes_and_torchs_scopes(tmp_path):
    x = np.random.default_rng(4).standard_normal((2, 4)).astype(np.float32)
    model = _net(ember)
    model.train()
    ours, theirs = _both(tmp_path, lambda w: w.add_graph(model, ember.tensor(x)),
                         lambda w: w.add_graph(_net(torch), torch.tensor(x)))
    graph, ref = ours.Graph(), theirs.Graph()
    assert model.training                          # traced in eval mode, mode restored
    assert _module_scopes(graph) == _module_scopes(ref) == {
        "Net/Linear[fc]", "Net/ReLU[act]", "Net/Sequential[seq]/Linear[0]", "Net/Sequential[seq]/Tanh[1]"}
    assert _io(graph) == _io(ref) == {"input/x": [[2, 4]], "output/output.1": [[2]]}

    fx_graph = ember.fx.symbolic_trace(model).graph
    by_name = {n.name.rsplit("/", 1)[-1] if not n.name.startswith("output/") else n.name: n for n in graph.node}
    inner = [n for n in fx_graph.nodes if n.op != "output"]
    assert len(graph.node) == len(inner) + 1 and all(n.name in by_name for n in inner)
    ops = {n.name: by_name[n.name].op for n in inner}
    assert ops == {"x": "IO Node", "fc": "ember.nn.Linear", "act": "ember.nn.ReLU", "getitem": "operator.getitem",
                   "mul": "operator.mul", "add": "operator.add", "_0": "ember.nn.Linear", "_1": "ember.nn.Tanh",
                   "sum": "Tensor.sum"}
    for n in inner:                                # each fx edge is a GraphDef input, in order
        assert [i.rsplit("/", 1)[-1] for i in by_name[n.name].input] == [i.name for i in n.all_input_nodes]
    assert list(by_name["output/output.1"].input) == ["Net/sum"]
    assert by_name["mul"].attr["attr"].s == b"{ args : (%getitem, 2), kwargs : {} }"
    assert [d.size for d in by_name["add"].attr["_output_shapes"].list.shape[0].dim] == [2, 3]
    assert ours.RunMetadata("step1") == theirs.RunMetadata("step1")


class _Functional(nn.Module):
    """Parameters read in forward and functions called on them: get_attr and call_function nodes."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(ember.randn(3, 2))
        self.inner = nn.Module()
        self.inner.register_buffer("b", ember.ones(2))

    def forward(self, x, y):
        h = nn.functional.relu(ember.matmul(x, self.w)) + self.inner.b
        return h, (h.t(), y)


def test_graph_of_functions_and_attributes_and_without_inputs(tmp_path):
    model = _Functional()
    x, y = ember.randn(5, 3), ember.randn(4, dtype=ember.float64)
    with SummaryWriter(tmp_path / "r") as w:
        w.add_graph(model, (x, y))
        with pytest.raises(TypeError, match="model must be an ember.nn.Module, got function"):
            w.add_graph(lambda x: x)
    with SummaryWriter(tmp_path / "bare") as w:
        w.add_graph(model)
    graph = _read(tmp_path / "r").Graph()
    nodes = {n.name: (n.op, list(n.input)) for n in graph.node}
    assert nodes == {
        "input/x": ("IO Node", []), "input/y": ("IO Node", []),
        "_Functional/w": ("get_attr", []),
        "_Functional/matmul": ("ember.matmul", ["input/x", "_Functional/w"]),
        "_Functional/relu": ("ember.relu", ["_Functional/matmul"]),
        "_Functional/Module[inner]/inner_b": ("get_attr", []),
        "_Functional/add": ("operator.add", ["_Functional/relu", "_Functional/Module[inner]/inner_b"]),
        "_Functional/t": ("Tensor.t", ["_Functional/add"]),
        "output/output.1": ("IO Node", ["_Functional/add"]), "output/output.2": ("IO Node", ["_Functional/t"]),
        "output/output.3": ("IO Node", ["input/y"])}
    h = model(x, y)[0]
    assert _io(graph) == {"input/x": [[5, 3]], "input/y": [[4]], "output/output.1": [list(h.shape)],
                          "output/output.2": [[2, 5]], "output/output.3": [[4]]}
    assert {n.name: n.attr["attr"].s for n in graph.node if n.op == "get_attr"} == {
        "_Functional/w": b"{ name : w }", "_Functional/Module[inner]/inner_b": b"{ name : inner.b }"}
    assert not any("_output_shapes" in n.attr for n in _read(tmp_path / "bare").Graph().node)   # no inputs


