"""The NCCL engine: the collectives of a 'nccl' group on cuda tensors, through cupy's NCCL binding.

A 'nccl' group keeps its MPI communicator (which hands every rank NCCL's unique id at creation and
serves the object collectives and the health checks) and adds one NCCL communicator on one GPU: the
`device_id` given to init_process_group or new_group, else cupy's current device (set it per rank
with `ember.cuda.set_device(local_rank)`). Tensors must be on that GPU.

Each collective runs on the group's own CUDA stream, after that stream waits for what the current
stream has queued, so it overlaps the compute that follows it, as torch's NCCL backend does. A call
returns once the collective is queued; `wait()` (or a call made without `async_op`) makes the
current stream wait for it, without blocking the host. With EMBER_NCCL_BLOCKING_WAIT=1 (or
TORCH_NCCL_BLOCKING_WAIT=1) `wait()` blocks the host instead, against the group's timeout, and a
dead or stuck peer raises DistBackendError as with the MPI engine. `barrier()` always blocks.

NCCL has all_reduce, reduce, broadcast, all_gather and reduce_scatter of equal pieces; the others
(lists of pieces of any size, gather, scatter, all-to-all, send and recv) are NCCL point-to-point
calls and broadcasts fused into one NCCL group call, as torch composes them. Data moves as its own
dtype (float16 reduced in float16 by NCCL), bool as bytes, complex as pairs of reals.
"""
from __future__ import annotations

import collections
import contextlib
import os

from ember.core.device import as_device

from . import engine
from .errors import DistBackendError
from .reduce_op import RedOpType
from .staging import reduction_category
from .work import Work

__all__ = ["NcclContext", "all_reduce", "reduce", "broadcast", "all_gather_into_tensor", "reduce_scatter_tensor",
           "all_gather", "reduce_scatter", "gather", "scatter", "all_to_all", "barrier", "send", "recv"]


def _blocking_wait() -> bool:
    value = os.environ.get("EMBER_NCCL_BLOCKING_WAIT") or os.environ.get("TORCH_NCCL_BLOCKING_WAIT") or "0"
    return value.strip().lower() in ("1", "true", "yes")


class NcclContext:
    """The NCCL side of one process group: the communicator, its GPU, the stream its collectives run
    on, and the buffers of collectives still in flight (kept alive until their stream passed them)."""

    def __init__(self, mpi_comm, device: int, op: str) -> None:
        import cupy

        nccl = engine.nccl()
        rank = mpi_comm.Get_rank()
        unique_id = mpi_comm.bcast(nccl.get_unique_id() if rank == 0 else None, root=0)
        with cupy.cuda.Device(device), nccl_errors(op, rank):
            self.comm = nccl.NcclCommunicator(mpi_comm.Get_size(), unique_id, rank)
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self.device = device
        self.in_flight: collections.deque = collections.deque()      # (done event, buffers)

    def keep_until_done(self, event, buffers) -> None:
        """Hold `buffers` until `event` has passed (cupy could hand their memory to another stream)."""
        while self.in_flight and self.in_flight[0][0].done:
            self.in_flight.popleft()
        self.in_flight.append((event, buffers))

    def close(self) -> None:
        """Free the communicator once the queued collectives are done."""
        self.stream.synchronize()
        self.in_flight.clear()
        self.comm.destroy()


def create_context(mpi_comm, device_id, op: str) -> NcclContext:
    """The NCCL side of a new group over `mpi_comm` (every rank of it calls this together, after
    engine.nccl_unavailable_reason() said NCCL can run)."""
    import cupy

    if device_id is None:
        device = int(cupy.cuda.runtime.getDevice())
    elif isinstance(device_id, int):
        device = device_id
    else:
        named = as_device(device_id)
        if named.type != "cuda" or named.index is None:
            raise ValueError(f"{op}: device_id must be a cuda device with an index (or an int), got {device_id!r}")
        device = named.index
    count = cupy.cuda.runtime.getDeviceCount()
    if not 0 <= device < count:
        raise ValueError(f"{op}: device_id {device} is not a visible GPU (this process sees {count})")
    return NcclContext(mpi_comm, device, op)


@contextlib.contextmanager
def nccl_errors(op: str, rank: int):
    """Turn an NCCL error raised inside the block into DistBackendError naming `op` and `rank`."""
    try:
        yield
    except engine.nccl().NcclError as e:
        raise DistBackendError(f"{op}: the NCCL engine failed on rank {rank}: {e}") from e


# ------------------------------------------------------------------------------------------ buffers

