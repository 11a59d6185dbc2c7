/* The random module's keys and bits: threefry2x32 known answers, key
 * layouts, bits against the reference layout (sizes, widths, shapes,
 * strided and batched keys), split, and the global key state (MLX's
 * KeySequence, set/restore, concurrent draws). Sources of the expected
 * values: see random_util.h. */
#include <pthread.h>

#include "primitives/random.h"
#include "primitives/registry.h"
#include "random_util.h"

/* ---------------- known answers ---------------- */
static void test_threefry_kat(void) {
  static const uint32_t kat[3][6] = {
      /* ctr0, ctr1, key0, key1 -> out0, out1 (Random123 kat_vectors) */
      {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x6b200159, 0x99ba4efe},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xc4923a9c, 0x483df7a0}};
  for (int i = 0; i < 3; i++) {
    uint32_t o[2];
    ref_threefry(kat[i] + 2, kat[i], o);
    CHECK_MSG(o[0] == kat[i][4] && o[1] == kat[i][5], "KAT %d: %08x %08x", i,
              o[0], o[1]);
  }
  /* The library's first word of key (0, 0) is the first KAT's: bits of
   * one element hash the counter pair (0, 0). */
  cmx_array k = mk_key(0, 0), b = NULL;
  OK(cmx_random_bits(&b, NULL, 0, 4, k, S));
  uint32_t* w = fetch(b);
  CHECK(w[0] == 0x6b200159u);
  free(w);
  cmx_array_release(b);
  /* The pi-digits key and n = 2: the counter pair (0, 1). */
  cmx_array k2 = mk_key(0x13198a2e, 0x03707344);
  OK(cmx_random_bits(&b, (int64_t[]){2}, 1, 4, k2, S));
  w = fetch(b);
  uint32_t o[2];
  ref_threefry((uint32_t[]){0x13198a2e, 0x03707344}, (uint32_t[]){0, 1}, o);
  CHECK(w[0] == o[0] && w[1] == o[1]);
  free(w);
  cmx_array_release(b);
  cmx_array_release(k);
  cmx_array_release(k2);
}

static void check_key_words(cmx_array k, uint32_t a, uint32_t b) {
  CHECK(cmx_array_dtype(k) == CMX_UINT32 && cmx_array_ndim(k) == 1 &&
        cmx_array_dim(k, 0) == 2);
  uint32_t* w = fetch(k);
  CHECK_MSG(w[0] == a && w[1] == b, "key [%u, %u] want [%u, %u]", w[0], w[1], a,
            b);
  free(w);
}

static void test_key(void) {
  static const struct {
    uint64_t seed;
    uint32_t a, b;
  } cases[] = {{0, 0, 0},
               {1, 0, 1},
               {1ull << 32, 1, 0},
               {(1ull << 32) + 1, 1, 1},
               {0xdeadbeefcafef00dull, 0xdeadbeef, 0xcafef00d}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cmx_array k = NULL;
    OK(cmx_random_key(&k, cases[i].seed));
    check_key_words(k, cases[i].a, cases[i].b);
    cmx_array_release(k);
  }
}

/* bits of key (k0, k1) with the given shape and width, as bytes. */
static uint8_t* get_bits(uint32_t k0, uint32_t k1, const int64_t* shape, int nd,
                         int width) {
  cmx_array k = mk_key(k0, k1), b = NULL;
  OK(cmx_random_bits(&b, shape, nd, width, k, S));
  cmx_dtype want = width == 4   ? CMX_UINT32
                   : width == 2 ? CMX_UINT16
                                : CMX_UINT8;
  CHECK(b && cmx_array_dtype(b) == want && cmx_array_ndim(b) == nd);
  uint8_t* p = b ? fetch(b) : calloc(1, 1);
  cmx_array_release(b);
  cmx_array_release(k);
  return p;
}

