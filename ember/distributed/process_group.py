"""Process groups: the default (world) group made by init_process_group, subgroups from new_group,
and the rank/size queries of torch.distributed.

Each group owns its own MPI communicator (the world group a duplicate of MPI_COMM_WORLD), so
messages of ember's collectives never mix with a program's own mpi4py traffic. Ranks given to
collectives (`src`, `dst`) are global ranks, `group_src`/`group_dst` ranks within the group, as
in torch.
"""
from __future__ import annotations

import datetime
import os
import warnings

from . import engine
from .errors import NOT_INITIALIZED
from .fake import FakeComm
from .health import job_peers, listen_for_failures, note_clean_exit, note_joining

__all__ = ["Backend", "ProcessGroup", "GroupMember", "group", "init_process_group", "destroy_process_group",
           "is_initialized", "new_group", "get_rank", "get_world_size", "get_backend", "get_group_rank",
           "get_global_rank", "get_process_group_ranks", "resolve", "peer"]

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)
_INIT_SCHEMES = ("env://", "tcp://", "file://")


class Backend(str):
    """A backend name: 'mpi', 'gloo' (served by the MPI engine: ember's one engine for host tensors),
    'nccl' (cuda tensors, through NCCL: see nccl.py) or 'fake' (one process standing for a rank of a job
    that is not running, to size it on the meta device: see fake.py)."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    MPI = "mpi"
    NCCL = "nccl"
    FAKE = "fake"

    def __new__(cls, name: str) -> "Backend":
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name!r}")
        value = name.lower()
        if value not in (cls.GLOO, cls.MPI, cls.NCCL, cls.FAKE):
            raise ValueError(f"Unknown backend type {name!r}: ember.distributed has 'mpi', 'gloo' (served by MPI), "
                             "'nccl' and 'fake'")
        return super().__new__(cls, value)


class ProcessGroup:
    """A set of ranks that run collectives together, over one MPI communicator (and, for a 'nccl'
    group, one NCCL communicator: `nccl`, an ember.distributed.nccl.NcclContext)."""

    def __init__(self, comm, ranks: list[int], backend: Backend, timeout: datetime.timedelta, name: str,
                 debug_detail: bool, index: int, peers, nccl=None) -> None:
        self.comm = comm
        self.ranks = ranks                  # global rank of each group rank
        self.backend = backend
        self.timeout = timeout
        self.group_name = name
        self.debug_detail = debug_detail
        self.sequence = 0                   # collectives issued so far (fingerprints, progress table)
        self.index = index                  # creation order, the same on every rank (the progress table's column)
        self.peers = peers                  # health.Peers of the job: who is dead, who is behind (None: fake)
        self.fake = backend == Backend.FAKE
        self.nccl = nccl

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def name(self) -> str:
        return self.backend

    def __repr__(self) -> str:
        return f"ProcessGroup({self.group_name!r}, backend={self.backend!r}, ranks={self.ranks})"


class GroupMember:
    """`GroupMember.WORLD`: the default group (None before init_process_group);
    `GroupMember.NON_GROUP_MEMBER`: what new_group returns on a rank outside the new group."""
    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


group = GroupMember                      # torch.distributed.group.WORLD reads the same
_groups: list[ProcessGroup] = []
_created = [0]                           # groups made since init_process_group (every rank counts every call)


def is_initialized() -> bool:
    """Whether init_process_group has made the default group."""
    return GroupMember.WORLD is not None


def _world() -> ProcessGroup:
    if GroupMember.WORLD is None:
        raise ValueError(NOT_INITIALIZED)
    return GroupMember.WORLD


def _debug_detail() -> bool:
    level = os.environ.get("EMBER_DISTRIBUTED_DEBUG") or os.environ.get("TORCH_DISTRIBUTED_DEBUG") or "OFF"
    if level.upper() not in ("OFF", "INFO", "DETAIL"):
        raise ValueError(f"EMBER_DISTRIBUTED_DEBUG must be OFF, INFO or DETAIL, got {level!r}")
    return level.upper() == "DETAIL"


def _check_timeout(timeout) -> datetime.timedelta:
    if timeout is None:
        return DEFAULT_TIMEOUT
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {timeout!r}")
    return timeout


def _check_launch(what: str, given: int, env: str, actual: int) -> None:
    """`given` (an argument, -1 for unset) and the environment variable `env` must agree with MPI's."""
    for source, value in ((what, given), (f"${env}", int(os.environ.get(env, -1)))):
        if value != -1 and value != actual:
            raise RuntimeError(
                f"init_process_group: {source} is {value} but the MPI launcher gives {actual} for this process; "
                "start the processes with `mpiexec -n N python script.py`")


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout=None,
                       world_size: int = -1, rank: int = -1, store=None, group_name: str = "",
                       pg_options=None, device_id=None) -> None:
    """Make the default group of all processes of this job.

    'mpi' and 'gloo' (the name torch's CPU scripts use) are both served by MPI: the processes come
    from an MPI launcher (`mpiexec -n N python script.py`), which also does the rendezvous, so
    `init_method` ('env://', 'tcp://...', 'file://...') is accepted but not needed, and `rank` and
    `world_size`, when given (or set as $RANK and $WORLD_SIZE), must match what MPI assigned.
    'nccl' (cuda tensors) also makes an NCCL communicator on `device_id` (an int or a cuda device;
    cupy's current device when None), or raises RuntimeError saying why it cannot serve this
    process. None means 'gloo'.
    """
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend if backend is not None else Backend.GLOO)
    timeout = _check_timeout(timeout)
    if init_method is not None and not (isinstance(init_method, str) and init_method.startswith(_INIT_SCHEMES)):
        raise ValueError(f"init_process_group: init_method must start with one of {list(_INIT_SCHEMES)}, "
                         f"got {init_method!r}")
    if store is not None:
        raise ValueError("init_process_group: ember.distributed has no Store (the MPI launcher does the "
                         "rendezvous); leave store=None")
    if name == Backend.NCCL and (reason := engine.nccl_unavailable_reason()) is not None:
        raise RuntimeError(f"init_process_group: the 'nccl' backend is not available: {reason}")
    if name == Backend.FAKE:
        return _init_fake(rank, world_size, timeout, group_name)
    debug_detail = _debug_detail()
    run_dir = os.environ.get("EMBER_RUN_DIR")
    if run_dir:
        note_joining(run_dir)
    MPI = engine.mpi()
    world = MPI.COMM_WORLD
    _check_launch("world_size", world_size, "WORLD_SIZE", world.Get_size())
    _check_launch("rank", rank, "RANK", world.Get_rank())
    with engine.mpi_errors("init_process_group", world.Get_rank()):
        comm = world.Dup()
        peers = job_peers(MPI, comm)
    device_side = _nccl_side(name, comm, device_id, "init_process_group")
    _created[0] = 1
    pg = ProcessGroup(comm, list(range(comm.Get_size())), name, timeout, group_name or "default_pg", debug_detail,
                      0, peers, device_side)
    listen_for_failures()
    note_clean_exit(peers, run_dir)
    GroupMember.WORLD = pg
    _groups.append(pg)


