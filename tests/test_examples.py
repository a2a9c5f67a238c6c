"""The programs in examples/ against PyTorch: the same model code, built once with torch and
once with ember from the same initial weights and fed the same batches, trains to the same
losses (nanoGPT-style GPT with AdamW, the mnist-style CNN with Adadelta + StepLR); the GPT
example's checkpoint resumes with exactly the losses of an uninterrupted run; the digits MLP
trains on opencl as on cpu. Small configurations and few steps keep the file quick.
"""
from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import ember

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

import char_gpt  # noqa: E402
import digits_cnn  # noqa: E402
import digits_mlp  # noqa: E402
import export_gpt  # noqa: E402
from _common import pick_device, progress  # noqa: E402
from test_conformance_opencl import REASON as OPENCL_REASON  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def one_blas_thread():
    """Small matrices: OpenBLAS's second thread only costs here (on two busy cores a 64x128 @ 128x128
    matmul takes ~2 ms with two threads, ~0.04 ms with one), and it changes no result."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        yield


def copy_weights(torch_model: torch.nn.Module, ember_model: ember.nn.Module) -> None:
    """The torch model's state_dict into the ember model, through numpy (strict: every key must match)."""
    ember_model.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in torch_model.state_dict().items()})


def assert_losses_close(ember_losses: list[float], torch_losses: list[float], rtol: float = 1e-4) -> None:
    for step, (e, t) in enumerate(zip(ember_losses, torch_losses, strict=True)):
        assert abs(e - t) <= rtol * abs(t), f"step {step}: ember loss {e!r}, torch loss {t!r}"


def test_gpt_trains_like_torch_with_adamw_groups_clipping_and_cosine_schedule():
    text = char_gpt.DATA.read_text(encoding="utf-8")
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text[:5000]])
    config = char_gpt.GPTConfig(vocab_size=len(chars), block_size=16, n_layer=2, n_head=2, n_embd=32, dropout=0.0)
    steps, batch = 20, 4
    starts = np.random.default_rng(0).integers(0, len(ids) - config.block_size - 1, (steps, batch, 1))
    batches = [ids[s + np.arange(config.block_size + 1)] for s in starts]

    def run(lib, model) -> list[float]:
        optimizer = char_gpt.configure_optimizers(lib, model, weight_decay=0.1, learning_rate=1e-2, betas=(0.9, 0.95))
        assert [len(g["params"]) for g in optimizer.param_groups] == [10, 18]     # tied wte/lm_head: one matrix
        scheduler = lib.optim.lr_scheduler.LambdaLR(optimizer, char_gpt.warmup_cosine(3, steps, 0.1))
        losses = []
        for b in batches:
            x, y = lib.tensor(b[:, :-1]), lib.tensor(b[:, 1:])
            losses.append(char_gpt.train_step(lib, model, optimizer, scheduler, x, y, grad_clip=0.5))
        return losses

    torch.manual_seed(0)
    torch_model = char_gpt.gpt_model(torch)(config)
    ember_model = char_gpt.gpt_model(ember)(config)
    copy_weights(torch_model, ember_model)
    torch_losses = run(torch, torch_model)
    assert torch_losses[-1] < torch_losses[0] - 0.3                               # it does learn
    assert_losses_close(run(ember, ember_model), torch_losses)
    for name, p in ember_model.named_parameters():
        np.testing.assert_allclose(p.detach().numpy(), torch_model.get_parameter(name).detach().numpy(),
                                   rtol=1e-3, atol=1e-4, err_msg=name)


