/* Batches of a GPU stream's launches, issued as CUDA graphs (gpu.h says
 * what a batch is for; stream.c decides when one is issued).
 *
 * On by default (CMX_CUDA_GRAPHS=0 turns it off, =1 on; DEFAULT_ON sets
 * the default). Turned on after an H100 run of scripts/gpu-graphs-check.sh
 * (2026-11-28): test_gpu_graphs, test_transforms_order, test_gpu_layer and
 * test_gpu clean with graphs on and off, the compile/memory/conv/fast
 * pytest files passing in both modes, 1000 dependent tiny adds 3.18 against
 * 7.17 us an op, the compiled MLP step 251 against 395 us. Earlier runs
 * had failed test_transforms_order (frees waited for the batch: fixed by
 * free tickets, below) and run the Python suite slower (cuBLASLt captures
 * instantiated at first sight: now calls cut the batch and a run must
 * repeat twice first). A batch holds kernel
 * launches (function, configuration, a copy of the argument bytes) and,
 * with CMX_CUDA_GRAPH_CAPTURE=1, library calls captured on a private
 * capture stream into graphs of their own (child graphs). Every command of
 * a batch runs after the one before it (a chain: the stream's order), so a
 * batch is one run of graph nodes. Issuing it:
 *   - shorter than the threshold (and no captured call): plain launches;
 *   - else its signature (per node: kind, function, grid, block, shared
 *     memory, argument count and bytes) is looked up among the batch's
 *     executable graphs: found, the kernel nodes whose argument bytes
 *     differ from the last launch's are updated
 *     (cuGraphExecKernelNodeSetParams), captured calls replaced
 *     (cuGraphExecChildGraphNodeSetParams), and the graph launched;
 *   - not found: a signature seen CMX_CUDA_GRAPH_MIN_SEEN times before
 *     (default 2; or one with a captured call, which has no plain form) is
 *     built, instantiated, kept (the least recently used of MAX_EXECS
 *     goes) and launched; otherwise it is launched plainly and counted, so
 *     evals that do not repeat (a test suite's) never pay an instantiation
 *     and one that repeats twice pays none it cannot win back.
 * Measured on an H100 (bench_gpu, evals of N dependent tiny adds): a
 * replayed graph beats N launches from N = 2 (11.4 against 16.7 us an
 * eval; 558 against 1272 us at N = 256), one node is about even (10.0
 * against 11.7 us), and building plus instantiating costs about what the
 * N plain launches cost (36 us at N = 2, 1285 us at N = 256): hence the
 * threshold of 2 and plain launches until a run has repeated.
 *
 * Library calls: by default a cuBLASLt product ends the batch and runs on
 * the stream as before (capturing it costs a stream capture and a child
 * graph update per call, more host time than the launches a graph saves:
 * the compiled MLP step ran 337 us with captures against 297 us without
 * graphs on an H100). With CMX_CUDA_GRAPH_CAPTURE=1 cuBLASLt calls are
 * captured (they only enqueue kernels on the stream they are given), so a
 * training step stays one graph. Other libraries' calls (cuSOLVER reading
 * results back, cuFFT, cuDNN, NCCL) always end the batch, since they may
 * synchronise or allocate, which a capture does not allow.
 *
 * Programmatic edges (CMX_CUDA_PDL=1, or 2 for those after a kernel that
 * fits the card in one wave; 0 turns them off; on by default, see
 * DEFAULT_PDL;
 * sm_90 and later): a kernel of a family whose kernels all begin with
 * CMX_GRID_WAIT() (CMX__GPU_GRID_WAITS: the built-in and compiled ones)
 * hangs from the kernel node before it by a programmatic edge instead of
 * a full one. The card then launches it while the one before still runs
 * (that one lets it: CMX_GRID_WAIT's launch_dependents), and its threads
 * wait in the kernel until the one before has finished and its writes are
 * visible: the same order, without the gap between one kernel's end and
 * the next one's start. Since every kernel of a chain
 * waits for the one before it before it ends, a kernel also comes after
 * everything earlier in the chain. Extension kernels, which may read
 * their inputs at once, and child graphs keep full edges.
 *
 * Any graph error (building, instantiating, updating, launching) drops
 * that executable graph and issues the batch plainly: a captured call then
 * runs as its child graph instantiated alone.
 *
 * Buffers: allocations stay outside graphs (a task allocates its outputs
 * before it encodes, stream-ordered on the stream the graph is launched
 * on); a free ordered on the stream while its batch holds commands takes
 * the batch's ticket: the memory is reusable at once by the stream's later
 * commands, and anyone else first issues the batch (stream.c, memory.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"

#define MAX_EXECS 32   /* executable graphs kept per batch */
#define NSEEN 128      /* signatures remembered with their sightings */
#define DEFAULT_MIN 2  /* nodes from which a known run becomes a graph */
#define DEFAULT_SEEN 2 /* plain sightings before a run becomes a graph */
/* Launches a batch holds before it is issued: small enough that the GPU
 * runs one batch while the host encodes the next. H100, gpu_graphs_bench's
 * 1000 dependent adds from Python: 2.46 us an op at 512, 1.84 at 256, 1.75
 * at 128, 1.66 at 64; the compiled MLP step the same (228-247 us). */
