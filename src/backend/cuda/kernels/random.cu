// RandomBits (src/backend/cuda/random.c): counter-mode threefry2x32 with
// the layout of primitives/random.h, the CPU's bits exactly. Item t of
// the grid is counter pair j = t % h of key t / h (h = ceil(words / 2)):
// for j < half = floor(words / 2) the pair (j, h + j) gives words j and
// h + j; for j == half (odd word counts) the pair (half, 0) gives word
// half. Each key's block is bpk bytes; a partial last word keeps its low
// (little-endian) bytes.

__device__ __forceinline__ void cmx_tf_round(unsigned& a, unsigned& b, int r) {
  a += b;
  b = __funnelshift_l(b, b, r);
  b ^= a;
}

// threefry2x32, 20 rounds, of the pair (x0, x1) under key (k0, k1).
__device__ __forceinline__ void cmx_threefry(unsigned k0, unsigned k1,
                                             unsigned& x0, unsigned& x1) {
  const unsigned k2 = k0 ^ k1 ^ 0x1BD11BDAu;
  const unsigned ks[3] = {k0, k1, k2};
  unsigned a = x0 + k0, b = x1 + k1;
#pragma unroll
  for (int g = 0; g < 5; g++) {
    if (g % 2 == 0) {
      cmx_tf_round(a, b, 13);
      cmx_tf_round(a, b, 15);
      cmx_tf_round(a, b, 26);
      cmx_tf_round(a, b, 6);
    } else {
      cmx_tf_round(a, b, 17);
      cmx_tf_round(a, b, 29);
      cmx_tf_round(a, b, 16);
      cmx_tf_round(a, b, 24);
    }
    a += ks[(g + 1) % 3];
    b += ks[(g + 2) % 3] + (unsigned)g + 1u;
  }
  x0 = a;
  x1 = b;
}

// Word w (value v) of a key block at blk of bpk bytes; whole 4-byte
// stores when every block is a whole number of words.
__device__ __forceinline__ void cmx_put_word(unsigned char* blk,
                                             long long bpk, long long w,
                                             unsigned v, bool words) {
  long long at = 4 * w;
  if (words) {
    *(unsigned*)(blk + at) = v;
    return;
  }
  for (int b = 0; b < 4 && at + b < bpk; b++)
    blk[at + b] = (unsigned char)(v >> (8 * b));
}

// keys: uint32 words of the key array, word q of the row-major (K..., 2)
// array at element offset L(q) (array 1 of L).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_random_bits)
extern "C" __global__ void cmx_random_bits(
    const unsigned* keys, unsigned char* o, long long total, long long h,
    long long half, long long bpk, const CMX_GRID_CONST cmx_layout_n<2> L) {
  CMX_GRID_WAIT();
  const bool words = bpk % 4 == 0;
  const long long nt = cmx_nthreads();
  for (long long t = cmx_tid(); t < total; t += nt) {
    long long key = t / h, j = t - key * h;
    long long off0[1], off1[1];
    cmx_offsets<long long, 0>(L, 2 * key, off0);
    cmx_offsets<long long, 0>(L, 2 * key + 1, off1);
    unsigned x0 = (unsigned)j, x1 = j < half ? (unsigned)(h + j) : 0u;
    cmx_threefry(keys[off0[0]], keys[off1[0]], x0, x1);
    unsigned char* blk = o + key * bpk;
    cmx_put_word(blk, bpk, j, x0, words);
    if (j < half) cmx_put_word(blk, bpk, h + j, x1, words);
  }
}
#endif
