/* The fused CPU kernels of mx.fast and quantized_matmul against their
 * composite forms (cmx__fast_composite, cmx__qmm_composite: the graphs the
 * transform rules differentiate) on the same inputs: every mask kind and
 * grouped-query ratio of attention, rope's variants and offsets, norms
 * with and without weight and bias, float16/bfloat16, strided inputs, and
 * quantized products for several bits, both transposes, decode (1 row) and
 * prompt (BLAS) shapes. Also a quantize -> dequantize round trip bound and
 * the op errors, and fp8 (to_fp8 / from_fp8) codes. Runs under ASan/UBSan with
 * the other C tests.
 *
 * Every case but attention's runs on every device (devices.h): on a GPU the
 * GPU kernels are checked against the composite evaluated on that GPU,
 * with GPU-only shapes added (rows long enough for a block a row, and
 * longer than the registers hold; every bit width and group size, 1 to 70
 * rows of x). Attention's GPU kernels are checked against the CPU
 * kernel (test_sdpa_gpu). */
#include <math.h>
#include <stdlib.h>

#include "backend/cuda/gpu.h"
#include "devices.h"
#include "ops/ops_internal.h"
#include "primitives/fast.h"
#include "primitives/quantized.h"
#include "rand_array.h"
#include "test.h"

/* the device the cases run on (main walks every device) */
static cmx_stream g_stream;
#define S g_stream

static uint64_t g_rng = 88172645463325252ull;

/* A random array of the shape in dtype dt on S (rand_array.h). */
static cmx_array rnd(const int64_t* shape, int nd, cmx_dtype dt) {
  return rand_array(&g_rng, shape, nd, dt, 1.f, S);
}

/* Largest |a - b| as float32 (both evaluated); -1 on shape mismatch. */
static double max_diff(cmx_array a, cmx_array b) {
  cmx_array d = NULL, m = NULL, f = NULL;
  double r = -1;
  if (cmx_subtract(&d, a, b, S) == CMX_OK && cmx_abs(&m, d, S) == CMX_OK &&
      cmx_max(&f, m, NULL, 0, false, S) == CMX_OK) {
    OK(cmx_array_item_double(f, &r));
  }
  cmx_array_release(d), cmx_array_release(m), cmx_array_release(f);
  return r;
}

/* out (lazy, from a fast op or quantized_matmul) against the composite of
 * its own primitive on its own inputs. */
static void check_composite(const char* what, cmx_array out, double tol) {
  const cmx_primitive* p = cmx_array_primitive(out);
  CHECK_MSG(p != NULL, "%s: not lazy", what);
  if (!p) return;
  int nin = 0;
  const cmx_array* in = cmx_array_inputs(out, &nin);
  size_t mark = cmx__scope_enter();
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  cmx_array c =
      vt == &cmx__vt_QuantizedMatmul
          ? cmx__qmm_composite(cmx_primitive_params(p), in, S)
          : cmx__fast_composite(vt, cmx_primitive_params(p), in, nin, S);
  cmx_array kept = NULL;
  cmx__scope_exit(mark, c, &kept);
  CHECK_MSG(kept != NULL, "%s: composite failed: %s", what, cmx_last_error());
  if (!kept) return;
  double d = max_diff(out, kept);
  CHECK_MSG(d >= 0 && d <= tol, "%s: |kernel - composite| = %g (tol %g)", what,
            d, tol);
  cmx_array_release(kept);
}

static double tol_of(cmx_dtype dt) {
  return dt == CMX_FLOAT32 ? 2e-5 : dt == CMX_FLOAT16 ? 4e-3 : 3e-2;
}

static void test_norms(void) {
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  for (int k = 0; k < 3; k++) {
    int64_t xs[3] = {3, 5, 67}, ws[1] = {67};
    cmx_array x = rnd(xs, 3, dts[k]), w = rnd(ws, 1, dts[k]),
              b = rnd(ws, 1, dts[k]), y = NULL, xt = NULL;
    OK(cmx_fast_rms_norm(&y, x, w, 1e-5f, S));
    check_composite("rms_norm", y, tol_of(dts[k]));
    cmx_array_release(y), y = NULL;
    OK(cmx_fast_rms_norm(&y, x, NULL, 1e-5f, S));
    check_composite("rms_norm, no weight", y, tol_of(dts[k]));
    cmx_array_release(y), y = NULL;
    OK(cmx_fast_layer_norm(&y, x, w, b, 1e-5f, S));
    check_composite("layer_norm", y, tol_of(dts[k]));
    cmx_array_release(y), y = NULL;
    OK(cmx_fast_layer_norm(&y, x, NULL, b, 1e-5f, S));
    check_composite("layer_norm, bias only", y, tol_of(dts[k]));
    cmx_array_release(y), y = NULL;
    OK(cmx_swapaxes(&xt, x, 0, 2, S)); /* strided rows */
    OK(cmx_array_eval(xt));
    OK(cmx_fast_rms_norm(&y, xt, NULL, 1e-5f, S));
    check_composite("rms_norm, strided", y, tol_of(dts[k]));
    cmx_array_release(y), cmx_array_release(xt);
    cmx_array_release(x), cmx_array_release(w), cmx_array_release(b);
  }
  /* rows for a block of threads, in registers and not (GPU kernels) */
  static const int64_t longs[3] = {4096, 40000, 1001};
  for (int k = 0; k < 3; k++)
    for (int l = 0; l < 3; l++) {
      int64_t xs[2] = {3, longs[l]}, ws[1] = {longs[l]};
      cmx_array x = rnd(xs, 2, dts[k]), w = rnd(ws, 1, dts[k]),
                b = rnd(ws, 1, dts[k]), y = NULL;
      OK(cmx_fast_rms_norm(&y, x, w, 1e-5f, S));
      check_composite("rms_norm, long rows", y, tol_of(dts[k]));
      cmx_array_release(y), y = NULL;
      OK(cmx_fast_layer_norm(&y, x, w, b, 1e-5f, S));
      check_composite("layer_norm, long rows", y, 2 * tol_of(dts[k]));
      cmx_array_release(y);
      cmx_array_release(x), cmx_array_release(w), cmx_array_release(b);
    }
  int64_t xs[2] = {2, 8}, ws[1] = {4};
  cmx_array x = rnd(xs, 2, CMX_FLOAT32), w = rnd(ws, 1, CMX_FLOAT32), y = NULL;
  FAILS(cmx_fast_rms_norm(&y, x, w, 1e-5f, S), CMX_ERR_VALUE, "[rms_norm]");
  cmx_array_release(x), cmx_array_release(w);
}

