/* cmx/device.h: devices and streams.
 *
 * A device is a type (cpu, gpu) and an index. A stream is an ordered queue of
 * work on one device; every op takes a stream. CMX_STREAM_DEFAULT means the
 * calling thread's default stream of its default device; cmx_stream_on(dev)
 * means the default stream of dev (MLX's StreamOrDevice).
 *
 *     cmx_stream s;
 *     cmx_new_stream(&s, cmx_device_cpu());
 *     cmx_add(&c, a, b, s);           // c is computed on s's worker thread
 *     cmx_synchronize(s);
 */
#ifndef CMX_DEVICE_H
#define CMX_DEVICE_H

#include <stdbool.h>

#include "cmx/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cmx_device_type { CMX_CPU = 0, CMX_GPU = 1 } cmx_device_type;

typedef struct cmx_device {
  cmx_device_type type;
  int index; /* -1 inside a stream means "the default device" */
} cmx_device;

typedef struct cmx_stream {
  int index; /* -1 means "the default stream of `device`" */
  cmx_device device;
} cmx_stream;

/* The calling thread's default stream on its default device. */
#define CMX_STREAM_DEFAULT ((cmx_stream){-1, {CMX_CPU, -1}})

/* cpu device 0. */
cmx_device cmx_device_cpu(void);
/* gpu device 0 (may be unavailable; see cmx_is_available). */
cmx_device cmx_device_gpu(void);
/* The stream-or-device value meaning "the default stream of dev". */
cmx_stream cmx_stream_on(cmx_device dev);
/* True when both name the same device. */
bool cmx_device_equal(cmx_device a, cmx_device b);
/* True when both name the same concrete stream. */
bool cmx_stream_equal(cmx_stream a, cmx_stream b);

/* True when dev can run work here (a CUDA driver and GPU exist for gpu). */
bool cmx_is_available(cmx_device dev);
/* Number of devices of a type (0 for gpu on a machine with no GPU). */
int cmx_device_count(cmx_device_type type);

/* The calling thread's default device. Its process-wide starting value is
 * CMX_DEFAULT_DEVICE (cpu or gpu; gpu falls back to cpu on a machine
 * without a GPU); unset, it is the GPU when one is available, else the CPU
 * (as MLX). */
cmx_device cmx_default_device(void);
/* Sets the calling thread's default device. Errors if it is unavailable. */
cmx_status cmx_set_default_device(cmx_device dev);
/* Writes the calling thread's default stream of dev to *out. */
cmx_status cmx_default_stream(cmx_stream* out, cmx_device dev);
/* Makes s the calling thread's default stream of its device. */
cmx_status cmx_set_default_stream(cmx_stream s);
/* Creates a new stream on dev (a new worker thread on cpu). */
cmx_status cmx_new_stream(cmx_stream* out, cmx_device dev);
/* Resolves a stream-or-device value to a concrete stream. */
cmx_status cmx_stream_resolve(cmx_stream* out, cmx_stream s);
/* What cmx_device_get_info reports about a device. */
typedef struct cmx_device_info {
  char name[256];        /* "NVIDIA H100 80GB HBM3", or the CPU's model */
  char architecture[32]; /* a GPU's "sm_<major><minor>", the CPU's machine */
  size_t memory_size;    /* bytes of the device's memory (CPU: host RAM) */
  size_t free_memory;    /* bytes free now, 0 when unknown */
  int compute_major, compute_minor; /* GPU compute capability (CPU: 0) */
  int sm_count;                     /* GPU multiprocessors (CPU: 0) */
  int cores; /* CPU: the threads cmx computes with (CMX_NUM_THREADS) */
} cmx_device_info;

/* Describes dev into *out. Errors (CMX_ERR_VALUE) when dev is not
 * available; a GPU's free memory needs its context, which this makes. */
cmx_status cmx_device_get_info(cmx_device dev, cmx_device_info* out);

/* Waits until all work submitted to s has finished. */
cmx_status cmx_synchronize(cmx_stream s);
/* Waits until all work on every stream has finished. */
cmx_status cmx_synchronize_all(void);

#ifdef __cplusplus
}
#endif
#endif
