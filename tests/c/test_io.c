/* File I/O: round trips of every dtype and shape through .npy, .npz,
 * .safetensors and .gguf, metadata round trips (every GGUF value type),
 * strided and lazy inputs, extension handling, numpy corner cases built by
 * hand (Fortran order, big-endian), quantized GGUF tensors against a plain
 * double-precision dequantizer, and the containers' API. The malformed-file
 * corpus is in test_io_malformed.c. */
#define _GNU_SOURCE /* nftw, memmem */
#include "core/internal.h"
#include "io_test_util.h"

static const int64_t k_shapes[][3] = {{0}, {0}, {3, 0, 2}, {5}, {2, 3, 4}};
static const int k_ndims[] = {0, 1, 3, 1, 3};
#define NSHAPES 5

static cmx_array from_bytes(const uint8_t* d, const int64_t* shape, int nd,
                            cmx_dtype dt) {
  cmx_array a = NULL;
  OK(cmx_array_from_data(&a, d, shape, nd, dt));
  return a;
}

/* A status the optional dependencies may give instead of success. */
static bool missing_dep(cmx_status st, const char* what) {
  if (st == CMX_ERR_NOT_IMPLEMENTED && strstr(cmx_last_error(), what)) {
    printf("note: built without %s: %s\n", what, cmx_last_error());
    return true;
  }
  return false;
}

/* ---------------- npy ---------------- */

static void test_npy_roundtrip(void) {
  for (int dt = 0; dt < CMX_NUM_DTYPES; dt++) {
    for (int s = 0; s < NSHAPES; s++) {
      const int64_t* shape = k_shapes[s];
      int nd = k_ndims[s];
      uint8_t* d = rand_data((cmx_dtype)dt, shape_size(shape, nd));
      cmx_array a = from_bytes(d, shape, nd, (cmx_dtype)dt);
      char name[64];
      snprintf(name, sizeof name, "a_%d_%d", dt, s);
      OK(cmx_save(tpath(name), a));
      snprintf(name, sizeof name, "a_%d_%d.npy", dt, s);
      CHECK(file_exists(tpath(name)));
      cmx_array b = NULL;
      OK(cmx_load_npy(&b, tpath(name), CMX_STREAM_DEFAULT));
      CHECK_MSG(array_matches(b, (cmx_dtype)dt, shape, nd, d), "%s shape %d",
                cmx_dtype_name((cmx_dtype)dt), s);
      cmx_array_release(a);
      cmx_array_release(b);
      free(d);
    }
  }
  CHECK(count_files(".tmp-") == 0); /* no temporary files left behind */
}

/* A strided view of base (sharing its buffer) for save tests. */
static cmx_array make_view(cmx_array base, const int64_t* shape,
                           const int64_t* strides, int nd, int64_t offset) {
  OK(cmx_array_eval(base));
  cmx_array v = cmx__node_new("test", shape, nd, base->dtype);
  v->buf = cmx__buffer_retain(base->buf);
  v->offset = base->offset + offset;
  v->data_size = base->data_size - offset;
  memcpy(CMX__STRIDES(v), strides, (size_t)nd * sizeof(int64_t));
  cmx__node_update_flags(v);
  return v;
}

/* Row-major bytes of a strided view, by naive index walking. */
static void naive_gather(const int32_t* base, const int64_t* shape,
                         const int64_t* strides, int nd, int64_t offset,
                         int32_t* out) {
  int64_t n = shape_size(shape, nd);
  for (int64_t k = 0; k < n; k++) {
    int64_t rem = k, off = offset;
    for (int d = nd - 1; d >= 0; d--) {
      off += (rem % shape[d]) * strides[d];
      rem /= shape[d];
    }
    out[k] = base[off];
  }
}

static void test_npy_strided_and_lazy(void) {
  int32_t base[120];
  for (int i = 0; i < 120; i++) base[i] = i * 7 - 300;
  int64_t bshape[1] = {120};
  cmx_array b = from_bytes((uint8_t*)base, bshape, 1, CMX_INT32);
  struct {
    int nd;
    int64_t shape[3], strides[3], offset;
  } views[] = {
      {2, {4, 5}, {1, 4}, 0},        /* transposed: column-major */
      {2, {3, 4}, {10, 2}, 3},       /* strided rows, step 2 */
      {3, {2, 3, 4}, {1, 2, 6}, 0},  /* column-major 3-d */
      {3, {2, 2, 3}, {40, 0, 5}, 1}, /* broadcast middle dim */
      {2, {4, 3}, {-10, 1}, 100},    /* negative stride */
  };
  for (size_t v = 0; v < sizeof views / sizeof *views; v++) {
    cmx_array a = make_view(b, views[v].shape, views[v].strides, views[v].nd,
                            views[v].offset);
    int32_t want[64];
    naive_gather(base, views[v].shape, views[v].strides, views[v].nd,
                 views[v].offset, want);
    OK(cmx_save(tpath("view.npy"), a));
    cmx_array r = NULL;
    OK(cmx_load_npy(&r, tpath("view.npy"), CMX_STREAM_DEFAULT));
    CHECK_MSG(array_matches(r, CMX_INT32, views[v].shape, views[v].nd,
                            (uint8_t*)want),
              "view %zu", v);
    cmx_array_release(r);
    cmx_array_release(a);
  }
  /* Column-major arrays are written as fortran_order data (as MLX). */
  cmx_array t = make_view(b, views[0].shape, views[0].strides, 2, 0);
  OK(cmx_save(tpath("fortran.npy"), t));
  size_t n;
  uint8_t* f = read_file(tpath("fortran.npy"), &n);
  CHECK(f && memmem(f, n, "'fortran_order': True", 21));
  free(f);
  cmx_array_release(t);
  /* A lazy array is evaluated by save. */
  cmx_array one = NULL, sum = NULL, r = NULL;
  OK(cmx_array_from_int64(&one, 1, CMX_INT32));
  OK(cmx_add(&sum, b, one, CMX_STREAM_DEFAULT));
  OK(cmx_save(tpath("lazy.npy"), sum));
  OK(cmx_load_npy(&r, tpath("lazy.npy"), CMX_STREAM_DEFAULT));
  int32_t want[120];
  for (int i = 0; i < 120; i++) want[i] = base[i] + 1;
  CHECK(array_matches(r, CMX_INT32, bshape, 1, (uint8_t*)want));
  cmx_array_release_all((cmx_array[]){one, sum, r, b}, 4);
}

