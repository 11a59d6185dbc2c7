/* Every test case on every device: the devices the op harness (harness.h)
 * and the transform checker (tcheck.h) run their cases on, and the rules
 * that decide what a GPU case that cannot run counts as.
 *
 * Device 0 is the CPU: its results are checked against the cases'
 * references. Devices 1.. are the available GPUs: each case runs there too,
 * and its results are checked against the reference and against the CPU's
 * (exactly for integer and bool results and exact cases). A GPU case whose
 * pending graph holds a primitive without a GPU kernel (the coverage
 * table: cmx_primitive_has_kernel) is not evaluated but counted as "no gpu
 * kernel"; one that a GPU kernel refuses with CMX_ERR_NOT_IMPLEMENTED (a
 * dtype it lacks) is counted as "not implemented on the gpu". Both are
 * listed by test_summary (test.h) with the primitives and messages; any
 * other failure on a GPU is a failure. On a machine with no GPU the cases
 * run on the CPU alone.
 */
#ifndef CMX_TEST_DEVICES_H
#define CMX_TEST_DEVICES_H

#include "cmx/cmx.h"
#include "cmx/primitive.h"
#include "core/internal.h" /* a failed node's kernel status */
#include "test.h"

/* How many devices cases run on: the CPU, then each available GPU. */
static inline int h_ndevices(void) {
  return 1 +
         (cmx_is_available(cmx_device_gpu()) ? cmx_device_count(CMX_GPU) : 0);
}
/* Device i of the list above. */
static inline cmx_device h_device(int i) {
  return i == 0 ? cmx_device_cpu() : (cmx_device){CMX_GPU, i - 1};
}
static inline cmx_stream h_stream(int i) {
  return cmx_stream_on(h_device(i));
}
static inline const char* h_device_name(int i, char* buf, size_t size) {
  snprintf(buf, size, "%s:%d", i == 0 ? "cpu" : "gpu", i == 0 ? 0 : i - 1);
  return buf;
}

/* Appends name to the ", "-separated list in buf unless it is there. */
static inline void h_list_add(char* buf, size_t size, const char* name) {
  size_t n = strlen(name), len = strlen(buf);
  for (const char* p = buf; (p = strstr(p, name)); p += n)
    if ((p == buf || p[-2] == ',') && (p[n] == 0 || p[n] == ',')) return;
  snprintf(buf + len, size - len, "%s%s", len ? ", " : "", name);
}

/* The primitives of outs' pending graphs (the nodes not yet scheduled)
 * that would run on a GPU stream and have no GPU kernel, added to buf;
 * returns how many such nodes there are. */
static inline int h_missing_kernels(const cmx_array* outs, int n, char* buf,
                                    size_t size) {
  int cap = 64, top = 0, nseen = 0, missing = 0;
  cmx_array* stack = malloc((size_t)cap * sizeof *stack);
  cmx_array* seen = malloc((size_t)cap * sizeof *seen);
  for (int i = 0; i < n; i++)
    if (outs[i]) stack[top++] = outs[i];
  while (top > 0) {
    cmx_array a = stack[--top];
    bool dup = false;
    for (int i = 0; i < nseen && !dup; i++) dup = seen[i] == a;
    const cmx_primitive* p = dup ? NULL : cmx_array_primitive(a);
    if (!p) continue;
    if (nseen == cap || top + 64 > cap) {
      cap *= 2;
      stack = realloc(stack, (size_t)cap * sizeof *stack);
      seen = realloc(seen, (size_t)cap * sizeof *seen);
    }
    seen[nseen++] = a;
    if (cmx_array_stream(a).device.type == CMX_GPU &&
        !cmx_primitive_has_kernel(cmx_primitive_vt(p), CMX_GPU)) {
      missing++;
      h_list_add(buf, size, cmx_primitive_name(p));
    }
    int nin = 0;
    const cmx_array* in = cmx_array_inputs(a, &nin);
    for (int i = 0; i < nin; i++) {
      if (top == cap) {
        cap *= 2;
        stack = realloc(stack, (size_t)cap * sizeof *stack);
        seen = realloc(seen, (size_t)cap * sizeof *seen);
      }
      stack[top++] = in[i];
    }
  }
  free(stack);
  free(seen);
  return missing;
}

/* Counts a GPU case `what` that could not run because of outs' missing
 * kernels; true when there were any (the case is then not evaluated). */
static inline bool h_gpu_skip_missing(const cmx_array* outs, int n,
                                      const char* what) {
  char names[256] = "";
  if (!h_missing_kernels(outs, n, names, sizeof names)) return false;
  t_gpu_nokernel++;
  for (char* p = names; *p;) { /* each name into the summary's list */
    char* comma = strstr(p, ", ");
    if (comma) *comma = 0;
    h_list_add(t_gpu_nokernel_names, sizeof t_gpu_nokernel_names, p);
    p = comma ? comma + 2 : p + strlen(p);
  }
  if (getenv("CMX_TEST_VERBOSE"))
    fprintf(stderr, "no gpu kernel: %s (%s)\n", what, names);
  return true;
}

