/* The harness itself and the ops of the core slice (add, astype,
 * broadcast_to) through it. */
#include "harness.h"

static void ref_add(double ar, double ai, double br, double bi, double* o,
                    double* oi) {
  *o = ar + br;
  *oi = ai + bi;
}

/* bool + bool is logical or in MLX (bool stays bool). */
static void ref_add_bool(double ar, double ai, double br, double bi, double* o,
                         double* oi) {
  (void)ai;
  (void)bi;
  *o = (ar != 0) || (br != 0);
  *oi = 0;
}

static void test_layouts_roundtrip(void) {
  int64_t sh[3] = {3, 4, 5};
  for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++) {
    h_tensor t = h_random(sh, 3, H_ALL[di], -50, 50, 3);
    for (int l = 0; l < H_NUM_LAYOUTS; l++) {
      cmx_array a = h_array(&t, (h_layout)l);
      h_tensor back = h_read(a);
      CHECK(h_close(&back, &t, 0, 0, "roundtrip"));
      CHECK((l == H_CONTIG) == cmx_array_is_row_contiguous(a));
      h_free(&back);
      cmx_array_release(a);
    }
    h_free(&t);
  }
}

static void test_add_table(void) {
  static const cmx_dtype no_bool[] = {
      CMX_UINT8,   CMX_UINT16,  CMX_UINT32,    CMX_UINT64,    CMX_INT8,
      CMX_INT16,   CMX_INT32,   CMX_INT64,     CMX_FLOAT16,   CMX_BFLOAT16,
      CMX_FLOAT32, CMX_FLOAT64, CMX_COMPLEX64, CMX_NUM_DTYPES};
  /* Integer sums wrap: inputs span the range so overflow is exercised.
   * Sums round correctly on every backend: the GPU's equal the CPU's bit
   * for bit in every dtype. */
  h_devices_exact = true;
  h_check_binary("add", cmx_add, ref_add, no_bool, h_same_dtype, -100, 100,
                 -100, 100, 1);
  static const cmx_dtype only_bool[] = {CMX_BOOL, CMX_NUM_DTYPES};
  h_check_binary("add", cmx_add, ref_add_bool, only_bool, h_same_dtype, 0, 1, 0,
                 1, 1);
  h_devices_exact = false;
}

static cmx_status astype_i16(cmx_array* o, cmx_array a, cmx_stream s) {
  return cmx_astype(o, a, CMX_INT16, s);
}
static cmx_status astype_f16(cmx_array* o, cmx_array a, cmx_stream s) {
  return cmx_astype(o, a, CMX_FLOAT16, s);
}
static cmx_status astype_c64(cmx_array* o, cmx_array a, cmx_stream s) {
  return cmx_astype(o, a, CMX_COMPLEX64, s);
}
static cmx_dtype to_i16(cmx_dtype d) {
  (void)d;
  return CMX_INT16;
}
static cmx_dtype to_f16(cmx_dtype d) {
  (void)d;
  return CMX_FLOAT16;
}
static cmx_dtype to_c64(cmx_dtype d) {
  (void)d;
  return CMX_COMPLEX64;
}
static void ref_id(double r, double i, double* o, double* oi) {
  *o = r;
  *oi = i;
}
static void ref_trunc_real(double r, double i, double* o, double* oi) {
  (void)i;
  *o = trunc(r);
  *oi = 0;
}

static void test_astype_table(void) {
  h_check_unary("astype->int16", astype_i16, ref_trunc_real, H_REAL, to_i16,
                -300, 300, 1);
  h_check_unary("astype->float16", astype_f16, ref_id, H_REAL, to_f16, -60, 60,
                1);
  h_check_unary("astype->complex64", astype_c64, ref_id, H_ALL, to_c64, -60, 60,
                1);
}

int main(void) {
  RUN(test_layouts_roundtrip);
  RUN(test_add_table);
  RUN(test_astype_table);
  return test_summary("test_harness");
}
