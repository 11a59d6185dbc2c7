/* GPU kernels of the matrix products (Matmul, AddMM) through cuBLASLt.
 *
 * cmx's matrices are row-major, cuBLASLt's column-major: C = A @ B is
 * computed as C^T = B^T @ A^T, where a row-major matrix read in place is
 * its own transpose in column-major terms. So every operand goes in where
 * it lies, as a layout: column stride 1 (row-major, leading dimension = its
 * row stride, op N) or row stride 1 (a transpose, op T); only other
 * layouts (gapped, reversed) are packed first. The output is a fresh
 * row-major array (or AddMM's c donated).
 *
 * Batches: the batch dims of the output and both operands are collapsed
 * together; the innermost collapsed dim is one strided-batched call (batch
 * stride 0 for a broadcast operand), outer ones a loop of calls. A stack
 * (..., M, K) @ (K, N) whose batch steps like further rows is a single
 * (B*M, K) @ (K, N) product. Matrix-vector products (one output row or
 * column, no batch, float32/16-bit floats, no bias) go to cmx's own
 * kernels (gemv.c) when their layout suits them; else to cuBLASLt as
 * products with one row or column.
 *
 * Precision: float32 is computed in full float32 (CUBLAS_COMPUTE_32F, no
 * TF32) unless the environment sets CMX_CUDA_ALLOW_TF32=1 (read at every
 * product, like torch.backends.cuda.matmul.allow_tf32); float16 and
 * bfloat16 accumulate in float32; float64 in float64; complex64 through
 * cuBLASLt's complex float32 kernels.
 *
 * AddMM: out = alpha * a @ b + beta * c. A c that is one row broadcast
 * over the output (a bias) with beta == 1 goes into cuBLASLt's bias
 * epilogue; otherwise out starts as c (donated, or copied) and cuBLASLt
 * updates it in place with beta. beta == 0 ignores c.
 *
 * Plans (descriptors, layouts and the heuristic's algorithm) are cached
 * per (device, dtype, compute type, shapes, leading dims, batch, strides,
 * alignment, epilogue); the workspace comes from cmx's device allocator,
 * one kept per GPU stream.
 * Every call goes through the encoder as a CALL command.
 */
#include "primitives/matmul.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gemv.h"
#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/layout.h"

/* cuBLASLt's enum values (cublasLt.h, library_types.h, cublas_api.h). */
enum {
  R_32F = 0,
  R_64F = 1,
  R_16F = 2,
  C_32F = 4,
  R_16BF = 14,
  COMPUTE_32F = 68,
  COMPUTE_64F = 70,
  COMPUTE_32F_FAST_TF32 = 77,
  OP_N = 0,
  OP_T = 1,
  LAYOUT_BATCH_COUNT = 5,
  LAYOUT_BATCH_OFFSET = 6,
  DESC_TRANSA = 3,
  DESC_TRANSB = 4,
  DESC_EPILOGUE = 7,
  DESC_BIAS_POINTER = 8,
  DESC_BIAS_BATCH_STRIDE = 10,
  DESC_BIAS_DATA_TYPE = 26,
  EPILOGUE_DEFAULT = 1,
  EPILOGUE_BIAS = 4,
  PREF_MAX_WORKSPACE = 1,
  PREF_ALIGN_A = 5, /* .. D = 8 */
  STATUS_NOT_SUPPORTED = 15
};

#define WORKSPACE_MAX ((uint64_t)32 << 20) /* cuBLASLt's advice for Hopper */

/* ---------------- plans ---------------- */

/* In cuBLASLt's terms: D (m x n, column-major, ld m) = op(A) op(B), with
 * A our b operand and B our a operand. Zeroed before filling: compared and
 * hashed as bytes. */
typedef struct {
  int dev, dtype, compute, epilogue, opa, opb;
  uint32_t align; /* of every pointer, bytes (<= 256) */
  int32_t batch;
  int64_t m, n, k, lda, ldb, ldd, sa, sb, sd;
} plan_key;

typedef struct {
  plan_key key;
  _Atomic bool ready;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatmulAlgo_t algo;
  size_t ws;
  pthread_mutex_t bias_lock; /* the bias pointer is set per call */
} plan;

