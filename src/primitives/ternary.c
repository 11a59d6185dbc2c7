/* Ternary elementwise primitives. */
#include "primitives/registry.h"
#include "transforms/rules.h"

/* Rules in transforms/rules_binary.c; vmap is the generic elementwise
 * rule. */
CMX__VTABLE(Select, .vjp = cmx__vjp_select, .jvp = cmx__jvp_select);
