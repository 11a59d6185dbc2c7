/* The .safetensors format: an 8-byte little-endian header length N, N bytes
 * of JSON {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape":
 * [2, 3], "data_offsets": [begin, end]}, ...}, then the data block; offsets
 * are relative to the data block. The header is parsed with cJSON and every
 * entry is validated against the file size before anything is allocated.
 * Writing needs no JSON library (the header is simple to emit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_common.h"
#ifdef CMX_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

static const char* OP = "load_safetensors";
/* The reference implementation's limit on the header size. */
#define MAX_HEADER 100000000ull

/* safetensors dtype names in cmx_dtype order; C64 is MLX's extension. */
static const char* const k_st_dtype[CMX_NUM_DTYPES] = {
    "BOOL", "U8",  "U16", "U32",  "U64", "I8",  "I16",
    "I32",  "I64", "F16", "BF16", "F32", "F64", "C64"};

/* ---------------- loading ---------------- */

#ifdef CMX_HAVE_CJSON
/* A JSON number that is a non-negative integer up to 2^53 (exact). */
static bool json_uint(const cJSON* j, uint64_t* out) {
  if (!cJSON_IsNumber(j)) return false;
  double d = j->valuedouble;
  if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d)
    return false;
  *out = (uint64_t)d;
  return true;
}

static cmx_status parse_metadata(const cJSON* j, cmx_metadata** metadata) {
  if (cJSON_IsNull(j)) return CMX_OK; /* MLX writes null when empty */
  if (!cJSON_IsObject(j))
    return cmx__error(CMX_ERR_VALUE, "[%s] __metadata__ must be an object", OP);
  for (const cJSON* it = j->child; it; it = it->next) {
    if (!cJSON_IsString(it) || !it->string)
      return cmx__error(CMX_ERR_VALUE,
                        "[%s] __metadata__ values must be strings (key '%s')",
                        OP, it->string ? it->string : "");
    if (metadata) {
      if (cmx__metadata_find(*metadata, it->string) >= 0)
        return cmx__error(CMX_ERR_VALUE, "[%s] duplicate __metadata__ key '%s'",
                          OP, it->string);
      cmx_status st =
          cmx_metadata_set_string(*metadata, it->string, it->valuestring);
      if (st != CMX_OK) return st;
    }
  }
  return CMX_OK;
}

/* Loads the tensor described by entry j (name it->string). */
static cmx_array load_tensor(const cmx__src* s, const cJSON* j,
                             uint64_t data_start, uint64_t data_size) {
  const char* name = j->string;
  if (!cJSON_IsObject(j))
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] entry '%s' is not an object", OP,
                     name);
  const cJSON* jd = cJSON_GetObjectItemCaseSensitive(j, "dtype");
  const cJSON* js = cJSON_GetObjectItemCaseSensitive(j, "shape");
  const cJSON* jo = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
  if (!cJSON_IsString(jd) || !cJSON_IsArray(js) || !cJSON_IsArray(jo))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] tensor '%s' needs a string 'dtype' and arrays "
                     "'shape' and 'data_offsets'",
                     OP, name);
  int dt = -1;
  for (int t = 0; t < CMX_NUM_DTYPES; t++)
    if (strcmp(jd->valuestring, k_st_dtype[t]) == 0) dt = t;
  /* 8-bit floats load as their bytes (uint8), as MLX does: from_fp8 turns
   * E4M3 bytes into values. */
  if (strcmp(jd->valuestring, "F8_E4M3") == 0) dt = CMX_UINT8;
  if (dt < 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] unsupported dtype %s (tensor '%s')",
                     OP, jd->valuestring, name);
  int64_t shape[CMX_MAX_NDIM];
  int ndim = 0;
  for (const cJSON* d = js->child; d; d = d->next) {
    uint64_t v;
    if (ndim == CMX_MAX_NDIM)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[%s] tensor '%s' has more than %d dimensions", OP, name,
                       CMX_MAX_NDIM);
    if (!json_uint(d, &v))
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[%s] tensor '%s' has an invalid dimension", OP, name);
    shape[ndim++] = (int64_t)v;
  }
  uint64_t off[2];
  if (cJSON_GetArraySize(jo) != 2 || !json_uint(jo->child, &off[0]) ||
      !json_uint(jo->child->next, &off[1]) || off[1] < off[0])
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] tensor '%s' has invalid data_offsets",
                     OP, name);
  int64_t size = cmx__shape_size(shape, ndim);
  uint64_t nbytes;
  if (size < 0 || __builtin_mul_overflow(
                      (uint64_t)size, cmx_dtype_size((cmx_dtype)dt), &nbytes))
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] tensor '%s' shape is too large", OP,
                     name);
  if (off[1] - off[0] != nbytes)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] tensor '%s' has %llu bytes of data but its shape "
                     "and dtype need %llu",
                     OP, name, (unsigned long long)(off[1] - off[0]),
                     (unsigned long long)nbytes);
  if (off[1] > data_size)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] file is truncated: tensor '%s' ends at data byte "
                     "%llu but the data block has %llu bytes",
                     OP, name, (unsigned long long)off[1],
                     (unsigned long long)data_size);
  return cmx__io_read_array(s, data_start + off[0], shape, ndim, (cmx_dtype)dt,
                            "tensor data");
}