#define NPLANS 512
static struct {
  pthread_mutex_t lock;
  plan slots[NPLANS];
  int used;
} g_plans = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t key_hash(const plan_key* k) {
  const unsigned char* p = (const unsigned char*)k;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof *k; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static void plan_destroy(plan* p) {
  if (p->la) cmx__lt.cublasLtMatrixLayoutDestroy(p->la);
  if (p->lb) cmx__lt.cublasLtMatrixLayoutDestroy(p->lb);
  if (p->ld) cmx__lt.cublasLtMatrixLayoutDestroy(p->ld);
  if (p->desc) cmx__lt.cublasLtMatmulDescDestroy(p->desc);
  p->la = p->lb = p->ld = NULL;
  p->desc = NULL;
}

static cmx_status lt_fail(const char* op, const char* what, cublasStatus_t r) {
  return cmx__error(
      r == STATUS_NOT_SUPPORTED ? CMX_ERR_NOT_IMPLEMENTED : CMX_ERR_RUNTIME,
      "[%s] cuBLASLt %s failed: %s (%s)", op, what,
      cmx__lt.cublasLtGetStatusName(r), cmx__lt.cublasLtGetStatusString(r));
}

static cublasStatus_t make_layout(cublasLtMatrixLayout_t* l, int type,
                                  int64_t rows, int64_t cols, int64_t ld,
                                  int32_t batch, int64_t stride) {
  cublasStatus_t r = cmx__lt.cublasLtMatrixLayoutCreate(l, type, (uint64_t)rows,
                                                        (uint64_t)cols, ld);
  if (r == CUBLAS_STATUS_SUCCESS && batch > 1)
    r = cmx__lt.cublasLtMatrixLayoutSetAttribute(*l, LAYOUT_BATCH_COUNT, &batch,
                                                 sizeof batch);
  if (r == CUBLAS_STATUS_SUCCESS && batch > 1)
    r = cmx__lt.cublasLtMatrixLayoutSetAttribute(*l, LAYOUT_BATCH_OFFSET,
                                                 &stride, sizeof stride);
  return r;
}

static int data_type(cmx_dtype dt) {
  switch (dt) {
    case CMX_FLOAT64:
      return R_64F;
    case CMX_FLOAT16:
      return R_16F;
    case CMX_BFLOAT16:
      return R_16BF;
    case CMX_COMPLEX64:
      return C_32F;
    default:
      return R_32F;
  }
}

/* Builds p's descriptors from its key and asks the heuristic for an
 * algorithm. */
static cmx_status plan_build(plan* p, cublasLtHandle_t h, const char* op) {
  const plan_key* k = &p->key;
  int type = data_type((cmx_dtype)k->dtype);
  int scale = k->dtype == CMX_FLOAT64     ? R_64F
              : k->dtype == CMX_COMPLEX64 ? C_32F
                                          : R_32F;
  const char* what = "creating a matmul descriptor";
  cublasStatus_t r =
      cmx__lt.cublasLtMatmulDescCreate(&p->desc, k->compute, scale);
  uint32_t epi = (uint32_t)k->epilogue;
  int64_t zero = 0;
  if (r == CUBLAS_STATUS_SUCCESS)
    r = cmx__lt.cublasLtMatmulDescSetAttribute(p->desc, DESC_TRANSA, &k->opa,
                                               sizeof k->opa);
  if (r == CUBLAS_STATUS_SUCCESS)
    r = cmx__lt.cublasLtMatmulDescSetAttribute(p->desc, DESC_TRANSB, &k->opb,
                                               sizeof k->opb);
  if (r == CUBLAS_STATUS_SUCCESS && epi != EPILOGUE_DEFAULT) {
    r = cmx__lt.cublasLtMatmulDescSetAttribute(p->desc, DESC_EPILOGUE, &epi,
                                               sizeof epi);
    if (r == CUBLAS_STATUS_SUCCESS)
      r = cmx__lt.cublasLtMatmulDescSetAttribute(p->desc, DESC_BIAS_DATA_TYPE,
                                                 &type, sizeof type);
    if (r == CUBLAS_STATUS_SUCCESS && k->batch > 1)
      r = cmx__lt.cublasLtMatmulDescSetAttribute(
          p->desc, DESC_BIAS_BATCH_STRIDE, &zero, sizeof zero);
  }
  if (r == CUBLAS_STATUS_SUCCESS) {
    what = "creating a matrix layout";
    bool ta = k->opa == OP_T, tb = k->opb == OP_T;
    r = make_layout(&p->la, type, ta ? k->k : k->m, ta ? k->m : k->k, k->lda,
                    k->batch, k->sa);
    if (r == CUBLAS_STATUS_SUCCESS)
      r = make_layout(&p->lb, type, tb ? k->n : k->k, tb ? k->k : k->n, k->ldb,
                      k->batch, k->sb);
    if (r == CUBLAS_STATUS_SUCCESS)
      r = make_layout(&p->ld, type, k->m, k->n, k->ldd, k->batch, k->sd);
  }
  cublasLtMatmulPreference_t pref = NULL;
  if (r == CUBLAS_STATUS_SUCCESS) {
    what = "setting up the algorithm search";
    r = cmx__lt.cublasLtMatmulPreferenceCreate(&pref);
    uint64_t ws = WORKSPACE_MAX;
    if (r == CUBLAS_STATUS_SUCCESS)
      r = cmx__lt.cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE,
                                                       &ws, sizeof ws);
    for (int i = 0; i < 4 && r == CUBLAS_STATUS_SUCCESS; i++)
      r = cmx__lt.cublasLtMatmulPreferenceSetAttribute(
          pref, PREF_ALIGN_A + i, &k->align, sizeof k->align);
  }
  if (r == CUBLAS_STATUS_SUCCESS) {
    what = "finding an algorithm (cublasLtMatmulAlgoGetHeuristic)";
    cublasLtMatmulHeuristicResult_t res;
    memset(&res, 0, sizeof res);
    int n = 0;
    r = cmx__lt.cublasLtMatmulAlgoGetHeuristic(h, p->desc, p->la, p->lb, p->ld,
                                               p->ld, pref, 1, &res, &n);
    if (r == CUBLAS_STATUS_SUCCESS && n < 1) r = STATUS_NOT_SUPPORTED;
    if (r == CUBLAS_STATUS_SUCCESS) {
      p->algo = res.algo;
      p->ws = res.workspaceSize;
    }
  }
  if (pref) cmx__lt.cublasLtMatmulPreferenceDestroy(pref);
  if (r == CUBLAS_STATUS_SUCCESS) return CMX_OK;
  plan_destroy(p);
  return lt_fail(op, what, r);
}

