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
  /* ---- unary elementwise (unary.c) ---- */               \
  /* ---- binary elementwise (binary.c) ---- */             \
  X(Add, CMX__EW)                                           \
  /* ---- ternary elementwise (ternary.c) ---- */           \
  /* ---- reductions (reduce.c) ---- */                     \
  X(Reduce, 0)                                              \
  X(ArgReduce, 0)                                           \
  X(LogSumExp, 0)                                           \
  X(Softmax, 0)                                             \
  X(Var, 0)                                                 \
  /* ---- shape and views (shape.c) ---- */                 \
  X(Broadcast, CMX_PRIM_VIEW)                               \
  /* ---- matrix products (matmul.c) ---- */                \
  /* ---- gpu-only test primitives (gpu.c) ---- */          \
  /* end of list */