/* Writes a .npy by hand: magic, version 1.0, header text, data. */
static void write_npy(const char* path, const char* header, const void* data,
                      size_t n) {
  size_t hl = strlen(header);
  size_t total = ((10 + hl + 1 + 15) / 16) * 16;
  uint8_t* b = calloc(1, total + n);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (uint8_t)((total - 10) & 0xFF);
  b[9] = (uint8_t)((total - 10) >> 8);
  memcpy(b + 10, header, hl);
  memset(b + 10 + hl, ' ', total - 10 - hl - 1);
  b[total - 1] = '\n';
  memcpy(b + total, data, n);
  write_file(path, b, total + n);
  free(b);
}

static void test_npy_fortran_and_big_endian(void) {
  /* Fortran order: element [i][j] of a 3x4 array is at data[j*3 + i]. */
  int16_t fd[12];
  for (int i = 0; i < 12; i++) fd[i] = (int16_t)(i * 11 - 50);
  write_npy(tpath("f.npy"),
            "{'descr': '<i2', 'fortran_order': True, 'shape': (3, 4), }", fd,
            sizeof fd);
  cmx_array a = NULL;
  OK(cmx_load_npy(&a, tpath("f.npy"), CMX_STREAM_DEFAULT));
  int16_t want[12];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) want[i * 4 + j] = fd[j * 3 + i];
  CHECK(array_matches(a, CMX_INT16, (int64_t[]){3, 4}, 2, (uint8_t*)want));
  cmx_array_release(a);
  /* Big-endian data is swapped on load (int32, float64, complex64). */
  uint8_t be[16] = {0x01, 0x02, 0x03, 0x04, 0xFF, 0xFF, 0xFF, 0xFE};
  write_npy(tpath("be.npy"),
            "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", be, 8);
  OK(cmx_load_npy(&a, tpath("be.npy"), CMX_STREAM_DEFAULT));
  int32_t wi[2] = {0x01020304, -2};
  CHECK(array_matches(a, CMX_INT32, (int64_t[]){2}, 1, (uint8_t*)wi));
  cmx_array_release(a);
  double dv = -1234.5625;
  uint64_t bits;
  memcpy(&bits, &dv, 8);
  for (int i = 0; i < 8; i++) be[i] = (uint8_t)(bits >> (56 - 8 * i));
  write_npy(tpath("bed.npy"),
            "{\"descr\": \">f8\", \"fortran_order\": False, \"shape\": ()}", be,
            8);
  OK(cmx_load_npy(&a, tpath("bed.npy"), CMX_STREAM_DEFAULT));
  double got = 0;
  OK(cmx_array_item_double(a, &got));
  CHECK(got == dv && cmx_array_ndim(a) == 0);
  cmx_array_release(a);
  float re = 1.5f, im = -3.25f;
  uint32_t rb, ib;
  memcpy(&rb, &re, 4);
  memcpy(&ib, &im, 4);
  for (int i = 0; i < 4; i++) {
    be[i] = (uint8_t)(rb >> (24 - 8 * i));
    be[4 + i] = (uint8_t)(ib >> (24 - 8 * i));
  }
  write_npy(tpath("bec.npy"),
            "{'descr': '>c8', 'fortran_order': False, 'shape': (1,), }", be, 8);
  OK(cmx_load_npy(&a, tpath("bec.npy"), CMX_STREAM_DEFAULT));
  cmx_complex64_t c = {0, 0};
  OK(cmx_array_item_complex(a, &c));
  CHECK(c.re == re && c.im == im);
  cmx_array_release(a);
  /* bfloat16 is stored as '<V2' (MLX's choice) and '|V2' also loads. */
  cmx_bfloat16_t h[2] = {0x3FC0, 0xC020}; /* 1.5, -2.5 */
  a = from_bytes((uint8_t*)h, (int64_t[]){2}, 1, CMX_BFLOAT16);
  OK(cmx_save(tpath("bf.npy"), a));
  cmx_array_release(a);
  size_t n;
  uint8_t* f = read_file(tpath("bf.npy"), &n);
  CHECK(f && memmem(f, n, "'descr': '<V2'", 14));
  free(f);
  write_npy(tpath("bf2.npy"),
            "{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }", h, 4);
  OK(cmx_load_npy(&a, tpath("bf2.npy"), CMX_STREAM_DEFAULT));
  CHECK(array_matches(a, CMX_BFLOAT16, (int64_t[]){2}, 1, (uint8_t*)h));
  cmx_array_release(a);
  /* Unsupported numpy dtypes fail cleanly. */
  write_npy(tpath("u.npy"),
            "{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }",
            "abcdefghijkl", 12);
  FAILS(cmx_load_npy(&a, tpath("u.npy"), CMX_STREAM_DEFAULT), CMX_ERR_VALUE,
        "[load] unsupported npy dtype '<U3'");
  write_npy(tpath("c16.npy"),
            "{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }",
            "abcdefghijklmnop", 16);
  FAILS(cmx_load_npy(&a, tpath("c16.npy"), CMX_STREAM_DEFAULT), CMX_ERR_VALUE,
        "unsupported npy dtype '<c16'");
}

/* ---------------- npz ---------------- */

