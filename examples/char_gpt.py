"""A character-level GPT (after Karpathy's nanoGPT) trained on examples/data/sonnets.txt.

Causal self-attention, LayerNorm, GELU, weight tying; AdamW with decay/no-decay parameter
groups, clip_grad_norm_, a warmup + cosine learning-rate schedule (LambdaLR); a checkpoint
(model, optimizer, scheduler, step and random states, written with ember.save) that
`--resume` continues with exactly the losses of an uninterrupted run; sampling with
temperature and top-k. The default run takes a minute or two on a cpu:

    python examples/char_gpt.py [--max-iters 150] [--device auto] [--out-dir out-char-gpt]
    python examples/char_gpt.py --resume --max-iters 300       # continue from the checkpoint
    python examples/char_gpt.py --sample-only --num-chars 400   # sample from the checkpoint
    python examples/char_gpt.py --compile --dropout 0           # the model through ember.compile

The model, the optimizer set-up and the step are written against the torch API and take the
module as an argument (`gpt_model(torch)`), so tests/test_examples.py builds the same GPT
with PyTorch and with ember and checks that 20 AdamW steps give the same losses.
"""
from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

DATA = Path(__file__).with_name("data") / "sonnets.txt"


@dataclass
class GPTConfig:
    vocab_size: int = 65
    block_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.1
    bias: bool = True


def gpt_model(torch):
    """nanoGPT's GPT class, built from `torch`'s nn and nn.functional (ember or PyTorch)."""
    nn, F = torch.nn, torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, config: GPTConfig) -> None:
            super().__init__()
            assert config.n_embd % config.n_head == 0
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            self.attn_dropout = nn.Dropout(config.dropout)
            self.resid_dropout = nn.Dropout(config.dropout)
            self.n_head, self.n_embd = config.n_head, config.n_embd
            mask = torch.tril(torch.ones(config.block_size, config.block_size))
            self.register_buffer("mask", mask.view(1, 1, config.block_size, config.block_size), persistent=False)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)    # (B, nh, T, hs)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            att = self.attn_dropout(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self, config: GPTConfig) -> None:
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, config: GPTConfig) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP(config)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, config: GPTConfig) -> None:
            super().__init__()
            self.config = config
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight      # weight tying
            self.apply(self._init_weights)
            for name, p in self.named_parameters():                # GPT-2's scaled residual projections
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

        def _init_weights(self, module) -> None:
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            _, t = idx.size()
            assert t <= self.config.block_size, f"sequence of {t} > block_size {self.config.block_size}"
            pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            if targets is None:
                return logits, None
            return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

        @torch.no_grad()
        def generate(self, idx, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                     generator=None):
            for _ in range(max_new_tokens):
                logits, _ = self(idx[:, -self.config.block_size:])
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = float("-inf")
                probs = F.softmax(logits, dim=-1)
                idx = torch.cat((idx, torch.multinomial(probs, num_samples=1, generator=generator)), dim=1)
            return idx

    return GPT


def configure_optimizers(torch, model, weight_decay: float, learning_rate: float, betas: tuple[float, float]):
    """AdamW with weight decay on the matrices (dim >= 2) and none on biases and LayerNorm weights."""
    params = {name: p for name, p in model.named_parameters() if p.requires_grad}
    groups = [{"params": [p for p in params.values() if p.dim() >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)


def warmup_cosine(warmup_iters: int, lr_decay_iters: int, min_lr_ratio: float):
    """LambdaLR factor: linear warmup to 1, cosine decay to `min_lr_ratio` at `lr_decay_iters`, then flat."""
    def factor(it: int) -> float:
        if it < warmup_iters:
            return (it + 1) / (warmup_iters + 1)
        if it > lr_decay_iters:
            return min_lr_ratio
        ratio = (it - warmup_iters) / max(1, lr_decay_iters - warmup_iters)
        return min_lr_ratio + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (1.0 - min_lr_ratio)
    return factor


def train_step(torch, model, optimizer, scheduler, x, y, grad_clip: float) -> float:
    """Forward, backward, clip, AdamW step, schedule step; returns the loss."""
    _, loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    scheduler.step()
    return loss.item()


class CharData:
    """The text as int64 token ids (one per distinct character), split 90/10 into train/val."""

    def __init__(self, torch, text: str) -> None:
        self.torch = torch
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        ids = torch.tensor([self.stoi[c] for c in text], dtype=torch.long)
        n = int(0.9 * len(ids))
        self.split = {"train": ids[:n], "val": ids[n:]}

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, s: str) -> list[int]:
        return [self.stoi[c] for c in s]

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)

    def batch(self, split: str, batch_size: int, block_size: int, generator, device):
        """`batch_size` random windows (x) and the same windows shifted by one (y)."""
        torch, data = self.torch, self.split[split]
        start = torch.randint(len(data) - block_size, (batch_size, 1), generator=generator)
        index = start + torch.arange(block_size + 1)
        windows = data[index]
        return windows[:, :-1].contiguous().to(device), windows[:, 1:].contiguous().to(device)


