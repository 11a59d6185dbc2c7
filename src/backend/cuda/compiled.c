/* The GPU's code generator for fused regions (primitives/compiled.h): CUDA
 * source from the op table, built by NVRTC through the kernel cache, and
 * the Compiled primitive's GPU kernel.
 *
 * The generated source is a module like the eager elementwise ones:
 * common.cu, the CUDA binding of the scalar semantics (ew_bind.cu,
 * ew_scalar.h), then, for each step, the macros cmx__ew_prelude writes for
 * its (op, dtype) with the prefix S<step>_ (the rows the eager kernels are
 * instantiated from: no op is written again here), and one element
 * function computing every step in its dtype's storage type, with the
 * region's 0-d constants baked in as literals. NVRTC contracts
 * multiply-adds as it does for the eager kernels, also across steps, so
 * fused float results may differ from eager ones in the last bits;
 * integer, bool and comparison results are exact.
 *
 * Each distinct source is a one-variant kernel family of its own (kept for
 * the life of the process, not in the family registry), so compiling, the
 * disk cache (keyed by the source), the module cache and launching are the
 * built-in kernels' own (nvrtc.c, module.c, encoder.c). Its kernels:
 *   cmx_fk_c      every input contiguous or one broadcast value (bit k of
 *                 a mask argument: argument k), outputs contiguous: V
 *                 elements a thread per step through 16-byte vector
 *                 accesses when every pointer is aligned, then a tail
 *   cmx_fk_g32/64 any input strides over the collapsed dims (at most the
 *                 region's rank, a constant of the source), 32- or
 *                 64-bit index arithmetic
 * Sizes, strides and pointers are kernel arguments, so one kernel serves
 * every shape of a shapeless function. Outputs are contiguous: fresh, or
 * an input's buffer donated in place (every input element is read before
 * the output element at the same index is written).
 */
#include "primitives/compiled.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/backend.h"
#include "core/layout.h"
#include "primitives/ew_ops.h"
#include "primitives/registry.h"

enum { K_CONTIG = 0, K_G32 = 1, K_G64 = 2, K_CONTIG_NP = 3 };
static const char* const k_kernels[] = {"cmx_fk_c", "cmx_fk_g32", "cmx_fk_g64",
                                        "cmx_fk_c_np", NULL};
/* Threads a block (every kernel). */
#define FK_THREADS 256
/* Devices whose pipelined grid a family keeps (others ask each launch). */
#define FK_DEVICES 8
static const char* const k_preamble[] = {"ew_bind", "ew_scalar", NULL};

/* The most array arguments of one kernel (bits of the broadcast mask). */
#define MAX_ARRAYS 64

/* Variant 0: real dtypes only; 1: complex64 functions (libcu++). */
static bool fk_variant(int v, cmx__gpu_variant* out) {
  if (v < 0 || v > 1) return false;
  snprintf(out->name, sizeof out->name, v ? "compiled_complex" : "compiled");
  snprintf(out->prelude, sizeof out->prelude, "%s",
           v ? "#define CMX_EW_Z_FUNCTIONS\n" : "");
  out->flags = v ? CMX__GPU_NEEDS_CCCL : 0;
  return true;
}

/* A generated kernel family: one per distinct source. */
typedef struct fk {
  cmx__gpu_family fam; /* first: kernels point to it */
  char* source;
  uint64_t hash;
  int variant;
  int vec;  /* V: elements a thread per vector access */
  int ndim; /* D: the most collapsed dims the strided kernels take */
  int narr; /* array arguments (at least 1: the layout's first dim) */
  /* cmx_fk_c's grid on devices 0 to FK_DEVICES - 1 (0: not asked yet) */
  _Atomic unsigned grid[FK_DEVICES];
  struct fk* next;
} fk;

static struct {
  pthread_mutex_t lock;
  fk* list;
} g_fks = {.lock = PTHREAD_MUTEX_INITIALIZER};
static _Atomic uint64_t st_built, st_found;

/* ---------------- the source ---------------- */

/* The type of argument j's elements. */
static cmx_dtype arg_dtype(const cmx__fused_program* prog, int j) {
  for (int i = 0; i < prog->nin; i++)
    if (!prog->in[i].konst && prog->in[i].arg == j) return prog->in[i].dtype;
  return CMX_FLOAT32; /* not reached: every argument is an input */
}