static void test_npz_roundtrip(void) {
  for (int compressed = 0; compressed < 2; compressed++) {
    cmx_named_arrays* m = NULL;
    OK(cmx_named_arrays_new(&m));
    uint8_t* datas[CMX_NUM_DTYPES * NSHAPES];
    int k = 0;
    for (int dt = 0; dt < CMX_NUM_DTYPES; dt++)
      for (int s = 0; s < NSHAPES; s++, k++) {
        datas[k] =
            rand_data((cmx_dtype)dt, shape_size(k_shapes[s], k_ndims[s]));
        cmx_array a =
            from_bytes(datas[k], k_shapes[s], k_ndims[s], (cmx_dtype)dt);
        char name[64];
        snprintf(name, sizeof name, "x_%s_%d", cmx_dtype_name((cmx_dtype)dt),
                 s);
        OK(cmx_named_arrays_set(m, name, a));
        cmx_array_release(a);
      }
    cmx_status st = compressed ? cmx_savez_compressed(tpath("z"), m)
                               : cmx_savez(tpath("z"), m);
    if (compressed && missing_dep(st, "zlib")) {
      for (int i = 0; i < k; i++) free(datas[i]);
      cmx_named_arrays_free(m);
      continue;
    }
    CHECK_MSG(st == CMX_OK, "%s", cmx_last_error());
    cmx_named_arrays* r = NULL;
    OK(cmx_load_npz(&r, tpath("z.npz"), CMX_STREAM_DEFAULT));
    CHECK(cmx_named_arrays_size(r) == (size_t)k);
    k = 0;
    for (int dt = 0; dt < CMX_NUM_DTYPES; dt++)
      for (int s = 0; s < NSHAPES; s++, k++) {
        CHECK_MSG(strcmp(cmx_named_arrays_name(r, (size_t)k),
                         cmx_named_arrays_name(m, (size_t)k)) == 0,
                  "order %d", k);
        CHECK_MSG(
            array_matches(
                cmx_named_arrays_get(r, cmx_named_arrays_name(m, (size_t)k)),
                (cmx_dtype)dt, k_shapes[s], k_ndims[s], datas[k]),
            "npz %d %s %d", compressed, cmx_dtype_name((cmx_dtype)dt), s);
        free(datas[k]);
      }
    /* Compressed members really are compressed: zeros shrink. */
    if (compressed) {
      cmx_named_arrays* z = NULL;
      cmx_array zeros = NULL;
      uint8_t* zd = calloc(1, 1 << 20);
      zeros = from_bytes(zd, (int64_t[]){1 << 18}, 1, CMX_FLOAT32);
      OK(cmx_named_arrays_new(&z));
      OK(cmx_named_arrays_set(z, "zeros", zeros));
      OK(cmx_savez_compressed(tpath("zeros.npz"), z));
      size_t n;
      uint8_t* f = read_file(tpath("zeros.npz"), &n);
      CHECK(f && n < 20000);
      free(f);
      cmx_named_arrays* back = NULL;
      OK(cmx_load_npz(&back, tpath("zeros.npz"), CMX_STREAM_DEFAULT));
      CHECK(array_matches(cmx_named_arrays_get(back, "zeros"), CMX_FLOAT32,
                          (int64_t[]){1 << 18}, 1, zd));
      cmx_named_arrays_free(back);
      cmx_named_arrays_free(z);
      cmx_array_release(zeros);
      free(zd);
    }
    cmx_named_arrays_free(r);
    cmx_named_arrays_free(m);
  }
}

/* ---------------- safetensors ---------------- */

static void test_safetensors_roundtrip(void) {
  cmx_named_arrays* m = NULL;
  cmx_metadata* meta = NULL;
  OK(cmx_named_arrays_new(&m));
  OK(cmx_metadata_new(&meta));
  OK(cmx_metadata_set_string(meta, "format", "pt"));
  OK(cmx_metadata_set_string(meta, "quote\"back\\slash\nnewline",
                             "\x01\xc3\xa9"));
  uint8_t* datas[CMX_NUM_DTYPES * NSHAPES];
  int k = 0;
  for (int dt = 0; dt < CMX_NUM_DTYPES; dt++)
    for (int s = 0; s < NSHAPES; s++, k++) {
      datas[k] = rand_data((cmx_dtype)dt, shape_size(k_shapes[s], k_ndims[s]));
      cmx_array a =
          from_bytes(datas[k], k_shapes[s], k_ndims[s], (cmx_dtype)dt);
      char name[64];
      snprintf(name, sizeof name, "layer.%d/\"w\"", k);
      OK(cmx_named_arrays_set(m, name, a));
      cmx_array_release(a);
    }
  OK(cmx_save_safetensors(tpath("m"), m, meta));
  CHECK(file_exists(tpath("m.safetensors")));
  cmx_named_arrays* r = NULL;
  cmx_metadata* rm = NULL;
  cmx_status st =
      cmx_load_safetensors(&r, &rm, tpath("m.safetensors"), CMX_STREAM_DEFAULT);
  if (missing_dep(st, "cJSON")) {
    for (int i = 0; i < k; i++) free(datas[i]);
  } else {
    CHECK_MSG(st == CMX_OK, "%s", cmx_last_error());
    CHECK(cmx_named_arrays_size(r) == (size_t)k);
    k = 0;
    for (int dt = 0; dt < CMX_NUM_DTYPES; dt++)
      for (int s = 0; s < NSHAPES; s++, k++) {
        const char* name = cmx_named_arrays_name(m, (size_t)k);
        CHECK_MSG(array_matches(cmx_named_arrays_get(r, name), (cmx_dtype)dt,
                                k_shapes[s], k_ndims[s], datas[k]),
                  "safetensors %s %d", cmx_dtype_name((cmx_dtype)dt), s);
        free(datas[k]);
      }
    CHECK(cmx_metadata_size(rm) == 2);
    const char* v;
    size_t vl;
    OK(cmx_meta_get_string(cmx_metadata_get(rm, "format"), &v, &vl));
    CHECK(strcmp(v, "pt") == 0);
    OK(cmx_meta_get_string(cmx_metadata_get(rm, "quote\"back\\slash\nnewline"),
                           &v, &vl));
    CHECK(vl == 3 && strcmp(v, "\x01\xc3\xa9") == 0);
  }
  cmx_named_arrays_free(r);
  cmx_metadata_free(rm);
  /* Non-string metadata and the reserved name are refused. */
  cmx_meta_value* num = NULL;
  OK(cmx_meta_new_int(&num, CMX_META_INT32, 3));
  OK(cmx_metadata_set(meta, "n", num));
  FAILS(cmx_save_safetensors(tpath("bad"), m, meta), CMX_ERR_TYPE,
        "[save_safetensors] Metadata must be a dictionary with string");
  cmx_array a = cmx_named_arrays_at(m, 0);
  OK(cmx_named_arrays_set(m, "__metadata__", a));
  FAILS(cmx_save_safetensors(tpath("bad"), m, NULL), CMX_ERR_VALUE,
        "__metadata__ is reserved");
  CHECK(!file_exists(tpath("bad.safetensors")));
  cmx_metadata_free(meta);
  cmx_named_arrays_free(m);
}

/* ---------------- gguf ---------------- */

