/* The CPU's code generator for fused regions (primitives/compiled.h): C
 * source from the op table, built by the C source JIT (jit.h), and the
 * Compiled primitive's CPU kernel.
 *
 * The generated source is the CPU binding of the scalar semantics
 * (ew_scalar_cpu.h, with ew_scalar.h and vmath.h) followed by, for each
 * step, the macros cmx__ew_prelude writes for its (op, dtype) with the
 * prefix S<step>_, and one element function computing every step: each
 * value is stored in its dtype's storage type (float16 rounded, integers
 * wrapped) exactly as the eager rows store it, so fused results are the
 * eager results. The build disables floating-point contraction, so no
 * step is fused into another's multiply-add; where the eager rows are
 * themselves compiled with contraction (the AVX2/AVX-512 clones of the
 * transcendental float32 rows and of the 16-bit float rows), results can
 * differ in the last bit.
 *
 * Layouts: a flat variant (every array contiguous or a single broadcast
 * value) processes blocks of 256 elements in loops the compiler
 * vectorises, broadcast values copied once into a block buffer; a row
 * variant walks the outer dims and runs each row flat when its inner
 * strides are 0 or 1, else element by element with strides. Work is split
 * over the library's thread pool, passed in by pointer (the kernel does
 * not link against libcmx).
 */
#include "primitives/compiled.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ew_dispatch.h"
#include "backend/cpu/ew_scalar_cpu.h"
#include "backend/cpu/fused_abi.h"
#include "backend/cpu/jit.h"
#include "backend/cpu/kernels.h"
#include "core/backend.h"
#include "core/internal.h"
#include "core/strbuf.h"
#include "primitives/ew_ops.h"
#include "primitives/registry.h"

/* Elements per chunk handed to a thread, and per block of the generated
 * loops. */
#define GRAIN (1 << 14)
#define BLOCK 256

/* ---------------- embedded headers ---------------- */

typedef struct {
  const char* path;
  const char* text;
} cmx__jit_header;
extern const cmx__jit_header cmx__jit_headers[];

/* Appends header `path`, inlining the embedded headers it includes. */
static void emit_header(cmx__strbuf* b, const char* path, int depth) {
  const cmx__jit_header* h = cmx__jit_headers;
  while (h->path && strcmp(h->path, path)) h++;
  if (!h->path || depth > 4) {
    b->failed = true;
    return;
  }
  const char* s = h->text;
  while (*s) {
    const char* e = strchr(s, '\n');
    size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
    char inc[128];
    if (sscanf(s, "#include \"%127[^\"]\"", inc) == 1)
      emit_header(b, inc, depth + 1);
    else
      cmx__strbuf_putn(b, s, n);
    s += n;
  }
}

/* ---------------- the region as loops ----------------
 * Steps run in groups over a block of m elements: a maximal run of
 * consecutive steps whose eager rows are compiled without contraction is
 * one loop (its values in registers); a step whose eager row is compiled
 * with contraction is a loop of its own, compiled the same way. Values a
 * later group reads are stored: outputs to their arrays, others to
 * scratch slots of the block, reused once dead. Copy and Broadcast steps
 * pass their operand's storage on (code only when they are outputs). */

/* Steps that pass their operand through. */
static bool is_alias(const cmx__fused_step* st) {
  return st->id == CMX__P_Copy || st->id == CMX__P_Broadcast;
}

/* Whether libcmx's eager row of this step is compiled with FMA
 * contraction (its AVX2/AVX-512 clones: transcendental float32 rows and
 * every float16/bfloat16 row of ew_gen.h, built by gcc with optimisation:
 * gcc contracts nothing at -O0, as in a Debug build), so the step's loop
 * must be too to give the same bits. */
static bool eager_contracts(const cmx__fused_step* st) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__OPTIMIZE__)
  const cmx__ew_op* op = cmx__ew_op_get(st->id);
  if (!op || st->id == CMX__P_Select) return false;
  if (st->in_dtype == CMX_FLOAT16 || st->in_dtype == CMX_BFLOAT16) return true;
  return st->in_dtype == CMX_FLOAT32 && (op->flags & CMX__EW_HEAVY);
#else
  (void)st;
  return false;
#endif
}

/* Values: inputs 0..nin-1, then step s as nin + s. */
typedef struct {
  const cmx__fused_program* prog;
  int nin, nv, ngroups, nslots;
  int* owner;       /* value -> the value whose storage it uses */
  int* group;       /* value (a step's) -> its group, -1 for aliases, inputs */
  int* out_of;      /* value (a step's) -> its output index, -1 */
  int* last;        /* value -> the last later group reading it, -1 */
  char (*name)[32]; /* value -> its storage in the block function */
} plan;

