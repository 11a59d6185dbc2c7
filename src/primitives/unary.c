/* Unary primitives: conversion and copies, and the unary elementwise
 * family (one primitive per op, as MLX). Their transform rules are in
 * transforms/rules_unary.c (rounding, sign and predicates: zero); vmap is
 * the generic elementwise rule. */
#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

/* Derivatives pass between inexact dtypes only (an integer or bool side
 * has none). */
CMX__VTABLE(AsType, .vjp = cmx__vjp_astype, .jvp = cmx__jvp_astype,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Copy, .vjp = cmx__vjp_identity, .jvp = cmx__jvp_identity,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);

CMX__VTABLE(Abs, .vjp = cmx__vjp_abs, .jvp = cmx__jvp_abs,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Sign, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Negative, .vjp = cmx__vjp_negative, .jvp = cmx__jvp_negative,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Square, .vjp = cmx__vjp_square, .jvp = cmx__jvp_square,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Sqrt, .vjp = cmx__vjp_sqrt, .jvp = cmx__jvp_sqrt,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Rsqrt, .vjp = cmx__vjp_rsqrt, .jvp = cmx__jvp_rsqrt,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Exp, .vjp = cmx__vjp_exp, .jvp = cmx__jvp_exp,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Expm1, .vjp = cmx__vjp_expm1, .jvp = cmx__jvp_expm1,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Log, .vjp = cmx__vjp_log, .jvp = cmx__jvp_log,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Log2, .vjp = cmx__vjp_log2, .jvp = cmx__jvp_log2,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Log10, .vjp = cmx__vjp_log10, .jvp = cmx__jvp_log10,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Log1p, .vjp = cmx__vjp_log1p, .jvp = cmx__jvp_log1p,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Erf, .vjp = cmx__vjp_erf, .jvp = cmx__jvp_erf,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(ErfInv, .vjp = cmx__vjp_erfinv, .jvp = cmx__jvp_erfinv,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Sin, .vjp = cmx__vjp_sin, .jvp = cmx__jvp_sin,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Cos, .vjp = cmx__vjp_cos, .jvp = cmx__jvp_cos,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Tan, .vjp = cmx__vjp_tan, .jvp = cmx__jvp_tan,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(ArcSin, .vjp = cmx__vjp_arcsin, .jvp = cmx__jvp_arcsin,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(ArcCos, .vjp = cmx__vjp_arccos, .jvp = cmx__jvp_arccos,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(ArcTan, .vjp = cmx__vjp_arctan, .jvp = cmx__jvp_arctan,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Sinh, .vjp = cmx__vjp_sinh, .jvp = cmx__jvp_sinh,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Cosh, .vjp = cmx__vjp_cosh, .jvp = cmx__jvp_cosh,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Tanh, .vjp = cmx__vjp_tanh, .jvp = cmx__jvp_tanh,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(ArcSinh, .vjp = cmx__vjp_arcsinh, .jvp = cmx__jvp_arcsinh,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(ArcCosh, .vjp = cmx__vjp_arccosh, .jvp = cmx__jvp_arccosh,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(ArcTanh, .vjp = cmx__vjp_arctanh, .jvp = cmx__jvp_arctanh,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Sigmoid, .vjp = cmx__vjp_sigmoid, .jvp = cmx__jvp_sigmoid,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Floor, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Ceil, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Trunc, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(IsNan, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(IsInf, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(IsFinite, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(IsPosInf, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(IsNegInf, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(LogicalNot, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Conjugate, .vjp = cmx__vjp_conjugate, .jvp = cmx__jvp_conjugate,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Real, .vjp = cmx__vjp_real, .jvp = cmx__jvp_real,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Imag, .vjp = cmx__vjp_imag, .jvp = cmx__jvp_imag,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(BitwiseInvert, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Round, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(StopGradient, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
/* A transform's stand-in for a lazy or traced input: a view. */
CMX__VTABLE(Identity, .vjp = cmx__vjp_identity, .jvp = cmx__jvp_identity,
            .output_shapes = cmx__shapes_elementwise,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
