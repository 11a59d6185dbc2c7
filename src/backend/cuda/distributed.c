/* GPU kernels of the collectives: the group's backend enqueues the
 * communication on the task's CUDA stream (NCCL; see
 * src/distributed/nccl.c). Groups whose backend moves host memory only
 * (ring, MPI) run on cpu streams: the op layer sends them there, and a gpu
 * kernel refuses them with a clear error. Run on 2 GPUs (H200 x2,
 * 2026-11-28: scripts/gpu2-check.sh, test_distributed's NCCL cases and
 * both examples). */
#include "distributed/distributed.h"

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/layout.h"
#include "primitives/distributed.h"

typedef struct call {
  const cmx__dist_params* q;
  const char* op;
  CUdeviceptr in, out;
  size_t count, bytes;
  cmx_dtype dt;
  int kind; /* 0 all_reduce, 1 all_gather, 2 reduce_scatter, 3 send, 4 recv */
} call;

static cmx_status run(void* ctx, CUstream s) {
  call* c = ctx;
  cmx_group* g = c->q->group;
  const cmx__dist_backend* be = g->be;
  switch (c->kind) {
    case 0:
      return be->gpu_all_reduce(g->st, c->op, c->in, c->out, c->count, c->dt,
                                (cmx__red_op)c->q->red, s);
    case 1:
      return be->gpu_all_gather(g->st, c->op, c->in, c->out, c->bytes, s);
    case 2:
      return be->gpu_reduce_scatter(g->st, c->op, c->in, c->out, c->count,
                                    c->dt, s);
    case 3:
      return be->gpu_send(g->st, c->op, c->in, c->bytes, c->q->peer, s);
    default:
      return be->gpu_recv(g->st, c->op, c->out, c->bytes, c->q->peer, s);
  }
}

static const char* names[5] = {"all_sum", "all_gather", "sum_scatter", "send",
                               "recv"};

static cmx_status collective(const cmx_primitive* p, const cmx_array* in,
                             const cmx_array* out, int kind) {
  const cmx__dist_params* q = cmx_primitive_params(p);
  const char* op = kind == 0 ? (q->red == 1   ? "all_max"
                                : q->red == 2 ? "all_min"
                                              : "all_sum")
                             : names[kind];
  if (!q->group->be->gpu_all_reduce)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] the %s backend runs on the cpu only; use a cpu "
                      "stream (or the nccl backend for gpu arrays)",
                      op, q->group->be->name);
  int dev = cmx_primitive_stream(p).device.index;
  call c = {q, op, 0, 0, 0, 0, CMX_FLOAT32, kind};
  cmx_status st = CMX_OK;
  if (kind != 4) st = cmx__gpu_ptr(in[0], dev, &c.in);
  if (st == CMX_OK && kind != 3) {
    st = cmx_kernel_alloc(out[0]);
    if (st == CMX_OK) st = cmx__gpu_ptr(out[0], dev, &c.out);
  }
  if (st != CMX_OK) return st;
  cmx_array a = kind == 4 ? out[0] : in[0];
  c.dt = a->dtype;
  c.count = (size_t)(kind == 2 ? out[0]->size : a->size);
  c.bytes = (size_t)a->size * cmx_dtype_size(a->dtype);
  st = cmx__gpu_call(op, run, &c);
  if (st != CMX_OK) return st;
  if (kind == 3) { /* the output is x itself */
    int64_t strides[CMX_MAX_NDIM];
    cmx__row_major_strides(a->dims, a->ndim, strides);
    return cmx_kernel_set_view(out[0], in[0], 0, strides);
  }
  cmx_kernel_mark_device_written(out[0]);
  return CMX_OK;
}

#define KERNEL(name, kind)                                              \
  cmx_status name(const cmx_primitive* p, const cmx_array* in, int nin, \
                  const cmx_array* out, int nout) {                     \
    (void)nin, (void)nout;                                              \
    return collective(p, in, out, kind);                                \
  }
KERNEL(cmx__gpu_all_reduce, 0)
KERNEL(cmx__gpu_all_gather, 1)
KERNEL(cmx__gpu_reduce_scatter, 2)
KERNEL(cmx__gpu_send, 3)
KERNEL(cmx__gpu_recv, 4)
