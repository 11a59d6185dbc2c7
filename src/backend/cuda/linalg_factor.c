/* The factorizations on the GPU (linalg.c says how): QR (Xgeqrf then
 * orgqr per matrix), LU (Xgetrf per matrix, its pivots turned into the
 * CPU's row order) and Eig (Xgeev per matrix, CUDA 12.6 and later; complex64
 * input too, its values written straight to the output). */
#include <math.h>
#include <string.h>

#include "backend/cuda/kernels_linalg.h"
#include "backend/cuda/linalg_job.h"
#include "primitives/linalg.h"

/* ---------------- QR and LU (looped 64-bit API) ---------------- */
typedef struct {
  CUdeviceptr a, tau, piv, info, ws;
  size_t ws_bytes;
  int lwork;
} fact_ctx;

/* One matrix b of the batch each (cmx__la_each). */
static cusolverStatus_t geqrf_one(cmx__la_job* j, void* ctx, int64_t b) {
  fact_ctx* c = ctx;
  int64_t m = j->m, n = j->n, k = m < n ? m : n, e = j->esz;
  int t = cmx__la_dtype(j);
  return cmx__sv.cusolverDnXgeqrf(
      j->h.dn, j->h.params, m, n, t, CMX__PTR(c->a + b * m * n * e), m, t,
      CMX__PTR(c->tau + b * k * e), t, CMX__PTR(c->ws), c->ws_bytes, j->host_ws,
      j->host_bytes, (int*)CMX__PTR(c->info) + b);
}

static cusolverStatus_t orgqr_one(cmx__la_job* j, void* ctx, int64_t b) {
  fact_ctx* c = ctx;
  int64_t m = j->m, n = j->n, k = m < n ? m : n, e = j->esz;
  return cmx__sv.orgqr[j->dbl](j->h.dn, (int)m, (int)k, (int)k,
                               CMX__PTR(c->a + b * m * n * e), (int)m,
                               CMX__PTR(c->tau + b * k * e), CMX__PTR(c->ws),
                               c->lwork, (int*)CMX__PTR(c->info) + b);
}

static cusolverStatus_t getrf_one(cmx__la_job* j, void* ctx, int64_t b) {
  fact_ctx* c = ctx;
  int64_t m = j->m, n = j->n, k = m < n ? m : n;
  int t = cmx__la_dtype(j);
  return cmx__sv.cusolverDnXgetrf(
      j->h.dn, j->h.params, m, n, t, CMX__PTR(c->a + b * m * n * j->esz), m,
      (int64_t*)CMX__PTR(c->piv) + b * k, t, CMX__PTR(c->ws), c->ws_bytes,
      j->host_ws, j->host_bytes, (int*)CMX__PTR(c->info) + b);
}

typedef struct {
  CUdeviceptr a, w, vr, info, ws;
  size_t ws_bytes;
  int jobvr;
} geev_ctx;

static cusolverStatus_t geev_one(cmx__la_job* j, void* ctx, int64_t b) {
  geev_ctx* c = ctx;
  int64_t n = j->n, e = j->esz;
  int t = cmx__la_dtype(j), tc = j->dbl ? CMX__C_64F : CMX__C_32F;
  int64_t wstep = j->cplx ? n * e : 2 * n * e; /* n complex values */
  return cmx__sv.cusolverDnXgeev(
      j->h.dn, j->h.params, CMX__EIG_NOVECTOR, c->jobvr, n, t,
      CMX__PTR(c->a + b * n * n * e), n, tc, CMX__PTR(c->w + b * wstep), t,
      NULL, 1, t, c->vr ? CMX__PTR(c->vr + b * n * n * e) : NULL, c->vr ? n : 1,
      t, CMX__PTR(c->ws), c->ws_bytes, j->host_ws, j->host_bytes,
      (int*)CMX__PTR(c->info) + b);
}

