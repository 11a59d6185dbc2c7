/* cmx/io.h: saving and loading arrays (.npy, .npz, .safetensors, .gguf).
 *
 *     cmx_named_arrays* w;
 *     cmx_named_arrays_new(&w);
 *     cmx_named_arrays_set(w, "weight", a);          // retains a
 *     cmx_save_safetensors("model", w, NULL);         // writes
 * model.safetensors cmx_named_arrays_free(w);
 *
 *     cmx_loaded r;
 *     cmx_load(&r, "model.safetensors", NULL, true, CMX_STREAM_DEFAULT);
 *     cmx_array wt = cmx_named_arrays_get(r.arrays, "weight");  // borrowed
 *     cmx_loaded_clear(&r);
 *
 * Semantics follow mlx.core: `load` picks the format from the extension
 * (the text after the last '.'); save functions append their extension
 * (".npy", ".npz", ".safetensors", ".gguf") when the path lacks it. Files
 * interoperate with numpy (np.save/np.load/np.savez), the safetensors
 * package and the gguf package. bfloat16 is stored in .npy as "<V2" (as
 * MLX does; numpy reads it as 2-byte void).
 *
 * Loading is lazy, as MLX's: loading a file reads and checks its headers,
 * and each array reads its bytes from the file when it is evaluated (into
 * its own host buffer, once), so a model larger than free memory can be
 * loaded and used part by part. The file stays open while an unevaluated
 * array of it exists; a read that comes short (the file was truncated or
 * replaced) fails that evaluation ("[load] Unable to read from ..."). .npy
 * files check their data size then too (MLX's behaviour); byte-swapped
 * .npy data, .npz members, quantized gguf tensors and cmx_load_bytes are
 * read at once. Headers are
 * validated against the file size before anything is allocated, so
 * malformed or hostile files fail with CMX_ERR_VALUE ("[load_gguf] ...")
 * and files that cannot be read with CMX_ERR_IO. Saving evaluates the
 * arrays, writes a temporary file next to the target and renames it into
 * place, so a failed save leaves no partial file.
 *
 * Optional dependencies: .npz deflate (savez_compressed, compressed members)
 * needs zlib; reading .safetensors needs cJSON. A build without them fails
 * those calls with CMX_ERR_NOT_IMPLEMENTED ("[load_safetensors] built
 * without cJSON").
 *
 * Differences from MLX, all supersets: empty arrays may be saved in every
 * format (MLX refuses them in .npy/.safetensors); .npy and .safetensors
 * also carry float64; .gguf also stores and loads bfloat16, int64 and
 * float64 tensors; gguf metadata keeps every GGUF value type exactly
 * (including float64 and nested arrays), where MLX's Python API converts
 * numbers to arrays (see cmx_meta_to_array).
 */
#ifndef CMX_IO_H
#define CMX_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmx/array.h"
#include "cmx/device.h"
#include "cmx/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------- Named arrays ----------------
 * An ordered map from names to arrays (insertion order is kept, and is the
 * order in which files are written and were read). */
typedef struct cmx_named_arrays cmx_named_arrays;

/* A new empty map in *out; free it with cmx_named_arrays_free. */
cmx_status cmx_named_arrays_new(cmx_named_arrays** out);
/* Releases every array and frees the map. NULL is ignored. */
void cmx_named_arrays_free(cmx_named_arrays* m);
/* Sets name -> a (retaining a). An existing name keeps its position and
 * gets the new array. Errors: NULL map, name or array (CMX_ERR_VALUE). */
cmx_status cmx_named_arrays_set(cmx_named_arrays* m, const char* name,
                                cmx_array a);
/* Number of entries (0 for NULL). */
size_t cmx_named_arrays_size(const cmx_named_arrays* m);
/* Name / array of entry i (0 <= i < size), borrowed; NULL when out of
 * range. Valid until the map is modified or freed. */
const char* cmx_named_arrays_name(const cmx_named_arrays* m, size_t i);
cmx_array cmx_named_arrays_at(const cmx_named_arrays* m, size_t i);
/* The array named `name` (borrowed), or NULL when absent. */
cmx_array cmx_named_arrays_get(const cmx_named_arrays* m, const char* name);

