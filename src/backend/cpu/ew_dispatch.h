/* The CPU's elementwise dispatch: from a table op's primitive id and input
 * dtype to its row function (generated from the op table), with the fast
 * paths that replace some rows, then the elementwise driver. */
#ifndef CMX_BACKEND_CPU_EW_DISPATCH_H
#define CMX_BACKEND_CPU_EW_DISPATCH_H

#include "backend/cpu/cpu.h"

/* A faster implementation of one (op, input dtype) pair, giving the same
 * values as the table's row (tests/c/test_ew_special.c compares them):
 * `row` replaces the generic row; `contig`, if set, computes a whole
 * contiguous output from a contiguous single input of at least
 * contig_min elements (using the thread pool itself). */
typedef struct cmx__cpu_ew_fast {
  int id; /* primitive id; -1 ends a list */
  cmx_dtype dtype;
  cmx__row_fn row;
  void (*contig)(void* out, const void* in, int64_t n);
  int64_t contig_min;
} cmx__cpu_ew_fast;
/* The fast paths of the families (unary.c, binary.c). */
extern const cmx__cpu_ew_fast cmx__cpu_ew_fast_unary[];
extern const cmx__cpu_ew_fast cmx__cpu_ew_fast_binary[];

/* Runs table op p on inputs in (nin of them; Select's condition first)
 * into out[0]: looks up the row for the input dtype (an error naming the
 * primitive when there is none), allocates the output (donating an input
 * buffer where possible) and runs the driver. ctx points to the op's
 * cmx_ew_params or is NULL. */
cmx_status cmx__cpu_ew_eval(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, const void* ctx);

/* The row function of op id on input dtype dt: the fast path's when
 * `generic` is false and one exists, else the table's; NULL when the op
 * does not take dt. For tests. */
cmx__row_fn cmx__cpu_ew_row(int id, cmx_dtype dt, bool generic);

#endif
