/* cmx's batched Jacobi kernels (src/backend/cuda/kernels/linalg.cu) run
 * on the host, for tests without a GPU: every block in turn, its threads
 * as one thread that walks each phase's items forward, or backward
 * (jh_reverse; items it sums always forward) so that a phase whose items read
 * what others write gives different results. Both dtypes: jh_eigh_f32/_f64,
 * jh_svd_f32/_f64 take the kernels' arguments. */
#ifndef CMX_TEST_JACOBI_HOST_H
#define CMX_TEST_JACOBI_HOST_H

#include <math.h>
#include <stdbool.h>

static int jh_reverse;
static unsigned char* cmx_la_host_smem;
static long long cmx_la_host_block;

#define CMX_LA_HOST 1
#define CMX_ONLY 1
#define CMX_ONLY_cmx_la_jacobi_eigh 1
#define CMX_ONLY_cmx_la_jacobi_svd 1
#define CMX_LA_KERNEL static
#define CMX_LA_DEV static inline
#define CMX_LA_TID 0
#define CMX_LA_NT 1
#define CMX_LA_SYNC() ((void)0)
#define CMX_GRID_WAIT() ((void)0)
#define CMX_LA_NAN ((T)NAN)
#define CMX_LA_BLOCK cmx_la_host_block
#define CMX_LA_SHARED(sm) unsigned char* sm = cmx_la_host_smem
#define CMX_LA_FOR_SUM(i, total) for (int i = 0; i < (total); i++)
#define CMX_LA_FOR(i, total)                                                  \
  for (int i = jh_reverse ? (total)-1 : 0; jh_reverse ? i >= 0 : i < (total); \
       i += jh_reverse ? -1 : 1)

#define T float
#define cmx_la_pair cmx_la_pair_f32
#define cmx_la_reduce cmx_la_reduce_f32
#define cmx_la_rotation cmx_la_rotation_f32
#define cmx_la_load cmx_la_load_f32
#define cmx_la_rank cmx_la_rank_f32
#define cmx_la_put cmx_la_put_f32
#define cmx_la_jacobi_eigh jh_eigh_f32
#define cmx_la_jacobi_svd jh_svd_f32
#include "backend/cuda/kernels/linalg.cu"
#undef T
#undef cmx_la_pair
#undef cmx_la_reduce
#undef cmx_la_rotation
#undef cmx_la_load
#undef cmx_la_rank
#undef cmx_la_put
#undef cmx_la_jacobi_eigh
#undef cmx_la_jacobi_svd
#define T double
#define cmx_la_pair cmx_la_pair_f64
#define cmx_la_reduce cmx_la_reduce_f64
#define cmx_la_rotation cmx_la_rotation_f64
#define cmx_la_load cmx_la_load_f64
#define cmx_la_rank cmx_la_rank_f64
#define cmx_la_put cmx_la_put_f64
#define cmx_la_jacobi_eigh jh_eigh_f64
#define cmx_la_jacobi_svd jh_svd_f64
#include "backend/cuda/kernels/linalg.cu"
#undef T

#endif
