/* The factorization primitives: LUF, QRF, SVD, Inverse, Cholesky, Eigh,
 * Eig, Solve, SolveTriangular (contracts in primitives/linalg.h). */
#include "primitives/linalg.h"

#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

/* A shape of the input's batch axes followed by the given trailing dims. */
static void batch_shape(const cmx_array a, cmx_shape* o, int ntail, int64_t t0,
                        int64_t t1) {
  o->ndim = a->ndim - 2 + ntail;
  memcpy(o->dims, a->dims, (size_t)(a->ndim - 2) * sizeof(int64_t));
  if (ntail > 0) o->dims[a->ndim - 2] = t0;
  if (ntail > 1) o->dims[a->ndim - 1] = t1;
}

static int64_t rows(cmx_array a) {
  return a->dims[a->ndim - 2];
}
static int64_t cols(cmx_array a) {
  return a->dims[a->ndim - 1];
}
static int64_t kdim(cmx_array a) {
  return rows(a) < cols(a) ? rows(a) : cols(a);
}

static cmx_status luf_shapes(const cmx_primitive* p, const cmx_array* in,
                             int nin, cmx_shape* o, int nout) {
  (void)p, (void)nin, (void)nout;
  batch_shape(in[0], &o[0], 2, rows(in[0]), cols(in[0]));
  batch_shape(in[0], &o[1], 1, kdim(in[0]), 0);
  batch_shape(in[0], &o[2], 1, rows(in[0]), 0);
  return CMX_OK;
}

static cmx_status qrf_shapes(const cmx_primitive* p, const cmx_array* in,
                             int nin, cmx_shape* o, int nout) {
  (void)p, (void)nin, (void)nout;
  batch_shape(in[0], &o[0], 2, rows(in[0]), kdim(in[0]));
  batch_shape(in[0], &o[1], 2, kdim(in[0]), cols(in[0]));
  return CMX_OK;
}

static cmx_status svd_shapes(const cmx_primitive* p, const cmx_array* in,
                             int nin, cmx_shape* o, int nout) {
  (void)nin, (void)nout;
  if (!((const cmx__svd_params*)cmx_primitive_params(p))->uv) {
    batch_shape(in[0], &o[0], 1, kdim(in[0]), 0);
    return CMX_OK;
  }
  batch_shape(in[0], &o[0], 2, rows(in[0]), rows(in[0]));
  batch_shape(in[0], &o[1], 1, kdim(in[0]), 0);
  batch_shape(in[0], &o[2], 2, cols(in[0]), cols(in[0]));
  return CMX_OK;
}

/* Eigh and Eig: values (..., N), vectors (..., N, N). */
static cmx_status eig_shapes(const cmx_primitive* p, const cmx_array* in,
                             int nin, cmx_shape* o, int nout) {
  (void)p, (void)nin;
  batch_shape(in[0], &o[0], 1, cols(in[0]), 0);
  if (nout > 1) batch_shape(in[0], &o[1], 2, cols(in[0]), cols(in[0]));
  return CMX_OK;
}

/* Inverse, Cholesky: a's shape. */
static cmx_status like_a(const cmx_primitive* p, const cmx_array* in, int nin,
                         cmx_shape* o, int nout) {
  (void)p, (void)nin, (void)nout;
  batch_shape(in[0], &o[0], 2, rows(in[0]), cols(in[0]));
  return CMX_OK;
}

/* Solve, SolveTriangular: b's shape. */
static cmx_status like_b(const cmx_primitive* p, const cmx_array* in, int nin,
                         cmx_shape* o, int nout) {
  (void)p, (void)nin, (void)nout;
  batch_shape(in[1], &o[0], 2, rows(in[1]), cols(in[1]));
  return CMX_OK;
}

static void svd_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__svd_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "SVD(compute_uv=%d)", q->uv);
}
static void inverse_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__inverse_params* q = cmx_primitive_params(p);
  snprintf(buf, size, q->tri ? "Inverse(tri, upper=%d)" : "Inverse", q->upper);
}
static void uplo_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__uplo_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "%s(upper=%d)", cmx_primitive_name(p), q->upper);
}
static void eigh_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__eigh_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "Eigh(UPLO=%s, vectors=%d)", q->upper ? "U" : "L",
           q->vectors);
}

/* Kernels: the backends' kernel tables (backend/cpu/kernel_table.c). The
 * parameter structs are plain ints, compared and hashed as bytes. */
#define LINALG_SLOTS(name, shapes)                                          \
  .vjp = cmx__vjp_##name, .jvp = cmx__jvp_##name, .vmap = cmx__vmap_linalg, \
  .output_shapes = shapes, .equal = cmx__params_equal_bytes,                \
  .hash = cmx__params_hash_bytes

CMX__VTABLE(LUF, LINALG_SLOTS(luf, luf_shapes));
CMX__VTABLE(QRF, LINALG_SLOTS(qrf, qrf_shapes));
CMX__VTABLE(SVD, LINALG_SLOTS(svd, svd_shapes), .print = svd_print);
CMX__VTABLE(Inverse, LINALG_SLOTS(inverse, like_a), .print = inverse_print);
CMX__VTABLE(Cholesky, LINALG_SLOTS(cholesky, like_a), .print = uplo_print);
CMX__VTABLE(Eigh, LINALG_SLOTS(eigh, eig_shapes), .print = eigh_print);
CMX__VTABLE(Eig, LINALG_SLOTS(eig, eig_shapes));
CMX__VTABLE(Solve, LINALG_SLOTS(solve, like_b));
CMX__VTABLE(SolveTriangular, LINALG_SLOTS(solve_triangular, like_b),
            .print = uplo_print);
