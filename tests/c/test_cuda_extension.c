/* The extension API's threads and CUDA kernels (cmx/primitive.h's
 * cmx_parallel_for, cmx/cuda.h): a parallel_for covers its range once;
 * sources compile through NVRTC (errors carry NVRTC's log, the toolkit's
 * headers are found); and, where a GPU (or the fake driver) is, an
 * extension primitive's eval_gpu compiles its kernel through the kernel
 * cache once and launches it on its stream with the grid it chose. */
#include <stdatomic.h>

#include "gpu_util.h"

/* ---------------- cmx_parallel_for ---------------- */

typedef struct {
  _Atomic int* hits;
  _Atomic int calls;
} cover_ctx;

static void cover(void* ctx, int64_t begin, int64_t end) {
  cover_ctx* c = ctx;
  atomic_fetch_add(&c->calls, 1);
  for (int64_t i = begin; i < end; i++) atomic_fetch_add(&c->hits[i], 1);
}

static void test_parallel_for(void) {
  enum { N = 100003 };
  _Atomic int* hits = calloc(N, sizeof *hits);
  cover_ctx c = {.hits = hits};
  cmx_parallel_for(N, 1000, cover, &c);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += atomic_load(&hits[i]) != 1;
  CHECK(bad == 0);
  CHECK(atomic_load(&c.calls) >= 1);
  CHECK(cmx_parallel_threads() >= 1);
  /* Fewer than two grains: one call on the caller. */
  atomic_store(&c.calls, 0);
  cmx_parallel_for(10, 1000, cover, &c);
  CHECK(atomic_load(&c.calls) == 1 && atomic_load(&hits[9]) == 2);
  cmx_parallel_for(0, 1, cover, &c); /* nothing */
  CHECK(atomic_load(&c.calls) == 1);
  free(hits);
}

/* ---------------- compiling ---------------- */

static const char* k_grid_src = GPU_TEST_GRID_SRC;

static void test_compile_check(void) {
  if (!g_nvrtc) {
    FAILS(cmx_cuda_compile_check("ext", k_grid_src, 80), CMX_ERR_RUNTIME,
          "NVRTC is not available");
    CHECK(!cmx_cuda_nvrtc_available());
    return;
  }
  CHECK(cmx_cuda_nvrtc_available());
  OK(cmx_cuda_compile_check("ext", k_grid_src, 80));
  OK(cmx_cuda_compile_check("ext", k_grid_src, 0)); /* the GPU's, or 80 */
  /* NVRTC's log is in the message: the file (the program's name), the
   * line and what is wrong. */
  FAILS(cmx_cuda_compile_check("broken_prog",
                               "extern \"C\" __global__ void k(float* x) {\n"
                               "  x[0] = not_declared_anywhere;\n}\n",
                               80),
        CMX_ERR_RUNTIME, "not_declared_anywhere");
  CHECK(strstr(cmx_last_error(), "broken_prog.cu(2)") != NULL);
  FAILS(cmx_cuda_compile_check("", k_grid_src, 80), CMX_ERR_VALUE, "name");
  /* The toolkit's headers, when a toolkit is installed. */
  char dir[4096], why[512];
  long version;
  if (cmx__toolkit_cccl(dir, sizeof dir, &version, why, sizeof why)) {
    OK(cmx_cuda_compile_check(
        "headers",
        "#include <cuda_fp16.h>\n#include <cooperative_groups.h>\n"
        "extern \"C\" __global__ void k(__half* x) {\n"
        "  x[cooperative_groups::this_grid().thread_rank()] =\n"
        "      __float2half(1.0f);\n}\n",
        80));
  }
}

static void test_outside_a_gpu_task(void) {
  const cmx_cuda_kernel* k = (const cmx_cuda_kernel*)1;
  FAILS(cmx_cuda_kernel_get(&k, "ext", k_grid_src, "cmx_test_grid"),
        CMX_ERR_RUNTIME, "gpu stream");
  CHECK(k == NULL);
  FAILS(cmx_cuda_kernel_get(&k, "ext", k_grid_src, ""), CMX_ERR_VALUE,
        "entry point");
  cmx_cuda_cfg cfg = {{1, 1, 1}, {1, 1, 1}, 0};
  FAILS(cmx_cuda_launch("ext", NULL, &cfg, NULL, NULL, 0), CMX_ERR_VALUE,
        "[ext]");
}

/* ---------------- an extension with a GPU kernel ---------------- */

typedef struct grid_params {
  unsigned grid[3], block[3];
  int marker;
  int broken; /* 1: a source that does not compile; 2: a missing entry */
} grid_params;