static cmx_dtype out_dtype(const cmx__fused_program* prog, int k) {
  return prog->steps[prog->out[k]].dtype;
}

static bool uses_complex(const cmx__fused_program* prog) {
  for (int s = 0; s < prog->nsteps; s++)
    if (prog->steps[s].dtype == CMX_COMPLEX64 ||
        prog->steps[s].in_dtype == CMX_COMPLEX64)
      return true;
  return false;
}

/* The contiguous kernels' shapes. Pipelined (cmx_fk_c): U vectors of
 * every input a thread in flight while it computes the previous U (loads
 * of the next group issued before the math of this one), so a region
 * whose math is heavy (gelu's erf) still keeps the card's memory busy;
 * U = 2 for one input, 1 for more (the in-flight registers double), and
 * no prefetch past 8 inputs (registers); taken only with
 * CMX_CUDA_FUSED_PIPELINE=1 (see pipelined()). Plain (cmx_fk_c_np, the
 * default): U
 * vectors loaded, then computed; 4, 2 or 1 by the arrays of the region. */
static int unroll_of(const cmx__fused_program* prog) {
  return prog->nargs <= 1 ? 2 : 1;
}
static bool prefetch_of(const cmx__fused_program* prog) {
  return prog->nargs <= 8;
}
static int unroll_plain_of(const cmx__fused_program* prog) {
  /* CMX_CUDA_FUSED_UNROLL=1|2|4|8 sets U for every region (a tuning
   * experiment; read once): the grid-stride loop covers the array at any
   * U, so only the speed changes */
  static _Atomic int forced = -1;
  int f = atomic_load(&forced);
  if (f < 0) {
    const char* e = getenv("CMX_CUDA_FUSED_UNROLL");
    int v = e ? atoi(e) : 0;
    f = v == 1 || v == 2 || v == 4 || v == 8 ? v : 0;
    atomic_store(&forced, f);
  }
  if (f) return f;
  int na = prog->nargs + prog->nout;
  return na <= 8 ? 4 : na <= 16 ? 2 : 1;
}

/* V: 16 bytes of the widest array. */
static int vec_of(const cmx__fused_program* prog) {
  size_t widest = 1;
  for (int j = 0; j < prog->nargs; j++)
    if (cmx_dtype_size(arg_dtype(prog, j)) > widest)
      widest = cmx_dtype_size(arg_dtype(prog, j));
  for (int k = 0; k < prog->nout; k++)
    if (cmx_dtype_size(out_dtype(prog, k)) > widest)
      widest = cmx_dtype_size(out_dtype(prog, k));
  return widest >= 16 ? 1 : (int)(16 / widest);
}

/* The expression of step operand o in the element function. */
static void operand(const cmx__fused_program* prog, int o, char* out,
                    size_t size) {
  if (o >= 0 && prog->in[o].konst)
    snprintf(out, size, "k%d", o);
  else if (o >= 0)
    snprintf(out, size, "x%d", prog->in[o].arg);
  else
    snprintf(out, size, "t%d", prog->nin + CMX__FUSED_STEP(o));
}

/* cmx_fk_elem(x0, ..., y0&, ...): every step of one element. */
static void emit_elem(cmx__strbuf* b, const cmx__fused_program* prog) {
  for (int s = 0; s < prog->nsteps; s++)
    cmx__fused_emit_step_defs(b, prog, s, prog->nin + s,
                              "static __device__ const");
  cmx__strbuf_puts(b, "__device__ __forceinline__ void cmx_fk_elem(");
  for (int j = 0; j < prog->nargs; j++)
    cmx__strbuf_printf(b, "%sconst %s x%d", j ? ", " : "",
                       cmx__fused_storage(arg_dtype(prog, j)), j);
  for (int k = 0; k < prog->nout; k++)
    cmx__strbuf_printf(b, "%s%s& y%d", k || prog->nargs ? ", " : "",
                       cmx__fused_storage(out_dtype(prog, k)), k);
  cmx__strbuf_puts(b, ") {\n");
  for (int i = 0; i < prog->nin; i++)
    if (prog->in[i].konst) cmx__fused_emit_const(b, prog, i);
  for (int s = 0; s < prog->nsteps; s++) {
    const cmx__fused_step* st = &prog->steps[s];
    char a[3][24];
    for (int k = 0; k < st->nin; k++) operand(prog, st->in[k], a[k], 24);
    cmx__fused_emit_step(b, prog, s, prog->nin + s, a, "  ");
  }
  for (int k = 0; k < prog->nout; k++)
    cmx__strbuf_printf(b, "  y%d = t%d;\n", k, prog->nin + prog->out[k]);
  cmx__strbuf_puts(b, "}\n\n");
}

