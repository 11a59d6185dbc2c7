/* io_tool: the C side of the cross-checks against numpy, safetensors and
 * gguf (tests/python/test_io_reference.py). Not a ctest test.
 *
 *   io_tool write <dir>           writes files of every dtype with known
 *                                 values (see value() below; the Python
 *                                 test computes the same formula)
 *   io_tool many <file>           writes an .npz of 70000 int32 scalars
 *                                 ("a<i>" = 3 * i - 7): zip64 records
 *   io_tool sum <file>            loads an .npz of integer scalars named
 *                                 "<letter><i>" and prints "n=<count>
 *                                 sum=<sum of i * value>" then OK
 *   io_tool dump <file> <outdir>  loads <file> with cmx (format from the
 *                                 extension) and writes each array as
 *                                 <outdir>/<i>.npy plus manifest.json
 *                                 (names, dtypes, shapes, typed metadata)
 *
 * Prints "OK" on success, "ERROR <status> <message>" and exits 1 on
 * failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmx/cmx.h"
#include "core/internal.h"

static int fail(void) {
  printf("ERROR %s %s\n", cmx_status_name(cmx_last_status()), cmx_last_error());
  return 1;
}
#define TRY(call)                       \
  do {                                  \
    if ((call) != CMX_OK) exit(fail()); \
  } while (0)

/* ---------------- known values ---------------- */

/* Element i of the test arrays, written into p as dtype dt. */
static void value(cmx_dtype dt, int64_t i, void* p) {
  uint64_t u = (uint64_t)i * 2654435761u + 7u;
  double f = (double)(i - 10) * 0.375;
  switch (dt) {
    case CMX_BOOL:
      *(uint8_t*)p = i % 3 == 0;
      break;
    case CMX_UINT8:
    case CMX_INT8:
      *(uint8_t*)p = (uint8_t)u;
      break;
    case CMX_UINT16:
    case CMX_INT16:
      *(uint16_t*)p = (uint16_t)u;
      break;
    case CMX_UINT32:
    case CMX_INT32:
      *(uint32_t*)p = (uint32_t)u;
      break;
    case CMX_UINT64:
    case CMX_INT64:
      *(uint64_t*)p = u;
      break;
    case CMX_FLOAT16:
      *(cmx_float16_t*)p = cmx_float_to_float16((float)f);
      break;
    case CMX_BFLOAT16:
      *(cmx_bfloat16_t*)p = cmx_float_to_bfloat16((float)f);
      break;
    case CMX_FLOAT32:
      *(float*)p = (float)f;
      break;
    case CMX_FLOAT64:
      *(double*)p = (double)(i - 10) * 0.1;
      break;
    default: { /* complex64 */
      float c[2] = {(float)(i - 10) * 0.5f, (float)i * 0.25f};
      memcpy(p, c, 8);
    }
  }
}

static cmx_array known(cmx_dtype dt, const int64_t* shape, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= shape[i];
  size_t isz = cmx_dtype_size(dt);
  uint8_t* d = malloc((size_t)n * isz + 1);
  for (int64_t i = 0; i < n; i++) value(dt, i, d + i * isz);
  cmx_array a;
  TRY(cmx_array_from_data(&a, d, shape, nd, dt));
  free(d);
  return a;
}

static const char* path(const char* dir, const char* name) {
  static char b[4][1024];
  static int k;
  char* p = b[k++ & 3];
  snprintf(p, 1024, "%s/%s", dir, name);
  return p;
}

/* ---------------- write ---------------- */

static void set_meta_int(cmx_metadata* m, const char* key, cmx_meta_type t,
                         int64_t v) {
  cmx_meta_value* x;
  TRY(cmx_meta_new_int(&x, t, v));
  TRY(cmx_metadata_set(m, key, x));
}

static cmx_meta_value* int_array(cmx_meta_type t, const int64_t* v, int n) {
  cmx_meta_value *a, *x;
  TRY(cmx_meta_new_array(&a, t));
  for (int i = 0; i < n; i++) {
    TRY(cmx_meta_new_int(&x, t, v[i]));
    TRY(cmx_meta_array_append(a, x));
  }
  return a;
}

