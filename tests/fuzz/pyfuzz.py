#!/usr/bin/env python3
"""Random-call fuzzer of the cmx.core Python API.

Every public function of cmx.core (found by introspection, cmx.core.random
included), array methods, operators, indexing and the transforms are called
with random arguments: ints and floats at the edges (0, -1, 2**31, 2**63,
NaN, inf), None, strings, bytes, nested and ragged lists, huge, empty and
negative shapes, arrays of every dtype and layout (transposed, sliced,
broadcast, empty, 0-d), numpy arrays, and every keyword of the signature,
stream= of each device included. Results are evaluated, printed and
converted to numpy and lists.

Any Python exception is a fine answer to a random call. A failure is a
crash (a signal, an abort), a sanitizer report, a hang, or a SystemError (a
binding that returned NULL without an exception, or the reverse). Calls run
in batches, each in a fresh subprocess; when one fails, the failing call is
run alone to confirm it, shrunk (keyword and positional arguments dropped,
arguments replaced by simpler ones) and printed as a minimal reproducer.

    python tests/fuzz/pyfuzz.py --build build --calls 20000 --seed 1
    python tests/fuzz/pyfuzz.py --build build-asan --sanitize --calls 2000
    python tests/fuzz/pyfuzz.py --build build --calls 1000000 --batch 10000 \
        --log tests/fuzz/runs/release-seed1.log  # make fuzz-python-release

A long run with --log writes a CHECKPOINT line after each batch (calls
done, failures in all, seconds) and each failure with its reproducer as it
is found; run again with the same log, seed and --start, it resumes after
the last call done (so --calls can grow across sessions). Each worker runs
a whole batch in one interpreter (its start-up was a third of a release
worker's time at 2,000 calls a batch).

--sanitize runs the workers under a -DCMX_SANITIZE=ON build: Python loads
the extension with dlopen, so AddressSanitizer's runtime must be the first
library of the process: LD_PRELOAD=$(gcc -print-file-name=libasan.so)
(libubsan comes as a dependency of libcmx). ASAN_OPTIONS=detect_leaks=0
(the interpreter itself keeps memory until exit) and PYTHONMALLOC=malloc
(so ASan sees Python objects as well). The exit code is 0 when nothing was
found, 1 otherwise.
"""
import argparse
import contextlib
import inspect
import io
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# ---------------------------------------------------------------- values

DTYPES = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
          "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64"]
NP_DTYPES = ["bool_", "uint8", "int16", "int32", "int64", "float16",
             "float32", "float64", "complex64"]
EDGE_INTS = ["0", "1", "-1", "2", "3", "-3", "7", "2**31 - 1", "2**31",
             "-2**31", "2**32", "2**62", "2**63 - 1", "-2**63", "2**63",
             "2**64", "10**9", "-10**9", "2**70", "-2**70"]
EDGE_FLOATS = ["0.0", "-0.0", "0.5", "-1.5", "1e308", "-1e308", "5e-324",
               "float('nan')", "float('inf')", "float('-inf')", "3.7",
               "1e20"]
STRINGS = ["''", "'x'", "'float32'", "'int8'", "'ij,jk->ik'", "'ii'",
           "'i,i'", "'...i->...'", "'constant'", "'edge'", "'reflect'",
           "'same'", "'valid'", "'full'", "'left'", "'right'", "'xy'",
           "'ij'", "'npy'", "'safetensors'", "'gguf'", "'cpu'", "'gpu'",
           "'a.npy'", "'b.npz'", "'c.safetensors'", "'\\x00'", "'é'"]
SHAPES = ["()", "(0,)", "(1,)", "(3,)", "(2, 3)", "(3, 1)", "(1, 3)",
          "(2, 0, 3)", "(0, 2)", "(2, 2, 2)", "(4, 4)", "(1, 1, 1, 1)",
          "(-1,)", "(2, -1)", "(-2,)", "(2**31,)", "(2**40, 2**40)",
          "(2**62, 0)", "(0, 2**62)", "(0, 2**61, 2)", "(1,) * 33",
          "[2, 3]", "(2.5,)", "(None,)", "(3, 2**63 - 1)", "(5, 0, 2**31)"]
NESTED = ["[]", "[[]]", "[1, 2, 3]", "[[1, 2], [3, 4]]", "[[1], [2, 3]]",
          "[True, False]", "[1.5, float('nan'), float('inf')]", "[1j, 2]",
          "[2**63, 1]", "[-2**63]", "[2**64]", "[[[0.5]]]", "[None]",
          "['a']", "[[1, 2], 3]", "[mx.array(1), 2]", "(1, 2)",
          "[[1.0] * 4] * 3", "list(range(10))"]
STREAMS = ["None", "mx.cpu", "mx.gpu", "mx.default_stream(mx.cpu)",
           "mx.Device(mx.DeviceType.cpu)", "mx.Device(mx.DeviceType.gpu)",
           "'cpu'", "3", "mx.new_stream(mx.cpu)"]
FUNCS = ["lambda x: mx.sum(x)", "lambda x: mx.sum(x * x)",
         "lambda x: x", "lambda x, y: mx.sum(x * y)", "lambda *a: a",
         "lambda x: x.tolist()", "lambda x: 1 / 0", "lambda x: (x, x)",
         "lambda x: [x]", "lambda x: {'a': x}", "lambda x: None",
         "mx.sin", "mx.exp", "lambda x: mx.sum(mx.sin(x))", "None",
         "lambda x: mx.eval(x)", "lambda x: x.item()"]
AXES = ["None", "0", "1", "-1", "2", "-3", "5", "(0, 1)", "(0, 0)", "[1, 0]",
        "()", "2**31", "-2**31", "1.5"]
