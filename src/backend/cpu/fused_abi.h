/* The calling convention between libcmx and the C kernels compile
 * generates for fused regions (backend/cpu/compiled.c). The generated
 * source embeds this header, so both sides see one definition.
 *
 * The kernel is `void cmx_fused_main(const cmx_fk_args*)`. Arrays are the
 * region's outputs (row-major contiguous: fresh, or an argument's buffer
 * given to the output, see inplace) then its arguments; strides are in
 * elements, already broadcast to the index space and collapsed (size-1 dims
 * dropped, jointly contiguous dims merged). */
#ifndef CMX_BACKEND_CPU_FUSED_ABI_H
#define CMX_BACKEND_CPU_FUSED_ABI_H

#include <stdint.h>

typedef void (*cmx_fk_range_fn)(void* ctx, int64_t begin, int64_t end);

typedef struct cmx_fk_args {
  int64_t n;              /* elements of the index space (> 0) */
  int ndim;               /* collapsed dims (>= 1) */
  const int64_t* shape;   /* ndim */
  int narr;               /* outputs, then arguments */
  char* const* ptrs;      /* element 0 of each array */
  const int64_t* strides; /* strides[array * ndim + dim] */
  int flat;               /* ndim == 1 and every stride is 0 or 1 */
  int inner_unit;         /* every innermost stride is 0 or 1 */
  /* Rows (of the innermost dim) a block of the tiled walk takes, 0 for
   * the row-by-row walk: with inner_unit, ndim >= 2, every output's rows
   * consecutive in memory, and rows short enough that several fill a
   * block (CMX_FK_BLOCK elements). */
  int64_t tile;
  /* Per output, 1 when it shares its buffer with an argument of the same
   * layout: the kernel writes each block of it only after reading that
   * block of every argument. */
  const unsigned char* inplace;
  /* The library's thread pool: fn(ctx, b, e) over [0, n) in chunks of at
   * least grain (inline when small). */
  void (*parallel_for)(int64_t n, int64_t grain, cmx_fk_range_fn fn, void* ctx);
} cmx_fk_args;

typedef void (*cmx_fk_main_fn)(const cmx_fk_args* args);

#endif
