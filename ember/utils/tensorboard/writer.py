"""`SummaryWriter` and `FileWriter`: TensorBoard event files written from a training loop (torch's API).

A `FileWriter` wraps tensorboard's `EventFileWriter`, which queues events and writes them from a
background thread (`max_queue` pending events force a write; `flush_secs` is the longest an
event waits), so logging does not stall training. `SummaryWriter` turns values (ember tensors,
numpy arrays, Python numbers) into summaries (summary.py, _image.py, _graph.py) and hands them
to its file writer, which it recreates if used after `close()`, as torch's does. `add_scalars`
writes each series through its own writer in a subdirectory `<log_dir>/<main_tag>_<tag>`, so
TensorBoard draws them as runs in one chart; `add_hparams` writes a run of its own in
`<log_dir>/<run_name>`.
"""
from __future__ import annotations

import os
import time

from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as _summary

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Events and summaries written to an event file in `log_dir`, asynchronously."""

    def __init__(self, log_dir, max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = "") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, event: Event, step=None, walltime: float | None = None) -> None:
        """Queue `event`, stamped with `walltime` (default now) and, if given, `step`."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary: Summary, global_step=None, walltime: float | None = None) -> None:
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime: float | None = None) -> None:
        """A (GraphDef, RunMetadata) pair: the graph, and its run metadata tagged `step1` as torch's."""
        graph, run_metadata = graph_profile
        self.add_event(Event(graph_def=graph.SerializeToString()), None, walltime)
        tagged = Event(tagged_run_metadata=TaggedRunMetadata(tag="step1", run_metadata=run_metadata.SerializeToString()))
        self.add_event(tagged, None, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()

    def reopen(self) -> None:
        """After `close()`: write on, to a new event file in the same directory."""
        self.event_writer.reopen()


class SummaryWriter:
    """Writes scalars, histograms, images, text, graphs and hyperparameters for TensorBoard.

    `log_dir` defaults to `runs/<Mon DD_HH-MM-SS>_<hostname><comment>` (torch's); `purge_step`
    marks a resumed run, so TensorBoard hides the events a crashed run logged at that step or
    later; `max_queue`, `flush_secs` and `filename_suffix` are passed to the event file writer.
    Use it as a context manager or call `close()` to write everything out.
    """

    def __init__(self, log_dir=None, comment: str = "", purge_step: int | None = None, max_queue: int = 10,
                 flush_secs: float = 120, filename_suffix: str = "") -> None:
        if not log_dir:
            import socket
            from datetime import datetime

            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self._get_file_writer()
        self.default_bins = _summary.default_bins()

    def _get_file_writer(self) -> FileWriter:
        """The writer of `log_dir`, made anew after `close()`; the first one marks `purge_step`."""
        if self.file_writer is None or self.all_writers is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        return self.log_dir

    def _add(self, summary: Summary, global_step, walltime) -> None:
        self._get_file_writer().add_summary(summary, global_step, walltime)

    # -- values -----------------------------------------------------------------------------
    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime: float | None = None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """One number (a Python number, a one-element tensor or array) at `global_step`."""
        self._add(_summary.scalar(tag, scalar_value, new_style, double_precision), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None,
                    walltime: float | None = None) -> None:
        """Several series in one chart: each written under `main_tag` by a writer of its own."""
        walltime = time.time() if walltime is None else walltime
        base = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            directory = base + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(directory)
            if writer is None:
                writer = self.all_writers[directory] = FileWriter(directory, self.max_queue, self.flush_secs,
                                                                  self.filename_suffix)
            writer.add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        """A histogram of `values`; `bins` is numpy.histogram's, or "tensorflow" for TensorFlow's edges."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._add(_summary.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step=None, walltime: float | None = None) -> None:
        """A histogram from statistics computed elsewhere (each bucket's upper edge and count)."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError(f"SummaryWriter.add_histogram_raw: bucket_limits and bucket_counts must have the same "
                             f"length, got {len(bucket_limits)} and {len(bucket_counts)}")
        self._add(_summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts),
                  global_step, walltime)

    def add_image(self, tag: str, img_tensor, global_step=None, walltime: float | None = None,
                  dataformats: str = "CHW") -> None:
        """One image: `dataformats` CHW, HWC, HW (or a permutation); floats in [0, 1] or uint8."""
        self._add(_summary.image(tag, img_tensor, dataformats, "add_image"), global_step, walltime)

    def add_images(self, tag: str, img_tensor, global_step=None, walltime: float | None = None,
                   dataformats: str = "NCHW") -> None:
        """A batch of images shown as one grid (eight a row); `dataformats` NCHW, NHWC, ..."""
        self._add(_summary.image(tag, img_tensor, dataformats, "add_images"), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step=None, walltime: float | None = None) -> None:
        """A string (TensorBoard renders it as markdown)."""
        self._add(_summary.text(tag, text_string), global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose: bool = False, use_strict_trace: bool = True) -> None:
        """`model`'s graph, traced with ember.fx; with `input_to_model` (a tensor or a tuple of them) each
        node shows its output shapes. `use_strict_trace` is torch.jit's option, accepted and unused."""
        from ._graph import graph

        self._get_file_writer().add_graph(graph(model, input_to_model, verbose))

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None,
                    run_name: str | None = None, global_step=None) -> None:
        """One run's hyperparameters and metrics, for the hparams tab, in `<log_dir>/<run_name>` (default:
        the current time)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("SummaryWriter.add_hparams: hparam_dict and metric_dict must be dicts, got "
                            f"{type(hparam_dict).__name__} and {type(metric_dict).__name__}")
        summaries = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run_dir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=run_dir) as run:
            for s in summaries:
                run.file_writer.add_summary(s, global_step)
            for tag, value in metric_dict.items():
                run.add_scalar(tag, value, global_step)

    # -- files ------------------------------------------------------------------------------
    def flush(self) -> None:
        """Write every pending event to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Write everything out and close the files (a later `add_*` opens a new file; closing twice is fine)."""
        for writer in (self.all_writers or {}).values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> "SummaryWriter":
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.close()
