"""mx.fast.cuda_kernel: custom CUDA kernels from Python, as MLX has them.

The kernel's body is the user's ``source``; cmx writes its signature: each
input ``name`` as ``const T* __restrict__ name`` (a 0-d input as
``const T& name``), each output as ``T* __restrict__ name``, and, for each
input whose ``name_shape``, ``name_strides`` or ``name_ndim`` the source
uses, its shape (``int`` elements), strides (``long long``, in elements)
and rank. Template arguments become typedefs (dtypes) and ``constexpr``
constants (ints, bools) at the top of the body. ``grid`` counts threads,
not blocks (as ``metal_kernel``): cmx launches ``ceil(grid / threadgroup)``
blocks per axis (a threadgroup larger than the grid along an axis is cut to
it), so a body whose grid is not a multiple of its threadgroup must skip
the threads past its data.

A program is generated and compiled (NVRTC, through cmx's kernel cache:
in memory and on disk) once per signature: the template arguments, the
inputs' dtypes and ranks, the outputs' dtypes, and ``init_value``.
"""

import hashlib
import re

_CTYPES = {
    "bool": "bool", "uint8": "unsigned char", "uint16": "unsigned short",
    "uint32": "unsigned int", "uint64": "unsigned long long",
    "int8": "signed char", "int16": "short", "int32": "int",
    "int64": "long long", "float16": "__half", "bfloat16": "__nv_bfloat16",
    "float32": "float", "float64": "double",
}

# Parameter kinds of cmx.core._cuda_kernel_apply.
_IN, _OUT, _SHAPE, _STRIDES, _NDIM, _SCALAR = range(6)

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _ctype(core, dt, what):
    name = str(dt).rsplit(".", 1)[-1]
    if not isinstance(dt, core.Dtype) or name not in _CTYPES:
        raise ValueError(
            f"[cuda_kernel] {what}: dtype {dt} has no CUDA type in "
            "cuda_kernel (complex64 is not supported)")
    return _CTYPES[name]


def _uses(source, word):
    return re.search(r"\b" + re.escape(word) + r"\b", source) is not None


