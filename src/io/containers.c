/* The public containers of the io API: named arrays (ordered name -> array),
 * metadata values (GGUF's typed values, arrays nest) and metadata maps
 * (ordered key -> value). Lookups use a small open-addressing index so that
 * files with many tensors load in linear time. */
#include <stdlib.h>
#include <string.h>

#include "io/io_common.h"

/* ---------------- ordered keys with a hash index ---------------- */

typedef struct keyed {
  char** keys;
  size_t n, cap;
  size_t* slots; /* index + 1, 0 = empty; nslots is a power of two */
  size_t nslots;
} keyed;

static uint64_t hash_str(const char* s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static int64_t keyed_find(const keyed* k, const char* key) {
  if (!k->nslots || !key) return -1;
  size_t mask = k->nslots - 1;
  for (size_t i = (size_t)hash_str(key) & mask;; i = (i + 1) & mask) {
    size_t v = k->slots[i];
    if (!v) return -1;
    if (strcmp(k->keys[v - 1], key) == 0) return (int64_t)(v - 1);
  }
}

static void keyed_insert_slot(keyed* k, size_t index) {
  size_t mask = k->nslots - 1;
  size_t i = (size_t)hash_str(k->keys[index]) & mask;
  while (k->slots[i]) i = (i + 1) & mask;
  k->slots[i] = index + 1;
}

/* Makes room for one more key (list and index); false when out of memory. */
static bool keyed_reserve(keyed* k) {
  if (k->n == k->cap) {
    size_t cap = k->cap ? k->cap * 2 : 8;
    char** keys = realloc(k->keys, cap * sizeof *keys);
    if (!keys) return false;
    k->keys = keys;
    k->cap = cap;
  }
  if ((k->n + 1) * 2 > k->nslots) {
    size_t ns = k->nslots ? k->nslots * 2 : 16;
    size_t* slots = calloc(ns, sizeof *slots);
    if (!slots) return false;
    free(k->slots);
    k->slots = slots;
    k->nslots = ns;
    for (size_t i = 0; i < k->n; i++) keyed_insert_slot(k, i);
  }
  return true;
}

/* Appends an owned key (the caller reserved room and checked absence). */
static void keyed_push(keyed* k, char* key) {
  k->keys[k->n] = key;
  keyed_insert_slot(k, k->n);
  k->n++;
}

static void keyed_free(keyed* k) {
  for (size_t i = 0; i < k->n; i++) free(k->keys[i]);
  free(k->keys);
  free(k->slots);
}

/* ---------------- named arrays ---------------- */

struct cmx_named_arrays {
  keyed k;
  cmx_array* arrays;
  size_t acap;
};

cmx_status cmx_named_arrays_new(cmx_named_arrays** out) {
  if (!out)
    return cmx__error(CMX_ERR_VALUE, "[named_arrays] output pointer is NULL");
  *out = calloc(1, sizeof **out);
  if (!*out)
    return cmx__error(CMX_ERR_MEMORY, "[named_arrays] out of host memory");
  return CMX_OK;
}

void cmx_named_arrays_free(cmx_named_arrays* m) {
  if (!m) return;
  for (size_t i = 0; i < m->k.n; i++) cmx_array_release(m->arrays[i]);
  free(m->arrays);
  keyed_free(&m->k);
  free(m);
}

cmx_status cmx__named_arrays_push(cmx_named_arrays* m, const char* name,
                                  cmx_array a) {
  if (!keyed_reserve(&m->k))
    return cmx__error(CMX_ERR_MEMORY, "[named_arrays] out of host memory");
  if (m->acap < m->k.cap) {
    cmx_array* arr = realloc(m->arrays, m->k.cap * sizeof *arr);
    if (!arr)
      return cmx__error(CMX_ERR_MEMORY, "[named_arrays] out of host memory");
    m->arrays = arr;
    m->acap = m->k.cap;
  }
  char* key = cmx__strndup("named_arrays", name, strlen(name));
  if (!key) return CMX_ERR_MEMORY;
  m->arrays[m->k.n] = cmx_array_retain(a);
  keyed_push(&m->k, key);
  return CMX_OK;
}

int64_t cmx__named_arrays_find(const cmx_named_arrays* m, const char* name) {
  return m ? keyed_find(&m->k, name) : -1;
}

cmx_status cmx_named_arrays_set(cmx_named_arrays* m, const char* name,
                                cmx_array a) {
  if (!m || !name || !a)
    return cmx__error(CMX_ERR_VALUE,
                      "[named_arrays] map, name and array must not be NULL");
  int64_t i = keyed_find(&m->k, name);
  if (i >= 0) {
    cmx_array_retain(a);
    cmx_array_release(m->arrays[i]);
    m->arrays[i] = a;
    return CMX_OK;
  }
  return cmx__named_arrays_push(m, name, a);
}

size_t cmx_named_arrays_size(const cmx_named_arrays* m) {
  return m ? m->k.n : 0;
}
const char* cmx_named_arrays_name(const cmx_named_arrays* m, size_t i) {
  return m && i < m->k.n ? m->k.keys[i] : NULL;
}
cmx_array cmx_named_arrays_at(const cmx_named_arrays* m, size_t i) {
  return m && i < m->k.n ? m->arrays[i] : NULL;
}
cmx_array cmx_named_arrays_get(const cmx_named_arrays* m, const char* name) {
  int64_t i = cmx__named_arrays_find(m, name);
  return i >= 0 ? m->arrays[i] : NULL;
}

/* ---------------- metadata values ---------------- */

struct cmx_meta_value {
  cmx_meta_type type;
  cmx_meta_type elem; /* ARRAY: element type */
  union {
    int64_t i;
    uint64_t u;
    double f;
  } v;
  char* str;                    /* STRING: bytes + NUL */
  size_t len, cap;              /* STRING: bytes; ARRAY: items */
  struct cmx_meta_value* items; /* ARRAY: elements, stored inline */
};

static const char* const k_meta_names[] = {
    "uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
    "bool",  "string", "array",  "uint64", "int64",  "float64"};

const char* cmx_meta_type_name(cmx_meta_type t) {
  return (unsigned)t <= CMX_META_FLOAT64 ? k_meta_names[t] : "invalid";
}

static bool meta_valid_type(cmx_meta_type t) {
  return (unsigned)t <= CMX_META_FLOAT64;
}

static void meta_clear(cmx_meta_value* v) {
  if (v->type == CMX_META_STRING) free(v->str);
  if (v->type == CMX_META_ARRAY) {
    for (size_t i = 0; i < v->len; i++) meta_clear(&v->items[i]);
    free(v->items);
  }
}

void cmx_meta_free(cmx_meta_value* v) {
  if (!v) return;
  meta_clear(v);
  free(v);
}

static cmx_status meta_alloc(cmx_meta_value** out, cmx_meta_type t) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[meta] output pointer is NULL");
  *out = calloc(1, sizeof **out);
  if (!*out) return cmx__error(CMX_ERR_MEMORY, "[meta] out of host memory");
  (*out)->type = t;
  return CMX_OK;
}