/* The plan of key: cached (built once), or built into *tmp when the cache
 * is full (the caller destroys it). NULL with the error set. */
static plan* plan_get(const plan_key* key, cublasLtHandle_t h, const char* op,
                      plan* tmp) {
  uint64_t hash = key_hash(key);
  pthread_mutex_lock(&g_plans.lock);
  plan* p = NULL;
  for (int i = 0; i < NPLANS; i++) {
    plan* s = &g_plans.slots[(hash + (uint64_t)i) % NPLANS];
    if (!s->ready && !s->desc) { /* empty: build it here */
      if (g_plans.used >= NPLANS * 3 / 4) break;
      s->key = *key;
      if (plan_build(s, h, op) != CMX_OK) {
        memset(&s->key, 0, sizeof s->key);
        pthread_mutex_unlock(&g_plans.lock);
        return NULL;
      }
      pthread_mutex_init(&s->bias_lock, NULL);
      g_plans.used++;
      atomic_store(&s->ready, true);
      p = s;
      break;
    }
    if (memcmp(&s->key, key, sizeof *key) == 0) {
      p = s;
      break;
    }
  }
  pthread_mutex_unlock(&g_plans.lock);
  if (p) return p;
  memset(tmp, 0, sizeof *tmp);
  tmp->key = *key;
  if (plan_build(tmp, h, op) != CMX_OK) return NULL;
  pthread_mutex_init(&tmp->bias_lock, NULL);
  return tmp;
}

/* ---------------- workspaces ----------------
 * One per GPU stream, kept and grown as needed: products on one stream run
 * in order, so they can share it, and no allocation is queued per product.
 * A grown workspace frees the old one stream-ordered (after the work that
 * uses it). */
#define NWORKSPACES 64
static struct {
  pthread_mutex_t lock;
  CUstream stream[NWORKSPACES];
  cmx__buffer* buf[NWORKSPACES];
} g_ws = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A workspace of at least bytes for the running task's stream: *out is
 * its device pointer. */