static int val_of(const plan* p, int operand) {
  return p->owner[operand >= 0 ? operand : p->nin + CMX__FUSED_STEP(operand)];
}

static cmx_dtype dtype_of(const plan* p, int v) {
  return v < p->nin ? p->prog->in[v].dtype : p->prog->steps[v - p->nin].dtype;
}

static bool is_scalar(const plan* p, int v) {
  return v < p->nin && p->prog->in[v].konst != NULL;
}

static void plan_free(plan* p) {
  free(p->owner);
  free(p->group);
  free(p->out_of);
  free(p->last);
  free(p->name);
}

static bool plan_make(plan* p, const cmx__fused_program* prog) {
  memset(p, 0, sizeof *p);
  p->prog = prog;
  p->nin = prog->nin;
  p->nv = prog->nin + prog->nsteps;
  size_t n = (size_t)p->nv + 1;
  p->owner = malloc(n * sizeof(int));
  p->group = malloc(n * sizeof(int));
  p->out_of = malloc(n * sizeof(int));
  p->last = malloc(n * sizeof(int));
  p->name = calloc(n, sizeof *p->name);
  bool* busy = calloc(n, 1);
  int* slot = malloc(n * sizeof(int));
  if (!p->owner || !p->group || !p->out_of || !p->last || !p->name || !busy ||
      !slot) {
    free(busy);
    free(slot);
    plan_free(p);
    return false;
  }
  for (int v = 0; v < p->nv; v++) {
    p->owner[v] = v;
    p->group[v] = p->out_of[v] = p->last[v] = slot[v] = -1;
  }
  for (int k = 0; k < prog->nout; k++) p->out_of[p->nin + prog->out[k]] = k;
  bool prev_contract = true;
  for (int s = 0; s < prog->nsteps; s++) {
    const cmx__fused_step* st = &prog->steps[s];
    int v = p->nin + s;
    if (is_alias(st) && p->out_of[v] < 0) {
      p->owner[v] = val_of(p, st->in[0]);
      continue;
    }
    bool c = eager_contracts(st);
    if (c || prev_contract) p->ngroups++;
    p->group[v] = p->ngroups - 1;
    prev_contract = c;
    for (int k = 0; k < st->nin; k++) {
      int w = val_of(p, st->in[k]);
      if (p->group[w] != p->group[v] && p->group[v] > p->last[w])
        p->last[w] = p->group[v];
    }
  }
  /* storage: inputs, outputs, and a slot per value read by a later group,
   * free again after the last group reading it */
  for (int i = 0; i < p->nin; i++)
    snprintf(p->name[i], sizeof p->name[i], prog->in[i].konst ? "k%d" : "x%d",
             prog->in[i].konst ? i : prog->in[i].arg);
  for (int g = 0; g < p->ngroups; g++) {
    for (int v = p->nin; v < p->nv; v++) {
      if (p->group[v] != g) continue;
      if (p->out_of[v] >= 0) {
        snprintf(p->name[v], sizeof p->name[v], "y%d", p->out_of[v]);
      } else if (p->last[v] >= 0) {
        int k = 0;
        while (k < p->nslots && busy[k]) k++;
        if (k == p->nslots) p->nslots++;
        busy[k] = true;
        slot[v] = k;
        snprintf(p->name[v], sizeof p->name[v], "(%s*)t[%d]",
                 cmx__fused_storage(dtype_of(p, v)), k);
      }
    }
    for (int v = p->nin; v < p->nv; v++)
      if (slot[v] >= 0 && p->last[v] == g) busy[slot[v]] = false;
  }
  for (int v = p->nin; v < p->nv; v++)
    if (p->owner[v] != v) memcpy(p->name[v], p->name[p->owner[v]], 32);
  free(busy);
  free(slot);
  return true;
}

/* The operand of a step inside group g's loop. */
static void loop_operand(const plan* p, int g, int w, char* out, size_t size) {
  if (p->group[w] == g)
    snprintf(out, size, "t%d", w);
  else
    snprintf(out, size, is_scalar(p, w) ? "e%d" : "e%d[i]", w);
}

/* Whether value w (read by group g) is among its parameters already. */
static bool listed(const int* list, int n, int w) {
  for (int i = 0; i < n; i++)
    if (list[i] == w) return true;
  return false;
}