/* cross_entropy: the kernel against its composite for every dtype, rows
 * short (a warp a row) and long (a block, vector loads and not), strided
 * logits, negative targets; the op's errors and an out-of-range target
 * failing its evaluation. */
static void test_cross_entropy(void) {
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  static const int64_t lens[5] = {1, 37, 1024, 4096, 5003};
  for (int k = 0; k < 3; k++)
    for (int l = 0; l < 5; l++) {
      int64_t xs[3] = {2, 3, lens[l]};
      int64_t tv[6];
      for (int i = 0; i < 6; i++)
        tv[i] = (i * 7919) % lens[l] - (i & 1) * lens[l];
      cmx_array x = rnd(xs, 3, dts[k]), t = NULL, y = NULL;
      OK(cmx_array_from_data(&t, tv, xs, 2, CMX_INT64));
      OK(cmx_fast_cross_entropy(&y, x, t, S));
      CHECK(cmx_array_dtype(y) == CMX_FLOAT32 && cmx_array_ndim(y) == 2);
      check_composite("cross_entropy", y, 1e-4);
      cmx_array_release(y), cmx_array_release(t), cmx_array_release(x);
    }
  int64_t xs[2] = {40, 6}, ts[1] = {6};
  int32_t tv[6] = {0, 39, 5, -1, 17, 2};
  cmx_array x = rnd(xs, 2, CMX_FLOAT32), xt = NULL, t = NULL, y = NULL;
  OK(cmx_transpose(&xt, x, NULL, 0, S));
  OK(cmx_array_from_data(&t, tv, ts, 1, CMX_INT32));
  OK(cmx_fast_cross_entropy(&y, xt, t, S));
  check_composite("cross_entropy, transposed", y, 1e-5);
  cmx_array_release(y), y = NULL;
  tv[2] = 40;
  cmx_array_release(t);
  OK(cmx_array_from_data(&t, tv, ts, 1, CMX_INT32));
  OK(cmx_fast_cross_entropy(&y, xt, t, S));
  FAILS(cmx_array_eval(y), CMX_ERR_INDEX,
        "[cross_entropy] Index 40 is out of bounds for axis 1 with size 40.");
  cmx_array_release(y), y = NULL;
  FAILS(cmx_fast_cross_entropy(&y, x, t, S), CMX_ERR_VALUE,
        "[cross_entropy] targets shape (6) does not match logits shape "
        "(40,6) with the last axis removed.");
  FAILS(cmx_fast_cross_entropy(&y, xt, x, S), CMX_ERR_VALUE,
        "[cross_entropy] targets shape (40,6) does not match");
  cmx_array_release(t), cmx_array_release(xt), cmx_array_release(x);
}

static void test_rope(void) {
  float base = 10000.f;
  int32_t offs[2] = {3, 17};
  int64_t two = 2;
  cmx_array off = NULL;
  OK(cmx_array_from_data(&off, offs, &two, 1, CMX_INT32));
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  for (int k = 0; k < 3; k++)
    for (int trad = 0; trad < 2; trad++)
      for (int dims = 8; dims <= 16; dims += 8) {
        int64_t xs[4] = {2, 3, 7, 16};
        cmx_array x = rnd(xs, 4, dts[k]), y = NULL;
        OK(cmx_fast_rope(&y, x, dims, trad, &base, 0.5f, 5, NULL, NULL, S));
        check_composite("rope", y, 4 * tol_of(dts[k]));
        cmx_array_release(y), y = NULL;
        OK(cmx_fast_rope(&y, x, dims, trad, &base, 1.0f, 0, off, NULL, S));
        check_composite("rope, offsets per batch entry", y, 4 * tol_of(dts[k]));
        cmx_array_release(y), cmx_array_release(x);
      }
  int64_t fs[1] = {4}, xs[3] = {2, 5, 8};
  cmx_array x = rnd(xs, 3, CMX_FLOAT32), fr = NULL, y = NULL, a = NULL;
  a = rnd(fs, 1, CMX_FLOAT32);
  OK(cmx_abs(&fr, a, S));
  cmx_array_release(a), a = NULL;
  cmx_array one = NULL;
  OK(cmx_array_weak_float(&one, 1.0));
  OK(cmx_add(&a, fr, one, S));
  OK(cmx_fast_rope(&y, x, 8, false, NULL, 1.0f, 2, NULL, a, S));
  check_composite("rope, freqs", y, 1e-4);
  cmx_array_release(y), y = NULL;
  FAILS(cmx_fast_rope(&y, x, 7, false, &base, 1.0f, 0, NULL, NULL, S),
        CMX_ERR_VALUE, "dims must be even");
  cmx_array_release(x), cmx_array_release(fr), cmx_array_release(a);
  cmx_array_release(one), cmx_array_release(off);
}

