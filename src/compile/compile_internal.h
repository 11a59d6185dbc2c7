/* compile's graph: a traced function as a flat list of values and ops, and
 * the passes over it.
 *
 * How a compiled function is built (cache.c drives it)
 * 1. trace (graph.c): the function runs on placeholders; the graph it made
 *    is copied into a cmx__cgraph, walking back from its outputs through
 *    lazy nodes and stopping at the placeholders (inputs) and at nodes that
 *    hold data (constants, kept by reference).
 * 2. passes (simplify.c, fuse.c), each named, each followed by a check of
 *    the graph's invariants in debug builds: merge_scalars, drop_noops,
 *    cse, dce, add_rms_norm, rope_multi, qmm_swiglu, norm_qmm, fuse.
 * 3. replay (graph.c): each call applies the ops, in order, to the call's
 *    inputs.
 */
#ifndef CMX_COMPILE_INTERNAL_H
#define CMX_COMPILE_INTERNAL_H

#include "cmx/compile.h"
#include "core/internal.h"

typedef enum { CMX__CV_INPUT, CMX__CV_CONST, CMX__CV_OP } cmx__cv_kind;

/* A value: an input, a constant, or output `out` of op `op`. */
typedef struct cmx__cval {
  cmx__cv_kind kind;
  int index;       /* INPUT: input position; OP: the producing op */
  int out;         /* OP: output position */
  cmx_array konst; /* CONST: the array (a reference) */
  cmx_dtype dtype;
  int ndim;
  int64_t shape[CMX_MAX_NDIM];
} cmx__cval;

/* An op: a primitive (a reference) applied to values. */
typedef struct cmx__cop {
  cmx_primitive* prim;
  int nin, nout;
  int* in;  /* value ids */
  int* out; /* value ids */
} cmx__cop;

/* Ops are in dependency order (an op's inputs are inputs, constants or
 * outputs of earlier ops). */
typedef struct cmx__cgraph {
  cmx__cval* vals;
  int nvals, capvals;
  cmx__cop* ops;
  int nops, capops;
  int nin, nout;
  int* inputs;  /* value ids (nin) */
  int* outputs; /* value ids (nout); a value may repeat */
  bool shapeless;
} cmx__cgraph;

/* ---- graph.c ---- */
/* Builds g from a trace: the placeholders (nin) and the outputs (nout).
 * Returns CMX_OK or the error (g freed). */
cmx_status cmx__cgraph_from_trace(cmx__cgraph* g, const cmx_array* inputs,
                                  int nin, const cmx_array* outputs, int nout);
void cmx__cgraph_free(cmx__cgraph* g);
/* Appends a value (shape and dtype from ndim/shape/dt); returns its id or
 * -1 when out of memory (error set). */
int cmx__cgraph_add_value(cmx__cgraph* g, cmx__cv_kind kind, cmx_dtype dt,
                          int ndim, const int64_t* shape);
/* Appends an op taking p (the reference moves to the graph) with the given
 * inputs and outputs (copied); returns its index or -1 (error set; p is
 * released). */
int cmx__cgraph_add_op(cmx__cgraph* g, cmx_primitive* p, const int* in, int nin,
                       const int* out, int nout);
/* Replaces every use of value `from` (op inputs, graph outputs) by `to`. */
void cmx__cgraph_replace_uses(cmx__cgraph* g, int from, int to);
/* Counts each value's uses (op inputs plus graph outputs) into uses
 * (g->nvals ints). */
void cmx__cgraph_count_uses(const cmx__cgraph* g, int* uses);
/* Drops ops marked dead[op] and values no longer referenced, renumbering
 * the rest (order kept). Returns CMX_OK or CMX_ERR_MEMORY. */
cmx_status cmx__cgraph_compact(cmx__cgraph* g, const bool* dead_ops);
/* Applies the graph to the call's inputs (g->nin arrays): writes nout new
 * references to out. Shapeless graphs derive shapes from the inputs. */
cmx_status cmx__cgraph_replay(const cmx__cgraph* g, const cmx_array* inputs,
                              cmx_array* out);
/* Checks the graph's invariants; a broken one is a compile bug (aborts
 * naming the pass that broke it). */
void cmx__cgraph_verify(const cmx__cgraph* g, const char* pass);
/* The op index defining value v, or -1 for an input or a constant. */
int cmx__cgraph_def_op(const cmx__cgraph* g, int v);
/* Whether any op strictly between op indices lo and hi reads value v. */
bool cmx__cgraph_read_between(const cmx__cgraph* g, int v, int lo, int hi);
/* Puts primitive p (owned) at op index `at` in place of the op there,
 * with ids (malloc'd, owned: nin input value ids, then nout output value
 * ids) as its inputs and outputs; those outputs are now defined by this
 * op. Releases the replaced op's primitive and ids. */
void cmx__cgraph_set_op(cmx__cgraph* g, int at, cmx_primitive* p, int* ids,
                        int nin, int nout);
/* Whether an optional pass is switched off by its environment variable
 * `name` set to "0" (read at each trace). */
bool cmx__pass_switched_off(const char* name);
/* Whether an opt-in pass (off by default) is switched on by its
 * environment variable `name` set to "1" (read at each trace). */
bool cmx__pass_switched_on(const char* name);
/* A fusion pass's scratch: *dead, one flag an op (all false), and, when
 * uses is not NULL, *uses, each value's use count (count_uses). False
 * (nothing allocated) when memory is short: the pass, being optional,
 * then leaves the graph alone. */
bool cmx__pass_begin(const cmx__cgraph* g, bool** dead, int** uses);
/* Ends a pass begun by cmx__pass_begin: frees uses (NULL is fine), drops
 * the ops marked dead when any was (compact; its out-of-memory is the
 * pass's error, as any pass's), and frees dead. */