cmx_status cmx_meta_new_int(cmx_meta_value** out, cmx_meta_type t, int64_t v) {
  int64_t lo = 0, hi = 0;
  switch (t) {
    case CMX_META_UINT8:
      hi = UINT8_MAX;
      break;
    case CMX_META_INT8:
      lo = INT8_MIN, hi = INT8_MAX;
      break;
    case CMX_META_UINT16:
      hi = UINT16_MAX;
      break;
    case CMX_META_INT16:
      lo = INT16_MIN, hi = INT16_MAX;
      break;
    case CMX_META_UINT32:
      hi = UINT32_MAX;
      break;
    case CMX_META_INT32:
      lo = INT32_MIN, hi = INT32_MAX;
      break;
    case CMX_META_BOOL:
      hi = 1;
      break;
    case CMX_META_UINT64:
      hi = INT64_MAX;
      break;
    case CMX_META_INT64:
      lo = INT64_MIN, hi = INT64_MAX;
      break;
    default:
      if (out) *out = NULL;
      return cmx__error(CMX_ERR_VALUE, "[meta] %s is not an integer type",
                        cmx_meta_type_name(t));
  }
  if (v < lo || v > hi) {
    if (out) *out = NULL;
    return cmx__error(CMX_ERR_VALUE, "[meta] value %lld is out of range for %s",
                      (long long)v, cmx_meta_type_name(t));
  }
  cmx_status st = meta_alloc(out, t);
  if (st == CMX_OK) (*out)->v.i = v;
  return st;
}

