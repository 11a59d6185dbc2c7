/* Parameters of the Scan primitive, shared by the op layer, the vtable and
 * the kernel. All int32 fields: no padding (compile compares bytes).
 *
 * Scan: input a of the output's dtype (the op converts first), output of
 *   a's shape, scanned along `axis` with `kind`. reverse scans from the
 *   end; inclusive == 0 shifts the result by one and starts from the
 *   kind's identity.
 */
#ifndef CMX_PRIMITIVES_SCAN_H
#define CMX_PRIMITIVES_SCAN_H

#include <stdint.h>

typedef enum cmx__scan_kind {
  CMX__SCAN_SUM = 0,
  CMX__SCAN_PROD = 1,
  CMX__SCAN_MAX = 2,
  CMX__SCAN_MIN = 3,
  CMX__SCAN_LOGADDEXP = 4
} cmx__scan_kind;

typedef struct cmx__scan_params {
  int32_t kind; /* cmx__scan_kind */
  int32_t axis;
  int32_t reverse;
  int32_t inclusive;
} cmx__scan_params;

#endif