static cmx_status workspace(int dev, size_t bytes, CUdeviceptr* out) {
  *out = 0;
  if (bytes == 0) return CMX_OK;
  CUstream s = cmx__gpu_current_stream(NULL);
  pthread_mutex_lock(&g_ws.lock);
  int i = 0;
  while (i < NWORKSPACES && g_ws.buf[i] && g_ws.stream[i] != s) i++;
  cmx_status st = CMX_OK;
  if (i == NWORKSPACES) { /* too many streams: the last slot is shared by */
    i = NWORKSPACES - 1;  /* turns, its buffer replaced */
    if (g_ws.stream[i] != s && g_ws.buf[i]) {
      cmx__buffer_release(g_ws.buf[i]);
      g_ws.buf[i] = NULL;
    }
  }
  if (!g_ws.buf[i] || g_ws.buf[i]->size < bytes) {
    if (g_ws.buf[i]) cmx__buffer_release(g_ws.buf[i]);
    g_ws.buf[i] = cmx__device_hooks->alloc_device(bytes, dev);
    if (!g_ws.buf[i]) st = cmx_last_status();
  }
  g_ws.stream[i] = s;
  if (st == CMX_OK) *out = g_ws.buf[i]->dev;
  pthread_mutex_unlock(&g_ws.lock);
  return st;
}

/* ---------------- one product ---------------- */

/* An operand as a stack of rows x cols matrices (strides rs, cs) over the
 * output's batch dims (strides bst; 0 where broadcast). */
typedef struct {
  CUdeviceptr p;
  int64_t rows, cols, rs, cs;
  int64_t bst[CMX_MAX_NDIM];
  cmx__buffer* packed; /* a row-major copy, when it had to be packed */
} operand;

/* Matrix X (r x c, strides rs, cs) as cuBLASLt reads X^T in column-major
 * terms: op N on the (c x r) matrix of leading dim rs, or op T on the
 * (r x c) one of leading dim cs. Strides of size-1 dims do not matter.
 * False when neither fits (X must be packed). */
static bool lt_view(int64_t r, int64_t c, int64_t rs, int64_t cs, int* op,
                    int64_t* ld) {
  int64_t min_n = c > 1 ? c : 1, min_t = r > 1 ? r : 1;
  int64_t ln = r == 1 ? min_n : rs, lt = c == 1 ? min_t : cs;
  if ((c == 1 || cs == 1) && ln >= min_n) {
    *op = OP_N;
    *ld = ln;
    return true;
  }
  if ((r == 1 || rs == 1) && lt >= min_t) {
    *op = OP_T;
    *ld = lt;
    return true;
  }
  return false;
}

/* Describes input x as operand a (is_a) or b over the output's nb batch
 * dims bdims, for a product with inner size K. */
static void setup(operand* o, cmx_array x, const int64_t* st, bool is_a,
                  int64_t K, int nb, const int64_t* bdims) {
  int nd = x->ndim, nbd = nd >= 2 ? nd - 2 : 0;
  if (nd == 1) { /* a row (a) or a column (b) */
    o->rows = is_a ? 1 : K;
    o->cols = is_a ? K : 1;
    o->rs = is_a ? 0 : st[0];
    o->cs = is_a ? st[0] : 0;
  } else {
    o->rows = x->dims[nd - 2];
    o->cols = x->dims[nd - 1];
    o->rs = st[nd - 2];
    o->cs = st[nd - 1];
  }
  for (int d = 0; d < nb; d++) {
    int xd = d - (nb - nbd);
    o->bst[d] = (xd < 0 || x->dims[xd] == 1 || bdims[d] == 1) ? 0 : st[xd];
  }
}

/* Packs x row-major into a new device buffer (o->packed) and describes the
 * copy. */
static cmx_status pack(operand* o, cmx_array x, bool is_a, int64_t K, int nb,
                       const int64_t* bdims, int dev, const char* op) {
  cmx_status st = cmx__gpu_pack_rowmajor(x, dev, op, &o->packed);
  if (!o->packed) return st;
  int64_t rm[CMX_MAX_NDIM];
  cmx__row_major_strides(x->dims, x->ndim, rm);
  setup(o, x, rm, is_a, K, nb, bdims);
  o->p = o->packed->dev;
  return st;
}

typedef struct {
  cublasLtHandle_t h;
  plan* pl;
  const void *alpha, *beta;
  CUdeviceptr a, b, d, bias, ws;
  size_t wss;
  const char* op;
} lt_call;

