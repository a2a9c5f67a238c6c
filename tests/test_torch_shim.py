"""examples/torch_shim: with it on PYTHONPATH, `import torch` (and torch.nn, torch.optim, ...) imports ember,
so a program written for torch runs unchanged. One program, run once under real torch and once through the
shim, in fresh interpreters: an LSTM regressor saved whole and loaded back under torch's allow-list, its
losses equal from the same weights."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = r'''
import io
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(3, 8, num_layers=2, batch_first=True)
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])

model = Net()
rng = np.random.default_rng(0)
model.load_state_dict({k: torch.tensor(rng.uniform(-0.3, 0.3, tuple(v.shape)).astype(np.float32))
                       for k, v in model.state_dict().items()})
x = torch.tensor(rng.standard_normal((16, 5, 3)).astype(np.float32))
y = torch.tensor(rng.standard_normal((16, 1)).astype(np.float32))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
losses = []
for _ in range(4):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    sched.step()
    losses.append(loss.item())
buf = io.BytesIO()
torch.save(model, buf)
buf.seek(0)
with torch.serialization.safe_globals([Net, nn.LSTM, nn.Linear]):
    loaded = torch.load(buf)
with torch.no_grad():
    losses.append(F.mse_loss(loaded(x), y).item())
print(" ".join(repr(v) for v in losses))
'''


def run(shim: bool) -> list[float]:
    env = dict(os.environ)
    if shim:
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "examples" / "torch_shim"), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env, cwd="/",
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return [float(v) for v in out.stdout.split()]


def test_a_torch_program_runs_unchanged_through_the_shim():
    torch_losses, ember_losses = run(False), run(True)
    assert len(ember_losses) == 5
    np.testing.assert_allclose(ember_losses, torch_losses, rtol=1e-5)