#define DEFAULT_LIMIT 64
#define DEFAULT_ON 1 /* batching without CMX_CUDA_GRAPHS */
/* Programmatic edges without CMX_CUDA_PDL: on (1). First measured (H200,
 * 2026-11-28, same
 * runs with CMX_CUDA_PDL 1 against 0: the compiled MLP step of
 * gpu_graphs_bench 294/322/286 against 271/227/211 us (slower in every
 * pair), its eager step 760/622 against 475/463 us, 1000 dependent eager
 * adds 1.47/1.41 against 2.38/2.26 us an add (but 2.34 against 2.16 in a
 * third pair), SmolLM2 decoding within the runs' noise (600-840 tokens/s
 * either way). Later (H200, 2026-11-28, with the mat-vec and decode
 * attention kernels prefetching into L2 before their wait, 4 interleaved
 * rounds of 200 tokens): decoding 817-990 tokens/s with them against
 * 757-824 without. With small host values put by a launch (memory.c)
 * they win everywhere (H200, 2026-11-28, gpu_graphs_bench in two rounds,
 * CMX_CUDA_PDL 1 / 2 / 0): the compiled MLP step 201.6 / 210.7 / 214.2 and
 * 195.0 / 207.9 / 215.3 us, its eager step 371.6 / 374.0 / 382.0 and
 * 352.7 / 375.4 / 415.5 us; SmolLM2 decoding (200 tokens, 3 rounds)
 * 1114 / 933 / 859, 926 / 878 / 907 and 1028 / 1033 / 948 tokens/s. */
#define DEFAULT_PDL 1

enum { N_KERNEL = 0, N_CHILD = 1 };

/* A node's signature: what must match for an executable graph to take
 * new arguments. */
typedef struct sig {
  int kind;
  CUfunction fn;
  unsigned grid[3], block[3], shared;
  uint16_t nargs, used;
  bool waits; /* its family's kernels start with CMX_GRID_WAIT() (fn's) */
} sig;

/* A batched command: its signature, its arguments' place in the arena
 * (offsets, sizes, then the bytes, 16-aligned), or its child graph. */
typedef struct bcmd {
  sig s;
  size_t at;
  CUgraph child;
} bcmd;

typedef struct gexec {
  uint64_t hash, last_use;
  int n, nprog; /* nodes; programmatic edges among them */
  sig* sigs;
  CUgraph g;
  CUgraphNode* nodes;
  CUgraphExec exec;
  unsigned char* args; /* the bytes each kernel node was last given */
  size_t* at;          /* node i's bytes at args + at[i] */
} gexec;

struct cmx__gpu_batch {
  int dev;
  CUstream s, cap; /* its stream; the capture stream (made at first use) */
  bcmd* cmds;
  int n, cap_cmds;
  unsigned char* arena;
  size_t used, cap_arena;
  gexec* execs[MAX_EXECS];
  int nexecs;
  uint64_t seen[NSEEN]; /* signature hashes seen, and how often */
  int seen_count[NSEEN];
  int seen_next;
  uint64_t clock;
};

