/* CPU kernels of the collectives: the group's backend moves the host
 * buffers (the op layer made the inputs row-major contiguous). */
#include "distributed/distributed.h"

#include "backend/cpu/kernels.h"
#include "core/layout.h"
#include "primitives/distributed.h"

static const char* reduce_name(int red) {
  return red == CMX__RED_SUM   ? "all_sum"
         : red == CMX__RED_MAX ? "all_max"
                               : "all_min";
}

static size_t nbytes(cmx_array a) {
  return (size_t)cmx_array_size(a) * cmx_dtype_size(cmx_array_dtype(a));
}

CMX__KERNEL(cmx__cpu_all_reduce) {
  (void)nin, (void)nout;
  const cmx__dist_params* q = cmx_primitive_params(p);
  bool donated = false;
  if (cmx_kernel_alloc_donate(out[0], in[0], &donated) != CMX_OK)
    return cmx_last_status();
  void* o = cmx_kernel_data(out[0]);
  const void* i = donated ? o : cmx_kernel_data(in[0]);
  cmx_group* g = q->group;
  return g->be->all_reduce(g->st, reduce_name(q->red), i, o,
                           (size_t)cmx_array_size(out[0]),
                           cmx_array_dtype(out[0]), (cmx__red_op)q->red);
}

CMX__KERNEL(cmx__cpu_all_gather) {
  (void)nin, (void)nout;
  const cmx__dist_params* q = cmx_primitive_params(p);
  if (cmx_kernel_alloc(out[0]) != CMX_OK) return cmx_last_status();
  cmx_group* g = q->group;
  return g->be->all_gather(g->st, "all_gather", cmx_kernel_data(in[0]),
                           cmx_kernel_data(out[0]), nbytes(in[0]));
}

CMX__KERNEL(cmx__cpu_reduce_scatter) {
  (void)nin, (void)nout;
  const cmx__dist_params* q = cmx_primitive_params(p);
  if (cmx_kernel_alloc(out[0]) != CMX_OK) return cmx_last_status();
  cmx_group* g = q->group;
  return g->be->reduce_scatter(
      g->st, "sum_scatter", cmx_kernel_data(in[0]), cmx_kernel_data(out[0]),
      (size_t)cmx_array_size(out[0]), cmx_array_dtype(out[0]));
}

/* Sends, then makes the output a view of the input (x's value). */
CMX__KERNEL(cmx__cpu_send) {
  (void)nin, (void)nout;
  const cmx__dist_params* q = cmx_primitive_params(p);
  cmx_group* g = q->group;
  if (g->be->send(g->st, "send", cmx_kernel_data(in[0]), nbytes(in[0]),
                  q->peer) != CMX_OK)
    return cmx_last_status();
  int64_t strides[CMX_MAX_NDIM];
  cmx__row_major_strides(cmx_array_shape(out[0]), cmx_array_ndim(out[0]),
                         strides);
  return cmx_kernel_set_view(out[0], in[0], 0, strides);
}

CMX__KERNEL(cmx__cpu_recv) {
  (void)in, (void)nin, (void)nout;
  const cmx__dist_params* q = cmx_primitive_params(p);
  if (cmx_kernel_alloc(out[0]) != CMX_OK) return cmx_last_status();
  cmx_group* g = q->group;
  return g->be->recv(g->st, "recv", cmx_kernel_data(out[0]), nbytes(out[0]),
                     q->peer);
}
