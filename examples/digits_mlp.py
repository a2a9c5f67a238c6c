"""An MLP on scikit-learn's digits with ember.nn, ember.optim and a DataLoader (`make demo`).

The program a PyTorch user would write (`import ember as torch` style): an nn.Sequential of
Linear/ReLU/Dropout, Adam, a shuffling DataLoader over a TensorDataset, on the best
available device (`--device auto`: the accelerator, a cuda or OpenCL GPU, when a plugin finds
one, else cpu; an OpenCL driver running on this same CPU, such as PoCL, is never "best"), a progress bar per epoch, and the test accuracy at the end (>= 0.95).

    python examples/digits_mlp.py [--device auto|cpu|opencl] [--epochs 8] [--lr 2e-3] [--seed 0]

The functions are importable: tests/test_examples.py trains the same model on cpu and on
opencl with them and compares losses and accuracy.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from tqdm import tqdm

import ember
from ember import nn
from ember.utils.data import DataLoader, TensorDataset

from _common import DEVICE_HELP, pick_device, progress as progress_bar


def load_digits_split(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test) as numpy: 80/20 stratified split, features standardised."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data.astype(np.float32), digits.target.astype(np.int64), test_size=0.2, random_state=seed,
        stratify=digits.target)
    mean, std = x_train.mean(0), x_train.std(0) + 1e-6
    return (x_train - mean) / std, y_train, (x_test - mean) / std, y_test


def build_mlp(hidden: int = 128, dropout: float = 0.2) -> nn.Module:
    return nn.Sequential(
        nn.Linear(64, hidden), nn.ReLU(), nn.Dropout(dropout),
        nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(dropout),
        nn.Linear(hidden, 10),
    )


def make_loader(x: np.ndarray, y: np.ndarray, device: ember.device, batch_size: int, seed: int) -> DataLoader:
    """A shuffling loader over the tensors already on `device`; its own generator fixes the order."""
    data = TensorDataset(ember.tensor(x, device=device), ember.tensor(y, device=device))
    return DataLoader(data, batch_size=batch_size, shuffle=True, generator=ember.Generator().manual_seed(seed))


def train_epoch(model: nn.Module, loader: DataLoader, optimizer: ember.optim.Optimizer, desc: str = "",
                progress: bool = True) -> list[float]:
    """One pass over `loader`; returns the loss of every batch."""
    model.train()
    loss_fn = nn.CrossEntropyLoss()
    losses: list[float] = []
    start = time.perf_counter()
    batches = progress_bar(loader, desc=desc) if progress else loader
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if progress:
            batches.set_postfix(loss=f"{sum(losses) / len(losses):.4f}")
    if progress:
        tqdm.write(f"{desc}: mean loss {sum(losses) / len(losses):.4f} over {len(losses)} batches, "
                   f"{time.perf_counter() - start:.1f} s")
    return losses


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray, device: ember.device) -> float:
    model.eval()
    with ember.no_grad():
        predicted = model(ember.tensor(x, device=device)).argmax(dim=1).cpu().numpy()
    return float((predicted == y).mean())


def train(device: ember.device, epochs: int = 8, lr: float = 2e-3, batch_size: int = 64, seed: int = 0,
          progress: bool = True) -> tuple[list[float], float]:
    """Train from `seed` on `device`; returns (every batch loss, test accuracy)."""
    ember.manual_seed(seed)
    x_train, y_train, x_test, y_test = load_digits_split()
    model = build_mlp().to(device)
    # initialisation drew from the cpu generator; seed again so that dropout starts every device's
    # generator at the same point of the same stream (Philox: the same masks on cpu and opencl)
    ember.manual_seed(seed)
    optimizer = ember.optim.Adam(model.parameters(), lr=lr)
    loader = make_loader(x_train, y_train, device, batch_size, seed)
    losses: list[float] = []
    for epoch in range(1, epochs + 1):
        losses += train_epoch(model, loader, optimizer, desc=f"epoch {epoch:2d}/{epochs}", progress=progress)
    return losses, accuracy(model, x_test, y_test, device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--device", default="auto", help=DEVICE_HELP)
    parser.add_argument("--epochs", type=int, default=8, help="passes over the training set")
    parser.add_argument("--lr", type=float, default=2e-3, help="Adam's learning rate")
    parser.add_argument("--batch-size", type=int, default=64, help="samples per step")
    parser.add_argument("--seed", type=int, default=0, help="random seed (weights, shuffling, dropout)")
    args = parser.parse_args()

    device = pick_device(args.device)
    print(f"training an MLP on scikit-learn's digits on {device}")
    start = time.perf_counter()
    losses, acc = train(device, args.epochs, args.lr, args.batch_size, args.seed)
    elapsed = time.perf_counter() - start
    print(f"test accuracy {acc:.4f} ({args.epochs} epochs, {len(losses)} steps, {elapsed:.1f} s on {device})")


if __name__ == "__main__":
    main()
