"""The parameters of one FSDP unit (a module given to `fully_shard`), sharded across the ranks.

Layout (torch's FSDP2): each parameter is split along its first dimension into N row blocks of
ceil(rows / N) rows (the last ones padded), and rank r keeps block r as the *sharded parameter*
the optimizer steps: the same number of dimensions as the original, so code that groups
parameters by `p.dim()` or by name still works, and every elementwise update on the shards
equals the unsharded one. A 0-d parameter is treated as one row: its shard is 1-d, (1,) on rank 0
and (0,) elsewhere.

* `unshard()`: the unit's blocks, padded and laid end to end, travel in one all-gather; each
  original parameter object is then given its whole value again (`.data`) and is what the
  module's forward sees.
* `reshard()`: the module's attributes go back to the sharded parameters, and the original
  parameters let go of their gathered values (`.data` becomes empty), which frees them: what the
  autograd graph saved of them was packed as a reference (`pack_saved`/`unpack_saved`, installed
  by fully_shard as saved-tensor hooks) and is gathered again when backward needs it.
* Gradients: a post-accumulate-grad hook on each original parameter copies its gradient, cut into
  the ranks' row blocks, into a flat buffer; once every parameter of the unit that needs one has
  its gradient, one reduce-scatter (average) leaves this rank's blocks, which are added into the
  sharded parameters' `.grad`; the full gradients are dropped and the unit is resharded right away.
  Which originals need a gradient follows the sharded parameters' `requires_grad`, so freezing
  works before and after fully_shard.
"""
from __future__ import annotations

from dataclasses import dataclass

from ember import distributed as dist
from ember._generated.functions import as_strided, empty, zeros
from ember.frontend.autograd.engine import queue_callback, queue_callback_once
from ember.frontend.autograd.grad_mode import is_grad_enabled, no_grad
from ember.frontend.tensor import Tensor
from ember.nn.parameter import Parameter

__all__ = ["ParamGroup", "ParamSlot", "MixedPrecisionPolicy", "UNSHARDED", "pack_saved", "unpack_saved"]

#: the groups whose parameters are gathered now (the saved-tensor hooks look for their buffers)
UNSHARDED: list["ParamGroup"] = []


def _queue_end_of_backward() -> None:
    """Once per backward pass: at its end, free every unit still gathered (a unit regathered for
    backward whose parameters got no gradient, or one that kept its parameters after forward)."""
    queue_callback_once("fsdp: reshard all", _reshard_all)


def _reshard_all() -> None:
    for group in list(UNSHARDED):
        group.reshard()


def pack_saved(t: Tensor):
    """The saved-tensor pack hook of FSDP units' forwards: (a view of) a gathered parameter is saved
    as a reference to it (so resharding frees it); anything else is saved as usual."""
    for g in UNSHARDED:
        index = g.owns(t)
        if index is not None:
            return (g, index, tuple(t.shape), t.stride(), t.storage_offset())
    return t


def unpack_saved(token) -> Tensor:
    group, index, shape, stride, offset = token
    return group.unpack(index, shape, stride, offset)


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """torch's FSDP2 policy: `param_dtype` for the gathered parameters (and thus the forward and
    backward compute), `reduce_dtype` for the gradient reduce-scatter, `output_dtype` for the
    unit's floating-point outputs; `cast_forward_inputs` casts the floating-point inputs to
    `param_dtype`. None keeps the dtype as it is."""

    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True


@dataclass
class ParamSlot:
    """One original parameter of a unit: its row blocks, and where it is registered."""

    name: str                        # its name relative to the unit's module (the first, if shared)
    original: Parameter              # the parameter object the module's forward uses (gathered)
    sharded: Parameter               # what the optimizer steps: this rank's rows of it
    places: list                     # (module, attribute name) of every registration (tied weights)
    shape: tuple                     # the original shape
    rows: int                        # its first dimension (1 for a 0-d parameter)
    block: int                       # rows per rank: ceil(rows / N)
    row_numel: int                   # elements per row
    offset: int                      # where its block starts in a rank's part of the flat buffer

    @property
    def block_numel(self) -> int:
        return self.block * self.row_numel

    def my_rows(self, rank: int) -> tuple[int, int]:
        lo = min(rank * self.block, self.rows)
        return lo, min(lo + self.block, self.rows)