cmx_status cmx_meta_new_uint64(cmx_meta_value** out, uint64_t v) {
  cmx_status st = meta_alloc(out, CMX_META_UINT64);
  if (st == CMX_OK) (*out)->v.u = v;
  return st;
}

cmx_status cmx_meta_new_float(cmx_meta_value** out, cmx_meta_type t, double v) {
  if (t != CMX_META_FLOAT32 && t != CMX_META_FLOAT64) {
    if (out) *out = NULL;
    return cmx__error(CMX_ERR_VALUE, "[meta] %s is not a float type",
                      cmx_meta_type_name(t));
  }
  cmx_status st = meta_alloc(out, t);
  if (st == CMX_OK) (*out)->v.f = t == CMX_META_FLOAT32 ? (double)(float)v : v;
  return st;
}

cmx_status cmx_meta_new_bool(cmx_meta_value** out, bool v) {
  return cmx_meta_new_int(out, CMX_META_BOOL, v ? 1 : 0);
}

cmx_status cmx_meta_new_string_n(cmx_meta_value** out, const char* s,
                                 size_t len) {
  if (!s && len) {
    if (out) *out = NULL;
    return cmx__error(CMX_ERR_VALUE, "[meta] string is NULL");
  }
  cmx_status st = meta_alloc(out, CMX_META_STRING);
  if (st != CMX_OK) return st;
  (*out)->str = cmx__strndup("meta", s ? s : "", len);
  if (!(*out)->str) {
    free(*out);
    *out = NULL;
    return CMX_ERR_MEMORY;
  }
  (*out)->len = len;
  return CMX_OK;
}

cmx_status cmx_meta_new_string(cmx_meta_value** out, const char* s) {
  if (!s) {
    if (out) *out = NULL;
    return cmx__error(CMX_ERR_VALUE, "[meta] string is NULL");
  }
  return cmx_meta_new_string_n(out, s, strlen(s));
}

cmx_status cmx_meta_new_array(cmx_meta_value** out, cmx_meta_type elem) {
  if (!meta_valid_type(elem)) {
    if (out) *out = NULL;
    return cmx__error(CMX_ERR_VALUE, "[meta] invalid element type %d",
                      (int)elem);
  }
  cmx_status st = meta_alloc(out, CMX_META_ARRAY);
  if (st == CMX_OK) (*out)->elem = elem;
  return st;
}

cmx_status cmx_meta_array_append(cmx_meta_value* array, cmx_meta_value* item) {
  cmx_status st = CMX_OK;
  if (!array || !item)
    st = cmx__error(CMX_ERR_VALUE, "[meta] array and item must not be NULL");
  else if (array->type != CMX_META_ARRAY)
    st = cmx__error(CMX_ERR_TYPE, "[meta] cannot append to a %s value",
                    cmx_meta_type_name(array->type));
  else if (item->type != array->elem)
    st = cmx__error(CMX_ERR_TYPE, "[meta] cannot append a %s to an array of %s",
                    cmx_meta_type_name(item->type),
                    cmx_meta_type_name(array->elem));
  if (st == CMX_OK && array->len == array->cap) {
    size_t cap = array->cap ? array->cap * 2 : 4;
    cmx_meta_value* items = realloc(array->items, cap * sizeof *items);
    if (!items)
      st = cmx__error(CMX_ERR_MEMORY, "[meta] out of host memory");
    else {
      array->items = items;
      array->cap = cap;
    }
  }
  if (st != CMX_OK) {
    cmx_meta_free(item);
    return st;
  }
  array->items[array->len++] = *item; /* move the contents, drop the shell */
  free(item);
  return CMX_OK;
}

static cmx_status meta_copy_into(cmx_meta_value* dst, const cmx_meta_value* v) {
  *dst = *v;
  dst->str = NULL;
  dst->items = NULL;
  dst->cap = 0;
  if (v->type == CMX_META_STRING) {
    dst->str = cmx__strndup("meta", v->str, v->len);
    return dst->str ? CMX_OK : CMX_ERR_MEMORY;
  }
  if (v->type == CMX_META_ARRAY && v->len) {
    dst->items = calloc(v->len, sizeof *dst->items);
    dst->len = 0;
    if (!dst->items)
      return cmx__error(CMX_ERR_MEMORY, "[meta] out of host memory");
    dst->cap = v->len;
    for (size_t i = 0; i < v->len; i++) {
      cmx_status st = meta_copy_into(&dst->items[i], &v->items[i]);
      dst->len = i + 1;
      if (st != CMX_OK) return st;
    }
  }
  return CMX_OK;
}

