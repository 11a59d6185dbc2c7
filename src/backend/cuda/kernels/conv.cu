// The unfolding (im2col) kernel of the GPU convolution (see
// src/backend/cuda/conv.c). CMX_T is the unit moved: one element (cmx_u16,
// cmx_u32, cmx_u64 for 2-, 4- and 8-byte dtypes) or 16 bytes of channels
// (uint4) when a group's channels are contiguous and aligned; every count
// and stride below is in units.
//
// Row r (an output position, r0 + i / rowlen) of the unfolded matrix
// holds, per group g, the input under each kernel tap t (row-major over
// the spatial dims), then each channel c of the group: column (g * taps +
// t) * cg + c. Padding and input-dilation holes read as zeros; a flipped
// kernel reads tap t from the mirrored kernel position.

typedef CMX_T T;

struct cmx_conv_geo {
  int nsp, flip, groups, taps, cg; // cg: units of channels per group
  int in[3], out[3], k[3], stride[3], lo[3], kd[3], id[3];
  long long out_sp;                // output positions per batch element
  long long xs_n, xs[3], xs_c;     // input strides (units)
};

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_conv_unfold)
extern "C" __global__ void cmx_conv_unfold(const T* x, T* u, long long r0,
                                           long long n,
                                           const CMX_GRID_CONST cmx_conv_geo g) {
  CMX_GRID_WAIT();
  const long long rowlen = (long long)g.groups * g.taps * g.cg;
  const long long nt = cmx_nthreads();
  for (long long i = cmx_tid(); i < n; i += nt) {
    const long long r = i / rowlen;
    const int col = (int)(i - r * rowlen);
    const int c = col % g.cg;
    const int gt = col / g.cg;
    int t = gt % g.taps;
    const int grp = gt / g.taps;
    const long long rr = r0 + r;
    const long long b = rr / g.out_sp;
    long long rem = rr - b * g.out_sp;
    long long off = b * g.xs_n + (long long)(grp * g.cg + c) * g.xs_c;
    bool valid = true;
    for (int d = g.nsp - 1; d >= 0; d--) {
      const long long o = rem % g.out[d];
      rem /= g.out[d];
      int kk = t % g.k[d];
      t /= g.k[d];
      if (g.flip) kk = g.k[d] - 1 - kk;
      long long v = o * g.stride[d] + (long long)kk * g.kd[d] - g.lo[d];
      if (v < 0) valid = false;
      if (g.id[d] != 1) {
        if (v % g.id[d] != 0) valid = false;
        v /= g.id[d];
      }
      if (v >= g.in[d]) valid = false;
      off += v * g.xs[d];
    }
    const T z = {};
    u[i] = valid ? x[off] : z;
  }
}
#endif
