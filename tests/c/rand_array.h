/* Random test inputs from a caller-owned xorshift64 state: the same
 * sequence for a given seed on every machine. */
#ifndef CMX_TEST_RAND_ARRAY_H
#define CMX_TEST_RAND_ARRAY_H

#include <stdint.h>
#include <stdlib.h>

#include "test.h"

/* The next value of state *s, uniform in [-scale, scale). */
static inline float rand_uniform(uint64_t* s, float scale) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return (float)((*s >> 11) * (1.0 / 9007199254740992.0)) * (2 * scale) - scale;
}

/* An evaluated array of the shape in dtype dt on stream st: values drawn
 * from *s in [-scale, scale), made as float32 and converted. */
static inline cmx_array rand_array(uint64_t* s, const int64_t* shape, int nd,
                                   cmx_dtype dt, float scale, cmx_stream st) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= shape[i];
  float* v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = rand_uniform(s, scale);
  cmx_array a = NULL, b = NULL;
  OK(cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT32));
  free(v);
  if (dt == CMX_FLOAT32) {
    b = a;
  } else {
    OK(cmx_astype(&b, a, dt, st));
    cmx_array_release(a);
  }
  OK(cmx_array_eval(b));
  return b;
}

#endif