cmx_status cmx_meta_copy(cmx_meta_value** out, const cmx_meta_value* v) {
  if (!v) {
    if (out) *out = NULL;
    return cmx__error(CMX_ERR_VALUE, "[meta] value is NULL");
  }
  cmx_status st = meta_alloc(out, v->type);
  if (st != CMX_OK) return st;
  st = meta_copy_into(*out, v);
  if (st != CMX_OK) {
    cmx_meta_free(*out);
    *out = NULL;
  }
  return st;
}

cmx_meta_type cmx_meta_get_type(const cmx_meta_value* v) {
  return v ? v->type : (cmx_meta_type)-1;
}

static bool meta_is_int(cmx_meta_type t) {
  return t <= CMX_META_INT32 || t == CMX_META_BOOL || t == CMX_META_UINT64 ||
         t == CMX_META_INT64;
}

static cmx_status meta_bad(const cmx_meta_value* v, const char* want) {
  return cmx__error(v ? CMX_ERR_TYPE : CMX_ERR_VALUE,
                    "[meta] expected %s, got %s", want,
                    v ? cmx_meta_type_name(v->type) : "NULL");
}

cmx_status cmx_meta_get_int64(const cmx_meta_value* v, int64_t* out) {
  if (!v || !meta_is_int(v->type)) return meta_bad(v, "an integer");
  if (v->type == CMX_META_UINT64 && v->v.u > (uint64_t)INT64_MAX)
    return cmx__error(CMX_ERR_VALUE, "[meta] value %llu does not fit int64",
                      (unsigned long long)v->v.u);
  *out = v->v.i;
  return CMX_OK;
}

cmx_status cmx_meta_get_uint64(const cmx_meta_value* v, uint64_t* out) {
  if (!v || !meta_is_int(v->type)) return meta_bad(v, "an integer");
  if (v->type != CMX_META_UINT64 && v->v.i < 0)
    return cmx__error(CMX_ERR_VALUE, "[meta] value %lld is negative",
                      (long long)v->v.i);
  *out = v->v.u;
  return CMX_OK;
}

cmx_status cmx_meta_get_double(const cmx_meta_value* v, double* out) {
  if (v && (v->type == CMX_META_FLOAT32 || v->type == CMX_META_FLOAT64)) {
    *out = v->v.f;
    return CMX_OK;
  }
  if (!v || !meta_is_int(v->type)) return meta_bad(v, "a number");
  *out = v->type == CMX_META_UINT64 ? (double)v->v.u : (double)v->v.i;
  return CMX_OK;
}

cmx_status cmx_meta_get_bool(const cmx_meta_value* v, bool* out) {
  if (!v || v->type != CMX_META_BOOL) return meta_bad(v, "a bool");
  *out = v->v.i != 0;
  return CMX_OK;
}

cmx_status cmx_meta_get_string(const cmx_meta_value* v, const char** s,
                               size_t* len) {
  if (!v || v->type != CMX_META_STRING) return meta_bad(v, "a string");
  *s = v->str;
  if (len) *len = v->len;
  return CMX_OK;
}

cmx_meta_type cmx_meta_array_elem_type(const cmx_meta_value* v) {
  return v && v->type == CMX_META_ARRAY ? v->elem : (cmx_meta_type)-1;
}
size_t cmx_meta_array_length(const cmx_meta_value* v) {
  return v && v->type == CMX_META_ARRAY ? v->len : 0;
}
const cmx_meta_value* cmx_meta_array_item(const cmx_meta_value* v, size_t i) {
  return v && v->type == CMX_META_ARRAY && i < v->len ? &v->items[i] : NULL;
}

/* The dtype of a numeric or bool meta type, or -1. */
static int meta_dtype(cmx_meta_type t) {
  switch (t) {
    case CMX_META_UINT8:
      return CMX_UINT8;
    case CMX_META_INT8:
      return CMX_INT8;
    case CMX_META_UINT16:
      return CMX_UINT16;
    case CMX_META_INT16:
      return CMX_INT16;
    case CMX_META_UINT32:
      return CMX_UINT32;
    case CMX_META_INT32:
      return CMX_INT32;
    case CMX_META_FLOAT32:
      return CMX_FLOAT32;
    case CMX_META_BOOL:
      return CMX_BOOL;
    case CMX_META_UINT64:
      return CMX_UINT64;
    case CMX_META_INT64:
      return CMX_INT64;
    case CMX_META_FLOAT64:
      return CMX_FLOAT64;
    default:
      return -1;
  }
}

