/* cmx/distributed.h from C: the group of one in this process, argument
 * errors, then 2 processes over the ring (this program run again as each
 * rank, with MLX_HOSTFILE and MLX_RANK set) for every collective, a split
 * and a send/recv pair. The ranks run under alarm(): a hang fails. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmx/cmx.h"
#include "test.h"

#define S CMX_STREAM_DEFAULT

static cmx_array vec(const float* v, int64_t n) {
  cmx_array a = NULL;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_FLOAT32));
  return a;
}

static const float* data(cmx_array a) {
  const void* p = NULL;
  OK(cmx_array_data(a, &p));
  static const float zero[8];
  return p ? p : zero;
}

static void test_group_of_one(void) {
  cmx_group* g = NULL;
  OK(cmx_distributed_init(&g, false, "any"));
  CHECK(cmx_group_size(g) == 1 && cmx_group_rank(g) == 0);
  CHECK(!strcmp(cmx_group_backend(g), "none"));
  CHECK(cmx_distributed_is_available("ring"));
  CHECK(cmx_distributed_is_available("any"));
  CHECK(!cmx_distributed_is_available("bogus"));
  float v[3] = {1, 2, 3};
  cmx_array x = vec(v, 3), y = NULL;
  OK(cmx_distributed_all_sum(&y, x, g, S));
  CHECK(y == x); /* a no-op: x itself */
  cmx_array_release(y);
  OK(cmx_distributed_all_gather(&y, x, NULL, S));
  CHECK(y == x);
  cmx_array_release(y);
  CHECK(cmx_distributed_send(&y, x, 0, g, S) == CMX_ERR_VALUE);
  CHECK(strstr(cmx_last_error(), "[send]") != NULL);
  int64_t shape[1] = {3};
  CHECK(cmx_distributed_recv(&y, shape, 1, CMX_FLOAT32, 0, g, S) ==
        CMX_ERR_VALUE);
  cmx_group* sub = NULL;
  CHECK(cmx_group_split(&sub, g, 0, 0) == CMX_ERR_VALUE);
  CHECK(cmx_distributed_init(&sub, false, "nope") == CMX_ERR_VALUE);
  CHECK(cmx_distributed_init(&sub, true, "ring") == CMX_ERR_RUNTIME);
  CHECK(strstr(cmx_last_error(), "MLX_HOSTFILE") != NULL);
  cmx_array_release(x);
  cmx_group_release(g);
}

/* ---- one rank of 2 ---- */
static int rank_main(void) {
  alarm(60);
  cmx_group* g = NULL;
  OK(cmx_distributed_init(&g, true, "ring"));
  int r = cmx_group_rank(g);
  CHECK(cmx_group_size(g) == 2 && !strcmp(cmx_group_backend(g), "ring"));
  float v[4] = {1.f + r, 2.f + r, 3.f + r, 4.f + r}; /* ranks 0, 1 */
  cmx_array x = vec(v, 4), y = NULL;
  OK(cmx_distributed_all_sum(&y, x, g, S));
  const float* p = data(y);
  for (int i = 0; i < 4; i++) CHECK(p[i] == 2.f * (i + 1) + 1.f);
  cmx_array_release(y);
  OK(cmx_distributed_all_max(&y, x, g, S));
  CHECK(data(y)[0] == 2.f && data(y)[3] == 5.f);
  cmx_array_release(y);
  OK(cmx_distributed_all_min(&y, x, NULL, S)); /* the default group */
  CHECK(data(y)[0] == 1.f && data(y)[3] == 4.f);
  cmx_array_release(y);
  OK(cmx_distributed_all_gather(&y, x, g, S));
  CHECK(cmx_array_shape(y)[0] == 8);
  p = data(y);
  CHECK(p[0] == 1.f && p[3] == 4.f && p[4] == 2.f && p[7] == 5.f);
  cmx_array_release(y);
  OK(cmx_distributed_sum_scatter(&y, x, g, S));
  CHECK(cmx_array_shape(y)[0] == 2);
  p = data(y);
  CHECK(p[0] == (r ? 7.f : 3.f) && p[1] == (r ? 9.f : 5.f));
  cmx_array_release(y);
  /* rank 0 sends, rank 1 receives, then back */
  cmx_array got = NULL;
  if (r == 0) {
    OK(cmx_distributed_send(&y, x, 1, g, S));
    OK(cmx_eval(&y, 1));
    OK(cmx_distributed_recv_like(&got, x, 1, g, S));
    CHECK(data(got)[0] == 2.f && data(got)[3] == 5.f);
  } else {
    int64_t shape[1] = {4};
    OK(cmx_distributed_recv(&got, shape, 1, CMX_FLOAT32, 0, g, S));
    CHECK(data(got)[0] == 1.f && data(got)[3] == 4.f);
    OK(cmx_distributed_send(&y, x, 0, g, S));
    OK(cmx_eval(&y, 1));
  }
  cmx_array_release(got), cmx_array_release(y);
  /* a split into two groups of one: collectives are no-ops there */
  cmx_group* sub = NULL;
  OK(cmx_group_split(&sub, g, r, 0));
  CHECK(cmx_group_size(sub) == 1 && cmx_group_rank(sub) == 0);
  OK(cmx_distributed_all_sum(&y, x, sub, S));
  CHECK(data(y)[0] == 1.f + r);
  cmx_array_release(y);
  cmx_group_release(sub);
  /* one group of both, ranks swapped by key */
  OK(cmx_group_split(&sub, g, 0, 1 - r));
  CHECK(cmx_group_size(sub) == 2 && cmx_group_rank(sub) == 1 - r);
  OK(cmx_distributed_all_gather(&y, x, sub, S));
  CHECK(data(y)[0] == 2.f); /* rank 1 of the world is rank 0 here */
  cmx_array_release(y);
  cmx_group_release(sub);
  cmx_array_release(x);
  cmx_group_release(g);
  return test_summary(r ? "test_distributed rank 1"
                        : "test_distributed rank 0");
}

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, (struct sockaddr*)&a, sizeof a);
  getsockname(fd, (struct sockaddr*)&a, &len);
  close(fd);
  return ntohs(a.sin_port);
}

static void test_two_ranks(const char* self) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/cmx_test_dist_%d.json", (int)getpid());
  FILE* f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  int p0 = free_port(), p1 = free_port();
  if (p1 == p0) p1 = p0 + 1;
  fprintf(f, "[[\"127.0.0.1:%d\"], [\"127.0.0.1:%d\"]]\n", p0, p1);
  fclose(f);
  pid_t kids[2];
  for (int r = 0; r < 2; r++) {
    kids[r] = fork();
    if (kids[r] == 0) {
      char rank[8];
      snprintf(rank, sizeof rank, "%d", r);
      setenv("MLX_HOSTFILE", path, 1);
      setenv("MLX_RANK", rank, 1);
      setenv("CMX_DISTRIBUTED_TIMEOUT", "30", 1);
      execl(self, self, "rank", (char*)NULL);
      _exit(127);
    }
  }
  for (int r = 0; r < 2; r++) {
    int status = 0;
    waitpid(kids[r], &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "rank %d failed (status %d)", r, status);
  }
  unlink(path);
}

int main(int argc, char** argv) {
  if (argc > 1 && !strcmp(argv[1], "rank")) return rank_main();
  unsetenv("MLX_HOSTFILE");
  unsetenv("MLX_RANK");
  RUN(test_group_of_one);
  test_two_ranks("/proc/self/exe");
  return test_summary("test_distributed");
}
