/* The public load entry points: format selection by extension (as
 * mlx.core.load), loading from files or memory, and the per-format
 * wrappers. */
#include <string.h>

#include "io/io_common.h"

typedef enum { FMT_NPY, FMT_NPZ, FMT_SAFETENSORS, FMT_GGUF } fmt;

static const char* const k_formats[] = {"npy", "npz", "safetensors", "gguf"};

static cmx_status check_stream(cmx_stream s, const char* op) {
  return cmx__stream_resolve(s, op) ? CMX_OK : cmx_last_status();
}

/* Lazy arrays are read on s when it is a cpu stream (reading files is
 * a cpu kernel), else on the cpu's default stream. */
static void read_on(cmx__src* src, cmx_stream s) {
  cmx_stream r;
  if (cmx_stream_resolve(&r, s) == CMX_OK && r.device.type == CMX_CPU)
    src->stream = r;
}

/* Loads from an open source into *out. */
static cmx_status load_src(cmx_loaded* out, const cmx__src* src, fmt f,
                           bool return_metadata) {
  cmx_metadata** meta = return_metadata ? &out->metadata : NULL;
  switch (f) {
    case FMT_NPY:
      out->array = cmx__load_npy_src(src);
      break;
    case FMT_NPZ:
      out->arrays = cmx__load_npz_src(src);
      break;
    case FMT_SAFETENSORS:
      out->arrays = cmx__load_safetensors_src(src, meta);
      break;
    case FMT_GGUF:
      out->arrays = cmx__load_gguf_src(src, meta);
      break;
  }
  if (out->array || out->arrays) return CMX_OK;
  cmx_loaded_clear(out);
  return cmx_last_status() != CMX_OK
             ? cmx_last_status()
             : cmx__error(CMX_ERR_RUNTIME, "[load] failed");
}

/* Resolves the format name (given, or inferred from path). */
static cmx_status pick_format(const char* path, const char* format,
                              bool return_metadata, fmt* f) {
  if (!format) {
    const char* dot = path ? strrchr(path, '.') : NULL;
    if (!dot)
      return cmx__error(CMX_ERR_VALUE,
                        "[load] Could not infer file format from extension");
    format = dot + 1;
  }
  int found = -1;
  for (int i = 0; i < 4; i++)
    if (strcmp(format, k_formats[i]) == 0) found = i;
  if (return_metadata && (found == FMT_NPY || found == FMT_NPZ))
    return cmx__error(CMX_ERR_VALUE,
                      "[load] metadata not supported for format %s", format);
  if (found < 0)
    return cmx__error(CMX_ERR_VALUE, "[load] Unknown file format %s", format);
  *f = (fmt)found;
  return CMX_OK;
}

static const char* op_of(fmt f) {
  static const char* const ops[] = {"load", "load_npz", "load_safetensors",
                                    "load_gguf"};
  return ops[f];
}

void cmx_loaded_clear(cmx_loaded* r) {
  if (!r) return;
  cmx_array_release(r->array);
  cmx_named_arrays_free(r->arrays);
  cmx_metadata_free(r->metadata);
  r->array = NULL;
  r->arrays = NULL;
  r->metadata = NULL;
}

cmx_status cmx_load(cmx_loaded* out, const char* path, const char* format,
                    bool return_metadata, cmx_stream s) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[load] output pointer is NULL");
  memset(out, 0, sizeof *out);
  if (!path) return cmx__error(CMX_ERR_VALUE, "[load] path is NULL");
  fmt f = FMT_NPY;
  cmx_status st = pick_format(path, format, return_metadata, &f);
  if (st == CMX_OK) st = check_stream(s, "load");
  cmx__src src;
  if (st == CMX_OK) st = cmx__src_open(&src, op_of(f), path);
  if (st != CMX_OK) return st;
  read_on(&src, s);
  st = load_src(out, &src, f, return_metadata);
  cmx__src_close(&src);
  return st;
}

cmx_status cmx_load_bytes(cmx_loaded* out, const void* data, size_t size,
                          const char* format, bool return_metadata,
                          cmx_stream s) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[load] output pointer is NULL");
  memset(out, 0, sizeof *out);
  if (!format)
    return cmx__error(CMX_ERR_VALUE, "[load] a format is required for bytes");
  if (!data && size) return cmx__error(CMX_ERR_VALUE, "[load] data is NULL");
  fmt f = FMT_NPY;
  cmx_status st = pick_format(NULL, format, return_metadata, &f);
  if (st == CMX_OK) st = check_stream(s, "load");
  if (st != CMX_OK) return st;
  cmx__src src;
  cmx__src_mem(&src, op_of(f), data, size);
  return load_src(out, &src, f, return_metadata);
}

/* Shared body of the per-format loaders. */
static cmx_status load_one(fmt f, const char* path, cmx_stream s,
                           bool want_meta, cmx_loaded* r) {
  memset(r, 0, sizeof *r);
  cmx_status st = check_stream(s, op_of(f));
  cmx__src src;
  if (st == CMX_OK) st = cmx__src_open(&src, op_of(f), path);
  if (st != CMX_OK) return st;
  read_on(&src, s);
  st = load_src(r, &src, f, want_meta);
  cmx__src_close(&src);
  return st;
}

cmx_status cmx_load_npy(cmx_array* out, const char* path, cmx_stream s) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[load] output pointer is NULL");
  cmx_loaded r;
  cmx_status st = load_one(FMT_NPY, path, s, false, &r);
  *out = r.array;
  return st;
}

cmx_status cmx_load_npz(cmx_named_arrays** out, const char* path,
                        cmx_stream s) {
  if (!out)
    return cmx__error(CMX_ERR_VALUE, "[load_npz] output pointer is NULL");
  cmx_loaded r;
  cmx_status st = load_one(FMT_NPZ, path, s, false, &r);
  *out = r.arrays;
  return st;
}

cmx_status cmx_load_safetensors(cmx_named_arrays** out, cmx_metadata** metadata,
                                const char* path, cmx_stream s) {
  if (!out)
    return cmx__error(CMX_ERR_VALUE,
                      "[load_safetensors] output pointer is NULL");
  cmx_loaded r;
  cmx_status st = load_one(FMT_SAFETENSORS, path, s, metadata != NULL, &r);
  *out = r.arrays;
  if (metadata) *metadata = r.metadata;
  return st;
}

cmx_status cmx_load_gguf(cmx_named_arrays** out, cmx_metadata** metadata,
                         const char* path, cmx_stream s) {
  if (!out)
    return cmx__error(CMX_ERR_VALUE, "[load_gguf] output pointer is NULL");
  cmx_loaded r;
  cmx_status st = load_one(FMT_GGUF, path, s, metadata != NULL, &r);
  *out = r.arrays;
  if (metadata) *metadata = r.metadata;
  return st;
}