_WIRE = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "int8": "NCCL_INT8",
         "uint8": "NCCL_UINT8", "int32": "NCCL_INT32", "int64": "NCCL_INT64", "uint32": "NCCL_UINT32",
         "uint64": "NCCL_UINT64", "bool": "NCCL_UINT8", "complex64": "NCCL_FLOAT32", "complex128": "NCCL_FLOAT64"}


class DeviceBuffer:
    """One cuda tensor as a flat contiguous cupy array `flat`: the tensor's own memory when it is
    contiguous, a copy otherwise, which `commit()` writes back. `ptr`, `count` and `dtype` describe
    it to NCCL (complex values as twice as many reals)."""

    __slots__ = ("tensor", "view", "flat", "aliased", "ptr", "count", "dtype", "itemsize", "pairs")

    def __init__(self, tensor, op: str, reads: bool = True) -> None:
        import cupy

        self.tensor = tensor
        self.view = cupy.from_dlpack(tensor.detach())
        self.aliased = self.view.flags.c_contiguous
        if self.aliased:
            self.flat = self.view.reshape(-1)
        elif reads:
            self.flat = cupy.ascontiguousarray(self.view).reshape(-1)
        else:
            self.flat = cupy.empty(self.view.size, self.view.dtype)
        name = self.view.dtype.name
        if name not in _WIRE:
            raise RuntimeError(f"{op}: the 'nccl' backend cannot move {tensor.dtype} tensors (NCCL has no such type)")
        self.dtype = getattr(engine.nccl(), _WIRE[name])
        self.pairs = 2 if name.startswith("complex") else 1
        self.count = self.flat.size * self.pairs
        self.itemsize = self.flat.itemsize // self.pairs
        self.ptr = self.flat.data.ptr

    def at(self, offset: int) -> int:
        """The address of wire element `offset`."""
        return self.ptr + offset * self.itemsize

    def commit(self) -> None:
        """Write `flat` back into the tensor (queued on the current stream) and bump its storage version."""
        if not self.aliased:
            self.view[...] = self.flat.reshape(self.view.shape)
        self.tensor._storage.version += 1


def _commit_all(buffers):
    def done() -> None:
        for b in buffers:
            b.commit()
    return done


_REDUCTIONS = {RedOpType.SUM: "NCCL_SUM", RedOpType.AVG: "NCCL_AVG", RedOpType.PRODUCT: "NCCL_PROD",
               RedOpType.MIN: "NCCL_MIN", RedOpType.MAX: "NCCL_MAX"}
# bool tensors (bytes 0/1): SUM and BOR are a logical or, PRODUCT and BAND a logical and
_BOOL_REDUCTIONS = {RedOpType.SUM: "NCCL_MAX", RedOpType.MAX: "NCCL_MAX", RedOpType.BOR: "NCCL_MAX",
                    RedOpType.PRODUCT: "NCCL_MIN", RedOpType.MIN: "NCCL_MIN", RedOpType.BAND: "NCCL_MIN"}


def reduction(op, tensor, op_name: str) -> int:
    """NCCL's reduction serving `op` (checked already by staging.check_reduce_op) on `tensor`'s values."""
    category = reduction_category(tensor)
    table = _BOOL_REDUCTIONS if category == "bool" else _REDUCTIONS
    if op not in table:
        raise ValueError(f"{op_name}: cannot use ReduceOp.{op.name} with NCCL on {tensor.dtype} tensors")
    if tensor.is_complex() and op not in (RedOpType.SUM, RedOpType.AVG):
        raise ValueError(f"{op_name}: ReduceOp.{op.name} is not defined on complex tensors (SUM and AVG are)")
    return getattr(engine.nccl(), table[op])


# ------------------------------------------------------------------------------------------ work


class NcclWork(Work):
    """A queued NCCL collective: done when its stream has passed the event recorded after it."""

    def __init__(self, op: str, pg, event, on_complete, outputs, collective: bool, blocking: bool,
                 source: int | None = None) -> None:
        super().__init__(op, pg, [], on_complete, outputs, collective)
        self._event = event
        self._blocking = blocking
        self._source = source

    def _poll(self) -> bool:
        with nccl_errors(self._op, self._rank):
            self._pg.nccl.comm.check_async_error()
        return self._event.done

    def wait(self, timeout=None) -> bool:
        """Make the current stream wait for the collective (and, in blocking mode or for a barrier,
        the host too, against `timeout`), then write its outputs."""
        import cupy

        if self._blocking:
            super().wait(timeout)
        with cupy.cuda.Device(self._pg.nccl.device):
            cupy.cuda.get_current_stream().wait_event(self._event)
        if not self._done:
            self._finish()
        return True

    def synchronize(self) -> None:
        """Block the host until the collective is done (torch's Work.synchronize)."""
        self._event.synchronize()