/* ---------------- the kernels ---------------- */
cmx_status cmx__gpu_qrf(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout) {
  (void)nin;
  cmx__la_job j;
  bool empty;
  cmx_status st = cmx__la_begin(&j, p, "linalg::qr", in[0], out, nout, &empty);
  if (st != CMX_OK) return st;
  if (empty)
    return cmx__la_finish(&j, cmx__la_fill_empty(&j, out, nout, false), out,
                          nout);
  int64_t m = j.m, n = j.n, k = m < n ? m : n, e = j.esz;
  int t = cmx__la_dtype(&j);
  fact_ctx c = {0};
  CUdeviceptr src = cmx__la_ptr(&j, in[0], &st),
              q_out = cmx__la_ptr(&j, out[0], &st),
              r_out = cmx__la_ptr(&j, out[1], &st);
  if (st == CMX_OK)
    st = cmx__la_scratch(&j, (size_t)(j.batch * m * n * e), &c.a);
  if (st == CMX_OK) st = cmx__la_scratch(&j, (size_t)(j.batch * k * e), &c.tau);
  if (st == CMX_OK) st = cmx__la_words(&j, j.batch, &c.info);
  if (st == CMX_OK) st = cmx__la_transpose(&j, src, c.a, j.batch, m, n, m * n);
  if (st == CMX_OK) {
    size_t hb = 0;
    cmx__solver_lock(j.dev);
    cusolverStatus_t r = cmx__sv.cusolverDnXgeqrf_bufferSize(
        j.h.dn, j.h.params, m, n, t, CMX__PTR(c.a), m, t, CMX__PTR(c.tau), t,
        &c.ws_bytes, &hb);
    int lw = 0;
    if (!r)
      r = cmx__sv.orgqr_bufferSize[j.dbl](j.h.dn, (int)m, (int)k, (int)k,
                                          CMX__PTR(c.a), (int)m,
                                          CMX__PTR(c.tau), &lw);
    cmx__solver_unlock(j.dev);
    if (r) st = cmx__cusolver_fail(j.op, "QR workspace query", r);
    c.lwork = lw;
    if ((size_t)lw * (size_t)e > c.ws_bytes)
      c.ws_bytes = (size_t)lw * (size_t)e;
    if (st == CMX_OK) st = cmx__la_scratch(&j, c.ws_bytes, &c.ws);
    if (st == CMX_OK) st = cmx__la_host_ws(&j, hb);
  }
  if (st == CMX_OK) st = cmx__la_each(&j, geqrf_one, &c, "Xgeqrf");
  if (st == CMX_OK) {
    cmx__gpu_args a;
    cmx__gpu_args_init(&a);
    long long bb = j.batch, mm = m, nn = n, kk = k;
    CMX__GPU_ARG(&a, c.a);
    CMX__GPU_ARG(&a, r_out);
    CMX__GPU_ARG(&a, bb);
    CMX__GPU_ARG(&a, mm);
    CMX__GPU_ARG(&a, nn);
    CMX__GPU_ARG(&a, kk);
    st = cmx__la_launch(&j, CMX__LA_K_QR_R, &a, j.batch * k * n);
  }
  if (st == CMX_OK) st = cmx__la_each(&j, orgqr_one, &c, "orgqr");
  /* Q: the first k columns (column-major, ld m) of each factored matrix */
  if (st == CMX_OK)
    st = cmx__la_transpose(&j, c.a, q_out, j.batch, k, m, m * n);
  return cmx__la_finish(&j, st, out, nout);
}

cmx_status cmx__gpu_luf(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout) {
  (void)nin;
  cmx__la_job j;
  bool empty;
  cmx_status st =
      cmx__la_begin(&j, p, "linalg::lu_factor", in[0], out, nout, &empty);
  if (st != CMX_OK) return st;
  int64_t m = j.m, n = j.n, k = m < n ? m : n, e = j.esz;
  fact_ctx c = {0};
  CUdeviceptr src = cmx__la_ptr(&j, in[0], &st),
              lu = cmx__la_ptr(&j, out[0], &st),
              piv = cmx__la_ptr(&j, out[1], &st),
              rows = cmx__la_ptr(&j, out[2], &st), perm = 0;
  if (empty) st = cmx__la_fill_empty(&j, out, nout, false);
  if (st == CMX_OK && !empty) {
    int t = cmx__la_dtype(&j);
    size_t hb = 0;
    st = cmx__la_scratch(&j, (size_t)(j.batch * m * n * e), &c.a);
    if (st == CMX_OK)
      st = cmx__la_scratch(&j, (size_t)(j.batch * k * 8), &c.piv);
    if (st == CMX_OK) st = cmx__la_words(&j, j.batch, &c.info);
    if (st == CMX_OK)
      st = cmx__la_transpose(&j, src, c.a, j.batch, m, n, m * n);
    cmx__solver_lock(j.dev);
    cusolverStatus_t r = st == CMX_OK
                             ? cmx__sv.cusolverDnXgetrf_bufferSize(
                                   j.h.dn, j.h.params, m, n, t, CMX__PTR(c.a),
                                   m, t, &c.ws_bytes, &hb)
                             : 0;
    cmx__solver_unlock(j.dev);
    if (r) st = cmx__cusolver_fail(j.op, "Xgetrf_bufferSize", r);
    if (st == CMX_OK) st = cmx__la_scratch(&j, c.ws_bytes, &c.ws);
    if (st == CMX_OK) st = cmx__la_host_ws(&j, hb);
    if (st == CMX_OK) st = cmx__la_each(&j, getrf_one, &c, "Xgetrf");
    if (st == CMX_OK) st = cmx__la_transpose(&j, c.a, lu, j.batch, n, m, m * n);
  }
  /* pivots and row order (the identity order when k == 0) */
  if (st == CMX_OK && j.batch * m > 0)
    st = cmx__la_scratch(&j, (size_t)(j.batch * m * 4), &perm);
  if (st == CMX_OK && j.batch * m > 0) {
    cmx__gpu_args a;
    cmx__gpu_args_init(&a);
    long long bb = j.batch, mm = m, kk = empty ? 0 : k;
    CMX__GPU_ARG(&a, c.piv);
    CMX__GPU_ARG(&a, piv);
    CMX__GPU_ARG(&a, rows);
    CMX__GPU_ARG(&a, perm);
    CMX__GPU_ARG(&a, bb);
    CMX__GPU_ARG(&a, mm);
    CMX__GPU_ARG(&a, kk);
    st = cmx__la_launch(&j, CMX__LA_K_LUF_PIV, &a, j.batch);
  }
  return cmx__la_finish(&j, st, out, nout);
}

