"""What the DDP and FSDP workers (ddp_training.py, fsdp_training.py) share: counted checks, an
uncaught error aborting the whole MPI job (so no rank waits forever), and the two training
programs: each returns (build(seed) -> model, loss_of(model, batch), make_optimizer(model), the 20
global batches, the gradient-clipping norm or 0) for a dtype and a number of ranks, each rank
taking its share of every global batch (`shard`)."""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import traceback
import zipfile
from pathlib import Path

import numpy as np

import ember
from ember import nn

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
STEPS = 20
CHECKS = [0]
TOL = {"float64": 1e-10, "float32": 1e-5}      # against one process on the whole batches


def abort_on_error(kind, value, tb):
    traceback.print_exception(kind, value, tb)
    sys.stderr.flush()
    from mpi4py import MPI
    MPI.COMM_WORLD.Abort(1)


sys.excepthook = abort_on_error


def check(ok: bool, what: str) -> None:
    assert ok, what
    CHECKS[0] += 1


def report_and_finish() -> None:
    """Wait for every rank, print 'rank R: K checks passed' and leave the process group."""
    import ember.distributed as dist

    dist.barrier()
    print(f"rank {dist.get_rank()}: {CHECKS[0]} checks passed", flush=True)
    dist.destroy_process_group()


def close(a, b, tol: float, what: str) -> None:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    err = float(np.max(np.abs(a - b) / (1.0 + np.abs(b)))) if a.size else 0.0
    check(err <= tol, f"{what}: relative difference {err:.3g} > {tol}")


def gpt_program(dtype, world: int):
    from char_gpt import DATA, CharData, GPTConfig, configure_optimizers, gpt_model

    data = CharData(ember, DATA.read_text())
    config = GPTConfig(vocab_size=data.vocab_size, block_size=16, n_layer=2, n_head=2, n_embd=32, dropout=0.0)
    GPT = gpt_model(ember)

    def build(seed):
        ember.manual_seed(seed)
        return GPT(config).to(dtype)

    def loss_of(model, batch):
        x, y = batch
        return model(x, y)[1]

    def optimizer(model):
        return configure_optimizers(ember, model, 0.1, 1e-3, (0.9, 0.95))

    generator = ember.Generator().manual_seed(7)
    batches = [data.batch("train", 2 * world, config.block_size, generator, "cpu") for _ in range(STEPS)]
    return build, loss_of, optimizer, batches, 1.0


def digits_training_split() -> tuple[np.ndarray, np.ndarray]:
    """examples/digits_mlp.py's training split, through a file in the temporary directory that the ranks
    of every job share: sklearn's import would cost each rank about a second and a half. The file is
    named after digits_mlp.py's contents, so a changed split makes a new one."""
    digest = hashlib.sha1((EXAMPLES / "digits_mlp.py").read_bytes()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"ember-test-digits-{os.getuid()}-{digest}.npz"
    try:
        with np.load(path) as saved:
            return saved["x"], saved["y"]
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile):     # none yet, or not whole
        pass
    from digits_mlp import load_digits_split

    x, y, _, _ = load_digits_split()
    partial = path.with_name(f"{path.stem}.{os.getpid()}.npz")     # written whole, then renamed into place
    np.savez(partial, x=x, y=y)
    os.replace(partial, path)
    return x, y


def mlp_program(dtype, world: int):
    from digits_mlp import build_mlp

    x, y = digits_training_split()
    per_rank = 16
    rng = np.random.default_rng(3)
    batches = []
    for _ in range(STEPS):
        pick = rng.choice(len(x), per_rank * world, replace=False)
        batches.append((ember.tensor(x[pick]).to(dtype), ember.tensor(y[pick])))

    def build(seed):
        ember.manual_seed(seed)
        return build_mlp(hidden=32, dropout=0.0).to(dtype)

    def loss_of(model, batch):
        return nn.functional.cross_entropy(model(batch[0]), batch[1])

    def optimizer(model):
        return ember.optim.Adam(model.parameters(), lr=2e-3)

    return build, loss_of, optimizer, batches, 0.0


def shard(batch, rank: int, world: int):
    n = batch[0].shape[0] // world
    return tuple(t[rank * n:(rank + 1) * n] for t in batch)




PROGRAMS = {"gpt": gpt_program, "mlp": mlp_program}
