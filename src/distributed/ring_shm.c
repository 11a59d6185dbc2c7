/* The ring backend's shared-memory path: all_sum/max/min between ranks
 * that share this host's /dev/shm, as MPI's and NCCL's shared-memory
 * transports do. Over loopback TCP every byte is copied twice (into the
 * kernel and out of it) and a 2-rank all_reduce moves its buffer both
 * ways, so on a machine of few cores the socket ring is bound near half
 * of one-way loopback bandwidth; through shared memory each rank copies
 * (n - 1) / n of its input in, reduces its part straight from the
 * others' copies, and copies the others' results out.
 *
 * Set-up (cmx__ring_shm_setup, once per world): every rank creates a file
 * in /dev/shm holding a random token and sends its name to every peer;
 * each pair keeps the other's file open when both could open it and read
 * the token (so processes in other containers or hosts never match), then
 * each rank unlinks its file (nothing is left behind, even on a crash).
 * CMX_RING_SHM=0 turns the path off (every rank should set it alike; a
 * rank that does not still only pairs with ranks that agree).
 *
 * One all_reduce on a group whose members all share memory with each
 * other: each rank grows its file to the buffer (posix_fallocate, so a full
 * /dev/shm is an error, not a SIGBUS), copies the parts of its input that
 * the others reduce into it, then three barriers of one byte per peer over
 * the sockets separate the copy in, the reduction of its own part (written
 * to its output and its file) and the copy of the others' parts out; the
 * first barrier carries each rank's "my file is ready" flag, so a rank
 * that cannot grow its file makes every member fall back to the sockets.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "distributed/ring.h"

struct ring_shm {
  int size;    /* world size */
  int* fd;     /* fd[w]: world rank w's file (this rank's too), or -1 */
  char** map;  /* its mapping, or NULL */
  size_t* len; /* bytes mapped */
  size_t cap;  /* bytes allocated in this rank's file */
  bool any;    /* some peer shares memory */
};

enum { MSG = 128, NAME = MSG - 8 };

void cmx__ring_shm_free(ring_shm* s) {
  if (!s) return;
  for (int i = 0; i < s->size; i++) {
    if (s->map && s->map[i]) munmap(s->map[i], s->len[i]);
    if (s->fd && s->fd[i] >= 0) close(s->fd[i]);
  }
  free(s->fd);
  free(s->map);
  free(s->len);
  free(s);
}

static uint64_t token_new(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  uint64_t x = (uint64_t)t.tv_nsec * 0x9E3779B97F4A7C15ull ^
               (uint64_t)t.tv_sec << 20 ^ (uint64_t)getpid() << 40;
  x ^= x >> 31;
  return x ? x : 1;
}

/* Sends `bytes` of out[peer] to every peer and receives `bytes` of each
 * into in[peer] (the sends of a small message never block, so sending all
 * first cannot deadlock). out/in: arrays of size * bytes. */
static cmx_status exchange_all(ring_net* n, const char* op, const char* out,
                               char* in, size_t bytes) {
  for (int p = 0; p < n->size; p++)
    if (p != n->rank && cmx__ring_xfer(n, op, p, out + (size_t)p * bytes, bytes,
                                       p, NULL, 0, NULL) != CMX_OK)
      return cmx_last_status();
  for (int p = 0; p < n->size; p++)
    if (p != n->rank &&
        cmx__ring_xfer(n, op, p, NULL, 0, p, in + (size_t)p * bytes, bytes,
                       NULL) != CMX_OK)
      return cmx_last_status();
  return CMX_OK;
}

cmx_status cmx__ring_shm_setup(ring_net* n, const char* op) {
  int N = n->size, me = n->rank;
  const char* env = getenv("CMX_RING_SHM");
  bool on = !(env && !strcmp(env, "0"));
  ring_shm* s = calloc(1, sizeof *s);
  char* out = calloc((size_t)N, MSG);
  char* in = calloc((size_t)N, MSG);
  if (s) {
    s->size = N;
    s->fd = malloc(sizeof(int) * (size_t)N);
    s->map = calloc((size_t)N, sizeof(char*));
    s->len = calloc((size_t)N, sizeof(size_t));
  }
  if (!s || !out || !in || !s->fd || !s->map || !s->len) {
    cmx__ring_shm_free(s);
    free(out);
    free(in);
    return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  }
  for (int i = 0; i < N; i++) s->fd[i] = -1;
  char name[NAME];
  uint64_t tok = token_new();
  name[0] = 0;
  if (on) {
    snprintf(name, sizeof name, "/dev/shm/cmx-ring-%d-%d-%016llx",
             (int)getpid(), me, (unsigned long long)tok);
    int fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0 && pwrite(fd, &tok, sizeof tok, 0) == (ssize_t)sizeof tok)
      s->fd[me] = fd;
    else {
      if (fd >= 0) {
        close(fd);
        unlink(name);
      }
      name[0] = 0;
    }
  }
  for (int p = 0; p < N; p++) {
    memcpy(out + (size_t)p * MSG, name, NAME);
    memcpy(out + (size_t)p * MSG + NAME, &tok, 8);
  }
  cmx_status st = exchange_all(n, op, out, in, MSG);
  /* open each peer's file, check its token, tell the peer */
  for (int p = 0; st == CMX_OK && p < N; p++) {
    char* m = in + (size_t)p * MSG;
    uint64_t want, got = 0;
    out[(size_t)p * MSG] = 0;
    if (p == me || !m[0] || !on) continue;
    m[NAME - 1] = 0;
    memcpy(&want, m + NAME, 8);
    int fd = open(m, O_RDWR | O_CLOEXEC);
    if (fd >= 0 && pread(fd, &got, 8, 0) == 8 && got == want) {
      s->fd[p] = fd;
      out[(size_t)p * MSG] = 1;
    } else if (fd >= 0)
      close(fd);
  }
  if (st == CMX_OK) st = exchange_all(n, op, out, in, MSG);
  if (name[0]) unlink(name);
  for (int p = 0; st == CMX_OK && p < N; p++) {
    if (p == me) continue;
    bool both = out[(size_t)p * MSG] && in[(size_t)p * MSG];
    if (!both && s->fd[p] >= 0) {
      close(s->fd[p]);
      s->fd[p] = -1;
    }
    s->any |= both;
  }
  free(out);
  free(in);
  if (st != CMX_OK || !s->any) {
    cmx__ring_shm_free(s);
    return st;
  }
  n->shm = s;
  return CMX_OK;
}