static void test_sdpa(void) {
  static const int64_t LS[5][2] = {{1, 1}, {1, 33}, {5, 5}, {7, 12}, {9, 4}};
  static const int64_t HH[3][2] = {{4, 4}, {4, 2}, {6, 1}};
  const char* modes[4] = {NULL, "causal", "bool", "add"};
  for (int l = 0; l < 5; l++)
    for (int h = 0; h < 3; h++)
      for (int m = 0; m < 4; m++) {
        int64_t L = LS[l][0], Sk = LS[l][1], H = HH[h][0], Hk = HH[h][1];
        int64_t qs[4] = {2, H, L, 16}, ks[4] = {2, Hk, Sk, 16},
                vs[4] = {2, Hk, Sk, 12}, ms[2] = {L, Sk};
        cmx_array q = rnd(qs, 4, CMX_FLOAT32), k = rnd(ks, 4, CMX_FLOAT32),
                  v = rnd(vs, 4, CMX_FLOAT32), mask = NULL, r = NULL, y = NULL,
                  zero = NULL;
        if (m >= 2) {
          r = rnd(ms, 2, CMX_FLOAT32);
          if (m == 2) {
            OK(cmx_array_weak_float(&zero, -0.3));
            OK(cmx_greater(&mask, r, zero, S));
          } else {
            mask = cmx_array_retain(r);
          }
        }
        OK(cmx_fast_scaled_dot_product_attention(
            &y, q, k, v, 0.25f, m == 1 ? "causal" : NULL, mask, NULL, S));
        check_composite("sdpa", y, 2e-5);
        cmx_array_release(y), y = NULL;
        if (m < 2) { /* with sinks */
          int64_t hs[1] = {H};
          cmx_array sk = rnd(hs, 1, CMX_FLOAT32);
          OK(cmx_fast_scaled_dot_product_attention(&y, q, k, v, 0.25f, modes[m],
                                                   NULL, sk, S));
          check_composite("sdpa, sinks", y, 2e-5);
          cmx_array_release(y), cmx_array_release(sk);
        }
        cmx_array_release(q), cmx_array_release(k), cmx_array_release(v);
        cmx_array_release(mask), cmx_array_release(r), cmx_array_release(zero);
      }
  /* half types, keys and values as slices of a longer cache */
  cmx_dtype dts[2] = {CMX_FLOAT16, CMX_BFLOAT16};
  for (int d = 0; d < 2; d++) {
    int64_t qs[4] = {1, 4, 3, 32}, ks[4] = {1, 2, 24, 32};
    int64_t st[4] = {0, 0, 2, 0}, sp[4] = {1, 2, 22, 32};
    cmx_array q = rnd(qs, 4, dts[d]), kc = rnd(ks, 4, dts[d]),
              vc = rnd(ks, 4, dts[d]), k = NULL, v = NULL, y = NULL;
    OK(cmx_slice(&k, kc, st, sp, NULL, S));
    OK(cmx_slice(&v, vc, st, sp, NULL, S));
    OK(cmx_fast_scaled_dot_product_attention(&y, q, k, v, 0.2f, "causal", NULL,
                                             NULL, S));
    check_composite("sdpa, half", y, 2 * tol_of(dts[d]));
    cmx_array_release(y), cmx_array_release(q), cmx_array_release(kc);
    cmx_array_release(vc), cmx_array_release(k), cmx_array_release(v);
  }
  int64_t qs[4] = {1, 3, 2, 8}, ks[4] = {1, 2, 5, 8};
  cmx_array q = rnd(qs, 4, CMX_FLOAT32), k = rnd(ks, 4, CMX_FLOAT32), y = NULL;
  FAILS(cmx_fast_scaled_dot_product_attention(&y, q, k, k, 1.f, NULL, NULL,
                                              NULL, S),
        CMX_ERR_VALUE, "n_heads must be a multiple of n_kv_heads");
  FAILS(cmx_fast_scaled_dot_product_attention(&y, k, k, k, 1.f, "foo", NULL,
                                              NULL, S),
        CMX_ERR_VALUE, "invalid mask option");
  cmx_array_release(q), cmx_array_release(k);
}

