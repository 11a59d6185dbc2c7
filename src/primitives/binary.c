/* Binary elementwise primitives. */
#include "backend/cpu/kernels.h"
#include "backend/cuda/kernels.h"
#include "primitives/registry.h"
#include "transforms/rules.h"

CMX__VTABLE(Add, .eval_cpu = cmx__cpu_binary, .eval_gpu = cmx__gpu_binary,
            .vjp = cmx__vjp_add, .jvp = cmx__jvp_add);
CMX__VTABLE(Subtract, .eval_cpu = cmx__cpu_binary,
            .eval_gpu = cmx__gpu_binary);
CMX__VTABLE(Multiply, .eval_cpu = cmx__cpu_binary,
            .eval_gpu = cmx__gpu_binary, .vjp = cmx__vjp_multiply,
            .jvp = cmx__jvp_multiply);
CMX__VTABLE(Divide, .eval_cpu = cmx__cpu_binary);
CMX__VTABLE(FloorDivide, .eval_cpu = cmx__cpu_binary);
CMX__VTABLE(Remainder, .eval_cpu = cmx__cpu_binary);
CMX__VTABLE(Power, .eval_cpu = cmx__cpu_binary);
CMX__VTABLE(Maximum, .eval_cpu = cmx__cpu_binary);
CMX__VTABLE(Minimum, .eval_cpu = cmx__cpu_binary);
CMX__VTABLE(ArcTan2, .eval_cpu = cmx__cpu_binary);
CMX__VTABLE(LogAddExp, .eval_cpu = cmx__cpu_binary);
CMX__VTABLE(Equal, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(NotEqual, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(Less, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(LessEqual, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(Greater, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(GreaterEqual, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(LogicalAnd, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(LogicalOr, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(LogicalXor, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(BitwiseAnd, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(BitwiseOr, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(BitwiseXor, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(LeftShift, .eval_cpu = cmx__cpu_compare);
CMX__VTABLE(RightShift, .eval_cpu = cmx__cpu_compare);