/* Declarations of the kernels' typed pointers (a<j>, o<k>). */
static void emit_pointers(cmx__strbuf* b, const cmx__fused_program* prog) {
  for (int j = 0; j < prog->nargs; j++) {
    const char* t = cmx__fused_storage(arg_dtype(prog, j));
    cmx__strbuf_printf(b, "  const %s* a%d = (const %s*)P.x[%d];\n", t, j, t,
                       j);
  }
  for (int k = 0; k < prog->nout; k++) {
    const char* t = cmx__fused_storage(out_dtype(prog, k));
    cmx__strbuf_printf(b, "  %s* o%d = (%s*)P.y[%d];\n", t, k, t, k);
  }
}

/* A call of cmx_fk_elem: argument j as fmt_x (with j, j), output k as
 * fmt_y (with k). */
static void emit_call(cmx__strbuf* b, const cmx__fused_program* prog,
                      const char* indent, const char* fmt_x,
                      const char* fmt_y) {
  cmx__strbuf_printf(b, "%scmx_fk_elem(", indent);
  char e[96];
  for (int j = 0; j < prog->nargs; j++) {
    snprintf(e, sizeof e, fmt_x, j, j, j);
    cmx__strbuf_printf(b, "%s%s", j ? ", " : "", e);
  }
  for (int k = 0; k < prog->nout; k++) {
    snprintf(e, sizeof e, fmt_y, k);
    cmx__strbuf_printf(b, "%s%s", k || prog->nargs ? ", " : "", e);
  }
  cmx__strbuf_puts(b, ");\n");
}

/* cmx_fk_in<U>: U vectors of every input; cmx_fk_load: the group of
 * vectors i, i + nt, ... (those below nv) of the inputs not broadcast. */
static void emit_group(cmx__strbuf* b, const cmx__fused_program* prog) {
  cmx__strbuf_puts(b, "template <int U>\nstruct cmx_fk_in {\n");
  for (int j = 0; j < prog->nargs; j++)
    cmx__strbuf_printf(b, "  cmx_fk_vec<%s> v%d[U];\n",
                       cmx__fused_storage(arg_dtype(prog, j)), j);
  if (!prog->nargs) cmx__strbuf_puts(b, "  char unused;\n");
  cmx__strbuf_puts(
      b,
      "};\ntemplate <int U>\n__device__ __forceinline__ void cmx_fk_load("
      "cmx_fk_in<U>& r,\n    const cmx_fk_ptrs& P, unsigned long long bm, "
      "long long i, long long nt,\n    long long nv) {\n"
      "#pragma unroll\n  for (int u = 0; u < U; u++) {\n"
      "    const long long j = i + u * nt;\n    if (j >= nv) break;\n");
  for (int j = 0; j < prog->nargs; j++) {
    const char* t = cmx__fused_storage(arg_dtype(prog, j));
    cmx__strbuf_printf(
        b,
        "    if (!((bm >> %d) & 1))\n"
        "      r.v%d[u] = ((const cmx_fk_vec<%s>*)P.x[%d])[j];\n",
        j, j, t, j);
  }
  if (!prog->nargs) cmx__strbuf_puts(b, "    (void)r, (void)P, (void)bm;\n");
  cmx__strbuf_puts(b, "  }\n}\n\n");
}

/* cmx_fk_contig<U, PF>: every input contiguous or broadcast (bit j of bm),
 * the first nv * V elements as vectors (U a thread per trip; PF: the next
 * trip's loaded before this one's math), the rest one by one. An output
 * may be an input's buffer: each thread reads an index before writing
 * it, and only it reads or writes that index. */