cmx_status cmx__pass_end(cmx__cgraph* g, bool* dead, int* uses, bool any);

/* ---- simplify.c ---- */
cmx_status cmx__pass_merge_scalars(cmx__cgraph* g);
cmx_status cmx__pass_drop_noops(cmx__cgraph* g);
cmx_status cmx__pass_cse(cmx__cgraph* g);
cmx_status cmx__pass_dce(cmx__cgraph* g);

/* ---- add_rms_norm.c ---- */
/* Fuses each residual Add feeding an RMSNorm into one AddRMSNorm op (see
 * the file's comment for the conditions). Leaves the graph alone where in
 * doubt; fails only when out of memory. */
cmx_status cmx__pass_add_rms_norm(cmx__cgraph* g);

/* ---- rope_multi.c ---- */
/* Groups RoPE ops sharing parameters, offset (and freqs) into RoPEMulti
 * ops (see the file's comment for the conditions). Leaves the graph alone
 * where in doubt; fails only when out of memory. */
cmx_status cmx__pass_rope_multi(cmx__cgraph* g);

/* ---- qmm_swiglu.c ---- */
/* Fuses each one-row QuantizedMatmul whose two halves feed SwiGLU
 * (silu(first) * second) into one QuantizedMatmulSwiGLU op (see the
 * file's comment for the conditions). Leaves the graph alone where in
 * doubt; fails only when out of memory. */
cmx_status cmx__pass_qmm_swiglu(cmx__cgraph* g);

/* ---- norm_qmm.c ---- */
/* Fuses each AddRMSNorm whose normed output feeds only a one-row
 * QuantizedMatmul or QuantizedMatmulSwiGLU into one
 * AddRMSNormQuantizedMatmul op (see the file's comment for the
 * conditions). Leaves the graph alone where in doubt; fails only when out
 * of memory. */
cmx_status cmx__pass_norm_qmm(cmx__cgraph* g);

/* ---- fuse.c ---- */
cmx_status cmx__pass_fuse(cmx__cgraph* g);

/* ---- shapes.c ---- */
/* The output shapes of op applied to inputs of the given shapes (shapeless
 * replay): the primitive's output_shapes when it has one, else rules for
 * elementwise primitives, Broadcast and Reshape; an op whose input shapes
 * did not change keeps its traced shapes. Writes op->nout shapes. */
cmx_status cmx__derive_shapes(const cmx__cgraph* g, const cmx__cop* op,
                              const cmx_array* inputs, cmx_shape* out);
/* Broadcasts in a shapeless replay wait for their consumer: a Broadcast
 * op (the ops' implicit ones included: `x * 2` broadcasts the constant)
 * is deferred (bop[value] = its op index, arr[value] NULL) until an op
 * reads it. cmx__shapeless_broadcasts then makes the deferred values
 * among vals[0..n): for an elementwise consumer (or a Compiled one) to
 * the common shape of the consumer's operands, broadcast dims following
 * the others; otherwise (consumer NULL: a graph output) by the rule of
 * cmx__derive_shapes. Each made value is a new reference in arr. */
bool cmx__shapeless_defers(const cmx__cop* op);
cmx_status cmx__shapeless_broadcasts(const cmx__cgraph* g,
                                     const cmx__cop* consumer, cmx_array* arr,
                                     const int* bop, const int* vals, int n);

/* ---- run.c ---- */
/* How a graph runs as one op (a CompiledGraph op whose kernel runs the
 * ops' kernels in order), made once per trace. ok is false where the
 * graph must be replayed op by op: shapeless, no op, ops on several
 * streams, an op with no kernel on the device, or CMX_COMPILE_OP_BY_OP=1. */
typedef struct cmx__cplan {
  bool ok;
  cmx_stream stream;   /* every op's */
  cmx_kernel_fn* kern; /* per op: its kernel */
  int* last;           /* per value: the last op reading it, -1 none */
  unsigned char* kind; /* per value: borrowed, graph output or owned */
  int* oval;           /* the op's outputs: computed graph outputs, once */
  int noval;
  int* outpos; /* per graph output: its index in oval, -1 when it
                  is an input or a constant */
  int* consts; /* constant values: the op's inputs after the call's */
  int nconst;
} cmx__cplan;
/* Makes p for g (p->ok false where it does not apply). Returns CMX_OK or
 * CMX_ERR_MEMORY. */
cmx_status cmx__cplan_make(cmx__cplan* p, const cmx__cgraph* g);
void cmx__cplan_free(cmx__cplan* p);
/* Whether a call on inputs (g->nin) runs as one op: p->ok, no compile
 * trace running on this thread and, while a transform traces, no tracer
 * among the inputs and constants (those replay op by op, so the transform
 * sees the ops). */
bool cmx__cplan_fits(const cmx__cgraph* g, const cmx__cplan* p,
                     const cmx_array* inputs);
/* Writes the call's g->nout outputs (new references) to out: those g
 * computes are the outputs of one new CompiledGraph op on inputs; the
 * op keeps owner (g and p are owner's) and calls release(owner) when it
 * goes (also on failure here). */
cmx_status cmx__cplan_apply(const cmx__cgraph* g, const cmx__cplan* p,
                            const cmx_array* inputs, cmx_array* out,
                            void* owner, void (*release)(void*));
/* The graph a CompiledGraph op runs; NULL for other primitives. */
const cmx__cgraph* cmx__cplan_graph_of(const cmx_primitive* p);

/* ---- the per-thread trace context (cache.c) ---- */
/* The auxiliary pointer a trace attached (cmx_compile_set_aux). */
typedef struct cmx__trace_ctx {
  void* aux;
  void (*aux_release)(void*);
  struct cmx__trace_ctx* outer;
} cmx__trace_ctx;

#endif
