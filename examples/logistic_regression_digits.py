"""Multinomial logistic regression on scikit-learn's digits, with hand-written ember ops.

No nn module, no optimizer: the model is a weight matrix and a bias, the loss is written
out with log_softmax, and the update is plain gradient descent on `.grad` (`make demo` runs
digits_mlp.py, the same task with nn/optim/DataLoader). It prints the loss every 25 steps and
the final test accuracy.

    python examples/logistic_regression_digits.py [--device cpu] [--steps 300] [--lr 0.5]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import ember


def load(device: str):
    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data.astype(np.float32), digits.target, test_size=0.2, random_state=0, stratify=digits.target)
    mean, std = x_train.mean(0), x_train.std(0) + 1e-6
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
    onehot = np.eye(10, dtype=np.float32)[y_train]
    return (ember.tensor(x_train, device=device), ember.tensor(onehot, device=device),
            ember.tensor(x_test, device=device), y_test)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--lr", type=float, default=0.5)
    args = parser.parse_args()

    ember.manual_seed(0)
    x, targets, x_test, y_test = load(args.device)
    weight = (ember.randn(64, 10, device=args.device) * 0.01).requires_grad_()
    bias = ember.zeros(10, device=args.device, requires_grad=True)

    start = time.perf_counter()
    for step in range(args.steps + 1):
        logits = x @ weight + bias
        loss = -(targets * ember.log_softmax(logits, dim=1)).sum(dim=1).mean()
        loss.backward()
        with ember.no_grad():
            weight -= args.lr * weight.grad
            bias -= args.lr * bias.grad
        weight.grad = None
        bias.grad = None
        if step % 25 == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}")
    elapsed = time.perf_counter() - start

    with ember.no_grad():
        predicted = ember.argmax(x_test @ weight + bias, dim=1).cpu().numpy()
    accuracy = float((predicted == y_test).mean())
    print(f"test accuracy {accuracy:.4f} on {len(y_test)} held-out digits ({args.steps} steps, {elapsed:.2f} s)")


if __name__ == "__main__":
    main()