INDICES = ["0", "-1", "5", "slice(None)", "slice(None, None, -1)",
           "slice(1, None, 2)", "slice(None, None, 2**63 - 1)",
           "slice(-2**63, 2**63 - 1, -2**63)", "slice(2**40, -2**40, 3)",
           "...", "None", "(0, 0)", "(..., 0)", "(None, ..., None)",
           "(slice(None), 1)", "mx.array([0, 1])", "mx.array([[5], [-4]])",
           "mx.array([True, False])", "mx.array([10**9])", "[0, 2]",
           "mx.array([], dtype=mx.int32)", "(mx.array([0]), mx.array([1]))",
           "(mx.array([0, 1]), slice(None), mx.array([1]))", "1.5",
           "mx.array(0, dtype=mx.uint64)", "'x'", "(0, 0, 0, 0, 0)"]
LAYOUTS = ["", ".T", "[::-1]", "[..., ::2]", "[1:]", "[:0]", "[None]"]


class Gen:
    """Random argument expressions (Python source strings)."""

    def __init__(self, rng, mx):
        self.r = rng
        self.mx = mx

    def choice(self, xs):
        return self.r.choice(xs)

    def shape(self, max_dims=3, max_dim=5):
        if self.r.random() < 0.12:
            return self.choice(SHAPES)
        nd = self.r.randint(0, max_dims)
        return "(" + "".join(f"{self.r.randint(0, max_dim)}, "
                             for _ in range(nd)) + ")"

    def dtype(self):
        return "mx." + self.choice(DTYPES)

    def array(self):
        r = self.r.random()
        dt = self.dtype()
        if r < 0.3:
            e = f"mx.random.normal({self.shape()}).astype({dt})"
        elif r < 0.45:
            e = f"mx.arange({self.r.randint(0, 24)}, dtype={dt})"
            if self.r.random() < 0.5:
                e = f"{e}.reshape({self.choice(['(2, -1)', '(-1, 2)', '(-1,)', '(2, 2, -1)'])})"
        elif r < 0.55:
            e = f"mx.zeros({self.shape()}, dtype={dt})"
        elif r < 0.65:
            e = f"mx.array({self.choice(NESTED)})"
        elif r < 0.72:
            e = f"mx.array({self.choice(EDGE_INTS + EDGE_FLOATS)})"
        elif r < 0.8:
            e = f"mx.broadcast_to(mx.array({self.choice(EDGE_FLOATS)}), {self.shape()})"
        elif r < 0.9:
            shape = "(" + "".join(f"{self.r.randint(0, 4)}, " for _ in
                                  range(self.r.randint(0, 3))) + ")"
            e = (f"np.random.default_rng({self.r.randint(0, 99)}).standard_normal("
                 f"{shape}).astype(np.{self.choice(NP_DTYPES)})")
            return e
        else:
            e = f"mx.ones({self.shape(4, 3)}, dtype={dt})"
        if self.r.random() < 0.25:
            e = f"({e}){self.choice(LAYOUTS)}"
        return e

    def value(self):
        """A value of any kind."""
        k = self.r.random()
        if k < 0.35:
            return self.array()
        if k < 0.5:
            return self.choice(EDGE_INTS)
        if k < 0.58:
            return self.choice(EDGE_FLOATS)
        if k < 0.64:
            return self.choice(["None", "True", "False", "1j", "b'x'",
                                "object()", "Ellipsis", "slice(1)", "{}"])
        if k < 0.7:
            return self.choice(STRINGS)
        if k < 0.8:
            return self.shape()
        if k < 0.88:
            return self.choice(NESTED)
        if k < 0.93:
            return self.dtype()
        if k < 0.97:
            return self.choice(FUNCS)
        return self.choice(STREAMS)

    def for_param(self, name):
        """A value suited to a parameter's name most of the time."""
        n = name.lower()
        if self.r.random() < 0.15:
            return self.value()
        if n in ("stream", "device", "s"):
            return self.choice(STREAMS)
        if n == "dtype":
            return self.dtype()
        if n in ("axis", "axes", "axis1", "axis2", "source", "destination",
                 "in_axes", "out_axes", "argnums", "start_axis", "end_axis"):
            return self.choice(AXES)
        if n in ("shape", "reps", "slice_size", "sizes", "strides",
                 "pad_width", "start_indices", "stride", "padding",
                 "dilation", "shifts", "num_samples"):
            return self.choice(SHAPES + AXES) if self.r.random() < 0.4 \
                else self.shape()
        if n in ("fun", "f", "func", "vjp", "jvp", "vmap"):
            return self.choice(FUNCS)
        if n in ("file", "path", "subscripts", "mode", "indexing", "side",
                 "format", "kind", "name"):
            return self.choice(STRINGS)
        if n in ("k", "n", "num", "decimals", "offset", "groups", "seed",
                 "block_size", "bits", "kth", "start", "stop", "step",
                 "low", "high", "width", "m", "precision", "limit"):
            return self.choice(EDGE_INTS[:12]) if self.r.random() < 0.8 \
                else self.choice(EDGE_INTS + EDGE_FLOATS)
        if n in ("keepdims", "reverse", "inclusive", "sparse", "sorted",
                 "sorted_indices", "right", "upper", "equal_nan",
                 "return_metadata", "transpose", "flip", "allow_col_major"):
            return self.choice(["True", "False", "None", "1"])
        if n in ("key",):
            return self.choice(["mx.random.key(0)", "mx.random.key(2**40)",
                                "None", "mx.array([1, 2], dtype=mx.uint32)",
                                "mx.zeros((2,))"])
        if n in ("vals", "val", "constant_values", "nan", "posinf",
                 "neginf", "a_min", "a_max", "loc", "scale", "p",
                 "rtol", "atol", "alpha", "beta", "scalar"):
            return self.choice(EDGE_FLOATS + EDGE_INTS[:8] + ["None"]) \
                if self.r.random() < 0.6 else self.array()
        if n in ("arrays", "operands", "args", "primals", "tangents",
                 "cotangents", "dependencies", "inputs", "outputs"):
            return "[" + ", ".join(self.array() for _ in
                                   range(self.r.randint(0, 3))) + "]"
        if n in ("indices", "indices_or_sections", "lhs_indices",
                 "rhs_indices", "segments"):
            return self.choice(["mx.array([0, 1])", "mx.array([5, -4])",
                                "mx.array([[0], [1]])", "2", "[1, 2]",
                                "mx.array([10**9])", "mx.array([], dtype=mx.int32)",
                                "mx.array([0.5])", "3", "0", "-1"]) \
                if self.r.random() < 0.6 else self.array()
        return self.array() if self.r.random() < 0.75 else self.value()