static void test_quantized(void) {
  static const int bits[6] = {2, 3, 4, 5, 6, 8};
  static const int64_t rows[4] = {1, 9, 3, 70};
  for (int b = 0; b < 6; b++)
    for (int t = 0; t < 2; t++)
      for (int mi = 0; mi < 4; mi++) {
        int gs = 32 << (mi % 3); /* 32, 64, 128 */
        int64_t M = rows[mi], ws[2] = {t ? 48 : 128, t ? 128 : 128},
                xs[2] = {M, 128};
        cmx_array w = rnd(ws, 2, CMX_FLOAT32), x = rnd(xs, 2, CMX_FLOAT32);
        cmx_array q[3] = {0}, y = NULL, d = NULL;
        OK(cmx_quantize(&q[0], &q[1], &q[2], w, gs, bits[b], "affine", S));
        OK(cmx_quantized_matmul(&y, x, q[0], q[1], q[2], t, gs, bits[b], NULL,
                                S));
        check_composite("quantized_matmul", y, 2e-4);
        /* round trip: within 1.5 steps of the group (MLX's rule) */
        OK(cmx_dequantize(&d, q[0], q[1], q[2], gs, bits[b], NULL,
                          CMX_DTYPE_AUTO, S));
        double err = max_diff(d, w), step = 2.0 / ((1 << bits[b]) - 1);
        CHECK_MSG(err >= 0, "round trip %d bits: no result", bits[b]);
        CHECK_MSG(err >= 0 && err <= 1.5 * step + 1e-5,
                  "round trip %d bits: error %g", bits[b], err);
        for (int i = 0; i < 3; i++) cmx_array_release(q[i]);
        cmx_array_release(y), cmx_array_release(d);
        cmx_array_release(w), cmx_array_release(x);
      }
  int64_t ws[2] = {4, 100};
  cmx_array w = rnd(ws, 2, CMX_FLOAT32), q[3] = {0};
  FAILS(cmx_quantize(&q[0], &q[1], &q[2], w, 64, 4, NULL, S), CMX_ERR_VALUE,
        "divisible by the quantization group size");
  FAILS(cmx_quantize(&q[0], &q[1], &q[2], w, 64, 7, NULL, S), CMX_ERR_VALUE,
        "bits 7 is not supported");
  cmx_array_release(w);
}

/* The microscaled modes through the C API: no biases, round trips within
 * a quarter of the largest magnitude (fp4) or 1/16 (fp8), quantized_matmul
 * equal to matmul with the dequantized matrix, qqmm with w packed or not
 * equal, nvfp4's global scale, and errors (MLX-exactness: pytest). */
static void test_quant_modes(void) {
  static const char* modes[3] = {"mxfp4", "mxfp8", "nvfp4"};
  int64_t ws[2] = {24, 64}, xs[2] = {3, 64};
  cmx_array w = rnd(ws, 2, CMX_FLOAT32), x = rnd(xs, 2, CMX_FLOAT32);
  for (int m = 0; m < 3; m++) {
    cmx_array q[3] = {0}, d = NULL, wt = NULL, y = NULL, r = NULL;
    cmx_array y1 = NULL, y2 = NULL;
    OK(cmx_quantize(&q[0], &q[1], &q[2], w, 0, 0, modes[m], S));
    CHECK_MSG(q[2] == NULL && q[1] && cmx_array_dtype(q[1]) == CMX_UINT8,
              "%s: scales uint8, no biases", modes[m]);
    OK(cmx_dequantize(&d, q[0], q[1], NULL, 0, 0, modes[m], CMX_FLOAT32, S));
    double err = max_diff(d, w), bound = m == 1 ? 4.0 / 16 : 4.0 / 4;
    CHECK_MSG(err >= 0 && err <= bound, "%s round trip: error %g", modes[m],
              err);
    OK(cmx_quantized_matmul(&y, x, q[0], q[1], NULL, true, 0, 0, modes[m], S));
    OK(cmx_transpose(&wt, d, NULL, 0, S));
    OK(cmx_matmul(&r, x, wt, S));
    err = max_diff(y, r);
    CHECK_MSG(err >= 0 && err <= 1e-4, "%s qmm: error %g", modes[m], err);
    OK(cmx_qqmm(&y1, x, q[0], q[1], 0, 0, modes[m], NULL, NULL, S));
    OK(cmx_gather_qqmm(&y2, x, w, NULL, NULL, NULL, 0, 0, modes[m], NULL, NULL,
                       false, S));
    CHECK_MSG(max_diff(y1, y2) == 0, "%s qqmm: packed and not differ",
              modes[m]);
    cmx_array_release(d);
    FAILS(
        cmx_dequantize(&d, q[0], q[1], q[1], 0, 0, modes[m], CMX_DTYPE_AUTO, S),
        CMX_ERR_VALUE, "Biases must be null");
    for (int i = 0; i < 3; i++) cmx_array_release(q[i]);
    cmx_array_release(wt), cmx_array_release(y);
    cmx_array_release(r), cmx_array_release(y1), cmx_array_release(y2);
  }
  /* nvfp4 with a global scale: stored scales times 2688 / gs */
  cmx_array gs = NULL, q[3] = {0}, d = NULL;
  float two = 2.0f;
  int64_t one = 1;
  OK(cmx_array_from_data(&gs, &two, &one, 1, CMX_FLOAT32));
  OK(cmx_quantize_global(&q[0], &q[1], &q[2], w, 16, 4, "nvfp4", gs, S));
  OK(cmx_dequantize_global(&d, q[0], q[1], NULL, 16, 4, "nvfp4", gs,
                           CMX_FLOAT32, S));
  double err = max_diff(d, w);
  CHECK_MSG(err >= 0 && err <= 1.0, "nvfp4 global scale: error %g", err);
  cmx_array y = NULL;
  for (int i = 0; i < 3; i++) cmx_array_release(q[i]);
  FAILS(cmx_quantize_global(&q[0], &q[1], &q[2], w, 32, 4, "mxfp4", gs, S),
        CMX_ERR_VALUE, "only supported for 'nvfp4'");
  FAILS(cmx_quantize(&q[0], &q[1], &q[2], w, 16, 4, "mxfp4", S), CMX_ERR_VALUE,
        "mxfp4 quantization requires group size 32");
  FAILS(cmx_qqmm(&y, x, w, NULL, 0, 0, "affine", NULL, NULL, S), CMX_ERR_VALUE,
        "modes are supported");
  cmx_array_release(d), cmx_array_release(gs);
  cmx_array_release(w), cmx_array_release(x);
}