static _Atomic uint64_t st_launches, st_nodes, st_inst, st_reused, st_updates,
    st_direct, st_captures, st_fallbacks, st_flushes, st_prog;
static _Atomic int g_force = -1, g_min = 0, g_fail_next = 0;
static _Atomic int g_env = -1; /* CMX_CUDA_GRAPHS: 0 off, 1 on, -1 unread */
static _Atomic int g_seen = 0, g_capture = -1; /* cmx__gpu_graphs_tune */
static _Atomic int g_pdl = -1;                 /* cmx__gpu_graphs_pdl */

cmx__gpu_graph_stats cmx__gpu_graph_stats_get(void) {
  return (cmx__gpu_graph_stats){
      atomic_load(&st_launches), atomic_load(&st_nodes),
      atomic_load(&st_inst),     atomic_load(&st_reused),
      atomic_load(&st_updates),  atomic_load(&st_direct),
      atomic_load(&st_captures), atomic_load(&st_fallbacks),
      atomic_load(&st_flushes),  atomic_load(&st_prog)};
}

void cmx__gpu_graphs_set(int on, int min_nodes) {
  atomic_store(&g_force, on);
  atomic_store(&g_min, min_nodes);
}

void cmx__gpu_graphs_fail_next(int n) {
  atomic_store(&g_fail_next, n);
}

void cmx__gpu_graphs_tune(int min_seen, int capture) {
  atomic_store(&g_seen, min_seen);
  atomic_store(&g_capture, capture);
}

void cmx__gpu_graphs_pdl(int on) {
  atomic_store(&g_pdl, on);
}

static bool driver_has_graphs(void) {
  const cmx__cuda_api* c = &cmx__cu;
  return c->cuGraphCreate && c->cuGraphDestroy && c->cuGraphAddKernelNode &&
         c->cuGraphAddChildGraphNode && c->cuGraphInstantiateWithFlags &&
         c->cuGraphLaunch && c->cuGraphExecDestroy &&
         c->cuGraphExecKernelNodeSetParams &&
         c->cuGraphExecChildGraphNodeSetParams && c->cuStreamBeginCapture &&
         c->cuStreamEndCapture;
}

bool cmx__gpu_graphs_enabled(void) {
  int f = atomic_load(&g_force);
  if (f >= 0) return f == 1 && driver_has_graphs();
  int e = atomic_load(&g_env);
  if (e < 0) {
    const char* v = getenv("CMX_CUDA_GRAPHS");
    e = v && strcmp(v, "1") == 0   ? 1
        : v && strcmp(v, "0") == 0 ? 0
                                   : DEFAULT_ON;
    atomic_store(&g_env, e);
  }
  return e == 1 && driver_has_graphs();
}

static int env_int(const char* name, int dflt, int lo, int hi) {
  const char* v = getenv(name);
  if (!v || !*v) return dflt;
  char* end;
  long x = strtol(v, &end, 10);
  return *end || x < lo || x > hi ? dflt : (int)x;
}

/* The variable's value (env_int), read once into *cache (0: unread; the
 * values are at least 1). */
static int env_once(_Atomic int* cache, const char* name, int dflt, int lo,
                    int hi) {
  int v = atomic_load(cache);
  if (!v) {
    v = env_int(name, dflt, lo, hi);
    atomic_store(cache, v);
  }
  return v;
}

static int min_nodes(void) {
  static _Atomic int env = 0;
  int m = atomic_load(&g_min);
  return m > 0 ? m
               : env_once(&env, "CMX_CUDA_GRAPH_MIN_NODES", DEFAULT_MIN, 1,
                          1 << 20);
}

/* Plain sightings a run needs before it is made a graph. */
static int min_seen(void) {
  static _Atomic int env = 0;
  int m = atomic_load(&g_seen);
  return m > 0 ? m
               : env_once(&env, "CMX_CUDA_GRAPH_MIN_SEEN", DEFAULT_SEEN, 1,
                          1 << 20);
}

/* Whether graphable library calls are captured into batches
 * (CMX_CUDA_GRAPH_CAPTURE=1, read once). */