/* Adds one value of every GGUF type to m, including nested arrays. */
static void build_all_metadata(cmx_metadata* m) {
  cmx_meta_value* v;
  OK(cmx_meta_new_int(&v, CMX_META_UINT8, 200));
  OK(cmx_metadata_set(m, "u8", v));
  OK(cmx_meta_new_int(&v, CMX_META_INT8, -128));
  OK(cmx_metadata_set(m, "i8", v));
  OK(cmx_meta_new_int(&v, CMX_META_UINT16, 65535));
  OK(cmx_metadata_set(m, "u16", v));
  OK(cmx_meta_new_int(&v, CMX_META_INT16, -32768));
  OK(cmx_metadata_set(m, "i16", v));
  OK(cmx_meta_new_int(&v, CMX_META_UINT32, 4000000000));
  OK(cmx_metadata_set(m, "u32", v));
  OK(cmx_meta_new_int(&v, CMX_META_INT32, -2000000000));
  OK(cmx_metadata_set(m, "i32", v));
  OK(cmx_meta_new_float(&v, CMX_META_FLOAT32, 1.25));
  OK(cmx_metadata_set(m, "f32", v));
  OK(cmx_meta_new_bool(&v, true));
  OK(cmx_metadata_set(m, "bool", v));
  OK(cmx_meta_new_string_n(&v, "nul\0inside", 10));
  OK(cmx_metadata_set(m, "str", v));
  OK(cmx_meta_new_uint64(&v, 18446744073709551615ull));
  OK(cmx_metadata_set(m, "u64", v));
  OK(cmx_meta_new_int(&v, CMX_META_INT64, INT64_MIN));
  OK(cmx_metadata_set(m, "i64", v));
  OK(cmx_meta_new_float(&v, CMX_META_FLOAT64, 0.1));
  OK(cmx_metadata_set(m, "f64", v));
  cmx_meta_value *arr, *inner, *item;
  OK(cmx_meta_new_array(&arr, CMX_META_STRING));
  for (int i = 0; i < 3; i++) {
    char s[16];
    snprintf(s, sizeof s, "tok%d", i);
    OK(cmx_meta_new_string(&item, s));
    OK(cmx_meta_array_append(arr, item));
  }
  OK(cmx_metadata_set(m, "tokens", arr));
  OK(cmx_meta_new_array(&arr, CMX_META_ARRAY)); /* [[1, 2], ["x"], []] */
  OK(cmx_meta_new_array(&inner, CMX_META_INT32));
  for (int i = 1; i <= 2; i++) {
    OK(cmx_meta_new_int(&item, CMX_META_INT32, i));
    OK(cmx_meta_array_append(inner, item));
  }
  OK(cmx_meta_array_append(arr, inner));
  OK(cmx_meta_new_array(&inner, CMX_META_STRING));
  OK(cmx_meta_new_string(&item, "x"));
  OK(cmx_meta_array_append(inner, item));
  OK(cmx_meta_array_append(arr, inner));
  OK(cmx_meta_new_array(&inner, CMX_META_FLOAT64));
  OK(cmx_meta_array_append(arr, inner));
  OK(cmx_metadata_set(m, "nested", arr));
  static const cmx_meta_type scalars[] = {
      CMX_META_UINT8,  CMX_META_INT8,  CMX_META_UINT16, CMX_META_INT16,
      CMX_META_UINT32, CMX_META_INT32, CMX_META_BOOL,   CMX_META_INT64};
  for (size_t t = 0; t < sizeof scalars / sizeof *scalars; t++) {
    OK(cmx_meta_new_array(&arr, scalars[t]));
    for (int i = 0; i < 3; i++) {
      OK(cmx_meta_new_int(&item, scalars[t], i % 2));
      OK(cmx_meta_array_append(arr, item));
    }
    char key[32];
    snprintf(key, sizeof key, "arr.%s", cmx_meta_type_name(scalars[t]));
    OK(cmx_metadata_set(m, key, arr));
  }
  OK(cmx_meta_new_array(&arr, CMX_META_FLOAT32));
  OK(cmx_meta_new_float(&item, CMX_META_FLOAT32, -0.5));
  OK(cmx_meta_array_append(arr, item));
  OK(cmx_metadata_set(m, "arr.f32", arr));
}

/* Deep equality of two metadata values through the public accessors. */
static bool meta_equal(const cmx_meta_value* a, const cmx_meta_value* b) {
  cmx_meta_type t = cmx_meta_get_type(a);
  if (!a || !b || t != cmx_meta_get_type(b)) return false;
  if (t == CMX_META_STRING) {
    const char *x, *y;
    size_t n, m;
    cmx_meta_get_string(a, &x, &n);
    cmx_meta_get_string(b, &y, &m);
    return n == m && memcmp(x, y, n) == 0;
  }
  if (t == CMX_META_ARRAY) {
    size_t n = cmx_meta_array_length(a);
    if (n != cmx_meta_array_length(b) ||
        cmx_meta_array_elem_type(a) != cmx_meta_array_elem_type(b))
      return false;
    for (size_t i = 0; i < n; i++)
      if (!meta_equal(cmx_meta_array_item(a, i), cmx_meta_array_item(b, i)))
        return false;
    return true;
  }
  if (t == CMX_META_FLOAT32 || t == CMX_META_FLOAT64) {
    double x, y;
    cmx_meta_get_double(a, &x);
    cmx_meta_get_double(b, &y);
    return x == y;
  }
  if (t == CMX_META_UINT64) {
    uint64_t x, y;
    cmx_meta_get_uint64(a, &x);
    cmx_meta_get_uint64(b, &y);
    return x == y;
  }
  int64_t x, y;
  return cmx_meta_get_int64(a, &x) == CMX_OK &&
         cmx_meta_get_int64(b, &y) == CMX_OK && x == y;
}

