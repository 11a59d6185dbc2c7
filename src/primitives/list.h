/* The one list of cmx's primitives: X(Name, flags).
 *
 * Generated from it (primitives/registry.h): the id enum CMX__P_<Name>, the
 * flags CMX__PF_<Name>, the vtable declarations cmx__vt_<Name>, and the table
 * of all vtables (a primitive listed here and not defined fails to link).
 * Define a vtable in src/primitives/<family>.c with
 *   CMX__VTABLE(Name, .vjp = ..., .output_shapes = ..., .equal = ...);
 * and register its kernels in each backend's table by id
 * (src/backend/cpu/kernel_table.c, src/backend/cuda/kernel_table.c): cmx's
 * own vtables name no kernel. Keep each family's entries together, in the
 * family's section.
 */
#define CMX__EW (CMX_PRIM_ELEMENTWISE | CMX_PRIM_FUSABLE)

#define CMX__PRIMITIVES(X)                                \
  /* ---- copy and conversion (unary.c) ---- */           \
  X(AsType, CMX__EW)                                      \
  X(Copy, CMX__EW)                                        \
  /* ---- creation (creation.c) ---- */                   \
  X(Arange, 0)                                            \
  X(Linspace, 0)                                          \
  X(Full, 0)                                              \
  X(Eye, 0)                                               \
  X(Tri, 0)                                               \
  X(Tril, 0)                                              \
  X(Triu, 0)                                              \
  /* ---- file reads (io.c) ---- */                       \
  X(Load, 0)                                              \
  /* ---- unary elementwise (unary.c) ---- */             \
  X(Abs, CMX__EW)                                         \
  X(Sign, CMX__EW)                                        \
  X(Negative, CMX__EW)                                    \
  X(Square, CMX__EW)                                      \
  X(Sqrt, CMX__EW)                                        \
  X(Rsqrt, CMX__EW)                                       \
  X(Exp, CMX__EW)                                         \
  X(Expm1, CMX__EW)                                       \
  X(Log, CMX__EW)                                         \
  X(Log2, CMX__EW)                                        \
  X(Log10, CMX__EW)                                       \
  X(Log1p, CMX__EW)                                       \
  X(Erf, CMX__EW)                                         \
  X(ErfInv, CMX__EW)                                      \
  X(Sin, CMX__EW)                                         \
  X(Cos, CMX__EW)                                         \
  X(Tan, CMX__EW)                                         \
  X(ArcSin, CMX__EW)                                      \
  X(ArcCos, CMX__EW)                                      \
  X(ArcTan, CMX__EW)                                      \
  X(Sinh, CMX__EW)                                        \
  X(Cosh, CMX__EW)                                        \
  X(Tanh, CMX__EW)                                        \
  X(ArcSinh, CMX__EW)                                     \
  X(ArcCosh, CMX__EW)                                     \
  X(ArcTanh, CMX__EW)                                     \
  X(Sigmoid, CMX__EW)                                     \
  X(Floor, CMX__EW)                                       \
  X(Ceil, CMX__EW)                                        \
  X(Trunc, CMX__EW)                                       \
  X(Round, CMX__EW)                                       \
  X(IsNan, CMX__EW)                                       \
  X(IsInf, CMX__EW)                                       \
  X(IsFinite, CMX__EW)                                    \
  X(IsPosInf, CMX__EW)                                    \
  X(IsNegInf, CMX__EW)                                    \
  X(LogicalNot, CMX__EW)                                  \
  X(Conjugate, CMX__EW)                                   \
  X(Real, CMX__EW)                                        \
  X(Imag, CMX__EW)                                        \
  X(BitwiseInvert, CMX__EW)                               \
  X(StopGradient, CMX_PRIM_ELEMENTWISE | CMX_PRIM_VIEW)   \
  X(Identity, CMX_PRIM_ELEMENTWISE | CMX_PRIM_VIEW)       \
  /* ---- binary elementwise (binary.c) ---- */           \
  X(Add, CMX__EW)                                         \
  X(Subtract, CMX__EW)                                    \
  X(Multiply, CMX__EW)                                    \
  X(Divide, CMX__EW)                                      \
  X(FloorDivide, CMX__EW)                                 \
  X(Remainder, CMX__EW)                                   \
  X(Power, CMX__EW)                                       \
  X(Maximum, CMX__EW)                                     \
  X(Minimum, CMX__EW)                                     \
  X(ArcTan2, CMX__EW)                                     \
  X(LogAddExp, CMX__EW)                                   \
  X(Equal, CMX__EW)                                       \
  X(NotEqual, CMX__EW)                                    \
  X(Less, CMX__EW)                                        \
  X(LessEqual, CMX__EW)                                   \
  X(Greater, CMX__EW)                                     \
  X(GreaterEqual, CMX__EW)                                \
  X(LogicalAnd, CMX__EW)                                  \
  X(LogicalOr, CMX__EW)                                   \
  X(LogicalXor, CMX__EW)                                  \
  X(BitwiseAnd, CMX__EW)                                  \
  X(BitwiseOr, CMX__EW)                                   \
  X(BitwiseXor, CMX__EW)                                  \
  X(LeftShift, CMX__EW)                                   \
  X(RightShift, CMX__EW)                                  \
  /* ---- ternary elementwise (ternary.c) ---- */         \
  X(Select, CMX__EW)                                      \
  /* ---- reductions (reduce.c) ---- */                   \
  X(Reduce, 0)                                            \
  X(ArgReduce, 0)                                         \
  X(LogSumExp, 0)                                         \
  X(Softmax, 0)                                           \
  X(Var, 0)                                               \
  /* ---- shape and views (shape.c) ---- */               \
  X(Broadcast, CMX_PRIM_VIEW)                             \
  X(Transpose, CMX_PRIM_VIEW)                             \
  X(Squeeze, CMX_PRIM_VIEW)                               \
  X(ExpandDims, CMX_PRIM_VIEW)                            \
  X(Slice, CMX_PRIM_VIEW)                                 \
  X(AsStrided, CMX_PRIM_VIEW)                             \
  /* views when the input's layout allows, else copies */ \
  X(Reshape, CMX_PRIM_VIEW)                               \
  X(Contiguous, CMX_PRIM_VIEW)                            \
  X(View, CMX_PRIM_VIEW)                                  \
  X(SliceUpdate, 0)                                       \
  X(Concatenate, 0)                                       \
  X(Pad, 0)                                               \
  /* a view of a diagonal (shape.c) */                    \
  X(Diagonal, CMX_PRIM_VIEW)                              \
  /* ---- indexing (indexing.c) ---- */                   \
  X(Gather, 0)                                            \
  X(Scatter, 0)                                           \
  X(GatherAxis, 0)                                        \
  X(ScatterAxis, 0)                                       \
  /* ---- sort and scan (sort.c, scan.c) ---- */          \
  X(Sort, 0)                                              \
  X(ArgSort, 0)                                           \
  X(Partition, 0)                                         \
  X(ArgPartition, 0)                                      \
  X(SearchSorted, 0)                                      \
  X(Scan, 0)                                              \
  /* ---- random numbers (random.c) ---- */               \
  X(RandomBits, CMX_PRIM_RANDOM)                          \
  X(CovSqrt, 0)                                           \
  /* ---- convolution (conv.c) ---- */                    \
  X(Convolution, 0)                                       \
  /* ---- matrix products (matmul.c, matmul_gather.c) */  \
  X(Matmul, 0)                                            \
  X(AddMM, 0)                                             \
  X(GatherMM, 0)                                          \
  X(SegmentedMM, 0)                                       \
  /* ---- hadamard transform (hadamard.c) ---- */         \
  X(Hadamard, 0)                                          \
  /* ---- mx.fast (fast.c) ---- */                        \
  X(RMSNorm, 0)                                           \
  X(AddRMSNorm, 0)                                        \
  X(LayerNorm, 0)                                         \
  X(RoPE, 0)                                              \
  X(RoPEMulti, 0)                                         \
  X(ScaledDotProductAttention, 0)                         \
  X(CrossEntropy, 0)                                      \
  /* ---- quantization (quantized.c) ---- */              \
  X(Quantize, 0)                                          \
  X(Dequantize, 0)                                        \
  X(QuantizedMatmul, 0)                                   \
  X(QuantizedMatmulSwiGLU, 0)                             \
  X(AddRMSNormQuantizedMatmul, 0)                         \
  /* ---- depends (depends.c) ---- */                     \
  X(Depends, 0)                                           \
  /* ---- transforms (transforms/custom.c) ---- */        \
  X(CustomTransforms, 0)                                  \
  /* ---- factorizations (linalg.c) ---- */               \
  X(LUF, 0)                                               \
  X(QRF, 0)                                               \
  X(SVD, 0)                                               \
  X(Inverse, 0)                                           \
  X(Cholesky, 0)                                          \
  X(Eigh, 0)                                              \
  X(Eig, 0)                                               \
  X(Solve, 0)                                             \
  X(SolveTriangular, 0)                                   \
  /* ---- fourier transforms (fft.c) ---- */              \
  X(FFT, 0)                                               \
  /* ---- collectives (distributed.c) ---- */            \
  X(AllReduce, 0)                                         \
  X(AllGather, 0)                                         \
  X(ReduceScatter, 0)                                     \
  X(Send, 0)                                              \
  X(Recv, 0)                                              \
  /* ---- compile's fused regions (compiled.c) ---- */    \
  X(Compiled, 0)                                          \
  /* end of list */