# Calls that once crashed, hung or hit undefined behaviour (issue 19): run
# first by every fuzzing run (--regressions), so the sanitizer build checks
# them each time.
REGRESSIONS = [
    "r = mx.take_along_axis(mx.zeros((0,)), mx.array([10**9]), axis=0)",
    "r = mx.take_along_axis(mx.zeros((2, 0)), mx.array([[5], [3]]), axis=1)",
    "r = mx.tensordot(mx.ones((2,)), mx.ones((2,)), 1, stream=mx.gpu)",
    "r = mx.inner(mx.array([1.]), mx.array([1.]), stream=mx.gpu)",
    "r = mx.cumsum(mx.array([True, False]), stream=mx.gpu)",
    "r = mx.logcumsumexp(mx.array([1, 2]), stream=mx.gpu)",
    "r = repr(mx.ones((0, 2**62)))",
    "r = repr(mx.zeros((0, 2**40), mx.uint8))",
    "r = mx.ones((5, 2))[1:-3:2**63 - 1]",
    "r = mx.ones((5, 2))\nr[-4:100:2**63 - 1] = -1",
    "r = np.array(mx.ones((3,), mx.float16)[::-2**63])",
    "r = mx.tile(mx.zeros((2, 3, 2, 0)), (2**31, 2**31))",
    "r = mx.as_strided(mx.arange(6), (1, 2), (2**62, 3))",
    "r = mx.zeros((3, 0))\nr[mx.array([5])] = 1",
    "r = mx.zeros((0, 3))\nr[:, mx.array([5])] = 1",
    "r = mx.hamming(2**40)",
    "r = mx.unstack(mx.ones((2**31,), dtype=mx.uint16))",
    "r = mx.from_dlpack(mx.broadcast_to(mx.array(1e20), (2**31,)))",
    "mx._fail_after(11)\nr = mx.grad(lambda x: mx.sum(mx.logcumsumexp("
    "mx.floor(x))))(mx.broadcast_to(mx.array(3.7), (4, 1, 4)))",
    # the long release run (seed 1, call 121,179): vector norms read the
    # dtype of a failed intermediate
    "r = mx.matrix_norm(mx.broadcast_to(mx.array(-1e308), (3, )), 0, "
    "stream=mx.Device(mx.DeviceType.gpu))",
    "r = mx.linalg.norm(mx.ones((3,)), 3, stream=mx.gpu)",
    # seed 1, call 829,499: the mirrored indices' byte count wrapped
    "r = mx.pad(mx.array([1, 2]), (0, 2**62), 'reflect')",
]

# ---------------------------------------------------------------- targets

SKIP = {"set_memory_limit", "set_cache_limit", "set_wired_limit", "eval",
        "async_eval", "synchronize", "stream", "seed", "set_printoptions",
        "clear_cache", "reset_peak_memory", "new_stream", "save",
        "save_gguf", "save_safetensors", "savez", "savez_compressed",
        "load", "export_function", "import_function", "disable_compile",
        "enable_compile"}
# Functions that change process state: called, but rarely.
RARE = {"set_default_device", "set_default_stream", "save", "savez",
        "savez_compressed", "save_safetensors", "save_gguf", "load", "eval",
        "async_eval", "synchronize", "new_stream", "set_printoptions",
        "seed", "clear_cache", "stream"}
BINOPS = ["+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>",
          "<", "<=", ">", ">=", "==", "!="]
UNOPS = ["-", "~", "abs", "+", "bool", "int", "float", "len", "iter",
         "repr", "str", "hash", "complex", "copy.copy", "copy.deepcopy",
         "pickle.dumps"]
AT_OPS = ["add", "subtract", "multiply", "divide", "maximum", "minimum"]


def targets(mx):
    """(source prefix, callable, name) of every function to call."""
    out = []
    for name in sorted(dir(mx)):
        obj = getattr(mx, name)
        if name.startswith("_") or not callable(obj):
            continue
        if isinstance(obj, mx.Dtype) or name in ("cpu", "gpu"):
            continue
        out.append((f"mx.{name}", obj, name))
    for name in sorted(dir(mx.random)):
        obj = getattr(mx.random, name)
        if not name.startswith("_") and callable(obj):
            out.append((f"mx.random.{name}", obj, name))
    return out


_PARAMS = {}  # id(fn): its parameters (fn kept alive beside them)


def params(fn):
    """fn's parameters, None when it has no signature. Cached: parsing a
    builtin's text signature (inspect.signature) took 40% of a worker's
    time, once per call."""
    hit = _PARAMS.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    try:
        ps = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        ps = None
    _PARAMS[id(fn)] = (fn, ps)
    return ps


