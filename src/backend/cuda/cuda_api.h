/* The few CUDA driver API and NVRTC types, constants and entry points cmx
 * uses, declared here so the library has no build- or link-time CUDA
 * dependency. The driver (libcuda.so.1) and NVRTC are loaded with dlopen
 * at run time (driver.c, nvrtc.c) and their functions are reached through
 * the tables below.
 *
 * Versioned symbols: the driver keeps old ABIs under the plain names, so
 * the current ones are resolved by their versioned names, as cuda.h's
 * #defines map them (cuMemAlloc -> cuMemAlloc_v2, cuStreamDestroy ->
 * cuStreamDestroy_v2 ...). The per-thread-default-stream variants (_ptds,
 * _ptsz) are not used: cmx always passes explicit streams.
 */
#ifndef CMX_BACKEND_CUDA_API_H
#define CMX_BACKEND_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

/* ---- driver types (ABI-compatible with cuda.h) ---- */
typedef int CUresult; /* an enum in cuda.h: int-sized */
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUmemPoolHandle_st* CUmemoryPool;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphNode_st* CUgraphNode;
typedef struct CUgraphExec_st* CUgraphExec;
/* A graph edge's kind (cuda.h's CUgraphEdgeData): from_port 1
 * (CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC) with type 1
 * (CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC) lets the downstream kernel start
 * before the upstream one ends (it waits in the kernel: griddepcontrol). */
typedef struct CUgraphEdgeData {
  unsigned char from_port, to_port, type, reserved[5];
} CUgraphEdgeData;
enum {
  CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC = 1,
  CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC = 1
};
typedef struct CUkern_st* CUkernel;
typedef unsigned long long CUdeviceptr;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_READY = 600
};

/* CUdevice_attribute values. */
enum {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
  CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115
};

/* CUfunction_attribute values. */
enum {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1, /* static shared memory */
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,          /* registers a thread */
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
};

enum { CU_STREAM_NON_BLOCKING = 0x1 };
enum { CU_EVENT_DISABLE_TIMING = 0x2 };
/* CUstreamCaptureMode: captures see only the capturing thread's unsafe
 * calls (which then fail the capture). */
enum { CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1 };
/* A kernel node (CUDA_KERNEL_NODE_PARAMS_v2, CUDA 12): kern and ctx NULL
 * mean func in the current context. */
