/* GGUF (versions 2 and 3, little-endian): "GGUF", version, tensor count,
 * metadata count, the metadata (typed key/values, arrays nest), tensor
 * infos (name, dims in ggml order = reversed, ggml type, offset), padding
 * to the alignment, then the tensor data. Every count, length and offset
 * is checked against the bytes left in the file before it is used, so a
 * hostile file cannot make the loader allocate more than the file could
 * hold. Quantized tensors are converted as MLX does (gguf_quants.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf_internal.h"

static const char* OP = "load_gguf";
#define MAX_DEPTH 32
#define DEFAULT_ALIGNMENT 32
/* Caps that bound the memory a hostile file can make the loader use per
 * byte of file: each metadata value or tensor costs far more in memory than
 * its few bytes on disk. Real models stay far below (a 256k-token vocab is
 * ~1M values; large models have a few thousand tensors). */
#define MAX_META_VALUES ((uint64_t)1 << 24)
#define MAX_TENSORS ((uint64_t)1 << 20)

static const char* const k_type_names[] = {
    "F32",        "F16",        "Q4_0",       "Q4_1",     "Q4_2",    "Q4_3",
    "Q5_0",       "Q5_1",       "Q8_0",       "Q8_1",     "Q2_K",    "Q3_K",
    "Q4_K",       "Q5_K",       "Q6_K",       "Q8_K",     "IQ2_XXS", "IQ2_XS",
    "IQ3_XXS",    "IQ1_S",      "IQ4_NL",     "IQ3_S",    "IQ2_S",   "IQ4_XS",
    "I8",         "I16",        "I32",        "I64",      "F64",     "IQ1_M",
    "BF16",       "Q4_0_4_4",   "Q4_0_4_8",   "Q4_0_8_8", "TQ1_0",   "TQ2_0",
    "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4"};

const char* cmx__gguf_type_name(uint32_t t) {
  return t < sizeof k_type_names / sizeof *k_type_names ? k_type_names[t]
                                                        : "unknown";
}

/* The dtype a ggml type loads as directly, or -1. */
static int direct_dtype(uint32_t t) {
  switch (t) {
    case GGML_F32:
      return CMX_FLOAT32;
    case GGML_F16:
      return CMX_FLOAT16;
    case GGML_BF16:
      return CMX_BFLOAT16;
    case GGML_F64:
      return CMX_FLOAT64;
    case GGML_I8:
      return CMX_INT8;
    case GGML_I16:
      return CMX_INT16;
    case GGML_I32:
      return CMX_INT32;
    case GGML_I64:
      return CMX_INT64;
    default:
      return -1;
  }
}

/* ---------------- metadata ---------------- */

static size_t meta_size(uint32_t t) {
  static const size_t k[] = {1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8};
  return t <= CMX_META_FLOAT64 ? k[t] : 0; /* minimum bytes in the file */
}

/* A length-prefixed string as a NUL-terminated malloc'd copy. */
static cmx_status read_string(cmx__rd* r, char** out, uint64_t* len,
                              const char* what) {
  uint64_t n;
  cmx_status st = cmx__rd_u64(r, &n, what);
  if (st != CMX_OK) return st;
  if (n > cmx__rd_left(r))
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] file is truncated: %s of %llu bytes does not fit "
                      "in the %llu bytes left",
                      OP, what, (unsigned long long)n,
                      (unsigned long long)cmx__rd_left(r));
  char* s = malloc((size_t)n + 1);
  if (!s) return cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  st = cmx__rd_bytes(r, s, n, what);
  if (st != CMX_OK) {
    free(s);
    return st;
  }
  s[n] = 0;
  *out = s;
  *len = n;
  return CMX_OK;
}

