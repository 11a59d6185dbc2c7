/* The collectives of mx.distributed as ops (contracts in
 * cmx/distributed.h, primitives in primitives/distributed.h). A group of
 * one makes no node: the reductions and gathers return x itself. */
#include "primitives/distributed.h"

#include <string.h>

#include "distributed/distributed.h"
#include "ops/ops_internal.h"

static cmx_group* group_of(cmx_group* g) {
  return g ? g : cmx_distributed_default_group();
}

/* The stream a collective runs on: the ring and MPI move host memory, so
 * their default stream is the cpu's and an explicit gpu stream is an
 * error; NCCL takes either (gpu arrays through NCCL, cpu ones over its
 * bootstrap group). */
static bool comm_stream(const char* op, cmx_group* g, cmx_stream* s) {
  bool dflt = s->index < 0 && s->device.index < 0;
  cmx_stream r;
  if (cmx_stream_resolve(&r, *s) != CMX_OK) return false;
  if (r.device.type == CMX_GPU && !g->be->gpu_all_reduce) {
    if (!dflt) {
      cmx__error(CMX_ERR_VALUE,
                 "[%s] the ring and mpi backends run on the cpu only; pass "
                 "a cpu stream",
                 op);
      return false;
    }
    if (cmx_stream_resolve(&r, cmx_stream_on(cmx_device_cpu())) != CMX_OK)
      return false;
  }
  *s = r;
  return true;
}

static cmx__dist_params params(cmx_group* g, int red, int peer) {
  cmx__dist_params q;
  memset(&q, 0, sizeof q);
  q.group = cmx_group_retain(g);
  q.red = red;
  q.peer = peer;
  return q;
}

static cmx_array collective(const char* op, const cmx_primitive_vtable* vt,
                            cmx_array x, cmx_group* g, int red,
                            const int64_t* shape, int ndim, cmx_stream s) {
  if (!comm_stream(op, g, &s)) return NULL;
  x = cmx__contiguous(x, false, s);
  if (!x) return NULL;
  cmx__dist_params q = params(g, red, -1);
  return cmx__apply(vt, &q, sizeof q, s, &x, 1, shape, ndim, x->dtype);
}

cmx_array cmx__all_reduce(cmx_array x, cmx_group* g, int red, cmx_stream s) {
  static const char* names[] = {"all_sum", "all_max", "all_min"};
  if (!CMX__ARGS(names[red], x)) return NULL;
  g = group_of(g);
  if (g->size == 1) return x;
  return collective(names[red], &cmx__vt_AllReduce, x, g, red, x->dims, x->ndim,
                    s);
}

cmx_array cmx__all_gather(cmx_array x, cmx_group* g, cmx_stream s) {
  if (!CMX__ARGS("all_gather", x)) return NULL;
  g = group_of(g);
  if (g->size == 1) return x;
  int64_t shape[CMX_MAX_NDIM];
  int nd = x->ndim ? x->ndim : 1;
  if (x->ndim == 0) {
    shape[0] = 1;
    x = cmx__reshape(x, shape, 1, s);
    if (!x) return NULL;
  }
  memcpy(shape, x->dims, sizeof(int64_t) * (size_t)nd);
  shape[0] *= g->size;
  return collective("all_gather", &cmx__vt_AllGather, x, g, 0, shape, nd, s);
}

cmx_array cmx__sum_scatter(cmx_array x, cmx_group* g, cmx_stream s) {
  if (!CMX__ARGS("sum_scatter", x)) return NULL;
  g = group_of(g);
  if (g->size == 1) return x;
  if (x->ndim < 1 || x->dims[0] % g->size)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[sum_scatter] Invalid shape: the first axis (%lld) must "
                     "be divisible by the group size (%d)",
                     (long long)(x->ndim ? x->dims[0] : 0), g->size);
  int64_t shape[CMX_MAX_NDIM];
  memcpy(shape, x->dims, sizeof(int64_t) * (size_t)x->ndim);
  shape[0] /= g->size;
  return collective("sum_scatter", &cmx__vt_ReduceScatter, x, g, 0, shape,
                    x->ndim, s);
}