def launch(op: str, pg, enqueue, buffers, on_complete=None, async_op: bool = False, outputs=(),
           collective: bool = True, blocking: bool | None = None, source: int | None = None):
    """Queue `enqueue(comm, stream_ptr)` on the group's stream after the current stream's work, as an
    NcclWork; wait on it unless `async_op`."""
    import cupy

    ctx = pg.nccl
    rank = pg.ranks[pg.rank()]
    with cupy.cuda.Device(ctx.device):
        ctx.stream.wait_event(cupy.cuda.get_current_stream().record())
        with nccl_errors(op, rank):
            enqueue(ctx.comm, ctx.stream.ptr)
        done = ctx.stream.record()
    ctx.keep_until_done(done, buffers)
    work = NcclWork(op, pg, done, on_complete, outputs, collective,
                    _blocking_wait() if blocking is None else blocking, source)
    if async_op:
        return work
    work.wait()
    return None


@contextlib.contextmanager
def _group_call():
    """NCCL calls made inside run as one (point-to-point pairs may then be issued in any order)."""
    nccl = engine.nccl()
    nccl.groupStart()
    try:
        yield
    finally:
        nccl.groupEnd()


def _copy(dst: DeviceBuffer, dst_offset: int, src: DeviceBuffer, src_offset: int, count: int, stream_ptr: int):
    """A device-to-device copy of `count` wire elements, queued on the stream at `stream_ptr`."""
    import cupy

    cupy.cuda.runtime.memcpyAsync(dst.at(dst_offset), src.at(src_offset), count * src.itemsize,
                                  cupy.cuda.runtime.memcpyDeviceToDevice, stream_ptr)


# ------------------------------------------------------------------------------------------ collectives


def all_reduce(pg, tensor, op, async_op: bool):
    b = DeviceBuffer(tensor, "all_reduce")
    red = reduction(op, tensor, "all_reduce")
    return launch("all_reduce", pg, lambda c, s: c.allReduce(b.ptr, b.ptr, b.count, b.dtype, red, s), [b],
                  b.commit, async_op, [tensor])


def reduce(pg, tensor, root: int, op, async_op: bool):
    b = DeviceBuffer(tensor, "reduce")
    red = reduction(op, tensor, "reduce")
    return launch("reduce", pg, lambda c, s: c.reduce(b.ptr, b.ptr, b.count, b.dtype, red, root, s), [b],
                  b.commit if pg.rank() == root else None, async_op, [tensor])


def broadcast(pg, tensor, root: int, async_op: bool):
    b = DeviceBuffer(tensor, "broadcast", reads=pg.rank() == root)
    return launch("broadcast", pg, lambda c, s: c.broadcast(b.ptr, b.ptr, b.count, b.dtype, root, s), [b],
                  None if pg.rank() == root else b.commit, async_op, [tensor])


def all_gather_into_tensor(pg, output, input, async_op: bool):  # noqa: A002
    src = DeviceBuffer(input, "all_gather_into_tensor")
    out = DeviceBuffer(output, "all_gather_into_tensor", reads=False)
    return launch("all_gather_into_tensor", pg,
                  lambda c, s: c.allGather(src.ptr, out.ptr, src.count, src.dtype, s), [src, out], out.commit,
                  async_op, [output])


def reduce_scatter_tensor(pg, output, input, op, async_op: bool):  # noqa: A002
    src = DeviceBuffer(input, "reduce_scatter_tensor")
    out = DeviceBuffer(output, "reduce_scatter_tensor", reads=False)
    red = reduction(op, input, "reduce_scatter_tensor")
    return launch("reduce_scatter_tensor", pg,
                  lambda c, s: c.reduceScatter(src.ptr, out.ptr, out.count, out.dtype, red, s), [src, out],
                  out.commit, async_op, [output])


def all_gather(pg, tensor_list, tensor, async_op: bool):
    """One broadcast per rank (pieces may differ in size), fused into one NCCL group call."""
    mine = DeviceBuffer(tensor, "all_gather")
    outs = [DeviceBuffer(t, "all_gather", reads=False) for t in tensor_list]
    me = pg.rank()

    def enqueue(c, s):
        with _group_call():
            for root, out in enumerate(outs):
                c.broadcast(mine.ptr if root == me else out.ptr, out.ptr, out.count, out.dtype, root, s)
    return launch("all_gather", pg, enqueue, [mine, *outs], _commit_all(outs), async_op, tensor_list)


