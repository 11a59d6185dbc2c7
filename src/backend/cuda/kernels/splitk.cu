// The sum of a product's k splits, one kernel for every family that splits
// k over blocks (gemv, quantized): a family takes it by naming "splitk" in
// its preamble and cmx_splitk_sum in its kernels, its prelude defining
//   CMX_SK_T          the output type
//   CMX_SK_F          the partials' type (the accumulation type)
//   CMX_SK_FROMF(v)   CMX_SK_F -> CMX_SK_T
// y[i] = the sum over s < S of part[s * n + i], in CMX_SK_F, i < n.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_splitk_sum)
extern "C" __global__ void cmx_splitk_sum(const CMX_SK_F* part, CMX_SK_T* y,
                                          long long n, int S) {
  CMX_GRID_WAIT();
  for (long long i = cmx_tid(); i < n; i += cmx_nthreads()) {
    CMX_SK_F v = 0;
    for (int s = 0; s < S; s++) v += part[(long long)s * n + i];
    y[i] = CMX_SK_FROMF(v);
  }
}
#endif
