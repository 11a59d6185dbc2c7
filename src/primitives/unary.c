/* Unary primitives: conversion and copies, and the unary elementwise
 * family (one primitive per op, as MLX). */
#include "backend/cpu/kernels.h"
#include "backend/cuda/kernels.h"
#include "primitives/registry.h"
#include "transforms/rules.h"

CMX__VTABLE(AsType, .eval_cpu = cmx__cpu_astype, .eval_gpu = cmx__gpu_copy);
CMX__VTABLE(Copy, .eval_cpu = cmx__cpu_astype, .eval_gpu = cmx__gpu_copy);

CMX__VTABLE(Abs, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Sign, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Negative, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Square, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Sqrt, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Rsqrt, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Exp, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Expm1, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Log, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Log2, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Log10, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Log1p, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Erf, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(ErfInv, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Sin, .eval_cpu = cmx__cpu_unary, .vjp = cmx__vjp_sin,
            .jvp = cmx__jvp_sin);
CMX__VTABLE(Cos, .eval_cpu = cmx__cpu_unary, .vjp = cmx__vjp_cos,
            .jvp = cmx__jvp_cos);
CMX__VTABLE(Tan, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(ArcSin, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(ArcCos, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(ArcTan, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Sinh, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Cosh, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Tanh, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(ArcSinh, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(ArcCosh, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(ArcTanh, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Sigmoid, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Floor, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Ceil, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Trunc, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(IsNan, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(IsInf, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(IsFinite, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(IsPosInf, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(IsNegInf, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(LogicalNot, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Conjugate, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Real, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Imag, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(BitwiseInvert, .eval_cpu = cmx__cpu_unary);
CMX__VTABLE(Round, .eval_cpu = cmx__cpu_round);
CMX__VTABLE(StopGradient, .eval_cpu = cmx__cpu_stop_gradient,
            .eval_gpu = cmx__cpu_stop_gradient, .vjp = cmx__vjp_zero,
            .jvp = cmx__jvp_zero);
/* A transform's stand-in for a lazy or traced input: a view. */
CMX__VTABLE(Identity, .eval_cpu = cmx__cpu_stop_gradient,
            .eval_gpu = cmx__cpu_stop_gradient, .vjp = cmx__vjp_identity,
            .jvp = cmx__jvp_identity);