/* ---------------- Metadata values ----------------
 * A metadata value is a GGUF value: an integer of 8..64 bits, a float32 or
 * float64, a bool, a string (bytes with a length; may hold NUL bytes), or
 * an array of values of one type (arrays of arrays nest, and inner arrays
 * may each have their own element type). Safetensors metadata is strings
 * only. The enum values are GGUF's type codes. */
typedef enum cmx_meta_type {
  CMX_META_UINT8 = 0,
  CMX_META_INT8 = 1,
  CMX_META_UINT16 = 2,
  CMX_META_INT16 = 3,
  CMX_META_UINT32 = 4,
  CMX_META_INT32 = 5,
  CMX_META_FLOAT32 = 6,
  CMX_META_BOOL = 7,
  CMX_META_STRING = 8,
  CMX_META_ARRAY = 9,
  CMX_META_UINT64 = 10,
  CMX_META_INT64 = 11,
  CMX_META_FLOAT64 = 12
} cmx_meta_type;

typedef struct cmx_meta_value cmx_meta_value;

/* Lower-case name of a type ("uint8", "string", "array"...); "invalid" for
 * values outside the enum. */
const char* cmx_meta_type_name(cmx_meta_type t);

/* Constructors: each writes a new value to *out, owned by the caller until
 * given to a container (cmx_metadata_set, cmx_meta_array_append), else
 * freed with cmx_meta_free. */
/* An integer of type t (UINT8..INT64, UINT64 for v >= 0, or BOOL for 0/1).
 * Errors: v out of t's range or t not an integer type (CMX_ERR_VALUE). */
cmx_status cmx_meta_new_int(cmx_meta_value** out, cmx_meta_type t, int64_t v);
/* A UINT64 value (the full unsigned range). */
cmx_status cmx_meta_new_uint64(cmx_meta_value** out, uint64_t v);
/* A FLOAT32 (v rounded to float) or FLOAT64 value. */
cmx_status cmx_meta_new_float(cmx_meta_value** out, cmx_meta_type t, double v);
cmx_status cmx_meta_new_bool(cmx_meta_value** out, bool v);
/* A string holding a copy of the NUL-terminated s. */
cmx_status cmx_meta_new_string(cmx_meta_value** out, const char* s);
/* A string holding a copy of len bytes of s (which may include NULs). */
cmx_status cmx_meta_new_string_n(cmx_meta_value** out, const char* s,
                                 size_t len);
/* An empty array whose elements have type elem (any type, ARRAY nests). */
cmx_status cmx_meta_new_array(cmx_meta_value** out, cmx_meta_type elem);
/* Appends item to array, taking ownership of item in every case (it is
 * freed when the call fails). Errors: array is not an ARRAY, item's type is
 * not the array's element type (CMX_ERR_TYPE). */
cmx_status cmx_meta_array_append(cmx_meta_value* array, cmx_meta_value* item);
/* Frees a value the caller owns (and everything inside). NULL is ignored. */
void cmx_meta_free(cmx_meta_value* v);
/* A deep copy of v in *out. */
cmx_status cmx_meta_copy(cmx_meta_value** out, const cmx_meta_value* v);

/* Accessors (v borrowed). */
cmx_meta_type cmx_meta_get_type(const cmx_meta_value* v);
/* The value of an integer or bool as int64. Errors: other types, or a
 * UINT64 above INT64_MAX (CMX_ERR_TYPE / CMX_ERR_VALUE). */
cmx_status cmx_meta_get_int64(const cmx_meta_value* v, int64_t* out);
/* The value of an unsigned integer, bool, or non-negative signed one. */
cmx_status cmx_meta_get_uint64(const cmx_meta_value* v, uint64_t* out);
/* The value of a float or integer type as double. */
cmx_status cmx_meta_get_double(const cmx_meta_value* v, double* out);
cmx_status cmx_meta_get_bool(const cmx_meta_value* v, bool* out);
/* A STRING's bytes (NUL-terminated for convenience; *len excludes the
 * terminator and may be NULL). Borrowed: valid while v lives. */