/* Stores scalar v as one element of dtype dt at p. */
static void meta_store(const cmx_meta_value* v, cmx_dtype dt, uint8_t* p) {
  switch (dt) {
    case CMX_FLOAT32: {
      float f = (float)v->v.f;
      memcpy(p, &f, 4);
      break;
    }
    case CMX_FLOAT64:
      memcpy(p, &v->v.f, 8);
      break;
    default: {
      uint64_t u = v->v.u; /* integers: little-endian low bytes */
      memcpy(p, &u, cmx_dtype_size(dt));
    }
  }
}

cmx_status cmx_meta_to_array(cmx_array* out, const cmx_meta_value* v) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[meta] output pointer is NULL");
  *out = NULL;
  if (!v) return cmx__error(CMX_ERR_VALUE, "[meta] value is NULL");
  bool arr = v->type == CMX_META_ARRAY;
  int dt = meta_dtype(arr ? v->elem : v->type);
  if (dt < 0)
    return cmx__error(CMX_ERR_TYPE, "[meta] cannot make an array of %s%s",
                      arr ? "an array of " : "",
                      cmx_meta_type_name(arr ? v->elem : v->type));
  size_t n = arr ? v->len : 1, isz = cmx_dtype_size((cmx_dtype)dt);
  uint8_t* data = malloc(n * isz + 1);
  if (!data) return cmx__error(CMX_ERR_MEMORY, "[meta] out of host memory");
  for (size_t i = 0; i < n; i++)
    meta_store(arr ? &v->items[i] : v, (cmx_dtype)dt, data + i * isz);
  int64_t shape[1] = {(int64_t)n};
  cmx_status st =
      cmx_array_from_data(out, data, shape, arr ? 1 : 0, (cmx_dtype)dt);
  free(data);
  return st;
}

/* A meta scalar of type t from element p of dtype dt. */
static cmx_meta_value meta_load(cmx_meta_type t, cmx_dtype dt,
                                const uint8_t* p) {
  cmx_meta_value m;
  memset(&m, 0, sizeof m);
  m.type = t;
  if (dt == CMX_FLOAT32) {
    float f;
    memcpy(&f, p, 4);
    m.v.f = f;
  } else if (dt == CMX_FLOAT64) {
    memcpy(&m.v.f, p, 8);
  } else {
    switch (dt) { /* exact integer loads */
      case CMX_BOOL:
        m.v.i = p[0] != 0;
        break;
      case CMX_UINT8:
        m.v.u = p[0];
        break;
      case CMX_INT8:
        m.v.i = (int8_t)p[0];
        break;
      case CMX_UINT16: {
        uint16_t x;
        memcpy(&x, p, 2);
        m.v.u = x;
        break;
      }
      case CMX_INT16: {
        int16_t x;
        memcpy(&x, p, 2);
        m.v.i = x;
        break;
      }
      case CMX_UINT32: {
        uint32_t x;
        memcpy(&x, p, 4);
        m.v.u = x;
        break;
      }
      case CMX_INT32: {
        int32_t x;
        memcpy(&x, p, 4);
        m.v.i = x;
        break;
      }
      default:
        memcpy(&m.v.u, p, 8);
        break;
    }
  }
  return m;
}

