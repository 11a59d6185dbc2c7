/* The Compiled primitive: a fused elementwise region made by compile's
 * fuse pass, run by one generated kernel.
 *
 * A region is a program: its inputs (arrays, or scalar constants baked into
 * the kernel), steps (the region's primitives, each an op-table row,
 * AsType, Copy or Broadcast, in dependency order) and outputs (steps whose
 * values leave the region). Every step computes over the region's index
 * space, the outputs' common shape; inputs are read broadcast to it.
 *
 * Code generators, one per device type, turn a program into a kernel:
 * the CPU's emits C (backend/cpu/compiled.c); a CUDA one can be added
 * beside it through the same table (backends register theirs with
 * cmx__fused_codegen_register; cmx__fused_codegen_for finds them). The program
 * keeps its steps' primitives, so transforms of a Compiled node re-apply
 * them (transforms/rules_compiled.c): MLX's "uncompiled inside".
 */
#ifndef CMX_PRIMITIVES_COMPILED_H
#define CMX_PRIMITIVES_COMPILED_H

#include <stdatomic.h>

#include "cmx/compile.h"
#include "cmx/primitive.h"
#include "core/strbuf.h"

/* A step operand: >= 0 a region input, < 0 the step CMX__FUSED_STEP(s). */
#define CMX__FUSED_STEP(s) (-(s)-1)

typedef struct cmx__fused_input {
  cmx_dtype dtype;
  int ndim;
  int64_t shape[CMX_MAX_NDIM]; /* as traced */
  cmx_array konst; /* a baked 0-d constant (a reference), else NULL */
  int arg;         /* position among the primitive's inputs; -1 if baked */
} cmx__fused_input;

typedef struct cmx__fused_step {
  cmx_primitive* prim; /* the region's primitive (a reference) */
  int id;              /* its CMX__P_ id */
  int nin;
  int in[3];          /* operands (see CMX__FUSED_STEP) */
  cmx_dtype dtype;    /* output dtype */
  cmx_dtype in_dtype; /* dtype of its (last) operand */
} cmx__fused_step;

typedef struct cmx__fused_program {
  _Atomic int64_t refcount;
  int nin, nargs, nsteps, nout;
  cmx__fused_input* in;
  cmx__fused_step* steps;
  int* out; /* step of each output */
  int ndim;
  int64_t shape[CMX_MAX_NDIM]; /* the outputs' traced shape */
  /* The output shape is the inputs' broadcast shape (true when every
   * Broadcast step only broadcast against the region's other inputs), so
   * a shapeless call can derive it. */
  bool shapeless_ok;
  char* sig;     /* canonical text: equal programs have equal sigs */
  uint64_t hash; /* of sig */
  char* label;   /* "Compiled(Divide, Erf, ...)" for printing */
  /* Set by a code generator's prepare (backend state). */
  void* cpu_kernel;
  void* gpu_kernel;
} cmx__fused_program;

typedef struct cmx__compiled_params {
  cmx__fused_program* prog;
} cmx__compiled_params;

/* Fills in sig, hash and label of a program whose inputs, steps and
 * outputs are set (refcount 1). False when out of memory (error set). */
bool cmx__fused_program_finish(cmx__fused_program* prog);
void cmx__fused_program_retain(cmx__fused_program* prog);
void cmx__fused_program_release(cmx__fused_program* prog);
/* The program of a Compiled primitive. */
cmx__fused_program* cmx__compiled_program(const cmx_primitive* p);
/* Reads baked constant i's element as the bytes of its dtype (size of the
 * dtype, at most 16 bytes) into out. */
void cmx__fused_const_bytes(const cmx__fused_program* prog, int i,
                            unsigned char* out);

/* ---- writing a program as code (shared by the code generators) ----
 * Generated code includes a backend binding of ew_scalar.h; values are
 * named by the generator and computed in their dtype's storage type,
 * step by step, exactly as the eager rows store them. */
/* The storage type of dt in generated code ("cmx_f32_t"); a thread-local
 * buffer, valid until the next call. */
const char* cmx__fused_storage(cmx_dtype dt);
/* Whether code can be generated for st: every table op on a dtype its row
 * accepts, AsType, Copy and Broadcast (the generators' supports). */
bool cmx__fused_step_supported(const cmx__fused_step* st);
/* "  const <T> k<i> = <literal>;\n": baked input i, bit-exact (float64
 * through cmx_fk_bitsd(uint64_t), which the generated code defines). */
void cmx__fused_emit_const(cmx__strbuf* b, const cmx__fused_program* prog,
                           int i);
/* The macros step s computes with (cmx__ew_prelude's or the
 * conversion's, prefixed S<v>_) and, for parametrised ops, its
 * parameters as "<qual> cmx_ew_params P<v> = {...};" (qual: "static
 * const" in C, "static __device__ const" in CUDA). Sets b->failed when
 * the step's dtype is not accepted. */
void cmx__fused_emit_step_defs(cmx__strbuf* b, const cmx__fused_program* prog,
                               int s, int v, const char* qual);
/* "<indent><T> t<v> = <step s of operands a[0..nin)>;\n" (a: expressions
 * of the operands' storage values). */
void cmx__fused_emit_step(cmx__strbuf* b, const cmx__fused_program* prog, int s,
                          int v, char (*a)[24], const char* indent);

/* A kernel generator for one device type. */
typedef struct cmx__fused_codegen {
  const char* name; /* "C", "CUDA" ... */
  /* Whether kernels can be made here now; *why tells otherwise. */
  bool (*available)(const char** why);
  /* Whether the generator handles this step (primitive and dtypes). */
  bool (*supports)(const cmx__fused_step* step);
  /* Makes prog's kernel ready (from memory, disk, or a fresh build);
   * an error (with the compiler's message) when it cannot. */
  cmx_status (*prepare)(cmx__fused_program* prog);
  /* Adds its kernel counters to s. */
  void (*stats)(cmx_compile_stats* s);
} cmx__fused_codegen;

/* Makes cg (static storage) the generator of device type t: backends call
 * it when the library loads (CMX__REGISTER, core/backend.h). */
void cmx__fused_codegen_register(cmx_device_type t,
                                 const cmx__fused_codegen* cg);

/* The generator for a device type, or NULL (no fusion there). */
const cmx__fused_codegen* cmx__fused_codegen_for(cmx_device_type t);

#endif
