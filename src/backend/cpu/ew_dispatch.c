/* The CPU's elementwise dispatch (see ew_dispatch.h). */
#include "backend/cpu/ew_dispatch.h"

#include "backend/cpu/ew_gen.h"
#include "primitives/registry.h"

CMX__EW_UNARY_OPS(CMX__CPU_EW_DECLARE)
CMX__EW_BINARY_OPS(CMX__CPU_EW_DECLARE)
CMX__EW_COMPARE_OPS(CMX__CPU_EW_DECLARE)

#define ENTRY(Nm, ...) [CMX__P_##Nm] = cmx__cpu_rows_##Nm,
static const cmx__row_fn* const k_rows[CMX__NUM_PRIMITIVES] = {
    CMX__EW_UNARY_OPS(ENTRY) CMX__EW_BINARY_OPS(ENTRY)
        CMX__EW_COMPARE_OPS(ENTRY)};

static const cmx__cpu_ew_fast* fast_path(int id, cmx_dtype dt) {
  const cmx__cpu_ew_fast* lists[] = {cmx__cpu_ew_fast_unary,
                                     cmx__cpu_ew_fast_binary};
  for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
    for (const cmx__cpu_ew_fast* f = lists[l]; f->id >= 0; f++)
      if (f->id == id && f->dtype == dt) return f;
  return NULL;
}

cmx__row_fn cmx__cpu_ew_row(int id, cmx_dtype dt, bool generic) {
  if (id < 0 || id >= CMX__NUM_PRIMITIVES || !k_rows[id] ||
      !cmx_dtype_valid((int)dt))
    return NULL;
  const cmx__cpu_ew_fast* f = generic ? NULL : fast_path(id, dt);
  return f && f->row ? f->row : k_rows[id][dt];
}

cmx_status cmx__cpu_ew_eval(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, const void* ctx) {
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  cmx_dtype dt = in[0]->dtype;
  cmx__row_fn fn = cmx__cpu_ew_row(vt->id, dt, false);
  if (!fn)
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", vt->name,
                            cmx_dtype_name(dt));
  cmx_status st = cmx__cpu_ew_alloc(out[0], in, nin);
  if (st != CMX_OK) return st;
  const cmx__cpu_ew_fast* f = fast_path(vt->id, dt);
  if (f && f->contig && nin == 1 && out[0]->size >= f->contig_min &&
      (in[0]->flags & CMX__FLAG_ROW_CONTIG) &&
      (out[0]->flags & CMX__FLAG_ROW_CONTIG)) {
    f->contig(cmx__node_ptr(out[0]), cmx__node_ptr(in[0]), out[0]->size);
    return CMX_OK;
  }
  cmx__cpu_ew_run(out[0], in, nin, fn, ctx);
  return CMX_OK;
}
