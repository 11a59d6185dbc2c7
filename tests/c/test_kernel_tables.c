/* The backends' kernel tables and the cmx_coverage program that prints
 * them:
 * - cmx_coverage (run as a child) prints every primitive of
 *   primitives/list.h exactly once, in order, as "<Name> <yes|no> <yes|no>",
 *   and every one has a CPU kernel ("cpu yes");
 * - cmx's own vtables name no kernels (the tables hold them) and the
 *   public coverage query agrees with the program;
 * - an extension is recognised by its vtable, not its id: one whose id
 *   collides with a built-in's gets its own eval_cpu (or none), never the
 *   built-in's kernel. */
#include "primitives/list.h"
#include "test.h"

static const char* const g_names[] = {
#define X(name, flags) #name,
    CMX__PRIMITIVES(X)
#undef X
};
#define NPRIM ((int)(sizeof g_names / sizeof *g_names))

static void test_program(void) {
  FILE* f = popen(CMX_COVERAGE_BIN, "r");
  CHECK_MSG(f != NULL, "cannot run %s", CMX_COVERAGE_BIN);
  if (!f) return;
  int seen[NPRIM];
  memset(seen, 0, sizeof seen);
  char line[256];
  int nlines = 0;
  while (fgets(line, sizeof line, f)) {
    char name[128], cpu[8], gpu[8], extra[8];
    int k = sscanf(line, "%127s %7s %7s %7s", name, cpu, gpu, extra);
    CHECK_MSG(k == 3, "line %d has %d fields: %s", nlines + 1, k, line);
    if (k != 3) continue;
    CHECK_MSG((!strcmp(cpu, "yes") || !strcmp(cpu, "no")) &&
                  (!strcmp(gpu, "yes") || !strcmp(gpu, "no")),
              "line %d: %s", nlines + 1, line);
    int id = -1;
    for (int i = 0; i < NPRIM && id < 0; i++)
      if (!strcmp(g_names[i], name)) id = i;
    CHECK_MSG(id >= 0, "unknown primitive %s", name);
    if (id >= 0) {
      seen[id]++;
      CHECK_MSG(id == nlines, "%s on line %d, listed at %d", name, nlines + 1,
                id + 1);
      CHECK_MSG(!strcmp(cpu, "yes"), "%s has no CPU kernel", name);
    }
    nlines++;
  }
  int rc = pclose(f);
  CHECK_MSG(rc == 0, "cmx_coverage exit status %d", rc);
  CHECK_MSG(nlines == NPRIM, "%d lines for %d primitives", nlines, NPRIM);
  for (int i = 0; i < NPRIM; i++)
    CHECK_MSG(seen[i] == 1, "%s printed %d times", g_names[i], seen[i]);
}

static void test_builtin_vtables(void) {
  CHECK(cmx_builtin_primitive_count() == NPRIM);
  CHECK(cmx_builtin_primitive(-1) == NULL);
  CHECK(cmx_builtin_primitive(NPRIM) == NULL);
  for (int i = 0; i < NPRIM; i++) {
    const cmx_primitive_vtable* vt = cmx_builtin_primitive(i);
    CHECK_MSG(vt && vt->id == i && !strcmp(vt->name, g_names[i]),
              "built-in %d is %s", i, vt ? vt->name : "NULL");
    if (!vt) continue;
    CHECK_MSG(!vt->eval_cpu && !vt->eval_gpu, "%s names a kernel", vt->name);
    CHECK_MSG(cmx_primitive_has_kernel(vt, CMX_CPU), "%s: no CPU kernel",
              vt->name);
  }
  CHECK(!cmx_primitive_has_kernel(NULL, CMX_CPU));
}

/* An extension that claims id 0 (AsType's) and doubles its input. */
static cmx_status double_cpu(const cmx_primitive* p, const cmx_array* in,
                             int nin, const cmx_array* out, int nout) {
  (void)p, (void)nin, (void)nout;
  if (cmx_kernel_alloc(out[0]) != CMX_OK) return cmx_last_status();
  const float* a = cmx_kernel_data(in[0]);
  float* o = cmx_kernel_data(out[0]);
  for (int64_t i = 0; i < cmx_array_size(out[0]); i++) o[i] = 2 * a[i];
  return CMX_OK;
}
static const cmx_primitive_vtable double_vt = {
    .name = "Double", .id = 0, .eval_cpu = double_cpu};
static const cmx_primitive_vtable bare_vt = {.name = "Bare", .id = 0};

/* On stream s: the CPU's for the kernels below (the default device may be
 * a GPU). */
static cmx_status apply1(const cmx_primitive_vtable* vt, cmx_array a,
                         cmx_array* out, cmx_stream s) {
  cmx_primitive* p = cmx_primitive_new(vt, NULL, 0, s);
  if (!p) return cmx_last_status();
  const int64_t* shapes[1] = {cmx_array_shape(a)};
  int nd = cmx_array_ndim(a);
  cmx_dtype dt = CMX_FLOAT32;
  return cmx_primitive_apply(out, 1, p, &a, 1, shapes, &nd, &dt);
}

static void test_extension_ids(void) {
  CHECK(cmx_primitive_has_kernel(&double_vt, CMX_CPU));
  CHECK(!cmx_primitive_has_kernel(&double_vt, CMX_GPU));
  CHECK(!cmx_primitive_has_kernel(&bare_vt, CMX_CPU));
  CHECK(!cmx_primitive_has_kernel(&bare_vt, CMX_GPU));
  float x[3] = {1, 2, 3};
  int64_t n = 3;
  cmx_array a = NULL, d = NULL, b = NULL;
  OK(cmx_array_from_data(&a, x, &n, 1, CMX_FLOAT32));
  cmx_stream cpu = cmx_stream_on(cmx_device_cpu());
  OK(apply1(&double_vt, a, &d, cpu));
  const float* v = NULL;
  OK(cmx_array_eval(d));
  OK(cmx_array_data(d, (const void**)&v));
  CHECK(v && v[0] == 2 && v[1] == 4 && v[2] == 6);
  OK(apply1(&bare_vt, a, &b, cpu));
  /* eval failures keep their kind (issue 19) */
  FAILS(cmx_array_eval(b), CMX_ERR_NOT_IMPLEMENTED,
        "[Bare] has no cpu implementation");
  cmx_array_release(a), cmx_array_release(d), cmx_array_release(b);
  if (cmx_is_available(cmx_device_gpu())) {
    /* a CPU-only extension on a GPU stream: a clear error, as in MLX */
    cmx_array g = NULL;
    OK(cmx_array_from_data(&a, x, &n, 1, CMX_FLOAT32));
    OK(apply1(&double_vt, a, &g, cmx_stream_on(cmx_device_gpu())));
    FAILS(cmx_array_eval(g), CMX_ERR_NOT_IMPLEMENTED,
          "[Double] has no gpu implementation");
    cmx_array_release(a), cmx_array_release(g);
  }
}

int main(void) {
  RUN(test_program);
  RUN(test_builtin_vtables);
  RUN(test_extension_ids);
  return test_summary("test_kernel_tables");
}