_METHODS = []


def array_methods(mx):
    """Public attribute names of mx.array (cached)."""
    if not _METHODS:
        _METHODS.extend(m for m in dir(mx.array) if not m.startswith("_"))
    return _METHODS


class Case:
    """One random call: statements to exec, printable as a reproducer."""

    def __init__(self, kind, **kw):
        self.kind = kind
        self.f = kw  # target/obj/args/kwargs/op/...

    def source(self):
        src = self.body()
        if self.f.get("fail"):  # an injected failure of the n-th new array
            src = f"mx._fail_after({self.f['fail']})\n{src}"
        return src

    def body(self):
        f = self.f
        if self.kind == "call":
            parts = list(f["args"]) + [f"{k}={v}" for k, v in f["kwargs"]]
            return f"r = {f['target']}({', '.join(parts)})"
        if self.kind == "method":
            parts = list(f["args"]) + [f"{k}={v}" for k, v in f["kwargs"]]
            return f"r = mx.array({f['obj']}).{f['name']}({', '.join(parts)})"
        if self.kind == "attr":
            return f"r = mx.array({f['obj']}).{f['name']}"
        if self.kind == "binop":
            return f"r = ({f['a']}) {f['op']} ({f['b']})"
        if self.kind == "unop":
            op = f["op"]
            if op in ("-", "~", "+"):
                return f"r = {op}mx.array({f['a']})"
            return f"r = {op}(mx.array({f['a']}))"
        if self.kind == "getitem":
            return f"r = mx.array({f['a']})[{f['idx']}]"
        if self.kind == "setitem":
            return (f"r = mx.array({f['a']})\n"
                    f"r[{f['idx']}] = {f['v']}")
        if self.kind == "at":
            return f"r = mx.array({f['a']}).at[{f['idx']}].{f['op']}({f['v']})"
        if self.kind == "transform":
            parts = list(f["args"])
            return f"r = {f['t']}({f['fn']}{f['kw']})({', '.join(parts)})"
        raise AssertionError(self.kind)

    # Shrinking: smaller variants of this case, simplest first.
    def variants(self):
        f = self.f
        simple = ["mx.array(1.0)", "mx.array([1, 2])", "0", "None"]
        if f.get("fail"):
            yield Case(self.kind, **dict(f, fail=0))
        for key in ("kwargs",):
            if key in f:
                for i in range(len(f[key])):
                    g = dict(f)
                    g[key] = f[key][:i] + f[key][i + 1:]
                    yield Case(self.kind, **g)
        if "args" in f and f["args"]:
            g = dict(f)
            g["args"] = f["args"][:-1]
            yield Case(self.kind, **g)
        for key in ("args",):
            if key in f:
                for i, a in enumerate(f[key]):
                    for s in simple + shrink_expr(a):
                        if s != a:
                            g = dict(f)
                            g[key] = f[key][:i] + [s] + f[key][i + 1:]
                            yield Case(self.kind, **g)
        if "kwargs" in f:
            for i, (k, v) in enumerate(f["kwargs"]):
                for s in simple + shrink_expr(v):
                    if s != v:
                        g = dict(f)
                        g["kwargs"] = f["kwargs"][:i] + [(k, s)] + f["kwargs"][i + 1:]
                        yield Case(self.kind, **g)
        for key in ("a", "b", "obj", "idx", "v", "fn"):
            if key in f:
                for s in simple + shrink_expr(f[key]):
                    if s != f[key]:
                        g = dict(f)
                        g[key] = s
                        yield Case(self.kind, **g)


def shrink_expr(e):
    """Simpler forms of an expression: layouts and casts dropped."""
    out = []
    m = re.fullmatch(r"\((.*)\)(\.T|\[.*\])", e)
    if m:
        out.append(m.group(1))
    m = re.fullmatch(r"(.*)\.astype\(mx\.\w+\)", e)
    if m:
        out.append(m.group(1))
    m = re.fullmatch(r"(.*)\.reshape\(.*\)", e)
    if m:
        out.append(m.group(1))
    return out


def make_case(rng, mx, tlist, fnames):
    case = pick_case(rng, mx, tlist, fnames)
    # A quarter of the calls also fail their n-th new array (out of
    # memory, injected): the error paths of composite ops and transforms.
    if rng.random() < 0.25:
        case.f["fail"] = rng.randint(1, 12)
    return case


