"""Where libcmx, its public headers and its CMake package are, for
building extensions against this cmx (``python -m cmx --cmake-dir``)."""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _path(key):
    try:
        from . import _paths
    except ImportError:  # a source checkout on sys.path: nothing built
        raise RuntimeError(
            "cmx: this package has no build information (cmx/_paths.py): "
            "use an installed cmx (pip install, cmake --install) or the "
            "build tree's build/python") from None
    p = getattr(_paths, key)
    return os.path.normpath(p if os.path.isabs(p) else os.path.join(_HERE, p))


def cmake_dir():
    """The folder of cmxConfig.cmake: pass it as ``-Dcmx_DIR=`` (or add it
    to ``CMAKE_PREFIX_PATH``) so ``find_package(cmx)`` finds cmx::cmx."""
    return _path("CMAKE_DIR")


def include_dir():
    """The folder holding the public headers (``cmx/cmx.h``,
    ``cmx/primitive.h``, ``cmx/cuda.h``, ``cmx/python.h``)."""
    return _path("INCLUDE_DIR")


def library_dir():
    """The folder of libcmx.so."""
    return _path("LIBRARY_DIR")