class CudaKernel:
    """A custom CUDA kernel (see ``mx.fast.cuda_kernel``). Call it with
    ``inputs``, ``grid``, ``threadgroup``, ``output_shapes`` and
    ``output_dtypes`` (and optionally ``template``, ``init_value``,
    ``verbose``, ``stream``); it returns the list of outputs."""

    def __init__(self, core, name, input_names, output_names, source,
                 header="", ensure_row_contiguous=True, atomic_outputs=False,
                 shared_memory=0):
        for n in [name, *input_names, *output_names]:
            if not isinstance(n, str) or not _IDENT.match(n):
                raise ValueError(
                    f"[cuda_kernel] {n!r} is not a valid C identifier")
        if not output_names:
            raise ValueError("[cuda_kernel] a kernel needs at least one "
                             "output")
        self._core = core
        self.name = name
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.source = source
        self.header = header
        self.ensure_row_contiguous = bool(ensure_row_contiguous)
        self.atomic_outputs = bool(atomic_outputs)
        self.shared_memory = int(shared_memory)
        self._programs = {}  # signature -> (source, entry, specs)

    # ------------------------------------------------------------ source

    def _program(self, inputs, template, output_dtypes, has_init):
        core = self._core
        key = (tuple((n, str(v)) for n, v in template),
               tuple((str(a.dtype), a.ndim) for a in inputs),
               tuple(str(d) for d in output_dtypes), has_init)
        prog = self._programs.get(key)
        if prog is not None:
            return prog
        digest = hashlib.sha1(repr((self.source, self.header, key))
                              .encode()).hexdigest()[:12]
        entry = f"cmx_ck_{self.name}_{digest}"
        params, specs, prologue = [], [], []
        for i, (n, a) in enumerate(zip(self.input_names, inputs)):
            t = _ctype(core, a.dtype, f"input {n}")
            if a.ndim == 0:
                params.append(f"const {t}* __restrict__ {n}__ptr")
                prologue.append(f"  const {t}& {n} = *{n}__ptr;")
            else:
                params.append(f"const {t}* __restrict__ {n}")
            specs.append((_IN, i))
            nd = max(a.ndim, 1)
            if _uses(self.source, f"{n}_shape"):
                params.append(f"const cmx_ck_dims<int, {nd}> {n}_shape")
                specs.append((_SHAPE, i))
            if _uses(self.source, f"{n}_strides"):
                params.append(
                    f"const cmx_ck_dims<long long, {nd}> {n}_strides")
                specs.append((_STRIDES, i))
            if _uses(self.source, f"{n}_ndim"):
                params.append(f"const int {n}_ndim")
                specs.append((_NDIM, i))
        otypes = []
        for j, (n, d) in enumerate(zip(self.output_names, output_dtypes)):
            t = _ctype(core, d, f"output {n}")
            otypes.append(t)
            params.append(f"{t}* __restrict__ {n}")
            specs.append((_OUT, j))
        consts = []
        for n, v in template:
            if not isinstance(n, str) or not _IDENT.match(n):
                raise ValueError(
                    f"[cuda_kernel] template name {n!r} is not a valid C "
                    "identifier")
            if isinstance(v, core.Dtype):
                consts.append(f"  typedef {_ctype(core, v, n)} {n};")
            elif isinstance(v, bool):
                consts.append(
                    f"  constexpr bool {n} = {'true' if v else 'false'};")
            elif isinstance(v, int):
                consts.append(f"  constexpr int {n} = {v};")
            else:
                raise ValueError(
                    f"[cuda_kernel] template argument {n} must be a Dtype, "
                    f"an int or a bool, got {type(v).__name__}")
        types = set(otypes) | {_ctype(core, a.dtype, "input") for a in inputs}
        types |= {_ctype(core, v, n) for n, v in template
                  if isinstance(v, core.Dtype)}
        text = self.source + self.header
        includes = []
        if "__half" in types or "__half" in text:
            includes.append("#include <cuda_fp16.h>")
        if "__nv_bfloat16" in types or "bfloat16" in text:
            includes.append("#include <cuda_bf16.h>")
        if "cooperative_groups" in text:
            includes.append("#include <cooperative_groups.h>")
        lines = [f"// mx.fast.cuda_kernel '{self.name}' (generated by cmx)",
                 *includes,
                 "template <typename V, int N> struct cmx_ck_dims {",
                 "  V v[N];",
                 "  __device__ V operator[](int i) const { return v[i]; }",
                 "};",
                 self.header,
                 f'extern "C" __global__ void {entry}(',
                 "    " + ",\n    ".join(params) + ") {",
                 *consts, *prologue,
                 self.source,
                 "}"]
        if has_init:
            for j, t in enumerate(otypes):
                lines += [
                    f'extern "C" __global__ void {entry}_init{j}({t}* o, '
                    "long long n, double v) {",
                    "  for (long long i = blockIdx.x * (long long)blockDim.x"
                    " + threadIdx.x; i < n; i += (long long)gridDim.x * "
                    f"blockDim.x) o[i] = {t}((float)v);",
                    "}"]
        prog = ("\n".join(lines) + "\n", entry, specs)
        self._programs[key] = prog
        return prog

    # ------------------------------------------------------------ call

    def _prepare(self, inputs, template, output_dtypes, init_value, stream):
        core = self._core
        if len(inputs) != len(self.input_names):
            raise ValueError(
                f"[cuda_kernel] {self.name} takes {len(self.input_names)} "
                f"inputs ({', '.join(self.input_names)}), got {len(inputs)}")
        arrs = []
        for x in inputs:
            a = x if isinstance(x, core.array) else core.array(x)
            if self.ensure_row_contiguous and a.ndim > 0:
                a = core.contiguous(a, stream=stream)
            arrs.append(a)
        template = list(template or [])
        return arrs, template, self._program(arrs, template, output_dtypes,
                                             init_value is not None)

    def __call__(self, *, inputs, output_shapes, output_dtypes, grid,
                 threadgroup, template=None, init_value=None, verbose=False,
                 stream=None):
        core = self._core
        if len(output_shapes) != len(self.output_names) or \
                len(output_dtypes) != len(self.output_names):
            raise ValueError(
                f"[cuda_kernel] {self.name} has {len(self.output_names)} "
                "outputs: give as many output_shapes and output_dtypes")
        s = stream if stream is not None else core.default_device()
        if isinstance(s, core.Stream):
            s = s.device
        kind = s.type if isinstance(s, core.Device) else s
        if kind != core.gpu:
            raise ValueError(
                f"[cuda_kernel] {self.name}: custom CUDA kernels run only on "
                "the gpu; pass stream=mx.gpu (or make it the default device)")
        if not core.is_available(core.gpu):
            raise ValueError(
                f"[cuda_kernel] {self.name}: the gpu is not available on "
                "this machine (no CUDA driver or device)")
        arrs, template, (src, entry, specs) = self._prepare(
            inputs, template, output_dtypes, init_value, stream)
        if verbose:
            print(src)
        return core._cuda_kernel_apply(
            self.name, src, entry, arrs, specs, tuple(grid),
            tuple(threadgroup), self.shared_memory,
            [tuple(sh) for sh in output_shapes], list(output_dtypes),
            None if init_value is None else float(init_value), stream)

    def compile(self, *, inputs, output_dtypes, template=None,
                init_value=None, arch=0):
        """cmx only: generates the program for these inputs (arrays or
        dtype-shaped stand-ins) and compiles it with NVRTC without running
        it (no GPU needed); raises RuntimeError with NVRTC's log on a
        compile error. Returns the generated source."""
        arrs, _, (src, _, _) = self._prepare(inputs, template, output_dtypes,
                                             init_value, None)
        self._core._cuda_compile_check(self.name, src, arch)
        return src


