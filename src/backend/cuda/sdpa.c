/* The GPU kernel of ScaledDotProductAttention (kernels/sdpa.cu; contract
 * in primitives/fast.h): one variant per dtype (float16, bfloat16,
 * float32), scores, softmax and output accumulated in float32.
 *
 * Two kernels, picked per call:
 *   - tensor cores (cmx_sdpa_mma_d<D>): float16/bfloat16 on compute
 *     capability 8.0 and later, D == Dv in {64, 80, 96, 128}, unit last
 *     strides, the other strides multiples of 8 and 16-byte aligned data,
 *     more than 8 query rows per kv head, S > 0 and (causal) L <= S: flash
 *     attention in tiles of 64 queries x 64 keys;
 *   - CUDA cores (cmx_sdpa_rows_r<ROWS>_d<DPL>): everything else with
 *     D, Dv <= 256 (the op routes larger head dims to the composite):
 *     blocks of up to 8 query rows of one kv head (decode: every query
 *     head of the group at once), the keys split over several blocks when
 *     the rows alone would not fill the GPU (a long KV cache), the splits'
 *     partial softmax records merged by cmx_sdpa_combine;
 *   - decode (cmx_sdpa_dec_r<ROWS>_d<D>): D == Dv in {64, 128, 256}
 *     (float32: 64, 128), at most 8 query rows a kv head, 16-byte aligned key
 *     and value rows: 16-byte loads, several keys a warp at once, the keys
 *     split over about 8 blocks a multiprocessor (at least 16 keys a
 *     split), the split records merged by cmx_sdpa_combine after it, or
 *     with CMX_CUDA_SDPA_DEC_COMBINE=kernel by the last split block of
 *     each (batch, kv head) to finish (a ticket counter: one launch a step
 *     instead of two, but the serial merge in that block costs more than
 *     the launch it saves: SmolLM2 decoding on an H200, 3 interleaved A/B
 *     pairs, 8.13 us a kernel-merging launch against 5.15 + 2.04 us, 744-799
 *     tokens/s against 765-841 with the combine launch, the default).
 * CMX_CUDA_SDPA=rows forces the CUDA-core kernel (tests, diagnostics). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "primitives/fast.h"
#include "primitives/registry.h"

static const char* const k_preamble[] = {"ew_bind", "ew_scalar", NULL};

/* rows kernels: index (r * 3 + d) for ROWS 1, 2, 4, 8 and DPL 2, 4, 8 */
/* decode kernels: index K_DEC + (r * 3 + d) for ROWS 1, 2, 4, 8 and D 64,
 * 128, 256 */
enum { K_ROWS = 0, K_COMBINE = 12, K_MMA = 13, K_DEC = 17 };
static const char* const k_kernels[] = {
    "cmx_sdpa_rows_r1_d2",  "cmx_sdpa_rows_r1_d4",  "cmx_sdpa_rows_r1_d8",
    "cmx_sdpa_rows_r2_d2",  "cmx_sdpa_rows_r2_d4",  "cmx_sdpa_rows_r2_d8",
    "cmx_sdpa_rows_r4_d2",  "cmx_sdpa_rows_r4_d4",  "cmx_sdpa_rows_r4_d8",
    "cmx_sdpa_rows_r8_d2",  "cmx_sdpa_rows_r8_d4",  "cmx_sdpa_rows_r8_d8",
    "cmx_sdpa_combine",     "cmx_sdpa_mma_d64",     "cmx_sdpa_mma_d80",
    "cmx_sdpa_mma_d96",     "cmx_sdpa_mma_d128",    "cmx_sdpa_dec_r1_d64",
    "cmx_sdpa_dec_r1_d128", "cmx_sdpa_dec_r1_d256", "cmx_sdpa_dec_r2_d64",
    "cmx_sdpa_dec_r2_d128", "cmx_sdpa_dec_r2_d256", "cmx_sdpa_dec_r4_d64",
    "cmx_sdpa_dec_r4_d128", "cmx_sdpa_dec_r4_d256", "cmx_sdpa_dec_r8_d64",
    "cmx_sdpa_dec_r8_d128", "cmx_sdpa_dec_r8_d256", NULL};