static cmx_status grid_gpu(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout) {
  (void)in, (void)nin, (void)nout;
  const grid_params* q = cmx_primitive_params(p);
  const cmx_cuda_kernel* k;
  const char* src =
      q->broken == 1 ? "extern \"C\" __global__ void f() { oops }" : k_grid_src;
  cmx_status st = cmx_cuda_kernel_get(
      &k, "grid_ids", src, q->broken == 2 ? "no_such_kernel" : "cmx_test_grid");
  if (st == CMX_OK) st = cmx_kernel_alloc(out[0]);
  if (st != CMX_OK) return st;
  uint64_t ptr = cmx_kernel_device_ptr(out[0]);
  const void* args[2] = {&ptr, &q->marker};
  const size_t sizes[2] = {8, 4};
  cmx_cuda_cfg cfg = {{q->grid[0], q->grid[1], q->grid[2]},
                      {q->block[0], q->block[1], q->block[2]},
                      0};
  st = cmx_cuda_launch("grid_ids", k, &cfg, args, sizes, 2);
  if (st == CMX_OK) cmx_kernel_mark_device_written(out[0]);
  return st;
}

static const cmx_primitive_vtable grid_vt = {.name = "GridIds",
                                             .flags = CMX_PRIM_EXTERNAL,
                                             .id = -1,
                                             .eval_gpu = grid_gpu};

/* The ids the kernel writes, evaluated on the gpu; NULL with the error
 * set on failure. */
static cmx_array grid_ids(const grid_params* q) {
  int64_t n = (int64_t)q->grid[0] * q->grid[1] * q->grid[2] * q->block[0] *
              q->block[1] * q->block[2];
  cmx_primitive* p = cmx_primitive_new(&grid_vt, q, sizeof *q, gpu());
  if (!p) return NULL;
  cmx_array out = NULL;
  const int64_t* shapes[1] = {&n};
  int nd = 1;
  cmx_dtype dt = CMX_INT32;
  if (cmx_primitive_apply(&out, 1, p, NULL, 0, shapes, &nd, &dt) != CMX_OK)
    return NULL;
  if (cmx_eval(&out, 1) != CMX_OK) {
    cmx_array_release(out);
    return NULL;
  }
  return out;
}

static void test_extension_kernel(void) {
  if (!g_gpu) {
    CHECK_MSG(!gpu_test_required(), "no GPU: %s",
              cmx__gpu_unavailable_reason());
    printf("test_extension_kernel: no GPU here, not run\n");
    return;
  }
  grid_params q = {{3, 2, 1}, {4, 2, 1}, 7, 0};
  cmx__gpu_cache_stats s0 = cmx__gpu_cache_stats_get();
  cmx_array a = grid_ids(&q);
  CHECK_MSG(a != NULL, "%s", cmx_last_error());
  if (!a) return;
  const int32_t* v = NULL;
  OK(cmx_array_data(a, (const void**)&v));
  int bad = 0;
  for (int b = 0; b < 6; b++)
    for (int t = 0; t < 8; t++) bad += v[b * 8 + t] != 7 + b * 1000 + t;
  CHECK(bad == 0);
  cmx__gpu_cache_stats s1 = cmx__gpu_cache_stats_get();
  CHECK(s1.compiles + s1.disk_hits == s0.compiles + s0.disk_hits + 1);
  /* Again, with another grid: served from memory, not compiled. */
  grid_params q2 = {{5, 1, 1}, {32, 1, 1}, 100, 0};
  cmx_array b = grid_ids(&q2);
  CHECK_MSG(b != NULL, "%s", cmx_last_error());
  if (b) {
    OK(cmx_array_data(b, (const void**)&v));
    CHECK(v[0] == 100 && v[31] == 131 && v[32] == 1100 && v[159] == 4131);
  }
  cmx__gpu_cache_stats s2 = cmx__gpu_cache_stats_get();
  CHECK(s2.compiles == s1.compiles && s2.disk_hits == s1.disk_hits);
  CHECK(s2.mem_hits > s1.mem_hits);
  cmx_array_release(a);
  cmx_array_release(b);
  /* Errors of eval_gpu surface from eval, naming the program. */
  grid_params big = {{1, 1, 1}, {2048, 1, 1}, 0, 0};
  CHECK(grid_ids(&big) == NULL &&
        strstr(cmx_last_error(), "[grid_ids] gpu kernel cmx_test_grid"));
  grid_params broken = {{1, 1, 1}, {1, 1, 1}, 0, 1};
  CHECK(grid_ids(&broken) == NULL &&
        strstr(cmx_last_error(), "grid_ids.cu(1)") &&
        strstr(cmx_last_error(), "error"));
  grid_params missing = {{1, 1, 1}, {1, 1, 1}, 0, 2};
  CHECK(grid_ids(&missing) == NULL &&
        strstr(cmx_last_error(), "no_such_kernel"));
}

int main(void) {
  if (!gpu_test_begin("cuda_ext")) return 1;
  CASE(test_parallel_for);
  CASE(test_compile_check);
  CASE(test_outside_a_gpu_task);
  CASE(test_extension_kernel);
  gpu_test_end();
  return test_summary("test_cuda_extension");
}