static cmx_status lt_run(void* ctx, CUstream s) {
  lt_call* c = ctx;
  plan* p = c->pl;
  cublasStatus_t r = CUBLAS_STATUS_SUCCESS;
  if (c->bias) {
    pthread_mutex_lock(&p->bias_lock);
    void* bp = (void*)(uintptr_t)c->bias;
    r = cmx__lt.cublasLtMatmulDescSetAttribute(p->desc, DESC_BIAS_POINTER, &bp,
                                               sizeof bp);
  }
  if (r == CUBLAS_STATUS_SUCCESS)
    r = cmx__lt.cublasLtMatmul(
        c->h, p->desc, c->alpha, (const void*)(uintptr_t)c->a, p->la,
        (const void*)(uintptr_t)c->b, p->lb, c->beta,
        (const void*)(uintptr_t)c->d, p->ld, (void*)(uintptr_t)c->d, p->ld,
        &p->algo, (void*)(uintptr_t)c->ws, c->wss, s);
  if (c->bias) pthread_mutex_unlock(&p->bias_lock);
  return r == CUBLAS_STATUS_SUCCESS ? CMX_OK : lt_fail(c->op, "matmul", r);
}

/* Lowest set bit of x, at most 256. */
static uint32_t alignment(uint64_t x) {
  uint64_t a = x & (~x + 1);
  return a == 0 || a > 256 ? 256 : (uint32_t)a;
}

static bool tf32_allowed(void) {
  const char* e = getenv("CMX_CUDA_ALLOW_TF32");
  return e && e[0] == '1' && e[1] == 0;
}

typedef struct {
  const char* op;
  int dev;
  cmx_dtype dt;
  size_t esz;
  int64_t M, N, K;
  int nb;
  int64_t bdims[CMX_MAX_NDIM];
  operand a, b;
  CUdeviceptr out, bias;
  double alpha, beta;
  /* The output's row stride and batch strides (cmx__gpu_gemm): 0 / NULL
   * for a row-major output. */
  int64_t ldo;
  const int64_t* ost;
} job;

/* Runs j: the batch dims collapsed (output, a, b), the innermost one a
 * strided batch, the outer ones a loop. */
static cmx_status run_job(job* j) {
  cublasLtHandle_t h;
  cmx_status st = cmx__cublaslt_handle(j->dev, j->op, &h);
  if (st != CMX_OK) return st;
  int64_t shape[CMX_MAX_NDIM], so[CMX_MAX_NDIM], sa[CMX_MAX_NDIM],
      sb[CMX_MAX_NDIM], ldo = j->ldo ? j->ldo : j->N, step = j->M * ldo;
  for (int d = j->nb - 1; d >= 0; d--) {
    shape[d] = j->bdims[d];
    so[d] = j->ost ? j->ost[d] : step;
    step *= j->bdims[d];
    sa[d] = j->a.bst[d];
    sb[d] = j->b.bst[d];
  }
  int64_t* sts[3] = {so, sa, sb};
  int nd = cmx__layout_collapse(shape, j->nb, sts, 3);
  int64_t M = j->M;
  operand A = j->a, B = j->b;
  /* (..., M, K) @ (K, N) with a's batch stepping like rows: one product */
  if (nd == 1 && sb[0] == 0 && (A.cs == 1 || A.cols == 1)) {
    int64_t row = M > 1 ? A.rs : sa[0];
    int op;
    int64_t ld;
    if (sa[0] == M * row && so[0] == M * ldo &&
        lt_view(M * shape[0], A.cols, row, A.cs, &op, &ld)) {
      A.rows = M * shape[0];
      A.rs = row;
      M = A.rows;
      nd = 0;
    }
  }
  plan_key key;
  memset(&key, 0, sizeof key);
  key.dev = j->dev;
  key.dtype = (int)j->dt;
  key.compute = j->dt == CMX_FLOAT64                     ? COMPUTE_64F
                : j->dt == CMX_FLOAT32 && tf32_allowed() ? COMPUTE_32F_FAST_TF32
                                                         : COMPUTE_32F;
  key.epilogue = j->bias ? EPILOGUE_BIAS : EPILOGUE_DEFAULT;
  key.m = j->N;
  key.n = M;
  key.k = j->K;
  key.ldd = ldo;
  if (!lt_view(B.rows, B.cols, B.rs, B.cs, &key.opa, &key.lda) ||
      !lt_view(A.rows, A.cols, A.rs, A.cs, &key.opb, &key.ldb))
    return cmx__error(CMX_ERR_RUNTIME,
                      "[%s] an operand's layout was not packed", j->op);
  /* the strided batch: the innermost collapsed dim, if it has
   * non-negative strides and fits cuBLASLt's count */
  int64_t inner = 1, nouter = 1;
  if (nd > 0 && sa[nd - 1] >= 0 && sb[nd - 1] >= 0 &&
      shape[nd - 1] <= 0x7fffffff) {
    inner = shape[nd - 1];
    key.sd = so[nd - 1];
    key.sb = sa[nd - 1];
    key.sa = sb[nd - 1];
    nd--;
  }
  key.batch = (int32_t)inner;
  for (int d = 0; d < nd; d++) nouter *= shape[d];
  uint64_t bits = A.p | B.p | j->out | j->bias;
  int64_t e = (int64_t)j->esz;
  bits |= (uint64_t)(key.sa * e) | (uint64_t)(key.sb * e) |
          (uint64_t)(key.sd * e) | (uint64_t)(ldo * e);
  for (int d = 0; d < nd; d++)
    bits |=
        (uint64_t)(sa[d] * e) | (uint64_t)(sb[d] * e) | (uint64_t)(so[d] * e);
  key.align = alignment(bits);

  plan tmp;
  plan* pl = plan_get(&key, h, j->op, &tmp);
  if (!pl) return cmx_last_status();
  CUdeviceptr ws = 0;
  st = workspace(j->dev, pl->ws, &ws);
  float fa[2] = {(float)j->alpha, 0}, fb[2] = {(float)j->beta, 0};
  double da = j->alpha, db = j->beta;
  bool dbl = j->dt == CMX_FLOAT64;
  lt_call call = {h,
                  pl,
                  dbl ? (const void*)&da : (const void*)fa,
                  dbl ? (const void*)&db : (const void*)fb,
                  0,
                  0,
                  0,
                  j->bias,
                  ws,
                  pl->ws,
                  j->op};
  for (int64_t i = 0; i < nouter && st == CMX_OK; i++) {
    int64_t oa = 0, ob = 0, od = 0, rem = i;
    for (int d = nd - 1; d >= 0; d--) {
      int64_t idx = rem % shape[d];
      rem /= shape[d];
      oa += idx * sa[d];
      ob += idx * sb[d];
      od += idx * so[d];
    }
    call.a = B.p + (CUdeviceptr)(ob * e);
    call.b = A.p + (CUdeviceptr)(oa * e);
    call.d = j->out + (CUdeviceptr)(od * e);
    st = cmx__gpu_call_graphable(j->op, lt_run, &call);
  }
  if (pl == &tmp) {
    plan_destroy(&tmp);
    pthread_mutex_destroy(&tmp.bias_lock);
  }
  return st;
}