cmx_named_arrays* cmx__load_safetensors_src(const cmx__src* s,
                                            cmx_metadata** metadata) {
  uint8_t lenb[8] = {0};
  if (s->size < 8)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Invalid json header length: the file has only "
                     "%llu bytes",
                     OP, (unsigned long long)s->size);
  if (cmx__src_read(s, lenb, 8, 0, "header length") != CMX_OK) return NULL;
  uint64_t n = cmx__le64(lenb);
  if (n == 0 || n >= MAX_HEADER || n > s->size - 8)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Invalid json header length %llu (file has %llu "
                     "bytes)",
                     OP, (unsigned long long)n, (unsigned long long)s->size);
  char* text = malloc((size_t)n);
  if (!text) return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  if (cmx__src_read(s, text, n, 8, "json header") != CMX_OK) {
    free(text);
    return NULL;
  }
  const char* end = NULL;
  cJSON* root = cJSON_ParseWithLengthOpts(text, (size_t)n, &end, false);
  if (!root) {
    size_t at = end && end >= text ? (size_t)(end - text) : 0;
    free(text);
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Invalid json header (parse error near byte %zu)", OP,
                     at);
  }
  /* Only spaces may follow the JSON (the writer pads with them). */
  bool trailing = false;
  for (const char* p = end; p && p < text + n; p++)
    if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t' && *p != 0)
      trailing = true;
  free(text);
  cmx_named_arrays* out = NULL;
  cmx_status st = CMX_OK;
  if (trailing || !cJSON_IsObject(root))
    st = cmx__error(CMX_ERR_VALUE, "[%s] Invalid json metadata: %s", OP,
                    trailing ? "data after the header object"
                             : "the header is not an object");
  if (st == CMX_OK) st = cmx_named_arrays_new(&out);
  if (st == CMX_OK && metadata) st = cmx_metadata_new(metadata);
  uint64_t data_start = 8 + n, data_size = s->size - data_start;
  bool seen_meta = false;
  for (const cJSON* it = root->child; st == CMX_OK && it; it = it->next) {
    if (!it->string) continue;
    if (strcmp(it->string, "__metadata__") == 0) {
      st = seen_meta
               ? cmx__error(CMX_ERR_VALUE, "[%s] duplicate __metadata__", OP)
               : parse_metadata(it, metadata);
      seen_meta = true;
      continue;
    }
    if (cmx__named_arrays_find(out, it->string) >= 0) {
      st = cmx__error(CMX_ERR_VALUE, "[%s] duplicate tensor name '%s'", OP,
                      it->string);
      break;
    }
    cmx_array a = load_tensor(s, it, data_start, data_size);
    st = a ? cmx__named_arrays_push(out, it->string, a) : cmx_last_status();
    cmx_array_release(a);
  }
  cJSON_Delete(root);
  if (st != CMX_OK) {
    cmx_named_arrays_free(out);
    if (metadata) {
      cmx_metadata_free(*metadata);
      *metadata = NULL;
    }
    return NULL;
  }
  return out;
}
#else
cmx_named_arrays* cmx__load_safetensors_src(const cmx__src* s,
                                            cmx_metadata** metadata) {
  (void)s;
  (void)metadata;
  return CMX__FAIL(CMX_ERR_NOT_IMPLEMENTED, "[%s] built without cJSON", OP);
}
#endif

/* ---------------- saving ---------------- */

typedef struct {
  char* s;
  size_t n, cap;
  bool oom;
} sbuf;