class MetalKernel:
    """``mx.fast.metal_kernel``'s callable. cmx has no Metal back-end (as
    MLX off Apple silicon): it checks its arguments as MLX does, and
    calling it raises RuntimeError. ``mx.fast.cuda_kernel`` takes the same
    arguments with a CUDA body."""

    def __init__(self, name, input_names, output_names, source, header="",
                 ensure_row_contiguous=True, atomic_outputs=False,
                 compile_options=None):
        for what, names in (("input_names", input_names),
                            ("output_names", output_names)):
            if isinstance(names, str) or not all(
                    isinstance(n, str) for n in names):
                raise TypeError(f"[metal_kernel] {what} must be a sequence "
                                "of str")
        if not isinstance(name, str) or not isinstance(source, str) or \
                not isinstance(header, str):
            raise TypeError("[metal_kernel] name, source and header must be "
                            "str")
        if not output_names:
            raise ValueError(
                "[metal_kernel] Must specify at least one output.")
        if compile_options is not None:
            if not isinstance(compile_options, dict):
                raise ValueError(
                    "[metal_kernel] Expected `compile_options` to be a dict.")
            mode = compile_options.get("math_mode", "safe")
            if mode not in ("safe", "relaxed", "fast"):
                raise ValueError("[metal_kernel] Expected math_mode to be "
                                 "'safe', 'relaxed', or 'fast'.")
        self.name = name
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.source = source
        self.header = header

    def __call__(self, *, inputs, output_shapes, output_dtypes, grid,
                 threadgroup, template=None, init_value=None, verbose=False,
                 stream=None):
        raise RuntimeError(
            "[metal_kernel] No Metal back-end. (cmx runs custom kernels on "
            "CUDA GPUs: see mx.fast.cuda_kernel, which takes the same "
            "arguments with a CUDA body.)")