static const int k_mma_dims[4] = {64, 80, 96, 128};

static bool sdpa_dtype_ok(cmx_dtype dt) {
  return dt == CMX_FLOAT16 || dt == CMX_BFLOAT16 || dt == CMX_FLOAT32;
}

static bool sdpa_variant(int v, cmx__gpu_variant* out) {
  cmx_dtype dt = (cmx_dtype)v;
  if (!sdpa_dtype_ok(dt)) return false;
  snprintf(out->name, sizeof out->name, "sdpa_%s", cmx_dtype_name(dt));
  out->flags = 0;
  int w =
      cmx__gpu_float_prelude(out->prelude, sizeof out->prelude, "CMX_A", dt);
  if (w <= 0 || (size_t)w >= sizeof out->prelude) return false;
  if (dt == CMX_BFLOAT16) {
    int w2 = snprintf(out->prelude + w, sizeof out->prelude - (size_t)w,
                      "#define CMX_A_BF16 1\n");
    if (w2 <= 0 || (size_t)(w + w2) >= sizeof out->prelude) return false;
  }
  return true;
}

const cmx__gpu_family cmx__gpu_family_sdpa = {
    .name = "sdpa",
    .file = "sdpa",
    .preamble = k_preamble,
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = CMX_NUM_DTYPES,
    .variant = sdpa_variant,
    .shape = {CMX__GPU_CUSTOM, 128, 0}};

/* The kernels' argument struct (cmx_sdpa_args in kernels/sdpa.cu: the
 * same fields in the same order; 248 bytes, no padding). */
typedef struct {
  CUdeviceptr q, k, v, o, mask, sinks, part, cnt;
  long long qs[4], ks[4], vs[4], ms[4];
  int B, H, Hk, L, S, D, Dv, R;
  int mask_kind, nsplit, per_split, nchunks;
  float scale;
  int pad_;
} sdpa_args;
_Static_assert(sizeof(sdpa_args) == 248, "sdpa_args layout");

static void strides_of(long long* dst, cmx_array a) {
  for (int i = 0; i < 4; i++) dst[i] = (long long)CMX__STRIDES(a)[i];
}

static bool force_rows(void) {
  const char* e = getenv("CMX_CUDA_SDPA");
  return e && strcmp(e, "rows") == 0;
}

/* The tensor-core kernel's index for A, or -1 when it does not take it. */
static int mma_kernel(const sdpa_args* A, cmx_dtype dt,
                      const cmx__gpu_device* d) {
  if ((dt != CMX_FLOAT16 && dt != CMX_BFLOAT16) || d->cc_major < 8 ||
      A->D != A->Dv || A->S == 0 || (long long)A->R * A->L <= 8 ||
      (A->mask_kind == CMX__SDPA_MASK_CAUSAL && A->L > A->S) || force_rows())
    return -1;
  int which = -1;
  for (int i = 0; i < 4; i++)
    if (A->D == k_mma_dims[i]) which = i;
  if (which < 0) return -1;
  const long long* st[3] = {A->qs, A->ks, A->vs};
  for (int i = 0; i < 3; i++) {
    if (st[i][3] != 1) return -1;
    for (int j = 0; j < 3; j++)
      if (st[i][j] % 8) return -1;
  }
  if ((A->q | A->k | A->v | A->o) % 16) return -1;
  /* 64 + 4 * 64 rows of D + 8 16-bit elements */
  size_t shared = (size_t)(5 * 64) * (size_t)(A->D + 8) * 2;
  if ((int64_t)shared > d->shared_optin) return -1;
  return K_MMA + which;
}

