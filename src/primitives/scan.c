/* The Scan primitive (cumsum, cumprod, cummax, cummin, logcumsumexp). */
#include "primitives/scan.h"

#include <stdio.h>

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

static void scan_print(const cmx_primitive* p, char* buf, size_t size) {
  static const char* const kinds[] = {"sum", "prod", "max", "min", "logaddexp"};
  const cmx__scan_params* q = cmx_primitive_params(p);
  const char* k = q->kind >= 0 && q->kind <= 4 ? kinds[q->kind] : "?";
  snprintf(buf, size, "Scan(%s, axis=%d%s%s)", k, (int)q->axis,
           q->reverse ? ", reverse" : "", q->inclusive ? "" : ", exclusive");
}

/* Four plain int32 parameters: compared as bytes. */
CMX__VTABLE(Scan, .print = scan_print, .vjp = cmx__vjp_scan,
            .jvp = cmx__jvp_scan, .vmap = cmx__vmap_scan,
            .output_shapes = cmx__shapes_like_input,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
