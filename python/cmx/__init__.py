"""cmx: MLX's array framework design in C, with a Python package mirroring
``mlx``: ``import cmx.core as mx`` gives the arrays, ops, devices and
streams; ``cmx.utils`` has the tree utilities."""

import os as _os

# OpenBLAS's idle workers spin for about a tenth of a second after each
# threaded call (OPENBLAS_THREAD_TIMEOUT, read once when OpenBLAS loads,
# which importing cmx.core does), taking cores from cmx's own pool in the
# elementwise work between matrix products: measured on 16 cores, an add
# after a 1024^3 matmul took twice as long. A short spin (2^16 cycles)
# keeps back-to-back BLAS calls fast; a value the user set is kept.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "16")

# The transforms with pytree handling are Python (cmx/_transforms.py) over
# the C entry points of cmx.core; install them under MLX's names.
from . import core as _core  # noqa: E402
from . import _transforms as _tr  # noqa: E402

for _name in ("grad", "value_and_grad", "vjp", "jvp", "vmap",
              "custom_function", "checkpoint"):
    setattr(_core, _name, getattr(_tr, _name))
del _name