/* Whether c (the output's shape) is one row repeated over every other
 * dim: a bias for the epilogue. */
static bool is_bias(cmx_array c) {
  const int64_t* st = CMX__STRIDES(c);
  int nd = c->ndim;
  if (nd == 0) return false;
  if (c->dims[nd - 1] > 1 && st[nd - 1] != 1) return false;
  for (int d = 0; d < nd - 1; d++)
    if (c->dims[d] > 1 && st[d] != 0) return false;
  return true;
}

/* A product with one output row or column and no batch through cmx's
 * own matrix-vector kernels (gemv.c), where they take it: *done. */
static cmx_status try_gemv(const job* j, bool* done) {
  int64_t batch = 1;
  for (int d = 0; d < j->nb; d++) batch *= j->bdims[d];
  *done = false;
  if (batch != 1 || (j->M != 1) == (j->N != 1)) return CMX_OK;
  cmx__gpu_gemv_desc g = {.dt = j->dt, .y = j->out, .K = j->K};
  if (j->M == 1) { /* y = x @ B: B's columns are the outputs */
    g.a = j->b.p, g.x = j->a.p, g.R = j->N;
    g.so = j->b.cs, g.sk = j->b.rs, g.incx = j->a.cs;
  } else { /* y = A @ x: A's rows are the outputs */
    g.a = j->a.p, g.x = j->b.p, g.R = j->M;
    g.so = j->a.rs, g.sk = j->a.cs, g.incx = j->b.rs;
  }
  return cmx__gpu_gemv(j->op, j->dev, &g, done);
}