typedef struct CUDA_KERNEL_NODE_PARAMS {
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  void** kernelParams;
  void** extra;
  CUkernel kern;
  CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;
/* CUmemPool_attribute: RELEASE_THRESHOLD is the fourth enumerator. */
enum { CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4 };

/* ---- the driver entry points cmx uses ---- */
typedef struct cmx__cuda_api {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* version);
  CUresult (*cuGetErrorName)(CUresult r, const char** s);
  CUresult (*cuGetErrorString)(CUresult r, const char** s);
  CUresult (*cuDeviceGet)(CUdevice* d, int ordinal);
  CUresult (*cuDeviceGetCount)(int* n);
  CUresult (*cuDeviceGetAttribute)(int* v, int attr, CUdevice d);
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice d);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* c, CUdevice d);
  CUresult (*cuCtxSetCurrent)(CUcontext c);
  CUresult (*cuCtxGetCurrent)(CUcontext* c);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuStreamCreate)(CUstream* s, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream s); /* cuStreamDestroy_v2 */
  CUresult (*cuStreamSynchronize)(CUstream s);
  CUresult (*cuStreamWaitEvent)(CUstream s, CUevent e, unsigned flags);
  CUresult (*cuEventCreate)(CUevent* e, unsigned flags);
  CUresult (*cuEventRecord)(CUevent e, CUstream s);
  CUresult (*cuEventSynchronize)(CUevent e);
  CUresult (*cuEventQuery)(CUevent e);
  CUresult (*cuEventDestroy)(CUevent e);                 /* cuEventDestroy_v2 */
  CUresult (*cuMemAlloc)(CUdeviceptr* p, size_t bytes);  /* _v2 */
  CUresult (*cuMemFree)(CUdeviceptr p);                  /* _v2 */
  CUresult (*cuMemGetInfo)(size_t* free, size_t* total); /* _v2 */
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes,
                                CUstream s); /* _v2 */
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes,
                                CUstream s); /* _v2 */
  CUresult (*cuModuleLoadData)(CUmodule* m, const void* image);
  CUresult (*cuModuleUnload)(CUmodule m);
  CUresult (*cuModuleGetFunction)(CUfunction* f, CUmodule m, const char* name);
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy,
                             unsigned gz, unsigned bx, unsigned by, unsigned bz,
                             unsigned shared, CUstream s, void** params,
                             void** extra);
  CUresult (*cuFuncGetAttribute)(int* v, int attr, CUfunction f);
  CUresult (*cuFuncSetAttribute)(CUfunction f, int attr, int value);
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char v, size_t n,
                              CUstream s);
  CUresult (*cuMemsetD16Async)(CUdeviceptr dst, unsigned short v, size_t n,
                               CUstream s);
  CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned v, size_t n,
                               CUstream s);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                CUstream s); /* _v2 */
  /* Optional (NULL when the driver lacks them): stream-ordered
   * allocation (CUDA 11.2+) and its pool settings. */
  CUresult (*cuMemAllocAsync)(CUdeviceptr* p, size_t bytes, CUstream s);
  CUresult (*cuMemFreeAsync)(CUdeviceptr p, CUstream s);
  CUresult (*cuDeviceGetDefaultMemPool)(CUmemoryPool* pool, CUdevice d);
  CUresult (*cuMemPoolSetAttribute)(CUmemoryPool pool, int attr, void* value);
  CUresult (*cuMemPoolTrimTo)(CUmemoryPool pool, size_t keep);
  /* Optional: the card's total memory (device_info), and page-locked host
   * memory for the staging ring of host<->device copies (memory.c; without
   * them copies go from pageable memory). */
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice d); /* _v2 */
  CUresult (*cuMemHostAlloc)(void** p, size_t bytes, unsigned flags);
  CUresult (*cuMemFreeHost)(void* p);
  /* Optional: page-locking existing host memory, for device->host copies
   * straight into their destination (staging.c). */
  CUresult (*cuMemHostRegister)(void* p, size_t bytes,
                                unsigned flags); /* _v2 */
  CUresult (*cuMemHostUnregister)(void* p);
  /* Optional: CUDA graphs (CUDA 12's _v2 kernel-node ABI; graph.c batches
   * launches into graphs only when every one of these resolved). */
  CUresult (*cuGraphCreate)(CUgraph* g, unsigned flags);
  CUresult (*cuGraphDestroy)(CUgraph g);
  CUresult (*cuGraphAddKernelNode)(CUgraphNode* n, CUgraph g,
                                   const CUgraphNode* deps, size_t ndeps,
                                   const CUDA_KERNEL_NODE_PARAMS* p); /* _v2 */
  CUresult (*cuGraphAddChildGraphNode)(CUgraphNode* n, CUgraph g,
                                       const CUgraphNode* deps, size_t ndeps,
                                       CUgraph child);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec* e, CUgraph g,
                                          unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec e, CUstream s);
  CUresult (*cuGraphExecDestroy)(CUgraphExec e);
  CUresult (*cuGraphExecKernelNodeSetParams)(
      CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS* p); /* _v2 */
  CUresult (*cuGraphExecChildGraphNodeSetParams)(CUgraphExec e, CUgraphNode n,
                                                 CUgraph child);
  /* Optional: edges with data (CUDA 12.3): graph.c's programmatic
   * dependencies between kernel nodes. */
  CUresult (*cuGraphAddDependencies)(CUgraph g, const CUgraphNode* from,
                                     const CUgraphNode* to,
                                     const CUgraphEdgeData* data,
                                     size_t n);           /* _v2 */
  CUresult (*cuStreamBeginCapture)(CUstream s, int mode); /* _v2 */
  CUresult (*cuStreamEndCapture)(CUstream s, CUgraph* g);
  /* Optional: the driver's own occupancy figure, which the tests compare
   * with cmx__gpu_occupancy's. */
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int* n, CUfunction f,
                                                          int threads,
                                                          size_t dyn_shared);
} cmx__cuda_api;

