/* depends: outputs equal to their inputs, evaluated after the
 * dependencies; null inputs fail with the op's name. */
#include "shape_util.h"

static void test_depends(void) {
  double v[] = {1, 2, 3, 4, 5, 6};
  int64_t sh[2] = {2, 3}, n = 3;
  cmx_array x = h_from_doubles(v, sh, 2, CMX_FLOAT32),
            y = h_from_doubles(v, &n, 1, CMX_INT32);
  cmx_array dep = NULL;
  OK(cmx_exp(&dep, x, S)); /* lazy */
  CHECK(!cmx_array_is_available(dep));
  cmx_array in[2] = {x, y}, outs[2] = {0};
  OK(cmx_depends(outs, in, 2, &dep, 1, S));
  for (int i = 0; i < 2; i++) {
    CHECK(cmx_array_ndim(outs[i]) == cmx_array_ndim(in[i]) &&
          cmx_array_dtype(outs[i]) == cmx_array_dtype(in[i]));
    h_tensor g = h_read(outs[i]), w = h_read(in[i]);
    CHECK(g.size == w.size);
    for (int64_t k = 0; k < g.size && g.size == w.size; k++)
      CHECK(g.re[k] == w.re[k]);
    h_free(&g), h_free(&w);
  }
  /* evaluating an output evaluated the dependency first */
  CHECK(cmx_array_is_available(dep));
  for (int i = 0; i < 2; i++) cmx_array_release(outs[i]);
  in[1] = NULL;
  FAILS(cmx_depends(outs, in, 2, &dep, 1, S), CMX_ERR_VALUE, "[depends]");
  CHECK(outs[0] == NULL && outs[1] == NULL);
  cmx_array_release(x), cmx_array_release(y), cmx_array_release(dep);
}

int main(void) {
  RUN(test_depends);
  return test_summary("test_depends");
}
