/* Helpers of the compile-pass tests (test_compile_add_norm, _norm_qmv,
 * _rope_multi, _swiglu): what a compiled call's graph holds. */
#ifndef CMX_TEST_COMPILE_UTIL_H
#define CMX_TEST_COMPILE_UTIL_H

#include "cmx/primitive.h"
#include "compile/compile_internal.h"

/* How many of g's ops are of vt (0 when g is NULL). */
static inline int count_ops(const cmx__cgraph* g,
                            const cmx_primitive_vtable* vt) {
  int n = 0;
  for (int i = 0; g && i < g->nops; i++)
    n += cmx_primitive_vt(g->ops[i].prim) == vt;
  return n;
}

/* The graph a compiled call ran (its output's CompiledGraph op), else
 * NULL. */
static inline const cmx__cgraph* graph_of(cmx_array out) {
  const cmx_primitive* p = cmx_array_primitive(out);
  return p ? cmx__cplan_graph_of(p) : NULL;
}

#endif