static void emit_contig(cmx__strbuf* b, const cmx__fused_program* prog) {
  emit_group(b, prog);
  cmx__strbuf_puts(b,
                   "template <int U, bool PF>\n__device__ __forceinline__ void "
                   "cmx_fk_contig(const cmx_fk_ptrs& P, long long n,\n"
                   "    long long nv, unsigned long long bm) {\n"
                   "  const long long t0 = cmx_tid(), nt = cmx_nthreads(), "
                   "step = U * nt;\n");
  emit_pointers(b, prog);
  cmx__strbuf_puts(b, "  cmx_fk_in<U> cur, nxt;\n");
  for (int j = 0; j < prog->nargs; j++) {
    const char* t = cmx__fused_storage(arg_dtype(prog, j));
    /* a broadcast input: its value in every lane, never loaded again */
    cmx__strbuf_printf(b,
                       "  const bool b%d = (bm >> %d) & 1;\n"
                       "  const %s s%d = b%d ? a%d[0] : %s();\n"
                       "  if (b%d) {\n#pragma unroll\n"
                       "    for (int u = 0; u < U; u++)\n#pragma unroll\n"
                       "      for (int k = 0; k < CMX_FK_V; k++)\n"
                       "        cur.v%d[u].e[k] = nxt.v%d[u].e[k] = s%d;\n"
                       "  }\n",
                       j, j, t, j, j, j, t, j, j, j, j);
  }
  cmx__strbuf_puts(
      b,
      "  if (PF) cmx_fk_load<U>(cur, P, bm, t0, nt, nv);\n"
      "  for (long long i = t0; i < nv; i += step) {\n"
      "    if (PF)\n      cmx_fk_load<U>(nxt, P, bm, i + step, nt, nv);\n"
      "    else\n      cmx_fk_load<U>(cur, P, bm, i, nt, nv);\n"
      "#pragma unroll\n    for (int u = 0; u < U; u++) {\n"
      "      const long long j = i + u * nt;\n"
      "      if (j >= nv) break;\n");
  for (int k = 0; k < prog->nout; k++)
    cmx__strbuf_printf(b, "      cmx_fk_vec<%s> w%d;\n",
                       cmx__fused_storage(out_dtype(prog, k)), k);
  cmx__strbuf_puts(
      b, "#pragma unroll\n      for (int k = 0; k < CMX_FK_V; k++)\n");
  emit_call(b, prog, "        ", "cur.v%d[u].e[k]", "w%d.e[k]");
  for (int k = 0; k < prog->nout; k++)
    cmx__strbuf_printf(b, "      ((cmx_fk_vec<%s>*)o%d)[j] = w%d;\n",
                       cmx__fused_storage(out_dtype(prog, k)), k, k);
  cmx__strbuf_puts(b, "    }\n    if (PF) cur = nxt;\n  }\n");
  cmx__strbuf_puts(
      b, "  for (long long i = nv * CMX_FK_V + t0; i < n; i += nt)\n");
  emit_call(b, prog, "    ", "(b%d ? s%d : a%d[i])", "o%d[i]");
  cmx__strbuf_puts(b, "}\n");
  static const char* const entry[2][2] = {
      {"cmx_fk_c", "CMX_FK_U, CMX_FK_PF"},
      {"cmx_fk_c_np", "CMX_FK_U_NP, false"}};
  for (int e = 0; e < 2; e++)
    cmx__strbuf_printf(
        b,
        "#if !defined(CMX_ONLY) || defined(CMX_ONLY_%s)\n"
        "extern \"C\" __global__ void __launch_bounds__(CMX_FK_THREADS)\n"
        "%s(const cmx_fk_ptrs P, long long n, long long nv,\n"
        "    unsigned long long bm) {\n"
        "  CMX_GRID_WAIT();\n"
        "  cmx_fk_contig<%s>(P, n, nv, bm);\n}\n#endif\n",
        entry[e][0], entry[e][0], entry[e][1]);
  cmx__strbuf_puts(b, "\n");
}

