"""cmx: MLX's array framework design in C, with a Python package mirroring
``mlx``: ``import cmx.core as mx`` gives the arrays, ops, devices and
streams; ``cmx.utils`` has the tree utilities. ``cmake_dir()``,
``include_dir()`` and ``library_dir()`` (also ``python -m cmx --cmake-dir``)
say where libcmx is, for building extensions (``cmx/python.h``)."""

from ._paths_api import cmake_dir, include_dir, library_dir  # noqa: F401


def _cudnn_site_dirs():
    """The nvidia/cudnn/lib folders of the site-packages on sys.path (the
    nvidia-cudnn wheels' layout), where the GPU convolution looks for
    libcudnn.so.9 after the loader's path (src/backend/cuda/cudnn.c)."""
    import os
    import sys

    found = []
    for p in sys.path:
        d = os.path.join(p or ".", "nvidia", "cudnn", "lib")
        if os.path.isfile(os.path.join(d, "libcudnn.so.9")) and d not in found:
            found.append(os.path.abspath(d))
    if found and "CMX_CUDNN_SITE_DIRS" not in os.environ:
        os.environ["CMX_CUDNN_SITE_DIRS"] = ":".join(found)


_cudnn_site_dirs()

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
from . import _compat, _export, _fast_cuda, _fast_gated  # noqa: E402

_export.install(_core)
_fast = _compat._submodule(_core, "fast", "mx.fast: see cmx._compat.PENDING.")
_fast_cuda.install(_core, _fast)
_fast_gated.install(_core, _fast)
del _fast
_compat.install(_core)
