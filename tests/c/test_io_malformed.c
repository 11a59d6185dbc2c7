/* Malformed, truncated and hostile files: every loader must fail with a
 * clear "[load...]" error (never crash, never read out of bounds: each
 * input sits in an exact-size allocation, so ASan catches overreads).
 * Covers every truncation of valid files, random mutations, hand-built
 * hostile headers (bad magic, offsets past the end, sizes that overflow,
 * bad JSON, zip bombs, deep nesting), and the fuzzers' regression inputs
 * under tests/c/regressions/<format>/. */
#define _GNU_SOURCE /* nftw, memmem */
#include "io_test_util.h"

static const char* const k_fmt[] = {"npy", "npz", "safetensors", "gguf"};

/* Loads n bytes (in an exact-size copy) as fmt; returns the status. */
static cmx_status load_copy(const char* fmt, const uint8_t* d, size_t n) {
  uint8_t* c = malloc(n ? n : 1);
  if (n) memcpy(c, d, n);
  cmx_loaded r;
  cmx_status st =
      cmx_load_bytes(&r, c, n, fmt, strcmp(fmt, "npy") && strcmp(fmt, "npz"),
                     CMX_STREAM_DEFAULT);
  cmx_loaded_clear(&r);
  free(c);
  return st;
}

static bool clean_error(cmx_status st) {
  return (st == CMX_ERR_VALUE || st == CMX_ERR_NOT_IMPLEMENTED) &&
         strncmp(cmx_last_error(), "[load", 5) == 0;
}

/* A file that must fail with a message containing needle. */
static void expect_fail(const char* fmt, const uint8_t* d, size_t n,
                        const char* needle, const char* what) {
  cmx_status st = load_copy(fmt, d, n);
  bool skipped = st == CMX_ERR_NOT_IMPLEMENTED;
  CHECK_MSG(clean_error(st) && (skipped || strstr(cmx_last_error(), needle)),
            "%s: %s -> %s '%s' (want '%s')", fmt, what, cmx_status_name(st),
            cmx_last_error(), needle);
}

/* ---------------- valid seeds ---------------- */

typedef struct {
  uint8_t* d;
  size_t n;
} blob;

static blob g_seed[5]; /* npy, npz stored, npz deflated, safetensors, gguf */
static const char* const k_seed_fmt[5] = {"npy", "npz", "npz", "safetensors",
                                          "gguf"};

static void make_seeds(void) {
  float v[6] = {1, 2, 3, 4, 5, 6};
  int32_t iv[3] = {7, -8, 9};
  cmx_array a = NULL, b = NULL;
  OK(cmx_array_from_data(&a, v, (int64_t[]){2, 3}, 2, CMX_FLOAT32));
  OK(cmx_array_from_data(&b, iv, (int64_t[]){3}, 1, CMX_INT32));
  cmx_named_arrays* m = NULL;
  OK(cmx_named_arrays_new(&m));
  OK(cmx_named_arrays_set(m, "a", a));
  OK(cmx_named_arrays_set(m, "b", b));
  cmx_metadata* meta = NULL;
  OK(cmx_metadata_new(&meta));
  OK(cmx_metadata_set_string(meta, "name", "seed"));
  OK(cmx_save(tpath("s.npy"), a));
  OK(cmx_savez(tpath("s.npz"), m));
  cmx_status zst = cmx_savez_compressed(tpath("sz.npz"), m);
  OK(cmx_save_safetensors(tpath("s.safetensors"), m, meta));
  cmx_meta_value* arr = NULL;
  OK(cmx_meta_new_array(&arr, CMX_META_STRING));
  cmx_meta_value* s = NULL;
  OK(cmx_meta_new_string(&s, "tok"));
  OK(cmx_meta_array_append(arr, s));
  OK(cmx_metadata_set(meta, "tokens", arr));
  OK(cmx_save_gguf(tpath("s.gguf"), m, meta));
  const char* files[5] = {"s.npy", "s.npz", zst == CMX_OK ? "sz.npz" : "s.npz",
                          "s.safetensors", "s.gguf"};
  for (int i = 0; i < 5; i++) {
    g_seed[i].d = read_file(tpath(files[i]), &g_seed[i].n);
    CHECK(g_seed[i].d != NULL);
  }
  cmx_metadata_free(meta);
  cmx_named_arrays_free(m);
  cmx_array_release(a);
  cmx_array_release(b);
}