def pick_case(rng, mx, tlist, fnames):
    g = Gen(rng, mx)
    k = rng.random()
    if k < 0.62:
        prefix, fn, name = rng.choice(tlist)
        if name in RARE and rng.random() < 0.97:
            prefix, fn, name = rng.choice(tlist)
        if name in SKIP:
            return pick_case(rng, mx, tlist, fnames)
        ps = params(fn)
        args, kwargs = [], []
        if ps is None:
            args = [g.value() for _ in range(rng.randint(0, 3))]
        else:
            for p in ps:
                if p.kind == p.VAR_POSITIONAL:
                    args += [g.for_param("a") for _ in range(rng.randint(0, 3))]
                elif p.kind == p.VAR_KEYWORD:
                    continue
                elif p.kind == p.KEYWORD_ONLY:
                    if rng.random() < 0.35:
                        kwargs.append((p.name, g.for_param(p.name)))
                elif p.default is p.empty or rng.random() < 0.35:
                    if p.kind == p.POSITIONAL_ONLY or rng.random() < 0.7:
                        if len(kwargs) == 0:
                            args.append(g.for_param(p.name))
                        else:
                            kwargs.append((p.name, g.for_param(p.name)))
                    else:
                        kwargs.append((p.name, g.for_param(p.name)))
            if rng.random() < 0.05:  # an extra or a wrong keyword
                kwargs.append((rng.choice(["axis", "dtype", "stream", "bogus"]),
                               g.value()))
            if rng.random() < 0.05:
                args.append(g.value())
        if name in ("grad", "value_and_grad", "vmap", "checkpoint",
                    "custom_function", "vjp", "jvp") and rng.random() < 0.7:
            return transform_case(g, rng, fnames)
        return Case("call", target=prefix, args=args, kwargs=kwargs)
    if k < 0.72:
        # one operand at least is an array (two Python ints could make a
        # bignum power that never ends)
        a, b = g.array(), g.array() if rng.random() < 0.6 else g.value()
        if not a.startswith(("mx.", "(mx.")):
            # a numpy operand: cmx's at least (np.uint8 array ** [2**64]
            # is numpy's endless bignum power, seed 1 call 944,139)
            a = f"mx.array({a})"
        if rng.random() < 0.3:
            a, b = b, a
        return Case("binop", a=a, b=b, op=rng.choice(BINOPS))
    if k < 0.76:
        return Case("unop", a=g.array(), op=rng.choice(UNOPS))
    if k < 0.84:
        return Case("getitem", a=g.array(), idx=g.choice(INDICES))
    if k < 0.9:
        return Case("setitem", a=g.array(), idx=g.choice(INDICES),
                    v=g.array() if rng.random() < 0.5 else g.value())
    if k < 0.93:
        return Case("at", a=g.array(), idx=g.choice(INDICES),
                    op=rng.choice(AT_OPS), v=g.array() if rng.random() < 0.5
                    else g.choice(EDGE_FLOATS))
    if k < 0.97:
        meths = array_methods(mx)
        name = rng.choice(meths)
        attr = getattr(mx.array, name)
        if not callable(attr):
            return Case("attr", obj=g.array(), name=name)
        args = [g.for_param(p) for p in
                rng.sample(["axis", "dtype", "k", "shape", "keepdims"],
                           rng.randint(0, 2))]
        kwargs = [("stream", g.choice(STREAMS))] if rng.random() < 0.2 else []
        return Case("method", obj=g.array(), name=name, args=args,
                    kwargs=kwargs)
    return transform_case(g, rng, fnames)


def transform_case(g, rng, fnames):
    """grad / vjp / vmap ... of a random composition of one-array ops."""
    body = "x"
    for _ in range(rng.randint(1, 3)):
        body = f"mx.{rng.choice(fnames)}({body})"
    fn = rng.choice([f"lambda x: mx.sum({body})", f"lambda x: {body}",
                     f"lambda x, y: mx.sum({body} * y)"])
    t = rng.choice(["mx.grad", "mx.value_and_grad", "mx.vmap",
                    "mx.checkpoint", "mx.custom_function", "mx.vjp",
                    "mx.jvp", "mx.compile"])
    args = [g.array() for _ in range(2 if "y" in fn else 1)]
    if t in ("mx.vjp", "mx.jvp"):
        cot = ", ".join(g.array() for _ in range(rng.randint(0, 2)))
        return Case("call", target=t, args=[fn, "[" + ", ".join(args) + "]",
                                            f"[{cot}]"], kwargs=[])
    kw = ""
    if t == "mx.vmap" and rng.random() < 0.5:
        kw = f", in_axes={g.choice(AXES)}"
    if t in ("mx.grad", "mx.value_and_grad") and rng.random() < 0.3:
        kw = f", argnums={g.choice(AXES)}"
    return Case("transform", t=t, fn=fn, kw=kw, args=args)