static void gguf_metadata(cmx_metadata* m) {
  cmx_meta_value *v, *arr, *x;
  set_meta_int(m, "t.uint8", CMX_META_UINT8, 200);
  set_meta_int(m, "t.int8", CMX_META_INT8, -100);
  set_meta_int(m, "t.uint16", CMX_META_UINT16, 65000);
  set_meta_int(m, "t.int16", CMX_META_INT16, -32000);
  set_meta_int(m, "t.uint32", CMX_META_UINT32, 4000000000);
  set_meta_int(m, "t.int32", CMX_META_INT32, -2000000000);
  set_meta_int(m, "t.int64", CMX_META_INT64, INT64_MIN);
  set_meta_int(m, "t.bool", CMX_META_BOOL, 1);
  TRY(cmx_meta_new_uint64(&v, UINT64_MAX));
  TRY(cmx_metadata_set(m, "t.uint64", v));
  TRY(cmx_meta_new_float(&v, CMX_META_FLOAT32, 1.25));
  TRY(cmx_metadata_set(m, "t.float32", v));
  TRY(cmx_meta_new_float(&v, CMX_META_FLOAT64, 0.1));
  TRY(cmx_metadata_set(m, "t.float64", v));
  TRY(cmx_meta_new_string(&v, "h\xc3\xa9llo"));
  TRY(cmx_metadata_set(m, "t.string", v));
  TRY(cmx_metadata_set(m, "t.array.int32",
                       int_array(CMX_META_INT32, (int64_t[]){1, -2, 3}, 3)));
  TRY(cmx_metadata_set(m, "t.array.uint8",
                       int_array(CMX_META_UINT8, (int64_t[]){0, 255}, 2)));
  TRY(cmx_metadata_set(m, "t.array.bool",
                       int_array(CMX_META_BOOL, (int64_t[]){1, 0}, 2)));
  TRY(cmx_meta_new_array(&arr, CMX_META_STRING));
  const char* strs[2] = {"a", "bc"};
  for (int i = 0; i < 2; i++) {
    TRY(cmx_meta_new_string(&x, strs[i]));
    TRY(cmx_meta_array_append(arr, x));
  }
  TRY(cmx_metadata_set(m, "t.array.string", arr));
  TRY(cmx_meta_new_array(&arr, CMX_META_FLOAT64));
  double fv[2] = {0.5, -0.25};
  for (int i = 0; i < 2; i++) {
    TRY(cmx_meta_new_float(&x, CMX_META_FLOAT64, fv[i]));
    TRY(cmx_meta_array_append(arr, x));
  }
  TRY(cmx_metadata_set(m, "t.array.float64", arr));
  TRY(cmx_meta_new_array(&arr, CMX_META_ARRAY)); /* [[1, 2], [3]] */
  TRY(cmx_meta_array_append(arr,
                            int_array(CMX_META_INT32, (int64_t[]){1, 2}, 2)));
  TRY(cmx_meta_array_append(arr, int_array(CMX_META_INT32, (int64_t[]){3}, 1)));
  TRY(cmx_metadata_set(m, "t.nested", arr));
}

