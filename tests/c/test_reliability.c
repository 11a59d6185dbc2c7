/* Reliability (issue 19): shape, stride and slice arithmetic at the int64
 * edges (these ran into signed overflow; the ASan/UBSan build of this test
 * checks that they no longer do), gather bounds on empty axes, failures
 * for want of memory that compute again later, interrupting an eval and
 * fork() after the thread pool and the stream workers were used. */
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define S CMX_STREAM_DEFAULT

static cmx_array from_f32(const float* v, const int64_t* shape, int nd) {
  cmx_array a = NULL;
  OK(cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT32));
  return a;
}

/* The float32 values of a (row-major); caller frees. */
static float* values(cmx_array a) {
  size_t n = (size_t)cmx_array_size(a);
  float* out = malloc((n ? n : 1) * sizeof *out);
  if (cmx_array_copy_to(a, out, n * sizeof *out) != CMX_OK) {
    free(out);
    return NULL;
  }
  return out;
}

static void test_slices_with_huge_steps(void) {
  float v[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  int64_t sh[2] = {5, 2};
  cmx_array a = from_f32(v, sh, 2);
  /* a[1:-3:2**63-1] -> row 1; a[::-2**63] -> row 4 */
  int64_t b0[2] = {1, 0}, e0[2] = {-3, 2}, s0[2] = {INT64_MAX, 1};
  int64_t b1[2] = {INT64_MAX, 0}, e1[2] = {INT64_MIN, 2},
          s1[2] = {INT64_MIN, 1};
  cmx_array r0 = NULL, r1 = NULL;
  OK(cmx_slice(&r0, a, b0, e0, s0, S));
  OK(cmx_slice(&r1, a, b1, e1, s1, S));
  float* x0 = values(r0);
  float* x1 = values(r1);
  CHECK(cmx_array_dim(r0, 0) == 1 && x0 && x0[0] == 2 && x0[1] == 3);
  CHECK(cmx_array_dim(r1, 0) == 1 && x1 && x1[0] == 8 && x1[1] == 9);
  char* str = NULL;
  OK(cmx_array_tostring(r1, &str));
  CHECK(str && strstr(str, "[8, 9]"));
  cmx_free(str);
  /* the strides of one-element dims stay the input's, not step * stride */
  CHECK(cmx_array_strides(r1)[0] == 2);
  free(x0);
  free(x1);
  /* a[-4:100:2**63 - 1] = -1 on a 1-d array */
  int64_t n = 5, b2 = -4, e2 = 100, s2 = INT64_MAX;
  cmx_array c = from_f32(v, &n, 1), m1 = NULL, u = NULL;
  OK(cmx_array_from_double(&m1, -1, CMX_FLOAT32));
  OK(cmx_slice_update(&u, c, m1, &b2, &e2, &s2, S));
  float* xu = values(u);
  CHECK(xu && xu[0] == 0 && xu[1] == -1 && xu[2] == 2 && xu[4] == 4);
  free(xu);
  /* the same on the rows of a 2-d array (a stride of 2 times 2**63 - 1) */
  int64_t b3[2] = {-4, 0}, e3[2] = {100, 2}, s3[2] = {INT64_MAX, 1};
  cmx_array u2 = NULL;
  OK(cmx_slice_update(&u2, a, m1, b3, e3, s3, S));
  float* x2 = values(u2);
  CHECK(x2 && x2[1] == 1 && x2[2] == -1 && x2[3] == -1 && x2[4] == 4);
  free(x2);
  cmx_array_release_all((cmx_array[]){a, r0, r1, c, m1, u, u2}, 7);
}

static void test_shape_size_rule(void) {
  /* NumPy's rule: the non-zero dims' product in bytes fits in an int64 */
  cmx_array a = NULL;
  int64_t big[2] = {0, (int64_t)1 << 62};
  FAILS(cmx_ones(&a, big, 2, CMX_FLOAT32, S), CMX_ERR_VALUE, "[ones]");
  int64_t ok[2] = {0, (int64_t)1 << 40};
  OK(cmx_ones(&a, ok, 2, CMX_UINT8, S));
  char* str = NULL;
  OK(cmx_array_tostring(a, &str));
  CHECK(str && strstr(str, "array([]"));
  cmx_free(str);
  cmx_array_release(a);
}

static void test_tile_empty_huge_reps(void) {
  int64_t sh[4] = {2, 3, 2, 0}, reps[2] = {(int64_t)1 << 31, (int64_t)1 << 31};
  cmx_array z = NULL, t = NULL;
  OK(cmx_zeros(&z, sh, 4, CMX_FLOAT32, S));
  OK(cmx_tile(&t, z, reps, 2, S));
  OK(cmx_array_eval(t));
  CHECK(t && cmx_array_ndim(t) == 4 &&
        cmx_array_dim(t, 2) == ((int64_t)1 << 32) && cmx_array_size(t) == 0);
  cmx_array_release_all((cmx_array[]){z, t}, 2);
}

static void test_as_strided_single_element_dims(void) {
  float v[6] = {0, 1, 2, 3, 4, 5};
  int64_t n = 6, shape[2] = {1, 2}, strides[2] = {(int64_t)1 << 62, 3};
  cmx_array a = from_f32(v, &n, 1), r = NULL;
  OK(cmx_as_strided(&r, a, shape, 2, strides, 0, S));
  float* x = values(r);
  CHECK(x && x[0] == 0 && x[1] == 3);
  free(x);
  char* str = NULL;
  OK(cmx_array_tostring(r, &str));
  CHECK(str && strstr(str, "[[0, 3]]"));
  cmx_free(str);
  cmx_array_release_all((cmx_array[]){a, r}, 2);
}

static void test_gather_on_empty_axis(void) {
  int64_t sh[2] = {2, 0}, ish[2] = {2, 1};
  int64_t idx[2] = {5, 3};
  cmx_array a = NULL, i = NULL, r = NULL;
  OK(cmx_zeros(&a, sh, 2, CMX_FLOAT32, S));
  OK(cmx_array_from_data(&i, idx, ish, 2, CMX_INT64));
  int ax = 1;
  OK(cmx_take_along_axis(&r, a, i, &ax, S));
  FAILS(cmx_array_eval(r), CMX_ERR_INDEX,
        "out of bounds for axis 1 with size 0");
  cmx_array_release_all((cmx_array[]){a, i, r}, 3);
}

/* A chain of n products of size m: long enough to interrupt. */
static cmx_array chain(cmx_array x, cmx_array w, int n, cmx_array* keep,
                       int k) {
  cmx_array y = cmx_array_retain(x);
  for (int j = 0; j < n; j++) {
    cmx_array p = NULL, t = NULL;
    OK(cmx_matmul(&p, y, w, S));
    OK(cmx_tanh(&t, p, S));
    cmx_array_release(p);
    cmx_array_release(y);
    y = t;
    if (j == k && keep) *keep = cmx_array_retain(y);
  }
  return y;
}

static _Atomic int g_checks;
static bool stop_after_three(void* ctx) {
  (void)ctx;
  return ++g_checks >= 3;
}

static void test_interrupt_then_recompute(void) {
  int64_t sh[2] = {128, 128};
  cmx_array w = NULL, x = NULL, k0 = NULL, c = NULL;
  OK(cmx_array_from_double(&c, 1.0 / 128, CMX_FLOAT32));
  OK(cmx_full(&w, sh, 2, c, CMX_FLOAT32, S));
  OK(cmx_ones(&x, sh, 2, CMX_FLOAT32, S));
  OK(cmx_eval((cmx_array[]){w, x}, 2));
  /* long enough that the check (every ~50 ms) fires three times: 4000
   * steps were not always (a loaded CI machine once finished them after
   * two checks); the interrupt at the third check ends the eval early, so
   * the length costs only the graph's building */
  cmx_array y = chain(x, w, 16000, &k0, 3990);
  cmx_set_interrupt_check(stop_after_three, NULL);
  FAILS(cmx_array_eval(y), CMX_ERR_INTERRUPTED, "interrupted");
  cmx_set_interrupt_check(NULL, NULL);
  CHECK(g_checks >= 3);
  /* the cancelled work is computed by a later eval, to the same values */
  cmx_array z = chain(x, w, 3991, NULL, 0);
  OK(cmx_array_eval(k0));
  OK(cmx_array_eval(z));
  cmx_array eq = NULL;
  bool same = false;
  OK(cmx_array_equal(&eq, k0, z, false, S));
  OK(cmx_array_item_bool(eq, &same));
  CHECK(same);
  cmx_array_release_all((cmx_array[]){w, x, c, y, k0, z, eq}, 7);
}

static void test_memory_failure_recomputes(void) {
  int64_t n = 1 << 18;
  cmx_array a = NULL, b = NULL, s = NULL;
  OK(cmx_ones(&a, &n, 1, CMX_FLOAT32, S));
  OK(cmx_array_eval(a));
  OK(cmx_add(&b, a, a, S));
  OK(cmx_sum(&s, b, NULL, 0, false, S));
  size_t old;
  OK(cmx_set_memory_limit(cmx_get_active_memory() + 4096, &old));
  FAILS(cmx_array_eval(s), CMX_ERR_MEMORY, "memory limit");
  FAILS(cmx_array_eval(b), CMX_ERR_MEMORY, "memory limit");
  OK(cmx_set_memory_limit(old, NULL));
  double v = 0;
  OK(cmx_array_item_double(s, &v));
  CHECK(v == 2.0 * (double)n);
  cmx_array_release_all((cmx_array[]){a, b, s}, 3);
}

/* Large work: the thread pool (a big reduction), BLAS and the stream
 * worker (a graph too big to run on the caller's thread). */
static double big_work(void) {
  int64_t n = 1 << 21;
  cmx_array a = NULL, s = NULL;
  OK(cmx_ones(&a, &n, 1, CMX_FLOAT32, S));
  cmx_array y = cmx_array_retain(a);
  for (int i = 0; i < 100; i++) {
    cmx_array t = NULL;
    OK(cmx_add(&t, y, a, S));
    cmx_array_release(y);
    y = t;
  }
  OK(cmx_sum(&s, y, NULL, 0, false, S));
  double v = -1;
  OK(cmx_array_item_double(s, &v));
  cmx_array_release_all((cmx_array[]){a, s, y}, 3);
  return v;
}

static void test_fork_after_use(void) {
  double want = big_work();
  CHECK(want == 101.0 * (1 << 21));
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(60); /* a hang fails the parent's check instead of the suite */
    _exit(big_work() == want ? 0 : 3);
  }
  CHECK(pid > 0);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d",
            status);
  CHECK(big_work() == want); /* the parent goes on */
}

int main(void) {
  /* These cases are about the CPU's streams, thread pool and host memory
   * (fork, interrupts, the memory limit): where a GPU is present it would
   * be the default device. */
  if (cmx_set_default_device(cmx_device_cpu()) != CMX_OK) return 1;
  RUN(test_slices_with_huge_steps);
  RUN(test_shape_size_rule);
  RUN(test_tile_empty_huge_reps);
  RUN(test_as_strided_single_element_dims);
  RUN(test_gather_on_empty_axis);
  RUN(test_memory_failure_recomputes);
  RUN(test_interrupt_then_recompute);
  RUN(test_fork_after_use);
  return test_summary("test_reliability");
}
