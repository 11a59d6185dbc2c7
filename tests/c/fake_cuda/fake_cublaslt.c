/* A no-op cuBLASLt (built as noop/libcublasLt.so.13 beside the fake
 * driver) for scripts/host-profile.sh: with the fake driver's no-op mode
 * (FAKE_CUDA_NOOP=1), matrix products get a handle, descriptors, one
 * heuristic result and a "successful" cublasLtMatmul that computes
 * nothing, so programs whose steps multiply matrices (a training step)
 * run their host side to the end. It lives in its own folder so that the
 * fake-driver tests, which need real products to fail on the fake, never
 * load it. Only the entry points cmx resolves (cublaslt.c) are here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int status; /* CUBLAS_STATUS_SUCCESS = 0 */
enum { OK = 0, ERR_ALLOC = 3, ERR_INVALID = 7 };
typedef struct {
  uint64_t data[8];
} algo_t;
typedef struct {
  algo_t algo;
  size_t workspaceSize;
  status state;
  float wavesCount;
  int reserved[4];
} heuristic_t;

/* Every opaque object is a small heap block, so that creating and
 * destroying them costs what an allocation costs. */
static status make(void** out) {
  if (!out) return ERR_INVALID;
  *out = malloc(64);
  return *out ? OK : ERR_ALLOC;
}
static status drop(void* p) {
  free(p);
  return OK;
}

status cublasLtCreate(void** h) { return make(h); }
status cublasLtDestroy(void* h) { return drop(h); }
size_t cublasLtGetVersion(void) { return 130000; }
const char* cublasLtGetStatusName(status s) {
  return s == OK ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_FAKE_ERROR";
}
const char* cublasLtGetStatusString(status s) {
  return s == OK ? "success" : "fake error";
}
status cublasLtMatmulDescCreate(void** d, int compute, int scale) {
  (void)compute, (void)scale;
  return make(d);
}
status cublasLtMatmulDescDestroy(void* d) { return drop(d); }
status cublasLtMatmulDescSetAttribute(void* d, int a, const void* b, size_t n) {
  (void)a, (void)b, (void)n;
  return d ? OK : ERR_INVALID;
}
status cublasLtMatrixLayoutCreate(void** l, int type, uint64_t rows,
                                  uint64_t cols, int64_t ld) {
  (void)type, (void)rows, (void)cols, (void)ld;
  return make(l);
}
status cublasLtMatrixLayoutDestroy(void* l) { return drop(l); }
status cublasLtMatrixLayoutSetAttribute(void* l, int a, const void* b,
                                        size_t n) {
  (void)a, (void)b, (void)n;
  return l ? OK : ERR_INVALID;
}
status cublasLtMatmulPreferenceCreate(void** p) { return make(p); }
status cublasLtMatmulPreferenceDestroy(void* p) { return drop(p); }
status cublasLtMatmulPreferenceSetAttribute(void* p, int a, const void* b,
                                            size_t n) {
  (void)a, (void)b, (void)n;
  return p ? OK : ERR_INVALID;
}
status cublasLtMatmulAlgoGetHeuristic(void* h, void* op, void* a, void* b,
                                      void* c, void* d, void* pref,
                                      int requested, heuristic_t* results,
                                      int* returned) {
  (void)h, (void)op, (void)a, (void)b, (void)c, (void)d, (void)pref;
  if (requested < 1 || !results || !returned) return ERR_INVALID;
  memset(results, 0, sizeof *results);
  results->wavesCount = 1.0f;
  *returned = 1;
  return OK;
}
status cublasLtMatmul(void* h, void* op, const void* alpha, const void* a,
                      void* ad, const void* b, void* bd, const void* beta,
                      const void* c, void* cd, void* d, void* dd,
                      const algo_t* algo, void* ws, size_t wss, void* stream) {
  (void)h, (void)op, (void)alpha, (void)a, (void)ad, (void)b, (void)bd;
  (void)beta, (void)c, (void)cd, (void)d, (void)dd, (void)algo, (void)ws;
  (void)wss, (void)stream;
  return OK;
}
