"""The parts of mlx.core's namespace that are not ops of cmx's own: the
``metal`` and ``cuda`` submodules (as MLX has them on every platform), and
the names whose implementation belongs to an issue that has not landed yet
(``distributed`` is the extension's own: python/src/distributed.c).

A pending name exists and raises NotImplementedError naming itself and the
work that brings it, never AttributeError: code written for MLX imports,
tests ``hasattr``, and fails only where it calls what cmx lacks. A name that
the extension defines is never replaced, so each pending entry disappears
by itself once its implementation lands. ``PENDING`` is the one list of
them (the differential suite reads it).

install(core) is called once by cmx/__init__.py.
"""

import sys
import types
import warnings

# submodule ('' for cmx.core itself) -> [(why, names)]; empty now: every
# name of mlx.core 0.32 and its submodules is implemented.
PENDING = {}


def _pending(qualname, why):
    def stub(*args, **kwargs):
        raise NotImplementedError(
            f"[{qualname}] not implemented yet in cmx: it comes with {why}.")

    stub.__name__ = qualname.rsplit(".", 1)[-1]
    stub.__qualname__ = stub.__name__
    stub.__doc__ = (f"Not implemented yet in cmx (comes with {why}): "
                    "calling it raises NotImplementedError.")
    stub._cmx_pending = why
    return stub


def _submodule(core, name, doc):
    """core.<name>: the extension's own submodule when it has one, else a
    new module (also importable as cmx.core.<name>)."""
    mod = getattr(core, name, None)
    if mod is None:
        mod = types.ModuleType(f"{core.__name__}.{name}", doc)
        setattr(core, name, mod)
    sys.modules.setdefault(f"{core.__name__}.{name}", mod)
    return mod


# ---------------------------------------------------------------- metal


def _deprecated(core, name):
    target = getattr(core, name)

    def f(*args, **kwargs):
        warnings.warn(
            f"mx.metal.{name} is deprecated and will be removed in a future "
            f"version. Use mx.{name} instead.", DeprecationWarning,
            stacklevel=2)
        return target(*args, **kwargs)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Deprecated (as in MLX): use :func:`mx.{name}`."
    return f


def _install_metal(core):
    metal = _submodule(core, "metal",
                       "The Metal back-end: never available in cmx (as MLX "
                       "off Apple silicon); the memory functions are the "
                       "deprecated forms of mx's own.")

    def is_available():
        """Whether the Metal back-end is available: always False."""
        return False

    def device_info():
        """An empty dict: there is no Metal device (deprecated in MLX)."""
        warnings.warn(
            "mx.metal.device_info is deprecated and will be removed in a "
            "future version. Use mx.device_info instead.", DeprecationWarning,
            stacklevel=2)
        return {}

    def start_capture(path):
        """Metal GPU captures do not exist here; does nothing (as MLX
        without Metal)."""
        if not isinstance(path, str):
            raise TypeError("[metal.start_capture] path must be a str")

    def stop_capture():
        """Does nothing (see :func:`start_capture`)."""

    for f in (is_available, device_info, start_capture, stop_capture):
        setattr(metal, f.__name__, f)
    for name in ("get_active_memory", "get_peak_memory", "reset_peak_memory",
                 "get_cache_memory", "set_memory_limit", "set_cache_limit",
                 "set_wired_limit", "clear_cache"):
        setattr(metal, name, _deprecated(core, name))


def _install_cuda(core):
    cuda = _submodule(core, "cuda", "The CUDA back-end.")

    def is_available():
        """Check if the CUDA back-end is available (a CUDA driver and a
        GPU were found)."""
        return core.is_available(core.gpu)

    cuda.is_available = is_available


# ---------------------------------------------------------------- all


def install(core):
    if not hasattr(core, "ArrayIterator"):  # the type of iter(array)
        core.ArrayIterator = type(iter(core.array([0])))
    _install_metal(core)
    _install_cuda(core)
    for sub in ("linalg", "fft", "fast"):
        _submodule(core, sub, f"mx.{sub}: see cmx._compat.PENDING.")
    # MLX keeps mx.matrix_norm as a second name of mx.linalg.norm.
    if not hasattr(core, "matrix_norm") and hasattr(core.linalg, "norm"):
        core.matrix_norm = core.linalg.norm
    for sub, groups in PENDING.items():
        mod = getattr(core, sub) if sub else core
        prefix = f"{sub}." if sub else ""
        for why, names in groups:
            for name in names:
                if not hasattr(mod, name):
                    setattr(mod, name, _pending(prefix + name, why))


def implemented(mod, name):
    """Whether mod.name exists and is not a pending stub: how code that
    adapts to what cmx has (``hasattr`` before issue 20) asks."""
    f = getattr(mod, name, None)
    return f is not None and not getattr(f, "_cmx_pending", None)


def pending_names():
    """The names still pending: {qualified name: why}."""
    import cmx.core as core

    out = {}
    for sub, groups in PENDING.items():
        mod = getattr(core, sub) if sub else core
        for why, names in groups:
            for name in names:
                if getattr(getattr(mod, name, None), "_cmx_pending", None):
                    out[(f"{sub}." if sub else "") + name] = why
    return out