def _nccl_side(name: Backend, comm, device_id, op: str):
    """The NCCL communicator of a new 'nccl' group over `comm` (None for the other backends)."""
    if name != Backend.NCCL:
        return None
    from .nccl import create_context

    return create_context(comm, device_id, op)


def _init_fake(rank: int, world_size: int, timeout, group_name: str) -> None:
    """The default group of the 'fake' backend: this process as rank `rank` of `world_size`, no MPI."""
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"init_process_group('fake') needs world_size >= 1 and 0 <= rank < world_size, got rank "
                         f"{rank} and world_size {world_size}")
    _created[0] = 1
    pg = ProcessGroup(FakeComm(rank, world_size), list(range(world_size)), Backend(Backend.FAKE), timeout,
                      group_name or "default_pg", False, 0, None)
    GroupMember.WORLD = pg
    _groups.append(pg)


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Free `group`'s communicator, or with no argument every group (after which
    init_process_group may be called again; MPI itself stays up until the process exits). Freeing
    the default group marks this rank finished (see health.py), so a peer still waiting for it in
    a collective it never entered raises instead of waiting for the timeout."""
    world = _world()
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    doomed = list(_groups) if group is None or group is world else [group]
    for pg in doomed:
        if pg not in _groups:
            raise ValueError(f"destroy_process_group: {pg!r} was destroyed already")
        _groups.remove(pg)
        if pg.nccl is not None:
            pg.nccl.close()
        pg.comm.Free()
    if group is None or group is world:
        if world.peers is not None:
            world.peers.finish()
        GroupMember.WORLD = None


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization: bool = False,
              group_desc=None, device_id=None, sort_ranks: bool = True):
    """A group of the given global ranks (all ranks when None), group rank i being the i-th of the
    sorted list. Every rank of the group must call it (in the same order as its other new_group
    calls); a rank outside the group gets `GroupMember.NON_GROUP_MEMBER`."""
    world = _world()
    size = world.size()
    if ranks is None:
        ranks = list(range(size))
    ranks = [int(r) for r in ranks]
    if len(ranks) > size:
        raise ValueError("the new group's world size should be less or equal to the world size set by "
                         f"init_process_group (new group: {len(ranks)} ranks, world size: {size})")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks list must not contain duplicate entries, got {ranks}")
    bad = [r for r in ranks if not 0 <= r < size]
    if bad:
        raise ValueError(f"new_group: ranks must lie in [0, {size}), got {bad}")
    if sort_ranks:
        ranks = sorted(ranks)
    name = Backend(backend) if backend is not None else world.backend
    if world.fake:
        name = world.backend            # a fake world's groups are fake whatever backend they name
    if name == Backend.NCCL and (reason := engine.nccl_unavailable_reason()) is not None:
        raise RuntimeError(f"new_group: the 'nccl' backend is not available: {reason}")
    timeout = _check_timeout(timeout) if timeout is not None else world.timeout
    index = _created[0]
    _created[0] += 1
    me = world.rank()
    if me not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    if world.fake:
        pg = ProcessGroup(FakeComm(ranks.index(me), len(ranks)), ranks, name, timeout, f"group_{index}", False, index,
                          None)
        _groups.append(pg)
        return pg
    with engine.mpi_errors("new_group", me):
        mpi_group = world.comm.Get_group().Incl(ranks)
        comm = world.comm.Create_group(mpi_group)
        mpi_group.Free()
    if device_id is None and world.nccl is not None:
        device_id = world.nccl.device
    pg = ProcessGroup(comm, ranks, name, timeout, f"group_{index}", world.debug_detail, index, world.peers,
                      _nccl_side(name, comm, device_id, "new_group"))
    _groups.append(pg)
    return pg


def resolve(group, op: str) -> ProcessGroup | None:
    """The group a call runs on (None: the default group); None when this rank is not a member,
    with torch's warning."""
    world = _world()
    if group is None or group is GroupMember.WORLD:
        return world
    if group is GroupMember.NON_GROUP_MEMBER:
        warnings.warn(f"Running {op} on global rank {world.rank()} which does not belong to the given group.",
                      stacklevel=3)
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"{op}: group must be a ProcessGroup from new_group (or None), got {type(group).__name__}")
    if group not in _groups:
        raise ValueError(f"{op}: {group!r} has been destroyed")
    return group