def reduce_scatter(pg, output, input_list, op, async_op: bool):
    """One reduce per rank (pieces may differ in size), fused into one NCCL group call."""
    ins = [DeviceBuffer(t, "reduce_scatter") for t in input_list]
    out = DeviceBuffer(output, "reduce_scatter", reads=False)
    red = reduction(op, output, "reduce_scatter")
    me = pg.rank()

    def enqueue(c, s):
        with _group_call():
            for root, src in enumerate(ins):     # NCCL writes the receive buffer on the root only
                c.reduce(src.ptr, out.ptr if root == me else src.ptr, src.count, src.dtype, red, root, s)
    return launch("reduce_scatter", pg, enqueue, [*ins, out], out.commit, async_op, [output])


def gather(pg, tensor, gather_list, root: int, async_op: bool):
    mine = DeviceBuffer(tensor, "gather")
    me = pg.rank()
    if me != root:
        return launch("gather", pg, lambda c, s: c.send(mine.ptr, mine.count, mine.dtype, root, s), [mine], None,
                      async_op)
    outs = [DeviceBuffer(t, "gather", reads=False) for t in gather_list]

    def enqueue(c, s):
        _copy(outs[me], 0, mine, 0, mine.count, s)
        with _group_call():
            for peer, out in enumerate(outs):
                if peer != me:
                    c.recv(out.ptr, out.count, out.dtype, peer, s)
    return launch("gather", pg, enqueue, [mine, *outs], _commit_all(outs), async_op, gather_list)


def scatter(pg, tensor, scatter_list, root: int, async_op: bool):
    out = DeviceBuffer(tensor, "scatter", reads=False)
    me = pg.rank()
    if me != root:
        return launch("scatter", pg, lambda c, s: c.recv(out.ptr, out.count, out.dtype, root, s), [out], out.commit,
                      async_op, [tensor])
    ins = [DeviceBuffer(t, "scatter") for t in scatter_list]

    def enqueue(c, s):
        _copy(out, 0, ins[me], 0, out.count, s)
        with _group_call():
            for peer, src in enumerate(ins):
                if peer != me:
                    c.send(src.ptr, src.count, src.dtype, peer, s)
    return launch("scatter", pg, enqueue, [out, *ins], out.commit, async_op, [tensor])


def all_to_all(pg, sends, recvs, op: str, outputs, async_op: bool):
    """`sends[i]` (buffer, first element, element count) to rank i, `recvs[j]` from rank j, as grouped
    NCCL sends and receives (this rank's own piece copied on the device)."""
    me = pg.rank()
    buffers = list({id(b): b for b, _, _ in sends + recvs}.values())
    receivers = list({id(b): b for b, _, _ in recvs}.values())

    def enqueue(c, s):
        (src, s_off, n), (dst, d_off, _) = sends[me], recvs[me]
        _copy(dst, d_off * dst.pairs, src, s_off * src.pairs, n * src.pairs, s)
        with _group_call():
            for peer in range(pg.size()):
                if peer == me:
                    continue
                (src, s_off, n), (dst, d_off, m) = sends[peer], recvs[peer]
                if n:
                    c.send(src.at(s_off * src.pairs), n * src.pairs, src.dtype, peer, s)
                if m:
                    c.recv(dst.at(d_off * dst.pairs), m * dst.pairs, dst.dtype, peer, s)
    return launch(op, pg, enqueue, buffers, _commit_all(receivers), async_op, outputs)


def barrier(pg, async_op: bool):
    """torch's NCCL barrier: an all-reduce of one byte on the device, which the host then waits for."""
    import cupy

    with cupy.cuda.Device(pg.nccl.device):
        flag = cupy.zeros(1, cupy.uint8)
    nccl = engine.nccl()
    ptr = flag.data.ptr
    return launch("barrier", pg, lambda c, s: c.allReduce(ptr, ptr, 1, nccl.NCCL_UINT8, nccl.NCCL_SUM, s), [flag],
                  None, async_op, blocking=True)


def send(pg, op: str, tensor, to: int):
    """NCCL matches sends and receives between two ranks in the order they are made, so a send's tag
    has no meaning here (torch's NCCL backend ignores it too)."""
    b = DeviceBuffer(tensor, op)
    return launch(op, pg, lambda c, s: c.send(b.ptr, b.count, b.dtype, to, s), [b], None, True, collective=False)


def recv(pg, op: str, tensor, frm: int | None):
    if frm is None:
        raise RuntimeError(f"{op}: the 'nccl' backend cannot receive from any source; name the sending rank")
    b = DeviceBuffer(tensor, op, reads=False)
    return launch(op, pg, lambda c, s: c.recv(b.ptr, b.count, b.dtype, frm, s), [b], b.commit, True, [tensor],
                  collective=False, source=pg.ranks[frm])