static bool capture_on(void) {
  static _Atomic int env = 0; /* 1 + the variable's 0 or 1; 0: unread */
  int c = atomic_load(&g_capture);
  if (c >= 0) return c == 1;
  int e = atomic_load(&env);
  if (!e) {
    e = 1 + env_int("CMX_CUDA_GRAPH_CAPTURE", 0, 0, 1);
    atomic_store(&env, e);
  }
  return e == 2;
}

/* Programmatic edges on device dev, for graphs instantiated now:
 * PDL_OFF, PDL_ALL (a kernel that waits, CMX__GPU_GRID_WAITS, hangs from
 * the kernel before it by a programmatic edge) or PDL_ONE_WAVE (only when
 * the kernel before fits the card in one wave, see one_wave). From
 * CMX_CUDA_PDL (0, 1, 2; DEFAULT_PDL) or cmx__gpu_graphs_pdl; off without
 * a driver with edge data (cuGraphAddDependencies_v2) or below compute
 * capability 9.0 (griddepcontrol). *sms: the card's multiprocessors. */
enum { PDL_OFF = 0, PDL_ALL = 1, PDL_ONE_WAVE = 2 };
static int pdl_mode(int dev, int* sms) {
  static _Atomic int env = 0; /* 1 + the variable's value; 0: unread */
  int f = atomic_load(&g_pdl), e = atomic_load(&env);
  if (f < 0 && !e) {
    e = 1 + env_int("CMX_CUDA_PDL", DEFAULT_PDL, 0, 2);
    atomic_store(&env, e);
  }
  const int mode = f >= 0 ? f : e - 1;
  if (mode == PDL_OFF || !cmx__cu.cuGraphAddDependencies) return PDL_OFF;
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (!d) {
    cmx_clear_error();
    return PDL_OFF;
  }
  *sms = d->sm_count;
  return d->cc_major >= 9 ? mode : PDL_OFF;
}

/* Whether kernel node signature s fits a card of sms multiprocessors in
 * one wave by threads and blocks alone (2048 threads and 32 blocks a
 * multiprocessor on compute capability 9.x; registers and shared memory
 * may allow fewer, so this is an upper bound). A kernel launched
 * programmatically after a one-wave kernel cannot take a multiprocessor
 * slot that kernel's later blocks would need: there are none. After a
 * larger kernel its blocks would sit waiting in slots the larger kernel's
 * later waves want (the reason PDL_ALL slowed the compiled MLP step). */
static bool one_wave(const sig* s, int sms) {
  const unsigned long long blocks =
      (unsigned long long)s->grid[0] * s->grid[1] * s->grid[2];
  const unsigned long long threads =
      blocks * s->block[0] * s->block[1] * s->block[2];
  return blocks <= 32ull * (unsigned)sms && threads <= 2048ull * (unsigned)sms;
}

int cmx__gpu_batch_limit(void) {
  static _Atomic int lim = 0;
  return env_once(&lim, "CMX_CUDA_GRAPH_MAX_NODES", DEFAULT_LIMIT, 1, 1 << 16);
}

/* ---------------- batches ---------------- */

cmx__gpu_batch* cmx__gpu_batch_new(int dev, CUstream s) {
  if (!cmx__gpu_graphs_enabled()) return NULL;
  cmx__gpu_batch* b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->dev = dev;
  b->s = s;
  return b;
}

static void exec_free(gexec* e) {
  if (!e) return;
  if (e->exec) cmx__cu.cuGraphExecDestroy(e->exec);
  if (e->g) cmx__cu.cuGraphDestroy(e->g);
  free(e->sigs);
  free(e->nodes);
  free(e->args);
  free(e->at);
  free(e);
}

static void clear_cmds(cmx__gpu_batch* b) {
  for (int i = 0; i < b->n; i++)
    if (b->cmds[i].child) cmx__cu.cuGraphDestroy(b->cmds[i].child);
  b->n = 0;
  b->used = 0;
}

void cmx__gpu_batch_forget(cmx__gpu_batch* b) {
  if (!b) return;
  for (int i = 0; i < b->nexecs; i++) exec_free(b->execs[i]);
  b->nexecs = 0;
  b->seen_next = 0;
  memset(b->seen, 0, sizeof b->seen);
  memset(b->seen_count, 0, sizeof b->seen_count);
}