cmx_status cmx_meta_get_string(const cmx_meta_value* v, const char** s,
                               size_t* len);
/* An ARRAY's element type and length (0 for other types). */
cmx_meta_type cmx_meta_array_elem_type(const cmx_meta_value* v);
size_t cmx_meta_array_length(const cmx_meta_value* v);
/* Element i of an ARRAY (borrowed, valid while the array lives and is not
 * appended to; never pass it to cmx_meta_free); NULL when out of range. */
const cmx_meta_value* cmx_meta_array_item(const cmx_meta_value* v, size_t i);

/* Conversions with arrays, for MLX's Python representation of GGUF
 * metadata. cmx_meta_to_array: a number or bool gives a 0-d array of the
 * matching dtype; an ARRAY of numbers or bools a 1-d array (an empty array
 * of them: shape (0,)). Errors: strings, nested arrays (CMX_ERR_TYPE).
 * cmx_meta_from_array: a 0-d array gives a scalar, a 1-d array an ARRAY, of
 * dtypes bool, uint8..uint64, int8..int64, float32, float64. Errors: other
 * dtypes (CMX_ERR_TYPE), ndim > 1 (CMX_ERR_VALUE). Evaluates a. */
cmx_status cmx_meta_to_array(cmx_array* out, const cmx_meta_value* v);
cmx_status cmx_meta_from_array(cmx_meta_value** out, cmx_array a);

/* ---------------- Metadata maps ----------------
 * An ordered map from string keys to values. */
typedef struct cmx_metadata cmx_metadata;

cmx_status cmx_metadata_new(cmx_metadata** out);
/* Frees the map and every value in it. NULL is ignored. */
void cmx_metadata_free(cmx_metadata* m);
/* Sets key -> v, taking ownership of v in every case (freed on failure);
 * an existing key keeps its position and its old value is freed. */
cmx_status cmx_metadata_set(cmx_metadata* m, const char* key,
                            cmx_meta_value* v);
/* cmx_metadata_set with a new STRING value (safetensors metadata). */
cmx_status cmx_metadata_set_string(cmx_metadata* m, const char* key,
                                   const char* value);
size_t cmx_metadata_size(const cmx_metadata* m);
/* Key / value of entry i, borrowed; NULL when out of range. */
const char* cmx_metadata_key(const cmx_metadata* m, size_t i);
const cmx_meta_value* cmx_metadata_value(const cmx_metadata* m, size_t i);
/* The value under key (borrowed), or NULL. */
const cmx_meta_value* cmx_metadata_get(const cmx_metadata* m, const char* key);

/* ---------------- Saving ----------------
 * All save functions evaluate their arrays first. Strided and broadcast
 * arrays are written in row-major order (a column-major array goes to .npy
 * as fortran_order data, as MLX does). Errors: CMX_ERR_IO when the file
 * cannot be created or written (message names the path), CMX_ERR_TYPE for
 * a dtype the format cannot hold, CMX_ERR_VALUE for bad arguments. */

/* Saves one array to path (".npy" appended when missing), numpy format
 * version 1.0 (2.0 for headers over 64 KiB). */
cmx_status cmx_save(const char* path, cmx_array a);
/* Saves the arrays to an uncompressed zip (".npz" appended when missing);
 * member "name.npy" per entry, as numpy.savez. Positional names (arr_0,
 * arr_1 ...) are the caller's business, as in MLX's Python layer. Members
 * and archives over 4 GiB use zip64. */
cmx_status cmx_savez(const char* path, const cmx_named_arrays* arrays);
/* cmx_savez with deflate-compressed members (numpy.savez_compressed).
 * Needs zlib. */
cmx_status cmx_savez_compressed(const char* path,
                                const cmx_named_arrays* arrays);
/* Saves to .safetensors (extension appended when missing). metadata may be
 * NULL; its values must be strings (CMX_ERR_TYPE otherwise). Every dtype
 * is accepted (complex64 as MLX's "C64"). The name "__metadata__" is
 * reserved (CMX_ERR_VALUE). */
