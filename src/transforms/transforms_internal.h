/* Shared machinery of the transforms (vjp.c, jvp.c, vmap.c, grad.c,
 * custom.c): pointer maps, stand-ins for traced inputs, and the tape of the
 * ops between a transform's inputs and a function's outputs.
 *
 * How a transform runs
 * 1. Each input gets a stand-in node (a tracer): a fresh identity, so the
 *    walk can tell it apart from other uses of the same array.
 * 2. The function runs on the stand-ins and builds a graph.
 * 3. cmx__tape_build walks back from the outputs through tracer nodes only
 *    (everything else is a constant) and lists, inputs first, the ops that
 *    depend on a stand-in.
 * 4. The transform applies each op's rule in tape order (jvp, vmap) or in
 *    reverse (vjp).
 * cmx__tracing is raised for the whole run, so tracers the function
 * evaluates keep their op as history (node->hist) for step 3.
 */
#ifndef CMX_TRANSFORMS_INTERNAL_H
#define CMX_TRANSFORMS_INTERNAL_H

#include "cmx/transforms.h"
#include "core/internal.h"

/* ---------------- pointer map ---------------- */
/* An open-addressing map from pointers to int64 values. Zero-initialise;
 * free with cmx__ptrmap_free. */
typedef struct cmx__ptrmap {
  const void** keys;
  int64_t* vals;
  size_t cap, n;
} cmx__ptrmap;
/* Sets key's value; false when out of memory (error set). */
bool cmx__ptrmap_put(cmx__ptrmap* m, const void* key, int64_t val);
/* key's value, or -1 when absent. */
int64_t cmx__ptrmap_get(const cmx__ptrmap* m, const void* key);
void cmx__ptrmap_free(cmx__ptrmap* m);

/* ---------------- tracing ---------------- */
/* Raises / lowers cmx__tracing around a transform. */
void cmx__trace_begin(void);
void cmx__trace_end(void);

/* A tracer stand-in for a (scope-owned): a node sharing a's data when a is
 * evaluated and not itself a tracer, else an Identity view of a (so outer
 * transforms still see the path through it). */
cmx_array cmx__tracer_of(cmx_array a, cmx_stream s);
/* A vmap placeholder: a node of the given shape and dtype with no data
 * (scope-owned). */
cmx_array cmx__placeholder(const int64_t* shape, int ndim, cmx_dtype dt);

/* ---------------- tape ---------------- */
typedef struct cmx__tape {
  cmx__op** ops; /* retained, inputs before consumers */
  size_t n, cap;
  cmx__ptrmap active; /* node -> 1: depends on a stand-in (stand-ins too) */
  cmx__ptrmap seen;   /* op -> 1 */
  bool cut;           /* stop_gradient outputs are constants */
} cmx__tape;
/* Builds the tape from the stand-ins (nin nodes) to the roots. Returns
 * CMX_OK or an error status (tape freed). */
cmx_status cmx__tape_build(cmx__tape* t, const cmx_array* standins, int nin,
                           const cmx_array* roots, int nroots);
/* As cmx__tape_build for differentiation (vjp, jvp): the outputs of
 * stop_gradient do not depend on the stand-ins, as in MLX, so the ops
 * they feed ask no derivative of them. */
cmx_status cmx__tape_build_grad(cmx__tape* t, const cmx_array* standins,
                                int nin, const cmx_array* roots, int nroots);
void cmx__tape_free(cmx__tape* t);
/* True when node a depends on a stand-in of the tape. */
static inline bool cmx__tape_active(const cmx__tape* t, cmx_array a) {
  return cmx__ptrmap_get(&t->active, a) >= 0;
}

/* The inputs of op the transforms look at: all of them, except for a
 * custom function (only its primals, not the outputs of its fun). */
int cmx__op_visible_inputs(const cmx__op* op);

/* ---------------- calling functions ---------------- */
/* Calls f inside the current scope: its outputs become scope-owned, their
 * count written to *nout. NULL with the error set on failure. */
cmx_array* cmx__call_scoped(cmx_closure f, const cmx_array* in, int nin,
                            int* nout, const char* op);
/* Copies n scope-owned arrays into a malloc'ed array of new references
 * (NULL and error on allocation failure; NULL for n == 0 is fine). */
cmx_array* cmx__export_arrays(const cmx_array* a, int n, const char* op);

/* The output shapes/dtypes of op as arrays of pointers (any output, dead
 * or alive). */
void cmx__op_out_desc(cmx__op* op, int i, const int64_t** shape, int* ndim,
                      cmx_dtype* dt);

/* The outputs of op as a malloc'ed list of scope-owned references (NULL
 * entries for dropped ones); NULL with the error set when out of memory. */
cmx_array* cmx__op_outputs_scoped(cmx__op* op);

/* Runs the vjp / jvp / vmap rule of an op with the driver's conventions:
 * rule outputs are new references and are made scope-owned here. A NULL
 * rule slot is an error naming the primitive. */
cmx_status cmx__rule_vjp(cmx__op* op, const cmx_array* cotangents,
                         const int* argnums, int nargs, cmx_array* out);
cmx_status cmx__rule_jvp(cmx__op* op, const cmx_array* tangents,
                         const int* argnums, int nargs, cmx_array* out);

/* cmx_vjp; with loose_seed a size-1 cotangent is reshaped to its size-1
 * output's shape (grad's seed of one for a loss of shape (1,)). */
cmx_status cmx__vjp_seeded(cmx_closure f, const cmx_array* primals, int n,
                           const cmx_array* cotangents, int ncot,
                           cmx_array** outputs, int* nout, cmx_array* vjps,
                           bool loose_seed);

/* ---------------- custom functions ---------------- */
/* Shared state of a custom function's primitive (refcounted: copies of
 * the primitive's params point to it). */
typedef struct cmx__custom_state {
  _Atomic int64_t refcount;
  cmx_custom_function cf;
  int nin, nout;
  bool checkpoint; /* the vjp recomputes fun (cmx_checkpoint_apply) */
  void (*release_one)(void*); /* checkpoint's release of fun's payload */
} cmx__custom_state;
typedef struct cmx__custom_params {
  cmx__custom_state* state;
} cmx__custom_params;

#endif