cmx_status cmx_meta_from_array(cmx_meta_value** out, cmx_array a) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[meta] output pointer is NULL");
  *out = NULL;
  if (!a) return cmx__error(CMX_ERR_VALUE, "[meta] array is NULL");
  cmx_meta_type t = CMX_META_UINT8;
  bool found = false;
  for (int i = 0; i <= CMX_META_FLOAT64; i++)
    if (meta_dtype((cmx_meta_type)i) == (int)a->dtype) {
      t = (cmx_meta_type)i;
      found = true;
    }
  if (!found)
    return cmx__error(CMX_ERR_TYPE, "[meta] arrays of %s cannot be metadata",
                      cmx_dtype_name(a->dtype));
  if (a->ndim > 1)
    return cmx__error(CMX_ERR_VALUE,
                      "[meta] only 0-d and 1-d arrays can be metadata, got "
                      "%d dimensions",
                      a->ndim);
  size_t n = (size_t)a->size, isz = cmx_dtype_size(a->dtype);
  uint8_t* data = malloc(n * isz + 1);
  if (!data) return cmx__error(CMX_ERR_MEMORY, "[meta] out of host memory");
  cmx_status st = cmx_array_copy_to(a, data, n * isz);
  if (st == CMX_OK && a->ndim == 0) {
    st = meta_alloc(out, t);
    if (st == CMX_OK) **out = meta_load(t, a->dtype, data);
  } else if (st == CMX_OK) {
    st = cmx_meta_new_array(out, t);
    if (st == CMX_OK && n) {
      (*out)->items = malloc(n * sizeof *(*out)->items);
      if (!(*out)->items) {
        st = cmx__error(CMX_ERR_MEMORY, "[meta] out of host memory");
        cmx_meta_free(*out);
        *out = NULL;
      } else {
        for (size_t i = 0; i < n; i++)
          (*out)->items[i] = meta_load(t, a->dtype, data + i * isz);
        (*out)->len = (*out)->cap = n;
      }
    }
  }
  free(data);
  return st;
}

/* ---------------- metadata maps ---------------- */

struct cmx_metadata {
  keyed k;
  cmx_meta_value** values;
  size_t vcap;
};

cmx_status cmx_metadata_new(cmx_metadata** out) {
  if (!out)
    return cmx__error(CMX_ERR_VALUE, "[metadata] output pointer is NULL");
  *out = calloc(1, sizeof **out);
  if (!*out) return cmx__error(CMX_ERR_MEMORY, "[metadata] out of host memory");
  return CMX_OK;
}

void cmx_metadata_free(cmx_metadata* m) {
  if (!m) return;
  for (size_t i = 0; i < m->k.n; i++) cmx_meta_free(m->values[i]);
  free(m->values);
  keyed_free(&m->k);
  free(m);
}

int64_t cmx__metadata_find(const cmx_metadata* m, const char* key) {
  return m ? keyed_find(&m->k, key) : -1;
}

cmx_status cmx_metadata_set(cmx_metadata* m, const char* key,
                            cmx_meta_value* v) {
  if (!m || !key || !v) {
    cmx_meta_free(v);
    return cmx__error(CMX_ERR_VALUE,
                      "[metadata] map, key and value must not be NULL");
  }
  int64_t i = keyed_find(&m->k, key);
  if (i >= 0) {
    cmx_meta_free(m->values[i]);
    m->values[i] = v;
    return CMX_OK;
  }
  char* k = NULL;
  bool ok = keyed_reserve(&m->k);
  if (ok && m->vcap < m->k.cap) {
    cmx_meta_value** vals = realloc(m->values, m->k.cap * sizeof *vals);
    ok = vals != NULL;
    if (ok) {
      m->values = vals;
      m->vcap = m->k.cap;
    }
  }
  if (ok) k = cmx__strndup("metadata", key, strlen(key));
  if (!k) {
    cmx_meta_free(v);
    return cmx__error(CMX_ERR_MEMORY, "[metadata] out of host memory");
  }
  m->values[m->k.n] = v;
  keyed_push(&m->k, k);
  return CMX_OK;
}

cmx_status cmx_metadata_set_string(cmx_metadata* m, const char* key,
                                   const char* value) {
  cmx_meta_value* v;
  cmx_status st = cmx_meta_new_string(&v, value);
  if (st != CMX_OK) return st;
  return cmx_metadata_set(m, key, v);
}

size_t cmx_metadata_size(const cmx_metadata* m) {
  return m ? m->k.n : 0;
}
const char* cmx_metadata_key(const cmx_metadata* m, size_t i) {
  return m && i < m->k.n ? m->k.keys[i] : NULL;
}
const cmx_meta_value* cmx_metadata_value(const cmx_metadata* m, size_t i) {
  return m && i < m->k.n ? m->values[i] : NULL;
}
const cmx_meta_value* cmx_metadata_get(const cmx_metadata* m, const char* key) {
  int64_t i = cmx__metadata_find(m, key);
  return i >= 0 ? m->values[i] : NULL;
}