static void test_gguf_roundtrip(void) {
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16,
                                  CMX_FLOAT64, CMX_INT8,    CMX_INT16,
                                  CMX_INT32,   CMX_INT64};
  const int nd = sizeof dts / sizeof *dts;
  cmx_named_arrays* m = NULL;
  cmx_metadata* meta = NULL;
  OK(cmx_named_arrays_new(&m));
  OK(cmx_metadata_new(&meta));
  build_all_metadata(meta);
  uint8_t* datas[8 * NSHAPES];
  for (int d = 0; d < nd; d++)
    for (int s = 0; s < NSHAPES; s++) {
      int k = d * NSHAPES + s;
      datas[k] = rand_data(dts[d], shape_size(k_shapes[s], k_ndims[s]));
      cmx_array a = from_bytes(datas[k], k_shapes[s], k_ndims[s], dts[d]);
      char name[64];
      snprintf(name, sizeof name, "blk.%d.weight", k);
      OK(cmx_named_arrays_set(m, name, a));
      cmx_array_release(a);
    }
  OK(cmx_save_gguf(tpath("g"), m, meta));
  cmx_named_arrays* r = NULL;
  cmx_metadata* rm = NULL;
  OK(cmx_load_gguf(&r, &rm, tpath("g.gguf"), CMX_STREAM_DEFAULT));
  CHECK(cmx_named_arrays_size(r) == (size_t)(nd * NSHAPES));
  for (int d = 0; d < nd; d++)
    for (int s = 0; s < NSHAPES; s++) {
      int k = d * NSHAPES + s;
      CHECK_MSG(array_matches(cmx_named_arrays_get(
                                  r, cmx_named_arrays_name(m, (size_t)k)),
                              dts[d], k_shapes[s], k_ndims[s], datas[k]),
                "gguf %s %d", cmx_dtype_name(dts[d]), s);
      free(datas[k]);
    }
  CHECK(cmx_metadata_size(rm) == cmx_metadata_size(meta));
  for (size_t i = 0; i < cmx_metadata_size(meta); i++) {
    const char* key = cmx_metadata_key(meta, i);
    CHECK_MSG(strcmp(cmx_metadata_key(rm, i), key) == 0, "order %s", key);
    CHECK_MSG(
        meta_equal(cmx_metadata_get(rm, key), cmx_metadata_value(meta, i)),
        "metadata %s", key);
  }
  cmx_named_arrays_free(r);
  cmx_metadata_free(rm);
  /* Custom alignment; tensor data offsets honour it. */
  cmx_meta_value* al = NULL;
  OK(cmx_meta_new_int(&al, CMX_META_UINT32, 64));
  OK(cmx_metadata_set(meta, "general.alignment", al));
  OK(cmx_save_gguf(tpath("g64.gguf"), m, meta));
  OK(cmx_load_gguf(&r, NULL, tpath("g64.gguf"), CMX_STREAM_DEFAULT));
  CHECK(cmx_named_arrays_size(r) == (size_t)(nd * NSHAPES));
  cmx_named_arrays_free(r);
  OK(cmx_meta_new_int(&al, CMX_META_UINT32, 48));
  OK(cmx_metadata_set(meta, "general.alignment", al));
  FAILS(cmx_save_gguf(tpath("g48.gguf"), m, meta), CMX_ERR_VALUE,
        "general.alignment must be a uint32 power of two");
  /* dtypes GGUF cannot hold; the old file stays intact. */
  cmx_array u = NULL;
  OK(cmx_array_from_int64(&u, 3, CMX_UINT8));
  OK(cmx_named_arrays_set(m, "u", u));
  size_t before_n, after_n;
  uint8_t* before = read_file(tpath("g.gguf"), &before_n);
  FAILS(cmx_save_gguf(tpath("g.gguf"), m, NULL), CMX_ERR_TYPE,
        "[save_gguf] dtype uint8 is not supported");
  uint8_t* after = read_file(tpath("g.gguf"), &after_n);
  CHECK(before && after && before_n == after_n &&
        memcmp(before, after, before_n) == 0);
  CHECK(count_files(".tmp-") == 0);
  free(before);
  free(after);
  cmx_array_release(u);
  cmx_metadata_free(meta);
  cmx_named_arrays_free(m);
}

/* ---------------- quantized gguf ---------------- */

typedef struct {
  uint8_t* b;
  size_t n, cap;
} bytes;

static void put(bytes* b, const void* p, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->b = realloc(b->b, b->cap);
  }
  memcpy(b->b + b->n, p, n);
  b->n += n;
}
static void put32(bytes* b, uint32_t v) {
  put(b, &v, 4);
}
static void put64(bytes* b, uint64_t v) {
  put(b, &v, 8);
}
static void put_str(bytes* b, const char* s) {
  put64(b, strlen(s));
  put(b, s, strlen(s));
}

static double f16(const uint8_t* p) {
  return cmx_float16_to_float((cmx_float16_t)(p[0] | (p[1] << 8)));
}

/* ggml's reference dequantization of one block, in double. */
static void ref_dequant(uint32_t type, const uint8_t* b, double* y) {
  if (type == 2 || type == 3) { /* Q4_0, Q4_1 */
    double d = f16(b), m = type == 3 ? f16(b + 2) : 0;
    const uint8_t* q = b + (type == 3 ? 4 : 2);
    for (int j = 0; j < 16; j++) {
      int lo = q[j] & 15, hi = q[j] >> 4;
      y[j] = type == 2 ? (lo - 8) * d : lo * d + m;
      y[j + 16] = type == 2 ? (hi - 8) * d : hi * d + m;
    }
  } else if (type == 8) { /* Q8_0 */
    for (int j = 0; j < 32; j++) y[j] = (int8_t)b[2 + j] * f16(b);
  } else if (type == 12) { /* Q4_K */
    double d = f16(b), dmin = f16(b + 2);
    const uint8_t *s = b + 4, *q = b + 16;
    for (int j = 0; j < 8; j++) {
      int sc, m;
      if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
      } else {
        sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
      }
      for (int l = 0; l < 32; l++) {
        int v = (j % 2 == 0) ? (q[(j / 2) * 32 + l] & 0xF)
                             : (q[(j / 2) * 32 + l] >> 4);
        y[j * 32 + l] = d * sc * v - dmin * m;
      }
    }
  } else { /* Q6_K */
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t* sc = (const int8_t*)(b + 192);
    double d = f16(b + 208);
    for (int i = 0; i < 256; i++) {
      int half = i / 128, j = i % 128, l = j % 32, quarter = j / 32;
      int lo = (quarter & 1) ? ql[half * 64 + l + 32] : ql[half * 64 + l];
      lo = quarter >= 2 ? lo >> 4 : lo & 0xF;
      int hi = (qh[half * 32 + l] >> (2 * quarter)) & 3;
      y[i] = d * sc[half * 8 + quarter * 2 + l / 16] * ((lo | (hi << 4)) - 32);
    }
  }
}

