"""Deploying the character GPT: train it briefly, export it, and sample from the exported program.

The steps a deployment takes, each with ember's graph layer:

1. train the GPT of char_gpt.py for a few steps (on cpu);
2. capture it with `ember.export.export` with a dynamic sequence length (`Dim("seq", min=1,
   max=block_size)`: one program for every context length) and save the program with
   `ember.export.save` (one file: the graph as JSON, the weights as safetensors);
3. load that file in a new Python process that has no model code (only ember) and sample there;
4. export the same model to ONNX with `ember.onnx.export(..., dynamic_axes=...)` and sample with
   onnxruntime;
5. compare the three texts with the one eager ember samples.

Sampling is greedy (the likeliest next character), starting from the first `--prompt-chars`
characters of the validation text: the context grows by one character per step up to
`block_size`, then slides, so the program runs at every sequence length in its range.

    python examples/export_gpt.py [--max-iters 60] [--num-chars 200] [--out-dir out-export-gpt]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import char_gpt

# what the loading process runs: ember and the program file, no model code
LOADER = """
import json, sys
import ember
from ember.export import load
program, vocab, window = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
count, block = int(sys.argv[4]), int(sys.argv[5])
run = load(program).module()
for _ in range(count):
    logits, _ = run(ember.tensor([window[-block:]], dtype=ember.int64))
    window.append(int(logits[0, -1].argmax()))
print("".join(vocab[i] for i in window[-count:]), end="")
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--max-iters", type=int, default=60, help="training steps")
    p.add_argument("--num-chars", type=int, default=200, help="characters to sample")
    p.add_argument("--prompt-chars", type=int, default=4, help="characters of the prompt")
    p.add_argument("--out-dir", default="out-export-gpt", help="where the program and ONNX files are written")
    p.add_argument("--seed", type=int, default=1337, help="random seed (weights, batches)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no per-step log lines")
    return p


def greedy(step, window: list[int], count: int, block: int) -> list[int]:
    """`count` next characters, each the argmax of `step(the last block ids at most)`'s last position."""
    window = list(window)
    for _ in range(count):
        window.append(step(window[-block:]))
    return window[-count:]


def main(argv: list[str] | None = None, log=print) -> dict[str, str]:
    import numpy as np

    import ember
    import ember.onnx
    from ember.export import Dim, export, save

    args = build_parser().parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    train_args = char_gpt.build_parser().parse_args(
        ["--device", "cpu", "--max-iters", str(args.max_iters), "--eval-iters", "0", "--dropout", "0.0",
         "--out-dir", str(out / "training"), "--seed", str(args.seed)] + (["--quiet"] if args.quiet else []))
    _, model, data = char_gpt.train(train_args, log=log)
    model.eval()
    block = model.config.block_size
    prompt = data.split["val"][:args.prompt_chars].tolist()
    example = ember.tensor([data.split["val"][:block].tolist()], dtype=ember.int64)

    program = export(model, (example,), dynamic_shapes={"idx": {1: Dim("seq", min=1, max=block)}})
    program_path = out / "gpt.ember"
    save(program, program_path)
    onnx_path = out / "gpt.onnx"
    ember.onnx.export(model, (example,), onnx_path, input_names=["tokens"], output_names=["logits"],
                      dynamic_axes={"tokens": {1: "seq"}, "logits": {1: "seq"}})
    log(f"program (sequence length in {program.range_constraints['seq']}) saved to {program_path}; "
        f"ONNX model saved to {onnx_path}")

    @ember.no_grad()
    def eager_step(ids: list[int]) -> int:
        logits, _ = model(ember.tensor([ids], dtype=ember.int64))
        return int(logits[0, -1].argmax())

    import onnxruntime

    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])

    def onnx_step(ids: list[int]) -> int:
        logits = session.run(None, {"tokens": np.array([ids], dtype=np.int64)})[0]
        return int(logits[0, -1].argmax())

    texts = {"eager ember": data.decode(greedy(eager_step, prompt, args.num_chars, block)),
             "onnxruntime": data.decode(greedy(onnx_step, prompt, args.num_chars, block))}
    loaded = subprocess.run([sys.executable, "-c", LOADER, str(program_path), json.dumps(data.chars),
                             json.dumps(prompt), str(args.num_chars), str(block)],
                            capture_output=True, text=True, check=True)
    texts["loaded program, new process"] = loaded.stdout
    for name, text in texts.items():
        log(f"--- {name}:\n{text}")
    same = len(set(texts.values())) == 1
    log(f"the three texts are {'the same' if same else 'different'}")
    return texts


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