def test_digits_cnn_trains_like_torch_with_adadelta_and_steplr():
    x_train, y_train, _, _ = digits_cnn.load_images()
    steps, batch = 12, 16

    def run(lib, model) -> list[float]:
        optimizer = lib.optim.Adadelta(model.parameters(), lr=1.0)
        scheduler = lib.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.7)
        losses = []
        for i in range(steps):
            data, target = lib.tensor(x_train[i * batch:(i + 1) * batch]), lib.tensor(y_train[i * batch:(i + 1) * batch])
            losses.append(digits_cnn.train_step(lib, model, optimizer, data, target))
            scheduler.step()
        assert optimizer.param_groups[0]["lr"] == pytest.approx(0.7 ** 3)
        return losses

    torch.manual_seed(0)
    torch_model = digits_cnn.cnn_model(torch)(0.0, 0.0)
    ember_model = digits_cnn.cnn_model(ember)(0.0, 0.0)
    copy_weights(torch_model, ember_model)
    torch_losses = run(torch, torch_model)
    assert torch_losses[-1] < torch_losses[0]
    assert_losses_close(run(ember, ember_model), torch_losses)


def test_gpt_checkpoint_resume_continues_with_identical_losses(tmp_path):
    base = ["--device", "cpu", "--batch-size", "4", "--block-size", "16", "--n-layer", "1", "--n-head", "2",
            "--n-embd", "32", "--dropout", "0.1", "--eval-interval", "2", "--eval-iters", "1", "--warmup-iters", "2",
            "--lr-decay-iters", "6", "--quiet"]

    def run(*extra: str) -> list[float]:
        args = char_gpt.build_parser().parse_args(base + list(extra))
        return char_gpt.train(args, log=lambda *_: None)[0]

    straight = run("--max-iters", "6", "--out-dir", str(tmp_path / "straight"))
    first = run("--max-iters", "3", "--out-dir", str(tmp_path / "resumed"))
    ember.manual_seed(12345)                         # the resumed run must not depend on the process's state
    second = run("--max-iters", "6", "--out-dir", str(tmp_path / "resumed"), "--resume")
    assert len(first) == 3 and len(second) == 3
    assert first + second == straight
    ckpt = ember.load(tmp_path / "resumed" / "ckpt.safetensors")
    assert ckpt["step"] == 6 and ckpt["scheduler"]["last_epoch"] == 6


def test_gpt_trains_through_ember_compile_with_eagers_losses(tmp_path):
    base = ["--device", "cpu", "--batch-size", "4", "--block-size", "16", "--n-layer", "1", "--n-head", "2",
            "--n-embd", "32", "--dropout", "0", "--eval-iters", "0", "--max-iters", "4", "--quiet"]

    def run(*extra: str) -> list[float]:
        args = char_gpt.build_parser().parse_args(base + list(extra))
        return char_gpt.train(args, log=lambda *_: None)[0]

    eager = run("--out-dir", str(tmp_path / "eager"))
    compiled = run("--out-dir", str(tmp_path / "compiled"), "--compile")
    np.testing.assert_allclose(compiled, eager, rtol=1e-5)     # a fused softmax backward rounds differently


# top-k sampling gives zero probabilities: numpy's divide-by-zero warning, which the cpu plugin
# silences at import but pytest's per-test warning capture brings back
@pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning")
def test_gpt_samples_from_a_checkpoint(tmp_path):
    base = ["--device", "cpu", "--batch-size", "2", "--block-size", "8", "--n-layer", "1", "--n-head", "1",
            "--n-embd", "8", "--eval-iters", "0", "--quiet", "--out-dir", str(tmp_path), "--num-chars", "12",
            "--top-k", "5"]
    _, model, data = char_gpt.train(char_gpt.build_parser().parse_args(base + ["--max-iters", "1"]), log=lambda *_: None)
    text = char_gpt.sample(model, data, char_gpt.build_parser().parse_args(base))
    assert len(text) == 13 and set(text) <= set(data.chars)
    _, loaded, _ = char_gpt.train(char_gpt.build_parser().parse_args(base + ["--sample-only"]), log=lambda *_: None)
    assert char_gpt.sample(loaded, data, char_gpt.build_parser().parse_args(base)) == text