static cmx_status read_value(cmx__rd* r, uint32_t type, cmx_meta_value** out,
                             int depth, uint64_t* count) {
  *out = NULL;
  if (++*count > MAX_META_VALUES)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] metadata holds more than %llu values", OP,
                      (unsigned long long)MAX_META_VALUES);
  uint8_t b[8] = {0};
  size_t sz = meta_size(type);
  if (!sz)
    return cmx__error(CMX_ERR_VALUE, "[%s] unknown metadata value type %u", OP,
                      type);
  if (type == CMX_META_STRING) {
    char* s;
    uint64_t n;
    cmx_status st = read_string(r, &s, &n, "metadata string");
    if (st != CMX_OK) return st;
    st = cmx_meta_new_string_n(out, s, (size_t)n);
    free(s);
    return st;
  }
  if (type == CMX_META_ARRAY) {
    uint32_t et;
    uint64_t n;
    cmx_status st = cmx__rd_u32(r, &et, "metadata array type");
    if (st == CMX_OK) st = cmx__rd_u64(r, &n, "metadata array length");
    if (st != CMX_OK) return st;
    if (!meta_size(et))
      return cmx__error(CMX_ERR_VALUE, "[%s] unknown metadata value type %u",
                        OP, et);
    if (depth >= MAX_DEPTH)
      return cmx__error(CMX_ERR_VALUE,
                        "[%s] metadata arrays nest deeper than %d", OP,
                        MAX_DEPTH);
    if (n > cmx__rd_left(r) / meta_size(et))
      return cmx__error(CMX_ERR_VALUE,
                        "[%s] file is truncated: a metadata array of %llu "
                        "%s values does not fit in the %llu bytes left",
                        OP, (unsigned long long)n, cmx_meta_type_name(et),
                        (unsigned long long)cmx__rd_left(r));
    st = cmx_meta_new_array(out, (cmx_meta_type)et);
    for (uint64_t i = 0; st == CMX_OK && i < n; i++) {
      cmx_meta_value* item;
      st = read_value(r, et, &item, depth + 1, count);
      if (st == CMX_OK) st = cmx_meta_array_append(*out, item);
    }
    if (st != CMX_OK) {
      cmx_meta_free(*out);
      *out = NULL;
    }
    return st;
  }
  cmx_status st = cmx__rd_bytes(r, b, sz, "metadata value");
  if (st != CMX_OK) return st;
  switch (type) {
    case CMX_META_UINT8:
      return cmx_meta_new_int(out, type, b[0]);
    case CMX_META_INT8:
      return cmx_meta_new_int(out, type, (int8_t)b[0]);
    case CMX_META_UINT16:
      return cmx_meta_new_int(out, type, cmx__le16(b));
    case CMX_META_INT16:
      return cmx_meta_new_int(out, type, (int16_t)cmx__le16(b));
    case CMX_META_UINT32:
      return cmx_meta_new_int(out, type, cmx__le32(b));
    case CMX_META_INT32:
      return cmx_meta_new_int(out, type, (int32_t)cmx__le32(b));
    case CMX_META_BOOL:
      return cmx_meta_new_bool(out, b[0] != 0);
    case CMX_META_UINT64:
      return cmx_meta_new_uint64(out, cmx__le64(b));
    case CMX_META_INT64:
      return cmx_meta_new_int(out, type, (int64_t)cmx__le64(b));
    case CMX_META_FLOAT32: {
      uint32_t u = cmx__le32(b);
      float f;
      memcpy(&f, &u, 4);
      return cmx_meta_new_float(out, type, f);
    }
    default: { /* FLOAT64 */
      uint64_t u = cmx__le64(b);
      double d;
      memcpy(&d, &u, 8);
      return cmx_meta_new_float(out, type, d);
    }
  }
}

/* ---------------- loading ---------------- */

typedef struct tinfo {
  char* name;
  uint32_t ndim, type;
  int64_t* shape; /* ndim dims, cmx order (reversed ggml dims) */
  uint64_t offset;
} tinfo;

