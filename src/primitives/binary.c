/* Binary elementwise primitives. Their transform rules are in
 * transforms/rules_binary.c (comparisons, logical and bitwise ops, shifts
 * and floor division: zero); vmap is the generic elementwise rule. */
#include "backend/cpu/kernels.h"
#include "backend/cuda/kernels.h"
#include "primitives/registry.h"
#include "transforms/rules.h"

CMX__VTABLE(Add, .eval_cpu = cmx__cpu_binary, .eval_gpu = cmx__gpu_binary,
            .vjp = cmx__vjp_add, .jvp = cmx__jvp_add);
CMX__VTABLE(Subtract, .eval_cpu = cmx__cpu_binary, .eval_gpu = cmx__gpu_binary,
            .vjp = cmx__vjp_subtract, .jvp = cmx__jvp_subtract);
CMX__VTABLE(Multiply, .eval_cpu = cmx__cpu_binary, .eval_gpu = cmx__gpu_binary,
            .vjp = cmx__vjp_multiply, .jvp = cmx__jvp_multiply);
CMX__VTABLE(Divide, .eval_cpu = cmx__cpu_binary, .vjp = cmx__vjp_divide,
            .jvp = cmx__jvp_divide);
CMX__VTABLE(FloorDivide, .eval_cpu = cmx__cpu_binary, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(Remainder, .eval_cpu = cmx__cpu_binary, .vjp = cmx__vjp_remainder,
            .jvp = cmx__jvp_remainder);
CMX__VTABLE(Power, .eval_cpu = cmx__cpu_binary, .vjp = cmx__vjp_power,
            .jvp = cmx__jvp_power);
CMX__VTABLE(Maximum, .eval_cpu = cmx__cpu_binary, .vjp = cmx__vjp_maximum,
            .jvp = cmx__jvp_maximum);
CMX__VTABLE(Minimum, .eval_cpu = cmx__cpu_binary, .vjp = cmx__vjp_minimum,
            .jvp = cmx__jvp_minimum);
CMX__VTABLE(ArcTan2, .eval_cpu = cmx__cpu_binary, .vjp = cmx__vjp_arctan2,
            .jvp = cmx__jvp_arctan2);
CMX__VTABLE(LogAddExp, .eval_cpu = cmx__cpu_binary, .vjp = cmx__vjp_logaddexp,
            .jvp = cmx__jvp_logaddexp);
CMX__VTABLE(Equal, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(NotEqual, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(Less, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(LessEqual, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(Greater, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(GreaterEqual, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(LogicalAnd, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(LogicalOr, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(LogicalXor, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(BitwiseAnd, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(BitwiseOr, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(BitwiseXor, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(LeftShift, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
CMX__VTABLE(RightShift, .eval_cpu = cmx__cpu_compare, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