static bool check_peer(const char* op, cmx_group* g, int peer) {
  if (g->size == 1) {
    cmx__error(CMX_ERR_VALUE, "[%s] Cannot %s a singleton group", op,
               !strcmp(op, "send") ? "send to" : "recv from");
    return false;
  }
  if (peer < 0 || peer >= g->size || peer == g->rank) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Invalid %s rank %d (group of size %d, this is rank %d)",
               op, !strcmp(op, "send") ? "destination" : "source", peer,
               g->size, g->rank);
    return false;
  }
  return true;
}

static cmx_array send_op(cmx_array x, int dst, cmx_group* g, cmx_stream s) {
  if (!CMX__ARGS("send", x)) return NULL;
  g = group_of(g);
  if (!check_peer("send", g, dst) || !comm_stream("send", g, &s)) return NULL;
  x = cmx__contiguous(x, false, s);
  if (!x) return NULL;
  cmx__dist_params q = params(g, 0, dst);
  return cmx__apply(&cmx__vt_Send, &q, sizeof q, s, &x, 1, x->dims, x->ndim,
                    x->dtype);
}

static cmx_array recv_op(const int64_t* shape, int ndim, cmx_dtype dt, int src,
                         cmx_group* g, cmx_stream s) {
  g = group_of(g);
  if (!check_peer("recv", g, src) || !comm_stream("recv", g, &s)) return NULL;
  if (ndim < 0 || ndim > CMX_MAX_NDIM || (ndim && !shape))
    return CMX__FAIL(CMX_ERR_VALUE, "[recv] invalid shape");
  for (int i = 0; i < ndim; i++)
    if (shape[i] < 0)
      return CMX__FAIL(CMX_ERR_VALUE, "[recv] negative dimension %lld",
                       (long long)shape[i]);
  if ((int)dt < 0 || dt > CMX_COMPLEX64)
    return CMX__FAIL(CMX_ERR_TYPE, "[recv] invalid dtype");
  cmx__dist_params q = params(g, 0, src);
  q.shape.ndim = ndim;
  for (int i = 0; i < ndim; i++) q.shape.dims[i] = shape[i];
  return cmx__apply(&cmx__vt_Recv, &q, sizeof q, s, NULL, 0, shape, ndim, dt);
}

cmx_status cmx_distributed_all_sum(cmx_array* out, cmx_array x, cmx_group* g,
                                   cmx_stream s) {
  CMX__PUBLIC(out, "all_sum", cmx__all_reduce(x, g, CMX__RED_SUM, s));
}
cmx_status cmx_distributed_all_max(cmx_array* out, cmx_array x, cmx_group* g,
                                   cmx_stream s) {
  CMX__PUBLIC(out, "all_max", cmx__all_reduce(x, g, CMX__RED_MAX, s));
}
cmx_status cmx_distributed_all_min(cmx_array* out, cmx_array x, cmx_group* g,
                                   cmx_stream s) {
  CMX__PUBLIC(out, "all_min", cmx__all_reduce(x, g, CMX__RED_MIN, s));
}
cmx_status cmx_distributed_all_gather(cmx_array* out, cmx_array x, cmx_group* g,
                                      cmx_stream s) {
  CMX__PUBLIC(out, "all_gather", cmx__all_gather(x, g, s));
}
cmx_status cmx_distributed_sum_scatter(cmx_array* out, cmx_array x,
                                       cmx_group* g, cmx_stream s) {
  CMX__PUBLIC(out, "sum_scatter", cmx__sum_scatter(x, g, s));
}
cmx_status cmx_distributed_send(cmx_array* out, cmx_array x, int dst,
                                cmx_group* g, cmx_stream s) {
  CMX__PUBLIC(out, "send", send_op(x, dst, g, s));
}
cmx_status cmx_distributed_recv(cmx_array* out, const int64_t* shape, int ndim,
                                cmx_dtype dtype, int src, cmx_group* g,
                                cmx_stream s) {
  CMX__PUBLIC(out, "recv", recv_op(shape, ndim, dtype, src, g, s));
}
cmx_status cmx_distributed_recv_like(cmx_array* out, cmx_array x, int src,
                                     cmx_group* g, cmx_stream s) {
  CMX__PUBLIC(out, "recv_like",
              CMX__ARGS("recv_like", x)
                  ? recv_op(x->dims, x->ndim, x->dtype, src, g, s)
                  : NULL);
}
