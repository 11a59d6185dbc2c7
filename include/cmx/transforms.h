/* cmx/transforms.h: function transforms (vjp, jvp, vmap, grad,
 * custom functions, checkpoint).
 *
 * A function is a cmx_closure: a C callback with a payload. It receives its
 * input arrays and returns its outputs as a malloc'ed array of new
 * references (the caller releases each output and frees the array):
 *
 *     static cmx_status square_sum(void* payload, const cmx_array* in,
 *                                  int nin, cmx_array** out, int* nout) {
 *       cmx_array sq = NULL;
 *       *out = malloc(sizeof(cmx_array));
 *       *nout = 1;
 *       cmx_square(&sq, in[0], CMX_STREAM_DEFAULT);
 *       cmx_sum(&(*out)[0], sq, NULL, 0, false, CMX_STREAM_DEFAULT);
 *       cmx_array_release(sq);
 *       return cmx_last_status();
 *     }
 *     cmx_closure f = {square_sum, NULL};
 *     cmx_array x = ..., loss, grad;
 *     int argnum = 0;
 *     cmx_value_and_grad(f, &x, 1, &argnum, 1, &loss, &grad);   // 2x
 *
 * Transforms compose: a closure may itself call cmx_vjp, cmx_jvp, cmx_vmap
 * or cmx_value_and_grad (grad of grad, vmap of grad, ...), to any depth.
 * They work by tracing: the function runs once on stand-ins for its inputs
 * and the transform walks the graph it built, using each primitive's rules
 * (the vjp/jvp/vmap slots of cmx_primitive_vtable). Arrays may be evaluated
 * inside a function being differentiated (their history is kept while a
 * transform traces); inside vmap they have no data and evaluating them is
 * an error.
 */
#ifndef CMX_TRANSFORMS_H
#define CMX_TRANSFORMS_H

#include "cmx/array.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A function of arrays. On success writes *nout and *outputs (malloc'ed,
 * *nout new references; NULL when *nout is 0) and returns CMX_OK; on
 * failure sets the error and returns its status, writing no outputs. */
typedef cmx_status (*cmx_closure_fn)(void* payload, const cmx_array* inputs,
                                     int nin, cmx_array** outputs, int* nout);
typedef struct cmx_closure {
  cmx_closure_fn fn;
  void* payload;
} cmx_closure;

/* Calls f (checking that it kept the output contract). */
cmx_status cmx_closure_call(cmx_closure f, const cmx_array* inputs, int nin,
                            cmx_array** outputs, int* nout);

/* Releases n arrays and frees the array holding them (NULL is fine). */
void cmx_arrays_free(cmx_array* arrays, int n);

/* Vector-Jacobian product. Runs f on primals (n arrays) and writes its
 * outputs (*outputs malloc'ed, *nout new references) and the product of
 * the cotangents (one per output, ncot == *nout, same shapes as the
 * outputs) with f's Jacobian: vjps[i] (new reference, primals[i]'s shape)
 * for each primal. Primals that do not influence the outputs get zeros.
 * outputs may be NULL when the caller only wants the vjps. */
cmx_status cmx_vjp(cmx_closure f, const cmx_array* primals, int n,
                   const cmx_array* cotangents, int ncot, cmx_array** outputs,
                   int* nout, cmx_array* vjps);

/* Jacobian-vector product. Runs f on primals (n arrays) and writes its
 * outputs and the product of its Jacobian with the tangents (one per
 * primal, same shape): *jvps (malloc'ed, one per output). outputs may be
 * NULL when the caller only wants the jvps. */
cmx_status cmx_jvp(cmx_closure f, const cmx_array* primals, int n,
                   const cmx_array* tangents, cmx_array** outputs,
                   cmx_array** jvps, int* nout);

/* The "not mapped" axis for cmx_vmap's in_axes. */
#define CMX_VMAP_NONE (-1000000)