static int cmd_write(const char* dir) {
  const int64_t s3[3] = {2, 3, 4}, s0[2] = {0, 3};
  char name[128];
  cmx_named_arrays *all, *st, *bf, *c64, *gg;
  TRY(cmx_named_arrays_new(&all));
  TRY(cmx_named_arrays_new(&st));
  TRY(cmx_named_arrays_new(&bf));
  TRY(cmx_named_arrays_new(&c64));
  TRY(cmx_named_arrays_new(&gg));
  for (int t = 0; t < CMX_NUM_DTYPES; t++) {
    cmx_dtype dt = (cmx_dtype)t;
    const char* dn = cmx_dtype_name(dt);
    cmx_array a = known(dt, s3, 3), z = known(dt, NULL, 0),
              e = known(dt, s0, 2);
    snprintf(name, sizeof name, "npy_%s", dn); /* .npy appended by save */
    TRY(cmx_save(path(dir, name), a));
    snprintf(name, sizeof name, "npy_%s_0d.npy", dn);
    TRY(cmx_save(path(dir, name), z));
    snprintf(name, sizeof name, "npy_%s_empty.npy", dn);
    TRY(cmx_save(path(dir, name), e));
    TRY(cmx_named_arrays_set(all, dn, a));
    TRY(cmx_named_arrays_set(dt == CMX_BFLOAT16    ? bf
                             : dt == CMX_COMPLEX64 ? c64
                                                   : st,
                             dn, a));
    if (dt == CMX_FLOAT32 || dt == CMX_FLOAT16 || dt == CMX_BFLOAT16 ||
        dt == CMX_FLOAT64 || dt == CMX_INT8 || dt == CMX_INT16 ||
        dt == CMX_INT32 || dt == CMX_INT64)
      TRY(cmx_named_arrays_set(gg, dn, a));
    cmx_array_release_all((cmx_array[]){a, z, e}, 3);
  }
  cmx_array z = known(CMX_FLOAT32, NULL, 0), e = known(CMX_INT8, s0, 1);
  TRY(cmx_named_arrays_set(all, "scalar", z));
  TRY(cmx_named_arrays_set(all, "empty", e));
  cmx_array_release(z);
  cmx_array_release(e);
  /* Column-major int32 3x4 whose logical [r][c] is value(r*4 + c). */
  int32_t col[12];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++) value(CMX_INT32, r * 4 + c, &col[c * 3 + r]);
  cmx_array base, fo;
  TRY(cmx_array_from_data(&base, col, (int64_t[]){12}, 1, CMX_INT32));
  TRY(cmx_array_eval(base));
  fo = cmx__node_new("io_tool", (int64_t[]){3, 4}, 2, CMX_INT32);
  fo->buf = cmx__buffer_retain(base->buf);
  CMX__STRIDES(fo)[0] = 1;
  CMX__STRIDES(fo)[1] = 3;
  cmx__node_update_flags(fo);
  TRY(cmx_save(path(dir, "npy_fortran.npy"), fo));
  cmx_array_release(fo);
  cmx_array_release(base);
  /* A broadcast float32 (3, 4) whose rows are value(0..3). */
  cmx_array row = known(CMX_FLOAT32, (int64_t[]){1, 4}, 2), bc;
  TRY(cmx_broadcast_to(&bc, row, (int64_t[]){3, 4}, 2, CMX_STREAM_DEFAULT));
  TRY(cmx_save(path(dir, "npy_broadcast.npy"), bc));
  cmx_array_release(row);
  cmx_array_release(bc);
  TRY(cmx_savez(path(dir, "stored"), all));
  if (cmx_savez_compressed(path(dir, "deflated"), all) != CMX_OK) {
    if (cmx_last_status() != CMX_ERR_NOT_IMPLEMENTED) return fail();
    printf("NOTE %s\n", cmx_last_error()); /* built without zlib */
  }
  cmx_metadata* meta;
  TRY(cmx_metadata_new(&meta));
  TRY(cmx_metadata_set_string(meta, "format", "mlx"));
  TRY(cmx_metadata_set_string(meta, "unicode", "h\xc3\xa9llo \"q\" \\ \n"));
  TRY(cmx_save_safetensors(path(dir, "model"), st, meta));
  TRY(cmx_save_safetensors(path(dir, "model_bf16"), bf, NULL));
  TRY(cmx_save_safetensors(path(dir, "model_c64"), c64, NULL));
  cmx_metadata_free(meta);
  TRY(cmx_metadata_new(&meta));
  gguf_metadata(meta);
  TRY(cmx_save_gguf(path(dir, "model"), gg, meta));
  cmx_metadata_free(meta);
  cmx_named_arrays_free(all);
  cmx_named_arrays_free(st);
  cmx_named_arrays_free(bf);
  cmx_named_arrays_free(c64);
  cmx_named_arrays_free(gg);
  printf("OK\n");
  return 0;
}

static int cmd_many(const char* file) {
  cmx_named_arrays* m;
  TRY(cmx_named_arrays_new(&m));
  for (int i = 0; i < 70000; i++) {
    cmx_array a;
    char name[32];
    snprintf(name, sizeof name, "a%d", i);
    TRY(cmx_array_from_int64(&a, 3 * i - 7, CMX_INT32));
    TRY(cmx_named_arrays_set(m, name, a));
    cmx_array_release(a);
  }
  TRY(cmx_savez(file, m));
  cmx_named_arrays_free(m);
  printf("OK\n");
  return 0;
}

static int cmd_sum(const char* file) {
  cmx_named_arrays* m;
  TRY(cmx_load_npz(&m, file, CMX_STREAM_DEFAULT));
  long long sum = 0;
  for (size_t i = 0; i < cmx_named_arrays_size(m); i++) {
    int64_t v;
    TRY(cmx_array_item_int64(cmx_named_arrays_at(m, i), &v));
    sum += atoll(cmx_named_arrays_name(m, i) + 1) * (long long)v;
  }
  printf("n=%zu sum=%lld\nOK\n", cmx_named_arrays_size(m), sum);
  cmx_named_arrays_free(m);
  return 0;
}

/* ---------------- dump ---------------- */

