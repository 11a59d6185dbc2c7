"""The harness of the differential suite (tests/python/test_mlx_diff*.py):
the same call runs in cmx and in real MLX (``mlx[cpu]``, installed into the
project venv by ``make test-python``) and the two outcomes must agree.

A case is a function ``f(m, A)`` of a module (``cmx.core`` or ``mlx.core``)
and an input maker ``A`` (``A(values, dtype)`` turns a NumPy array or a
nested list into an array of module m with dtype named by a string). Its
outcome is its result, normalised (arrays by dtype name, shape and values,
nested lists/tuples/dicts by their items, dtypes by name, other objects by
their text with the module's name removed), or the type of the exception it
raised. Two outcomes agree when both raised the same exception type, or both
returned equal normalised results: dtypes and shapes exactly, values to a
tolerance of the dtype (NaN equal to NaN, infinities exactly, integers
exactly), text exactly.

MLX is only ever called, never copied: the expected outcome of each case is
what the installed MLX does.

Where cmx differs from MLX on purpose, the case's id matches an entry of
``DIFFERENCES`` (why it differs); such a case must still differ, so a
difference that went away is noticed and its entry dropped. Cases where
cmx disagrees and should not (open work) are listed one by one in
``_mlx_diff_known.KNOWN``, strict in the same way.
"""
import math
import re

import numpy as np

import cmx.core as cx
from _mlx_diff_known import KNOWN  # cases still to fix (strict)

try:  # the oracle; the test modules skip when it is missing
    import mlx.core as mlx
except ImportError:  # pragma: no cover - without mlx the suite is skipped
    mlx = None

DTYPES = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
          "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64"]
INTS = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
        "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]

