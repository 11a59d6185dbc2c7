/* The ring backend's shared-memory path: all_sum/max/min between ranks
 * of one host, as MPI's and NCCL's shared-memory transports do. Over
 * loopback TCP every byte is copied twice (into the kernel and out) and a
 * 2-rank all_reduce moves its buffer both ways, so on a machine of few
 * cores the socket ring stays near half of one-way loopback bandwidth.
 *
 * Single copy (the default where the kernel allows it): the members swap
 * the addresses of their input and output; each reduces its 1/n of the
 * buffer reading the others' inputs with process_vm_readv (a chunk at a
 * time, into a buffer that stays in cache) and writes the result straight
 * into every output with process_vm_writev; one more barrier and done.
 * Each rank moves about what one side of a one-way TCP transfer moves.
 *
 * Files (where process_vm_* is refused, or CMX_RING_SHM=files): each rank
 * grows a file of /dev/shm to the buffer (posix_fallocate: a full /dev/shm
 * is an error, not a SIGBUS), copies in the parts of its input the others
 * reduce, reduces its own part from the others' files into its output and
 * its file, and copies the others' parts out; three barriers. The first
 * carries each rank's "my file is ready" flag, so a rank that cannot grow
 * its file makes every member fall back to the sockets.
 *
 * Set-up (cmx__ring_shm_setup, once per world, over the sockets): each rank
 * creates a file in /dev/shm holding a random token and sends its name, its
 * pid and the address of the token; each checks which peers' files it can
 * open and whose token it can read with process_vm_readv (so processes on
 * other hosts or in other containers never match), and every rank gets
 * every rank's findings, so that all decide alike for any group (a way is
 * used when every pair of members has it both ways). Files are unlinked at
 * once (nothing is left behind, even on a crash). CMX_RING_SHM=0 keeps
 * every transfer on the sockets. Barriers are messages over the sockets,
 * so a dead peer fails this path as it fails the socket ring.
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
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "distributed/ring.h"

struct ring_shm {
  int size;       /* world size */
  int* fd;        /* fd[w]: world rank w's file (this rank's too), or -1 */
  char** map;     /* its mapping, or NULL */
  size_t* len;    /* bytes mapped */
  size_t cap;     /* bytes allocated in this rank's file */
  int64_t* pid;   /* pid[w]: world rank w's process id */
  uint8_t* ok;    /* ok[i * size + j]: how i and j share memory (SHM, CMA) */
  uint64_t probe; /* the value peers read through process_vm_readv */
};

enum { SHM = 1, CMA = 2 };
enum { MSG = 128, NAME = MSG - 24 }; /* name, token, pid, probe address */

void cmx__ring_shm_free(ring_shm* s) {
  if (!s) return;
  for (int i = 0; i < s->size; i++) {
    if (s->map && s->map[i]) munmap(s->map[i], s->len[i]);
    if (s->fd && s->fd[i] >= 0) close(s->fd[i]);
  }
  free(s->fd);
  free(s->map);
  free(s->len);
  free(s->pid);
  free(s->ok);
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

/* Copies `bytes` between this process's `local` and process pid's
 * `remote` (write: to the remote), looping over partial transfers;
 * 0, or an errno. */
static int cma(int64_t pid, void* local, uint64_t remote, size_t bytes,
               bool write) {
  while (bytes) {
    struct iovec l = {local, bytes}, r = {(void*)(uintptr_t)remote, bytes};
    ssize_t m = write ? process_vm_writev((pid_t)pid, &l, 1, &r, 1, 0)
                      : process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
    if (m < 0 && errno == EINTR) continue;
    if (m <= 0) return m < 0 ? errno : EIO;
    local = (char*)local + m;
    remote += (uint64_t)m;
    bytes -= (size_t)m;
  }
  return 0;
}

/* This rank's file in /dev/shm holding tok (its name in name; "" and -1
 * when it cannot be made). */
static int make_file(char* name, size_t cap, int rank, uint64_t tok) {
  snprintf(name, cap, "/dev/shm/cmx-ring-%d-%d-%016llx", (int)getpid(), rank,
           (unsigned long long)tok);
  int fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0 && pwrite(fd, &tok, sizeof tok, 0) == (ssize_t)sizeof tok)
    return fd;
  if (fd >= 0) {
    close(fd);
    unlink(name);
  }
  name[0] = 0;
  return -1;
}