/* Bytes as lowercase hex (strings may hold any bytes). */
static void put_hex(FILE* f, const char* s, size_t n) {
  fputc('"', f);
  for (size_t i = 0; i < n; i++) fprintf(f, "%02x", (uint8_t)s[i]);
  fputc('"', f);
}

static void put_meta(FILE* f, const cmx_meta_value* v) {
  cmx_meta_type t = cmx_meta_get_type(v);
  fprintf(f, "{\"type\": \"%s\", ", cmx_meta_type_name(t));
  if (t == CMX_META_STRING) {
    const char* s;
    size_t n;
    cmx_meta_get_string(v, &s, &n);
    fprintf(f, "\"hex\": ");
    put_hex(f, s, n);
  } else if (t == CMX_META_ARRAY) {
    fprintf(f, "\"elem\": \"%s\", \"value\": [",
            cmx_meta_type_name(cmx_meta_array_elem_type(v)));
    for (size_t i = 0; i < cmx_meta_array_length(v); i++) {
      if (i) fprintf(f, ", ");
      put_meta(f, cmx_meta_array_item(v, i));
    }
    fprintf(f, "]");
  } else if (t == CMX_META_FLOAT32 || t == CMX_META_FLOAT64) {
    double d;
    cmx_meta_get_double(v, &d);
    fprintf(f, "\"value\": %.17g", d);
  } else if (t == CMX_META_UINT64) {
    uint64_t u;
    cmx_meta_get_uint64(v, &u);
    fprintf(f, "\"value\": %llu", (unsigned long long)u);
  } else {
    int64_t i;
    cmx_meta_get_int64(v, &i);
    fprintf(f, "\"value\": %lld", (long long)i);
  }
  fprintf(f, "}");
}

static int cmd_dump(const char* file, const char* out) {
  const char* dot = strrchr(file, '.');
  bool meta = dot && (!strcmp(dot, ".safetensors") || !strcmp(dot, ".gguf"));
  cmx_loaded r;
  TRY(cmx_load(&r, file, NULL, meta, CMX_STREAM_DEFAULT));
  FILE* f = fopen(path(out, "manifest.json"), "w");
  if (!f) {
    printf("ERROR OSError cannot write manifest\n");
    return 1;
  }
  fprintf(f, "{\"arrays\": [");
  size_t n = r.array ? 1 : cmx_named_arrays_size(r.arrays);
  for (size_t i = 0; i < n; i++) {
    cmx_array a = r.array ? r.array : cmx_named_arrays_at(r.arrays, i);
    const char* name = r.array ? "" : cmx_named_arrays_name(r.arrays, i);
    char fn[32];
    snprintf(fn, sizeof fn, "%zu.npy", i);
    TRY(cmx_save(path(out, fn), a));
    fprintf(f, "%s{\"name\": ", i ? ", " : "");
    put_hex(f, name, strlen(name));
    fprintf(f, ", \"file\": \"%s\", \"dtype\": \"%s\", \"shape\": [", fn,
            cmx_dtype_name(cmx_array_dtype(a)));
    for (int d = 0; d < cmx_array_ndim(a); d++)
      fprintf(f, "%s%lld", d ? ", " : "", (long long)cmx_array_shape(a)[d]);
    fprintf(f, "], \"row_contiguous\": %s}",
            cmx_array_is_row_contiguous(a) ? "true" : "false");
  }
  fprintf(f, "], \"metadata\": [");
  for (size_t i = 0; i < cmx_metadata_size(r.metadata); i++) {
    const char* k = cmx_metadata_key(r.metadata, i);
    fprintf(f, "%s{\"key\": ", i ? ", " : "");
    put_hex(f, k, strlen(k));
    fprintf(f, ", \"value\": ");
    put_meta(f, cmx_metadata_value(r.metadata, i));
    fprintf(f, "}");
  }
  fprintf(f, "]}\n");
  fclose(f);
  cmx_loaded_clear(&r);
  printf("OK\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "write") == 0) return cmd_write(argv[2]);
  if (argc == 3 && strcmp(argv[1], "many") == 0) return cmd_many(argv[2]);
  if (argc == 3 && strcmp(argv[1], "sum") == 0) return cmd_sum(argv[2]);
  if (argc == 4 && strcmp(argv[1], "dump") == 0)
    return cmd_dump(argv[2], argv[3]);
  fprintf(stderr,
          "usage: io_tool write <dir> | io_tool dump <file> <outdir>\n");
  return 2;
}