static void sb_add(sbuf* b, const char* p, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char* s = realloc(b->s, cap);
    if (!s) {
      b->oom = true;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
  memcpy(b->s + b->n, p, n);
  b->n += n;
  b->s[b->n] = 0;
}

static void sb_str(sbuf* b, const char* s) {
  sb_add(b, s, strlen(s));
}

/* A JSON string literal: quotes, backslashes and control bytes escaped;
 * other bytes (UTF-8) are copied. */
static void sb_json(sbuf* b, const char* s, size_t n) {
  sb_add(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      sb_add(b, esc, 2);
    } else if (c < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", c);
      sb_add(b, esc, 6);
    } else {
      sb_add(b, (const char*)&c, 1);
    }
  }
  sb_add(b, "\"", 1);
}

static cmx_status sink_write(void* ctx, const void* p, size_t n) {
  return cmx__wr_write(ctx, p, n);
}

cmx_status cmx_save_safetensors(const char* path,
                                const cmx_named_arrays* arrays,
                                const cmx_metadata* metadata) {
  const char* op = "save_safetensors";
  if (!arrays) return cmx__error(CMX_ERR_VALUE, "[%s] arrays is NULL", op);
  size_t n = cmx_named_arrays_size(arrays), nm = cmx_metadata_size(metadata);
  for (size_t i = 0; i < nm; i++)
    if (cmx_meta_get_type(cmx_metadata_value(metadata, i)) != CMX_META_STRING)
      return cmx__error(CMX_ERR_TYPE,
                        "[%s] Metadata must be a dictionary with string keys "
                        "and values",
                        op);
  if (cmx__named_arrays_find(arrays, "__metadata__") >= 0)
    return cmx__error(CMX_ERR_VALUE, "[%s] the name __metadata__ is reserved",
                      op);
  cmx_array* list = malloc((n + 1) * sizeof *list);
  if (!list) return cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  for (size_t i = 0; i < n; i++) list[i] = cmx_named_arrays_at(arrays, i);
  cmx_status st = cmx__eval_for_save(op, list, n);
  sbuf b = {0};
  sb_str(&b, "{");
  if (nm) {
    sb_str(&b, "\"__metadata__\":{");
    for (size_t i = 0; i < nm; i++) {
      const char* k = cmx_metadata_key(metadata, i);
      const char* v;
      size_t vlen;
      cmx_meta_get_string(cmx_metadata_value(metadata, i), &v, &vlen);
      if (i) sb_str(&b, ",");
      sb_json(&b, k, strlen(k));
      sb_str(&b, ":");
      sb_json(&b, v, vlen);
    }
    sb_str(&b, "}");
  }
  uint64_t off = 0;
  for (size_t i = 0; st == CMX_OK && i < n; i++) {
    const char* name = cmx_named_arrays_name(arrays, i);
    cmx_array a = list[i];
    uint64_t nbytes = (uint64_t)a->size * cmx_dtype_size(a->dtype);
    char num[48];
    if (nm || i) sb_str(&b, ",");
    sb_json(&b, name, strlen(name));
    sb_str(&b, ":{\"dtype\":\"");
    sb_str(&b, k_st_dtype[a->dtype]);
    sb_str(&b, "\",\"shape\":[");
    for (int d = 0; d < a->ndim; d++) {
      snprintf(num, sizeof num, "%s%lld", d ? "," : "", (long long)a->dims[d]);
      sb_str(&b, num);
    }
    snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}",
             (unsigned long long)off, (unsigned long long)(off + nbytes));
    sb_str(&b, num);
    off += nbytes;
  }
  sb_str(&b, "}");
  while (!b.oom && b.n % 8) sb_str(&b, " "); /* data block 8-byte aligned */
  if (st == CMX_OK && b.oom)
    st = cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  char* file =
      st == CMX_OK ? cmx__path_with_ext(op, path, ".safetensors") : NULL;
  if (st == CMX_OK && !file) st = cmx_last_status();
  cmx__wr w;
  if (st == CMX_OK && (st = cmx__wr_open(&w, op, file)) == CMX_OK) {
    uint8_t lenb[8] = {0};
    cmx__put64(lenb, b.n);
    st = cmx__wr_write(&w, lenb, 8);
    if (st == CMX_OK) st = cmx__wr_write(&w, b.s, b.n);
    for (size_t i = 0; st == CMX_OK && i < n; i++)
      st = cmx__array_bytes(list[i], false, sink_write, &w);
    if (st == CMX_OK) st = cmx__wr_commit(&w);
    cmx__wr_abort(&w); /* no-op after commit */
  }
  free(file);
  free(b.s);
  free(list);
  return st;
}