static cmx_status launch_mma(int dev, cmx_dtype dt, int kernel,
                             const sdpa_args* A) {
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(dev, &cmx__gpu_family_sdpa, (int)dt, kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = {
      {(unsigned)((A->L + 63) / 64), (unsigned)A->H, (unsigned)A->B},
      {128, 1, 1},
      (size_t)(5 * 64) * (size_t)(A->D + 8) * 2};
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  cmx__gpu_args_add(&args, A, sizeof *A, 8);
  return cmx__gpu_launch("scaled_dot_product_attention", k, &cfg, &args);
}

/* The decode kernel's index for A, or -1 when it does not take it: D ==
 * Dv in {64, 128, 256} (float32: 64, 128), at most 8 query rows a kv
 * head, unit feature strides of k and v, their other strides whole
 * 16-byte vectors and 16-byte aligned data (one 16-byte load a lane). */
static int dec_kernel(const sdpa_args* A, cmx_dtype dt) {
  if (A->D != A->Dv || A->S == 0 || (long long)A->R * A->L > 8 || force_rows())
    return -1;
  int di = A->D == 64 ? 0 : A->D == 128 ? 1 : A->D == 256 ? 2 : -1;
  if (di < 0 || (dt == CMX_FLOAT32 && di == 2)) return -1;
  long long vec = 16 / (long long)cmx_dtype_size(dt);
  const long long* st[2] = {A->ks, A->vs};
  for (int i = 0; i < 2; i++) {
    if (st[i][3] != 1) return -1;
    for (int j = 0; j < 3; j++)
      if (st[i][j] % vec) return -1;
  }
  if ((A->k | A->v) % 16) return -1;
  long long RL = (long long)A->R * A->L;
  int ri = RL <= 1 ? 0 : RL <= 2 ? 1 : RL <= 4 ? 2 : 3;
  return K_DEC + ri * 3 + di;
}

/* The decode kernel's split ticket counters (kernels/sdpa.cu,
 * cmx_sdpa_dec_merge): an array of `n` zeroed 32-bit counters a (device,
 * CUDA stream), one a (batch, kv head) block row, each put back to 0 by
 * the launch that used it. A stream's launches run one after another
 * (batched into a CUDA graph or not, programmatic edges included: the
 * kernel touches its counters after CMX_GRID_WAIT), so they may share its
 * array; launches on two streams never do. Per-launch scratch would not
 * do: fresh memory is not zero, and zeroing it is a memset, which ends a
 * graph batch. The arrays live as long as the process (a few KB a
 * stream; a destroyed stream's handle, if the driver reuses it, finds its
 * counters at 0). 0 when none can be had: the caller falls back to the
 * combine launch. */
#define DEC_TABLE 256
/* Decode blocks a multiprocessor at most (launch_dec); the counter
 * arrays cover that many a multiprocessor. */
enum { DEC_BLOCKS_PER_SM = 8 };
static struct {
  pthread_mutex_t lock;
  int n;
  struct {
    int dev;
    CUstream s;
    CUdeviceptr p;
    long long n;
  } e[DEC_TABLE];
} g_dec_cnt = {.lock = PTHREAD_MUTEX_INITIALIZER};

static CUdeviceptr dec_counters(int dev, long long n) {
  int sdev = -1;
  CUstream s = cmx__gpu_current_stream(&sdev);
  if (!s || sdev != dev || n <= 0) return 0;
  CUdeviceptr p = 0;
  pthread_mutex_lock(&g_dec_cnt.lock);
  for (int i = 0; i < g_dec_cnt.n; i++)
    if (g_dec_cnt.e[i].dev == dev && g_dec_cnt.e[i].s == s) {
      p = g_dec_cnt.e[i].n >= n ? g_dec_cnt.e[i].p : 0;
      pthread_mutex_unlock(&g_dec_cnt.lock);
      return p;
    }
  /* the stream's first split decode: its array, zeroed on the stream
   * (before anything launched on it later) */
  if (g_dec_cnt.n < DEC_TABLE &&
      cmx__cu.cuMemAlloc(&p, (size_t)n * 4) == CUDA_SUCCESS) {
    if (cmx__cu.cuMemsetD32Async(p, 0, (size_t)n, s) == CUDA_SUCCESS) {
      g_dec_cnt.e[g_dec_cnt.n].dev = dev;
      g_dec_cnt.e[g_dec_cnt.n].s = s;
      g_dec_cnt.e[g_dec_cnt.n].p = p;
      g_dec_cnt.e[g_dec_cnt.n].n = n;
      g_dec_cnt.n++;
    } else {
      cmx__cu.cuMemFree(p);
      p = 0;
    }
  } else {
    p = 0;
  }
  pthread_mutex_unlock(&g_dec_cnt.lock);
  return p;
}

/* Whether the decode splits merge in a cmx_sdpa_combine launch after the
 * decode kernel (the default: measured faster) or in the decode kernel
 * (CMX_CUDA_SDPA_DEC_COMBINE=kernel, for A/B runs and tests; read at each
 * call). Both give the same bits. */
static bool dec_combine_launch(void) {
  const char* e = getenv("CMX_CUDA_SDPA_DEC_COMBINE");
  return !(e && strcmp(e, "kernel") == 0);
}

/* A split-key launch: kernel k over (blocks, nsplit) blocks of 128
 * threads with `shared` dynamic bytes, the keys in `splits` splits or
 * fewer (at least min_keys keys a split, at most 64 splits), then
 * cmx_sdpa_combine over the splits' records when there are several,
 * unless `counters` (the decode kernel: the blocks a device's counter
 * array covers, more than `blocks` whenever the keys split) and a counter
 * array is had: the kernel merges them itself. */
static cmx_status launch_split(int dev, cmx_dtype dt, sdpa_args* A,
                               const cmx__gpu_kernel* k, long long blocks,
                               size_t shared, long long splits,
                               long long min_keys, long long counters) {
  const char* op = "scaled_dot_product_attention";
  long long nsplit = splits;
  long long most = (A->S + min_keys - 1) / min_keys;
  if (nsplit > most) nsplit = most;
  if (nsplit > 64) nsplit = 64;
  if (nsplit < 1) nsplit = 1;
  long long per = A->S > 0 ? (A->S + nsplit - 1) / nsplit : 1;
  nsplit = A->S > 0 ? (A->S + per - 1) / per : 1;
  A->nsplit = (int)nsplit;
  A->per_split = (int)per;
  cmx__buffer* part = NULL;
  long long nrows = (long long)A->B * A->H * A->L;
  if (nsplit > 1) {
    size_t bytes = (size_t)nrows * (size_t)nsplit * (size_t)(A->Dv + 2) * 4;
    part = cmx__device_hooks->alloc_device(bytes, dev);
    if (!part) return cmx_last_status();
    A->part = part->dev;
    /* every call of a device asks for the same size (one array a
     * stream) */
    if (counters && !dec_combine_launch())
      A->cnt = dec_counters(dev, counters);
  }
  cmx__gpu_cfg cfg = {
      {(unsigned)blocks, (unsigned)nsplit, 1}, {128, 1, 1}, shared};
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  cmx__gpu_args_add(&args, A, sizeof *A, 8);
  cmx_status st = cmx__gpu_launch(op, k, &cfg, &args);
  if (st == CMX_OK && nsplit > 1 && !A->cnt) {
    const cmx__gpu_kernel* c =
        cmx__gpu_kernel_get(dev, &cmx__gpu_family_sdpa, (int)dt, K_COMBINE);
    st = c ? CMX_OK : cmx_last_status();
    if (st == CMX_OK) {
      cmx__gpu_cfg ccfg = {{(unsigned)nrows, 1, 1}, {128, 1, 1}, 0};
      CUdeviceptr pp = A->part, po = A->o;
      int ns = A->nsplit, dv = A->Dv;
      cmx__gpu_args cargs;
      cmx__gpu_args_init(&cargs);
      CMX__GPU_ARG(&cargs, pp);
      CMX__GPU_ARG(&cargs, po);
      CMX__GPU_ARG(&cargs, ns);
      CMX__GPU_ARG(&cargs, dv);
      st = cmx__gpu_launch(op, c, &ccfg, &cargs);
    }
  }
  if (part) cmx__buffer_release(part);
  return st;
}

static long long sm_count(const cmx__gpu_device* d) {
  return d->sm_count > 0 ? d->sm_count : 1;
}

static cmx_status launch_rows(int dev, cmx_dtype dt, sdpa_args* A,
                              const cmx__gpu_device* d) {
  long long RL = (long long)A->R * A->L;
  int ri = RL <= 1 ? 0 : RL <= 2 ? 1 : RL <= 4 ? 2 : 3, rows = 1 << ri;
  int wmax = A->D > A->Dv ? A->D : A->Dv;
  int di = wmax <= 64 ? 0 : wmax <= 128 ? 1 : 2, dpl = 2 << di;
  long long nchunks = (RL + rows - 1) / rows;
  long long base = (long long)A->B * A->Hk * nchunks;
  if (base > 0x7fffffffLL)
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[scaled_dot_product_attention] too many query "
                            "rows (%lld)",
                            (long long)A->B * A->H * A->L);
  A->nchunks = (int)nchunks;
  /* keys split when the row blocks alone leave the GPU idle: at least 128
   * keys a split, about 4 blocks a multiprocessor */
  int nw = 4;
  size_t shared =
      (size_t)nw * (size_t)rows * (size_t)(2 + 32 * dpl) * sizeof(float);
  long long want = 4 * sm_count(d);
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(
      dev, &cmx__gpu_family_sdpa, (int)dt, K_ROWS + ri * 3 + di);
  if (!k) return cmx_last_status();
  return launch_split(dev, dt, A, k, base, shared,
                      base >= want ? 1 : (want + base - 1) / base, 128, 0);
}