/* How this rank reaches peer p from its message m: SHM when its file opens
 * (kept in s->fd[p]) with the token, CMA when its probe reads back. */
static uint8_t probe_peer(ring_shm* s, int p, char* m) {
  uint64_t tok, addr, got = 0;
  int64_t pid;
  uint8_t how = 0;
  m[NAME - 1] = 0;
  memcpy(&tok, m + NAME, 8);
  memcpy(&pid, m + NAME + 8, 8);
  memcpy(&addr, m + NAME + 16, 8);
  s->pid[p] = pid;
  if (m[0]) {
    int fd = open(m, O_RDWR | O_CLOEXEC);
    if (fd >= 0 && pread(fd, &got, 8, 0) == 8 && got == tok) {
      s->fd[p] = fd;
      how |= SHM;
    } else if (fd >= 0)
      close(fd);
  }
  got = 0;
  if (pid > 0 && addr && cma(pid, &got, addr, 8, false) == 0 && got == tok)
    how |= CMA;
  return how;
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
    s->pid = calloc((size_t)N, sizeof(int64_t));
    s->ok = calloc((size_t)N * (size_t)N, 1);
  }
  if (!s || !out || !in || !s->fd || !s->map || !s->len || !s->pid || !s->ok) {
    cmx__ring_shm_free(s);
    free(out);
    free(in);
    return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  }
  for (int i = 0; i < N; i++) s->fd[i] = -1;
  char name[NAME];
  uint64_t tok = token_new();
  int64_t pid = on ? (int64_t)getpid() : 0;
  bool files_only = env && !strcmp(env, "files"); /* no single copy */
  uint64_t addr = on && !files_only ? (uint64_t)(uintptr_t)&s->probe : 0;
  s->probe = tok;
  name[0] = 0;
  if (on) s->fd[me] = make_file(name, sizeof name, me, tok);
  for (int p = 0; p < N; p++) {
    char* m = out + (size_t)p * MSG;
    memcpy(m, name, NAME);
    memcpy(m + NAME, &tok, 8);
    memcpy(m + NAME + 8, &pid, 8);
    memcpy(m + NAME + 16, &addr, 8);
  }
  /* 1: every rank's file and probe; 2: every rank's row of the matrix of
   * who reaches whom, so that every rank decides alike for any group */
  cmx_status st = exchange_all(n, op, out, in, MSG);
  uint8_t* row = s->ok + (size_t)me * (size_t)N;
  for (int p = 0; st == CMX_OK && on && p < N; p++)
    if (p != me) row[p] = probe_peer(s, p, in + (size_t)p * MSG);
  /* rows longer than a message go one message per MSG bytes */
  for (size_t off = 0; st == CMX_OK && off < (size_t)N; off += MSG) {
    size_t k = (size_t)N - off < MSG ? (size_t)N - off : MSG;
    for (int p = 0; p < N; p++) memcpy(out + (size_t)p * MSG, row + off, k);
    st = exchange_all(n, op, out, in, MSG);
    for (int p = 0; st == CMX_OK && p < N; p++)
      if (p != me)
        memcpy(s->ok + (size_t)p * (size_t)N + off, in + (size_t)p * MSG, k);
  }
  if (name[0]) unlink(name);
  bool any = false;
  for (int p = 0; st == CMX_OK && p < N; p++)
    if (p != me) {
      uint8_t both = row[p] & s->ok[(size_t)p * (size_t)N + (size_t)me];
      if (!(both & SHM) && s->fd[p] >= 0) {
        close(s->fd[p]);
        s->fd[p] = -1;
      }
      any |= both != 0;
    }
  free(out);
  free(in);
  if (st != CMX_OK || !any) {
    cmx__ring_shm_free(s);
    return st;
  }
  n->shm = s;
  return CMX_OK;
}

/* The ways (SHM, CMA) every pair of g's members share memory. */
static uint8_t group_ways(const ring_st* g) {
  ring_shm* s = g->net->shm;
  uint8_t w = SHM | CMA;
  size_t N = (size_t)s->size;
  for (int i = 0; i < g->size; i++)
    for (int j = 0; j < g->size; j++)
      if (i != j) {
        size_t a = (size_t)g->world[i], b = (size_t)g->world[j];
        w &= s->ok[a * N + b] & s->ok[b * N + a];
      }
  return w;
}