def rng_states(torch, device) -> dict:
    """The default generators dropout draws from (cpu, and the device's when it has its own)."""
    states = {"cpu": torch.get_rng_state()}
    module = getattr(torch, device.type, None)
    if device.type != "cpu" and hasattr(module, "get_rng_state"):
        states[device.type] = module.get_rng_state()
    return states


def set_rng_states(torch, states: dict) -> None:
    for kind, state in states.items():
        (torch if kind == "cpu" else getattr(torch, kind)).set_rng_state(state)


def build_parser() -> argparse.ArgumentParser:
    from _common import DEVICE_HELP

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--data", default=str(DATA), help="a text file")
    p.add_argument("--out-dir", default="out-char-gpt", help="where ckpt.safetensors is written")
    p.add_argument("--resume", action="store_true", help="continue from out-dir/ckpt.safetensors")
    p.add_argument("--sample-only", action="store_true", help="load the checkpoint and only sample")
    p.add_argument("--max-iters", type=int, default=150, help="training steps in all (a resumed run counts on)")
    p.add_argument("--eval-interval", type=int, default=50, help="evaluate and save a checkpoint every N steps")
    p.add_argument("--eval-iters", type=int, default=4, help="batches per split in an evaluation (0: none)")
    p.add_argument("--batch-size", type=int, default=16, help="sequences per step")
    add_model_arguments(p)
    p.add_argument("--min-lr-ratio", type=float, default=0.1, help="final learning rate / peak")
    p.add_argument("--warmup-iters", type=int, default=10, help="steps of linear warmup")
    p.add_argument("--lr-decay-iters", type=int, default=None, help="end of the cosine decay (default: max-iters)")
    p.add_argument("--weight-decay", type=float, default=0.1, help="AdamW weight decay (matrices only)")
    p.add_argument("--beta2", type=float, default=0.99, help="AdamW's second-moment decay")
    p.add_argument("--grad-clip", type=float, default=1.0, help="clip the gradient norm to this")
    p.add_argument("--seed", type=int, default=1337, help="random seed (weights, batches, dropout, sampling)")
    p.add_argument("--num-chars", type=int, default=300, help="characters to sample at the end")
    p.add_argument("--temperature", type=float, default=0.8, help="sampling temperature")
    p.add_argument("--top-k", type=int, default=20, help="sample among the k likeliest characters")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no per-step log lines")
    p.add_argument("--compile", action="store_true",
                   help="train the model through ember.compile (its backward captured and replayed with it; "
                        "with --dropout 0, as random ops run eagerly)")
    return p


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """The model's shape and the peak learning rate (shared with ddp_char_gpt.py's command line)."""
    p.add_argument("--block-size", type=int, default=64, help="context length in characters")
    p.add_argument("--n-layer", type=int, default=2, help="transformer blocks")
    p.add_argument("--n-head", type=int, default=4, help="attention heads per block")
    p.add_argument("--n-embd", type=int, default=64, help="embedding width")
    p.add_argument("--dropout", type=float, default=0.1, help="dropout probability")
    p.add_argument("--learning-rate", type=float, default=3e-3, help="peak learning rate (AdamW)")


