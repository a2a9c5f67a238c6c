"""A small CNN on scikit-learn's 8x8 digits, after pytorch/examples' mnist/main.py.

conv-relu-conv-relu-maxpool-dropout-linear-relu-dropout-linear-log_softmax, nll_loss,
Adadelta with StepLR(gamma=0.7) per epoch; prints the test loss and accuracy per epoch.

    python examples/digits_cnn.py [--device auto|cpu|opencl] [--epochs 6] [--lr 1.0] [--gamma 0.7]

The model and the step are written against the torch API and take the module as an argument
(`cnn_model(torch)`), so tests/test_examples.py builds the same network with PyTorch and with
ember and checks that they train identically.
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def cnn_model(torch):
    """The Net class of pytorch/examples' mnist, sized for 8x8 images, built from `torch`'s nn."""
    nn, F = torch.nn, torch.nn.functional

    class Net(nn.Module):
        def __init__(self, dropout1: float = 0.25, dropout2: float = 0.5) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, 3, 1)       # 8x8 -> 6x6
            self.conv2 = nn.Conv2d(16, 32, 3, 1)      # 6x6 -> 4x4, max-pooled to 2x2
            self.dropout1 = nn.Dropout(dropout1)
            self.dropout2 = nn.Dropout(dropout2)
            self.fc1 = nn.Linear(32 * 2 * 2, 64)
            self.fc2 = nn.Linear(64, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = torch.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = self.dropout2(x)
            return F.log_softmax(self.fc2(x), dim=1)

    return Net


def train_step(torch, model, optimizer, data, target) -> float:
    """One Adadelta step on a batch; returns the batch's nll loss."""
    optimizer.zero_grad()
    loss = torch.nn.functional.nll_loss(model(data), target)
    loss.backward()
    optimizer.step()
    return loss.item()


def load_images(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits as (N, 1, 8, 8) float32 images scaled like mnist's Normalize, and int64 labels."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = (digits.images.astype(np.float32)[:, None] / 16.0 - 0.3) / 0.35
    x_train, x_test, y_train, y_test = train_test_split(images, digits.target.astype(np.int64), test_size=0.2,
                                                        random_state=seed, stratify=digits.target)
    return x_train, y_train, x_test, y_test


def main() -> None:
    import ember as torch
    from ember.optim.lr_scheduler import StepLR
    from ember.utils.data import DataLoader, TensorDataset

    from _common import DEVICE_HELP, pick_device, progress

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--device", default="auto", help=DEVICE_HELP)
    parser.add_argument("--epochs", type=int, default=6, help="passes over the training set")
    parser.add_argument("--batch-size", type=int, default=32, help="samples per step")
    parser.add_argument("--lr", type=float, default=1.0, help="Adadelta's learning rate")
    parser.add_argument("--gamma", type=float, default=0.7, help="StepLR's decay per epoch")
    parser.add_argument("--seed", type=int, default=1, help="random seed")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = pick_device(args.device)
    x_train, y_train, x_test, y_test = load_images()
    train_data = TensorDataset(torch.tensor(x_train, device=device), torch.tensor(y_train, device=device))
    loader = DataLoader(train_data, batch_size=args.batch_size, shuffle=True)
    test_x, test_y = torch.tensor(x_test, device=device), torch.tensor(y_test, device=device)

    model = cnn_model(torch)().to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    print(f"training a CNN on scikit-learn's 8x8 digits on {device}")
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        desc = f"epoch {epoch}/{args.epochs} lr {scheduler.get_last_lr()[0]:.3f}"
        bar = progress(loader, desc=desc)
        total = 0.0
        for i, (data, target) in enumerate(bar, 1):
            total += train_step(torch, model, optimizer, data, target)
            bar.set_postfix(loss=f"{total / i:.4f}")
        print(f"{desc}: mean train loss {total / len(loader):.4f}")
        scheduler.step()
        model.eval()
        with torch.no_grad():
            output = model(test_x)
            test_loss = torch.nn.functional.nll_loss(output, test_y).item()
            correct = (output.argmax(dim=1) == test_y).sum().item()
        print(f"  test loss {test_loss:.4f}, accuracy {correct}/{len(y_test)} ({correct / len(y_test):.4f})")
    print(f"done in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