def _scalar_bytes(v):
    import struct

    if isinstance(v, bool):
        return struct.pack("<?", v)
    if isinstance(v, int):
        if not -(1 << 31) <= v < (1 << 31):
            raise ValueError(
                f"[precompiled_cuda_kernel] int scalar {v} does not fit the "
                "kernel's int (32 bits)")
        return struct.pack("<i", v)
    if isinstance(v, float):
        return struct.pack("<f", v)
    raise ValueError(
        "[precompiled_cuda_kernel] Invalid scalar argument type. Received "
        f"{type(v).__name__} but must be one of bool, int or float")


def precompiled_kernel(core, *, name, compiled_source, inputs, output_shapes,
                       output_dtypes, scalars, grid, threadgroup,
                       shared_memory=0, init_value=None,
                       ensure_row_contiguous=False, stream=None):
    op = "precompiled_cuda_kernel"
    if not isinstance(name, str) or not _IDENT.match(name):
        raise ValueError(f"[{op}] name {name!r} must be the kernel's symbol "
                         "(a C identifier)")
    if not isinstance(compiled_source, (bytes, bytearray)):
        raise TypeError(f"[{op}] compiled_source must be bytes (PTX, a CUBIN "
                        "or a fatbin)")
    if not compiled_source:
        raise ValueError(f"[{op}] compiled_source is empty")
    if len(output_shapes) != len(output_dtypes) or not output_shapes:
        raise ValueError(f"[{op}] give as many output_shapes as "
                         "output_dtypes (at least one)")
    sc = [_scalar_bytes(v) for v in scalars]
    s = stream if stream is not None else core.default_device()
    dev = s.device if isinstance(s, core.Stream) else s
    kind = dev.type if isinstance(dev, core.Device) else dev
    if kind != core.gpu:
        raise ValueError(f"[{op}] {name}: CUDA kernels run only on the gpu; "
                         "pass stream=mx.gpu (or make it the default device)")
    if not core.is_available(core.gpu):
        raise ValueError(f"[{op}] {name}: the gpu is not available on this "
                         "machine (no CUDA driver or device)")
    arrs = []
    for x in inputs:
        a = x if isinstance(x, core.array) else core.array(x)
        if ensure_row_contiguous and a.ndim > 0:
            a = core.contiguous(a, stream=stream)
        arrs.append(a)
    specs = [(_IN, i) for i in range(len(arrs))]
    specs += [(_OUT, j) for j in range(len(output_shapes))]
    specs += [(_SCALAR, i) for i in range(len(sc))]
    fill_src, fill_entry = "", None
    if init_value is not None:
        fill_entry = "cmx_pck_" + hashlib.sha1(name.encode()).hexdigest()[:12]
        lines = []
        for j, d in enumerate(output_dtypes):
            t = _ctype(core, d, f"output {j}")
            if t in ("__half", "__nv_bfloat16"):
                lines.insert(0, "#include <cuda_fp16.h>\n#include "
                             "<cuda_bf16.h>")
            lines.append(
                f'extern "C" __global__ void {fill_entry}_init{j}({t}* o, '
                "long long n, double v) {\n  for (long long i = blockIdx.x * "
                "(long long)blockDim.x + threadIdx.x; i < n; i += (long long)"
                f"gridDim.x * blockDim.x) o[i] = {t}((float)v);\n}}")
        fill_src = "\n".join(lines) + "\n"
    return core._cuda_kernel_apply(
        name, fill_src, name, arrs, specs, tuple(grid), tuple(threadgroup),
        int(shared_memory), [tuple(sh) for sh in output_shapes],
        list(output_dtypes),
        None if init_value is None else float(init_value), stream,
        bytes(compiled_source), sc, fill_entry)