/* to_fp8 / from_fp8 (E4M3 as uint8): every finite code decodes and
 * encodes back to itself (0x00 and 0x80 included), 0x7F / 0xFF decode to
 * NaN, and some values MLX gives: ties to even, subnormals, saturation,
 * NaN, -0.0; also the op errors. */
static void test_fp8(void) {
  uint8_t codes[256];
  for (int i = 0; i < 256; i++) codes[i] = (uint8_t)i;
  int64_t n = 256;
  cmx_array c = NULL, f = NULL, back = NULL;
  OK(cmx_array_from_data(&c, codes, &n, 1, CMX_UINT8));
  OK(cmx_from_fp8(&f, c, CMX_FLOAT32, S));
  OK(cmx_to_fp8(&back, f, S));
  float fv[256];
  uint8_t bv[256];
  OK(cmx_array_copy_to(f, fv, sizeof fv));
  OK(cmx_array_copy_to(back, bv, sizeof bv));
  int bad = 0;
  for (int i = 0; i < 256; i++) {
    bool nan_code = (i & 127) == 127;
    if (nan_code ? !isnan(fv[i])
                 : (bv[i] != i || (signbit(fv[i]) != 0) != (i > 127)))
      bad++;
  }
  CHECK_MSG(bad == 0, "fp8 round trip: %d codes wrong", bad);
  CHECK(fv[56] == 1.0f && fv[1] == ldexpf(1, -9) && fv[126] == 448.0f &&
        fv[254] == -448.0f && fv[8] == ldexpf(1, -6) && fv[0x78] == 256.0f);
  float xs[] = {1.0625f, 1.1875f, ldexpf(1, -10), 1.5f * ldexpf(1, -9),
                447.0f,  1e6f,    -INFINITY,      NAN,
                -NAN,    -0.0f,   -1.0f,          ldexpf(1, -130)};
  uint8_t want[] = {56, 58, 0, 2, 126, 126, 254, 126, 254, 128, 184, 0};
  int64_t nx = (int64_t)(sizeof xs / sizeof xs[0]);
  uint8_t got[sizeof want];
  cmx_array x = NULL, q = NULL;
  OK(cmx_array_from_data(&x, xs, &nx, 1, CMX_FLOAT32));
  OK(cmx_to_fp8(&q, x, S));
  OK(cmx_array_copy_to(q, got, sizeof got));
  for (int i = 0; i < nx; i++)
    CHECK_MSG(got[i] == want[i], "to_fp8(%g) = %d, want %d", (double)xs[i],
              got[i], want[i]);
  cmx_array d = NULL;
  FAILS(cmx_to_fp8(&d, c, S), CMX_ERR_VALUE,
        "[to_fp8] Only real floating types are supported but x.dtype() == "
        "uint8.");
  FAILS(cmx_from_fp8(&d, f, CMX_FLOAT16, S), CMX_ERR_VALUE,
        "[from_fp8] Input must have type uint8 but x.dtype() == float32.");
  FAILS(cmx_from_fp8(&d, c, CMX_INT32, S), CMX_ERR_VALUE,
        "[from_fp8] Only real floating types are supported but dtype == "
        "int32.");
  cmx_array_release(c), cmx_array_release(f), cmx_array_release(back);
  cmx_array_release(x), cmx_array_release(q);
}

/* One attention case on the GPU (g_stream) against the CPU kernel on the
 * same inputs: q (B, H, L, D), k (B, Hk, S, D), v (B, Hk, S, Dv) of dtype
 * dt, mask mode m (0 none, 1 causal, 2 bool (L, S), 3 additive (B, 1, L,
 * S)), sinks when sk; tr: q, k, v as transposed views of (B, L, H, D)
 * arrays (heads not contiguous). */
typedef struct {
  int64_t B, H, Hk, L, Sk, D, Dv;
  cmx_dtype dt;
  int m, sk, tr;
} sdpa_case;

static cmx_array sdpa_in(int64_t B, int64_t H, int64_t L, int64_t D,
                         cmx_dtype dt, int tr) {
  int64_t sh[4] = {B, H, L, D}, tsh[4] = {B, L, H, D};
  if (!tr) return rnd(sh, 4, dt);
  cmx_array a = rnd(tsh, 4, dt), t = NULL;
  int axes[4] = {0, 2, 1, 3};
  OK(cmx_transpose(&t, a, axes, 4, S));
  cmx_array_release(a);
  return t;
}

