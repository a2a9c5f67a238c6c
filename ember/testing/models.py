"""Reference model shapes for sizing on the meta device: a LLaMA-style decoder and GPT-2.

One definition builds the model in ember or in torch: each builder takes the namespace
(`lib=ember`, the default, or `lib=torch`) and defines its layers against `lib.nn`, so a
test can build the same model in both and compare parameter counts, forward shapes, dtypes
and FLOPs. Factories (`llama7b`, `gpt2_small`, `build_llama(cfg)`, `build_gpt2(cfg)`) are
what `MODULE:FACTORY` command lines name, e.g. `ember.testing.models:llama7b`.

Build without allocating with `with ember.device("meta"): model = llama7b()` (or
`device="meta"`), then `model.to_empty(device="cpu")` to materialise.

This module imports neither torch nor pytest (unlike the conformance suite around it).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from types import ModuleType, SimpleNamespace

__all__ = ["LlamaConfig", "GPT2Config", "llama7b_config", "gpt2_small_config", "build_llama", "build_gpt2",
           "llama7b", "gpt2_small"]


@dataclass(frozen=True)
class LlamaConfig:
    """LLaMA-style decoder: RMSNorm, rotary positions, SwiGLU MLP, no biases, untied head."""

    vocab_size: int = 32000
    dim: int = 4096
    n_layers: int = 32
    n_heads: int = 32
    hidden_dim: int = 11008
    norm_eps: float = 1e-6
    max_seq_len: int = 2048
    rope_theta: float = 10000.0


@dataclass(frozen=True)
class GPT2Config:
    """GPT-2: learned positions, LayerNorm, GELU MLP (4x), biases, head tied to the embedding."""

    vocab_size: int = 50257
    n_ctx: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    layer_norm_eps: float = 1e-5
    gelu_approximate: str = "tanh"       # GPT-2's; "none" is the exact GELU (nanoGPT's nn.GELU())


def llama7b_config() -> LlamaConfig:
    """LLaMA-7B's shapes: 32 layers, hidden 4096, MLP 11008, 32 heads, vocab 32000 (6,738,415,616 parameters)."""
    return LlamaConfig()


def gpt2_small_config() -> GPT2Config:
    """GPT-2 small: 12 layers, 768 wide, 12 heads, vocab 50257, context 1024 (124,439,808 parameters)."""
    return GPT2Config()


def _default_lib(lib):
    if lib is None:
        import ember

        return ember
    return lib


def build_llama(cfg: LlamaConfig | None = None, *, lib: ModuleType | None = None, device=None, dtype=None):
    """A LLaMA-style decoder for `cfg` (default: 7B's shapes), built with `lib` (ember or torch)."""
    cfg = cfg or llama7b_config()
    return _llama_classes(_default_lib(lib)).Llama(cfg, device=device, dtype=dtype)


def build_gpt2(cfg: GPT2Config | None = None, *, lib: ModuleType | None = None, device=None, dtype=None):
    """A GPT-2 model for `cfg` (default: GPT-2 small), built with `lib` (ember or torch)."""
    cfg = cfg or gpt2_small_config()
    return _gpt2_classes(_default_lib(lib)).GPT2(cfg, device=device, dtype=dtype)


def llama7b():
    """Factory: the LLaMA-7B-shaped model (build it under `ember.device("meta")`)."""
    return build_llama(llama7b_config())


def gpt2_small():
    """Factory: the GPT-2-small-shaped model."""
    return build_gpt2(gpt2_small_config())