cmx_status cmx__gpu_eig(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout) {
  (void)nin;
  int vectors = ((const cmx__eig_params*)cmx_primitive_params(p))->vectors;
  cmx__la_job j;
  bool empty;
  cmx_status st =
      cmx__la_setup_complex(&j, p, "linalg::eig", in[0], out, nout, &empty);
  if (st == CMX_OK && !empty) st = cmx__solver_get(j.dev, j.op, &j.h);
  if (st != CMX_OK) return st;
  if (empty)
    return cmx__la_finish(&j, cmx__la_fill_empty(&j, out, nout, false), out,
                          nout);
  if (!cmx__sv.cusolverDnXgeev)
    return cmx__la_finish(
        &j,
        cmx_kernel_error(CMX_ERR_NOT_IMPLEMENTED,
                         "[linalg::eig] needs cusolverDnXgeev "
                         "(cuSOLVER of CUDA 12.6 or later), which "
                         "the loaded cuSOLVER lacks."),
        out, nout);
  int64_t n = j.n, e = j.esz;
  int t = cmx__la_dtype(&j), tc = j.dbl ? CMX__C_64F : CMX__C_32F;
  geev_ctx c = {.jobvr = vectors ? CMX__EIG_VECTOR : CMX__EIG_NOVECTOR};
  CUdeviceptr flags = 0, src = cmx__la_ptr(&j, in[0], &st), s = 0;
  CUdeviceptr ow = cmx__la_ptr(&j, out[0], &st),
              ov = vectors ? cmx__la_ptr(&j, out[1], &st) : 0;
  if (st == CMX_OK) st = cmx__la_sanitized(&j, src, &s, &flags);
  if (st == CMX_OK)
    st = cmx__la_scratch(&j, (size_t)(j.batch * n * n * e), &c.a);
  if (st == CMX_OK) st = cmx__la_transpose(&j, s, c.a, j.batch, n, n, n * n);
  if (st == CMX_OK && j.cplx) /* complex64: values straight to the output */
    c.w = ow;
  else if (st == CMX_OK)
    st = cmx__la_scratch(&j, (size_t)(j.batch * 2 * n * e), &c.w);
  if (st == CMX_OK && vectors)
    st = cmx__la_scratch(&j, (size_t)(j.batch * n * n * e), &c.vr);
  if (st == CMX_OK) st = cmx__la_words(&j, j.batch, &c.info);
  if (st == CMX_OK) {
    size_t hb = 0;
    cmx__solver_lock(j.dev);
    cusolverStatus_t r = cmx__sv.cusolverDnXgeev_bufferSize(
        j.h.dn, j.h.params, CMX__EIG_NOVECTOR, c.jobvr, n, t, CMX__PTR(c.a), n,
        tc, CMX__PTR(c.w), t, NULL, 1, t, c.vr ? CMX__PTR(c.vr) : NULL,
        c.vr ? n : 1, t, &c.ws_bytes, &hb);
    cmx__solver_unlock(j.dev);
    if (r) st = cmx__cusolver_fail(j.op, "Xgeev_bufferSize", r);
    if (st == CMX_OK) st = cmx__la_scratch(&j, c.ws_bytes, &c.ws);
    if (st == CMX_OK) st = cmx__la_host_ws(&j, hb);
  }
  if (st == CMX_OK) st = cmx__la_each(&j, geev_one, &c, "Xgeev");
  if (st == CMX_OK && j.cplx) { /* vectors: the column-major result^T */
    if (vectors) st = cmx__la_transpose(&j, c.vr, ov, j.batch, n, n, n * n);
    if (st == CMX_OK) st = cmx__la_fill_where(&j, ow, 2 * n, flags, NAN);
    if (st == CMX_OK && vectors)
      st = cmx__la_fill_where(&j, ov, 2 * n * n, flags, NAN);
  } else if (st == CMX_OK) {
    cmx__gpu_args a;
    cmx__gpu_args_init(&a);
    long long bb = j.batch, nn = n;
    CMX__GPU_ARG(&a, c.w);
    CMX__GPU_ARG(&a, c.vr);
    CMX__GPU_ARG(&a, ow);
    CMX__GPU_ARG(&a, ov);
    CMX__GPU_ARG(&a, bb);
    CMX__GPU_ARG(&a, nn);
    CMX__GPU_ARG(&a, flags);
    st = cmx__la_launch(&j, CMX__LA_K_EIG_PACK, &a, j.batch * n);
  }
  if (st == CMX_OK)
    st = cmx__la_check_info(&j, c.info, flags, "Eigensolver did not converge.");
  return cmx__la_finish(&j, st, out, nout);
}