def peer(pg: ProcessGroup, global_rank, group_rank, op: str, *, optional: bool = False) -> int | None:
    """The group rank named by exactly one of `global_rank` or `group_rank` (None for neither when
    `optional`, e.g. recv from any source)."""
    if global_rank is not None and group_rank is not None:
        raise ValueError("Can't specify both group_rank and global_rank")
    if global_rank is None and group_rank is None:
        if optional:
            return None
        raise ValueError("Must specify global_rank or group_rank")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"{op}: group rank {group_rank} is out of range for a group of size {pg.size()}")
        return int(group_rank)
    if global_rank not in pg.ranks:
        raise ValueError(f"{op}: global rank {global_rank} is not part of group {pg.ranks}")
    return pg.ranks.index(global_rank)


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in `group` (the default group when None); -1 outside the group."""
    world = _world()
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return (group or world).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of ranks in `group` (the default group when None); -1 outside the group."""
    world = _world()
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return (group or world).size()


def get_backend(group: ProcessGroup | None = None) -> str:
    """The backend name `group` was made with ('mpi', 'gloo', 'nccl', 'fake')."""
    world = _world()
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return str((group or world).backend)


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    """The global ranks of `group`, in group-rank order."""
    return list((group or _world()).ranks)


def get_group_rank(group: ProcessGroup | None, global_rank: int) -> int:
    """The rank within `group` of global rank `global_rank`."""
    pg = group or _world()
    return peer(pg, global_rank, None, "get_group_rank")


def get_global_rank(group: ProcessGroup | None, group_rank: int) -> int:
    """The global rank of group rank `group_rank` of `group`."""
    pg = group or _world()
    return pg.ranks[peer(pg, None, group_rank, "get_global_rank")]