static void test_gguf_quantized(void) {
  static const struct {
    uint32_t type, block, bytes;
    const char* name;
  } qs[] = {{2, 32, 18, "q4_0.weight"},
            {3, 32, 20, "q4_1.weight"},
            {8, 32, 34, "q8_0"},
            {12, 256, 144, "q4_k.weight"},
            {14, 256, 210, "q6_k.weight"}};
  const int nq = 5, rows = 3;
  bytes f = {0};
  put(&f, "GGUF", 4);
  put32(&f, 3);
  put64(&f, (uint64_t)nq + 1);
  put64(&f, 0);
  uint8_t* raw[5];
  uint64_t off = 0;
  for (int i = 0; i < nq; i++) {
    uint64_t cols = qs[i].block * 2, nb = rows * cols / qs[i].block;
    raw[i] = malloc(nb * qs[i].bytes);
    for (uint64_t k = 0; k < nb * qs[i].bytes; k++) raw[i][k] = (uint8_t)rnd();
    for (uint64_t k = 0; k < nb; k++) { /* sane f16 scales */
      uint8_t* blk = raw[i] + k * qs[i].bytes;
      size_t at = qs[i].type == 14 ? 208 : 0;
      for (int h = 0; h < (qs[i].type == 3 || qs[i].type == 12 ? 2 : 1); h++) {
        cmx_float16_t v = cmx_float_to_float16(
            (float)((double)(rnd() % 1000) / 10000.0 - (h ? 0.05 : 0)));
        blk[at + 2 * h] = (uint8_t)v;
        blk[at + 2 * h + 1] = (uint8_t)(v >> 8);
      }
    }
    put_str(&f, qs[i].name);
    put32(&f, 2);
    put64(&f, cols);
    put64(&f, rows);
    put32(&f, qs[i].type);
    put64(&f, off);
    off += nb * qs[i].bytes;
    off = (off + 31) / 32 * 32;
  }
  put_str(&f, "unsupported.q5_k");
  put32(&f, 1);
  put64(&f, 256);
  put32(&f, 13); /* Q5_K */
  put64(&f, off);
  while (f.n % 32) put(&f, "", 1);
  for (int i = 0; i < nq; i++) {
    uint64_t nb = rows * 2;
    put(&f, raw[i], nb * qs[i].bytes);
    while (f.n % 32) put(&f, "", 1);
  }
  uint8_t pad[176] = {0};
  put(&f, pad, sizeof pad);
  write_file(tpath("q.gguf"), f.b, f.n);
  cmx_named_arrays* r = NULL;
  FAILS(cmx_load_gguf(&r, NULL, tpath("q.gguf"), CMX_STREAM_DEFAULT),
        CMX_ERR_VALUE,
        "[load_gguf] unsupported tensor type Q5_K (tensor 'unsupported.q5_k')");
  /* Without the Q5_K tensor the file loads. */
  bytes g = {0};
  put(&g, "GGUF", 4);
  put32(&g, 3);
  put64(&g, (uint64_t)nq);
  put64(&g, 0);
  off = 0;
  for (int i = 0; i < nq; i++) {
    uint64_t cols = qs[i].block * 2;
    put_str(&g, qs[i].name);
    put32(&g, 2);
    put64(&g, cols);
    put64(&g, rows);
    put32(&g, qs[i].type);
    put64(&g, off);
    off += rows * 2 * qs[i].bytes;
    off = (off + 31) / 32 * 32;
  }
  while (g.n % 32) put(&g, "", 1);
  for (int i = 0; i < nq; i++) {
    put(&g, raw[i], rows * 2 * qs[i].bytes);
    while (g.n % 32) put(&g, "", 1);
  }
  write_file(tpath("q2.gguf"), g.b, g.n);
  OK(cmx_load_gguf(&r, NULL, tpath("q2.gguf"), CMX_STREAM_DEFAULT));
  CHECK(cmx_named_arrays_size(r) == 4 * 3 + 1);
  for (int i = 0; i < nq; i++) {
    uint64_t cols = qs[i].block * 2, n = rows * cols;
    double* ref = malloc(n * sizeof *ref);
    for (uint64_t k = 0; k < n / qs[i].block; k++)
      ref_dequant(qs[i].type, raw[i] + k * qs[i].bytes, ref + k * qs[i].block);
    cmx_array w = cmx_named_arrays_get(r, qs[i].name);
    double maxerr = 0, maxref = 0;
    if (qs[i].type == 14) {
      CHECK(w && cmx_array_dtype(w) == CMX_FLOAT16 &&
            cmx_array_shape(w)[1] == (int64_t)cols);
      cmx_float16_t* h = malloc(n * 2);
      OK(cmx_array_copy_to(w, h, n * 2));
      for (uint64_t k = 0; k < n; k++) {
        double e = fabs(cmx_float16_to_float(h[k]) - ref[k]);
        maxerr = e > maxerr ? e : maxerr;
        maxref = fabs(ref[k]) > maxref ? fabs(ref[k]) : maxref;
      }
      free(h);
    } else {
      int bits = qs[i].type == 8 ? 8 : 4;
      char sn[64], bn[64];
      const char* base = qs[i].name;
      size_t bl = strlen(base);
      if (bl > 7 && strcmp(base + bl - 7, ".weight") == 0) bl -= 7;
      snprintf(sn, sizeof sn, "%.*s.scales", (int)bl, base);
      snprintf(bn, sizeof bn, "%.*s.biases", (int)bl, base);
      cmx_array sa = cmx_named_arrays_get(r, sn),
                ba = cmx_named_arrays_get(r, bn);
      CHECK_MSG(w && sa && ba && cmx_array_dtype(w) == CMX_UINT32 &&
                    cmx_array_shape(w)[1] == (int64_t)(cols * bits / 32) &&
                    cmx_array_shape(sa)[1] == (int64_t)(cols / 32) &&
                    cmx_array_dtype(sa) == CMX_FLOAT16,
                "quantized arrays of %s", qs[i].name);
      if (!w || !sa || !ba) continue;
      uint32_t* wq = malloc(n * bits / 8);
      cmx_float16_t* sc = malloc(n / 32 * 2);
      cmx_float16_t* bi = malloc(n / 32 * 2);
      OK(cmx_array_copy_to(w, wq, n * bits / 8));
      OK(cmx_array_copy_to(sa, sc, n / 32 * 2));
      OK(cmx_array_copy_to(ba, bi, n / 32 * 2));
      for (uint64_t k = 0; k < n; k++) {
        uint32_t per = 32 / bits;
        uint32_t q = (wq[k / per] >> (bits * (k % per))) & ((1u << bits) - 1);
        double v = q * (double)cmx_float16_to_float(sc[k / 32]) +
                   cmx_float16_to_float(bi[k / 32]);
        double e = fabs(v - ref[k]);
        maxerr = e > maxerr ? e : maxerr;
        maxref = fabs(ref[k]) > maxref ? fabs(ref[k]) : maxref;
      }
      free(wq);
      free(sc);
      free(bi);
    }
    CHECK_MSG(maxerr <= 2e-3 * maxref + 1e-6, "%s: max error %g (max %g)",
              qs[i].name, maxerr, maxref);
    free(ref);
    free(raw[i]);
  }
  cmx_named_arrays_free(r);
  free(f.b);
  free(g.b);
}