static void test_truncations(void) {
  for (int i = 0; i < 5; i++) {
    CHECK_MSG(load_copy(k_seed_fmt[i], g_seed[i].d, g_seed[i].n) == CMX_OK ||
                  cmx_last_status() == CMX_ERR_NOT_IMPLEMENTED,
              "seed %d: %s", i, cmx_last_error());
    int bad = 0;
    for (size_t n = 0; n < g_seed[i].n; n++)
      if (!clean_error(load_copy(k_seed_fmt[i], g_seed[i].d, n))) {
        if (!bad++)
          fprintf(stderr, "seed %d truncated to %zu: %s '%s'\n", i, n,
                  cmx_status_name(cmx_last_status()), cmx_last_error());
      }
    CHECK_MSG(bad == 0, "%d truncations of seed %d did not fail cleanly", bad,
              i);
  }
}

static void test_mutations(void) {
  for (int i = 0; i < 5; i++) {
    uint8_t* d = malloc(g_seed[i].n);
    int bad = 0, loaded = 0;
    for (int trial = 0; trial < 3000; trial++) {
      memcpy(d, g_seed[i].d, g_seed[i].n);
      int flips = 1 + (int)(rnd() % 4);
      for (int f = 0; f < flips; f++) {
        size_t at = rnd() % g_seed[i].n;
        d[at] = (rnd() % 3 == 0) ? (uint8_t)rnd()
                                 : (uint8_t)(d[at] ^ (1u << (rnd() % 8)));
      }
      cmx_status st = load_copy(k_seed_fmt[i], d, g_seed[i].n);
      loaded += st == CMX_OK;
      if (st != CMX_OK && !clean_error(st) && !bad++)
        fprintf(stderr, "mutation of seed %d: %s '%s'\n", i,
                cmx_status_name(st), cmx_last_error());
    }
    CHECK_MSG(bad == 0, "%d mutations of seed %d failed uncleanly", bad, i);
    printf("seed %d (%s, %zu bytes): 3000 mutations, %d still load\n", i,
           k_seed_fmt[i], g_seed[i].n, loaded);
    free(d);
  }
}

/* ---------------- hand-built hostile files ---------------- */

typedef struct {
  uint8_t b[4096];
  size_t n;
} buf;

static void add(buf* b, const void* p, size_t n) {
  memcpy(b->b + b->n, p, n);
  b->n += n;
}
static void add16(buf* b, uint16_t v) {
  add(b, &v, 2);
}
static void add32(buf* b, uint32_t v) {
  add(b, &v, 4);
}
static void add64(buf* b, uint64_t v) {
  add(b, &v, 8);
}
static void addstr(buf* b, const char* s) {
  add64(b, strlen(s));
  add(b, s, strlen(s));
}

static void npy_case(const char* header, size_t data, const char* needle) {
  buf b = {.n = 0};
  add(&b, "\x93NUMPY\x01\x00", 8);
  add16(&b, (uint16_t)strlen(header));
  add(&b, header, strlen(header));
  memset(b.b + b.n, 0, data);
  b.n += data;
  expect_fail("npy", b.b, b.n, needle, header);
}

/* A string literal as (bytes, length without the terminator). */
#define LIT(s) (const uint8_t*)(s), sizeof(s) - 1