@functools.lru_cache(maxsize=None)
def _llama_classes(lib) -> SimpleNamespace:
    nn, F = lib.nn, lib.nn.functional
    RMSNorm = lib.nn.RMSNorm

    def rotate_half(x):
        half = x.shape[-1] // 2
        return lib.cat([-x[..., half:], x[..., :half]], dim=-1)

    class Attention(nn.Module):
        def __init__(self, cfg: LlamaConfig, **kw) -> None:
            super().__init__()
            self.n_heads = cfg.n_heads
            self.head_dim = cfg.dim // cfg.n_heads
            self.wq = nn.Linear(cfg.dim, cfg.dim, bias=False, **kw)
            self.wk = nn.Linear(cfg.dim, cfg.dim, bias=False, **kw)
            self.wv = nn.Linear(cfg.dim, cfg.dim, bias=False, **kw)
            self.wo = nn.Linear(cfg.dim, cfg.dim, bias=False, **kw)

        def forward(self, x, cos, sin):
            b, t, c = x.shape
            q, k, v = (w(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
                       for w in (self.wq, self.wk, self.wv))
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.wo(y.transpose(1, 2).reshape(b, t, c))

    class FeedForward(nn.Module):
        def __init__(self, cfg: LlamaConfig, **kw) -> None:
            super().__init__()
            self.w1 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False, **kw)   # gate
            self.w3 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False, **kw)   # up
            self.w2 = nn.Linear(cfg.hidden_dim, cfg.dim, bias=False, **kw)   # down

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class Block(nn.Module):
        def __init__(self, cfg: LlamaConfig, **kw) -> None:
            super().__init__()
            self.attention_norm = RMSNorm(cfg.dim, eps=cfg.norm_eps, **kw)
            self.attention = Attention(cfg, **kw)
            self.ffn_norm = RMSNorm(cfg.dim, eps=cfg.norm_eps, **kw)
            self.feed_forward = FeedForward(cfg, **kw)

        def forward(self, x, cos, sin):
            x = x + self.attention(self.attention_norm(x), cos, sin)
            return x + self.feed_forward(self.ffn_norm(x))

    class Llama(nn.Module):
        def __init__(self, cfg: LlamaConfig, device=None, dtype=None) -> None:
            super().__init__()
            kw = {"device": device, "dtype": dtype}
            self.cfg = cfg
            self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim, **kw)
            self.layers = nn.ModuleList(Block(cfg, **kw) for _ in range(cfg.n_layers))
            self.norm = RMSNorm(cfg.dim, eps=cfg.norm_eps, **kw)
            self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False, **kw)

        def rope(self, t: int, device, dtype):
            """cos and sin of the rotary angles, (t, head_dim), computed per call (no buffers to size)."""
            head_dim = self.cfg.dim // self.cfg.n_heads
            inv = 1.0 / (self.cfg.rope_theta ** (lib.arange(0, head_dim, 2, device=device, dtype=lib.float32)
                                                   / head_dim))
            angles = lib.arange(t, device=device, dtype=lib.float32)[:, None] * inv[None, :]
            angles = lib.cat([angles, angles], dim=-1)
            return angles.cos().to(dtype), angles.sin().to(dtype)

        def forward(self, idx):
            h = self.tok_embeddings(idx)
            cos, sin = self.rope(idx.shape[1], h.device, h.dtype)
            for layer in self.layers:
                h = layer(h, cos, sin)
            return self.output(self.norm(h))

    return SimpleNamespace(Llama=Llama, Block=Block, Attention=Attention, FeedForward=FeedForward)


@functools.lru_cache(maxsize=None)
def _gpt2_classes(lib) -> SimpleNamespace:
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, cfg: GPT2Config, **kw) -> None:
            super().__init__()
            self.n_head = cfg.n_head
            self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, **kw)
            self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, **kw)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(x).split(c, dim=2)
            q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))

    class MLP(nn.Module):
        def __init__(self, cfg: GPT2Config, **kw) -> None:
            super().__init__()
            self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, **kw)
            self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, **kw)
            self.approximate = cfg.gelu_approximate

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x), approximate=self.approximate))

    class Block(nn.Module):
        def __init__(self, cfg: GPT2Config, **kw) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_eps, **kw)
            self.attn = CausalSelfAttention(cfg, **kw)
            self.ln_2 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_eps, **kw)
            self.mlp = MLP(cfg, **kw)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT2(nn.Module):
        def __init__(self, cfg: GPT2Config, device=None, dtype=None) -> None:
            super().__init__()
            kw = {"device": device, "dtype": dtype}
            self.cfg = cfg
            self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd, **kw)
            self.wpe = nn.Embedding(cfg.n_ctx, cfg.n_embd, **kw)
            self.h = nn.ModuleList(Block(cfg, **kw) for _ in range(cfg.n_layer))
            self.ln_f = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_eps, **kw)
            self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False, **kw)
            self.lm_head.weight = self.wte.weight     # tied: counted once by parameters()

        def forward(self, idx):
            t = idx.shape[1]
            if t > self.cfg.n_ctx:
                raise ValueError(f"GPT2.forward: sequence length {t} exceeds the context {self.cfg.n_ctx}")
            pos = lib.arange(t, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    return SimpleNamespace(GPT2=GPT2, Block=Block, CausalSelfAttention=CausalSelfAttention, MLP=MLP)


def count_parameters(model) -> int:
    """Sum of numel over model.parameters() (a tied parameter counted once, as torch does)."""
    return sum(p.numel() for p in model.parameters())