static void test_bits_known(void) {
  /* MLX random_tests.cpp "test random bits". */
  uint8_t* p = get_bits(0, 0, NULL, 0, 4);
  CHECK(*(uint32_t*)p == 1797259609u);
  free(p);
  p = get_bits(0, 0, NULL, 0, 2);
  CHECK(*(uint16_t*)p == 345);
  free(p);
  p = get_bits(0, 0, NULL, 0, 1);
  CHECK(*p == 89);
  free(p);
  p = get_bits(0, 1, NULL, 0, 4);
  CHECK(*(uint32_t*)p == 507451445u);
  free(p);
  p = get_bits(0, 1, NULL, 0, 2);
  CHECK(*(uint16_t*)p == 6197);
  free(p);
  p = get_bits(0, 1, NULL, 0, 1);
  CHECK(*p == 53);
  free(p);
  p = get_bits(0, 0, (int64_t[]){3, 1}, 2, 4);
  uint32_t* w = (uint32_t*)p;
  CHECK(w[0] == 4146024105u && w[1] == 1351547692u && w[2] == 2718843009u);
  free(p);
  static const uint16_t want8[] = {20137, 63263, 1497,  14756,
                                   16513, 41486, 44591, 19423};
  static const uint16_t want5[] = {20137, 63263, 64300, 20622, 16513, 41486};
  for (int n = 5; n <= 8; n++) {
    p = get_bits(0, 0, (int64_t[]){n}, 1, 2);
    const uint16_t* want = n <= 6 ? want5 : want8;
    bool ok = true;
    for (int i = 0; i < n; i++) ok = ok && ((uint16_t*)p)[i] == want[i];
    CHECK_MSG(ok, "bits((%d), width 2)", n);
    free(p);
  }
  /* Key (1, 1) with shape (3): MLX's vmap test row for that key. */
  p = get_bits(1, 1, (int64_t[]){3}, 1, 4);
  w = (uint32_t*)p;
  CHECK(w[0] == 3725146706u && w[1] == 1802982961u && w[2] == 1349634643u);
  free(p);
}

static void test_bits_reference(void) {
  static const uint32_t keys[][2] = {
      {0, 0}, {0, 1}, {0xffffffff, 0xffffffff}, {123456789, 987654321}};
  static const int widths[] = {1, 2, 4};
  int64_t sizes[64];
  int ns = 0;
  for (int i = 0; i <= 40; i++) sizes[ns++] = i;
  int64_t big[] = {255, 256, 257, 1023, 4097, 8191, 100003, 1000000};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) sizes[ns++] = big[i];
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    for (int wi = 0; wi < 3; wi++)
      for (int si = 0; si < ns; si++) {
        int64_t n = sizes[si];
        int w = widths[wi];
        uint8_t* got = get_bits(keys[k][0], keys[k][1], &n, 1, w);
        uint8_t* want = malloc((size_t)(n * w + 4));
        ref_bits(keys[k], n * w, want);
        CHECK_MSG(memcmp(got, want, (size_t)(n * w)) == 0,
                  "bits key %zu width %d size %lld", k, w, (long long)n);
        free(got);
        free(want);
      }
  /* Multi-dimensional shapes flatten row-major; size-0 dims give empty. */
  int64_t shp[] = {3, 5, 7};
  uint8_t* got = get_bits(7, 9, shp, 3, 2);
  uint8_t want[3 * 5 * 7 * 2];
  ref_bits((uint32_t[]){7, 9}, sizeof want, want);
  CHECK(memcmp(got, want, sizeof want) == 0);
  free(got);
  cmx_array k = mk_key(1, 2), b = NULL;
  OK(cmx_random_bits(&b, (int64_t[]){4, 0, 3}, 3, 4, k, S));
  CHECK(b && cmx_array_size(b) == 0 && cmx_array_dim(b, 0) == 4);
  OK(cmx_array_eval(b));
  cmx_array_release(b);
  cmx_array_release(k);

  /* A strided key (a stepped slice) reads the right words. */
  uint32_t raw[4] = {11, 99, 22, 99};
  cmx_array base = NULL, sk = NULL;
  OK(cmx_array_from_data(&base, raw, (int64_t[]){4}, 1, CMX_UINT32));
  OK(cmx_slice(&sk, base, (int64_t[]){0}, (int64_t[]){4}, (int64_t[]){2}, S));
  OK(cmx_random_bits(&b, (int64_t[]){9}, 1, 4, sk, S));
  uint32_t* gw = fetch(b);
  uint32_t ww[9];
  ref_bits((uint32_t[]){11, 22}, 36, (uint8_t*)ww);
  CHECK(memcmp(gw, ww, sizeof ww) == 0);
  free(gw);
  cmx_array_release(b);
  cmx_array_release(sk);
  cmx_array_release(base);
}

/* The RandomBits primitive with a batch of keys (K, 2) -> (K, M), the
 * form vmap produces: each key's block as if drawn alone (MLX's vmap test
 * values for keys (0, 0) and (1, 1)), also for widths whose blocks are not
 * word-aligned. */
