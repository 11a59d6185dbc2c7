/* Binary elementwise primitives. Their transform rules are in
 * transforms/rules_binary.c (comparisons, logical and bitwise ops, shifts
 * and floor division: zero); vmap is the generic elementwise rule. */
#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

CMX__VTABLE(Add, .vjp = cmx__vjp_add, .jvp = cmx__jvp_add,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Subtract, .vjp = cmx__vjp_subtract, .jvp = cmx__jvp_subtract,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Multiply, .vjp = cmx__vjp_multiply, .jvp = cmx__jvp_multiply,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Divide, .vjp = cmx__vjp_divide, .jvp = cmx__jvp_divide,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(FloorDivide, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Remainder, .vjp = cmx__vjp_remainder, .jvp = cmx__jvp_remainder,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Power, .vjp = cmx__vjp_power, .jvp = cmx__jvp_power,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Maximum, .vjp = cmx__vjp_maximum, .jvp = cmx__jvp_maximum,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Minimum, .vjp = cmx__vjp_minimum, .jvp = cmx__jvp_minimum,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(ArcTan2, .vjp = cmx__vjp_arctan2, .jvp = cmx__jvp_arctan2,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(LogAddExp, .vjp = cmx__vjp_logaddexp, .jvp = cmx__jvp_logaddexp,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Equal, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(NotEqual, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Less, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(LessEqual, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Greater, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(GreaterEqual, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(LogicalAnd, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(LogicalOr, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(LogicalXor, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(BitwiseAnd, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(BitwiseOr, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(BitwiseXor, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(LeftShift, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(RightShift, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
