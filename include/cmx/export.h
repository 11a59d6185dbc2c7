/* cmx/export.h: functions saved to a file as graphs and run again, in
 * another process or from C (MLX's export_function / import_function).
 *
 *     // f(x, y) = exp(x) * w + y, traced once for float32 (3) and ()
 *     cmx_array args[2] = {x, y};
 *     cmx_export_function("f.cmxfn", f, args, 2, false, NULL);
 *
 *     cmx_imported* g;
 *     cmx_import_function(&g, "f.cmxfn");
 *     cmx_array* outs; int nout;
 *     cmx_imported_call(g, args, 2, NULL, NULL, 0, &outs, &nout);
 *     ...
 *     cmx_arrays_free(outs, nout);
 *     cmx_imported_free(g);
 *
 * Exporting traces the function: it runs once on stand-ins for its inputs
 * (shapes and dtypes only; evaluating one is an error) and the graph from
 * the stand-ins to its outputs is saved: each op as its primitive's name,
 * parameters, inputs and output shapes and dtypes, and every array the
 * graph reads that does not depend on the inputs (weights, random keys) as
 * a constant with its data. An exporter saves several traces of one
 * function (other shapes, dtypes or argument counts) in one file; calling
 * the imported function runs the first trace whose inputs match the call:
 * the same positional count and keyword names, dtypes and shapes (for a
 * trace exported shapeless, the number of dimensions only: its ops are
 * rebuilt for the new shapes, where they allow it).
 *
 * The file format is cmx's own (magic "CMXFN", a version, the metadata
 * string, then the traces; little-endian). Importing rebuilds every op with
 * the validating op constructors and checks each result against the
 * recorded shapes and dtypes, so a malformed or hostile file fails with
 * CMX_ERR_VALUE ("[import_function] ...") instead of running bad
 * parameters. Files written by another cmx version whose format differs
 * are refused by version.
 *
 * Not exportable (CMX_ERR_VALUE at export): extension primitives and
 * random primitives of cmx that keep no key (there are none today).
 */
#ifndef CMX_EXPORT_H
#define CMX_EXPORT_H

#include <stdbool.h>

#include "cmx/array.h"
#include "cmx/transforms.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------- exporting ---------------- */
typedef struct cmx_exporter cmx_exporter;

/* A new exporter that will write path (metadata: a string stored with the
 * file, NULL for none; both copied). Nothing is written before
 * cmx_exporter_close. */
cmx_status cmx_exporter_new(cmx_exporter** out, const char* path,
                            const char* metadata);
/* Traces fun on stand-ins shaped as args (nargs positional arrays, then
 * nkw keyword arrays kwargs named kwnames; the function receives all of
 * them in that order) and adds the trace. Errors: the function's own; an
 * output that is not an array; an op that cannot be exported
 * (CMX_ERR_VALUE "[export_function] ..."). */
cmx_status cmx_exporter_add(cmx_exporter* e, cmx_closure fun,
                            const cmx_array* args, int nargs,
                            const char* const* kwnames, const cmx_array* kwargs,
                            int nkw, bool shapeless);
/* Writes the file (atomically: a temporary file renamed into place).
 * CMX_ERR_IO when it cannot be written; an exporter with no trace writes
 * a file with none. */
cmx_status cmx_exporter_close(cmx_exporter* e);
/* Frees the exporter (without writing; NULL is fine). */
void cmx_exporter_free(cmx_exporter* e);

/* One trace of fun saved to path: new, add, close and free. */
cmx_status cmx_export_function(const char* path, cmx_closure fun,
                               const cmx_array* args, int nargs, bool shapeless,
                               const char* metadata);

/* ---------------- describing ----------------
 * The graph of a trace, item by item, for MLX's export_function with a
 * callback and export_to_dot. */
typedef enum cmx_export_item_kind {
  CMX_EXPORT_INPUT = 0,    /* an input: name "A", "B", ... */
  CMX_EXPORT_CONSTANT = 1, /* a constant: array holds its value */
  CMX_EXPORT_OP = 2,       /* a primitive applied to earlier values */
  CMX_EXPORT_OUTPUT = 3    /* an output of the function */
} cmx_export_item_kind;

typedef struct cmx_export_value {
  const char* name; /* "A", "B", ..., "AA" ... in order of appearance */
  cmx_dtype dtype;
  int ndim;
  const int64_t* shape;
  cmx_array array; /* constants: the value (borrowed); else NULL */
} cmx_export_value;

typedef struct cmx_export_item {
  cmx_export_item_kind kind;
  const char* keyword;  /* INPUT: the keyword name, or NULL (positional) */
  const char* op;       /* OP: the primitive's name ("Add") */
  const char* describe; /* OP: the primitive's description */
  int nin, nout;
  const cmx_export_value* in;  /* OP: its inputs; OUTPUT: the output */
  const cmx_export_value* out; /* OP: its outputs; INPUT/CONSTANT: it */
} cmx_export_item;

/* Called once per item (inputs, then constants, then ops in order, then
 * outputs); a non-zero return stops the walk and is returned as an error
 * status (with the error already set by the callback). */
typedef cmx_status (*cmx_export_visit_fn)(void* payload,
                                          const cmx_export_item* item);

/* Traces fun as cmx_exporter_add does and calls visit for each item of
 * the trace instead of saving it. */
cmx_status cmx_export_visit(cmx_closure fun, const cmx_array* args, int nargs,
                            const char* const* kwnames, const cmx_array* kwargs,
                            int nkw, bool shapeless, cmx_export_visit_fn visit,
                            void* payload);

/* The graph that computes outputs (n arrays), in Graphviz dot, as a
 * malloc'ed string (free with cmx_free): one box per primitive, one node
 * per array; arrays with data are sources. */
cmx_status cmx_export_to_dot(const cmx_array* outputs, int n, char** dot);

/* ---------------- importing ---------------- */
typedef struct cmx_imported cmx_imported;

/* Reads and validates a file written by an exporter. Errors:
 * CMX_ERR_IO "[import_function] Failed to open <path>: ..." and
 * CMX_ERR_VALUE for a file that is not a valid one ("[import_function]
 * <path>: ..."). */
cmx_status cmx_import_function(cmx_imported** out, const char* path);
/* The metadata string saved with the file ("" when none; borrowed). */
const char* cmx_imported_metadata(const cmx_imported* f);
/* The number of traces in the file. */
int cmx_imported_traces(const cmx_imported* f);
/* Runs the first trace matching the call (nargs positional arrays and nkw
 * keyword arrays, in any order of names) lazily, writing its outputs
 * (*outs malloc'ed, *nout new references; free with cmx_arrays_free).
 * Errors: no trace matches (CMX_ERR_VALUE, naming the traces and the
 * call); an op that cannot be rebuilt for these inputs (shapeless). */
cmx_status cmx_imported_call(const cmx_imported* f, const cmx_array* args,
                             int nargs, const char* const* kwnames,
                             const cmx_array* kwargs, int nkw, cmx_array** outs,
                             int* nout);
/* Frees an imported function (NULL is fine); arrays it returned stay
 * valid. */
void cmx_imported_free(cmx_imported* f);

#ifdef __cplusplus
}
#endif
#endif