/* Group g as a function: cmx_g<g>(m, reads..., stores...). Writes the
 * values it reads from storage to ext (count *next) and those it stores
 * to sto (*nsto). */
static void emit_group(cmx__strbuf* b, const plan* p, int g, int* ext,
                       int* next, int* sto, int* nsto) {
  const cmx__fused_program* prog = p->prog;
  *next = *nsto = 0;
  bool contract = false;
  for (int v = p->nin; v < p->nv; v++) {
    if (p->group[v] != g) continue;
    const cmx__fused_step* st = &prog->steps[v - p->nin];
    contract = eager_contracts(st);
    for (int k = 0; k < st->nin; k++) {
      int w = val_of(p, st->in[k]);
      if (p->group[w] != g && !listed(ext, *next, w)) ext[(*next)++] = w;
    }
    if (p->out_of[v] >= 0 || p->last[v] >= 0) sto[(*nsto)++] = v;
    cmx__fused_emit_step_defs(b, prog, v - p->nin, v, "static const");
  }
  if (contract)
    cmx__strbuf_puts(b,
                     "#ifndef __clang__\n#pragma GCC push_options\n"
                     "#pragma GCC optimize(\"fp-contract=fast\")\n#endif\n");
  cmx__strbuf_printf(b, "static void cmx_g%d(int64_t m", g);
  for (int k = 0; k < *next; k++)
    cmx__strbuf_printf(b, ", const %s%s e%d",
                       cmx__fused_storage(dtype_of(p, ext[k])),
                       is_scalar(p, ext[k]) ? "" : "* restrict", ext[k]);
  for (int k = 0; k < *nsto; k++)
    cmx__strbuf_printf(b, ", %s* restrict s%d",
                       cmx__fused_storage(dtype_of(p, sto[k])), sto[k]);
  cmx__strbuf_puts(b, ") {\n");
  if (contract)
    cmx__strbuf_puts(b,
                     "#ifdef __clang__\n#pragma clang fp contract(fast)\n"
                     "#endif\n");
  cmx__strbuf_puts(b, "  for (int64_t i = 0; i < m; i++) {\n");
  for (int v = p->nin; v < p->nv; v++) {
    if (p->group[v] != g) continue;
    const cmx__fused_step* st = &prog->steps[v - p->nin];
    char a[3][24];
    for (int k = 0; k < st->nin; k++)
      loop_operand(p, g, val_of(p, st->in[k]), a[k], sizeof a[k]);
    cmx__fused_emit_step(b, prog, v - p->nin, v, a, "    ");
  }
  for (int k = 0; k < *nsto; k++)
    cmx__strbuf_printf(b, "    s%d[i] = t%d;\n", sto[k], sto[k]);
  cmx__strbuf_puts(b, "  }\n}\n");
  if (contract)
    cmx__strbuf_puts(b, "#ifndef __clang__\n#pragma GCC pop_options\n#endif\n");
}

/* The type of array j (outputs, then arguments). */
static const char* arr_type(const cmx__fused_program* prog, int j) {
  if (j < prog->nout)
    return cmx__fused_storage(prog->steps[prog->out[j]].dtype);
  int i = 0;
  while (prog->in[i].arg != j - prog->nout) i++;
  return cmx__fused_storage(prog->in[i].dtype);
}

/* The groups and the block function calling them in order. The arrays'
 * block pointers come in p (outputs, then arguments). */
