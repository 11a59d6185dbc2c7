/* The graph-overhead workload of the C benchmarks (bench_core,
 * bench_eager): a chain of dependent small adds. */
#ifndef CMX_BENCH_GRAPH_H
#define CMX_BENCH_GRAPH_H

#include "cmx/cmx.h"

/* Builds x = x0 + one + one + ... (n dependent adds) on stream s, evaluates
 * it and drops it. Returns CMX_OK or the first failure. */
static inline cmx_status bench_add_chain(cmx_array x0, cmx_array one, int n,
                                         cmx_stream s) {
  cmx_array x = cmx_array_retain(x0);
  for (int i = 0; i < n; i++) {
    cmx_array y;
    cmx_status st = cmx_add(&y, x, one, s);
    cmx_array_release(x);
    if (st != CMX_OK) return st;
    x = y;
  }
  cmx_status st = cmx_array_eval(x);
  cmx_array_release(x);
  return st;
}

#endif