static void test_npy_hostile(void) {
  expect_fail("npy", LIT("\x93NUMPZ\x01\x00\x10\x00{}      "), "bad magic",
              "magic");
  expect_fail("npy", LIT("\x93NUMPY\x07\x00\x10\x00{}      "),
              "Unsupported npy format version 7.0", "version");
  expect_fail("npy", LIT("\x93NUMPY\x01\x00\xff\xff{}      "),
              "header length 65535 is larger", "header length");
  expect_fail("npy", LIT("\x93NUMPY\x02\x00\xff\xff\xff\xff{}"),
              "header length", "v2 header length");
  npy_case(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4000000000, "
      "4000000000, 4000000000), }",
      0, "npy shape is too large");
  npy_case(
      "{'descr': '<f4', 'fortran_order': False, 'shape': "
      "(99999999999999999999,), }",
      0, "Invalid npy header");
  npy_case(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (0, "
      "4611686018427387904, 4), }",
      0, "array shape is too large"); /* empty, but strides overflow */
  npy_case("{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }", 16,
           "file is truncated");
  npy_case("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 0,
           "Invalid npy header");
  npy_case("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", 8,
           "unsupported npy dtype '|O'");
  npy_case(
      "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), "
      "}",
      8, "unsupported npy dtype description");
  npy_case("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", 8,
           "Invalid npy header");
  npy_case("{'descr': '<f4', 'shape': (1,), }", 8, "lacks");
  npy_case(
      "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
      "'shape': (1,), }",
      8, "unexpected or repeated key 'descr'");
  npy_case("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x", 8,
           "Invalid npy header");
  npy_case(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,"
      "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), }",
      8, "more than 32 dimensions");
  npy_case("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 8,
           "unexpected or repeated key 'x'");
  npy_case("{'descr': '<f4", 0, "Invalid npy header");
}

static void st_case(const char* json, size_t data, const char* needle) {
  buf b = {.n = 0};
  add64(&b, strlen(json));
  add(&b, json, strlen(json));
  memset(b.b + b.n, 0, data);
  b.n += data;
  expect_fail("safetensors", b.b, b.n, needle, json);
}

static void test_safetensors_hostile(void) {
  buf b = {.n = 0};
  add64(&b, 0);
  expect_fail("safetensors", b.b, b.n, "Invalid json header length 0", "len 0");
  b.n = 0;
  add64(&b, 1ull << 63);
  add(&b, "{}", 2);
  expect_fail("safetensors", b.b, b.n, "Invalid json header length", "len big");
  st_case("{\"a\": {\"dtype\": \"F32\"", 0, "Invalid json header");
  st_case("[1, 2]", 0, "not an object");
  st_case("{} {}", 0, "data after the header");
  st_case("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
          "file is truncated: tensor 'a' ends at data byte 8");
  st_case("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
          "invalid data_offsets");
  st_case("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 8,
          "has 4 bytes of data but its shape and dtype need 8");
  st_case(
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,1e300]}}", 8,
      "invalid data_offsets");
  st_case("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8,
          "invalid data_offsets");
  st_case(
      "{\"a\":{\"dtype\":\"F8_E5M2\",\"shape\":[2],\"data_offsets\":[0,2]}}", 8,
      "unsupported dtype F8_E5M2 (tensor 'a')");
  st_case("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}",
          8, "invalid dimension");
  st_case("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,8]}}",
          8, "invalid dimension");
  st_case(
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,"
      "4294967296],\"data_offsets\":[0,8]}}",
      8, "shape is too large");
  st_case(
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[9007199254740992,"
      "9007199254740992],\"data_offsets\":[0,0]}}",
      8, "shape is too large");
  st_case(
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
      8, "duplicate tensor name 'a'");
  st_case("{\"__metadata__\":{\"k\":3}}", 0,
          "__metadata__ values must be strings");
  st_case("{\"__metadata__\":[1]}", 0, "__metadata__ must be an object");
  st_case("{\"a\":3}", 0, "entry 'a' is not an object");
  st_case("{\"a\":{\"dtype\":1,\"shape\":[1],\"data_offsets\":[0,4]}}", 8,
          "needs a string 'dtype'");
  /* Deep nesting: cJSON's nesting limit, not recursion, stops it. */
  char deep[3000];
  size_t k = 0;
  k += (size_t)snprintf(deep, sizeof deep, "{\"a\":");
  for (int i = 0; i < 1400; i++) deep[k++] = '[';
  deep[k] = 0;
  st_case(deep, 0, "Invalid json header");
}

/* A minimal zip directory for npz hostility: one central entry + EOCD. */
static void npz_case(uint16_t method, uint16_t flags, uint32_t csize,
                     uint32_t usize, uint32_t local_off, uint16_t entries,
                     uint32_t cd_off_bias, const char* needle) {
  buf b = {.n = 0};
  /* local header + 8 bytes of "data" */
  add32(&b, 0x04034b50);
  add16(&b, 20), add16(&b, flags), add16(&b, method), add32(&b, 0);
  add32(&b, 0), add32(&b, csize), add32(&b, usize), add16(&b, 5), add16(&b, 0);
  add(&b, "a.npy", 5);
  add(&b, "\x93NUMPY\x01\x00", 8);
  uint32_t cd_off = (uint32_t)b.n;
  add32(&b, 0x02014b50);
  add16(&b, 20), add16(&b, 20), add16(&b, flags), add16(&b, method);
  add32(&b, 0), add32(&b, 0), add32(&b, csize), add32(&b, usize);
  add16(&b, 5), add16(&b, 0), add16(&b, 0), add16(&b, 0), add16(&b, 0);
  add32(&b, 0), add32(&b, local_off);
  add(&b, "a.npy", 5);
  uint32_t cd_size = (uint32_t)b.n - cd_off;
  add32(&b, 0x06054b50);
  add16(&b, 0), add16(&b, 0), add16(&b, entries), add16(&b, entries);
  add32(&b, cd_size), add32(&b, cd_off + cd_off_bias), add16(&b, 0);
  expect_fail("npz", b.b, b.n, needle, needle);
}