static void emit_block(cmx__strbuf* b, const cmx__fused_program* prog) {
  plan p;
  if (!plan_make(&p, prog)) {
    b->failed = true;
    return;
  }
  int* ext = malloc((size_t)(3 * p.nv + 1) * sizeof *ext);
  int* sto = malloc((size_t)(p.nv + 1) * sizeof *sto);
  cmx__strbuf calls = {0};
  if (!ext || !sto) b->failed = true;
  for (int g = 0; ext && sto && g < p.ngroups; g++) {
    int next, nsto;
    emit_group(b, &p, g, ext, &next, sto, &nsto);
    cmx__strbuf_printf(&calls, "  cmx_g%d(m", g);
    for (int k = 0; k < next; k++)
      cmx__strbuf_printf(&calls, ", %s", p.name[ext[k]]);
    for (int k = 0; k < nsto; k++)
      cmx__strbuf_printf(&calls, ", %s", p.name[sto[k]]);
    cmx__strbuf_puts(&calls, ");\n");
  }
  cmx__strbuf_puts(b,
                   "\nstatic void cmx_fk_block(int64_t m, char* const* p) {\n");
  if (p.nslots)
    cmx__strbuf_printf(
        b, "  _Alignas(64) unsigned char t[%d][CMX_FK_BLOCK * 16];\n",
        p.nslots);
  for (int k = 0; k < prog->nout; k++) {
    char t[16];
    snprintf(t, sizeof t, "%s",
             cmx__fused_storage(prog->steps[prog->out[k]].dtype));
    cmx__strbuf_printf(b, "  %s* y%d = (%s*)p[%d];\n", t, k, t, k);
  }
  for (int i = 0; i < prog->nin; i++) {
    if (prog->in[i].konst) {
      cmx__fused_emit_const(b, prog, i);
      continue;
    }
    char t[16];
    snprintf(t, sizeof t, "%s", cmx__fused_storage(prog->in[i].dtype));
    cmx__strbuf_printf(b, "  const %s* x%d = (const %s*)p[%d];\n", t,
                       prog->in[i].arg, t, prog->nout + prog->in[i].arg);
  }
  if (calls.failed) b->failed = true;
  if (calls.p) cmx__strbuf_puts(b, calls.p);
  cmx__strbuf_puts(b, "}\n\n");
  free(calls.p);
  free(ext);
  free(sto);
  plan_free(&p);
}

/* The segments: a flat one (arrays contiguous, or one value an argument
 * repeats, copied into a block buffer once), and a strided one (arguments
 * gathered into block buffers, outputs scattered from them). */
static void emit_segments(cmx__strbuf* b, const cmx__fused_program* prog) {
  int na = prog->nout + prog->nargs;
  char t[16];
  cmx__strbuf_puts(b, "static const int64_t cmx_fk_isz[] = {");
  for (int j = 0; j < na; j++)
    cmx__strbuf_printf(b, "%s(int64_t)sizeof(%s)", j ? ", " : "",
                       arr_type(prog, j));
  cmx__strbuf_printf(b,
                     "};\n#define CMX_FK_NARR %d\n#define CMX_FK_NOUT %d\n\n",
                     na, prog->nout);
  /* flat; an output in an argument's buffer (ip[j]) goes through a block
   * buffer, copied out once the block has read the argument */
  cmx__strbuf_puts(b,
                   "static void cmx_fk_flat(char* const* p, const int64_t* st, "
                   "int64_t n,\n                        const unsigned char* "
                   "ip) {\n  char* q[CMX_FK_NARR];\n"
                   "  _Alignas(64) unsigned char ob[CMX_FK_NOUT][CMX_FK_BLOCK "
                   "* 16];\n");
  for (int j = prog->nout; j < na; j++) {
    snprintf(t, sizeof t, "%s", arr_type(prog, j));
    cmx__strbuf_printf(b,
                       "  %s b%d[CMX_FK_BLOCK];\n  if (st[%d] == 0)\n"
                       "    for (int64_t i = 0; i < CMX_FK_BLOCK && i < n; "
                       "i++)\n      b%d[i] = *(const %s*)p[%d];\n",
                       t, j, j, j, t, j);
  }
  cmx__strbuf_puts(b,
                   "  for (int64_t i = 0; i < n; i += CMX_FK_BLOCK) {\n"
                   "    for (int j = 0; j < CMX_FK_NARR; j++)\n"
                   "      q[j] = p[j] + i * st[j] * cmx_fk_isz[j];\n");
  for (int j = prog->nout; j < na; j++)
    cmx__strbuf_printf(b, "    if (st[%d] == 0) q[%d] = (char*)b%d;\n", j, j,
                       j);
  cmx__strbuf_puts(
      b,
      "    for (int j = 0; ip && j < CMX_FK_NOUT; j++)\n"
      "      if (ip[j]) q[j] = (char*)ob[j];\n"
      "    int64_t m = n - i < CMX_FK_BLOCK ? n - i : CMX_FK_BLOCK;\n"
      "    cmx_fk_block(m, q);\n"
      "    for (int j = 0; ip && j < CMX_FK_NOUT; j++)\n"
      "      if (ip[j])\n"
      "        memcpy(p[j] + i * st[j] * cmx_fk_isz[j], ob[j],\n"
      "               (size_t)((st[j] ? m : 1) * cmx_fk_isz[j]));\n"
      "  }\n}\n\n");
  /* strided */
  cmx__strbuf_puts(b,
                   "static void cmx_fk_strided(char* const* p, const int64_t* "
                   "st, int64_t n) {\n  char* q[CMX_FK_NARR];\n");
  for (int j = 0; j < na; j++) {
    snprintf(t, sizeof t, "%s", arr_type(prog, j));
    cmx__strbuf_printf(b, "  %s g%d[CMX_FK_BLOCK];\n  q[%d] = (char*)g%d;\n", t,
                       j, j, j);
  }
  cmx__strbuf_puts(b,
                   "  for (int64_t i = 0; i < n; i += CMX_FK_BLOCK) {\n"
                   "    int64_t m = n - i < CMX_FK_BLOCK ? n - i : "
                   "CMX_FK_BLOCK;\n");
  for (int j = prog->nout; j < na; j++)
    cmx__strbuf_printf(b,
                       "    for (int64_t k = 0; k < m; k++)\n"
                       "      g%d[k] = ((const %s*)p[%d])[(i + k) * st[%d]];\n",
                       j, arr_type(prog, j), j, j);
  cmx__strbuf_puts(b, "    cmx_fk_block(m, q);\n");
  for (int j = 0; j < prog->nout; j++)
    cmx__strbuf_printf(b,
                       "    for (int64_t k = 0; k < m; k++)\n"
                       "      ((%s*)p[%d])[(i + k) * st[%d]] = g%d[k];\n",
                       arr_type(prog, j), j, j, j);
  cmx__strbuf_puts(b, "  }\n}\n\n");
}

