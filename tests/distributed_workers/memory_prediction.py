"""One rank's memory in a DDP or FSDP training step of a small GPT, measured or predicted.

    mpiexec -n N python memory_prediction.py MODE cpu            # measured: every rank, a real job
    python memory_prediction.py MODE meta RANK WORLD_SIZE         # predicted: no job, the 'fake' backend

MODE is ddp or fsdp. After a warm-up step (AdamW's state exists), one step runs under
ember.memory.track; each rank prints 'rank R: peak P at_peak {...}' as JSON-able numbers.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import ember
import ember.distributed as dist
import ember.memory
from ember.distributed.fsdp import fully_shard
from ember.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from char_gpt import GPTConfig, configure_optimizers, gpt_model  # noqa: E402


def main() -> None:
    mode, device = sys.argv[1], sys.argv[2]
    if device == "meta":
        dist.init_process_group("fake", rank=int(sys.argv[3]), world_size=int(sys.argv[4]))
    else:
        dist.init_process_group("gloo")
    config = GPTConfig(vocab_size=65, block_size=32, n_layer=2, n_head=2, n_embd=64, dropout=0.0)
    ember.manual_seed(0)
    with ember.device(device):
        model = gpt_model(ember)(config)
    if mode == "ddp":
        model = DDP(model, bucket_cap_mb=0.1)
    else:
        for block in model.transformer.h:
            fully_shard(block)
        fully_shard(model)
    opt = configure_optimizers(ember, model, 0.1, 1e-3, (0.9, 0.95))
    x = ember.randint(0, 65, (4, 32), device=device)
    y = ember.randint(0, 65, (4, 32), device=device)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        model(x, y)[1].backward()
        opt.step()

    step()
    with ember.memory.track(model=model, optimizer=opt) as mem:
        step()
    at_peak = {k: v["at_peak"] for k, v in mem.breakdown.items()}
    print(f"rank {dist.get_rank()}: peak {mem.peak_bytes} at_peak {json.dumps(at_peak)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
