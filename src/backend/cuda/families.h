/* The built-in GPU kernel families, one line each (an X-macro list, no
 * include guard): CMX__GPU_FAMILY(name) declares cmx__gpu_family_<name>,
 * a cmx__gpu_family defined in src/backend/cuda/<family>.c beside its
 * eval_gpu kernels. The registry (family.c) walks this list, and with it
 * every variant of every kernel (tests compile them all). */
CMX__GPU_FAMILY(elementwise)
CMX__GPU_FAMILY(convert)
CMX__GPU_FAMILY(copy)
CMX__GPU_FAMILY(gather)
CMX__GPU_FAMILY(scatter)
CMX__GPU_FAMILY(creation)
CMX__GPU_FAMILY(random)
CMX__GPU_FAMILY(reduce)
CMX__GPU_FAMILY(softmax)
CMX__GPU_FAMILY(scan)
CMX__GPU_FAMILY(sort)
CMX__GPU_FAMILY(linalg)
CMX__GPU_FAMILY(fft)
CMX__GPU_FAMILY(fast)
CMX__GPU_FAMILY(quantized)
CMX__GPU_FAMILY(conv)
CMX__GPU_FAMILY(hadamard)
CMX__GPU_FAMILY(sdpa)
CMX__GPU_FAMILY(gemv)
CMX__GPU_FAMILY(cross_entropy)