static void test_bits_batched(void) {
  static const int widths[] = {4, 2, 1};
  static const int64_t ms[] = {3, 5, 1, 7, 0, 1001};
  uint32_t kv[6] = {0, 0, 1, 1, 0xabcdef01u, 77};
  cmx_array keys = NULL;
  OK(cmx_array_from_data(&keys, kv, (int64_t[]){3, 2}, 2, CMX_UINT32));
  for (int wi = 0; wi < 3; wi++)
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
      int w = widths[wi];
      cmx__random_bits_params q = {.width = w, .ndim = 1, .shape = {ms[mi]}};
      cmx_primitive* p =
          cmx_primitive_new(&cmx__vt_RandomBits, &q, sizeof q, S);
      int64_t shape[2] = {3, ms[mi]};
      const int64_t* shapes[1] = {shape};
      int nd = 2;
      cmx_dtype dt = w == 4 ? CMX_UINT32 : w == 2 ? CMX_UINT16 : CMX_UINT8;
      cmx_array out = NULL;
      OK(cmx_primitive_apply(&out, 1, p, &keys, 1, shapes, &nd, &dt));
      uint8_t* got = fetch(out);
      int64_t bpk = ms[mi] * w;
      uint8_t* want = malloc((size_t)(3 * bpk + 4));
      for (int k = 0; k < 3; k++) ref_bits(kv + 2 * k, bpk, want + k * bpk);
      CHECK_MSG(memcmp(got, want, (size_t)(3 * bpk)) == 0,
                "batched bits width %d, %lld per key", w, (long long)ms[mi]);
      if (w == 4 && ms[mi] == 3) {
        static const uint32_t mlx[6] = {4146024105u, 1351547692u, 2718843009u,
                                        3725146706u, 1802982961u, 1349634643u};
        CHECK(memcmp(got, mlx, sizeof mlx) == 0);
      }
      free(got);
      free(want);
      cmx_array_release(out);
    }
  cmx_array_release(keys);
}

static void test_split(void) {
  cmx_array k = NULL, ks = NULL;
  OK(cmx_random_key(&k, 0));
  OK(cmx_random_split(&ks, k, 2, S));
  CHECK(cmx_array_ndim(ks) == 2 && cmx_array_dim(ks, 0) == 2 &&
        cmx_array_dim(ks, 1) == 2 && cmx_array_dtype(ks) == CMX_UINT32);
  uint32_t* w = fetch(ks);
  /* JAX docs / MLX tests. */
  CHECK(w[0] == 4146024105u && w[1] == 967050713u && w[2] == 2718843009u &&
        w[3] == 1272950319u);
  free(w);
  cmx_array_release(ks);
  OK(cmx_random_split(&ks, k, 3, S));
  w = fetch(ks);
  static const uint32_t want3[] = {2467461003u, 428148500u,  3186719485u,
                                   3840466878u, 2562233961u, 1946702221u};
  CHECK(memcmp(w, want3, sizeof want3) == 0);
  free(w);
  cmx_array_release(ks);
  /* Against the reference for other keys and counts. */
  for (int num = 0; num < 12; num++) {
    cmx_array k2 = mk_key(31337, (uint32_t)num * 77u);
    OK(cmx_random_split(&ks, k2, num, S));
    CHECK(cmx_array_dim(ks, 0) == num);
    uint8_t* got = fetch(ks);
    uint8_t want[12 * 8];
    ref_bits((uint32_t[]){31337, (uint32_t)num * 77u}, 8 * num, want);
    CHECK_MSG(memcmp(got, want, (size_t)(8 * num)) == 0, "split %d", num);
    free(got);
    cmx_array_release(ks);
    cmx_array_release(k2);
  }
  cmx_array_release(k);
}