static cmx_status product(const cmx_primitive* prim, const char* name,
                          const cmx_array* in, int nin, cmx_array out,
                          double alpha, double beta) {
  cmx_array a = in[0], b = in[1];
  cmx_dtype dt = out->dtype;
  if (!cmx_dtype_is_inexact(dt) || a->dtype != dt || b->dtype != dt ||
      (nin > 2 && in[2]->dtype != dt))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", name,
                            cmx_dtype_name(dt));
  int dev = cmx_primitive_stream(prim).device.index;
  job j;
  memset(&j, 0, sizeof j);
  j.op = name;
  j.dev = dev;
  j.dt = dt;
  j.esz = cmx_dtype_size(dt);
  j.K = a->dims[a->ndim - 1];
  j.M = a->ndim >= 2 ? a->dims[a->ndim - 2] : 1;
  j.N = b->ndim >= 2 ? b->dims[b->ndim - 1] : 1;
  j.nb = out->ndim - (a->ndim >= 2) - (b->ndim >= 2);
  for (int d = 0; d < j.nb; d++) j.bdims[d] = out->dims[d];
  j.alpha = alpha;
  j.beta = nin > 2 ? beta : 0;
  cmx_array c = nin > 2 && j.beta != 0 ? in[2] : NULL;

  /* out starts as c (donated or copied) unless c is a bias or ignored */
  cmx_status st = CMX_OK;
  bool bias = c && j.beta == 1 && j.K > 0 && dt != CMX_FLOAT64 &&
              dt != CMX_COMPLEX64 && is_bias(c);
  if (bias) {
    st = cmx__gpu_ptr(c, dev, &j.bias);
    j.beta = 0;
  }
  if (st == CMX_OK) {
    int donated = -1;
    st = c && !bias ? cmx__gpu_alloc_out(out, &c, 1, dev, &donated)
                    : cmx_kernel_alloc(out);
    if (st == CMX_OK && c && !bias && donated < 0 && out->size > 0)
      st = cmx__gpu_copy_rowmajor(out, c, dev, name);
  }
  if (st != CMX_OK || out->size == 0) return st;
  st = cmx__gpu_ptr(out, dev, &j.out);
  if (st != CMX_OK) return st;
  cmx_kernel_mark_device_written(out);
  if (j.K == 0) { /* no terms: beta * c */
    if (!c)
      return cmx__gpu_memset(name, j.out, 0, 2, (size_t)out->size * j.esz / 2);
    if (j.beta == 1) return CMX_OK;
    return cmx_kernel_error(CMX_ERR_NOT_IMPLEMENTED,
                            "[%s] an empty inner dimension with beta other "
                            "than 0 or 1 has no gpu implementation",
                            name);
  }

  cmx_array x[2] = {a, b};
  operand* o[2] = {&j.a, &j.b};
  for (int i = 0; i < 2 && st == CMX_OK; i++) {
    setup(o[i], x[i], CMX__STRIDES(x[i]), i == 0, j.K, j.nb, j.bdims);
    st = cmx__gpu_ptr(x[i], dev, &o[i]->p);
  }
  bool done = false;
  if (st == CMX_OK && !c && !bias && j.alpha == 1) st = try_gemv(&j, &done);
  for (int i = 0; i < 2 && st == CMX_OK && !done; i++) {
    int op;
    int64_t ld;
    if (!lt_view(o[i]->rows, o[i]->cols, o[i]->rs, o[i]->cs, &op, &ld))
      st = pack(o[i], x[i], i == 0, j.K, j.nb, j.bdims, dev, name);
  }
  if (st == CMX_OK && !done) st = run_job(&j);
  if (st == CMX_ERR_NOT_IMPLEMENTED && bias) {
    /* no algorithm with the bias epilogue: start from c instead */
    cmx_clear_error();
    j.bias = 0;
    j.beta = 1;
    st = cmx__gpu_copy_rowmajor(out, c, dev, name);
    if (st == CMX_OK) st = run_job(&j);
  }
  if (j.a.packed) cmx__buffer_release(j.a.packed);
  if (j.b.packed) cmx__buffer_release(j.b.packed);
  return st;
}

cmx_status cmx__gpu_matmul(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  return product(p, "matmul", in, 2, out[0], 1.0, 0.0);
}

cmx_status cmx__gpu_addmm(const cmx_primitive* p, const cmx_array* in, int nin,
                          const cmx_array* out, int nout) {
  (void)nout;
  const cmx__addmm_params* q = cmx_primitive_params(p);
  return product(p, "addmm", in, nin, out[0], q->alpha, q->beta);
}

/* ---------------- products for other kernels ---------------- */

