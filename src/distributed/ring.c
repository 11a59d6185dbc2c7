/* The ring backend: collectives over TCP sockets between the processes of
 * MLX's hostfile (MLX_HOSTFILE: a JSON list with one entry per rank, each
 * a list of "host:port" addresses, of which cmx uses the first; MLX_RANK:
 * this process's index).
 *
 * Every pair of ranks shares one socket (a full mesh: rank r connects to
 * each lower rank and accepts each higher one), so send/recv reach any
 * peer and a split group reuses its parent's sockets. all_sum/max/min run
 * the ring algorithm (reduce-scatter then all-gather, each rank sending to
 * rank + 1 and receiving from rank - 1), moving 2 (n - 1) / n of the
 * buffer per rank; each step sends and receives at once over non-blocking
 * sockets and reduces the received bytes as they arrive.
 *
 * Ranks that share this host's memory run all_sum/max/min through it
 * instead (ring_shm.c; CMX_RING_SHM=0 keeps them on the sockets).
 *
 * Failures: poll waits at most the timeout for any progress; EOF, a reset
 * or a timeout closes every socket of the process's mesh, so the peers
 * fail at once instead of waiting.
 */
#define _GNU_SOURCE
#include "distributed/ring.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* ---------------- failures ---------------- */

/* Closes every socket (peers then see EOF) and records why. */
cmx_status cmx__ring_fail(ring_net* n, const char* op, const char* fmt, ...) {
  if (!n->dead) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->why, sizeof n->why, fmt, ap);
    va_end(ap);
    n->dead = true;
    for (int i = 0; i < n->size; i++)
      if (n->fd[i] >= 0) {
        shutdown(n->fd[i], SHUT_RDWR);
        close(n->fd[i]);
        n->fd[i] = -1;
      }
  }
  return cmx__error(CMX_ERR_RUNTIME, "[%s] ring backend (rank %d): %s", op,
                    n->rank, n->why);
}

/* ---------------- transfers ---------------- */