/* The part of every kernel that does not depend on its program: chunks
 * of a flat index space, and the walk over rows. */
static const char k_driver[] =
    "static void cmx_fk_run_flat(void* ctx, int64_t b, int64_t e) {\n"
    "  const cmx_fk_args* A = (const cmx_fk_args*)ctx;\n"
    "  char* p[CMX_FK_NARR];\n"
    "  for (int j = 0; j < CMX_FK_NARR; j++)\n"
    "    p[j] = A->ptrs[j] + b * A->strides[j] * cmx_fk_isz[j];\n"
    "  cmx_fk_flat(p, A->strides, e - b, A->inplace);\n"
    "}\n"
    "static void cmx_fk_run_rows(void* ctx, int64_t b, int64_t e) {\n"
    "  const cmx_fk_args* A = (const cmx_fk_args*)ctx;\n"
    "  int nd = A->ndim, outer = nd - 1;\n"
    "  int64_t inner = A->shape[outer], st[CMX_FK_NARR], idx[32];\n"
    "  for (int j = 0; j < CMX_FK_NARR; j++) st[j] = A->strides[j * nd + "
    "outer];\n"
    "  int64_t r = b;\n"
    "  for (int d = outer - 1; d >= 0; d--) {\n"
    "    idx[d] = r % A->shape[d];\n"
    "    r /= A->shape[d];\n"
    "  }\n"
    "  for (int64_t row = b; row < e; row++) {\n"
    "    char* p[CMX_FK_NARR];\n"
    "    for (int j = 0; j < CMX_FK_NARR; j++) {\n"
    "      int64_t off = 0;\n"
    "      for (int d = 0; d < outer; d++) off += idx[d] * A->strides[j * nd + "
    "d];\n"
    "      p[j] = A->ptrs[j] + off * cmx_fk_isz[j];\n"
    "    }\n"
    "    if (A->inner_unit)\n"
    "      cmx_fk_flat(p, st, inner, A->inplace);\n"
    "    else\n"
    "      cmx_fk_strided(p, st, inner);\n"
    "    for (int d = outer - 1; d >= 0; d--) {\n"
    "      if (++idx[d] < A->shape[d]) break;\n"
    "      idx[d] = 0;\n"
    "    }\n"
    "  }\n"
    "}\n"
    "/* count items of isz bytes at d: copies of the one at s (rep) or the\n"
    " * run starting at s */\n"
    "static void cmx_fk_put(unsigned char* d, const unsigned char* s, int64_t "
    "isz,\n"
    "                       int64_t count, int rep) {\n"
    "  if (!rep) {\n"
    "    memcpy(d, s, (size_t)(count * isz));\n"
    "    return;\n"
    "  }\n"
    "#define CMX_FK_REP(T)                                   \\\n"
    "  do {                                                  \\\n"
    "    T v;                                                \\\n"
    "    memcpy(&v, s, sizeof v);                            \\\n"
    "    for (int64_t i = 0; i < count; i++) ((T*)d)[i] = v; \\\n"
    "  } while (0)\n"
    "  switch (isz) {\n"
    "    case 1: CMX_FK_REP(uint8_t); break;\n"
    "    case 2: CMX_FK_REP(uint16_t); break;\n"
    "    case 4: CMX_FK_REP(uint32_t); break;\n"
    "    case 8: CMX_FK_REP(uint64_t); break;\n"
    "    default:\n"
    "      for (int64_t i = 0; i < count; i++) memcpy(d + i * isz, s, "
    "(size_t)isz);\n"
    "  }\n"
    "#undef CMX_FK_REP\n"
    "}\n"
    "/* Rows in blocks of up to A->tile consecutive rows of the next-outer\n"
    " * dim: an array whose rows follow each other is read in place, one\n"
    " * whose rows all start at the same place (a broadcast row) from a block\n"
    " * buffer holding its row tile times, written again only when the row\n"
    " * moves, any other from its rows copied into a block buffer. An output\n"
    " * in an argument's buffer is written to a block buffer, copied out\n"
    " * after the block. */\n"
    "static void cmx_fk_run_tiles(void* ctx, int64_t b, int64_t e) {\n"
    "  const cmx_fk_args* A = (const cmx_fk_args*)ctx;\n"
    "  int nd = A->ndim, mid = nd - 2;\n"
    "  int64_t inner = A->shape[nd - 1], nmid = A->shape[mid], k = A->tile;\n"
    "  _Alignas(64) unsigned char buf[CMX_FK_NARR][CMX_FK_BLOCK * 16];\n"
    "  const char* held[CMX_FK_NARR];\n"
    "  int kind[CMX_FK_NARR];\n"
    "  int64_t ist[CMX_FK_NARR], mst[CMX_FK_NARR], idx[32];\n"
    "  for (int j = 0; j < CMX_FK_NARR; j++) {\n"
    "    ist[j] = A->strides[j * nd + nd - 1];\n"
    "    mst[j] = A->strides[j * nd + mid];\n"
    "    kind[j] = ist[j] == 1 && mst[j] == inner ? 0 : mst[j] == 0 ? 1 : 2;\n"
    "    held[j] = NULL;\n"
    "  }\n"
    "  int64_t r = b;\n"
    "  for (int d = mid; d >= 0; d--) {\n"
    "    idx[d] = r % A->shape[d];\n"
    "    r /= A->shape[d];\n"
    "  }\n"
    "  for (int64_t row = b; row < e;) {\n"
    "    int64_t m = nmid - idx[mid] < k ? nmid - idx[mid] : k;\n"
    "    if (e - row < m) m = e - row;\n"
    "    char *q[CMX_FK_NARR], *dst[CMX_FK_NARR];\n"
    "    for (int j = 0; j < CMX_FK_NARR; j++) {\n"
    "      int64_t off = 0, isz = cmx_fk_isz[j];\n"
    "      for (int d = 0; d <= mid; d++) off += idx[d] * A->strides[j * nd + "
    "d];\n"
    "      char* p = A->ptrs[j] + off * isz;\n"
    "      dst[j] = p;\n"
    "      if (kind[j] == 0) {\n"
    "        q[j] = j < CMX_FK_NOUT && A->inplace && A->inplace[j] ? "
    "(char*)buf[j] : p;\n"
    "        continue;\n"
    "      }\n"
    "      q[j] = (char*)buf[j];\n"
    "      if (kind[j] == 1) {\n"
    "        if (held[j] == p) continue;\n"
    "        held[j] = p;\n"
    "        cmx_fk_put(buf[j], (const unsigned char*)p, isz, inner, ist[j] == "
    "0);\n"
    "        for (int64_t t = 1; t < k; t++)\n"
    "          memcpy(buf[j] + t * inner * isz, buf[j], (size_t)(inner * "
    "isz));\n"
    "        continue;\n"
    "      }\n"
    "      for (int64_t t = 0; t < m; t++)\n"
    "        cmx_fk_put(buf[j] + t * inner * isz,\n"
    "                   (const unsigned char*)p + t * mst[j] * isz, isz, "
    "inner,\n"
    "                   ist[j] == 0);\n"
    "    }\n"
    "    cmx_fk_block(m * inner, q);\n"
    "    for (int j = 0; j < CMX_FK_NOUT; j++)\n"
    "      if (q[j] != dst[j])\n"
    "        memcpy(dst[j], q[j], (size_t)(m * inner * cmx_fk_isz[j]));\n"
    "    row += m;\n"
    "    idx[mid] += m;\n"
    "    for (int d = mid; d > 0 && idx[d] == A->shape[d]; d--) {\n"
    "      idx[d] = 0;\n"
    "      idx[d - 1]++;\n"
    "    }\n"
    "  }\n"
    "}\n"
    "__attribute__((visibility(\"default\"))) void cmx_fused_main(\n"
    "    const cmx_fk_args* A) {\n"
    "  if (A->flat) {\n"
    "    A->parallel_for(A->n, CMX_FK_GRAIN, cmx_fk_run_flat, (void*)A);\n"
    "    return;\n"
    "  }\n"
    "  int64_t inner = A->shape[A->ndim - 1];\n"
    "  int64_t grain = CMX_FK_GRAIN / inner;\n"
    "  if (A->tile) {\n"
    "    A->parallel_for(A->n / inner, grain < 1 ? 1 : grain, "
    "cmx_fk_run_tiles,\n"
    "                    (void*)A);\n"
    "    return;\n"
    "  }\n"
    "  A->parallel_for(A->n / inner, grain < 1 ? 1 : grain, cmx_fk_run_rows,\n"
    "                  (void*)A);\n"
    "}\n";