def _rows_view(t: Tensor, rows: int) -> Tensor:
    """`t` as (rows, elements per row): a 0-d tensor is one row."""
    return t.reshape(rows, -1) if t.dim() else t.reshape(1, 1)


class ParamGroup:
    """The sharded parameters of one unit, and the collectives that gather them and scatter their gradients."""

    def __init__(self, named_places: list[tuple[str, Parameter, list]], group, mp: MixedPrecisionPolicy) -> None:
        self.group = group
        self.mp = mp
        self.world = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        first = named_places[0][1]
        self.dtype, self.device = first.dtype, first.device
        self.slots: list[ParamSlot] = []
        offset = 0
        for name, p, places in named_places:
            if p.dtype != self.dtype or p.device != self.device:
                raise ValueError(f"fully_shard: the parameters of one module must share a dtype and device; {name!r} is "
                                 f"{p.dtype} on {p.device}, the first one {self.dtype} on {self.device}")
            rows = p.shape[0] if p.dim() else 1
            row_numel = p.numel() // rows if rows else 0
            block = -(-rows // self.world)
            slot = ParamSlot(name, p, None, places, tuple(p.shape), rows, block, row_numel, offset)
            lo, hi = slot.my_rows(self.rank)
            with no_grad():
                mine = _rows_view(p.detach(), rows)[lo:hi].clone()
                if p.dim():
                    mine = mine.view(hi - lo, *p.shape[1:])
                else:
                    mine = mine.reshape(-1)
            slot.sharded = Parameter(mine, requires_grad=p.requires_grad)
            p._fsdp_managed = slot.sharded._fsdp_managed = True     # another unit must not take them
            slot.sharded._fsdp_shard_group = group                   # clip_grad_norm_ sums over the group
            self.slots.append(slot)
            offset += slot.block_numel
        self.part = offset                       # elements of one rank's part of the flat buffer
        self.slot_of = {id(s.original): s for s in self.slots}
        self.gathered = False
        self.flat_grad: Tensor | None = None     # the unit's gradients, in the ranks' blocks, while backward fills them
        self.pending = 0                         # hook calls still to come in this backward pass
        self.ready: set[int] = set()             # parameters that got a gradient in it
        self.hooks: dict[int, object] = {}        # id(original) -> its post-accumulate-grad hook
        self._free_originals()
        self._install(sharded=True)

    # ------------------------------------------------------------------ gather / release
    def _sync_requires_grad(self) -> None:
        """The originals need a gradient exactly when the sharded parameters the user sees do (freezing a
        sharded parameter freezes the unit's view of it); each one that does gets the gradient hook."""
        for s in self.slots:
            wanted = s.sharded.requires_grad
            if s.original.requires_grad != wanted:
                s.original.requires_grad_(wanted)
            if wanted and id(s.original) not in self.hooks:
                self.hooks[id(s.original)] = s.original.register_post_accumulate_grad_hook(self._on_grad)

    def unshard(self, install: bool = True) -> None:
        """Gather the whole parameters (in the policy's param_dtype) and, with `install`, show them to
        the modules (backward only needs their values)."""
        self._sync_requires_grad()
        if not self.gathered:
            dtype = self.mp.param_dtype or self.dtype
            with no_grad():
                send = zeros(self.part, dtype=dtype, device=self.device)
                for s in self.slots:
                    if s.sharded.numel():
                        send[s.offset:s.offset + s.sharded.numel()].copy_(s.sharded.reshape(-1))
                received = empty(self.part * self.world, dtype=dtype, device=self.device)
                dist.all_gather_into_tensor(received, send, group=self.group)
                by_rank = received.view(self.world, self.part)
                for s in self.slots:
                    whole = by_rank[:, s.offset:s.offset + s.block_numel].reshape(-1)[:s.rows * s.row_numel]
                    s.original.data = whole.reshape(s.shape) if s.shape else whole.reshape(())
            self.gathered = True
            UNSHARDED.append(self)
        if install:
            self._install(sharded=False)

    def reshard(self) -> None:
        """Show the sharded parameters to the modules again and free the gathered values."""
        self._install(sharded=True)
        if self.gathered:
            self._free_originals()
            self.gathered = False
            UNSHARDED.remove(self)

    def _free_originals(self) -> None:
        with no_grad():
            for s in self.slots:
                s.original.data = empty(0, dtype=self.mp.param_dtype or self.dtype, device=self.device)

    def _install(self, sharded: bool) -> None:
        for s in self.slots:
            for module, attr in s.places:
                module._parameters[attr] = s.sharded if sharded else s.original

    # ------------------------------------------------------------------ saved tensors
    def owns(self, t: Tensor) -> int | None:
        """The slot index whose gathered value `t` is (a view of), which the graph must not keep alive."""
        if self.gathered:
            for i, s in enumerate(self.slots):
                if t._storage is s.original._storage:
                    return i
        return None

    def unpack(self, index: int, shape, stride, offset) -> Tensor:
        """A saved view of a gathered parameter, gathering the unit again if it was freed since."""
        if is_grad_enabled():
            raise RuntimeError("fully_shard: a backward pass that records a graph (create_graph=True, double "
                               "backward) through a sharded unit's parameters is not supported")
        if not self.gathered:
            self.unshard(install=False)
        _queue_end_of_backward()
        return as_strided(self.slots[index].original.detach(), shape, stride, offset)

    # ------------------------------------------------------------------ gradients
    def prepare_backward(self) -> None:
        self._sync_requires_grad()
        self.ready = set()
        self.pending = sum(1 for s in self.slots if s.original.requires_grad)
        self.flat_grad = None

    def _on_grad(self, param: Parameter) -> None:
        if self.flat_grad is None:
            self.flat_grad = zeros(self.world, self.part, dtype=self.mp.reduce_dtype or param.grad.dtype,
                                   device=self.device)
            queue_callback(self.finish_backward)
            _queue_end_of_backward()
        s = self.slot_of[id(param)]
        self.pending -= 1
        if param.grad is not None:                 # (the hook also runs for a None gradient: nothing to add)
            self.ready.add(id(param))
            with no_grad():
                padded = zeros(self.world * s.block, s.row_numel, dtype=self.flat_grad.dtype, device=self.device)
                padded[:s.rows].copy_(_rows_view(param.grad, s.rows))
                self.flat_grad[:, s.offset:s.offset + s.block_numel].add_(padded.view(self.world, s.block_numel))
            param.grad = None
        if self.pending == 0:
            self.reduce_gradients()

    def reduce_gradients(self) -> None:
        """Reduce-scatter (average) the unit's gradients into the sharded parameters' `.grad`."""
        if self.flat_grad is None:
            return
        with no_grad():
            out = empty(self.part, dtype=self.flat_grad.dtype, device=self.device)
            dist.reduce_scatter_tensor(out, self.flat_grad.view(-1), op=dist.ReduceOp.AVG, group=self.group)
            for s in self.slots:
                if not s.original.requires_grad or id(s.original) not in self.ready:
                    continue
                g = out[s.offset:s.offset + s.sharded.numel()].view(s.sharded.shape).to(self.dtype)
                if s.sharded.grad is None:
                    s.sharded.grad = g.clone() if g._storage is out._storage else g
                else:
                    s.sharded.grad.add_(g)
        self.flat_grad = None
        self.reshard()          # its backward is done: free what it gathered (gathered again if still needed)

    def finish_backward(self) -> None:
        """End of backward: a unit some of whose parameters got no gradient reduces what it has, and
        the values gathered for backward are freed."""
        if self.flat_grad is not None:
            self.reduce_gradients()
        self.reshard()