def train(args: argparse.Namespace, log=print):
    """Train (or resume) as `args` say; returns (the loss of every step run here, model, data).

    A checkpoint is written every `eval_interval` steps and at the end. Evaluation batches
    come from their own generator and run without dropout, so evaluating never changes
    what training draws: a resumed run sees exactly the batches and dropout masks of an
    uninterrupted one.
    """
    import ember as torch
    from ember.optim.lr_scheduler import LambdaLR

    from _common import pick_device, progress

    torch.manual_seed(args.seed)
    device = pick_device(args.device)
    data = CharData(torch, Path(args.data).read_text(encoding="utf-8"))
    ckpt_path = Path(args.out_dir) / "ckpt.safetensors"
    ckpt = torch.load(ckpt_path, map_location=device) if (args.resume or args.sample_only) else None
    config = GPTConfig(**ckpt["config"]) if ckpt else GPTConfig(
        vocab_size=data.vocab_size, block_size=args.block_size, n_layer=args.n_layer, n_head=args.n_head,
        n_embd=args.n_embd, dropout=args.dropout)
    model = gpt_model(torch)(config).to(device)
    run_model = torch.compile(model) if args.compile else model     # the same parameters either way
    optimizer = configure_optimizers(torch, model, args.weight_decay, args.learning_rate, (0.9, args.beta2))
    decay_iters = args.lr_decay_iters if args.lr_decay_iters is not None else args.max_iters
    scheduler = LambdaLR(optimizer, warmup_cosine(args.warmup_iters, decay_iters, args.min_lr_ratio))
    batch_gen = torch.Generator().manual_seed(args.seed)
    step = 0
    if ckpt:
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        batch_gen.set_state(ckpt["batch_rng"])
        set_rng_states(torch, ckpt["rng"])
        step = ckpt["step"]
        log(f"resumed from {ckpt_path} at step {step}")
    log(f"{sum(p.numel() for p in model.parameters())} parameters, vocabulary of {config.vocab_size}, on {device}")

    def save() -> None:
        ckpt_path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "step": step, "config": asdict(config),
                    "batch_rng": batch_gen.get_state(), "rng": rng_states(torch, device)}, ckpt_path)

    @torch.no_grad()
    def evaluate() -> dict[str, float]:
        model.eval()
        eval_gen = torch.Generator().manual_seed(args.seed + 1)
        out = {}
        for split in ("train", "val"):
            losses = [model(*data.batch(split, args.batch_size, config.block_size, eval_gen, device))[1].item()
                      for _ in range(args.eval_iters)]
            out[split] = sum(losses) / len(losses)
        model.train()
        return out

    losses: list[float] = []
    start = time.perf_counter()
    model.train()
    with progress(total=args.max_iters, initial=step, desc="training", disable=args.quiet or args.sample_only) as bar:
        while step < args.max_iters and not args.sample_only:
            x, y = data.batch("train", args.batch_size, config.block_size, batch_gen, device)
            lr = scheduler.get_last_lr()[0]
            losses.append(train_step(torch, run_model, optimizer, scheduler, x, y, args.grad_clip))
            step += 1
            bar.update()
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
            if not args.quiet and (step % 10 == 0 or step == args.max_iters):
                log(f"step {step:5d}  loss {losses[-1]:.4f}  lr {lr:.2e}  {time.perf_counter() - start:.1f} s")
            if step % args.eval_interval == 0 or step == args.max_iters:
                if args.eval_iters:
                    scores = evaluate()
                    log(f"step {step:5d}  train loss {scores['train']:.4f}  val loss {scores['val']:.4f}")
                save()
                if not args.quiet:
                    log(f"step {step:5d}  checkpoint saved to {ckpt_path}")
    return losses, model, data


def sample(model, data: CharData, args: argparse.Namespace, prompt: str = "\n") -> str:
    import ember as torch

    model.eval()
    gen = torch.Generator(device=next(model.parameters()).device).manual_seed(args.seed)
    idx = torch.tensor([data.encode(prompt)], dtype=torch.long, device=next(model.parameters()).device)
    out = model.generate(idx, args.num_chars, temperature=args.temperature, top_k=args.top_k, generator=gen)
    return data.decode(out[0].tolist())


def main() -> None:
    from tqdm import tqdm

    args = build_parser().parse_args()
    if not args.sample_only:
        os.makedirs(args.out_dir, exist_ok=True)
    _, model, data = train(args, log=tqdm.write)      # log lines above the progress bar
    print("-" * 40)
    print(sample(model, data, args))


if __name__ == "__main__":
    main()
