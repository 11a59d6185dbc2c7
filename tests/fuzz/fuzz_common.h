/* Shared body of the loader fuzz targets: load the input from memory as one
 * format; a failure must be a clean "[load...]" error, a success must give
 * arrays whose every byte can be read. Anything else aborts, which
 * libFuzzer reports as a crash (as do ASan/UBSan findings). */
#ifndef CMX_FUZZ_COMMON_H
#define CMX_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmx/cmx.h"

static void fuzz_check_array(cmx_array a) {
  size_t n = cmx_array_nbytes(a);
  void* p = malloc(n ? n : 1);
  if (!p || cmx_array_copy_to(a, p, n) != CMX_OK) abort();
  free(p);
}

static int fuzz_load(const char* format, bool meta, const uint8_t* data,
                     size_t size) {
  cmx_loaded r;
  cmx_status st =
      cmx_load_bytes(&r, data, size, format, meta, CMX_STREAM_DEFAULT);
  if (st != CMX_OK) {
    bool clean = (st == CMX_ERR_VALUE || st == CMX_ERR_NOT_IMPLEMENTED ||
                  st == CMX_ERR_MEMORY) &&
                 strncmp(cmx_last_error(), "[", 1) == 0;
    if (!clean) {
      fprintf(stderr, "unclean failure: %s %s\n", cmx_status_name(st),
              cmx_last_error());
      abort();
    }
    if (r.array || r.arrays || r.metadata) abort(); /* must be all NULL */
    return 0;
  }
  if (r.array) fuzz_check_array(r.array);
  for (size_t i = 0; i < cmx_named_arrays_size(r.arrays); i++)
    fuzz_check_array(cmx_named_arrays_at(r.arrays, i));
  for (size_t i = 0; i < cmx_metadata_size(r.metadata); i++)
    if (!cmx_metadata_key(r.metadata, i) || !cmx_metadata_value(r.metadata, i))
      abort();
  cmx_loaded_clear(&r);
  return 0;
}

#endif
