/* The table of every primitive's vtable, generated from list.h, and its
 * registration with core (which then knows the built-ins by identity). */
#include "primitives/registry.h"

#include "core/backend.h"

const cmx_primitive_vtable* const cmx__all_primitives[] = {
#define X(name, flags) &cmx__vt_##name,
    CMX__PRIMITIVES(X)
#undef X
        NULL};

CMX__REGISTER(register_builtins) {
  cmx__builtins_register(cmx__all_primitives, CMX__NUM_PRIMITIVES);
}