/* ---- NVRTC ---- */
typedef int nvrtcResult;
typedef struct _nvrtcProgram* nvrtcProgram;
enum {
  NVRTC_SUCCESS = 0,
  NVRTC_ERROR_INVALID_OPTION = 5,
  NVRTC_ERROR_COMPILATION = 6
};

typedef struct cmx__nvrtc_api {
  const char* (*nvrtcGetErrorString)(nvrtcResult r);
  nvrtcResult (*nvrtcVersion)(int* major, int* minor);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram* p, const char* src,
                                    const char* name, int nheaders,
                                    const char* const* headers,
                                    const char* const* include_names);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram* p);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram p, int nopts,
                                     const char* const* opts);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram p, size_t* n);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram p, char* log);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram p, size_t* n);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram p, char* ptx);
  /* Optional: CUBIN output (CUDA 11.1+) and the architecture list. */
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram p, size_t* n);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram p, char* cubin);
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int* n);
  nvrtcResult (*nvrtcGetSupportedArchs)(int* archs);
} cmx__nvrtc_api;

/* ---- cuBLASLt (libcublasLt.so, loaded by cublaslt.c) ----
 * The handle and descriptors are opaque pointers; the algorithm and the
 * heuristic result are plain structs of fixed size (cublasLt.h). */
typedef int cublasStatus_t; /* CUBLAS_STATUS_SUCCESS = 0 */
typedef struct cublasLtContext* cublasLtHandle_t;
typedef struct cublasLtMatmulDescOpaque_st* cublasLtMatmulDesc_t;
typedef struct cublasLtMatrixLayoutOpaque_st* cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulPreferenceOpaque_st* cublasLtMatmulPreference_t;
typedef struct {
  uint64_t data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;
enum { CUBLAS_STATUS_SUCCESS = 0 };

typedef struct cmx__cublaslt_api {
  cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t* h);
  cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t h);
  size_t (*cublasLtGetVersion)(void);
  const char* (*cublasLtGetStatusName)(cublasStatus_t s);
  const char* (*cublasLtGetStatusString)(cublasStatus_t s);
  /* The matrix product (issue 12 builds on these). Enum arguments
   * (cublasComputeType_t, cudaDataType_t, attribute ids) are ints. */
  cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t* d,
                                             int compute_type, int scale_type);
  cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t d);
  cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t d,
                                                   int attr, const void* buf,
                                                   size_t size);
  cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t* l,
                                               int type, uint64_t rows,
                                               uint64_t cols, int64_t ld);
  cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t l);
  cublasStatus_t (*cublasLtMatrixLayoutSetAttribute)(cublasLtMatrixLayout_t l,
                                                     int attr, const void* buf,
                                                     size_t size);
  cublasStatus_t (*cublasLtMatmulPreferenceCreate)(
      cublasLtMatmulPreference_t* p);
  cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(
      cublasLtMatmulPreference_t p);
  cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(
      cublasLtMatmulPreference_t p, int attr, const void* buf, size_t size);
  cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(
      cublasLtHandle_t h, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
      cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
      cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref, int requested,
      cublasLtMatmulHeuristicResult_t* results, int* returned);
  cublasStatus_t (*cublasLtMatmul)(
      cublasLtHandle_t h, cublasLtMatmulDesc_t op, const void* alpha,
      const void* a, cublasLtMatrixLayout_t adesc, const void* b,
      cublasLtMatrixLayout_t bdesc, const void* beta, const void* c,
      cublasLtMatrixLayout_t cdesc, void* d, cublasLtMatrixLayout_t ddesc,
      const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_size,
      CUstream s);
} cmx__cublaslt_api;

#endif