/* Vectorizing map. Runs f once over a batch: input i is mapped along
 * in_axes[i] (CMX_VMAP_NONE: not mapped, passed whole; negative axes count
 * from the end), all mapped axes have the same size B, and f sees each
 * input without its mapped axis. Output j gets the batch axis at
 * out_axes[j] (nout_axes == 1: the same axis for every output; outputs
 * that do not depend on a mapped input are broadcast along it), or, for
 * CMX_VMAP_NONE, no batch axis: such an output must not depend on a
 * mapped input (an error otherwise). nout_axes == 0 (out_axes may be
 * NULL) returns each output as computed: its batch axis first when it
 * depends on a mapped input, else none (callers that place axes
 * themselves tell the two apart by rank). Writes
 * *outputs (malloc'ed, *nout new references). A primitive with no vmap
 * rule is an error naming it, unless CMX_VMAP_FALLBACK=1 (or
 * cmx_set_vmap_fallback(true)), which runs it once per batch element. */
cmx_status cmx_vmap(cmx_closure f, const cmx_array* inputs, int n,
                    const int* in_axes, const int* out_axes, int nout_axes,
                    cmx_array** outputs, int* nout);
/* Turns the per-element loop for primitives without a vmap rule on or
 * off for this process (initially CMX_VMAP_FALLBACK). */
void cmx_set_vmap_fallback(bool on);

/* Value and gradient. Runs f on inputs (n arrays); its first output must
 * be a scalar (the loss). Writes the outputs (*outputs malloc'ed, *nout;
 * NULL to skip) and, for each of the nargs argnums, the gradient of the
 * first output with respect to inputs[argnums[k]] to grads[k]. Integer
 * and boolean inputs are differentiated as constants (zero gradients). */
cmx_status cmx_value_and_grad(cmx_closure f, const cmx_array* inputs, int n,
                              const int* argnums, int nargs,
                              cmx_array** outputs, int* nout, cmx_array* grads);

/* A function with user-given transform rules (MLX's custom_function).
 * fun computes the outputs. Any of the rules may be NULL (the transform
 * then differentiates/maps fun itself):
 *   vjp:  inputs = primals (n) ++ cotangents (nout) ++ outputs (nout);
 *         returns one cotangent per primal.
 *   jvp:  inputs = primals (n) ++ tangents (n, zeros where the caller
 *         has none, see cmx_custom_jvp_argnums); returns one tangent per
 *         output.
 *   vmap: inputs = the n batched inputs, payload gets the axes through
 *         cmx_custom_vmap_axes(); returns the outputs then one int32
 *         scalar per output with its batch axis.
 * Writes the outputs of applying it to inputs: *outputs, *nout. Arrays
 * fun captures are constants for the transforms. */
typedef struct cmx_custom_function {
  cmx_closure fun;
  cmx_closure vjp;  /* fn NULL: none */
  cmx_closure jvp;  /* fn NULL: none */
  cmx_closure vmap; /* fn NULL: none */
  /* Called exactly once with the payloads: when the last array that may
   * need the closures dies, or at once when the call fails. May be NULL. */
  void (*release)(void* fun_payload, void* vjp_payload, void* jvp_payload,
                  void* vmap_payload);
} cmx_custom_function;
cmx_status cmx_custom_function_apply(const cmx_custom_function* cf,
                                     const cmx_array* inputs, int n,
                                     cmx_array** outputs, int* nout);
/* Inside a custom vmap rule: the in_axes of its inputs (CMX_VMAP_NONE for
 * unmapped ones); writes up to max entries and returns the count. */
int cmx_custom_vmap_axes(int* axes, int max);
/* Inside a custom jvp rule: the indices of the inputs that have a tangent
 * (the others get zeros); writes up to max entries and returns the
 * count. */
int cmx_custom_jvp_argnums(int* argnums, int max);

/* Checkpointing: applies f to inputs like calling it, but the backward
 * pass recomputes f's intermediates from its inputs instead of keeping
 * them, trading compute for memory. release (may be NULL) is called once
 * with f.payload when the last array that may need f dies (at once when
 * the call fails). */
cmx_status cmx_checkpoint_apply(cmx_closure f, void (*release)(void*),
                                const cmx_array* inputs, int n,
                                cmx_array** outputs, int* nout);

#ifdef __cplusplus
}
#endif

#endif