/* Keys a decode split takes at least: CMX_CUDA_SDPA_DEC_KEYS (a tuning
 * knob, read once), else 16. A short cache is where it binds: SmolLM2's
 * decoding step (3 kv heads, 256 positions, float32) took 11.2 us a call
 * with 64 (12 blocks), 7.1 with 32, 5.1 with 16 (H200, llm_gpu_bench). */
static long long dec_min_keys(void) {
  static _Atomic long long keys = 0;
  long long k = atomic_load(&keys);
  if (k == 0) {
    const char* e = getenv("CMX_CUDA_SDPA_DEC_KEYS");
    k = e ? atoll(e) : 0;
    if (k < 8 || k > 4096) k = 16;
    atomic_store(&keys, k);
  }
  return k;
}

/* Whether decode grids are sized by the kernel's occupancy (one wave),
 * else (CMX_CUDA_SDPA_DEC_WAVE=0, for comparisons) for 8 blocks a
 * multiprocessor, rounded up. Read once. */
static bool dec_one_wave(void) {
  static _Atomic int on = -1;
  int v = atomic_load(&on);
  if (v < 0) {
    const char* e = getenv("CMX_CUDA_SDPA_DEC_WAVE");
    v = !(e && e[0] == '0' && e[1] == 0);
    atomic_store(&on, v);
  }
  return v != 0;
}

