"""Random-number generators: a seed and a Philox counter offset per device.

Every backend draws from the same counter-based stream (Philox4x32-10, specified in
backends/cpu/array_kernels/philox.py), so one seed gives the same numbers on every device.
A draw of n 32-bit words advances the offset by whole 4-word blocks.
"""
from __future__ import annotations

import os
import threading

from ember.core.device import as_device, device

_DEFAULT_SEED = 67280421310721


class Generator:
    """ember.Generator(device="cpu"): manual_seed, seed, initial_seed, get/set_state."""

    def __init__(self, device="cpu") -> None:
        self.device = as_device(device)
        self._seed = _DEFAULT_SEED
        self.offset = 0
        self._lock = threading.Lock()

    def manual_seed(self, seed: int) -> "Generator":
        seed = int(seed)
        if seed < -(2 ** 63) or seed >= 2 ** 64:
            raise RuntimeError(f"Overflow when unpacking long: seed {seed} is out of the 64-bit range")
        self._seed = seed % (2 ** 64)
        self.offset = 0
        return self

    def seed(self) -> int:
        s = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        from ember.frontend.factories import tensor
        from ember.core import dtype as _dt

        return tensor([self._seed & 0xFFFFFFFF, self._seed >> 32, self.offset & 0xFFFFFFFF, self.offset >> 32],
                      dtype=_dt.int64)

    def set_state(self, state) -> "Generator":
        a, b, c, d = (int(v) for v in state.tolist())
        self._seed = a | (b << 32)
        self.offset = c | (d << 32)
        return self

    def draw(self, sample):
        """Run `sample(seed, offset) -> (values, new_offset)` atomically and advance the offset.

        Backends implement random kernels through this: the Philox stream position moves
        exactly as the spec says, and concurrent draws from one generator never overlap.
        """
        with self._lock:
            values, self.offset = sample(self._seed, self.offset)
        _DRAWS.n = getattr(_DRAWS, "n", 0) + 1
        return values


_DRAWS = threading.local()


def draws() -> int:
    """How many draws this thread has made from any generator (ember.compile's step recording asks whether
    an op drew random numbers; other threads' draws do not count)."""
    return getattr(_DRAWS, "n", 0)

_default_generators: dict[str, Generator] = {}
_global_seed = [_DEFAULT_SEED]


def default_generator(dev=None) -> Generator:
    d = as_device(dev)
    key = d.type
    gen = _default_generators.get(key)
    if gen is None:
        gen = _default_generators[key] = Generator(device(key)).manual_seed(_global_seed[0])
    return gen


def manual_seed(seed: int) -> Generator:
    """Seed the default generator of every device type (and those created later)."""
    cpu = default_generator("cpu").manual_seed(seed)      # validates the seed before anything changes
    _global_seed[0] = cpu.initial_seed()
    for t in set(_default_generators) - {"cpu"}:
        default_generator(t).manual_seed(seed)
    return cpu


def seed() -> int:
    s = default_generator("cpu").seed()
    manual_seed(s)
    return s


def initial_seed() -> int:
    return default_generator("cpu").initial_seed()


def get_rng_state():
    return default_generator("cpu").get_state()


def set_rng_state(state) -> None:
    default_generator("cpu").set_state(state)
