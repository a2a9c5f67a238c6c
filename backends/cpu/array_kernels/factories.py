"""Allocation, ranges, random fills and dropout's draw against the array-module API.

The random fills draw from `generator`, which the dispatcher always passes (the device's
default generator when the caller gave none).
"""
from __future__ import annotations

from . import philox
from .context import ArrayModule


def empty(am: ArrayModule, spec, size, dtype=None, device=None, requires_grad=False):
    return am.xp.empty(spec[0], dtype=am.native_of[spec[1]])


def arange(am: ArrayModule, spec, start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    xp = am.xp
    if end is None:
        start, end = 0, start
    n = spec[0][0]
    dt = am.native_of[spec[1]]
    if dt.kind in "iu":         # torch's integer kernel truncates start and step first (arange(1, 0, -0.3) is ones)
        return (int(start) + int(step) * xp.arange(n, dtype=xp.int64)).astype(dt)
    return (start + step * xp.arange(n, dtype=xp.float64)).astype(dt)


def uniform_(am: ArrayModule, spec, self, low=0.0, high=1.0, generator=None):
    self[...] = generator.draw(lambda seed, offset: philox.uniform(am.xp, seed, offset, self.shape, spec[1].name,
                                                                  low, high, native_dtype=self.dtype))
    return self


def normal_(am: ArrayModule, spec, self, mean=0.0, std=1.0, generator=None):
    if self.size == 0:          # nothing to draw (of any dtype: the shape rule lets an empty one through)
        return self
    self[...] = generator.draw(lambda seed, offset: philox.normal(am.xp, seed, offset, self.shape, spec[1].name,
                                                                 mean, std, native_dtype=self.dtype))
    return self


def random_(am: ArrayModule, spec, self, low, high=None, generator=None):
    dt = spec[1]
    if high is None:
        high = 2 ** (8 * dt.itemsize - (1 if dt.is_signed else 0)) if dt.category == 1 else (
            2 if dt.category == 0 else 2 ** {2: 11, 4: 24, 8: 53}[dt.itemsize])
    name = dt.name if dt.category == 1 else "int64"
    values = generator.draw(lambda seed, offset: philox.randint(am.xp, seed, offset, self.shape, low, high, name))
    self[...] = values.astype(self.dtype)
    return self


def dropout_noise(am: ArrayModule, specs, x, p, generator=None):
    """(x * noise, noise): the draws, the mask and the product dropout's explicit kernel makes with five
    ops, in one call and with its numbers: uniforms of x's dtype (float32 for float16/bfloat16) compared
    with 1 - p, the kept elements' noise 1 / (1 - p) divided in the opmath type, the product rounded once."""
    xp = am.xp
    dt = am.native_of[specs[0][1]]
    cdt = am.compute_of[dt]
    draw = dt if dt in (am.f32, am.f64) else am.f32
    u = generator.draw(lambda seed, offset: philox.uniform(xp, seed, offset, x.shape, draw.name, 0.0, 1.0))
    keep = u < draw.type(1.0 - p)
    noise = xp.where(keep, xp.asarray(cdt.type(1.0) / cdt.type(1.0 - p)).astype(dt), xp.zeros((), dt))
    if cdt == dt:
        return x * noise, noise
    return (x.astype(cdt) * noise.astype(cdt)).astype(dt), noise


KERNELS = {"empty.memory_format": empty, "arange.start_step": arange, "uniform_": uniform_,
           "normal_": normal_, "random_.from": random_, "_dropout_noise": dropout_noise}
