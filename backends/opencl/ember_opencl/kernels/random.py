"""The random fills (uniform_, normal_, random_) on the Philox stream of the cpu backend.

Each element computes the Philox4x32-10 block holding its words (the specification in
backends/cpu/array_kernels/philox.py), so for one seed and offset the uniform and integer
draws are bit-identical to the cpu's. Normals (Box-Muller) use the same uniforms bit for bit
and the same formula with the same rounding (no FMA), but log/cos/sin come from the OpenCL
math library instead of numpy's, so they differ from the cpu's by an ulp or two (in 5 to 20%
of float32 elements on PoCL): the documented tolerance is
`ember.testing.tolerances.NORMAL_MATCH_ULPS` (see backends/opencl/README.md). Elements are
numbered in the tensor's logical row-major order, so fills through views match the cpu's
too. The generator is the one the dispatcher passes: the one given, else the opencl device
type's default one (seeded by ember.manual_seed with the cpu's).

Each kernel is `fn(backend, spec, *op_args)` like every opencl kernel (kernels/table.py), though
these allocate nothing and use only the elementwise engine; the table `KERNELS` ends the module.
"""
from __future__ import annotations

import math

from . import elementwise

UNIFORM_BITS = {"float32": 24, "float16": 11, "bfloat16": 8}


def draw(generator, self, words_per_element: int, expr: str, ct: str, extra):
    """Fill `self` with `expr` (over seed, base and gid) from `generator`'s stream: each element uses
    `words_per_element` words, and the generator's offset advances past them (whole blocks)."""
    n = self.size

    def sample(seed, offset):
        elementwise.run(self, [], [], expr, ct,
                        [("seed", "ulong", seed), ("base", "ulong", offset // 4)] + extra, tag="random")
        return None, offset + 4 * (-(-(words_per_element * n) // 4))
    generator.draw(sample)
    return self


def uniform_(backend, spec, self, low=0.0, high=1.0, generator=None):
    name = self.dtype.name
    if name == "float64":
        expr = ("lo + ember_unit_d(ember_philox_word(seed, base, 2 * gid), "
                "ember_philox_word(seed, base, 2 * gid + 1)) * span")
        return draw(generator, self, 2, expr, "double",
                    [("lo", "double", float(low)), ("span", "double", float(high) - float(low))])
    expr = f"lo + ember_unit_f(ember_philox_word(seed, base, gid), {UNIFORM_BITS[name]}) * span"
    return draw(generator, self, 1, expr, "float",
                [("lo", "float", float(low)), ("span", "float", float(high) - float(low))])


def normal_(backend, spec, self, mean=0.0, std=1.0, generator=None):
    pairs = -(-self.size // 2)
    if self.dtype.name == "float64":
        # uniform i uses words 2i, 2i+1: pair p's two uniforms are words 4p..4p+3 (one block)
        a = "ember_unit_d(ember_philox_word(seed, base, 4 * (gid / 2)), ember_philox_word(seed, base, 4 * (gid / 2) + 1))"
        b = ("ember_unit_d(ember_philox_word(seed, base, 4 * (gid / 2) + 2), "
             "ember_philox_word(seed, base, 4 * (gid / 2) + 3))")
        ct, words = "double", 4
    else:
        a = "ember_unit_f(ember_philox_word(seed, base, 2 * (gid / 2)), 24)"
        b = "ember_unit_f(ember_philox_word(seed, base, 2 * (gid / 2) + 1), 24)"
        ct, words = "float", 2
    expr = (f"(((gid & 1) ? sin(twopi * {b}) : cos(twopi * {b})) * sqrt(({ct})-2 * log(({ct})1 - {a}))) "
            "* sd + mu")

    def sample(seed, offset):
        elementwise.run(self, [], [], expr, ct,
                        [("seed", "ulong", seed), ("base", "ulong", offset // 4), ("twopi", ct, 2.0 * math.pi),
                         ("sd", ct, std), ("mu", ct, mean)], tag="random")
        return None, offset + 4 * (-(-(words * pairs) // 4))
    generator.draw(sample)
    return self


def random_(backend, spec, self, low, high=None, generator=None):
    dt = spec[1]
    if high is None:
        high = 2 ** (8 * dt.itemsize - (1 if dt.is_signed else 0)) if dt.category == 1 else (
            2 if dt.category == 0 else 2 ** {2: 11, 4: 24, 8: 53}[dt.itemsize])
    expr = ("(long)(((ulong)ember_philox_word(seed, base, 2 * gid) "
            "| ((ulong)ember_philox_word(seed, base, 2 * gid + 1) << 32)) % range + lo)")
    return draw(generator, self, 2, expr, "long",
                [("range", "ulong", int(high) - int(low)), ("lo", "ulong", int(low))])


KERNELS = {"uniform_": uniform_, "normal_": normal_, "random_.from": random_}