# Case ids (regular expressions, matched from the start) -> why cmx differs
# from MLX there on purpose. A matching case must differ.
DIFFERENCES = {
    r"quant/to_fp8/float64$": "MLX 0.32.4's to_fp8 of float64 reads the "
    "input's bits wrongly (1.0 gives code 0, 2.0 gives 63); cmx encodes the "
    "float64 value, rounded once (as float32 inputs are).",
    r"index/bool_mask/get": "cmx reads boolean masks (a[mask], NumPy's "
    "meaning, a documented extension); MLX raises ValueError.",
    r"index/out_of_bounds/": "cmx bounds-checks integer indices and raises "
    "IndexError; MLX reads out of bounds unchecked (undefined values).",
    r"transform/jvp_shape/(at_add|conv1d)$": "cmx has JVPs of scatter and "
    "convolution; MLX 0.32 raises that they are not implemented.",
    r"index/take/0$": "cmx bounds-checks take's indices and raises "
    "IndexError; MLX reads out of bounds unchecked (undefined values).",
    # float64 accuracy: MLX 0.32's CPU kernels compute these float64
    # functions at float32 precision (relative errors near 1e-7); cmx
    # computes them in double.
    r"unary/(exp|erf|cos)/float64/\(3, 4\)$|unary/cos/float64/\(4, 1\)$|"
    r"unary/erfinv/float64/\(2, 3, 4\)$|unary/sigmoid/float64/\(\)$|"
    r"unary/round_dec/float64/[12]$|"
    r"binary/logaddexp/float64-float32/\(2, 3\)-\(2, 1\)$|"
    r"scan/logcumsumexp/float64/\(3, 4\)/0/False/True$":
    "cmx computes float64 in double precision; MLX 0.32 computes these "
    "float64 functions at float32 precision.",
    # operations MLX 0.32 does not support and cmx computes
    r"unary/(expm1|sigmoid)/complex64/": "cmx computes expm1 and sigmoid of "
    "complex64 (the op table has complex kernels); MLX 0.32 raises that "
    "they are not supported.",
    r"unary/nan_to_num/float64/": "cmx's nan_to_num takes float64; MLX "
    "0.32 raises 'Does not yet support given type: float64'.",
    # MLX 0.32 defects
    r"reduce/logsumexp/(bool_|uint64)/\(2, 3, 4\)/": "MLX 0.32 subtracts "
    "the maximum in the input's dtype (bool and unsigned arithmetic wrap: "
    "results off by 1 or inf); cmx computes in float32.",
    r"reduce/argmax/(uint8|uint16)/\(\)/None/True$": "argmax of a 0-d "
    "array with keepdims: MLX 0.32 fails inside (std::vector max_size); "
    "cmx returns 0.",
    r"binary/left_shift/pyscalar-int64/-1$": "shift counts below 0 or "
    "at least the bit width: undefined in MLX (C++ shifts, x86 masks the "
    "count); cmx defines them (0 for left shifts, the sign fill for "
    "right shifts).",
    r"create/array_int_range/\[9223372036854775808\]/uint64$": "cmx "
    "builds uint64 arrays from Python ints up to 2**64 - 1; MLX 0.32 reads "
    "them as int64 and fails past 2**63 - 1 (std::bad_cast).",
    # derivatives of integer values
    r"transform/jvp_int_(sum|mul)/|transform/jvp_int/(astype_then_float|"
    r"bool_sum)$|transform/vjp_int/": "cmx's derivative rules are defined "
    "between inexact dtypes (src/transforms/rules.h): integer and boolean "
    "values are constants to grad, vjp and jvp, their derivatives zero. MLX "
    "0.32 applies its linear rules to integer tangents and cotangents "
    "(jvp of an int32 sum is the int32 sum of the tangents; grad of "
    "2 * i is 2). Following MLX means an integer path in every rule "
    "(their C rule tests pin the inexact-only contract); cmx keeps "
    "integers constant, as JAX does.",
    r"binary/floor_divide/pyscalar-bfloat16/3$": "MLX 0.32 rounds the "
    "bfloat16 quotient to bfloat16 before the floor (3 // 0.30078125 gives "
    "10, as 9.97 rounds to 10.0); cmx floors the quotient computed in "
    "float32 (9, NumPy's and Python's answer for these values).",
    r"transform/grad_masked_scatter$": "a[mask] = v with a mask computed "
    "from the differentiated input: MLX 0.32 raises that it cannot take the "
    "VJP with respect to the mask (its masked_scatter asks for one); cmx's "
    "a[mask] = v is where(mask, v, a), whose derivative with respect to a "
    "boolean mask is zero, so grad gives MLX's result with the mask under "
    "stop_gradient.",
    r"fft/istft_jvp_odd$": "MLX 0.32's JVP of irfft with an odd n gives "
    "n - 1 samples (its VJP and the transform give n), so the JVP of istft "
    "with an odd n_fft fails inside it (broadcast_shapes ValueError); cmx's "
    "gives n samples and istft's JVP agrees with its VJP "
    "(tests/python/test_stft.py).",
    # files and interop (test_mlx_diff_io.py)
    r"io/gguf_meta/float64/": "GGUF has a FLOAT64 metadata type and cmx "
    "writes float64 arrays as it; MLX 0.32 refuses them (ValueError).",
    r"io/gguf_meta/py/(3|2\.5|\[1, 2\]|\[\[1\]\])$": "cmx takes Python "
    "numbers and lists of them as gguf metadata (as arrays: lists of lists "
    "raise ValueError); MLX 0.32 fails inside with std::bad_cast "
    "(RuntimeError).",
    r"io/gguf_meta/2d$": "a 2-d metadata array is a bad argument: cmx "
    "raises ValueError; MLX 0.32 RuntimeError.",
    r"io/safetensors/(F8_E5M2|F8_E4M3FN|I4)/": "a dtype cmx cannot read "
    "is malformed input to load: ValueError, as cmx's other file errors; "
    "MLX 0.32 raises RuntimeError.",
    r"overflow/(concatenate|tile)$": "cmx's dimensions are int64: a "
    "dimension past 2**31 - 1 is valid, and a result whose element count "
    "overflows raises ValueError ('shape is too large'); MLX 0.32 raises "
    "OverflowError for any dimension past int32.",
    r"compare/equal_fn/list$": "cmx's functions take nested lists as "
    "array-likes (mx.equal(a, [1, 2, 3]), NumPy's way); MLX 0.32's raise "
    "ValueError. Operators follow MLX (==/!= give False/True, the others "
    "raise).",
    r"misc/cumulative_sum/.*include_initial": "cmx's cumulative_sum and "
    "cumulative_prod take the array API's include_initial; MLX 0.32's "
    "do not (TypeError).",
    r"create/full/(bool_|u?int(8|16|32|64)|complex64)$": "full(shape, "
    "2.5, dtype) with a non-floating dtype: MLX 0.32 ignores the dtype "
    "and returns float32, against its documentation ('dtype: the data "
    "type of the output'); cmx returns the dtype asked for.",
}