/* The case's mask (m: 2 a boolean (L, Sk) one, 3 an additive (B, 1, L,
 * Sk) one, else none), drawn after the inputs and sinks. */
static cmx_array sdpa_case_mask(const sdpa_case* c) {
  int64_t ms[2] = {c->L, c->Sk}, as[4] = {c->B, 1, c->L, c->Sk};
  cmx_array mask = NULL;
  if (c->m == 2) {
    cmx_array r = rnd(ms, 2, CMX_FLOAT32), zero = NULL;
    OK(cmx_array_weak_float(&zero, -0.3));
    OK(cmx_greater(&mask, r, zero, S));
    cmx_array_release(r), cmx_array_release(zero);
  } else if (c->m == 3) {
    mask = rnd(as, 4, c->dt);
  }
  return mask;
}

static void sdpa_gpu_case(const sdpa_case* c) {
  static const char* names[4] = {"none", "causal", "bool", "add"};
  cmx_array q = sdpa_in(c->B, c->H, c->L, c->D, c->dt, c->tr),
            k = sdpa_in(c->B, c->Hk, c->Sk, c->D, c->dt, c->tr),
            v = sdpa_in(c->B, c->Hk, c->Sk, c->Dv, c->dt, c->tr);
  int64_t hs[1] = {c->H};
  cmx_array y = NULL, want = NULL;
  cmx_array sinks = c->sk ? rnd(hs, 1, c->dt) : NULL;
  cmx_array mask = sdpa_case_mask(c);
  const char* mode = c->m == 1 ? "causal" : NULL;
  float scale = 1.0f / sqrtf((float)c->D);
  OK(cmx_fast_scaled_dot_product_attention(&y, q, k, v, scale, mode, mask,
                                           sinks, S));
  OK(cmx_fast_scaled_dot_product_attention(&want, q, k, v, scale, mode, mask,
                                           sinks, h_stream(0)));
  CHECK_MSG(y && cmx_array_primitive(y) &&
                cmx_primitive_vt(cmx_array_primitive(y)) ==
                    &cmx__vt_ScaledDotProductAttention,
            "sdpa on gpu: not the fused primitive");
  double d = max_diff(y, want), tol = c->dt == CMX_FLOAT32   ? 2e-5
                                      : c->dt == CMX_FLOAT16 ? 4e-3
                                                             : 2e-2;
  CHECK_MSG(d >= 0 && d <= tol,
            "sdpa on gpu %s, B %lld H %lld Hk %lld L %lld S %lld D %lld Dv "
            "%lld, mask %s, sinks %d, transposed %d: %g",
            cmx_dtype_name(c->dt), (long long)c->B, (long long)c->H,
            (long long)c->Hk, (long long)c->L, (long long)c->Sk,
            (long long)c->D, (long long)c->Dv, names[c->m], c->sk, c->tr, d);
  cmx_array_release(y), cmx_array_release(want);
  cmx_array_release(q), cmx_array_release(k), cmx_array_release(v);
  cmx_array_release(sinks), cmx_array_release(mask);
}

/* Attention's GPU kernels against the CPU kernel: the CUDA-core kernel
 * (float32, small or odd head dims, decode rows, split keys over a long
 * cache) and the tensor-core one (float16/bfloat16, head dims 64, 80, 96,
 * 128), every mask kind, sinks, grouped-query ratios 1 to 8, odd lengths,
 * causal with L != S, transposed heads. */
static void test_sdpa_gpu(void) {
  static const int64_t LS[3][2] = {{1, 40}, {7, 12}, {9, 4}};
  for (int l = 0; l < 3; l++)
    for (int m = 0; m < 4; m++)
      for (int sk = 0; sk < 2; sk++) {
        sdpa_case c = {2,  4,           2, LS[l][0], LS[l][1], 16,
                       12, CMX_FLOAT32, m, sk,       0};
        sdpa_gpu_case(&c);
      }
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  /* decode: one query row against caches of 1, 17 and 4096 keys, GQA 1 to
   * 8 (every query head of a kv head in one block; the long cache split
   * over blocks and merged) */
  static const int64_t SS[3] = {1, 17, 4096}, RR[4] = {1, 2, 4, 8};
  for (int t = 0; t < 3; t++)
    for (int si = 0; si < 3; si++)
      for (int ri = 0; ri < 4; ri++) {
        sdpa_case c = {2,
                       8,
                       8 / RR[ri],
                       1,
                       SS[si],
                       128,
                       128,
                       dts[t],
                       (si + ri) % 4,
                       ri == 1,
                       si == 2 && ri == 3};
        sdpa_gpu_case(&c);
      }
  /* prompts: tensor-core head dims, every mask, sinks, odd lengths,
   * causal with L < S and L > S, GQA, transposed heads */
  static const int64_t DD[5] = {64, 80, 96, 128, 40};
  for (int t = 0; t < 3; t++)
    for (int di = 0; di < 5; di++)
      for (int m = 0; m < 4; m++) {
        sdpa_case c = {1,        4,      m == 1 ? 1 : 2, 67 + 64 * (di & 1),
                       130 + di, DD[di], DD[di],         dts[t],
                       m,        m < 2,  di == 2};
        sdpa_gpu_case(&c);
      }
  for (int t = 0; t < 3; t++) {
    sdpa_case a = {2, 8, 8, 200, 77, 64, 64, dts[t], 1, 0, 0}; /* L > S */
    sdpa_gpu_case(&a);
    sdpa_case b = {1, 8, 1, 33, 513, 96, 96, dts[t], 1, 1, 1}; /* L < S */
    sdpa_gpu_case(&b);
    sdpa_case e = {1, 2, 2, 70, 1, 128, 128, dts[t], 0, 0, 0}; /* S = 1 */
    sdpa_gpu_case(&e);
    sdpa_case f = {1, 2, 1, 5, 300, 256, 200, dts[t], 3, 0, 0}; /* D 256 */
    sdpa_gpu_case(&f);
  }
}