cmx_status cmx_save_safetensors(const char* path,
                                const cmx_named_arrays* arrays,
                                const cmx_metadata* metadata);
/* Saves to GGUF version 3 (extension appended when missing), metadata
 * first (NULL for none). Tensor dtypes: float32, float16, bfloat16,
 * float64, int8, int16, int32, int64 (others: CMX_ERR_TYPE, as MLX).
 * Tensor data is aligned to 32 bytes, or to a "general.alignment" uint32
 * metadata value (a power of two) when given. */
cmx_status cmx_save_gguf(const char* path, const cmx_named_arrays* arrays,
                         const cmx_metadata* metadata);

/* ---------------- Loading ---------------- */

/* The result of cmx_load: exactly one of array (.npy) and arrays (.npz,
 * .safetensors, .gguf) is set; metadata is set when it was asked for. The
 * caller owns all of them; cmx_loaded_clear releases them. */
typedef struct cmx_loaded {
  cmx_array array;
  cmx_named_arrays* arrays;
  cmx_metadata* metadata;
} cmx_loaded;

/* Loads path. format is "npy", "npz", "safetensors" or "gguf", or NULL to
 * use the text after the path's last '.'. return_metadata asks for the
 * metadata (safetensors: string values; gguf: typed values); it is an
 * error for npy and npz ("[load] metadata not supported for format npy").
 * The stream is validated; the data lives on the host and moves to a device
 * on first use there. Errors: "[load] Could not infer file format from
 * extension", "[load] Unknown file format xyz" (CMX_ERR_VALUE); the format
 * loaders' errors. On failure *out is all NULL. */
cmx_status cmx_load(cmx_loaded* out, const char* path, const char* format,
                    bool return_metadata, cmx_stream s);
/* cmx_load from size bytes in memory (format required). */
cmx_status cmx_load_bytes(cmx_loaded* out, const void* data, size_t size,
                          const char* format, bool return_metadata,
                          cmx_stream s);
/* Releases what r holds and sets its fields to NULL. */
void cmx_loaded_clear(cmx_loaded* r);

/* Format-specific loaders (path used as given). Big-endian .npy data is
 * byte-swapped, Fortran-order data loads as a column-major strided array.
 * Errors name the op: "[load]" (npy), "[load_npz]", "[load_safetensors]",
 * "[load_gguf]". */
cmx_status cmx_load_npy(cmx_array* out, const char* path, cmx_stream s);
cmx_status cmx_load_npz(cmx_named_arrays** out, const char* path, cmx_stream s);
/* metadata may be NULL (not wanted). */
cmx_status cmx_load_safetensors(cmx_named_arrays** out, cmx_metadata** metadata,
                                const char* path, cmx_stream s);
/* GGUF v2/v3, little-endian. Tensor types: F32, F16, BF16, F64, I8, I16,
 * I32, I64 load as the matching dtype. Q4_0, Q4_1, Q4_K and Q8_0 load as
 * MLX does: `name` becomes packed uint32 weights (shape (..., n*bits/32))
 * plus `prefix.scales` and `prefix.biases` (float16, one per group of 32),
 * where prefix is name without a trailing ".weight"; dequantized values are
 * weight * scale + bias (Q4_1's 4-bit values are read after both of its
 * float16 fields, as ggml lays them out; MLX's reader starts two bytes
 * early there). Q6_K is dequantized to float16 (as MLX does for
 * formats it cannot keep quantized). Other types fail with
 * "[load_gguf] unsupported tensor type Q5_K (tensor 'name')". To bound the
 * memory a hostile file can claim, a file may hold at most 2^20 tensors
 * and 2^24 metadata values (array elements included), and metadata arrays
 * nest at most 32 deep. */
cmx_status cmx_load_gguf(cmx_named_arrays** out, cmx_metadata** metadata,
                         const char* path, cmx_stream s);

#ifdef __cplusplus
}
#endif
#endif