static cmx_status read_tensor_info(cmx__rd* r, tinfo* t) {
  uint64_t len;
  cmx_status st = read_string(r, &t->name, &len, "tensor name");
  if (st != CMX_OK) return st;
  if (strlen(t->name) != len)
    return cmx__error(CMX_ERR_VALUE, "[%s] tensor name contains a NUL byte",
                      OP);
  st = cmx__rd_u32(r, &t->ndim, "tensor dimension count");
  if (st != CMX_OK) return st;
  if (t->ndim > CMX_MAX_NDIM)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] tensor '%s' has %u dimensions (at most %d)", OP,
                      t->name, t->ndim, CMX_MAX_NDIM);
  t->shape = malloc(t->ndim * sizeof *t->shape + 1);
  if (!t->shape)
    return cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  for (uint32_t i = 0; i < t->ndim; i++) {
    uint64_t d;
    st = cmx__rd_u64(r, &d, "tensor dimension");
    if (st != CMX_OK) return st;
    if (d > (uint64_t)INT64_MAX)
      return cmx__error(CMX_ERR_VALUE,
                        "[%s] tensor '%s' dimension is too large", OP, t->name);
    t->shape[t->ndim - 1 - i] = (int64_t)d;
  }
  st = cmx__rd_u32(r, &t->type, "tensor type");
  if (st == CMX_OK) st = cmx__rd_u64(r, &t->offset, "tensor offset");
  return st;
}

/* Bytes that tensor t takes in the file; fails for unsupported types and
 * shapes that do not fit the type's blocks. */
static cmx_status tensor_bytes(const tinfo* t, uint64_t* out) {
  int64_t size = cmx__shape_size(t->shape, (int)t->ndim);
  if (size < 0)
    return cmx__error(CMX_ERR_VALUE, "[%s] tensor '%s' shape is too large", OP,
                      t->name);
  int dt = direct_dtype(t->type);
  if (dt >= 0) {
    if (__builtin_mul_overflow((uint64_t)size, cmx_dtype_size((cmx_dtype)dt),
                               out))
      return cmx__error(CMX_ERR_VALUE, "[%s] tensor '%s' is too large", OP,
                        t->name);
    return CMX_OK;
  }
  const cmx__gguf_quant* q = cmx__gguf_quant_info(t->type);
  if (!q)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] unsupported tensor type %s (tensor '%s')", OP,
                      cmx__gguf_type_name(t->type), t->name);
  if (t->ndim == 0 || t->shape[t->ndim - 1] % q->block != 0)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] tensor '%s' of type %s needs a last dimension "
                      "that is a multiple of %u",
                      OP, t->name, cmx__gguf_type_name(t->type), q->block);
  if (__builtin_mul_overflow((uint64_t)size / q->block, q->block_bytes, out))
    return cmx__error(CMX_ERR_VALUE, "[%s] tensor '%s' is too large", OP,
                      t->name);
  return CMX_OK;
}

/* Adds the arrays of tensor t (data at file offset `at`) to out. */
static cmx_status load_tensor(const cmx__src* s, const tinfo* t, uint64_t at,
                              uint64_t nbytes, cmx_named_arrays* out) {
  int dt = direct_dtype(t->type);
  if (dt < 0)
    return cmx__gguf_load_quantized(s, t->name, t->type, t->shape, (int)t->ndim,
                                    at, out);
  if (cmx__named_arrays_find(out, t->name) >= 0)
    return cmx__error(CMX_ERR_VALUE, "[%s] Duplicate parameter name %s", OP,
                      t->name);
  (void)nbytes; /* checked against the file by the caller */
  cmx_array a = cmx__io_read_array(s, at, t->shape, (int)t->ndim, (cmx_dtype)dt,
                                   "tensor data");
  if (!a) return cmx_last_status();
  cmx_status st = cmx__named_arrays_push(out, t->name, a);
  cmx_array_release(a);
  return st;
}

static cmx_status read_alignment(const cmx_metadata* m, uint64_t* align) {
  *align = DEFAULT_ALIGNMENT;
  const cmx_meta_value* v = cmx_metadata_get(m, "general.alignment");
  if (!v) return CMX_OK;
  uint64_t a;
  if (cmx_meta_get_type(v) != CMX_META_UINT32 ||
      cmx_meta_get_uint64(v, &a) != CMX_OK || a == 0 || (a & (a - 1)))
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] general.alignment must be a uint32 power of two",
                      OP);
  *align = a;
  return CMX_OK;
}