/* The decode kernel's split records merged in the kernel (the last split
 * block of a (batch, kv head), by a ticket counter) against
 * a cmx_sdpa_combine launch after it (the default;
 * CMX_CUDA_SDPA_DEC_COMBINE=kernel takes the former): the same bits, both
 * within tolerance of the CPU, one launch fewer. Caches of 17, 40, 700 and 1000
 * keys take 2, 3, 44 and 63 splits of 16 keys on a GPU of 132 multiprocessors
 * (a block row or two: fewer than 8 a multiprocessor), 4096 keys the 64 most;
 * RL (query heads a kv head times rows) 1, 2, 3 and 8 take every ROWS variant,
 * with head dims 64, 128 and 256 (float16/bfloat16) every D variant. */
static void sdpa_dec_case(const sdpa_case* c) {
  cmx_array q = sdpa_in(c->B, c->H, c->L, c->D, c->dt, 0),
            k = sdpa_in(c->B, c->Hk, c->Sk, c->D, c->dt, 0),
            v = sdpa_in(c->B, c->Hk, c->Sk, c->Dv, c->dt, 0);
  int64_t hs[1] = {c->H};
  cmx_array want = NULL, y[2] = {0};
  cmx_array sinks = c->sk ? rnd(hs, 1, c->dt) : NULL;
  cmx_array mask = sdpa_case_mask(c);
  OK(cmx_eval((cmx_array[]){q, k, v}, 3));
  if (mask) OK(cmx_array_eval(mask));
  if (sinks) OK(cmx_array_eval(sinks));
  const char* mode = c->m == 1 ? "causal" : NULL;
  float scale = 1.0f / sqrtf((float)c->D);
  uint64_t nl[2];
  for (int path = 0; path < 2; path++) { /* 0 in the kernel, 1 launch */
    if (!path) setenv("CMX_CUDA_SDPA_DEC_COMBINE", "kernel", 1);
    cmx__gpu_encoder_stats g0 = cmx__gpu_encoder_stats_get();
    uint64_t p0 = cmx__gpu_small_puts();
    OK(cmx_fast_scaled_dot_product_attention(&y[path], q, k, v, scale, mode,
                                             mask, sinks, S));
    OK(cmx_array_eval(y[path]));
    /* less the first use's put of a one-element sinks (memory.c) */
    nl[path] = cmx__gpu_encoder_stats_get().launches - g0.launches -
               (cmx__gpu_small_puts() - p0);
    unsetenv("CMX_CUDA_SDPA_DEC_COMBINE");
  }
  OK(cmx_fast_scaled_dot_product_attention(&want, q, k, v, scale, mode, mask,
                                           sinks, h_stream(0)));
  double tol = c->dt == CMX_FLOAT32 ? 2e-5 : c->dt == CMX_FLOAT16 ? 4e-3 : 2e-2;
  double d0 = max_diff(y[0], want), d1 = max_diff(y[1], want);
  double d01 = max_diff(y[0], y[1]);
  CHECK_MSG(d0 >= 0 && d0 <= tol && d1 >= 0 && d1 <= tol && d01 == 0 &&
                nl[0] >= 1 && nl[1] == nl[0] + 1,
            "sdpa decode %s, B %lld H %lld Hk %lld L %lld S %lld D %lld, "
            "mask %d, sinks %d: |kernel merge - cpu| %g, |combine launch - "
            "cpu| %g, |merge - combine| %g (want 0), launches %llu and "
            "%llu (want n, n + 1)",
            cmx_dtype_name(c->dt), (long long)c->B, (long long)c->H,
            (long long)c->Hk, (long long)c->L, (long long)c->Sk,
            (long long)c->D, c->m, c->sk, d0, d1, d01,
            (unsigned long long)nl[0], (unsigned long long)nl[1]);
  cmx_array_release(y[0]), cmx_array_release(y[1]), cmx_array_release(want);
  cmx_array_release(q), cmx_array_release(k), cmx_array_release(v);
  cmx_array_release(sinks), cmx_array_release(mask);
}

