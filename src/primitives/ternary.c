/* Ternary elementwise primitives. */
#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

/* Rules in transforms/rules_binary.c; vmap is the generic elementwise
 * rule. */
CMX__VTABLE(Select, .vjp = cmx__vjp_select, .jvp = cmx__jvp_select,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
