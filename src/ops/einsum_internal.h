/* Shared parts of einsum.c (parsing, evaluation) and einsum_path.c (the
 * contraction order and its report): labels, parsed subscripts, paths. */
#ifndef CMX_OPS_EINSUM_INTERNAL_H
#define CMX_OPS_EINSUM_INTERNAL_H

#include "ops/ops_internal.h"

#define NLAB 52 /* a-z then A-Z */

static inline int lab_index(char c) {
  return c >= 'a' && c <= 'z'   ? c - 'a'
         : c >= 'A' && c <= 'Z' ? c - 'A' + 26
                                : -1;
}
static inline char lab_char(int i) {
  return (char)(i < 26 ? 'a' + i : 'A' + i - 26);
}

/* Labels of one operand (or of the output), one per axis. */
typedef struct {
  int n;
  int8_t lab[NLAB + CMX_MAX_NDIM];
} term;

static inline uint64_t term_set(const term* t) {
  uint64_t s = 0;
  for (int i = 0; i < t->n; i++) s |= 1ull << t->lab[i];
  return s;
}

typedef struct {
  const char* op; /* "einsum" or "einsum_path" for messages */
  int n;
  term* in; /* n */
  term out;
  int64_t dim[NLAB];
  uint64_t out_set, all_set;
} spec;

/* One contraction: cnt positions into the current operand list. */
typedef struct {
  int cnt;
  int pos[2];   /* cnt == 2; the naive remainder lists 0..cnt-1 */
  uint64_t res; /* labels of its result (the output for the last step) */
  uint64_t all; /* labels it touches */
} step;

typedef struct {
  step* steps;
  int nsteps;
  double naive_cost, opt_cost, largest;
  int naive_scaling, opt_scaling;
} path;

static inline double set_size(uint64_t set, const int64_t* dim) {
  double s = 1;
  for (int i = 0; i < NLAB; i++)
    if (set >> i & 1) s *= (double)dim[i];
  return s;
}

static inline int popcount64(uint64_t x) {
  return __builtin_popcountll(x);
}

/* FLOPs of combining `terms` operands over labels `all`, summing some
 * labels when inner. */
static inline double flops(uint64_t all, bool inner, int terms,
                           const int64_t* dim) {
  double f = terms - 1 > 1 ? terms - 1 : 1;
  return set_size(all, dim) * (f + (inner ? 1 : 0));
}

/* Parses subscripts for the n operands into sp (sp->op names the caller
 * in errors); false with the error set. Free with cmx__einsum_spec_free. */
bool cmx__einsum_parse(spec* sp, const char* subscripts, const cmx_array* ops,
                       int n);
void cmx__einsum_spec_free(spec* sp);
/* The contraction path of a parsed spec (MLX's: one step for one or two
 * operands, else the greedy search); false with the error set. Free with
 * cmx__einsum_path_free. */
bool cmx__einsum_find_path(const spec* sp, const cmx_array* ops, path* pa);
void cmx__einsum_path_free(path* pa);

#endif