cmx_named_arrays* cmx__load_gguf_src(const cmx__src* s,
                                     cmx_metadata** metadata) {
  cmx__rd* r = malloc(sizeof *r);
  if (!r) return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  cmx__rd_init(r, s, 0);
  uint8_t h[24] = {0};
  cmx_metadata* meta = NULL;
  cmx_named_arrays* out = NULL;
  tinfo* ts = NULL;
  uint64_t nt = 0, nkv = 0, got = 0, nvalues = 0;
  cmx_status st = CMX_OK;
  if (s->size < 24)
    st = cmx__error(CMX_ERR_VALUE,
                    "[%s] not a GGUF file (%llu bytes is too short)", OP,
                    (unsigned long long)s->size);
  if (st == CMX_OK) st = cmx__rd_bytes(r, h, 24, "header");
  if (st == CMX_OK && memcmp(h, "GGUF", 4) != 0)
    st = cmx__error(CMX_ERR_VALUE, "[%s] not a GGUF file (bad magic)", OP);
  uint32_t version = st == CMX_OK ? cmx__le32(h + 4) : 0;
  if (st == CMX_OK && version != 2 && version != 3)
    st = cmx__error(CMX_ERR_VALUE,
                    (version & 0xFFFF) == 0
                        ? "[%s] big-endian GGUF files are not supported"
                        : "[%s] unsupported GGUF version %u",
                    OP, version);
  if (st == CMX_OK) {
    nt = cmx__le64(h + 8);
    nkv = cmx__le64(h + 16);
    /* Each key/value takes >= 13 bytes, each tensor info >= 24. */
    if (nkv > cmx__rd_left(r) / 13 || nt > cmx__rd_left(r) / 24)
      st = cmx__error(CMX_ERR_VALUE,
                      "[%s] file is truncated: %llu tensors and %llu "
                      "metadata entries do not fit in %llu bytes",
                      OP, (unsigned long long)nt, (unsigned long long)nkv,
                      (unsigned long long)s->size);
    else if (nt > MAX_TENSORS)
      st = cmx__error(CMX_ERR_VALUE,
                      "[%s] %llu tensors is more than the %llu "
                      "supported",
                      OP, (unsigned long long)nt,
                      (unsigned long long)MAX_TENSORS);
  }
  if (st == CMX_OK) st = cmx_metadata_new(&meta);
  for (uint64_t i = 0; st == CMX_OK && i < nkv; i++) {
    char* key = NULL;
    uint64_t klen;
    uint32_t type;
    cmx_meta_value* v = NULL;
    st = read_string(r, &key, &klen, "metadata key");
    if (st == CMX_OK && strlen(key) != klen)
      st = cmx__error(CMX_ERR_VALUE, "[%s] metadata key contains a NUL byte",
                      OP);
    if (st == CMX_OK && cmx__metadata_find(meta, key) >= 0)
      st = cmx__error(CMX_ERR_VALUE, "[%s] duplicate metadata key '%s'", OP,
                      key);
    if (st == CMX_OK) st = cmx__rd_u32(r, &type, "metadata type");
    if (st == CMX_OK) st = read_value(r, type, &v, 0, &nvalues);
    if (st == CMX_OK) st = cmx_metadata_set(meta, key, v);
    free(key);
  }
  uint64_t align = DEFAULT_ALIGNMENT;
  if (st == CMX_OK) st = read_alignment(meta, &align);
  if (st == CMX_OK) {
    ts = calloc((size_t)nt + 1, sizeof *ts);
    if (!ts) st = cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  }
  for (; st == CMX_OK && got < nt; got++) st = read_tensor_info(r, &ts[got]);
  uint64_t data = r->pos, pad = (align - data % align) % align;
  if (st == CMX_OK && __builtin_add_overflow(data, pad, &data))
    st = cmx__error(CMX_ERR_VALUE, "[%s] bad data offset", OP);
  if (st == CMX_OK) st = cmx_named_arrays_new(&out);
  for (uint64_t i = 0; st == CMX_OK && i < nt; i++) {
    uint64_t nbytes = 0, at, end;
    st = tensor_bytes(&ts[i], &nbytes);
    if (st != CMX_OK) break;
    if (ts[i].offset % align)
      st = cmx__error(CMX_ERR_VALUE,
                      "[%s] tensor '%s' offset %llu is not a multiple of the "
                      "alignment %llu",
                      OP, ts[i].name, (unsigned long long)ts[i].offset,
                      (unsigned long long)align);
    else if (__builtin_add_overflow(data, ts[i].offset, &at) ||
             __builtin_add_overflow(at, nbytes, &end) || end > s->size)
      st = cmx__error(CMX_ERR_VALUE,
                      "[%s] file is truncated: tensor '%s' data lies past "
                      "the end of the file (%llu bytes)",
                      OP, ts[i].name, (unsigned long long)s->size);
    else
      st = load_tensor(s, &ts[i], at, nbytes, out);
  }
  for (uint64_t i = 0; ts && i < got; i++) {
    free(ts[i].name);
    free(ts[i].shape);
  }
  free(ts);
  free(r);
  if (st != CMX_OK) {
    cmx_named_arrays_free(out);
    cmx_metadata_free(meta);
    return NULL;
  }
  if (metadata)
    *metadata = meta;
  else
    cmx_metadata_free(meta);
  return out;
}

