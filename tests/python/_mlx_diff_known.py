"""Cases of the differential suite where cmx disagrees with MLX and
should not: open work of issue 20, each id with what differs (the
suite's message shows both outcomes). A listed case must still
disagree (strict): when a fix makes it agree, drop its line. Cases
where cmx differs on purpose are in _mlx_diff.DIFFERENCES instead."""

KNOWN = {
    'transform/grad_index_vjp':
        "open: MLX raises ValueError ([gather] Cannot calculate VJP with respect to indices; use stop_gradient); cmx gives the indices no cotangent (zeros). Raising broke cmx's C rule checks, which ask every input's VJP: to do with them",
    'transform/grad_index_argnum':
        'open: as transform/grad_index_vjp',
    'transform/grad_index_along':
        'open: as transform/grad_index_vjp ([gather_axis])',
    'transform/grad_index_argmax':
        'open: as transform/grad_index_vjp (indices computed from the input)',
    'transform/jvp_nondiff/greater':
        "open: MLX's zero tangent of a boolean output has the tangent's dtype (float32); cmx's has the output's (bool). Changed and reverted: cmx's C rule tests pin 'no tangent' for predicates",
    'transform/jvp_nondiff/equal':
        'open: as transform/jvp_nondiff/greater',
    'transform/jvp_nondiff/isnan':
        'open: as transform/jvp_nondiff/greater',
    'transform/jvp_chain/logical_not_of_compare':
        'open: as transform/jvp_nondiff/greater',
    'transform/jvp_int_sum/int32':
        'open: MLX carries integer tangents forward (jvp of an integer sum is the sum of the tangents); cmx gives integer primals zero tangents (its C rule tests pin this)',
    'transform/jvp_int_sum/uint8':
        'open: as transform/jvp_int_sum/int32',
    'transform/jvp_int_sum/int64':
        'open: as transform/jvp_int_sum/int32',
    'transform/jvp_int_mul/int32':
        'open: as transform/jvp_int_sum/int32',
    'transform/jvp_int_mul/uint8':
        'open: as transform/jvp_int_sum/int32',
    'transform/jvp_int_mul/int64':
        'open: as transform/jvp_int_sum/int32',
    'transform/jvp_int/astype_then_float':
        'open: as transform/jvp_int_sum/int32',
    'transform/jvp_int/bool_sum':
        'open: as transform/jvp_int_sum/int32',
    'binary/floor_divide/pyscalar-bfloat16/3':
        'open: MLX rounds the bfloat16 quotient to bfloat16 before the floor '
        '(3 // 0.3008 gives 10), cmx floors the float32 quotient (9)',
    'transform/grad_masked_scatter':
        'open: MLX raises ValueError ([masked_scatter] Cannot calculate VJP '
        'with respect to mask); cmx sets a[mask] = scalar as where(mask, '
        'scalar, a), whose gradient with respect to the mask is zero',
}
