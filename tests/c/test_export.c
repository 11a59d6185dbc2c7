/* Function export (include/cmx/export.h): a traced function saved with its
 * constants, imported and run again; several traces, keyword inputs,
 * shapeless traces, the item walk, dot output, and malformed files (every
 * truncation and random byte changes of a valid file fail cleanly). */
#include <stdint.h>
#include <unistd.h>

#include "test.h"

static cmx_stream S = CMX_STREAM_DEFAULT;
static char g_dir[256];

static const char* tpath(const char* name) {
  static char buf[512];
  snprintf(buf, sizeof buf, "%s/%s", g_dir, name);
  return buf;
}

static cmx_array f32(const float* v, const int64_t* shape, int ndim) {
  cmx_array a = NULL;
  cmx_array_from_data(&a, v, shape, ndim, CMX_FLOAT32);
  return a;
}

static cmx_array* one_out(cmx_array a, int* nout) {
  cmx_array* o = malloc(sizeof *o);
  o[0] = a;
  *nout = 1;
  return o;
}

/* f(x, y) = exp(x) * w + sum(y) with w = [1, 2, 3] a constant. */
static cmx_status f_main(void* pl, const cmx_array* in, int n, cmx_array** out,
                         int* nout) {
  (void)pl, (void)n;
  static const float wv[3] = {1, 2, 3};
  int64_t sh = 3;
  cmx_array w = f32(wv, &sh, 1), e = NULL, m = NULL, s = NULL, r = NULL;
  cmx_status st = cmx_exp(&e, in[0], S);
  if (st == CMX_OK) st = cmx_multiply(&m, e, w, S);
  if (st == CMX_OK) st = cmx_sum(&s, in[1], NULL, 0, false, S);
  if (st == CMX_OK) st = cmx_add(&r, m, s, S);
  cmx_array_release(w);
  cmx_array_release(e);
  cmx_array_release(m);
  cmx_array_release(s);
  if (st != CMX_OK) return st;
  *out = one_out(r, nout);
  return CMX_OK;
}

/* g(x) = reshape(x, (-1,)) * 2: shape-dependent parameters. */
static cmx_status f_flat(void* pl, const cmx_array* in, int n, cmx_array** out,
                         int* nout) {
  (void)pl, (void)n;
  int64_t sh = -1;
  cmx_array r = NULL, two = NULL, y = NULL;
  cmx_status st = cmx_reshape(&r, in[0], &sh, 1, S);
  if (st == CMX_OK) st = cmx_array_from_double(&two, 2.0, CMX_FLOAT32);
  if (st == CMX_OK) st = cmx_multiply(&y, r, two, S);
  cmx_array_release(r);
  cmx_array_release(two);
  if (st != CMX_OK) return st;
  *out = one_out(y, nout);
  return CMX_OK;
}

/* True when a and b are equal float arrays of the same shape. */
static bool equal(cmx_array a, cmx_array b) {
  cmx_array c = NULL;
  bool v = false;
  if (cmx_array_ndim(a) != cmx_array_ndim(b)) return false;
  if (cmx_array_equal(&c, a, b, false, S) == CMX_OK) {
    double d = 0;
    v = cmx_array_item_double(c, &d) == CMX_OK && d == 1.0;
  }
  cmx_array_release(c);
  return v;
}

static void test_roundtrip(void) {
  const float xv[3] = {0, 1, -1}, yv[2] = {0.5f, 1.5f};
  int64_t s3 = 3, s2 = 2;
  cmx_array args[2] = {f32(xv, &s3, 1), f32(yv, &s2, 1)};
  cmx_closure f = {f_main, NULL};
  OK(cmx_export_function(tpath("f.cmxfn"), f, args, 2, false, "meta v1"));
  cmx_imported* g = NULL;
  OK(cmx_import_function(&g, tpath("f.cmxfn")));
  if (!g) return;
  CHECK(strcmp(cmx_imported_metadata(g), "meta v1") == 0);
  CHECK(cmx_imported_traces(g) == 1);
  cmx_array* outs = NULL;
  cmx_array* want = NULL;
  int nout = 0, nwant = 0;
  OK(cmx_imported_call(g, args, 2, NULL, NULL, 0, &outs, &nout));
  OK(f.fn(NULL, args, 2, &want, &nwant));
  CHECK(nout == 1 && nwant == 1 && outs && equal(outs[0], want[0]));
  cmx_arrays_free(outs, nout);
  cmx_arrays_free(want, nwant);
  /* Another shape: no trace matches (not shapeless). */
  const float x5[5] = {0};
  int64_t s5 = 5;
  cmx_array other[2] = {f32(x5, &s5, 1), cmx_array_retain(args[1])};
  outs = NULL;
  FAILS(cmx_imported_call(g, other, 2, NULL, NULL, 0, &outs, &nout),
        CMX_ERR_VALUE, "[import_function::call] No imported function");
  FAILS(cmx_imported_call(g, args, 1, NULL, NULL, 0, &outs, &nout),
        CMX_ERR_VALUE, "[import_function::call] No imported function");
  cmx_imported_free(g);
  cmx_array_release_all(other, 2);
  cmx_array_release_all(args, 2);
}