/* ---------------- saving ---------------- */

static int ggml_type_of(cmx_dtype dt) {
  for (uint32_t t = 0; t < 40; t++)
    if (direct_dtype(t) == (int)dt) return (int)t;
  return -1;
}

static cmx_status write_u32(cmx__wr* w, uint32_t v) {
  uint8_t b[4] = {0};
  cmx__put32(b, v);
  return cmx__wr_write(w, b, 4);
}
static cmx_status write_u64(cmx__wr* w, uint64_t v) {
  uint8_t b[8] = {0};
  cmx__put64(b, v);
  return cmx__wr_write(w, b, 8);
}
static cmx_status write_str(cmx__wr* w, const char* s, size_t n) {
  cmx_status st = write_u64(w, n);
  return st == CMX_OK ? cmx__wr_write(w, s, n) : st;
}

static cmx_status write_value(cmx__wr* w, const cmx_meta_value* v) {
  cmx_meta_type t = cmx_meta_get_type(v);
  uint8_t b[8] = {0};
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  switch (t) {
    case CMX_META_STRING: {
      const char* s;
      size_t n;
      cmx_meta_get_string(v, &s, &n);
      return write_str(w, s, n);
    }
    case CMX_META_ARRAY: {
      size_t n = cmx_meta_array_length(v);
      cmx_status st = write_u32(w, (uint32_t)cmx_meta_array_elem_type(v));
      if (st == CMX_OK) st = write_u64(w, n);
      for (size_t k = 0; st == CMX_OK && k < n; k++)
        st = write_value(w, cmx_meta_array_item(v, k));
      return st;
    }
    case CMX_META_FLOAT32: {
      cmx_meta_get_double(v, &d);
      float f = (float)d;
      uint32_t x;
      memcpy(&x, &f, 4);
      return write_u32(w, x);
    }
    case CMX_META_FLOAT64:
      cmx_meta_get_double(v, &d);
      memcpy(&u, &d, 8);
      return write_u64(w, u);
    case CMX_META_UINT64:
      cmx_meta_get_uint64(v, &u);
      return write_u64(w, u);
    default: /* integers and bool: low bytes, little-endian */
      cmx_meta_get_int64(v, &i);
      cmx__put64(b, (uint64_t)i);
      return cmx__wr_write(w, b, meta_size(t));
  }
}

static const uint8_t k_zeros[256];