bool cmx__ring_shm_usable(const ring_st* g) {
  ring_shm* s = g->net->shm;
  if (!s || g->size < 2) return false;
  for (int i = 0; i < g->size; i++)
    if (s->fd[g->world[i]] < 0) return false;
  return true;
}

/* One byte from this rank to every other member, then one from each;
 * *all_ok: every byte received was 1 (may be NULL). */
static cmx_status barrier(ring_st* g, const char* op, char mine, bool* all_ok) {
  ring_net* n = g->net;
  char got = 0;
  if (all_ok) *all_ok = true;
  for (int i = 0; i < g->size; i++)
    if (i != g->rank && cmx__ring_xfer(n, op, g->world[i], &mine, 1,
                                       g->world[i], NULL, 0, NULL) != CMX_OK)
      return cmx_last_status();
  for (int i = 0; i < g->size; i++) {
    if (i == g->rank) continue;
    if (cmx__ring_xfer(n, op, g->world[i], NULL, 0, g->world[i], &got, 1,
                       NULL) != CMX_OK)
      return cmx_last_status();
    if (all_ok && got != 1) *all_ok = false;
  }
  return CMX_OK;
}

/* Maps at least `bytes` of world rank w's file (its owner has grown it). */
static bool map_at_least(ring_shm* s, int w, size_t bytes) {
  if (s->len[w] >= bytes && s->map[w]) return true;
  if (s->map[w]) munmap(s->map[w], s->len[w]);
  s->map[w] = NULL;
  s->len[w] = 0;
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd[w], 0);
  if (p == MAP_FAILED) return false;
  s->map[w] = p;
  s->len[w] = bytes;
  return true;
}

/* Grows this rank's file to bytes (reserved, so writes cannot fault). */
static bool grow_own(ring_shm* s, int me, size_t bytes) {
  if (s->cap < bytes) {
    size_t want = bytes < 4096 ? 4096 : bytes;
    if (posix_fallocate(s->fd[me], 0, (off_t)want) != 0) return false;
    s->cap = want;
  }
  return map_at_least(s, me, bytes);
}

static void part(size_t count, int size, int i, size_t* lo, size_t* hi) {
  *lo = count * (size_t)i / (size_t)size;
  *hi = count * (size_t)(i + 1) / (size_t)size;
}

cmx_status cmx__ring_shm_all_reduce(ring_st* g, const char* op, const void* in_,
                                    void* out_, size_t count, cmx_dtype dt,
                                    cmx__red_op red, bool* fallback) {
  ring_net* n = g->net;
  ring_shm* s = n->shm;
  int N = g->size, r = g->rank, me = n->rank;
  size_t es = cmx_dtype_size(dt), bytes = count * es, lo, hi;
  const char* in = in_;
  char* out = out_;
  *fallback = false;
  if (bytes == 0) return CMX_OK;
  bool ready = grow_own(s, me, bytes), all_ready;
  if (ready) /* the parts the others reduce */
    for (int i = 0; i < N; i++) {
      part(count, N, i, &lo, &hi);
      if (i != r) memcpy(s->map[me] + lo * es, in + lo * es, (hi - lo) * es);
    }
  if (barrier(g, op, ready, &all_ready) != CMX_OK) return cmx_last_status();
  if (!ready || !all_ready) { /* every member sees it: the sockets then */
    *fallback = true;
    return CMX_OK;
  }
  for (int i = 0; i < N; i++)
    if (i != r && !map_at_least(s, g->world[i], bytes))
      return cmx__ring_fail(n, op, "cannot map rank %d's shared memory (%s)",
                            g->world[i], strerror(errno));
  part(count, N, r, &lo, &hi);
  enum { STEP = 1 << 16 }; /* bytes per pass, kept in cache */
  size_t step = STEP / es ? STEP / es : 1;
  for (size_t a = lo; a < hi; a += step) {
    size_t k = hi - a < step ? hi - a : step;
    int first = 1;
    for (int i = 0; i < N; i++) {
      if (i == r) continue;
      const char* src = s->map[g->world[i]] + a * es;
      cmx__dist_reduce(out + a * es, first ? in + a * es : out + a * es, src, k,
                       dt, red);
      first = 0;
    }
    memcpy(s->map[me] + a * es, out + a * es, k * es);
  }
  if (barrier(g, op, 1, NULL) != CMX_OK) return cmx_last_status();
  for (int i = 0; i < N; i++) {
    if (i == r) continue;
    part(count, N, i, &lo, &hi);
    memcpy(out + lo * es, s->map[g->world[i]] + lo * es, (hi - lo) * es);
  }
  return barrier(g, op, 1, NULL);
}