# ---------------------------------------------------------------- inputs
_RNGS = []


def make_rng(seed):
    """A NumPy generator for a test module's inputs. check() runs a case
    in MLX and in cmx from the same state of every such generator, so
    inputs drawn inside a case are the same in both."""
    g = np.random.default_rng(seed)
    _RNGS.append(g)
    return g


def np_values(rng, shape, dtype, domain=None):
    """Random values of a dtype (named) as a NumPy array: small integers
    (non-negative for unsigned types), floats with a few decimals; domain
    'pos' (> 0), 'unit' (|x| < 1), 'ge1' (>= 1) or 'nonzero' narrows
    them."""
    shape = tuple(shape)
    if dtype == "bool_":
        return rng.random(shape) > 0.5
    if dtype in INTS:
        lo = 0 if dtype.startswith("u") or domain in ("pos", "ge1") else -6
        lo = max(lo, 1) if domain in ("pos", "ge1", "nonzero") else lo
        v = rng.integers(lo, 7, size=shape)
        if domain == "nonzero" and not dtype.startswith("u"):
            v = np.where(rng.random(shape) > 0.5, v, -v)
        return v.astype(np.dtype(dtype))
    v = np.round(rng.standard_normal(shape) * 2, 2)
    if domain == "pos":
        v = np.abs(v) + 0.25
    elif domain == "unit":
        v = np.tanh(v) * 0.95
    elif domain == "ge1":
        v = np.abs(v) + 1.0
    elif domain == "nonzero":
        v = np.where(np.abs(v) < 0.25, 0.5, v)
    if dtype == "complex64":
        w = np.round(rng.standard_normal(shape), 2)
        return (v + 1j * w).astype(np.complex64)
    return v.astype(np.float64 if dtype == "float64" else np.float32)


def maker(m):
    """The input maker A(values, dtype) of module m."""

    def A(values, dtype=None):
        if dtype is None:
            return m.array(values)
        if dtype == "bfloat16":
            return m.array(np.asarray(values, dtype=np.float32)).astype(m.bfloat16)
        return m.array(np.asarray(values), dtype=getattr(m, dtype))

    return A


# ---------------------------------------------------------------- outcomes

_MOD = re.compile(r"\b(mlx\.core|cmx\.core|mlx|cmx)\.")


def _text(s):
    return _MOD.sub("", s)


class Raised:
    def __init__(self, exc):
        self.type = type(exc).__name__
        self.msg = str(exc).split("\n")[0][:200]

    def __repr__(self):
        return f"raised {self.type}: {self.msg}"


def _dtype_name(d):
    return str(d).rsplit(".", 1)[-1]


def normalise(m, r, depth=0):
    """The comparable form of a result of module m."""
    if depth > 20:
        return ("deep",)
    if isinstance(r, m.array):
        dt = _dtype_name(r.dtype)
        if r.dtype == m.bfloat16:
            r = r.astype(m.float32)
        return ("array", dt, tuple(r.shape), np.array(r))
    if isinstance(r, m.Dtype):
        return ("dtype", _dtype_name(r))
    if isinstance(r, (list, tuple)):  # by type name: namedtuples kept
        return ("seq", type(r).__name__,
                tuple(normalise(m, x, depth + 1) for x in r))
    if isinstance(r, dict):
        return ("dict", tuple((k, normalise(m, v, depth + 1))
                              for k, v in r.items()))
    if isinstance(r, str):  # printed text: the module's name removed
        return ("py", "str", _text(r))
    if isinstance(r, (bool, int, float, complex, type(None))):
        return ("py", type(r).__name__, r)
    if isinstance(r, np.ndarray):
        return ("ndarray", str(r.dtype), r.shape, r)
    return ("obj", _text(repr(r)))


def outcome(fn, m):
    try:
        r = fn(m, maker(m))
        if isinstance(r, m.array):
            m.eval(r)
        return normalise(m, r)
    except Exception as e:  # noqa: BLE001 - the exception is the outcome
        return Raised(e)