static cmx_status pad_to(cmx__wr* w, uint64_t align) {
  uint64_t pad = (align - w->pos % align) % align;
  cmx_status st = CMX_OK;
  while (st == CMX_OK && pad) {
    size_t n = pad > sizeof k_zeros ? sizeof k_zeros : (size_t)pad;
    st = cmx__wr_write(w, k_zeros, n);
    pad -= n;
  }
  return st;
}

static cmx_status sink_write(void* ctx, const void* p, size_t n) {
  return cmx__wr_write(ctx, p, n);
}

cmx_status cmx_save_gguf(const char* path, const cmx_named_arrays* arrays,
                         const cmx_metadata* metadata) {
  const char* op = "save_gguf";
  if (!arrays) return cmx__error(CMX_ERR_VALUE, "[%s] arrays is NULL", op);
  size_t n = cmx_named_arrays_size(arrays), nm = cmx_metadata_size(metadata);
  uint64_t align = DEFAULT_ALIGNMENT;
  const cmx_meta_value* av = cmx_metadata_get(metadata, "general.alignment");
  if (av && (cmx_meta_get_type(av) != CMX_META_UINT32 ||
             cmx_meta_get_uint64(av, &align) != CMX_OK || align == 0 ||
             (align & (align - 1))))
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] general.alignment must be a uint32 power of two",
                      op);
  cmx_array* list = malloc((n + 1) * sizeof *list);
  if (!list) return cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  cmx_status st = CMX_OK;
  for (size_t i = 0; i < n; i++) {
    list[i] = cmx_named_arrays_at(arrays, i);
    if (st == CMX_OK && ggml_type_of(cmx_array_dtype(list[i])) < 0)
      st = cmx__error(CMX_ERR_TYPE, "[%s] dtype %s is not supported", op,
                      cmx_dtype_name(cmx_array_dtype(list[i])));
  }
  if (st == CMX_OK) st = cmx__eval_for_save(op, list, n);
  char* file = st == CMX_OK ? cmx__path_with_ext(op, path, ".gguf") : NULL;
  if (st == CMX_OK && !file) st = cmx_last_status();
  cmx__wr w;
  if (st == CMX_OK && (st = cmx__wr_open(&w, op, file)) == CMX_OK) {
    st = cmx__wr_write(&w, "GGUF", 4);
    if (st == CMX_OK) st = write_u32(&w, 3);
    if (st == CMX_OK) st = write_u64(&w, n);
    if (st == CMX_OK) st = write_u64(&w, nm);
    for (size_t i = 0; st == CMX_OK && i < nm; i++) {
      const char* k = cmx_metadata_key(metadata, i);
      const cmx_meta_value* v = cmx_metadata_value(metadata, i);
      st = write_str(&w, k, strlen(k));
      if (st == CMX_OK) st = write_u32(&w, (uint32_t)cmx_meta_get_type(v));
      if (st == CMX_OK) st = write_value(&w, v);
    }
    uint64_t off = 0;
    for (size_t i = 0; st == CMX_OK && i < n; i++) {
      const char* name = cmx_named_arrays_name(arrays, i);
      cmx_array a = list[i];
      st = write_str(&w, name, strlen(name));
      if (st == CMX_OK) st = write_u32(&w, (uint32_t)a->ndim);
      for (int d = a->ndim - 1; st == CMX_OK && d >= 0; d--)
        st = write_u64(&w, (uint64_t)a->dims[d]);
      if (st == CMX_OK) st = write_u32(&w, (uint32_t)ggml_type_of(a->dtype));
      if (st == CMX_OK) st = write_u64(&w, off);
      off += (uint64_t)a->size * cmx_dtype_size(a->dtype);
      off += (align - off % align) % align;
    }
    for (size_t i = 0; st == CMX_OK && i < n; i++) {
      st = pad_to(&w, align);
      if (st == CMX_OK) st = cmx__array_bytes(list[i], false, sink_write, &w);
    }
    if (st == CMX_OK) st = cmx__wr_commit(&w);
    cmx__wr_abort(&w); /* no-op after commit */
  }
  free(file);
  free(list);
  return st;
}