/* Files past the parallel-read and parallel-CRC thresholds (32 MiB). */
static void test_large_files(void) {
  int64_t n = (int64_t)10 << 20; /* 40 MiB of float32 */
  uint8_t* d = rand_data(CMX_FLOAT32, n);
  cmx_array a = from_bytes(d, &n, 1, CMX_FLOAT32);
  cmx_named_arrays* m = NULL;
  OK(cmx_named_arrays_new(&m));
  OK(cmx_named_arrays_set(m, "big", a));
  OK(cmx_save(tpath("big.npy"), a));
  OK(cmx_savez(tpath("big.npz"), m));
  OK(cmx_save_safetensors(tpath("big.safetensors"), m, NULL));
  const char* files[3] = {"big.npy", "big.npz", "big.safetensors"};
  for (int i = 0; i < 3; i++) {
    cmx_loaded r;
    cmx_status st =
        cmx_load(&r, tpath(files[i]), NULL, false, CMX_STREAM_DEFAULT);
    if (missing_dep(st, "cJSON")) continue;
    CHECK_MSG(st == CMX_OK, "%s: %s", files[i], cmx_last_error());
    cmx_array b = r.array ? r.array : cmx_named_arrays_get(r.arrays, "big");
    CHECK_MSG(array_matches(b, CMX_FLOAT32, &n, 1, d), "%s", files[i]);
    cmx_loaded_clear(&r);
  }
  cmx_named_arrays_free(m);
  cmx_array_release(a);
  free(d);
}

/* 70000 members need the zip64 end-of-directory records. */
static void test_npz_many_members(void) {
  const int n = 70000;
  cmx_named_arrays* m = NULL;
  OK(cmx_named_arrays_new(&m));
  for (int i = 0; i < n; i++) {
    cmx_array a = NULL;
    char name[32];
    snprintf(name, sizeof name, "a%d", i);
    cmx_array_from_int64(&a, i * 3 - 7, CMX_INT32);
    cmx_named_arrays_set(m, name, a);
    cmx_array_release(a);
  }
  OK(cmx_savez(tpath("many.npz"), m));
  cmx_named_arrays_free(m);
  size_t len;
  uint8_t* f = read_file(tpath("many.npz"), &len);
  CHECK(f && len > 98 && memcmp(f + len - 98, "PK\x06\x06", 4) == 0);
  free(f);
  cmx_named_arrays* r = NULL;
  OK(cmx_load_npz(&r, tpath("many.npz"), CMX_STREAM_DEFAULT));
  CHECK(cmx_named_arrays_size(r) == (size_t)n);
  int bad = 0;
  for (int i = 0; i < n; i += 997) {
    char name[32];
    snprintf(name, sizeof name, "a%d", i);
    int64_t v = 0;
    if (cmx_array_item_int64(cmx_named_arrays_get(r, name), &v) != CMX_OK ||
        v != i * 3 - 7)
      bad++;
  }
  CHECK(bad == 0);
  cmx_named_arrays_free(r);
}

/* ---------------- load dispatch and containers ---------------- */

static void test_load_dispatch(void) {
  cmx_loaded r;
  int64_t shape[1] = {3};
  float v[3] = {1, 2, 3};
  cmx_array a = from_bytes((uint8_t*)v, shape, 1, CMX_FLOAT32);
  OK(cmx_save(tpath("d.npy"), a)); /* extension kept, not doubled */
  CHECK(file_exists(tpath("d.npy")) && !file_exists(tpath("d.npy.npy")));
  OK(cmx_load(&r, tpath("d.npy"), NULL, false, CMX_STREAM_DEFAULT));
  CHECK(r.array && !r.arrays && !r.metadata &&
        array_matches(r.array, CMX_FLOAT32, shape, 1, (uint8_t*)v));
  cmx_loaded_clear(&r);
  CHECK(!r.array);
  FAILS(cmx_load(&r, tpath("d.npy"), NULL, true, CMX_STREAM_DEFAULT),
        CMX_ERR_VALUE, "[load] metadata not supported for format npy");
  FAILS(cmx_load(&r, "/tmp/noextension", NULL, false, CMX_STREAM_DEFAULT),
        CMX_ERR_VALUE, "[load] Could not infer file format from extension");
  FAILS(cmx_load(&r, tpath("d.xyz"), NULL, false, CMX_STREAM_DEFAULT),
        CMX_ERR_VALUE, "[load] Unknown file format xyz");
  FAILS(cmx_load(&r, tpath("missing.npy"), NULL, false, CMX_STREAM_DEFAULT),
        CMX_ERR_IO, "[load] Failed to open");
  CHECK(strstr(cmx_last_error(), "missing.npy") &&
        strstr(cmx_last_error(), "No such file"));
  FAILS(cmx_load(&r, g_dir, "npy", false, CMX_STREAM_DEFAULT), CMX_ERR_IO,
        "not a regular file");
  /* Explicit format overrides the extension. */
  OK(cmx_save(tpath("d2.data.npy"), a));
  rename(tpath("d2.data.npy"), tpath("d2.data"));
  OK(cmx_load(&r, tpath("d2.data"), "npy", false, CMX_STREAM_DEFAULT));
  CHECK(array_matches(r.array, CMX_FLOAT32, shape, 1, (uint8_t*)v));
  cmx_loaded_clear(&r);
  /* From memory. */
  size_t n;
  uint8_t* f = read_file(tpath("d.npy"), &n);
  OK(cmx_load_bytes(&r, f, n, "npy", false, CMX_STREAM_DEFAULT));
  CHECK(array_matches(r.array, CMX_FLOAT32, shape, 1, (uint8_t*)v));
  cmx_loaded_clear(&r);
  free(f);
  /* Every save appends its extension when missing. */
  cmx_named_arrays* m = NULL;
  OK(cmx_named_arrays_new(&m));
  OK(cmx_named_arrays_set(m, "a", a));
  OK(cmx_savez(tpath("e1"), m));
  OK(cmx_save_safetensors(tpath("e2"), m, NULL));
  OK(cmx_save_gguf(tpath("e3"), m, NULL));
  CHECK(file_exists(tpath("e1.npz")) && file_exists(tpath("e2.safetensors")) &&
        file_exists(tpath("e3.gguf")));
  OK(cmx_load(&r, tpath("e3.gguf"), NULL, true, CMX_STREAM_DEFAULT));
  CHECK(r.arrays && r.metadata && cmx_metadata_size(r.metadata) == 0 &&
        array_matches(cmx_named_arrays_get(r.arrays, "a"), CMX_FLOAT32, shape,
                      1, (uint8_t*)v));
  cmx_loaded_clear(&r);
  OK(cmx_load(&r, tpath("e1.npz"), NULL, false, CMX_STREAM_DEFAULT));
  CHECK(r.arrays && cmx_named_arrays_size(r.arrays) == 1);
  cmx_loaded_clear(&r);
  /* Saving into a missing directory is an I/O error naming the path. */
  FAILS(cmx_save("/nonexistent_dir_cmx/x", a), CMX_ERR_IO,
        "[save] Failed to open /nonexistent_dir_cmx/x.npy");
  FAILS(cmx_savez("/nonexistent_dir_cmx/x", m), CMX_ERR_IO, "[savez]");
  FAILS(cmx_save(tpath("null"), NULL), CMX_ERR_VALUE, "[save]");
  cmx_named_arrays_free(m);
  cmx_array_release(a);
}