static void test_exporter_shapeless_and_keywords(void) {
  const float v[6] = {1, 2, 3, 4, 5, 6};
  int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s6 = 6;
  cmx_array a = f32(v, s23, 2), b = f32(v, &s6, 1);
  cmx_closure g = {f_flat, NULL};
  cmx_exporter* e = NULL;
  OK(cmx_exporter_new(&e, tpath("g.cmxfn"), NULL));
  const char* kw[1] = {"x"};
  OK(cmx_exporter_add(e, g, &a, 1, NULL, NULL, 0, true)); /* 2-d, shapeless */
  OK(cmx_exporter_add(e, g, NULL, 0, kw, &b, 1, false));  /* keyword x */
  OK(cmx_exporter_close(e));
  cmx_exporter_free(e);
  cmx_imported* im = NULL;
  OK(cmx_import_function(&im, tpath("g.cmxfn")));
  if (!im) goto out;
  CHECK(cmx_imported_traces(im) == 2);
  CHECK(strcmp(cmx_imported_metadata(im), "") == 0);
  /* The shapeless trace runs a new 2-d shape (its reshape follows it). */
  cmx_array c = f32(v, s32, 2);
  cmx_array* outs = NULL;
  int nout = 0;
  OK(cmx_imported_call(im, &c, 1, NULL, NULL, 0, &outs, &nout));
  if (nout == 1) {
    CHECK(cmx_array_ndim(outs[0]) == 1 && cmx_array_shape(outs[0])[0] == 6);
    const void* p = NULL;
    OK(cmx_array_eval(outs[0]));
    OK(cmx_array_data(outs[0], &p));
    CHECK(p && ((const float*)p)[5] == 12.0f);
  }
  cmx_arrays_free(outs, nout);
  /* A 1-d positional call matches no trace; the keyword call does. */
  outs = NULL;
  FAILS(cmx_imported_call(im, &b, 1, NULL, NULL, 0, &outs, &nout),
        CMX_ERR_VALUE, "[import_function::call] No imported function");
  OK(cmx_imported_call(im, NULL, 0, kw, &b, 1, &outs, &nout));
  if (nout == 1) {
    const void* p = NULL;
    OK(cmx_array_data(outs[0], &p));
    CHECK(p && ((const float*)p)[2] == 6.0f);
  }
  cmx_arrays_free(outs, nout);
  cmx_array_release(c);
  cmx_imported_free(im);
out:
  cmx_array_release(a);
  cmx_array_release(b);
}

typedef struct {
  int kinds[4];
  char ops[256];
} visit_log;

static cmx_status on_item(void* pl, const cmx_export_item* it) {
  visit_log* l = pl;
  l->kinds[it->kind]++;
  if (it->kind == CMX_EXPORT_OP) {
    strncat(l->ops, it->op, sizeof l->ops - strlen(l->ops) - 2);
    strcat(l->ops, " ");
  }
  if (it->kind == CMX_EXPORT_CONSTANT && !it->out->array)
    return cmx_set_error(CMX_ERR_VALUE, "constant without a value");
  return CMX_OK;
}

static void test_visit_and_dot(void) {
  const float xv[3] = {0, 1, 2};
  int64_t s3 = 3;
  cmx_array args[2] = {f32(xv, &s3, 1), f32(xv, &s3, 1)};
  cmx_closure f = {f_main, NULL};
  visit_log l = {{0}, ""};
  OK(cmx_export_visit(f, args, 2, NULL, NULL, 0, false, on_item, &l));
  CHECK_MSG(l.kinds[CMX_EXPORT_INPUT] == 2 &&
                l.kinds[CMX_EXPORT_CONSTANT] >= 1 &&
                l.kinds[CMX_EXPORT_OUTPUT] == 1,
            "%d %d %d", l.kinds[0], l.kinds[1], l.kinds[3]);
  CHECK_MSG(
      strstr(l.ops, "Exp") && strstr(l.ops, "Multiply") && strstr(l.ops, "Add"),
      "ops: %s", l.ops);
  cmx_array* outs = NULL;
  int nout = 0;
  OK(f.fn(NULL, args, 2, &outs, &nout));
  char* dot = NULL;
  OK(cmx_export_to_dot(outs, nout, &dot));
  CHECK(dot && strncmp(dot, "digraph {", 9) == 0 && strstr(dot, "Exp"));
  cmx_free(dot);
  cmx_arrays_free(outs, nout);
  cmx_array_release_all(args, 2);
}

