/* The one list of cmx's primitives: X(Name, flags).
 *
 * Generated from it (primitives/registry.h): the id enum CMX__P_<Name>, the
 * flags CMX__PF_<Name>, the vtable declarations cmx__vt_<Name>, and the table
 * of all vtables (a primitive listed here and not defined fails to link).
 * Define a vtable in src/primitives/<family>.c with
 *   CMX__VTABLE(Name, .eval_cpu = ..., .vjp = ...);
 * Keep each family's entries together, in the family's section.
 */
#define CMX__EW (CMX_PRIM_ELEMENTWISE | CMX_PRIM_FUSABLE)

#define CMX__PRIMITIVES(X)                                  \
  /* ---- copy and conversion (unary.c) ---- */             \
  X(AsType, CMX__EW)                                        \
  X(Copy, CMX__EW)                                          \
  /* ---- creation (creation.c) ---- */                    \
  X(Arange, 0)                                              \
  X(Linspace, 0)                                            \
  X(Full, 0)                                                \
  X(Eye, 0)                                                 \
  X(Tri, 0)                                                 \
  X(Tril, 0)                                                \
  X(Triu, 0)                                                \
  /* ---- unary elementwise (unary.c) ---- */               \
  /* ---- binary elementwise (binary.c) ---- */             \
  X(Add, CMX__EW)                                           \
  /* ---- ternary elementwise (ternary.c) ---- */           \
  /* ---- reductions (reduce.c) ---- */                     \
  /* ---- shape and views (shape.c) ---- */                 \
  X(Broadcast, CMX_PRIM_VIEW)                               \
  X(Transpose, CMX_PRIM_VIEW)                               \
  X(Squeeze, CMX_PRIM_VIEW)                                 \
  X(ExpandDims, CMX_PRIM_VIEW)                              \
  X(Slice, CMX_PRIM_VIEW)                                   \
  X(AsStrided, CMX_PRIM_VIEW)                               \
  /* views when the input's layout allows, else copies */   \
  X(Reshape, CMX_PRIM_VIEW)                                 \
  X(Contiguous, CMX_PRIM_VIEW)                              \
  X(View, CMX_PRIM_VIEW)                                    \
  X(SliceUpdate, 0)                                         \
  X(Concatenate, 0)                                         \
  X(Pad, 0)                                                 \
  /* ---- matrix products (matmul.c) ---- */                \
  X(Matmul, 0)                                              \
  X(AddMM, 0)                                               \
  /* ---- gpu-only test primitives (gpu.c) ---- */          \
  /* end of list */