/* ---------------- the code generator ---------------- */

/* The kernel's source (malloc'ed), or NULL when out of memory. */
static char* source_of(const cmx__fused_program* prog) {
  cmx__strbuf b = {0};
  cmx__strbuf_puts(&b, "/* cmx fused kernel: ");
  cmx__strbuf_puts(&b, prog->label);
  cmx__strbuf_puts(&b, " */\n");
  emit_header(&b, "backend/cpu/ew_scalar_cpu.h", 0);
  emit_header(&b, "backend/cpu/fused_abi.h", 0);
  cmx__strbuf_printf(&b,
                     "\n#define CMX_FK_BLOCK %d\n#define CMX_FK_GRAIN %d\n"
                     "CMX_EW_FN double cmx_fk_bitsd(uint64_t u) {\n"
                     "  double d;\n  memcpy(&d, &u, 8);\n  return d;\n}\n",
                     BLOCK, GRAIN);
  emit_block(&b, prog);
  emit_segments(&b, prog);
  cmx__strbuf_puts(&b, k_driver);
  if (b.failed) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

static bool cpu_available(const char** why) {
  return cmx__cpu_jit_available(why);
}

static cmx_status cpu_prepare(cmx__fused_program* prog) {
  if (prog->cpu_kernel) return CMX_OK;
  char* src = source_of(prog);
  if (!src) return cmx__error(CMX_ERR_MEMORY, "[compile] out of host memory");
  void* fn = NULL;
  cmx_status st = cmx__cpu_jit_symbol("fused", src, "cmx_fused_main", &fn);
  free(src);
  if (st == CMX_OK) prog->cpu_kernel = fn;
  return st;
}

static const cmx__fused_codegen cpu_codegen = {
    .name = "C",
    .available = cpu_available,
    .supports = cmx__fused_step_supported,
    .prepare = cpu_prepare,
    .stats = cmx__cpu_jit_stats};

CMX__REGISTER(register_cpu_codegen) {
  cmx__fused_codegen_register(CMX_CPU, &cpu_codegen);
}

/* ---------------- the kernel ---------------- */

/* Drops size-1 dims and merges dims every array walks contiguously. */
static int collapse(int ndim, int narr, int64_t* shape, int64_t* st) {
  int nd = 0;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 1) continue;
    shape[nd] = shape[d];
    for (int j = 0; j < narr; j++)
      st[j * CMX_MAX_NDIM + nd] = st[j * CMX_MAX_NDIM + d];
    nd++;
  }
  if (nd <= 1) return nd;
  int w = 0;
  for (int d = 1; d < nd; d++) {
    bool merge = true;
    for (int j = 0; j < narr && merge; j++)
      merge = st[j * CMX_MAX_NDIM + w] == st[j * CMX_MAX_NDIM + d] * shape[d];
    if (merge)
      shape[w] *= shape[d];
    else
      shape[++w] = shape[d];
    for (int j = 0; j < narr; j++)
      st[j * CMX_MAX_NDIM + w] = st[j * CMX_MAX_NDIM + d];
  }
  return w + 1;
}

