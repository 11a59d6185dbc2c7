/* cmx/cmx.h: everything in the public C API.
 *
 *     #include <cmx/cmx.h>
 *     cmx_array a, b, c;
 *     cmx_array_from_double(&a, 2.0, CMX_FLOAT32);
 *     cmx_array_from_double(&b, 3.0, CMX_FLOAT32);
 *     cmx_add(&c, a, b, CMX_STREAM_DEFAULT);
 *     double v; cmx_array_item_double(c, &v);   // evaluates: 5
 *     cmx_array_release(a); cmx_array_release(b); cmx_array_release(c);
 */
#ifndef CMX_CMX_H
#define CMX_CMX_H

#include "cmx/array.h"
#include "cmx/compile.h"
#include "cmx/cuda.h"
#include "cmx/device.h"
#include "cmx/distributed.h"
#include "cmx/dtype.h"
#include "cmx/error.h"
#include "cmx/export.h"
#include "cmx/fast.h"
#include "cmx/fft.h"
#include "cmx/interop.h"
#include "cmx/io.h"
#include "cmx/linalg.h"
#include "cmx/memory.h"
#include "cmx/ops.h"
#include "cmx/primitive.h"
#include "cmx/quantize.h"
#include "cmx/random.h"
#include "cmx/transforms.h"

#endif