cmx_status cmx__ring_xfer(ring_net* n, const char* op, int to, const char* sb,
                          size_t sn, int from, char* rb, size_t rn,
                          const cmx__ring_sink* k) {
  enum { MAX_IO = 4 << 20 };
  size_t sent = 0, got = 0, reduced = 0;
  while (sent < sn || got < rn) {
    struct pollfd p[2];
    int np = 0, is = -1, ir = -1;
    if (n->dead) return cmx__ring_fail(n, op, "%s", n->why);
    if (sent < sn) {
      p[np] = (struct pollfd){n->fd[to], POLLOUT, 0};
      is = np++;
    }
    if (got < rn) {
      if (is >= 0 && from == to) {
        p[is].events |= POLLIN;
        ir = is;
      } else {
        p[np] = (struct pollfd){n->fd[from], POLLIN, 0};
        ir = np++;
      }
    }
    int r = poll(p, (nfds_t)np, n->timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return cmx__ring_fail(n, op, "poll failed: %s", strerror(errno));
    if (r == 0)
      return cmx__ring_fail(n, op,
                            "no progress for %d s talking to rank %d (timeout, "
                            "CMX_DISTRIBUTED_TIMEOUT)",
                            n->timeout_ms / 1000, got < rn ? from : to);
    if (ir >= 0 && (p[ir].revents & (POLLIN | POLLHUP | POLLERR))) {
      size_t want = rn - got < MAX_IO ? rn - got : MAX_IO;
      ssize_t m = recv(n->fd[from], rb + got, want, 0);
      if (m == 0)
        return cmx__ring_fail(n, op,
                              "rank %d closed the connection (the process died "
                              "or failed)",
                              from);
      if (m < 0 && errno != EAGAIN && errno != EINTR)
        return cmx__ring_fail(n, op, "receiving from rank %d: %s", from,
                              strerror(errno));
      if (m > 0) got += (size_t)m;
      if (k && k->red >= 0) { /* reduce the whole elements that arrived */
        size_t upto = got / k->esize * k->esize;
        if (upto > reduced) {
          cmx__dist_reduce(k->dst + reduced, k->base + reduced, rb + reduced,
                           (upto - reduced) / k->esize, k->dt,
                           (cmx__red_op)k->red);
          reduced = upto;
        }
      }
    }
    if (is >= 0 && sent < sn && (p[is].revents & (POLLOUT | POLLERR))) {
      size_t want = sn - sent < MAX_IO ? sn - sent : MAX_IO;
      ssize_t m = send(n->fd[to], sb + sent, want, MSG_NOSIGNAL);
      if (m < 0 && errno != EAGAIN && errno != EINTR)
        return cmx__ring_fail(n, op, "sending to rank %d: %s", to,
                              strerror(errno));
      if (m > 0) sent += (size_t)m;
    } else if (is >= 0 && (p[is].revents & POLLHUP) && ir != is)
      return cmx__ring_fail(n, op, "rank %d closed the connection", to);
  }
  return CMX_OK;
}

static char* scratch(ring_net* n, size_t bytes) {
  if (bytes > n->scratch_cap) {
    char* p = realloc(n->scratch, bytes);
    if (!p) return NULL;
    n->scratch = p;
    n->scratch_cap = bytes;
  }
  return n->scratch;
}

/* ---------------- collectives ---------------- */

/* Segment i of count elements split in `size` parts: [*lo, *hi). */
static void seg(size_t count, int size, int i, size_t* lo, size_t* hi) {
  *lo = count * (size_t)i / (size_t)size;
  *hi = count * (size_t)(i + 1) / (size_t)size;
}

#define MOD(a, m) ((((a) % (m)) + (m)) % (m))

/* The reduce-scatter half of the ring over `in` into `out` (count
 * elements; they may be the same buffer): afterwards segment `rank` of out
 * holds the reduction over the group. Each segment is received once and
 * reduced with in's copy of it, so out needs no copy of in first: step 0
 * sends from in, later steps the segment out received the step before. */
static cmx_status reduce_scatter_ring(ring_st* g, const char* op,
                                      const char* in, char* out, size_t count,
                                      cmx_dtype dt, int red) {
  ring_net* n = g->net;
  int N = g->size, r = g->rank;
  int right = g->world[(r + 1) % N], left = g->world[MOD(r - 1, N)];
  size_t es = cmx_dtype_size(dt), lo, hi, lo2, hi2;
  char* tmp = scratch(n, (count / (size_t)N + 1) * es);
  if (!tmp) return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  for (int s = 0; s < N - 1; s++) {
    seg(count, N, MOD(r - s - 1, N), &lo, &hi);
    seg(count, N, MOD(r - s - 2, N), &lo2, &hi2);
    const char* from = s == 0 ? in : out;
    cmx__ring_sink k = {red, dt, es, out + lo2 * es, in + lo2 * es};
    if (cmx__ring_xfer(n, op, right, from + lo * es, (hi - lo) * es, left, tmp,
                       (hi2 - lo2) * es, &k) != CMX_OK)
      return cmx_last_status();
  }
  return CMX_OK;
}

/* The all-gather half: segment `rank` of buf is this rank's; afterwards
 * every segment is filled. Segments of count units of `unit` bytes. */
static cmx_status all_gather_ring(ring_st* g, const char* op, char* buf,
                                  size_t count, size_t unit) {
  ring_net* n = g->net;
  int N = g->size, r = g->rank;
  int right = g->world[(r + 1) % N], left = g->world[MOD(r - 1, N)];
  size_t lo, hi, lo2, hi2;
  for (int s = 0; s < N - 1; s++) {
    seg(count, N, MOD(r - s, N), &lo, &hi);
    seg(count, N, MOD(r - s - 1, N), &lo2, &hi2);
    if (cmx__ring_xfer(n, op, right, buf + lo * unit, (hi - lo) * unit, left,
                       buf + lo2 * unit, (hi2 - lo2) * unit, NULL) != CMX_OK)
      return cmx_last_status();
  }
  return CMX_OK;
}

static cmx_status ring_all_reduce(void* st, const char* op, const void* in,
                                  void* out, size_t count, cmx_dtype dt,
                                  cmx__red_op red) {
  ring_st* g = st;
  bool sockets = true;
  pthread_mutex_lock(&g->net->lock);
  cmx_status s = CMX_OK;
  if (cmx__ring_shm_usable(g))
    s = cmx__ring_shm_all_reduce(g, op, in, out, count, dt, red, &sockets);
  if (s == CMX_OK && sockets)
    s = reduce_scatter_ring(g, op, in, out, count, dt, (int)red);
  if (s == CMX_OK && sockets)
    s = all_gather_ring(g, op, out, count, cmx_dtype_size(dt));
  pthread_mutex_unlock(&g->net->lock);
  return s;
}

static cmx_status ring_all_gather(void* st, const char* op, const void* in,
                                  void* out, size_t bytes) {
  ring_st* g = st;
  memcpy((char*)out + (size_t)g->rank * bytes, in, bytes);
  pthread_mutex_lock(&g->net->lock);
  cmx_status s = all_gather_ring(g, op, out, (size_t)g->size * bytes, 1);
  pthread_mutex_unlock(&g->net->lock);
  return s;
}

static cmx_status ring_reduce_scatter(void* st, const char* op, const void* in,
                                      void* out, size_t count, cmx_dtype dt) {
  ring_st* g = st;
  size_t es = cmx_dtype_size(dt), total = count * (size_t)g->size;
  char* buf = malloc(total * es + 1);
  if (!buf) return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  pthread_mutex_lock(&g->net->lock);
  cmx_status s = reduce_scatter_ring(g, op, in, buf, total, dt, CMX__RED_SUM);
  pthread_mutex_unlock(&g->net->lock);
  if (s == CMX_OK) memcpy(out, buf + (size_t)g->rank * count * es, count * es);
  free(buf);
  return s;
}

static cmx_status ring_send(void* st, const char* op, const void* buf,
                            size_t bytes, int dst) {
  ring_st* g = st;
  pthread_mutex_lock(&g->net->lock);
  cmx_status s = cmx__ring_xfer(g->net, op, g->world[dst], buf, bytes,
                                g->world[dst], NULL, 0, NULL);
  pthread_mutex_unlock(&g->net->lock);
  return s;
}

static cmx_status ring_recv(void* st, const char* op, void* buf, size_t bytes,
                            int src) {
  ring_st* g = st;
  pthread_mutex_lock(&g->net->lock);
  cmx_status s = cmx__ring_xfer(g->net, op, g->world[src], NULL, 0,
                                g->world[src], buf, bytes, NULL);
  pthread_mutex_unlock(&g->net->lock);
  return s;
}

/* ---------------- groups ---------------- */

static void net_release(ring_net* n) {
  if (atomic_fetch_sub(&n->refs, 1) != 1) return;
  for (int i = 0; i < n->size; i++)
    if (n->fd[i] >= 0) close(n->fd[i]);
  free(n->fd);
  free(n->scratch);
  cmx__ring_shm_free(n->shm);
  pthread_mutex_destroy(&n->lock);
  free(n);
}

static void ring_destroy(void* st) {
  ring_st* g = st;
  net_release(g->net);
  free(g->world);
  free(g);
}

static ring_st* st_new(ring_net* n, int rank, int size) {
  ring_st* g = calloc(1, sizeof *g);
  int* w = malloc(sizeof(int) * (size_t)size);
  if (!g || !w) {
    free(g);
    free(w);
    return CMX__FAIL(CMX_ERR_MEMORY, "[distributed] out of memory");
  }
  g->net = n;
  g->rank = rank;
  g->size = size;
  g->world = w;
  atomic_fetch_add(&n->refs, 1);
  return g;
}

typedef struct member {
  int color, key, rank;
} member;

static int member_cmp(const void* a, const void* b) {
  const member *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->rank - y->rank;
}

/* Every rank's (color, key) by an all-gather, then the members of this
 * rank's color ordered by key. */
static cmx_status ring_split(void* st, int color, int key, void** out,
                             int* rank, int* size) {
  ring_st* g = st;
  int mine[2] = {color, key}, N = g->size;
  int* all = malloc(sizeof(int) * 2 * (size_t)N);
  member* m = malloc(sizeof(member) * (size_t)N);
  cmx_status s = all && m ? ring_all_gather(g, "split", mine, all, sizeof mine)
                          : cmx__error(CMX_ERR_MEMORY, "[split] out of memory");
  int k = 0;
  for (int i = 0; s == CMX_OK && i < N; i++)
    if (all[2 * i] == color)
      m[k++] = (member){color, all[2 * i + 1] < 0 ? i : all[2 * i + 1], i};
  ring_st* sub = s == CMX_OK ? st_new(g->net, 0, k) : NULL;
  if (sub) {
    qsort(m, (size_t)k, sizeof *m, member_cmp);
    for (int i = 0; i < k; i++) {
      sub->world[i] = g->world[m[i].rank];
      if (m[i].rank == g->rank) sub->rank = i;
    }
    *out = sub;
    *rank = sub->rank;
    *size = k;
  }
  free(all);
  free(m);
  return sub ? CMX_OK : cmx_last_status();
}

const cmx__dist_backend cmx__ring_backend = {
    .name = "ring",
    .all_reduce = ring_all_reduce,
    .all_gather = ring_all_gather,
    .reduce_scatter = ring_reduce_scatter,
    .send = ring_send,
    .recv = ring_recv,
    .split = ring_split,
    .destroy = ring_destroy,
};

/* ---------------- setup ---------------- */

/* The hostfile: per rank, the first "host:port" string of its entry (an
 * entry is a string or a list of strings). Returns the count (-1: bad). */
static int parse_hosts(const char* s, char (*hosts)[128], int max) {
  int depth = 0, n = 0, taken = 0;
  for (; *s; s++) {
    if (*s == '[') {
      depth++;
      taken = 0;
    } else if (*s == ']')
      depth--;
    else if (*s == '"') {
      const char* e = strchr(s + 1, '"');
      if (!e || depth < 1 || depth > 2) return -1;
      if ((depth == 1 || !taken) && n < max && e - s - 1 < 128) {
        memcpy(hosts[n], s + 1, (size_t)(e - s - 1));
        hosts[n++][e - s - 1] = 0;
        taken = 1;
      }
      s = e;
    }
  }
  return depth == 0 ? n : -1;
}

static int resolve(const char* hostport, struct sockaddr_storage* sa,
                   socklen_t* len) {
  char host[128];
  const char* c = strrchr(hostport, ':');
  if (!c || c == hostport || (size_t)(c - hostport) >= sizeof host) return -1;
  memcpy(host, hostport, (size_t)(c - hostport));
  host[c - hostport] = 0;
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, c + 1, &hints, &res) != 0 || !res) return -1;
  memcpy(sa, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return 0;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Full exchange of 4-byte ranks on a blocking socket, waiting at most
 * timeout_s for the peer. */
static int hello(int fd, int me, int* peer, int timeout_s) {
  struct timeval tv = {timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int32_t v = me, p = -1;
  if (send(fd, &v, sizeof v, MSG_NOSIGNAL) != (ssize_t)sizeof v) return -1;
  if (recv(fd, &p, sizeof p, MSG_WAITALL) != (ssize_t)sizeof p) return -1;
  *peer = p;
  return 0;
}

static int connect_retry(const struct sockaddr_storage* sa, socklen_t len,
                         double deadline) {
  while (now_s() < deadline) {
    int fd = socket(sa->ss_family, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (connect(fd, (const struct sockaddr*)sa, len) == 0) return fd;
    close(fd);
    usleep(20000);
  }
  return -1;
}

static void* init_fail(ring_net* n, int lfd, const char* fmt, const char* a) {
  if (lfd >= 0) close(lfd);
  if (n) {
    atomic_store(&n->refs, 1);
    net_release(n);
  }
  return CMX__FAIL(CMX_ERR_RUNTIME, fmt, a);
}

void* cmx__ring_init(int* rank, int* size) {
  cmx__dist_env e;
  cmx__dist_env_read(&e);
  if (!e.hostfile)
    return CMX__FAIL(CMX_ERR_RUNTIME,
                     "[init] ring backend: MLX_HOSTFILE is "
                     "not set");
  FILE* f = fopen(e.hostfile, "rb");
  if (!f)
    return init_fail(NULL, -1, "[init] ring backend: cannot read hostfile %s",
                     e.hostfile);
  static char text[1 << 16];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = 0;
  enum { MAXR = 1024 };
  char(*hosts)[128] = malloc(sizeof(*hosts) * MAXR);
  int N = hosts ? parse_hosts(text, hosts, MAXR) : -1;
  if (N < 1) {
    free(hosts);
    return init_fail(NULL, -1,
                     "[init] ring backend: %s is not a JSON list of "
                     "\"host:port\" lists, one per rank",
                     e.hostfile);
  }
  if (e.rank < 0 || e.rank >= N) {
    free(hosts);
    return CMX__FAIL(CMX_ERR_RUNTIME,
                     "[init] ring backend: MLX_RANK must be set to a rank in "
                     "[0, %d)",
                     N);
  }
  ring_net* n = calloc(1, sizeof *n);
  int* fds = malloc(sizeof(int) * (size_t)N);
  if (!n || !fds) {
    free(n);
    free(fds);
    free(hosts);
    return CMX__FAIL(CMX_ERR_MEMORY, "[init] out of memory");
  }
  for (int i = 0; i < N; i++) fds[i] = -1;
  n->fd = fds;
  n->rank = e.rank;
  n->size = N;
  n->timeout_ms = e.timeout_s * 1000;
  pthread_mutex_init(&n->lock, NULL);
  atomic_store(&n->refs, 1);
  double deadline = now_s() + e.timeout_s;
  int me = e.rank, lfd = -1;
  char what[200];
  struct sockaddr_storage sa;
  socklen_t salen;
  if (N > 1) {
    if (resolve(hosts[me], &sa, &salen) != 0) {
      snprintf(what, sizeof what, "%s", hosts[me]);
      free(hosts);
      return init_fail(n, -1, "[init] ring backend: cannot resolve %s", what);
    }
    lfd = socket(sa.ss_family, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (lfd < 0 || bind(lfd, (struct sockaddr*)&sa, salen) != 0 ||
        listen(lfd, N) != 0) {
      snprintf(what, sizeof what, "%s (%s)", hosts[me], strerror(errno));
      free(hosts);
      return init_fail(n, lfd, "[init] ring backend: cannot listen on %s",
                       what);
    }
  }
  for (int p = 0; p < me; p++) { /* connect to the lower ranks */
    int peer = -1, fd = -1;
    if (resolve(hosts[p], &sa, &salen) == 0)
      fd = connect_retry(&sa, salen, deadline);
    if (fd < 0 || hello(fd, me, &peer, e.timeout_s) != 0 || peer != p) {
      if (fd >= 0) close(fd);
      snprintf(what, sizeof what, "%d at %s", p, hosts[p]);
      free(hosts);
      return init_fail(n, lfd, "[init] ring backend: cannot connect to rank %s",
                       what);
    }
    fds[p] = fd;
  }
  for (int k = me + 1; k < N; k++) { /* accept the higher ones */
    struct pollfd pf = {lfd, POLLIN, 0};
    int left_ms = (int)((deadline - now_s()) * 1000);
    int fd = -1, peer = -1;
    if (left_ms > 0 && poll(&pf, 1, left_ms) == 1) fd = accept(lfd, NULL, NULL);
    if (fd < 0 || hello(fd, me, &peer, e.timeout_s) != 0 || peer <= me ||
        peer >= N || fds[peer] >= 0) {
      if (fd >= 0) close(fd);
      free(hosts);
      return init_fail(n, lfd,
                       "[init] ring backend: not every higher rank connected "
                       "in time%s",
                       "");
    }
    fds[peer] = fd;
  }
  if (lfd >= 0) close(lfd);
  free(hosts);
  for (int i = 0; i < N; i++)
    if (fds[i] >= 0) {
      tune(fds[i]);
      fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
    }
  if (N > 1 && cmx__ring_shm_setup(n, "init") != CMX_OK) {
    atomic_store(&n->refs, 1);
    net_release(n);
    return NULL;
  }
  ring_st* g = st_new(n, me, N);
  net_release(n); /* st_new took its own reference */
  if (!g) return NULL;
  for (int i = 0; i < N; i++) g->world[i] = i;
  if (e.verbose) {
    const char* how = cmx__ring_shm_kind(g);
    fprintf(stderr, "[ring] rank %d of %d connected (all_sum: %s)\n", me, N,
            how ? how : "sockets");
  }
  *rank = me;
  *size = N;
  return g;
}