cmx_status cmx__gpu_gemm(const char* op, int dev, const cmx__gpu_gemm_desc* g) {
  job j;
  memset(&j, 0, sizeof j);
  j.op = op;
  j.dev = dev;
  j.dt = g->dt;
  j.esz = cmx_dtype_size(g->dt);
  j.M = g->M;
  j.N = g->N;
  j.K = g->K;
  j.alpha = 1;
  j.nb = g->batch > 1 ? 1 : 0;
  j.bdims[0] = g->batch;
  j.out = g->d;
  j.ldo = g->d_rs;
  j.ost = &g->d_bs;
  j.a = (operand){.p = g->a,
                  .rows = g->M,
                  .cols = g->K,
                  .rs = g->a_rs,
                  .cs = g->a_cs,
                  .bst = {g->a_bs}};
  j.b = (operand){.p = g->b,
                  .rows = g->K,
                  .cols = g->N,
                  .rs = g->b_rs,
                  .cs = g->b_cs,
                  .bst = {g->b_bs}};
  if (g->M == 0 || g->N == 0 || g->batch == 0) return CMX_OK;
  return run_job(&j);
}

/* ---------------- GatherMM ---------------- */

/* The matrices of x (rows x cols each, over its batch dims) picked by idx,
 * as a row-major stack of idx->size matrices in *out (a new buffer; x is
 * packed row-major first when it is not). */
static cmx_status pick(cmx_array x, cmx_array idx, const char* which, int dev,
                       size_t esz, cmx__buffer** out) {
  int64_t block = x->dims[x->ndim - 2] * x->dims[x->ndim - 1];
  int64_t nblocks = block ? x->size / block : 0;
  CUdeviceptr src;
  cmx__buffer* packed = NULL;
  cmx_status st = cmx__gpu_ptr(x, dev, &src);
  if (st == CMX_OK && !(x->flags & CMX__FLAG_ROW_CONTIG)) {
    st = cmx__gpu_pack_rowmajor(x, dev, "gather_mm", &packed);
    if (packed) src = packed->dev;
  }
  *out = NULL;
  if (st == CMX_OK) {
    *out =
        cmx__device_hooks->alloc_device((size_t)(idx->size * block) * esz, dev);
    if (!*out) st = cmx_last_status();
  }
  if (st == CMX_OK)
    st = cmx__gpu_gather_blocks("gather_mm", which, dev, (*out)->dev, src, esz,
                                idx, nblocks, block);
  if (packed) cmx__buffer_release(packed);
  return st;
}

cmx_status cmx__gpu_gather_mm(const cmx_primitive* p, const cmx_array* in,
                              int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  cmx_array a = in[0], b = in[1], li = in[2], ri = in[3], o = out[0];
  cmx_dtype dt = o->dtype;
  if (!cmx_dtype_is_inexact(dt) || a->dtype != dt || b->dtype != dt)
    return cmx_kernel_error(CMX_ERR_TYPE, "[gather_mm] unsupported dtype %s",
                            cmx_dtype_name(dt));
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  job j;
  memset(&j, 0, sizeof j);
  j.op = "gather_mm";
  j.dev = cmx_primitive_stream(p).device.index;
  j.dt = dt;
  j.esz = cmx_dtype_size(dt);
  j.M = a->dims[a->ndim - 2];
  j.K = a->dims[a->ndim - 1];
  j.N = b->dims[b->ndim - 1];
  j.alpha = 1;
  st = cmx__gpu_ptr(o, j.dev, &j.out);
  if (st != CMX_OK) return st;
  cmx_kernel_mark_device_written(o);
  if (j.K == 0)
    return cmx__gpu_memset("gather_mm", j.out, 0, 2,
                           (size_t)o->size * j.esz / 2);
  /* the picked matrices as contiguous stacks, one product per index */
  cmx__buffer *sa = NULL, *sb = NULL;
  st = pick(a, li, "lhs", j.dev, j.esz, &sa);
  if (st == CMX_OK) st = pick(b, ri, "rhs", j.dev, j.esz, &sb);
  if (st == CMX_OK) {
    j.nb = 1;
    j.bdims[0] = li->size;
    j.a = (operand){.p = sa->dev,
                    .rows = j.M,
                    .cols = j.K,
                    .rs = j.K,
                    .cs = 1,
                    .bst = {j.M * j.K}};
    j.b = (operand){.p = sb->dev,
                    .rows = j.K,
                    .cols = j.N,
                    .rs = j.N,
                    .cs = 1,
                    .bst = {j.K * j.N}};
    st = run_job(&j);
  }
  if (sa) cmx__buffer_release(sa);
  if (sb) cmx__buffer_release(sb);
  return st;
}