/* The decode kernel: a block per (batch, kv head) and split, the keys
 * split into as many blocks as the card holds at once (a block keeps 16
 * KB of loads in flight), 8 a multiprocessor at most, at least
 * dec_min_keys() keys a split. One wave: at 80 registers a thread (the
 * one-row bfloat16 kernel at head dim 128 on sm_90) a multiprocessor
 * holds 6 blocks, and 8 a multiprocessor made 1.3 waves, the last a third
 * full, for B 1-4, 32 heads, 4096 keys. */
static cmx_status launch_dec(int dev, cmx_dtype dt, sdpa_args* A, int kernel,
                             const cmx__gpu_device* d) {
  long long base = (long long)A->B * A->Hk;
  if (base > 0x7fffffffLL)
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[scaled_dot_product_attention] too many heads");
  A->nchunks = 1;
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(dev, &cmx__gpu_family_sdpa, (int)dt, kernel);
  if (!k) return cmx_last_status();
  long long per_sm = cmx__gpu_blocks_per_sm(k, 128, 0);
  if (per_sm <= 0 || per_sm > DEC_BLOCKS_PER_SM) per_sm = DEC_BLOCKS_PER_SM;
  long long hold = per_sm * sm_count(d);
  long long splits = base >= hold ? 1 : hold / base;
  if (!dec_one_wave()) {
    hold = DEC_BLOCKS_PER_SM * sm_count(d);
    splits = base >= hold ? 1 : (hold + base - 1) / base;
  }
  return launch_split(dev, dt, A, k, base, 0, splits, dec_min_keys(),
                      DEC_BLOCKS_PER_SM * sm_count(d));
}