/* Outputs past this many are always fresh. */
#define MAX_DONATED 64

/* Each output fresh, or the buffer of an argument of its size and item
 * size that nothing else holds (cmx__can_donate), one output an
 * argument; inplace[k] marks output k's donation. The kernel reads each
 * block of a donated argument before writing that block of the output
 * (through a block buffer), so an argument other steps or outputs still
 * read is safe to give. */
static cmx_status alloc_outputs(const cmx_array* in, int nin,
                                const cmx_array* out, int nout,
                                unsigned char* inplace) {
  uint64_t used = 0;
  for (int k = 0; k < nout; k++) {
    int donor = -1;
    for (int a = 0; a < nin && a < 64 && k < MAX_DONATED && donor < 0; a++)
      if (!(used >> a & 1) && in[a]->size == out[0]->size &&
          out[k]->size == out[0]->size &&
          cmx_dtype_size(in[a]->dtype) == cmx_dtype_size(out[k]->dtype) &&
          cmx__can_donate(out[k], in[a]))
        donor = a;
    bool given = false;
    cmx_status st = donor >= 0
                        ? cmx_kernel_alloc_donate(out[k], in[donor], &given)
                        : cmx_kernel_alloc(out[k]);
    if (st != CMX_OK) return st;
    if (given) {
      used |= (uint64_t)1 << donor;
      inplace[k] = 1;
    }
  }
  return CMX_OK;
}

