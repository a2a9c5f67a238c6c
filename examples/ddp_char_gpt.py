"""examples/char_gpt.py's GPT trained on several processes with DistributedDataParallel.

Each rank draws its own batches (a generator seeded by the rank), the gradients are averaged
across the ranks while backward runs, and every rank takes the same AdamW step; rank 0 logs,
saves the model's weights and samples. Start it with the launcher (torchrun's flags):

    python -m ember.distributed.run --nproc-per-node 2 examples/ddp_char_gpt.py --max-iters 100
    mpiexec -n 2 python examples/ddp_char_gpt.py                     # MPI's launcher works too

With N ranks and `--batch-size B` per rank, a step sees N * B sequences, as one process with
`--batch-size N*B` would (tests/test_ddp.py checks that equality to rounding).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import ember
import ember.distributed as dist
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.optim.lr_scheduler import LambdaLR

from char_gpt import DATA, CharData, GPTConfig, add_model_arguments, configure_optimizers, gpt_model, warmup_cosine


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--backend", default="gloo", help="gloo or mpi (both MPI here) for cpu tensors")
    p.add_argument("--data", default=str(DATA), help="a text file")
    p.add_argument("--out-dir", default="out-ddp-char-gpt", help="where rank 0 writes model.safetensors")
    p.add_argument("--max-iters", type=int, default=100, help="training steps")
    p.add_argument("--batch-size", type=int, default=8, help="sequences per step on each rank")
    add_model_arguments(p)
    p.add_argument("--warmup-iters", type=int, default=10, help="steps of linear warmup")
    p.add_argument("--grad-clip", type=float, default=1.0, help="clip the gradient norm to this")
    p.add_argument("--seed", type=int, default=1337, help="random seed (rank 0's weights; batches: seed + rank)")
    p.add_argument("--log-interval", type=int, default=10, help="rank 0 prints the mean loss every N steps")
    p.add_argument("--num-chars", type=int, default=200, help="characters rank 0 samples at the end (0: none)")
    return p


def main() -> None:
    args = build_parser().parse_args()
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(args.seed + rank)              # dropout differs per rank; DDP copies rank 0's weights
    data = CharData(ember, Path(args.data).read_text(encoding="utf-8"))
    config = GPTConfig(vocab_size=data.vocab_size, block_size=args.block_size, n_layer=args.n_layer,
                       n_head=args.n_head, n_embd=args.n_embd, dropout=args.dropout)
    model = DDP(gpt_model(ember)(config))
    optimizer = configure_optimizers(ember, model.module, 0.1, args.learning_rate, (0.9, 0.99))
    scheduler = LambdaLR(optimizer, warmup_cosine(args.warmup_iters, args.max_iters, 0.1))
    batches = ember.Generator().manual_seed(args.seed + rank)
    if rank == 0:
        print(f"{sum(p.numel() for p in model.parameters())} parameters on {world} ranks, "
              f"{world} x {args.batch_size} sequences per step")
    start = time.perf_counter()
    for step in range(1, args.max_iters + 1):
        x, y = data.batch("train", args.batch_size, config.block_size, batches, "cpu")
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()                              # the all-reduces run while backward does
        ember.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        optimizer.step()
        scheduler.step()
        if step % args.log_interval == 0 or step == args.max_iters:
            mean = loss.detach().clone()
            dist.all_reduce(mean, op=dist.ReduceOp.AVG)
            if rank == 0:
                print(f"step {step:4d}  loss {mean.item():.4f}  {time.perf_counter() - start:.1f} s", flush=True)
    if rank == 0:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        ember.save(model.module.state_dict(), out / "model.safetensors")
        if args.num_chars:
            model.module.eval()
            idx = ember.tensor([data.encode("\n")], dtype=ember.long)
            text = model.module.generate(idx, args.num_chars, temperature=0.8, top_k=20,
                                         generator=ember.Generator().manual_seed(args.seed))
            print("-" * 40)
            print(data.decode(text[0].tolist()))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