void cmx__gpu_batch_free(cmx__gpu_batch* b) {
  if (!b) return;
  clear_cmds(b);
  cmx__gpu_batch_forget(b);
  if (b->cap) cmx__cu.cuStreamDestroy(b->cap);
  free(b->cmds);
  free(b->arena);
  free(b);
}

int cmx__gpu_batch_size(const cmx__gpu_batch* b) {
  return b ? b->n : 0;
}

static bcmd* push(cmx__gpu_batch* b) {
  if (b->n == b->cap_cmds) {
    int cap = b->cap_cmds ? 2 * b->cap_cmds : 64;
    bcmd* c = realloc(b->cmds, (size_t)cap * sizeof *c);
    if (!c) return NULL;
    b->cmds = c;
    b->cap_cmds = cap;
  }
  bcmd* c = &b->cmds[b->n];
  memset(c, 0, sizeof *c);
  return c;
}

/* Reserves bytes (16-aligned) in the arena; its offset, or SIZE_MAX. */
static size_t reserve(cmx__gpu_batch* b, size_t bytes) {
  size_t at = (b->used + 15) & ~(size_t)15;
  if (at + bytes > b->cap_arena) {
    size_t cap = b->cap_arena ? b->cap_arena : 16384;
    while (cap < at + bytes) cap *= 2;
    unsigned char* a = realloc(b->arena, cap);
    if (!a) return SIZE_MAX;
    b->arena = a;
    b->cap_arena = cap;
  }
  b->used = at + bytes;
  return at;
}

/* The argument bytes of command c, and its offsets and sizes. */
static unsigned char* cmd_data(const cmx__gpu_batch* b, const bcmd* c) {
  return b->arena + c->at + 4 * (size_t)c->s.nargs;
}
static const uint16_t* cmd_offsets(const cmx__gpu_batch* b, const bcmd* c) {
  return (const uint16_t*)(b->arena + c->at);
}

/* A library call captured on b's capture stream into *out; false (and
 * nothing captured) when the library's work could not be captured. */