CMX__KERNEL(cmx__cpu_compiled) {
  cmx__fused_program* prog = cmx__compiled_program(p);
  if (!prog->cpu_kernel) {
    cmx_status st = cpu_prepare(prog);
    if (st != CMX_OK) return st;
  }
  unsigned char inplace[MAX_DONATED] = {0};
  cmx_status ast = alloc_outputs(in, nin, out, nout, inplace);
  if (ast != CMX_OK) return ast;
  cmx_array o = out[0];
  if (o->size == 0) return CMX_OK;
  int narr = nout + nin;
  int64_t* st = malloc((size_t)narr * CMX_MAX_NDIM * sizeof *st);
  char** ptrs = malloc((size_t)narr * sizeof *ptrs);
  int64_t* packed = malloc((size_t)narr * CMX_MAX_NDIM * sizeof *packed);
  if (!st || !ptrs || !packed) {
    free(st);
    free(ptrs);
    free(packed);
    return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of host memory",
                            prog->label);
  }
  int64_t shape[CMX_MAX_NDIM];
  int nd = o->ndim;
  memcpy(shape, o->dims, (size_t)nd * sizeof *shape);
  for (int j = 0; j < narr; j++) {
    cmx_array a = j < nout ? out[j] : in[j - nout];
    int lead = nd - a->ndim;
    for (int d = 0; d < nd; d++) {
      int s = d - lead;
      st[j * CMX_MAX_NDIM + d] =
          s < 0 || a->dims[s] == 1 ? 0 : CMX__STRIDES(a)[s];
    }
    ptrs[j] = cmx_kernel_data(a);
  }
  nd = collapse(nd, narr, shape, st);
  if (nd == 0) { /* a single element */
    nd = 1;
    shape[0] = 1;
    for (int j = 0; j < narr; j++) st[j * CMX_MAX_NDIM] = 0;
  }
  bool flat = nd == 1, unit = true;
  for (int j = 0; j < narr; j++) {
    for (int d = 0; d < nd; d++) packed[j * nd + d] = st[j * CMX_MAX_NDIM + d];
    int64_t in_st = st[j * CMX_MAX_NDIM + nd - 1];
    unit = unit && (in_st == 0 || in_st == 1);
  }
  /* the tiled walk: rows short enough for several a block, outputs'
   * rows consecutive (fresh outputs are row-major: always) */
  int64_t inner = shape[nd - 1], tile = 0;
  if (!(flat && unit) && unit && nd >= 2 && BLOCK / inner >= 2) {
    tile = BLOCK / inner;
    for (int k = 0; k < nout; k++)
      if (packed[k * nd + nd - 1] != 1 || packed[k * nd + nd - 2] != inner)
        tile = 0;
  }
  cmx_fk_args args = {.n = o->size,
                      .ndim = nd,
                      .shape = shape,
                      .narr = narr,
                      .ptrs = ptrs,
                      .strides = packed,
                      .flat = flat && unit,
                      .inner_unit = unit,
                      .tile = tile,
                      .inplace = inplace,
                      .parallel_for = cmx__parallel_for};
  ((cmx_fk_main_fn)prog->cpu_kernel)(&args);
  free(st);
  free(ptrs);
  free(packed);
  return CMX_OK;
}
