/* Internals of function export (include/cmx/export.h): a trace in memory,
 * the file format, and the table of how each primitive is rebuilt.
 *
 * File layout (little-endian):
 *   "CMXFN\0"  u16 version  u16 0
 *   u32 len, metadata bytes
 *   u32 number of traces, then each trace:
 *     u8 shapeless, u8 0, u16 0
 *     u32 positional inputs, u32 keyword inputs, per keyword: u32 len, name
 *     u32 constants
 *     u32 ops
 *     u32 outputs
 *     inputs: a type each
 *     constants: a type, u64 byte count, the row-major bytes
 *     ops: u16 len, primitive name, u32 len, parameter bytes, u32 inputs,
 *          u32 value id each, u32 outputs, a type each
 *     outputs: u32 value id each
 *   a type: u8 dtype, u8 ndim, i64 dims[ndim]
 * Value ids count the inputs, then the constants, then each op's outputs
 * in order; an op reads only values before it. */
#ifndef CMX_EXPORT_INTERNAL_H
#define CMX_EXPORT_INTERNAL_H

#include "cmx/export.h"
#include "core/internal.h"

#define CMX__FN_MAGIC "CMXFN"
#define CMX__FN_VERSION 1
/* Bounds a file may not exceed (a hostile file cannot make cmx allocate
 * more than its size allows). */
#define CMX__FN_MAX_TRACES (1u << 16)
#define CMX__FN_MAX_ITEMS (1u << 24)

typedef struct cmx__fn_value {
  cmx_dtype dtype;
  int ndim;
  int64_t shape[CMX_MAX_NDIM];
  cmx_array array; /* constants: the value (owned) */
  char name[8];
} cmx__fn_value;

typedef struct cmx__fn_op {
  const cmx_primitive_vtable* vt;
  char* describe;        /* export only */
  unsigned char* params; /* owned copy */
  size_t psize;
  int nin, nout;
  uint32_t* in; /* value ids */
  uint32_t out; /* id of the first output (the others follow) */
} cmx__fn_op;

typedef struct cmx__fn_trace {
  bool shapeless;
  int npos, nkw;
  char** kwnames; /* nkw, owned */
  uint32_t nconst, nops, nout, nvals;
  cmx__fn_value* vals; /* inputs, constants, op outputs */
  cmx__fn_op* ops;
  uint32_t* outs;
} cmx__fn_trace;

void cmx__fn_trace_free(cmx__fn_trace* t);
/* The trace of fun on stand-ins for args then kwargs (see
 * cmx_exporter_add). */
cmx_status cmx__fn_trace_build(cmx__fn_trace* t, cmx_closure fun,
                               const cmx_array* args, int nargs,
                               const char* const* kwnames,
                               const cmx_array* kwargs, int nkw,
                               bool shapeless);
/* Names value i as MLX does: A..Z, AA.. */
void cmx__fn_value_name(uint32_t i, char name[8]);

/* ---------------- rebuilding (replay.c) ----------------
 * Rebuilds op with the validating (scope-owned) internal ops from the
 * values of its inputs and its recorded outputs rec; writes its nout
 * outputs (scope-owned). False with
 * the error set when the parameters or inputs are not valid for it. */
bool cmx__fn_replay(const cmx__fn_op* op, const cmx__fn_value* rec,
                    const cmx_array* in, cmx_array* out);
/* True when primitives of vt can be exported (a rebuild exists). */
bool cmx__fn_exportable(const cmx_primitive_vtable* vt);
/* The built-in primitive named name, or NULL. */
const cmx_primitive_vtable* cmx__fn_primitive(const char* name, size_t len);

#endif
