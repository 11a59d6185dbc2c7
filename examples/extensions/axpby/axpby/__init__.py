"""axpby: ``alpha * x + beta * y`` as a cmx operation of its own, with a
threaded CPU kernel, a CUDA kernel and its own vjp, jvp and vmap rules
(the example of MLX's extension guide, on cmx)."""

import cmx.core  # noqa: F401  (cmx.core first: it provides the C API)

from ._ext import axpby  # noqa: E402

__all__ = ["axpby"]