static void test_npz_hostile(void) {
  expect_fail("npz", LIT("PK\x03\x04 not really a zip file"),
              "no end of central directory", "no eocd");
  npz_case(0, 0, 8, 8, 0, 1, 1000, "central directory lies outside");
  npz_case(0, 0, 8, 8, 0, 60000, 0, "zip directory claims 60000 entries");
  npz_case(0, 0, 8, 8, 100000, 1, 0, "file is truncated");
  npz_case(0, 0, 0x7FFFFFFF, 0x7FFFFFFF, 0, 1, 0, "extends past the end");
  npz_case(12, 0, 8, 8, 0, 1, 0, "unsupported compression method 12");
  npz_case(0, 1, 8, 8, 0, 1, 0, "is encrypted");
  npz_case(0, 0, 8, 9, 0, 1, 0, "different sizes");
  npz_case(8, 0, 8, 0x7FFFFFFF, 0, 1, 0, "impossible compression ratio");
  npz_case(0, 0, 8, 8, 0, 1, 0, "too short for a .npy file"); /* cut short */
  /* A CRC mismatch in a stored member of a valid archive. */
  uint8_t* d = malloc(g_seed[1].n);
  memcpy(d, g_seed[1].d, g_seed[1].n);
  uint8_t* data = memmem(d, g_seed[1].n, "\x93NUMPY", 6);
  CHECK(data != NULL);
  if (data) {
    data[130] ^= 0x40; /* inside the first member's float data */
    expect_fail("npz", d, g_seed[1].n, "CRC-32 mismatch in member 'a.npy'",
                "crc");
  }
  free(d);
}

static void gguf_header(buf* b, uint32_t version, uint64_t nt, uint64_t nkv) {
  b->n = 0;
  add(b, "GGUF", 4);
  add32(b, version);
  add64(b, nt);
  add64(b, nkv);
}

/* One tensor info after an empty metadata section, plus its data. */
static void gguf_tensor_case(const char* name, uint32_t ndim,
                             const uint64_t* dims, uint32_t type,
                             uint64_t offset, size_t data, const char* needle) {
  buf b;
  gguf_header(&b, 3, 1, 0);
  addstr(&b, name);
  add32(&b, ndim);
  for (uint32_t i = 0; i < ndim; i++) add64(&b, dims[i]);
  add32(&b, type);
  add64(&b, offset);
  while (b.n % 32) add(&b, "", 1);
  memset(b.b + b.n, 0, data);
  b.n += data;
  expect_fail("gguf", b.b, b.n, needle, needle);
}