static void emit_strided(cmx__strbuf* b, const cmx__fused_program* prog) {
  cmx__strbuf_puts(b,
                   "template <typename I>\n__device__ __forceinline__ void "
                   "cmx_fk_strided(const cmx_fk_ptrs& P, I n,\n"
                   "    const cmx_fk_layout& L) {\n");
  emit_pointers(b, prog);
  cmx__strbuf_puts(b,
                   "  const I nt = (I)cmx_nthreads();\n"
                   "  for (I i = (I)cmx_tid(); i < n; i += nt) {\n"
                   "    I r = i");
  for (int j = 0; j < prog->nargs; j++) cmx__strbuf_printf(b, ", f%d = 0", j);
  cmx__strbuf_puts(b,
                   ";\n    for (int d = L.ndim - 1; d >= 0; d--) {\n"
                   "      I s = (I)L.shape[d], q = r / s, k = r - q * s;\n"
                   "      r = q;\n");
  for (int j = 0; j < prog->nargs; j++)
    cmx__strbuf_printf(b, "      f%d += k * (I)L.st[%d][d];\n", j, j);
  cmx__strbuf_puts(b, "    }\n");
  emit_call(b, prog, "    ", "a%d[f%d]", "o%d[i]");
  cmx__strbuf_puts(b, "  }\n}\n");
  static const char* const bits[2][2] = {{"32", "int"}, {"64", "long long"}};
  for (int w = 0; w < 2; w++)
    cmx__strbuf_printf(
        b,
        "#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_fk_g%s)\n"
        "extern \"C\" __global__ void cmx_fk_g%s(const cmx_fk_ptrs P, %s n,\n"
        "    const CMX_GRID_CONST cmx_fk_layout L) {\n"
        "  CMX_GRID_WAIT();\n"
        "  cmx_fk_strided<%s>(P, n, L);\n}\n#endif\n",
        bits[w][0], bits[w][0], bits[w][1], bits[w][1]);
}

/* The module's source (after common.cu, the variant's prelude and the
 * bindings), or NULL when out of memory or a step is not accepted. */
