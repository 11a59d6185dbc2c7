/* CPU kernel paths added for speed (benchmarks/bench_sweep.c found them
 * slow), each run at a size and layout that reaches it and checked against
 * a plain reference:
 *   - float16 conversions (branch-free, vectorised; cpu.h, copy.c) against
 *     the public cmx_float_to_float16 / cmx_float16_to_float, bit for bit,
 *     over every half and a dense sample of floats.
 * The pool has 2 threads here (CMX_NUM_THREADS), so large work splits. */
#include <stdint.h>

#include "test.h"

#define S CMX_STREAM_DEFAULT

static uint64_t g_rng = 0x243f6a8885a308d3ull;
static uint32_t rnd32(void) {
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(g_rng >> 32);
}

static cmx_array from(const void* v, const int64_t* shape, int nd,
                      cmx_dtype dt) {
  cmx_array a = NULL;
  OK(cmx_array_from_data(&a, v, shape, nd, dt));
  return a;
}

/* ---------------- float16 conversions ---------------- */

/* Floats around every half's value and rounding midpoint, near the
 * subnormal and overflow thresholds, specials, and a stride over all bit
 * patterns; converted by astype, compared with cmx_float_to_float16. */
static void test_f16_convert(void) {
  int64_t cap = 3 << 20, n = 0;
  uint32_t* bits = malloc((size_t)cap * sizeof(uint32_t));
  for (uint32_t h = 0; h < 0x7c00; h += 1) { /* positive finite halves */
    float f = cmx_float16_to_float((cmx_float16_t)h);
    uint32_t u;
    memcpy(&u, &f, 4);
    /* the value, its neighbours, and the midpoint to the next half */
    for (int d = -1; d <= 1; d++) bits[n++] = u + (uint32_t)d;
    float g = cmx_float16_to_float((cmx_float16_t)(h + 1));
    float mid = (f + g) / 2; /* exact in float */
    memcpy(&u, &mid, 4);
    for (int d = -1; d <= 1; d++) bits[n++] = u + (uint32_t)d;
  }
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) bits[n++] = (uint32_t)u;
  const uint32_t special[] = {
      0x00000000u, 0x00000001u, 0x33000000u, 0x33000001u, 0x387fffffu,
      0x38800000u, 0x477fefffu, 0x477ff000u, 0x477fffffu, 0x47800000u,
      0x7f7fffffu, 0x7f800000u, 0x7f800001u, 0x7fc00000u, 0x7fffffffu};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
    bits[n++] = special[i];
  /* both signs */
  int64_t half = n;
  for (int64_t i = 0; i < half; i++) bits[n++] = bits[i] ^ 0x80000000u;
  CHECK(n <= cap);
  int64_t shape[1] = {n};
  cmx_array x = from(bits, shape, 1, CMX_FLOAT32), h = NULL, back = NULL;
  OK(cmx_astype(&h, x, CMX_FLOAT16, S));
  const uint16_t* hp = NULL;
  OK(cmx_array_data(h, (const void**)&hp));
  int64_t bad = 0;
  for (int64_t i = 0; hp && i < n; i++) {
    float f;
    memcpy(&f, &bits[i], 4);
    if (hp[i] != cmx_float_to_float16(f) && bad++ < 5)
      fprintf(stderr, "f32 -> f16 %08x: %04x, want %04x\n", bits[i], hp[i],
              cmx_float_to_float16(f));
  }
  CHECK_MSG(bad == 0, "%lld float -> half mismatches", (long long)bad);
  /* every half back to float */
  uint16_t* all = malloc(65536 * sizeof(uint16_t));
  for (uint32_t i = 0; i < 65536; i++) all[i] = (uint16_t)i;
  int64_t s2[1] = {65536};
  cmx_array ha = from(all, s2, 1, CMX_FLOAT16);
  OK(cmx_astype(&back, ha, CMX_FLOAT32, S));
  const float* fp = NULL;
  OK(cmx_array_data(back, (const void**)&fp));
  bad = 0;
  for (uint32_t i = 0; fp && i < 65536; i++) {
    float want = cmx_float16_to_float((cmx_float16_t)i);
    if (memcmp(&fp[i], &want, 4) && bad++ < 5)
      fprintf(stderr, "f16 -> f32 %04x wrong\n", i);
  }
  CHECK_MSG(bad == 0, "%lld half -> float mismatches", (long long)bad);
  /* an f16 op through the elementwise rows: negative of every half, and a
   * transposed (strided) conversion */
  cmx_array neg = NULL;
  OK(cmx_negative(&neg, ha, S));
  const uint16_t* np = NULL;
  OK(cmx_array_data(neg, (const void**)&np));
  bad = 0;
  for (uint32_t i = 0; np && i < 65536; i++) {
    uint16_t want = cmx_float_to_float16(-cmx_float16_to_float((uint16_t)i));
    bool nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff);
    if (!nan && np[i] != want && bad++ < 5)
      fprintf(stderr, "negative f16 %04x: %04x want %04x\n", i, np[i], want);
  }
  CHECK_MSG(bad == 0, "%lld negative f16 mismatches", (long long)bad);
  int64_t s3[2] = {512, 1024};
  cmx_array m = from(bits, s3, 2, CMX_FLOAT32), mt = NULL, mh = NULL;
  int perm[2] = {1, 0};
  OK(cmx_transpose(&mt, m, perm, 2, S));
  OK(cmx_astype(&mh, mt, CMX_FLOAT16, S));
  const uint16_t* mp = NULL;
  OK(cmx_array_data(mh, (const void**)&mp));
  bad = 0;
  for (int64_t i = 0; mp && i < 1024; i++)
    for (int64_t j = 0; j < 512; j++) {
      float f;
      memcpy(&f, &bits[j * 1024 + i], 4);
      if (mp[i * 512 + j] != cmx_float_to_float16(f)) bad++;
    }
  CHECK_MSG(bad == 0, "%lld transposed f32 -> f16 mismatches", (long long)bad);
  cmx_array_release_all((cmx_array[]){x, h, back, ha, neg, m, mt, mh}, 8);
  free(bits);
  free(all);
}

int main(void) {
  setenv("CMX_NUM_THREADS", "2", 1);
  (void)rnd32;
  RUN(test_f16_convert);
  return test_summary("test_kernel_paths");
}