const char* cmx__ring_shm_kind(const ring_st* g) {
  if (!cmx__ring_shm_usable(g)) return NULL;
  return group_ways(g) & CMA ? "shared memory, single copy"
                             : "shared memory, /dev/shm files";
}

bool cmx__ring_shm_usable(const ring_st* g) {
  return g->net->shm && g->size > 1 && group_ways(g) != 0;
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

/* Through the files: copy in, reduce this rank's part, copy out. */
static cmx_status files_all_reduce(ring_st* g, const char* op, const void* in_,
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

/* Single copy through process_vm_readv/writev: the members swap the
 * addresses of their input and output, then each reduces its part of the
 * buffer from the others' inputs (read a chunk at a time into a buffer
 * that stays in cache) and writes the result into every output. With in ==
 * out a part is only read and written by the rank that reduces it, chunk
 * by chunk, so nothing is overwritten before it is read. The last barrier
 * keeps every buffer alive until every member is done with it. */
static cmx_status cma_all_reduce(ring_st* g, const char* op, const void* in_,
                                 void* out_, size_t count, cmx_dtype dt,
                                 cmx__red_op red) {
  ring_net* n = g->net;
  ring_shm* s = n->shm;
  int N = g->size, r = g->rank, err = 0;
  size_t es = cmx_dtype_size(dt), lo, hi;
  const char* in = in_;
  char* out = out_;
  uint64_t mine[2] = {(uint64_t)(uintptr_t)in, (uint64_t)(uintptr_t)out};
  uint64_t* addr = malloc(sizeof(uint64_t) * 2 * (size_t)N);
  enum { STEP = 1 << 17 }; /* bytes per pass, kept in cache */
  size_t step = STEP / es ? STEP / es : 1;
  char* tmp = n->scratch_cap >= step * es ? n->scratch : NULL;
  if (!tmp && (tmp = realloc(n->scratch, step * es))) {
    n->scratch = tmp;
    n->scratch_cap = step * es;
  }
  if (!addr || !tmp) {
    free(addr);
    return cmx__ring_fail(n, op, "out of memory");
  }
  cmx_status st = CMX_OK;
  for (int i = 0; st == CMX_OK && i < N; i++) /* the first barrier */
    if (i != r)
      st = cmx__ring_xfer(n, op, g->world[i], (const char*)mine, sizeof mine,
                          g->world[i], NULL, 0, NULL);
  for (int i = 0; st == CMX_OK && i < N; i++)
    if (i != r)
      st = cmx__ring_xfer(n, op, g->world[i], NULL, 0, g->world[i],
                          (char*)(addr + 2 * i), sizeof mine, NULL);
  part(count, N, r, &lo, &hi);
  int peer = -1;
  for (size_t a = lo; st == CMX_OK && !err && a < hi; a += step) {
    size_t k = hi - a < step ? hi - a : step;
    int first = 1;
    for (int i = 0; !err && i < N; i++) {
      if (i == r) continue;
      peer = g->world[i];
      err = cma(s->pid[peer], tmp, addr[2 * i] + a * es, k * es, false);
      if (!err)
        cmx__dist_reduce(out + a * es, first ? in + a * es : out + a * es, tmp,
                         k, dt, red);
      first = 0;
    }
    for (int i = 0; !err && i < N; i++)
      if (i != r) {
        peer = g->world[i];
        err = cma(s->pid[peer], out + a * es, addr[2 * i + 1] + a * es, k * es,
                  true);
      }
  }
  free(addr);
  if (st != CMX_OK) return st;
  if (err == ESRCH)
    return cmx__ring_fail(n, op,
                          "rank %d closed the connection (its process is "
                          "gone: it died or failed)",
                          peer);
  if (err)
    return cmx__ring_fail(n, op, "reading or writing rank %d's memory: %s",
                          peer, strerror(err));
  return barrier(g, op, 1, NULL);
}

cmx_status cmx__ring_shm_all_reduce(ring_st* g, const char* op, const void* in,
                                    void* out, size_t count, cmx_dtype dt,
                                    cmx__red_op red, bool* fallback) {
  *fallback = false;
  if (count == 0) return CMX_OK;
  if (group_ways(g) & CMA)
    return cma_all_reduce(g, op, in, out, count, dt, red);
  return files_all_reduce(g, op, in, out, count, dt, red, fallback);
}
