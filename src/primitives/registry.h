/* Generated declarations from the primitive list (see list.h). */
#ifndef CMX_PRIMITIVES_REGISTRY_H
#define CMX_PRIMITIVES_REGISTRY_H

#include "cmx/primitive.h"
#include "primitives/list.h"

enum cmx__prim_id {
#define X(name, flags) CMX__P_##name,
  CMX__PRIMITIVES(X)
#undef X
      CMX__NUM_PRIMITIVES
};

enum cmx__prim_flags {
#define X(name, flags) CMX__PF_##name = (flags),
  CMX__PRIMITIVES(X)
#undef X
      CMX__PF_END_
};

#define X(name, flags) extern const cmx_primitive_vtable cmx__vt_##name;
CMX__PRIMITIVES(X)
#undef X

/* Every primitive's vtable, indexed by id. */
extern const cmx_primitive_vtable* const cmx__all_primitives[];

/* Defines the vtable of a listed primitive. */
#define CMX__VTABLE(nm, ...)                  \
  const cmx_primitive_vtable cmx__vt_##nm = { \
      .name = #nm, .flags = CMX__PF_##nm, .id = CMX__P_##nm, __VA_ARGS__}

#endif