static bool capture(cmx__gpu_batch* b, const cmx__gpu_cmd* cmd, cmx_status* st,
                    CUgraph* out) {
  *out = NULL;
  *st = CMX_OK;
  if (!b->cap &&
      cmx__cu.cuStreamCreate(&b->cap, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    b->cap = NULL;
    return false;
  }
  if (cmx__cu.cuStreamBeginCapture(
          b->cap, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS)
    return false;
  *st = cmd->call(cmd->ctx, b->cap);
  CUgraph g = NULL;
  CUresult r = cmx__cu.cuStreamEndCapture(b->cap, &g);
  if (r != CUDA_SUCCESS || *st != CMX_OK || !g) {
    if (g) cmx__cu.cuGraphDestroy(g);
    return false;
  }
  *out = g;
  return true;
}

cmx_status cmx__gpu_batch_add(cmx__gpu_batch* b, const cmx__gpu_cmd* cmd,
                              bool* taken) {
  *taken = false;
  if (cmd->kind == CMX__GPU_CMD_CALL) {
    if (!cmd->graphable || !capture_on()) return CMX_OK;
    cmx_status st;
    CUgraph g;
    if (!capture(b, cmd, &st, &g)) {
      /* issued directly instead: that call reports its own error */
      atomic_fetch_add(&st_fallbacks, 1);
      if (st != CMX_OK) cmx_clear_error();
      return CMX_OK;
    }
    bcmd* c = push(b);
    if (!c) {
      cmx__cu.cuGraphDestroy(g);
      return CMX_OK;
    }
    c->s.kind = N_CHILD;
    c->child = g;
    b->n++;
    atomic_fetch_add(&st_captures, 1);
    *taken = true;
    return CMX_OK;
  }
  if (cmd->kind != CMX__GPU_CMD_LAUNCH) return CMX_OK;
  const cmx__gpu_args* a = cmd->args;
  if (a->overflow) return CMX_OK; /* issued directly: it reports that */
  cmx_status st = cmx__gpu_launch_check(b->dev, cmd);
  if (st != CMX_OK) return st;
  size_t head = 4 * (size_t)a->n;
  size_t at = reserve(b, head + a->used);
  bcmd* c = at == SIZE_MAX ? NULL : push(b);
  if (!c) return CMX_OK;
  c->s.kind = N_KERNEL;
  c->s.fn = cmd->kernel->fn;
  memcpy(c->s.grid, cmd->cfg.grid, sizeof c->s.grid);
  memcpy(c->s.block, cmd->cfg.block, sizeof c->s.block);
  c->s.shared = (unsigned)cmd->cfg.shared;
  c->s.nargs = (uint16_t)a->n;
  c->s.used = (uint16_t)a->used;
  c->s.waits =
      cmd->kernel->family && (cmd->kernel->family->flags & CMX__GPU_GRID_WAITS);
  c->at = at;
  uint16_t* offs = (uint16_t*)(b->arena + at);
  memcpy(offs, a->offset, 2 * (size_t)a->n);
  memcpy(offs + a->n, a->size, 2 * (size_t)a->n);
  memcpy(b->arena + at + head, a->data, a->used);
  b->n++;
  *taken = true;
  return CMX_OK;
}

/* ---------------- issuing ---------------- */

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t sig_hash(const cmx__gpu_batch* b) {
  uint64_t h = mix(0x51ed270b27a5f4c3ull, (uint64_t)b->n);
  for (int i = 0; i < b->n; i++) {
    const sig* s = &b->cmds[i].s;
    h = mix(h, (uint64_t)s->kind | (uint64_t)s->nargs << 8 |
                   (uint64_t)s->used << 24 | (uint64_t)s->shared << 40);
    h = mix(h, (uint64_t)(uintptr_t)s->fn);
    h = mix(h, (uint64_t)s->grid[0] << 32 | s->block[0]);
    h = mix(h, (uint64_t)s->grid[1] << 48 | (uint64_t)s->grid[2] << 32 |
                   (uint64_t)s->block[1] << 16 | s->block[2]);
  }
  return h;
}

static bool sig_eq(const sig* a, const sig* b) {
  return a->kind == b->kind && a->fn == b->fn && a->nargs == b->nargs &&
         a->used == b->used && a->shared == b->shared &&
         memcmp(a->grid, b->grid, sizeof a->grid) == 0 &&
         memcmp(a->block, b->block, sizeof a->block) == 0;
}

/* Kernel node parameters of command c (params: its argument pointers). */
static CUDA_KERNEL_NODE_PARAMS node_params(const cmx__gpu_batch* b,
                                           const bcmd* c, void** params) {
  const uint16_t* offs = cmd_offsets(b, c);
  unsigned char* data = cmd_data(b, c);
  for (int i = 0; i < c->s.nargs; i++) params[i] = data + offs[i];
  return (CUDA_KERNEL_NODE_PARAMS){.func = c->s.fn,
                                   .gridDimX = c->s.grid[0],
                                   .gridDimY = c->s.grid[1],
                                   .gridDimZ = c->s.grid[2],
                                   .blockDimX = c->s.block[0],
                                   .blockDimY = c->s.block[1],
                                   .blockDimZ = c->s.block[2],
                                   .sharedMemBytes = c->s.shared,
                                   .kernelParams = params};
}

/* Runs a child graph alone (a captured call issued plainly). */
static CUresult launch_alone(CUgraph g, CUstream s) {
  CUgraphExec e = NULL;
  CUresult r = cmx__cu.cuGraphInstantiateWithFlags(&e, g, 0);
  if (r == CUDA_SUCCESS) r = cmx__cu.cuGraphLaunch(e, s);
  if (e) cmx__cu.cuGraphExecDestroy(e); /* freed once it has run */
  return r;
}

static CUresult issue_plain(cmx__gpu_batch* b) {
  void* params[CMX__GPU_MAX_ARGS];
  for (int i = 0; i < b->n; i++) {
    const bcmd* c = &b->cmds[i];
    CUresult r;
    if (c->s.kind == N_CHILD) {
      r = launch_alone(c->child, b->s);
    } else {
      CUDA_KERNEL_NODE_PARAMS p = node_params(b, c, params);
      r = cmx__cu.cuLaunchKernel(p.func, p.gridDimX, p.gridDimY, p.gridDimZ,
                                 p.blockDimX, p.blockDimY, p.blockDimZ,
                                 p.sharedMemBytes, b->s, params, NULL);
    }
    if (r != CUDA_SUCCESS) return r;
    atomic_fetch_add(&st_direct, 1);
  }
  return CUDA_SUCCESS;
}

/* Builds and instantiates the graph of b's commands; NULL on any error. */
static gexec* instantiate(cmx__gpu_batch* b, uint64_t hash) {
  gexec* e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->hash = hash;
  e->n = b->n;
  e->sigs = malloc((size_t)b->n * sizeof *e->sigs);
  e->nodes = malloc((size_t)b->n * sizeof *e->nodes);
  e->at = malloc((size_t)b->n * sizeof *e->at);
  size_t bytes = 0;
  for (int i = 0; i < b->n; i++) bytes += b->cmds[i].s.used;
  e->args = malloc(bytes + 1);
  bool ok = e->sigs && e->nodes && e->at && e->args &&
            cmx__cu.cuGraphCreate(&e->g, 0) == CUDA_SUCCESS;
  void* params[CMX__GPU_MAX_ARGS];
  size_t off = 0;
  int sms = 0;
  const int pdl = ok ? pdl_mode(b->dev, &sms) : PDL_OFF;
  for (int i = 0; ok && i < b->n; i++) {
    const bcmd* c = &b->cmds[i];
    const CUgraphNode* dep = i ? &e->nodes[i - 1] : NULL;
    e->sigs[i] = c->s;
    e->at[i] = off;
    CUresult r;
    if (c->s.kind == N_CHILD) {
      r = cmx__cu.cuGraphAddChildGraphNode(&e->nodes[i], e->g, dep, i ? 1 : 0,
                                           c->child);
    } else {
      /* A kernel that waits in its code may start while the kernel before
       * it still runs (a programmatic edge); any other gets a full one. */
      bool prog = pdl != PDL_OFF && i && c->s.waits &&
                  b->cmds[i - 1].s.kind == N_KERNEL &&
                  (pdl == PDL_ALL || one_wave(&b->cmds[i - 1].s, sms));
      CUDA_KERNEL_NODE_PARAMS p = node_params(b, c, params);
      r = cmx__cu.cuGraphAddKernelNode(&e->nodes[i], e->g, prog ? NULL : dep,
                                       i && !prog ? 1 : 0, &p);
      if (r == CUDA_SUCCESS && prog) {
        CUgraphEdgeData ed = {
            .from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC,
            .type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC};
        r = cmx__cu.cuGraphAddDependencies(e->g, dep, &e->nodes[i], &ed, 1);
        if (r == CUDA_SUCCESS) e->nprog++;
      }
      memcpy(e->args + off, cmd_data(b, c), c->s.used);
      off += c->s.used;
    }
    ok = r == CUDA_SUCCESS;
  }
  if (ok && atomic_load(&g_fail_next) > 0 &&
      atomic_fetch_sub(&g_fail_next, 1) > 0)
    ok = false; /* a test's injected failure */
  if (ok)
    ok = cmx__cu.cuGraphInstantiateWithFlags(&e->exec, e->g, 0) == CUDA_SUCCESS;
  if (!ok) {
    exec_free(e);
    return NULL;
  }
  atomic_fetch_add(&st_inst, 1);
  atomic_fetch_add(&st_prog, (uint64_t)e->nprog);
  return e;
}

/* Gives executable graph e b's arguments; false on an update error. */
static bool update(cmx__gpu_batch* b, gexec* e) {
  void* params[CMX__GPU_MAX_ARGS];
  for (int i = 0; i < b->n; i++) {
    const bcmd* c = &b->cmds[i];
    CUresult r = CUDA_SUCCESS;
    if (c->s.kind == N_CHILD) {
      r = cmx__cu.cuGraphExecChildGraphNodeSetParams(e->exec, e->nodes[i],
                                                     c->child);
    } else {
      unsigned char* data = cmd_data(b, c);
      if (memcmp(e->args + e->at[i], data, c->s.used) == 0) continue;
      CUDA_KERNEL_NODE_PARAMS p = node_params(b, c, params);
      r = cmx__cu.cuGraphExecKernelNodeSetParams(e->exec, e->nodes[i], &p);
      if (r == CUDA_SUCCESS) {
        memcpy(e->args + e->at[i], data, c->s.used);
        atomic_fetch_add(&st_updates, 1);
      }
    }
    if (r != CUDA_SUCCESS) return false;
  }
  return true;
}

static gexec* find(cmx__gpu_batch* b, uint64_t hash, int* slot) {
  for (int i = 0; i < b->nexecs; i++) {
    gexec* e = b->execs[i];
    if (e->hash != hash || e->n != b->n) continue;
    bool eq = true;
    for (int k = 0; k < b->n && eq; k++)
      eq = sig_eq(&e->sigs[k], &b->cmds[k].s);
    if (eq) {
      *slot = i;
      return e;
    }
  }
  return NULL;
}

static void drop(cmx__gpu_batch* b, int slot) {
  exec_free(b->execs[slot]);
  b->execs[slot] = b->execs[--b->nexecs];
}

static void keep(cmx__gpu_batch* b, gexec* e) {
  if (b->nexecs == MAX_EXECS) {
    int old = 0;
    for (int i = 1; i < b->nexecs; i++)
      if (b->execs[i]->last_use < b->execs[old]->last_use) old = i;
    drop(b, old);
  }
  b->execs[b->nexecs++] = e;
}

/* True once hash was seen min_seen() times before (it becomes a graph);
 * else counts this sighting (plain). */
static bool seen_enough(cmx__gpu_batch* b, uint64_t hash) {
  for (int i = 0; i < NSEEN; i++) {
    if (b->seen[i] != hash || !b->seen_count[i]) continue;
    if (b->seen_count[i] >= min_seen()) return true;
    b->seen_count[i]++;
    return false;
  }
  b->seen[b->seen_next] = hash;
  b->seen_count[b->seen_next] = 1;
  b->seen_next = (b->seen_next + 1) % NSEEN;
  return false;
}

static CUresult launch(cmx__gpu_batch* b, gexec* e) {
  e->last_use = ++b->clock;
  CUresult r = cmx__cu.cuGraphLaunch(e->exec, b->s);
  if (r == CUDA_SUCCESS) {
    atomic_fetch_add(&st_launches, 1);
    atomic_fetch_add(&st_nodes, (uint64_t)b->n);
  }
  return r;
}

/* b's commands as a graph; false when they must go plainly instead
 * (nothing of them issued). */
static bool issue_graph(cmx__gpu_batch* b) {
  bool child = false;
  for (int i = 0; i < b->n && !child; i++) child = b->cmds[i].s.kind == N_CHILD;
  if (b->n < min_nodes() && !child) return false;
  uint64_t hash = sig_hash(b);
  int slot = -1;
  gexec* e = find(b, hash, &slot);
  if (e) {
    if (update(b, e) && launch(b, e) == CUDA_SUCCESS) {
      atomic_fetch_add(&st_reused, 1);
      return true;
    }
    drop(b, slot); /* made afresh below */
  } else if (!child && !seen_enough(b, hash)) {
    return false;
  }
  e = instantiate(b, hash);
  if (!e) {
    atomic_fetch_add(&st_fallbacks, 1);
    return false;
  }
  if (launch(b, e) != CUDA_SUCCESS) {
    exec_free(e);
    atomic_fetch_add(&st_fallbacks, 1);
    return false;
  }
  keep(b, e);
  return true;
}

cmx_status cmx__gpu_batch_flush(cmx__gpu_batch* b) {
  if (!b || b->n == 0) return CMX_OK;
  atomic_fetch_add(&st_flushes, 1);
  CUresult r = issue_graph(b) ? CUDA_SUCCESS : issue_plain(b);
  clear_cmds(b);
  return r == CUDA_SUCCESS
             ? CMX_OK
             : cmx__cu_error(r, "gpu", "launching a batch of gpu kernels");
}
