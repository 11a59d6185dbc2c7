"""Cases of the differential suite where cmx disagrees with MLX and
should not: open work of issue 20, each id with what differs (the
suite's message shows both outcomes). A listed case must still
disagree (strict): when a fix makes it agree, drop its line. Cases
where cmx differs on purpose are in _mlx_diff.DIFFERENCES instead."""

KNOWN = {
}