def one_array_functions(mx):
    """Names of functions whose only required parameter is an array."""
    out = []
    for name in sorted(dir(mx)):
        obj = getattr(mx, name)
        if name.startswith("_") or not callable(obj) or isinstance(obj, type):
            continue
        ps = params(obj)
        if not ps:
            continue
        req = [p for p in ps if p.default is p.empty and
               p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(req) == 1 and req[0].name in ("a", "x", "array", "input") and \
                name not in SKIP and name not in RARE:
            out.append(name)
    return out


# ---------------------------------------------------------------- worker

def consume(mx, np, r, depth=0):
    """Evaluates, prints and converts what a call returned."""
    if depth > 2:
        return
    if isinstance(r, mx.array):
        mx.eval(r)
        repr(r)
        # tolist makes a list per row of every level: bound them too
        # (shape (2**31, 0, 5) is empty but makes 2**31 lists)
        rows, p = 0, 1
        for d in r.shape[:-1]:
            p *= d
            rows += p
        if r.size <= 4096 and rows <= 4096:
            r.tolist()
            np.asarray(r)
            if r.size == 1:
                r.item()
    elif isinstance(r, (list, tuple)):
        for x in r[:8]:
            consume(mx, np, x, depth + 1)
    elif isinstance(r, dict):
        for x in list(r.values())[:8]:
            consume(mx, np, x, depth + 1)
    elif callable(r) and depth == 0:
        pass
    else:
        repr(r)


def limit_address_space(sanitize):
    """Caps the worker's memory (not under ASan, whose shadow memory needs
    a huge address space), so a runaway call (unstack of 2**31 rows makes
    2**31 arrays) fails with MemoryError instead of exhausting the machine."""
    if not sanitize:
        import resource

        cap = 8 << 30
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def worker(args):
    import copy  # noqa: F401  (the unops use them)
    import pickle  # noqa: F401
    import warnings

    import numpy as np

    import cmx.core as mx

    warnings.simplefilter("ignore")
    limit_address_space(args.sanitize)
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")
    mx.set_memory_limit(args.memory_mb << 20)
    mx.set_cache_limit(64 << 20)
    tlist = targets(mx)
    fnames = one_array_functions(mx)
    cpu = mx.default_stream(mx.cpu)
    env = {"mx": mx, "np": np, "copy": sys.modules["copy"],
           "pickle": sys.modules["pickle"]}
    cases = args.cases.split(",") if args.cases else None
    indices = [int(c) for c in cases] if cases else \
        range(args.start, args.start + args.count)
    if args.regressions:
        indices = range(-len(REGRESSIONS), 0)
    outcomes = {}  # "returned" or the exception's type name: count
    for i in indices:
        if i < 0:
            src = REGRESSIONS[i]
        else:
            case = make_case(random.Random(f"{args.seed}:{i}"), mx, tlist,
                             fnames)
            src = case.source()
        proto.write(f"S {i}\n")
        ns = dict(env)
        try:
            exec(src, ns)
            consume(mx, np, ns.get("r"))
            outcome = "returned"
        except SystemError as e:
            outcome = "SystemError"
            proto.write(f"E {i} SystemError: {str(e)[:300]!r}\n")
        except BaseException as e:  # noqa: BLE001 - any answer is fine
            outcome = type(e).__name__
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                proto.write(f"E {i} {type(e).__name__} escaped\n")
            if isinstance(e.__context__, SystemError):
                proto.write(f"E {i} SystemError (context): "
                            f"{str(e.__context__)[:300]!r}\n")
        del ns
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        mx._fail_after(0)
        try:  # undo global state a call may have changed
            mx.set_default_device(mx.cpu)
            mx.set_default_stream(cpu)
        except Exception:  # noqa: BLE001
            pass
    proto.write("O " + json.dumps(outcomes) + "\n")
    proto.write("DONE\n")
    proto.flush()


# ---------------------------------------------------------------- driver

def worker_env(build, sanitize):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(os.path.abspath(build), "python") + \
        (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["OPENBLAS_NUM_THREADS"] = "1"
    env.setdefault("CMX_NUM_THREADS", "1")
    if sanitize:
        lib = subprocess.run(["gcc", "-print-file-name=libasan.so"],
                             capture_output=True, text=True).stdout.strip()
        env["LD_PRELOAD"] = lib
        # max_allocation_size_mb: one allocation past 2 GiB (twice cmx's
        # limit in the workers) fails, in place of the release workers'
        # address-space cap (see limit_address_space; ASan needs the address
        # space for shadow), so that numpy making a result of gigabytes
        # from a broadcast array fails instead of running for minutes
        env["ASAN_OPTIONS"] = ("detect_leaks=0:exitcode=86:"
                               "allocator_may_return_null=1:"
                               "max_allocation_size_mb=2048:"
                               "handle_segv=1:abort_on_error=0")
        env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:exitcode=87"
        env["PYTHONMALLOC"] = "malloc"
    return env


OUTCOMES_LOCK = threading.Lock()


def run_worker(opts, start=0, count=0, cases=None, timeout=None,
               outcomes=None):
    """Runs calls in a subprocess. Returns (status, index, detail):
    status 'ok', 'crash', 'hang' or 'systemerror'. Adds the worker's counts
    of outcomes (see worker) to the dict outcomes."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker",
           "--seed", str(opts.seed), "--start", str(start), "--count",
           str(count), "--memory-mb", str(opts.memory_mb)]
    if opts.sanitize:
        cmd.append("--sanitize")
    if cases is not None:
        cmd += ["--cases", ",".join(str(c) for c in cases)]
    if opts.regressions and start < 0:
        cmd += ["--regressions"]
    timeout = timeout or opts.call_timeout
    with tempfile.TemporaryDirectory() as tmp, \
            tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err,
                             cwd=tmp, env=worker_env(opts.build, opts.sanitize),
                             start_new_session=True)
        last, extra, done, buf = None, [], False, b""
        deadline = time.time() + timeout
        while True:
            rl, _, _ = select.select([p.stdout], [], [], 1.0)
            if rl:
                chunk = os.read(p.stdout.fileno(), 65536)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    s = line.decode(errors="replace")
                    if s.startswith("S "):
                        last = int(s[2:])
                        deadline = time.time() + timeout
                    elif s.startswith("E "):
                        extra.append(s)
                    elif s.startswith("O ") and outcomes is not None:
                        with OUTCOMES_LOCK:  # batches run on threads
                            for k, v in json.loads(s[2:]).items():
                                outcomes[k] = outcomes.get(k, 0) + v
                    elif s == "DONE":
                        done = True
            if time.time() > deadline:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                return "hang", last, f"no progress for {timeout} s"
        rc = p.wait()
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        report = re.search(r"(ERROR: AddressSanitizer.*|runtime error:.*|"
                           r"Fatal Python error.*|cmx internal error.*)",
                           stderr)
        if rc != 0 or not done or report:
            why = f"exit code {rc}" if rc >= 0 else \
                f"signal {signal.Signals(-rc).name}"
            tail = "\n".join(stderr.strip().splitlines()[-25:])
            return "crash", last, f"{why}\n{tail}"
        if extra:
            i = int(extra[0].split()[1])
            return "systemerror", i, extra[0]
        return "ok", None, ""


def reproduces(opts, case_obj, status):
    """Runs a Case given as an object (for shrinking)."""
    src = case_obj.source()
    code = ("import numpy as np, copy, pickle, resource\nimport cmx.core as mx\n"
            + ("" if opts.sanitize else
               "resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))\n") +
            f"mx.set_memory_limit({opts.memory_mb} << 20)\n"
            "def consume(r, d=0):\n"
            "    if isinstance(r, mx.array):\n"
            "        mx.eval(r); repr(r)\n"
            "        rows, p = 0, 1\n"
            "        for k in r.shape[:-1]: p *= k; rows += p\n"
            "        if r.size <= 4096 and rows <= 4096:\n"
            "            r.tolist(); np.asarray(r)\n"
            "            if r.size == 1: r.item()\n"
            "    elif isinstance(r, (list, tuple)) and d < 2:\n"
            "        [consume(x, d + 1) for x in r[:8]]\n"
            "    elif isinstance(r, dict) and d < 2:\n"
            "        [consume(x, d + 1) for x in list(r.values())[:8]]\n"
            "try:\n" + "".join("    " + ln + "\n" for ln in src.splitlines()) +
            "    consume(r)\n"
            "except SystemError as e:\n"
            "    print('SYSTEMERROR', e); raise SystemExit(3)\n"
            "except BaseException as e:\n"
            "    if isinstance(e.__context__, SystemError):\n"
            "        print('SYSTEMERROR', e.__context__); raise SystemExit(3)\n")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            p = subprocess.run([sys.executable, "-c", code], cwd=tmp,
                               env=worker_env(opts.build, opts.sanitize),
                               capture_output=True, text=True,
                               timeout=opts.call_timeout)
        except subprocess.TimeoutExpired:
            return status == "hang"
    if status == "hang":
        return False
    if status == "systemerror":
        return p.returncode == 3
    bad = re.search(r"ERROR: AddressSanitizer|runtime error:|Fatal Python "
                    r"error|cmx internal error", p.stderr)
    return (p.returncode not in (0, 3)) or bool(bad)


def shrink(opts, case, status, budget=150):
    """Greedy: keeps the first simpler variant that still fails."""
    tries = 0
    improved = True
    while improved and tries < budget:
        improved = False
        for v in case.variants():
            tries += 1
            if tries > budget:
                break
            if reproduces(opts, v, status):
                case = v
                improved = True
                break
    return case


def render(opts, index):
    """The Case of call index, made by a subprocess (the sanitizer build
    loads only where ASan's runtime is preloaded)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--render",
           "--seed", str(opts.seed), "--cases", str(index)]
    p = subprocess.run(cmd, env=worker_env(opts.build, opts.sanitize),
                       capture_output=True, text=True, timeout=120)
    kind, fields = json.loads(p.stdout.strip().splitlines()[-1])
    for k in ("kwargs",):
        if k in fields:
            fields[k] = [tuple(x) for x in fields[k]]
    return Case(kind, **fields)


def report(opts, status, index, detail):
    case = render(opts, index)
    print(f"\n=== {status} at call {index} (seed {opts.seed}) ===")
    print(detail)
    print("--- the call:\n" + case.source())
    alone = reproduces(opts, case, status)
    if not alone:
        print("--- not reproduced alone: it depends on earlier calls of the "
              f"batch; rerun with --seed {opts.seed} --start "
              f"{max(0, index - opts.batch)} --count {opts.batch}")
        return
    small = shrink(opts, case, status, budget=3 if status == "hang" else 150)
    print("--- minimal reproducer:\n"
          "import numpy as np\nimport cmx.core as mx\n" + small.source())


def slow_only_under_sanitizer(opts, status, index, detail):
    """A call that ran past the timeout under the sanitizer build but
    finishes on the release build (--release-build) is slow, not hung: the
    sanitizer workers have no address-space cap, so a call making billions
    of Python objects (list(a) of a 2**31-element array) runs on where the
    release workers fail with MemoryError at once."""
    rel = opts.release_build
    if status != "hang" or index is None or index < 0 or not rel or \
            not os.path.isdir(os.path.join(rel, "python", "cmx")):
        return False
    case = render(opts, index)
    release = argparse.Namespace(**vars(opts))
    release.build, release.sanitize = rel, False
    if reproduces(release, case, "hang"):
        return False
    print(f"pyfuzz: call {index} ran past {opts.call_timeout:.0f} s under the "
          f"sanitizer but finishes on the release build: slow there, not "
          f"hung:\n{case.source()}", flush=True)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--sanitize", action="store_true")
    ap.add_argument("--release-build", default=os.path.join(ROOT, "build"),
                    help="with --sanitize: a hang is confirmed on this "
                    "build (see slow_only_under_sanitizer)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--call-timeout", type=float, default=60)
    ap.add_argument("--memory-mb", type=int, default=1024)
    ap.add_argument("--max-failures", type=int, default=3)
    ap.add_argument("--cases", default="")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--render", action="store_true")
    ap.add_argument("--progress", action="store_true",
                    help="a line after each batch")
    ap.add_argument("--regressions", action="store_true",
                    help="first run the calls of REGRESSIONS")
    ap.add_argument("--log", help="checkpoint file of a long run: after "
                    "each batch a CHECKPOINT line (calls done, failures, "
                    "seconds), each failure with its reproducer; a run "
                    "given a log that has a checkpoint of the same seed, "
                    "build kind and --start resumes after its last call")
    opts = ap.parse_args()
    if opts.worker:
        worker(opts)
        return 0
    if opts.render:
        import cmx.core as mx

        i = int(opts.cases)
        case = make_case(random.Random(f"{opts.seed}:{i}"), mx, targets(mx),
                         one_array_functions(mx))
        print(json.dumps([case.kind, case.f]))
        return 0
    return run(opts)


def describe(opts, status, idx, detail):
    """The report of one failure (reproducer and its shrinking)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        if idx is not None and idx < 0:
            print(f"\n=== {status} at a regression call ===\n{detail}\n"
                  f"--- the call:\n{REGRESSIONS[idx]}")
        elif idx is None:
            print(f"\n=== {status} before the first call ===\n{detail}")
        else:
            report(opts, status, idx, detail)
    return buf.getvalue()


CHECKPOINT = re.compile(r"CHECKPOINT (\w+) seed (-?\d+) calls (\d+)\.\.(\d+) "
                        r"done .* (\d+) failure\(s\) .* in ([\d.]+) s")


def read_checkpoint(opts, kind):
    """(first call not done, failures, seconds) of the log's last
    checkpoint of this seed and build kind; None without one."""
    last = None
    try:
        with open(opts.log) as f:
            for line in f:
                m = CHECKPOINT.search(line)
                if m and m.group(1) == kind and int(m.group(2)) == opts.seed \
                        and int(m.group(3)) == opts.start:
                    last = m
    except FileNotFoundError:
        return None
    if last is None:
        return None
    return int(last.group(4)) + 1, int(last.group(5)), float(last.group(6))


def run(opts):
    """The driver: batches of calls in workers, failures reported with
    their reproducers; with --log, a checkpoint line after each batch and
    a resumed run (see --log)."""
    t0 = time.time()
    kind = "sanitizer" if opts.sanitize else "release"
    found = []  # (status, index, detail) of this session
    outcomes = {}  # of the calls of batches that finished
    end = opts.start + opts.calls
    first, failures_before, seconds_before = opts.start, 0, 0.0
    if opts.log:
        os.makedirs(os.path.dirname(os.path.abspath(opts.log)), exist_ok=True)
        ck = read_checkpoint(opts, kind)
        if ck:
            first, failures_before, seconds_before = ck
            print(f"pyfuzz: resuming {opts.log} at call {first} "
                  f"({failures_before} failure(s) so far)", flush=True)

    def log(text):
        if opts.log:
            with open(opts.log, "a") as f:
                f.write(text if text.endswith("\n") else text + "\n")

    reported = 0

    def tell(fails):
        """Reports failures now (a long run may stop before its end)."""
        nonlocal reported
        for f in fails:
            if reported < opts.max_failures:
                text = describe(opts, *f)
            else:
                text = f"\n=== {f[0]} at call {f[1]} (seed {opts.seed}; " \
                    "past --max-failures: not shrunk) ===\n" + f[2]
            reported += 1
            print(text, flush=True)
            log(f"FAILURE {kind} seed {opts.seed} call {f[1]}: {f[0]}\n"
                + text)

    def keep(fails):
        if opts.sanitize:  # slow there, not hung: not a failure
            return [f for f in fails
                    if not slow_only_under_sanitizer(opts, *f)]
        return fails

    def run_batch(s, n):
        """Runs calls s..s+n-1, going on after each failure."""
        out = []
        retried = False
        while n > 0 and len(out) < opts.max_failures:
            status, idx, detail = run_worker(opts, s, n, outcomes=outcomes)
            if status == "ok":
                break
            if idx is None and not retried:
                # failed before its first call (the library being rebuilt
                # under a long run: "file too short"): once more, so that
                # the batch's calls are not skipped
                retried = True
                time.sleep(30)
                continue
            out.append((status, idx, detail))
            if idx is None:
                break
            n -= idx + 1 - s
            s = idx + 1
        return out

    jobs = [(s, min(opts.batch, end - s))
            for s in range(first, end, opts.batch)]
    if opts.regressions:
        status, idx, detail = run_worker(opts, -len(REGRESSIONS),
                                         len(REGRESSIONS))
        if status != "ok":
            found.append((status, idx, detail))
            tell(found)
    from concurrent.futures import ThreadPoolExecutor
    ran = 0
    with ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as ex:
        for (s, n), res in zip(jobs, ex.map(lambda j: run_batch(*j), jobs)):
            res = keep(res)
            found += res
            ran += n
            if res:
                tell(res)
            dt = time.time() - t0
            # the batches finish in order: calls start..s+n-1 are done
            log(f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} "
                f"CHECKPOINT {kind} seed {opts.seed} calls {opts.start}.."
                f"{s + n - 1} done ({s + n - opts.start} of {opts.calls}), "
                f"{failures_before + len(found)} failure(s) in all, "
                f"{ran / dt * 60:.0f} calls/min now, in "
                f"{seconds_before + dt:.0f} s")
            if opts.progress and len(jobs) > 1:
                print(f"pyfuzz: {ran}/{end - first} calls, {dt:.0f} s, "
                      f"{ran / dt * 60:.0f} calls/min, {len(found)} "
                      f"failure(s)", flush=True)
                for st, i, _ in res:
                    print(f"pyfuzz:   {st} at call {i}", flush=True)
    dt = time.time() - t0
    total = end - first
    failures = len(found) + failures_before
    print(f"pyfuzz: {total} calls (seed {opts.seed}, calls {first}.."
          f"{end - 1}, {kind} build) in {dt:.1f} s, "
          f"{total / max(dt, 1e-9) * 60:.0f} calls/min; "
          f"{failures} failure(s)")
    if opts.log:
        print(f"pyfuzz: {opts.log}: calls {opts.start}..{end - 1} done "
              f"({opts.calls}), {failures} failure(s) in all, "
              f"{seconds_before + dt:.0f} s")
    counted = sum(outcomes.values())
    if counted:
        top = sorted(outcomes.items(), key=lambda kv: -kv[1])
        print("pyfuzz: outcomes of the calls of finished batches: " +
              ", ".join(f"{k} {100 * v / counted:.1f}%" for k, v in top[:8]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