@pytest.mark.skipif(bool(OPENCL_REASON), reason=OPENCL_REASON or "opencl available")
def test_digits_mlp_trains_on_opencl_as_on_cpu():
    cpu_losses, cpu_acc = digits_mlp.train(ember.device("cpu"), epochs=1, progress=False)
    cl_losses, cl_acc = digits_mlp.train(ember.device("opencl"), epochs=1, progress=False)
    assert_losses_close(cl_losses[:10], cpu_losses[:10])
    assert cl_acc == cpu_acc


@pytest.mark.skipif(bool(OPENCL_REASON), reason=OPENCL_REASON or "opencl available")
def test_opencl_tensors_name_their_index_so_list_indexing_works():
    # char_gpt's top-k filter, `logits[logits < v[:, [-1]]] = -inf`, on tensors made by factories and .to()
    made = [ember.zeros(2, device="opencl"), ember.tensor([1.0], device="opencl"), ember.ones(2).to("opencl"),
            ember.nn.Linear(2, 2).to("opencl").weight, ember.arange(3, device=ember.device("opencl"))]
    assert {str(t.device) for t in made} == {"opencl:0"}
    x = ember.arange(6.0).view(2, 3).to("opencl")
    x[x < x[:, [-1]]] = -1.0
    np.testing.assert_array_equal(x.cpu().numpy(), [[-1.0, -1.0, 2.0], [-1.0, -1.0, 5.0]])


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_only():
    for stream, drawn in ((io.StringIO(), False), (_Terminal(), True)):
        bar = progress(range(3), desc="epoch 1", file=stream)
        for i in bar:
            bar.set_postfix(loss=f"{1.0 / (i + 1):.4f}")
        assert ("epoch 1" in stream.getvalue() and "/3" in stream.getvalue() and "loss=0.3333" in stream.getvalue()) \
            is drawn, stream.getvalue()


def test_gpt_help_shows_every_default_and_the_run_says_where_it_saved(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")         # one line per option: no default cut at a hyphen
    parser = char_gpt.build_parser()
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if action.dest != "help":
            assert action.help and f"(default: {action.default})" in text, action.dest
    lines: list[str] = []
    args = parser.parse_args(["--device", "cpu", "--batch-size", "2", "--block-size", "8", "--n-layer", "1",
                              "--n-head", "1", "--n-embd", "8", "--eval-iters", "0", "--max-iters", "2",
                              "--eval-interval", "1", "--out-dir", str(tmp_path)])
    char_gpt.train(args, log=lines.append)
    saved = [ln for ln in lines if "checkpoint saved to" in ln]
    assert len(saved) == 2 and saved[-1].endswith(f"checkpoint saved to {tmp_path / 'ckpt.safetensors'}"), lines


def test_auto_picks_the_accelerator_else_cpu(monkeypatch):
    assert pick_device("cpu") == ember.device("cpu") and pick_device("opencl:1") == ember.device("opencl:1")
    # the accelerator's own choice (never a host-cpu OpenCL driver) is tested in test_compat.py
    monkeypatch.setattr(ember.accelerator, "current_accelerator", lambda: None)
    assert pick_device("auto") == ember.device("cpu")
    monkeypatch.setattr(ember.accelerator, "current_accelerator", lambda: ember.device("cuda"))
    assert pick_device("auto") == ember.device("cuda")


def test_the_exported_gpt_samples_the_same_text_in_ember_onnxruntime_and_a_new_process(tmp_path):
    lines = []
    texts = export_gpt.main(["--max-iters", "3", "--num-chars", "24", "--out-dir", str(tmp_path), "--quiet"],
                            log=lines.append)
    assert set(texts) == {"eager ember", "onnxruntime", "loaded program, new process"}
    assert len(set(texts.values())) == 1 and len(texts["eager ember"]) == 24
    assert (tmp_path / "gpt.ember").is_file() and (tmp_path / "gpt.onnx").is_file()
    assert lines[-1] == "the three texts are the same"
