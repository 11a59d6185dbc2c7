/* The table of every primitive's vtable, generated from list.h. */
#include "primitives/registry.h"

const cmx_primitive_vtable* const cmx__all_primitives[] = {
#define X(name, flags) &cmx__vt_##name,
    CMX__PRIMITIVES(X)
#undef X
        NULL};
