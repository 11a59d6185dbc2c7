"""cmx: MLX's array framework design in C, with a Python package mirroring
``mlx``: ``import cmx.core as mx`` gives the arrays, ops, devices and
streams; ``cmx.utils`` has the tree utilities."""

# The transforms with pytree handling are Python (cmx/_transforms.py) over
# the C entry points of cmx.core; install them under MLX's names.
from . import core as _core  # noqa: E402
from . import _transforms as _tr  # noqa: E402

for _name in ("grad", "value_and_grad", "vjp", "jvp", "vmap",
              "custom_function", "checkpoint"):
    setattr(_core, _name, getattr(_tr, _name))
del _name

# compile (cmx/_compile.py) over cmx.core._compiled.
from . import _compile as _cp  # noqa: E402

_core.compile = _cp.compile

# Graph export; mx.metal, mx.cuda, mx.distributed, and the names still
# pending (after compile: a name defined is never replaced).
from . import _compat, _export  # noqa: E402

_export.install(_core)
_compat.install(_core)