static void test_containers(void) {
  cmx_named_arrays* m = NULL;
  OK(cmx_named_arrays_new(&m));
  cmx_array a = NULL, b = NULL;
  OK(cmx_array_from_int64(&a, 1, CMX_INT32));
  OK(cmx_array_from_int64(&b, 2, CMX_INT32));
  char name[32];
  for (int i = 0; i < 100; i++) { /* grows the index several times */
    snprintf(name, sizeof name, "n%d", i);
    OK(cmx_named_arrays_set(m, name, a));
  }
  OK(cmx_named_arrays_set(m, "n50", b)); /* replace keeps the position */
  CHECK(cmx_named_arrays_size(m) == 100);
  CHECK(cmx_named_arrays_at(m, 50) == b && cmx_named_arrays_get(m, "n50") == b);
  CHECK(strcmp(cmx_named_arrays_name(m, 99), "n99") == 0);
  CHECK(cmx_named_arrays_get(m, "nope") == NULL &&
        !cmx_named_arrays_at(m, 100));
  FAILS(cmx_named_arrays_set(m, NULL, a), CMX_ERR_VALUE, "[named_arrays]");
  cmx_named_arrays_free(m);
  cmx_array_release(a);
  cmx_array_release(b);

  cmx_meta_value* v = NULL;
  FAILS(cmx_meta_new_int(&v, CMX_META_UINT8, 256), CMX_ERR_VALUE,
        "out of range for uint8");
  FAILS(cmx_meta_new_int(&v, CMX_META_INT8, -129), CMX_ERR_VALUE, "int8");
  FAILS(cmx_meta_new_int(&v, CMX_META_STRING, 1), CMX_ERR_VALUE,
        "not an integer type");
  FAILS(cmx_meta_new_float(&v, CMX_META_INT32, 1), CMX_ERR_VALUE,
        "not a float type");
  OK(cmx_meta_new_float(&v, CMX_META_FLOAT32, 0.1));
  double d;
  OK(cmx_meta_get_double(v, &d));
  CHECK(d == (double)0.1f); /* float32 values are rounded to float */
  int64_t i64;
  FAILS(cmx_meta_get_int64(v, &i64), CMX_ERR_TYPE, "expected an integer");
  cmx_meta_value* arr = NULL;
  OK(cmx_meta_new_array(&arr, CMX_META_INT32));
  FAILS(cmx_meta_array_append(arr, v), CMX_ERR_TYPE,
        "cannot append a float32 to an array of int32"); /* v freed */
  OK(cmx_meta_new_uint64(&v, UINT64_MAX));
  FAILS(cmx_meta_get_int64(v, &i64), CMX_ERR_VALUE, "does not fit int64");
  cmx_meta_free(v);
  for (int i = 0; i < 5; i++) {
    OK(cmx_meta_new_int(&v, CMX_META_INT32, i * 1000 - 2000));
    OK(cmx_meta_array_append(arr, v));
  }
  cmx_meta_value* copy = NULL;
  OK(cmx_meta_copy(&copy, arr));
  CHECK(meta_equal(copy, arr));
  cmx_array t = NULL;
  OK(cmx_meta_to_array(&t, copy));
  int32_t want[5] = {-2000, -1000, 0, 1000, 2000};
  CHECK(array_matches(t, CMX_INT32, (int64_t[]){5}, 1, (uint8_t*)want));
  cmx_meta_value* back = NULL;
  OK(cmx_meta_from_array(&back, t));
  CHECK(meta_equal(back, arr));
  cmx_meta_free(back);
  cmx_array_release(t);
  OK(cmx_array_from_double(&t, 2.5, CMX_FLOAT64));
  OK(cmx_meta_from_array(&back, t));
  CHECK(cmx_meta_get_type(back) == CMX_META_FLOAT64 &&
        cmx_meta_get_double(back, &d) == CMX_OK && d == 2.5);
  cmx_array_release(t);
  OK(cmx_meta_to_array(&t, back));
  CHECK(cmx_array_ndim(t) == 0 && cmx_array_dtype(t) == CMX_FLOAT64);
  cmx_array_release(t);
  cmx_meta_free(back);
  OK(cmx_array_from_double(&t, 1.0, CMX_FLOAT16));
  FAILS(cmx_meta_from_array(&back, t), CMX_ERR_TYPE,
        "arrays of float16 cannot be metadata");
  cmx_array_release(t);
  OK(cmx_meta_new_string(&v, "s"));
  FAILS(cmx_meta_to_array(&t, v), CMX_ERR_TYPE,
        "cannot make an array of string");
  cmx_metadata* md = NULL;
  OK(cmx_metadata_new(&md));
  OK(cmx_metadata_set(md, "k", v));
  OK(cmx_metadata_set(md, "arr", copy));
  OK(cmx_metadata_set_string(md, "k", "replaced"));
  const char* s;
  OK(cmx_meta_get_string(cmx_metadata_get(md, "k"), &s, NULL));
  CHECK(strcmp(s, "replaced") == 0 && cmx_metadata_size(md) == 2 &&
        strcmp(cmx_metadata_key(md, 1), "arr") == 0);
  cmx_metadata_free(md);
  cmx_meta_free(arr);
}

int main(void) {
  tdir_init();
  RUN(test_npy_roundtrip);
  RUN(test_npy_strided_and_lazy);
  RUN(test_npy_fortran_and_big_endian);
  RUN(test_npz_roundtrip);
  RUN(test_safetensors_roundtrip);
  RUN(test_gguf_roundtrip);
  RUN(test_gguf_quantized);
  RUN(test_large_files);
  RUN(test_npz_many_members);
  RUN(test_load_dispatch);
  RUN(test_containers);
  tdir_cleanup();
  return test_summary("test_io");
}
