/* Helpers shared by the shape and creation op files. */
#ifndef CMX_OPS_SHAPE_INTERNAL_H
#define CMX_OPS_SHAPE_INTERNAL_H

#include "ops/ops_internal.h"
#include "primitives/shape.h"

/* Checks a shape argument (0 <= ndim <= CMX_MAX_NDIM, shape non-NULL when
 * ndim > 0, and with nonneg false also every dim >= 0); false with
 * "[op] ..." set otherwise. */
bool cmx__check_shape_arg(const char* op, const int64_t* shape, int ndim,
                          bool allow_negative);

/* Normalises Python slices start:stop:step of every axis of shape (steps
 * NULL: all 1) as Python does (negative indices count from the end, then
 * clamp; negative steps walk back). Writes the first index and step per
 * axis to q and the resulting extent to out_shape; *has_neg tells whether
 * any step is negative. False with "[op] ..." set for a zero step. */
bool cmx__norm_slice(const char* op, const int64_t* shape, int ndim,
                     const int64_t* start, const int64_t* stop,
                     const int64_t* steps, cmx__slice_params* q,
                     int64_t* out_shape, bool* has_neg);

#endif