TOL = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1e-2),
       "float32": (2e-5, 2e-6), "float64": (1e-12, 1e-14),
       "complex64": (2e-5, 2e-6)}


def _close(dt, a, b, tol):
    if a.shape != b.shape:
        return False
    if dt in TOL or a.dtype.kind in "fc":
        rtol, atol = tol or TOL.get(dt, (2e-5, 2e-6))
        if a.dtype.kind == "c" or b.dtype.kind == "c":
            return (_close("float32", a.real, b.real, (rtol, atol))
                    and _close("float32", a.imag, b.imag, (rtol, atol)))
        a = a.astype(np.float64)
        b = b.astype(np.float64)
        fin = np.isfinite(a) & np.isfinite(b)
        if not np.array_equal(np.isnan(a), np.isnan(b)):
            return False
        if not np.array_equal(a[~fin & ~np.isnan(a)], b[~fin & ~np.isnan(b)]):
            return False
        if not np.array_equal(fin, np.isfinite(b) & np.isfinite(a)):
            return False
        return bool(np.all(np.abs(a[fin] - b[fin])
                           <= atol + rtol * np.abs(b[fin])))
    return np.array_equal(a, b)


def same(x, y, tol=None):
    """True when two normalised outcomes agree (see the module doc)."""
    if isinstance(x, Raised) or isinstance(y, Raised):
        return (isinstance(x, Raised) and isinstance(y, Raised)
                and x.type == y.type)
    if x[0] != y[0]:
        return False
    kind = x[0]
    if kind == "array":
        return x[1] == y[1] and x[2] == y[2] and _close(x[1], x[3], y[3], tol)
    if kind == "ndarray":
        return x[1] == y[1] and x[2] == y[2] and _close(x[1], x[3], y[3], tol)
    if kind == "seq":
        return x[1] == y[1] and len(x[2]) == len(y[2]) and all(
            same(a, b, tol) for a, b in zip(x[2], y[2]))
    if kind == "dict":
        return [k for k, _ in x[1]] == [k for k, _ in y[1]] and all(
            same(a, b, tol) for (_, a), (_, b) in zip(x[1], y[1]))
    if kind == "py":
        if x[1] != y[1]:
            return False
        a, b = x[2], y[2]
        if isinstance(a, float):
            return (a == b or (math.isnan(a) and math.isnan(b))
                    or abs(a - b) <= 1e-6 * max(abs(a), abs(b)))
        return a == b
    return x == y


def describe(o):
    if isinstance(o, Raised):
        return repr(o)
    if o[0] == "array":
        return f"array {o[1]} {o[2]}: {np.array2string(o[3], threshold=40)}"
    if o[0] == "seq":
        return f"{o[1]}[" + ", ".join(describe(x) for x in o[2]) + "]"
    return repr(o)


def difference_reason(case_id):
    for pat, why in DIFFERENCES.items():
        if re.match(pat, case_id):
            return why
    known = KNOWN.get(case_id)
    return f"known open difference, to fix: {known}" if known else None


def check(case_id, fn, tol=None):
    """Runs case fn in both modules and asserts MLX's outcome (or, for a
    named difference, that the outcomes still differ)."""
    states = [g.bit_generator.state for g in _RNGS]
    want = outcome(fn, mlx)
    for g, st in zip(_RNGS, states):
        g.bit_generator.state = st
    got = outcome(fn, cx)
    why = difference_reason(case_id)
    agree = same(got, want, tol)
    if why:
        assert not agree, (f"{case_id}: listed as an intended difference "
                           f"({why}) but cmx now agrees with MLX: "
                           f"{describe(got)}")
        return
    assert agree, (f"{case_id}\n  mlx: {describe(want)}\n  cmx: "
                   f"{describe(got)}")


class Cases:
    """A collection of generated cases: add(id, fn, tol=None); ids are
    unique (a repeated id gets a suffix)."""

    def __init__(self):
        self.items = []
        self._seen = {}

    def add(self, case_id, fn, tol=None):
        n = self._seen.get(case_id, 0)
        self._seen[case_id] = n + 1
        if n:
            case_id = f"{case_id}#{n}"
        self.items.append((case_id, fn, tol))

    def params(self):
        import pytest

        return [pytest.param(i, f, t, id=i) for i, f, t in self.items]

    def ids(self):
        return [i for i, _, _ in self.items]