static void test_sdpa_gpu_dec_merge(void) {
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  static const int64_t SS[5] = {17, 40, 700, 1000, 4096},
                       DD[3] = {64, 128, 256};
  /* (R, L): RL 1, 2, 3 and 8 (ROWS 1, 2, 4, 8) */
  static const int64_t RLs[4][2] = {{1, 1}, {2, 1}, {3, 1}, {4, 2}};
  int n = 0;
  for (int t = 0; t < 3; t++)
    for (int di = 0; di < 3; di++)
      for (int ri = 0; ri < 4; ri++) {
        if (dts[t] == CMX_FLOAT32 && DD[di] == 256) continue;
        const int64_t Hk = 1 + (n % 2), B = 1 + ((n / 2) % 2);
        sdpa_case c = {B,           Hk * RLs[ri][0], Hk,     RLs[ri][1],
                       SS[n % 5],   DD[di],          DD[di], dts[t],
                       (n / 3) % 4, n % 3 == 1,      0};
        sdpa_dec_case(&c);
        n++;
      }
}

/* Decode steps repeated on one stream (the counters must be back at 0
 * after each launch: a stale ticket leaves rows unwritten), two attention
 * calls chained in one evaluation (the second reads the first's output)
 * and repeated until the stream's batch runs as a replayed CUDA graph with
 * new arguments, and two streams running decode steps at once (each its
 * own counters), all against the CPU. */
static void test_sdpa_gpu_dec_repeat(void) {
  const int64_t B = 1, H = 9, Hk = 3, Sk = 256, D = 64;
  cmx_array k = sdpa_in(B, Hk, Sk, D, CMX_FLOAT32, 0),
            v = sdpa_in(B, Hk, Sk, D, CMX_FLOAT32, 0), two = NULL;
  OK(cmx_array_weak_float(&two, 2.0));
  const float scale = 0.125f;
  for (int it = 0; it < 6; it++) {
    cmx_array q = sdpa_in(B, H, 1, D, CMX_FLOAT32, 0), q2 = NULL, y1 = NULL,
              y2 = NULL, w1 = NULL, w2 = NULL, q2c = NULL;
    OK(cmx_multiply(&q2, q, two, S));
    OK(cmx_fast_scaled_dot_product_attention(&y1, q2, k, v, scale, NULL, NULL,
                                             NULL, S));
    OK(cmx_fast_scaled_dot_product_attention(&y2, y1, k, v, scale, "causal",
                                             NULL, NULL, S));
    OK(cmx_eval((cmx_array[]){y1, y2}, 2));
    OK(cmx_multiply(&q2c, q, two, h_stream(0)));
    OK(cmx_fast_scaled_dot_product_attention(&w1, q2c, k, v, scale, NULL, NULL,
                                             NULL, h_stream(0)));
    OK(cmx_fast_scaled_dot_product_attention(&w2, y1, k, v, scale, "causal",
                                             NULL, NULL, h_stream(0)));
    double d1 = max_diff(y1, w1), d2 = max_diff(y2, w2);
    CHECK_MSG(d1 >= 0 && d1 <= 2e-5 && d2 >= 0 && d2 <= 2e-5,
              "decode step %d: |gpu - cpu| %g and %g", it, d1, d2);
    cmx_array_release(q), cmx_array_release(q2), cmx_array_release(q2c);
    cmx_array_release(y1), cmx_array_release(y2);
    cmx_array_release(w1), cmx_array_release(w2);
  }
  /* two streams of the device at once */
  cmx_stream s2;
  OK(cmx_new_stream(&s2, S.device));
  for (int it = 0; it < 3; it++) {
    cmx_array qa = sdpa_in(B, H, 1, D, CMX_FLOAT32, 0),
              qb = sdpa_in(B, H, 1, D, CMX_FLOAT32, 0), ya = NULL, yb = NULL,
              wa = NULL, wb = NULL;
    OK(cmx_fast_scaled_dot_product_attention(&ya, qa, k, v, scale, NULL, NULL,
                                             NULL, S));
    OK(cmx_fast_scaled_dot_product_attention(&yb, qb, k, v, scale, NULL, NULL,
                                             NULL, s2));
    OK(cmx_eval((cmx_array[]){ya, yb}, 2));
    OK(cmx_fast_scaled_dot_product_attention(&wa, qa, k, v, scale, NULL, NULL,
                                             NULL, h_stream(0)));
    OK(cmx_fast_scaled_dot_product_attention(&wb, qb, k, v, scale, NULL, NULL,
                                             NULL, h_stream(0)));
    double da = max_diff(ya, wa), db = max_diff(yb, wb);
    CHECK_MSG(da >= 0 && da <= 2e-5 && db >= 0 && db <= 2e-5,
              "two streams, step %d: |gpu - cpu| %g and %g", it, da, db);
    cmx_array_release(qa), cmx_array_release(qb), cmx_array_release(ya);
    cmx_array_release(yb), cmx_array_release(wa), cmx_array_release(wb);
  }
  cmx_array_release(k), cmx_array_release(v), cmx_array_release(two);
}

int main(void) {
  for (int i = 0; i < h_ndevices(); i++) {
    char name[32];
    printf("test_fast on %s\n", h_device_name(i, name, sizeof name));
    g_stream = h_stream(i);
    RUN(test_norms);
    RUN(test_rope);
    RUN(test_cross_entropy);
    if (i == 0)
      RUN(test_sdpa);
    else
      RUN(test_sdpa_gpu);
    if (i > 0) RUN(test_sdpa_gpu_dec_merge);
    if (i > 0) RUN(test_sdpa_gpu_dec_repeat);
    RUN(test_quantized);
    RUN(test_quant_modes);
    RUN(test_fp8);
  }
  return test_summary("test_fast");
}
