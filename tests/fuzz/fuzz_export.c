/* libFuzzer target for cmx_import_function: the input is written to a
 * temporary file and imported; a failure must be a clean "[import_function"
 * CMX_ERR_VALUE (or out of memory), a success is called with one float32
 * scalar per positional input of its first trace's count and its outputs
 * evaluated (their failures must be clean too). Anything else aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmx/cmx.h"

static bool clean(cmx_status st) {
  return (st == CMX_ERR_VALUE || st == CMX_ERR_MEMORY ||
          st == CMX_ERR_NOT_IMPLEMENTED) &&
         strncmp(cmx_last_error(), "[", 1) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/cmx_fuzz_export_%d", (int)getpid());
  FILE* f = fopen(path, "wb");
  if (!f) return 0;
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
  cmx_imported* g = NULL;
  cmx_status st = cmx_import_function(&g, path);
  if (st != CMX_OK) {
    if (!clean(st) || g) {
      fprintf(stderr, "unclean failure: %s %s\n", cmx_status_name(st),
              cmx_last_error());
      abort();
    }
    return 0;
  }
  cmx_array args[4] = {NULL, NULL, NULL, NULL};
  for (int i = 0; i < 4; i++) cmx_array_from_double(&args[i], 1.0, CMX_FLOAT32);
  for (int n = 0; n <= 4; n++) {
    cmx_array* outs = NULL;
    int nout = 0;
    st = cmx_imported_call(g, args, n, NULL, NULL, 0, &outs, &nout);
    if (st != CMX_OK && !clean(st)) abort();
    for (int i = 0; st == CMX_OK && i < nout; i++) {
      cmx_status e = cmx_array_eval(outs[i]);
      if (e != CMX_OK && !clean(e) && e != CMX_ERR_RUNTIME) abort();
    }
    if (st == CMX_OK) cmx_arrays_free(outs, nout);
  }
  cmx_array_release_all(args, 4);
  cmx_imported_free(g);
  return 0;
}
