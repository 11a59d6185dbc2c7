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
_IN, _OUT, _SHAPE, _STRIDES, _NDIM = range(5)

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