/* Reads path into a malloc'ed buffer. */
static uint8_t* slurp(const char* path, size_t* n) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* b = malloc(len > 0 ? (size_t)len : 1);
  *n = b ? fread(b, 1, (size_t)len, f) : 0;
  fclose(f);
  return b;
}

static void spit(const char* path, const uint8_t* b, size_t n) {
  FILE* f = fopen(path, "wb");
  if (!f) return;
  fwrite(b, 1, n, f);
  fclose(f);
}

/* Imports a (possibly broken) file and, when that works, calls it: any
 * failure must be a clean CMX_ERR_VALUE. Returns 1 for a bad outcome. */
static int try_file(const char* path, cmx_array* args) {
  cmx_imported* g = NULL;
  cmx_status st = cmx_import_function(&g, path);
  if (st != CMX_OK) return st != CMX_ERR_VALUE || !g ? st != CMX_ERR_VALUE : 1;
  cmx_array* outs = NULL;
  int nout = 0;
  st = cmx_imported_call(g, args, 2, NULL, NULL, 0, &outs, &nout);
  if (st == CMX_OK) {
    for (int i = 0; i < nout; i++) cmx_array_eval(outs[i]);
    cmx_arrays_free(outs, nout);
  }
  cmx_imported_free(g);
  return 0;
}

static void test_malformed(void) {
  const float xv[3] = {0, 1, -1};
  int64_t s3 = 3;
  cmx_array args[2] = {f32(xv, &s3, 1), f32(xv, &s3, 1)};
  cmx_closure f = {f_main, NULL};
  OK(cmx_export_function(tpath("m.cmxfn"), f, args, 2, false, "x"));
  size_t n = 0;
  uint8_t* good = slurp(tpath("m.cmxfn"), &n);
  CHECK(good && n > 16);
  if (!good) return;
  int bad = 0;
  for (size_t k = 0; k < n; k++) { /* every truncation */
    spit(tpath("t.cmxfn"), good, k);
    cmx_imported* g = NULL;
    cmx_status st = cmx_import_function(&g, tpath("t.cmxfn"));
    if (st != CMX_ERR_VALUE || g) bad++;
    cmx_imported_free(g);
  }
  CHECK_MSG(bad == 0, "%d truncations did not fail cleanly", bad);
  uint8_t* m = malloc(n);
  uint32_t seed = 12345;
  bad = 0;
  for (int r = 0; r < 300 && m; r++) { /* random byte changes */
    memcpy(m, good, n);
    for (int j = 0; j < 1 + r % 4; j++) {
      seed = seed * 1664525u + 1013904223u;
      size_t at = (seed >> 8) % n;
      seed = seed * 1664525u + 1013904223u;
      m[at] = (uint8_t)(seed >> 24);
    }
    spit(tpath("r.cmxfn"), m, n);
    bad += try_file(tpath("r.cmxfn"), args);
  }
  CHECK_MSG(bad == 0, "%d mutated files did not fail cleanly", bad);
  /* A wrong version is refused by version. */
  memcpy(m, good, n);
  m[6] = 99;
  spit(tpath("v.cmxfn"), m, n);
  cmx_imported* g = NULL;
  FAILS(cmx_import_function(&g, tpath("v.cmxfn")), CMX_ERR_VALUE, "version");
  FAILS(cmx_import_function(&g, tpath("none.cmxfn")), CMX_ERR_IO,
        "[import_function] Failed to open");
  free(m);
  free(good);
  cmx_array_release_all(args, 2);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/cmx_test_export_%d", (int)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", g_dir);
  if (system(cmd) != 0) return 1;
  RUN(test_roundtrip);
  RUN(test_exporter_shapeless_and_keywords);
  RUN(test_visit_and_dot);
  RUN(test_malformed);
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
  return test_summary("test_export");
}