/* ---------------- the global key state ---------------- */
static void test_global_state(void) {
  /* Same seed, same draws. */
  uint32_t a[2] = {0, 0}, b[2] = {1, 1};
  for (int rep = 0; rep < 2; rep++) {
    OK(cmx_random_seed(4));
    cmx_array x = NULL, y = NULL;
    OK(cmx_random_bits(&x, NULL, 0, 4, NULL, S));
    OK(cmx_random_bits(&y, NULL, 0, 4, NULL, S));
    uint32_t* px = fetch(x);
    uint32_t* py = fetch(y);
    if (rep == 0) {
      a[0] = *px;
      a[1] = *py;
    } else {
      b[0] = *px;
      b[1] = *py;
    }
    CHECK(*px != *py);
    free(px);
    free(py);
    cmx_array_release(x);
    cmx_array_release(y);
  }
  CHECK(a[0] == b[0] && a[1] == b[1]);

  /* MLX's KeySequence: (state, key) = split(state) per draw, starting
   * from key(seed). */
  OK(cmx_random_seed(7));
  cmx_array st = NULL;
  OK(cmx_random_state(&st));
  check_key_words(st, 0, 7);
  cmx_array_release(st);
  uint32_t state[2] = {0, 7};
  for (int i = 0; i < 5; i++) {
    uint32_t nstate[2], sub[2];
    ref_split2(state, nstate, sub);
    cmx_array x = NULL;
    OK(cmx_random_bits(&x, (int64_t[]){5}, 1, 4, NULL, S));
    uint32_t* got = fetch(x);
    uint32_t want[5];
    ref_bits(sub, 20, (uint8_t*)want);
    CHECK_MSG(memcmp(got, want, sizeof want) == 0, "global draw %d", i);
    free(got);
    cmx_array_release(x);
    memcpy(state, nstate, sizeof state);
    OK(cmx_random_state(&st));
    check_key_words(st, state[0], state[1]);
    cmx_array_release(st);
  }
  /* A sampler with key NULL equals the same sampler with the split key. */
  OK(cmx_random_seed(99));
  uint32_t ns[2], sub[2];
  ref_split2((uint32_t[]){0, 99}, ns, sub);
  cmx_array u1 = NULL, u2 = NULL, sk = mk_key(sub[0], sub[1]);
  int64_t sh[] = {17};
  OK(cmx_random_normal(&u1, sh, 1, CMX_FLOAT32, NULL, NULL, NULL, S));
  OK(cmx_random_normal(&u2, sh, 1, CMX_FLOAT32, NULL, NULL, sk, S));
  float* f1 = fetch(u1);
  float* f2 = fetch(u2);
  CHECK(memcmp(f1, f2, sizeof(float) * 17) == 0);
  free(f1);
  free(f2);
  cmx_array_release(u1);
  cmx_array_release(u2);
  cmx_array_release(sk);
  /* set_state restores a saved state. */
  cmx_array saved = NULL, x1 = NULL, x2 = NULL;
  OK(cmx_random_state(&saved));
  OK(cmx_random_bits(&x1, (int64_t[]){3}, 1, 4, NULL, S));
  OK(cmx_random_set_state(saved));
  OK(cmx_random_bits(&x2, (int64_t[]){3}, 1, 4, NULL, S));
  uint32_t* p1 = fetch(x1);
  uint32_t* p2 = fetch(x2);
  CHECK(memcmp(p1, p2, 12) == 0);
  free(p1);
  free(p2);
  cmx_array_release(x1);
  cmx_array_release(x2);
  cmx_array_release(saved);
}

/* Concurrent draws from the global state get distinct keys: together they
 * are exactly the first N keys of the sequence. */
#define NTHREADS 4
#define PER_THREAD 100
static uint32_t g_drawn[NTHREADS * PER_THREAD][2];

static void* draw_thread(void* arg) {
  int t = (int)(intptr_t)arg;
  for (int i = 0; i < PER_THREAD; i++) {
    cmx_array x = NULL;
    if (cmx_random_bits(&x, (int64_t[]){2}, 1, 4, NULL, S) != CMX_OK) break;
    cmx_array_copy_to(x, g_drawn[t * PER_THREAD + i], 8);
    cmx_array_release(x);
  }
  return NULL;
}

static int cmp_pair(const void* a, const void* b) {
  const uint32_t *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  if (x[1] != y[1]) return x[1] < y[1] ? -1 : 1;
  return 0;
}

static void test_threads(void) {
  OK(cmx_random_seed(2024));
  memset(g_drawn, 0, sizeof g_drawn);
  pthread_t th[NTHREADS];
  for (int t = 0; t < NTHREADS; t++)
    pthread_create(&th[t], NULL, draw_thread, (void*)(intptr_t)t);
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  static uint32_t want[NTHREADS * PER_THREAD][2];
  uint32_t state[2] = {0, 2024};
  for (int i = 0; i < NTHREADS * PER_THREAD; i++) {
    uint32_t ns[2], sub[2];
    ref_split2(state, ns, sub);
    ref_bits(sub, 8, (uint8_t*)want[i]);
    memcpy(state, ns, sizeof state);
  }
  qsort(g_drawn, NTHREADS * PER_THREAD, 8, cmp_pair);
  qsort(want, NTHREADS * PER_THREAD, 8, cmp_pair);
  CHECK(memcmp(g_drawn, want, sizeof want) == 0);
}

int main(void) {
  RUN(test_threefry_kat);
  RUN(test_key);
  RUN(test_bits_known);
  RUN(test_bits_reference);
  RUN(test_bits_batched);
  RUN(test_split);
  RUN(test_global_state);
  RUN(test_threads);
  return test_summary("test_random");
}