static void test_gguf_hostile(void) {
  buf b;
  gguf_header(&b, 3, 0, 0);
  memcpy(b.b, "GGUG", 4);
  expect_fail("gguf", b.b, b.n, "bad magic", "magic");
  gguf_header(&b, 1, 0, 0);
  expect_fail("gguf", b.b, b.n, "unsupported GGUF version 1", "v1");
  gguf_header(&b, 0x03000000, 0, 0);
  expect_fail("gguf", b.b, b.n, "big-endian GGUF files are not supported",
              "big endian");
  gguf_header(&b, 3, 1ull << 60, 0);
  expect_fail("gguf", b.b, b.n, "do not fit", "tensor count");
  { /* more tensors than supported, in a file large enough to hold them */
    size_t big = 24 * ((1u << 20) + 2) + 24;
    uint8_t* z = calloc(1, big);
    memcpy(z, "GGUF\x03\0\0\0", 8);
    uint64_t nt = (1u << 20) + 1;
    memcpy(z + 8, &nt, 8);
    expect_fail("gguf", z, big, "1048577 tensors is more than the 1048576",
                "tensor cap");
    free(z);
  }
  gguf_header(&b, 3, 0, UINT64_MAX);
  expect_fail("gguf", b.b, b.n, "do not fit", "kv count");
  gguf_header(&b, 3, 0, 1);
  add64(&b, 1ull << 62);
  add(&b, "key", 3);
  memset(b.b + b.n, 0, 64);
  b.n += 64;
  expect_fail("gguf", b.b, b.n, "metadata key of 4611686018427387904 bytes",
              "key length");
  gguf_header(&b, 3, 0, 1);
  addstr(&b, "k");
  add32(&b, 99);
  add64(&b, 0);
  expect_fail("gguf", b.b, b.n, "unknown metadata value type 99", "type");
  gguf_header(&b, 3, 0, 1);
  addstr(&b, "k");
  add32(&b, 9);
  add32(&b, 10);
  add64(&b, 1ull << 61);
  expect_fail("gguf", b.b, b.n, "metadata array of 2305843009213693952 uint64",
              "array length");
  gguf_header(&b, 3, 0, 1);
  addstr(&b, "k");
  add32(&b, 9);
  for (int i = 0; i < 40; i++) {
    add32(&b, 9);
    add64(&b, 1);
  }
  add32(&b, 0);
  add64(&b, 0);
  expect_fail("gguf", b.b, b.n, "nest deeper than 32", "depth");
  gguf_header(&b, 3, 0, 2);
  for (int i = 0; i < 2; i++) {
    addstr(&b, "dup");
    add32(&b, 0);
    add(&b, "x", 1);
  }
  expect_fail("gguf", b.b, b.n, "duplicate metadata key 'dup'", "dup key");
  gguf_header(&b, 3, 0, 1);
  addstr(&b, "general.alignment");
  add32(&b, 4);
  add32(&b, 3);
  expect_fail("gguf", b.b, b.n, "general.alignment must be", "alignment");
  gguf_header(&b, 3, 0, 1);
  addstr(&b, "s");
  add32(&b, 8);
  add64(&b, 100);
  add(&b, "short", 5);
  expect_fail("gguf", b.b, b.n, "file is truncated", "string");
  uint64_t d2[2] = {4, 4}, huge[3] = {1ull << 40, 1ull << 40, 1ull << 40};
  gguf_tensor_case("t", 2, d2, 0, 0, 32, "tensor 't' data lies past the end");
  gguf_tensor_case("t", 2, d2, 0, 1ull << 63, 64, "lies past the end");
  gguf_tensor_case("t", 2, d2, 0, UINT64_MAX - 31, 64, "lies past the end");
  gguf_tensor_case("t", 3, huge, 0, 0, 64, "shape is too large");
  uint64_t big1[1] = {UINT64_MAX};
  gguf_tensor_case("t", 1, big1, 0, 0, 64, "dimension is too large");
  uint64_t d40[40];
  for (int i = 0; i < 40; i++) d40[i] = 1;
  gguf_tensor_case("t", 40, d40, 0, 0, 64, "has 40 dimensions");
  gguf_tensor_case("t", 2, d2, 0, 4, 128, "not a multiple of the alignment");
  gguf_tensor_case("t", 2, d2, 13, 0, 128, "unsupported tensor type Q5_K");
  gguf_tensor_case("t", 2, d2, 77, 0, 128, "unsupported tensor type unknown");
  uint64_t q[1] = {40};
  gguf_tensor_case("t", 1, q, 2, 0, 128,
                   "needs a last dimension that is a "
                   "multiple of 32");
  gguf_tensor_case("t", 0, q, 12, 0, 128, "multiple of 256");
  /* Two tensors with one name; a quantized one whose scales collide. */
  gguf_header(&b, 3, 2, 0);
  for (int i = 0; i < 2; i++) {
    addstr(&b, i ? "w.scales" : "w.weight");
    add32(&b, 1);
    add64(&b, 32);
    add32(&b, i ? 0 : 2);
    add64(&b, i ? 32 : 0);
  }
  while (b.n % 32) add(&b, "", 1);
  memset(b.b + b.n, 0, 160);
  b.n += 160;
  expect_fail("gguf", b.b, b.n, "Duplicate parameter name w.scales", "dup");
}

/* Inputs the fuzzers once crashed on stay as regression tests. */
static void test_regressions(void) {
  int files = 0;
  for (int f = 0; f < 4; f++) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", CMX_IO_REGRESSIONS, k_fmt[f]);
    DIR* d = opendir(dir);
    struct dirent* e;
    while (d && (e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      char p[1024];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      size_t n;
      uint8_t* data = read_file(p, &n);
      if (!data) continue;
      files++;
      cmx_status st = load_copy(k_fmt[f], data, n);
      CHECK_MSG(st == CMX_OK || clean_error(st), "%s: %s '%s'", p,
                cmx_status_name(st), cmx_last_error());
      free(data);
    }
    if (d) closedir(d);
  }
  printf("regression inputs: %d\n", files);
}

int main(void) {
  tdir_init();
  make_seeds();
  RUN(test_truncations);
  RUN(test_mutations);
  RUN(test_npy_hostile);
  RUN(test_safetensors_hostile);
  RUN(test_npz_hostile);
  RUN(test_gguf_hostile);
  RUN(test_regressions);
  for (int i = 0; i < 5; i++) free(g_seed[i].d);
  tdir_cleanup();
  return test_summary("test_io_malformed");
}