cmx_status cmx__gpu_sdpa(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)nout;
  const char* op = "scaled_dot_product_attention";
  const cmx__fast_params* fp = cmx_primitive_params(p);
  cmx_array q = in[0], k = in[1], v = in[2], o = out[0], mask = NULL,
            sinks = NULL;
  int n = 3;
  if (fp->mask == CMX__SDPA_MASK_BOOL || fp->mask == CMX__SDPA_MASK_ADD)
    mask = in[n++];
  if (fp->has_sinks) sinks = in[n++];
  if (n != nin || !sdpa_dtype_ok(q->dtype))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                            cmx_dtype_name(q->dtype));
  if (q->dims[3] > 256 || v->dims[3] > 256)
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[%s] the GPU kernel takes head dims up to 256, "
                            "not %lld and %lld",
                            op, (long long)q->dims[3], (long long)v->dims[3]);
  for (int i = 0; i < 4; i++)
    if (q->dims[i] > 0x7fffffff || k->dims[i] > 0x7fffffff)
      return cmx_kernel_error(CMX_ERR_VALUE,
                              "[%s] a dimension over 2^31 - 1 is not "
                              "supported on the GPU",
                              op);
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (!d) return cmx_last_status();
  sdpa_args A;
  memset(&A, 0, sizeof A);
  st = cmx__gpu_ptr(q, dev, &A.q);
  if (st == CMX_OK) st = cmx__gpu_ptr(k, dev, &A.k);
  if (st == CMX_OK) st = cmx__gpu_ptr(v, dev, &A.v);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &A.o);
  if (st == CMX_OK && mask) st = cmx__gpu_ptr(mask, dev, &A.mask);
  if (st == CMX_OK && sinks) st = cmx__gpu_ptr(sinks, dev, &A.sinks);
  if (st != CMX_OK) return st;
  strides_of(A.qs, q);
  strides_of(A.ks, k);
  strides_of(A.vs, v);
  if (mask) strides_of(A.ms, mask);
  A.B = (int)q->dims[0];
  A.H = (int)q->dims[1];
  A.L = (int)q->dims[2];
  A.D = (int)q->dims[3];
  A.Hk = (int)k->dims[1];
  A.S = (int)k->dims[2];
  A.Dv = (int)v->dims[3];
  A.R = A.H / A.Hk;
  A.mask_kind = fp->mask;
  A.scale = fp->scale;
  A.nsplit = 1;
  int mk = mma_kernel(&A, q->dtype, d), dk = dec_kernel(&A, q->dtype);
  st = mk >= 0   ? launch_mma(dev, q->dtype, mk, &A)
       : dk >= 0 ? launch_dec(dev, q->dtype, &A, dk, d)
                 : launch_rows(dev, q->dtype, &A, d);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}
