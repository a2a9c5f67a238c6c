"""An OpInfo-style database of sample inputs for every registered operator.

`OP_DB` holds one `OpInfo` per registry op (`ember.dispatcher.ALL_OPS`), in-place twins
included; ops left out are listed, with the reason, in `EXCLUDED`. The conformance tests
of this package (`pytest --pyargs ember.testing --ember-device=NAME`) run them differentially
against PyTorch (torch==2.13.0, CPU build, the oracle) on the device under test:

    values (value, dtype, shape) on a real device, layouts (shape, dtype, strides) on meta,
    gradients against torch, gradcheck in float64, second-order gradients, error inputs.

A sample's tensor arguments are `T` placeholders holding a numpy array of the values the op
sees and a layout ("c" contiguous, "t" a transposed view, "s" a strided slice, "e" an
expanded view); `materialize` builds the same tensors, from the same data, in either
framework and on any device, so ember and torch see identical inputs. Data comes from a
numpy RNG seeded per (op, dtype). Tolerances live in `ember.testing.tolerances`.

Layout of the package: `samples` (the model and helpers), `database` (OP_DB, `add` and the
shared generators), then one module per operator area, each adding its entries on import.
"""
from __future__ import annotations

from . import pointwise, comparisons, reductions, views, copies, linalg, factories, indexing, sorting_scans, shape_ops  # noqa: F401  (each adds its entries)
from . import convolution, pooling, normalization, padding, nn_core  # noqa: F401  (nn layers)
from . import activations, losses, random_ops  # noqa: F401  (nn functional)
from . import sampling  # noqa: F401  (embedding_bag, grid sampling, argwhere, nonzero_numpy)
from . import recurrent  # noqa: F401  (the recurrent layer op)
from . import special  # noqa: F401  (lgamma, digamma, polygamma, erfinv, xlogy)
from . import pool_ctc  # noqa: F401  (adaptive and fractional max pooling, CTC loss)
from . import factorizations  # noqa: F401  (Cholesky factorisation, triangular solves)
from . import linalg_products  # noqa: F401  (norms and products of torch.linalg, cross, tensordot, dist)
from . import lu  # noqa: F401  (inverse, determinants, solve, matrix power)
from . import scans, numerical  # noqa: F401  (heaviside, float_power, scans; trapezoid, vander, cov, corrcoef)
from . import slices, combinatorics  # noqa: F401  (index_copy, index_fill; block_diag, cartesian_prod, combinations)
from . import quantiles, counting  # noqa: F401  (quantile, nanquantile; gcd, lcm, histc, mode)
from . import scatter_copies  # noqa: F401  (diagonal_scatter, narrow_copy, renorm, isreal)
from . import sparse  # noqa: F401  (the product behind sparse COO tensors' mm)
from .database import EXCLUDED, OP_DB
from .samples import (ALL, DEVICE, DT, FLOAT, GRAD_DTYPES, LOWP, NUM, SIGNED, ErrorInput, OpInfo, Sample, T,
                      is_float, make, materialize, method, fn, to_tensor)

OPS_BY_NAME = {op.name: op for op in OP_DB}
assert len(OPS_BY_NAME) == len(OP_DB), "duplicate OpInfo names"

__all__ = ["ALL", "DEVICE", "DT", "EXCLUDED", "ErrorInput", "FLOAT", "GRAD_DTYPES", "LOWP", "NUM", "OP_DB",
           "OPS_BY_NAME", "OpInfo", "SIGNED", "Sample", "T", "fn", "is_float", "make", "materialize", "method",
           "to_tensor"]
