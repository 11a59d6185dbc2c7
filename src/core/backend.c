/* The backend and built-in primitive registries (see core/backend.h).
 * Everything is registered by constructors before main runs and only
 * read afterwards, so plain globals need no lock. */
#include "core/backend.h"

#include "core/internal.h"

static const cmx__backend* g_backends[2]; /* by cmx_device_type */
static const cmx_primitive_vtable* const* g_builtins;
static int g_nbuiltins;

void cmx__backend_register(const cmx__backend* b) {
  CMX__ASSERT(b && (b->type == CMX_CPU || b->type == CMX_GPU));
  g_backends[b->type] = b;
}

const cmx__backend* cmx__backend_get(cmx_device_type t) {
  return t == CMX_CPU || t == CMX_GPU ? g_backends[t] : NULL;
}

void cmx__builtins_register(const cmx_primitive_vtable* const* vts, int n) {
  g_builtins = vts;
  g_nbuiltins = n;
}

int cmx__builtin_count(void) {
  return g_nbuiltins;
}

const cmx_primitive_vtable* cmx__builtin(int i) {
  return i >= 0 && i < g_nbuiltins ? g_builtins[i] : NULL;
}

bool cmx__is_builtin(const cmx_primitive_vtable* vt) {
  return vt && vt->id >= 0 && vt->id < g_nbuiltins && g_builtins[vt->id] == vt;
}

cmx_kernel_fn cmx__kernel_lookup(const cmx_primitive_vtable* vt,
                                 cmx_device_type dev) {
  if (!vt) return NULL;
  if (!cmx__is_builtin(vt))
    return dev == CMX_GPU ? vt->eval_gpu : dev == CMX_CPU ? vt->eval_cpu : NULL;
  const cmx__backend* b = cmx__backend_get(dev);
  return b && vt->id < b->nkernels ? b->kernels[vt->id] : NULL;
}