static char* source_of(const cmx__fused_program* prog, int vec, int ndim,
                       int narr) {
  cmx__strbuf b = {0};
  cmx__strbuf_printf(&b,
                     "// cmx fused kernel: %s\n#define CMX_FK_V %d\n"
                     "#define CMX_FK_U %d\n#define CMX_FK_PF %s\n"
                     "#define CMX_FK_U_NP %d\n#define CMX_FK_THREADS %d\n",
                     prog->label, vec, unroll_of(prog),
                     prefetch_of(prog) ? "true" : "false",
                     unroll_plain_of(prog), FK_THREADS);
  cmx__strbuf_printf(
      &b,
      "CMX_EW_FN double cmx_fk_bitsd(uint64_t u) {\n"
      "  return __longlong_as_double((long long)u);\n}\n"
      "template <typename T>\n"
      "struct alignas(sizeof(T) * CMX_FK_V) cmx_fk_vec {\n"
      "  T e[CMX_FK_V];\n};\n"
      "struct cmx_fk_ptrs {\n  const void* x[%d];\n  void* y[%d];\n};\n"
      "struct cmx_fk_layout {\n  int ndim;\n  long long shape[%d];\n"
      "  long long st[%d][%d];\n};\n\n",
      narr, prog->nout, ndim, narr, ndim);
  emit_elem(&b, prog);
  emit_contig(&b, prog);
  emit_strided(&b, prog);
  if (b.failed) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

/* ---------------- the code generator ---------------- */

static uint64_t fnv(const char* s) {
  uint64_t h = 14695981039346656037ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The family of source src (taken over), made at first sight. */
static fk* family_of(char* src, int variant, int vec, int ndim, int narr) {
  uint64_t h = fnv(src);
  pthread_mutex_lock(&g_fks.lock);
  fk* f = g_fks.list;
  while (f && !(f->hash == h && strcmp(f->source, src) == 0)) f = f->next;
  if (f) {
    free(src);
    atomic_fetch_add(&st_found, 1);
  } else if ((f = calloc(1, sizeof *f)) != NULL) {
    f->source = src;
    f->hash = h;
    f->variant = variant;
    f->vec = vec;
    f->ndim = ndim;
    f->narr = narr;
    f->fam = (cmx__gpu_family){.name = "compiled",
                               .source = src,
                               .preamble = k_preamble,
                               .kernels = k_kernels,
                               .nvariants = 2,
                               .variant = fk_variant,
                               .flags = CMX__GPU_GRID_WAITS,
                               .shape = {CMX__GPU_GRID_STRIDE, FK_THREADS, 16}};
    f->next = g_fks.list;
    g_fks.list = f;
    atomic_fetch_add(&st_built, 1);
  } else {
    free(src);
  }
  pthread_mutex_unlock(&g_fks.lock);
  return f ? f : CMX__FAIL(CMX_ERR_MEMORY, "[compile] out of host memory");
}

/* Kernel parameter bytes of the strided kernels (the largest). */
static size_t param_bytes(int narr, int nout, int ndim) {
  return 8 * (size_t)(narr + nout) + 8 + 8 + 8 * (size_t)ndim +
         8 * (size_t)ndim * (size_t)narr;
}

static bool gpu_available(const char** why) {
  if (!cmx__gpu_available()) {
    if (why) *why = cmx__gpu_unavailable_reason();
    return false;
  }
  return cmx__nvrtc_available(why);
}

static cmx_status gpu_prepare(cmx__fused_program* prog) {
  if (prog->gpu_kernel) return CMX_OK;
  const char* why = NULL;
  if (!gpu_available(&why))
    return cmx__error(CMX_ERR_RUNTIME, "[compile] no GPU code generation: %s",
                      why ? why : "unavailable");
  int vec = vec_of(prog), ndim = prog->ndim > 0 ? prog->ndim : 1;
  int narr = prog->nargs > 0 ? prog->nargs : 1;
  if (prog->nargs > MAX_ARRAYS ||
      param_bytes(narr, prog->nout, ndim) > CMX__GPU_ARGS_BYTES - 64)
    return cmx__error(CMX_ERR_VALUE,
                      "[compile] %s has too many arrays for one GPU kernel",
                      prog->label);
  char* src = source_of(prog, vec, ndim, narr);
  if (!src) return cmx__error(CMX_ERR_MEMORY, "[compile] out of host memory");
  fk* f = family_of(src, uses_complex(prog) ? 1 : 0, vec, ndim, narr);
  if (!f) return cmx_last_status();
  /* Built now (device 0's architecture), so a kernel NVRTC refuses leaves
   * the region unfused; other devices build theirs at first launch. */
  if (!cmx__gpu_kernel_get(0, &f->fam, f->variant, K_CONTIG))
    return cmx_last_status();
  prog->gpu_kernel = f;
  return CMX_OK;
}

static void gpu_stats(cmx_compile_stats* s) {
  s->kernels_built += atomic_load(&st_built);
  s->memory_hits += atomic_load(&st_found);
}

static const cmx__fused_codegen gpu_codegen = {
    .name = "CUDA",
    .available = gpu_available,
    .supports = cmx__fused_step_supported,
    .prepare = gpu_prepare,
    .stats = gpu_stats};

CMX__REGISTER(register_gpu_codegen) {
  cmx__fused_codegen_register(CMX_GPU, &gpu_codegen);
}

cmx_status cmx__gpu_compiled_check(const cmx__fused_program* prog, int arch) {
  int vec = vec_of(prog), ndim = prog->ndim > 0 ? prog->ndim : 1;
  int narr = prog->nargs > 0 ? prog->nargs : 1;
  char* body = source_of(prog, vec, ndim, narr);
  if (!body) return cmx__error(CMX_ERR_MEMORY, "[compile] out of host memory");
  cmx__gpu_family fam = {.name = "compiled",
                         .source = body,
                         .preamble = k_preamble,
                         .kernels = k_kernels,
                         .nvariants = 2,
                         .variant = fk_variant};
  cmx__gpu_variant var;
  fk_variant(uses_complex(prog) ? 1 : 0, &var);
  const char* opts[8];
  char optbuf[4400];
  int nopts =
      cmx__gpu_family_options(&fam, &var, opts, 8, optbuf, sizeof optbuf);
  char* src = nopts < 0 ? NULL : cmx__gpu_family_source(&fam, var.prelude, -1);
  free(body);
  if (!src) return cmx_last_status();
  cmx__gpu_image img = {0};
  cmx_status st =
      cmx__nvrtc_compile(var.name, src, arch, opts, nopts, true, &img);
  cmx__gpu_image_free(&img);
  free(src);
  return st;
}

/* ---------------- the kernel ---------------- */

/* Whether the element count and every offset reachable fit 32-bit
 * indices (with room for the grid's stride). */
static bool fits_i32(int64_t n, const int64_t* shape, int nd,
                     int64_t* const* st, int narr) {
  const int64_t lim = (int64_t)1 << 30;
  if (n >= lim) return false;
  for (int j = 0; j < narr; j++) {
    int64_t reach = 0;
    for (int d = 0; d < nd; d++) {
      int64_t s = st[j][d] < 0 ? -st[j][d] : st[j][d];
      if (s >= lim) return false;
      reach += (shape[d] - 1) * s;
      if (reach >= lim) return false;
    }
  }
  return true;
}

/* Whether the contiguous regions run the pipelined kernel (cmx_fk_c): only
 * with CMX_CUDA_FUSED_PIPELINE=1; the plain one (cmx_fk_c_np) is the
 * default, since on an H100 (benchmarks/gpu_fused_pipeline.py) the
 * pipelined one was slower: gelu (32,1000,4096) f32 1.124x the copy floor
 * against 1.099x, axpby 1.078x against 1.055x, a 7-op chain 1.082x against
 * 1.068x. Read at each launch, so a benchmark compares both in one process. */
static bool pipelined(void) {
  const char* e = getenv("CMX_CUDA_FUSED_PIPELINE");
  return e && e[0] == '1' && e[1] == 0;
}

/* Blocks of k the whole card holds at once (cmx__gpu_blocks_per_sm
 * times its multiprocessors), or 0 when the driver does not say. */
static unsigned resident_blocks(const cmx__gpu_kernel* k) {
  const cmx__gpu_device* d = cmx__gpu_device_get(k->dev);
  int per_sm = d ? cmx__gpu_blocks_per_sm(k, FK_THREADS, 0) : 0;
  return per_sm > 0 ? (unsigned)per_sm * (unsigned)d->sm_count : 0;
}

/* Outputs: fresh, or an input's buffer of the same size and item size. */
static cmx_status alloc_outputs(const cmx_array* in, int nin,
                                const cmx_array* out, int nout, int dev) {
  cmx_array cands[MAX_ARRAYS];
  int nc = 0;
  for (int j = 0; j < nin && nc < MAX_ARRAYS; j++) cands[nc++] = in[j];
  for (int k = 0; k < nout; k++) {
    int donor = -1;
    cmx_status st = cmx__gpu_alloc_out(out[k], cands, nc, dev, &donor);
    if (st != CMX_OK) return st;
    if (donor >= 0) cands[donor] = cands[--nc]; /* one output each */
  }
  return CMX_OK;
}

cmx_status cmx__gpu_compiled(const cmx_primitive* p, const cmx_array* in,
                             int nin, const cmx_array* out, int nout) {
  cmx__fused_program* prog = cmx__compiled_program(p);
  if (!prog->gpu_kernel) {
    cmx_status st = gpu_prepare(prog);
    if (st != CMX_OK) return st;
  }
  fk* f = prog->gpu_kernel;
  int dev = cmx_primitive_stream(p).device.index;
  if (nin != prog->nargs || nout != prog->nout)
    return cmx_kernel_error(CMX_ERR_RUNTIME, "[%s] takes %d inputs, got %d",
                            prog->label, prog->nargs, nin);
  cmx_status st = alloc_outputs(in, nin, out, nout, dev);
  if (st != CMX_OK) return st;
  cmx_array o = out[0];
  if (o->size == 0) return CMX_OK;

  /* pointers: a struct of f->narr inputs, then the outputs */
  size_t pbytes = 8 * (size_t)(f->narr + nout);
  _Alignas(8) unsigned char pbuf[8 * (MAX_ARRAYS + 2 * MAX_ARRAYS)];
  if (pbytes > sizeof pbuf)
    return cmx_kernel_error(CMX_ERR_VALUE, "[%s] too many outputs",
                            prog->label);
  memset(pbuf, 0, pbytes);
  for (int j = 0; j < nin && st == CMX_OK; j++) {
    CUdeviceptr d = 0;
    st = cmx__gpu_ptr(in[j], dev, &d);
    memcpy(pbuf + 8 * j, &d, 8);
  }
  for (int k = 0; k < nout && st == CMX_OK; k++) {
    CUdeviceptr d = 0;
    st = cmx__gpu_ptr(out[k], dev, &d);
    memcpy(pbuf + 8 * (f->narr + k), &d, 8);
  }
  if (st != CMX_OK) return st;

  /* the layout: the output (row-major) and each input broadcast to it */
  int narr = 1 + nin, nd = o->ndim;
  int64_t shape[CMX_MAX_NDIM];
  int64_t* stb = malloc((size_t)narr * CMX_MAX_NDIM * sizeof *stb);
  int64_t** sp = malloc((size_t)narr * sizeof *sp);
  if (!stb || !sp) {
    free(stb);
    free(sp);
    return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of host memory",
                            prog->label);
  }
  for (int j = 0; j < narr; j++) sp[j] = stb + (size_t)j * CMX_MAX_NDIM;
  memcpy(shape, o->dims, (size_t)nd * sizeof *shape);
  cmx__row_major_strides(shape, nd, sp[0]);
  for (int j = 1; j < narr; j++) {
    cmx_array a = in[j - 1];
    int lead = nd - a->ndim;
    for (int d = 0; d < nd; d++) {
      int s = d - lead;
      sp[j][d] = s < 0 || a->dims[s] == 1 ? 0 : CMX__STRIDES(a)[s];
    }
  }
  nd = cmx__layout_collapse(shape, nd, sp, narr);
  bool contig = nd <= 1;
  uint64_t mask = 0;
  for (int j = 0; j < nin && contig; j++) {
    int64_t s = nd == 0 ? 0 : sp[j + 1][0];
    if (s == 0)
      mask |= (uint64_t)1 << j;
    else if (s != 1)
      contig = false;
  }
  long long n = o->size;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  cmx__gpu_args_add(&args, pbuf, pbytes, 8);
  int kernel = K_CONTIG;
  int64_t work = n;
  if (contig) {
    /* vector accesses when every vector-accessed pointer is aligned */
    bool aligned = true;
    for (int j = 0; j < nin + nout; j++) {
      cmx_array a = j < nin ? in[j] : out[j - nin];
      if (j < nin && ((mask >> j) & 1)) continue;
      uint64_t d;
      memcpy(&d, pbuf + 8 * (j < nin ? j : f->narr + j - nin), 8);
      aligned =
          aligned && d % ((uint64_t)f->vec * cmx_dtype_size(a->dtype)) == 0;
    }
    long long nv = aligned ? n / f->vec : 0;
    CMX__GPU_ARG(&args, n);
    CMX__GPU_ARG(&args, nv);
    CMX__GPU_ARG(&args, mask);
    bool pipe = pipelined();
    kernel = pipe ? K_CONTIG : K_CONTIG_NP;
    /* threads: one a U-vector group, or one an element when unaligned */
    int64_t per = aligned ? (int64_t)f->vec *
                                (pipe ? unroll_of(prog) : unroll_plain_of(prog))
                          : 1;
    work = (n + per - 1) / per;
  } else if (nd > f->ndim) {
    st =
        cmx_kernel_error(CMX_ERR_RUNTIME, "[%s] %d dims exceed the kernel's %d",
                         prog->label, nd, f->ndim);
  } else {
    bool i32 = fits_i32(n, shape, nd, sp + 1, nin);
    kernel = i32 ? K_G32 : K_G64;
    cmx__gpu_args_count(&args, i32, n);
    /* cmx_fk_layout: int ndim; long long shape[D]; long long st[narr][D] */
    size_t lbytes = 8 + 8 * (size_t)f->ndim * (size_t)(1 + f->narr);
    unsigned char* lb = calloc(1, lbytes);
    if (!lb) {
      st = cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of host memory",
                            prog->label);
    } else {
      memcpy(lb, &nd, sizeof nd);
      memcpy(lb + 8, shape, (size_t)nd * 8);
      for (int j = 0; j < nin; j++)
        memcpy(lb + 8 + 8 * (size_t)f->ndim * (size_t)(1 + j), sp[j + 1],
               (size_t)nd * 8);
      cmx__gpu_args_add(&args, lb, lbytes, 8);
      free(lb);
    }
  }
  free(stb);
  free(sp);
  if (st != CMX_OK) return st;
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(dev, &f->fam, f->variant, kernel);
  if (!k) return cmx_last_status();
  /* the plain contiguous kernel streams best one trip a thread */
  cmx__gpu_cfg cfg = kernel == K_CONTIG_NP ? cmx__gpu_cfg_one_shot(k, work)
                                           : cmx__gpu_cfg_for(k, work);
  if (kernel == K_CONTIG) {
    /* one wave: every block resident from the start, so the pipeline
     * runs unbroken (a later wave would start with its loads exposed) */
    bool kept = k->dev >= 0 && k->dev < FK_DEVICES;
    unsigned cap = kept ? atomic_load(&f->grid[k->dev]) : 0;
    if (!cap && (cap = resident_blocks(k)) != 0 && kept)
      atomic_store(&f->grid[k->dev], cap);
    if (cap && cfg.grid[0] > cap) cfg.grid[0] = cap;
  }
  st = cmx__gpu_launch(prog->label, k, &cfg, &args);
  for (int j = 0; j < nout && st == CMX_OK; j++)
    cmx_kernel_mark_device_written(out[j]);
  return st;
}
