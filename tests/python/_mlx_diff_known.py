"""Cases of the differential suite where cmx disagrees with MLX and
should not: open work of issue 20, each id with what differs (the
suite's message shows both outcomes). A listed case must still
disagree (strict): when a fix makes it agree, drop its line. Cases
where cmx differs on purpose are in _mlx_diff.DIFFERENCES instead."""

KNOWN = {
    'binary/floor_divide/pyscalar-bfloat16/3':
        'open: MLX rounds the bfloat16 quotient to bfloat16 before the floor '
        '(3 // 0.3008 gives 10), cmx floors the float32 quotient (9)',
    'transform/grad_masked_scatter':
        'open: MLX raises ValueError ([masked_scatter] Cannot calculate VJP '
        'with respect to mask); cmx sets a[mask] = scalar as where(mask, '
        'scalar, a), whose gradient with respect to the mask is zero',
}