/* Counts a GPU case `what` that a kernel refused as not implemented
 * (status st, message msg); true when it was that. */
static inline bool h_gpu_skip_notimpl(cmx_status st, const char* msg,
                                      const char* what) {
  if (st != CMX_ERR_NOT_IMPLEMENTED) return false;
  /* The op's name ("[AsType] ...") is what the summary lists. */
  char name[64] = "?";
  const char* close = msg[0] == '[' ? strchr(msg, ']') : NULL;
  if (close && close - msg < (long)sizeof name)
    snprintf(name, sizeof name, "%.*s", (int)(close - msg - 1), msg + 1);
  /* A primitive without a gpu kernel met inside an op or a transform
   * (which evaluated something itself) is the coverage table's case. */
  if (close && strncmp(close, "] has no gpu implementation", 27) == 0) {
    t_gpu_nokernel++;
    h_list_add(t_gpu_nokernel_names, sizeof t_gpu_nokernel_names, name);
  } else {
    t_gpu_notimpl++;
    h_list_add(t_gpu_notimpl_names, sizeof t_gpu_notimpl_names, name);
  }
  if (getenv("CMX_TEST_VERBOSE"))
    fprintf(stderr, "not implemented on the gpu: %s: %s\n", what, msg);
  return true;
}

/* Evaluates a GPU case's results outs[0..n): true when that worked. A
 * kernel's refusal (CMX_ERR_NOT_IMPLEMENTED, kept by the failed node) is
 * counted as such; any other failure is a failed check. */
static inline bool h_gpu_eval(const cmx_array* outs, int n, const char* what) {
  if (cmx_eval(outs, (size_t)n) == CMX_OK) return true;
  for (int i = 0; i < n; i++)
    if (outs[i] && outs[i]->error &&
        h_gpu_skip_notimpl(outs[i]->error_status, outs[i]->error, what))
      return false;
  CHECK_MSG(false, "%s: %s", what, cmx_last_error());
  return false;
}

/* True when the float at p (of a float dtype; a complex part is float32)
 * is a NaN. */
static inline bool h_nan_at(const void* p, cmx_dtype dt) {
  uint16_t h;
  float f;
  double d;
  switch (dt) {
    case CMX_FLOAT16:
      memcpy(&h, p, 2);
      return (h & 0x7fff) > 0x7c00;
    case CMX_BFLOAT16:
      memcpy(&h, p, 2);
      return (h & 0x7fff) > 0x7f80;
    case CMX_FLOAT64:
      memcpy(&d, p, 8);
      return d != d;
    default:
      memcpy(&f, p, 4);
      return f != f;
  }
}

/* Whether arrays a and b hold exactly the same bytes (same dtype, size
 * and rank; evaluated and copied to the host here). */
static inline bool h_arrays_same_bytes(cmx_array a, cmx_array b) {
  if (!a || !b || cmx_array_dtype(a) != cmx_array_dtype(b) ||
      cmx_array_size(a) != cmx_array_size(b) ||
      cmx_array_ndim(a) != cmx_array_ndim(b))
    return false;
  size_t n = (size_t)cmx_array_size(a) * cmx_dtype_size(cmx_array_dtype(a));
  char* u = malloc(n + 1);
  char* v = malloc(n + 1);
  bool ok = u && v && cmx_array_copy_to(a, u, n) == CMX_OK &&
            cmx_array_copy_to(b, v, n) == CMX_OK && !memcmp(u, v, n);
  free(u);
  free(v);
  return ok;
}

/* Bytes of two results agree as the devices must: identical, except that
 * any NaN matches any NaN (payloads may differ) in float dtypes. */
static inline bool h_same_bits(const void* a, const void* b, int64_t n,
                               cmx_dtype dt) {
  size_t isz = cmx_dtype_size(dt);
  if (memcmp(a, b, (size_t)n * isz) == 0) return true;
  if (!cmx_dtype_is_inexact(dt)) return false;
  for (int64_t i = 0; i < n; i++) {
    const char *x = (const char*)a + i * (int64_t)isz,
               *y = (const char*)b + i * (int64_t)isz;
    if (!memcmp(x, y, isz)) continue;
    int parts = dt == CMX_COMPLEX64 ? 2 : 1;
    size_t psz = isz / (size_t)parts;
    for (int k = 0; k < parts; k++) {
      const char *u = x + k * psz, *v = y + k * psz;
      if (memcmp(u, v, psz) && !(h_nan_at(u, dt) && h_nan_at(v, dt)))
        return false;
    }
  }
  return true;
}

#endif