def install(core, fast):
    def cuda_kernel(name, input_names, output_names, source, header="",
                    ensure_row_contiguous=True, atomic_outputs=False,
                    shared_memory=0):
        """A custom CUDA kernel compiled at run time from ``source``, the
        body of a function whose signature cmx writes (MLX's
        ``mx.fast.cuda_kernel``; see cmx._fast_cuda for the signature).

        Args:
            name (str): Name of the kernel.
            input_names (list[str]): Parameter names of the inputs.
            output_names (list[str]): Parameter names of the outputs.
            source (str): The kernel's body.
            header (str): Source put before the kernel (helpers,
              includes).
            ensure_row_contiguous (bool): Make the inputs row contiguous
              first. Default: ``True``.
            atomic_outputs (bool): Accepted for ``metal_kernel``'s
              signature: outputs are plain pointers, which CUDA's atomic
              functions (``atomicAdd``) take as they are.
            shared_memory (int): Bytes of dynamic shared memory per block.

        Returns:
            Callable: ``kernel(*, inputs, template=None, grid, threadgroup,
            output_shapes, output_dtypes, init_value=None, verbose=False,
            stream=None) -> list[array]``.
        """
        return CudaKernel(core, name, input_names, output_names, source,
                          header, ensure_row_contiguous, atomic_outputs,
                          shared_memory)

    fast.cuda_kernel = cuda_kernel

    def metal_kernel(name, input_names, output_names, source, header="",
                     ensure_row_contiguous=True, atomic_outputs=False,
                     compile_options=None):
        """A custom Metal kernel (MLX's ``mx.fast.metal_kernel``). cmx has
        no Metal back-end, as MLX off Apple silicon: the arguments are
        checked as MLX checks them, and calling the kernel raises
        RuntimeError. Use ``mx.fast.cuda_kernel`` (same arguments, a CUDA
        body) for custom GPU kernels.

        Returns:
            Callable: ``kernel(*, inputs, output_shapes, output_dtypes,
            grid, threadgroup, template=None, init_value=None,
            verbose=False, stream=None)``, which raises RuntimeError.
        """
        return MetalKernel(name, input_names, output_names, source, header,
                           ensure_row_contiguous, atomic_outputs,
                           compile_options)

    def precompiled_cuda_kernel(*, name, compiled_source, inputs,
                                output_shapes, output_dtypes, scalars, grid,
                                threadgroup, shared_memory=0,
                                init_value=None, ensure_row_contiguous=False,
                                stream=None):
        """Run a precompiled CUDA kernel from PTX, a CUBIN or a fatbin
        (MLX's ``mx.fast.precompiled_cuda_kernel``).

        The kernel ``name`` (its symbol in ``compiled_source``: declare it
        ``extern "C"``, or give the mangled name) takes, in order, a
        pointer to each input's data, a pointer to each output, then each
        scalar by value (bool: 1 byte, int: a 32-bit int, float: a 32-bit
        float).

        Args:
            name (str): The kernel's symbol.
            compiled_source (bytes): PTX text, a CUBIN or a fatbin.
            inputs (list[array]): The inputs (as they are laid out unless
              ``ensure_row_contiguous``).
            output_shapes (list[Sequence[int]]): The outputs' shapes.
            output_dtypes (list[Dtype]): The outputs' dtypes.
            scalars (list[bool | int | float]): Scalar arguments.
            grid (tuple[int, int, int]): The grid, in threads (as
              ``metal_kernel``): ``ceil(grid / threadgroup)`` blocks.
            threadgroup (tuple[int, int, int]): The block size.
            shared_memory (int): Bytes of dynamic shared memory.
            init_value (float, optional): A value every output is filled
              with before the kernel runs (uninitialized by default).
            ensure_row_contiguous (bool): Make the inputs row contiguous
              first. Default: ``False``.

        Returns:
            list[array]: The outputs.
        """
        return precompiled_kernel(
            core, name=name, compiled_source=compiled_source, inputs=inputs,
            output_shapes=output_shapes, output_dtypes=output_dtypes,
            scalars=scalars, grid=grid, threadgroup=threadgroup,
            shared_memory=shared_memory, init_value=init_value,
            ensure_row_contiguous=ensure_row_contiguous, stream=stream)

    fast.metal_kernel = metal_kernel
    fast.precompiled_cuda_kernel = precompiled_cuda_kernel
