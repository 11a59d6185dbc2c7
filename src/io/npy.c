/* The .npy format (numpy's NEP 1): magic "\x93NUMPY", version, a header
 * that is a Python dict literal {'descr': '<f4', 'fortran_order': False,
 * 'shape': (2, 3), }, then the raw data. bfloat16 is "<V2", as MLX writes
 * it. The header parser accepts exactly that dict (any key order, either
 * quote style, optional trailing commas) and nothing else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmx/ops.h"
#include "io/io_common.h"

static const uint8_t k_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
#define NPY_MAX_HEADER ((uint32_t)1 << 20)

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_ORDER '>'
#else
#define HOST_ORDER '<'
#endif

/* numpy type strings, in cmx_dtype order (byte order added on write). */
static const char* const k_descr[CMX_NUM_DTYPES] = {
    "b1", "u1", "u2", "u4", "u8", "i1", "i2",
    "i4", "i8", "f2", "V2", "f4", "f8", "c8"};

/* ---------------- header parsing ---------------- */

typedef struct {
  const char* s;
  size_t n, i;
} cursor;

static void skip_ws(cursor* c) {
  while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' ||
                         c->s[c->i] == '\n' || c->s[c->i] == '\r'))
    c->i++;
}

static bool eat(cursor* c, char ch) {
  skip_ws(c);
  if (c->i < c->n && c->s[c->i] == ch) {
    c->i++;
    return true;
  }
  return false;
}

/* A quoted string without escapes into out (capacity cap). */
static bool parse_str(cursor* c, char* out, size_t cap) {
  skip_ws(c);
  if (c->i >= c->n || (c->s[c->i] != '\'' && c->s[c->i] != '"')) return false;
  char q = c->s[c->i++];
  size_t k = 0;
  while (c->i < c->n && c->s[c->i] != q) {
    if (c->s[c->i] == '\\' || k + 1 >= cap) return false;
    out[k++] = c->s[c->i++];
  }
  if (c->i >= c->n) return false;
  c->i++;
  out[k] = 0;
  return true;
}

static bool parse_word(cursor* c, const char* w) {
  skip_ws(c);
  size_t n = strlen(w);
  if (c->n - c->i < n || memcmp(c->s + c->i, w, n) != 0) return false;
  c->i += n;
  return true;
}

/* (d0, d1, ...) of non-negative integers (Python 2's 'L' suffix allowed). */
static bool parse_shape(cursor* c, int64_t* shape, int* ndim, bool* too_many) {
  if (!eat(c, '(')) return false;
  *ndim = 0;
  for (;;) {
    if (eat(c, ')')) return true;
    skip_ws(c);
    if (c->i >= c->n || c->s[c->i] < '0' || c->s[c->i] > '9') return false;
    int64_t v = 0;
    while (c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9') {
      if (__builtin_mul_overflow(v, 10, &v) ||
          __builtin_add_overflow(v, c->s[c->i] - '0', &v))
        return false;
      c->i++;
    }
    if (c->i < c->n && c->s[c->i] == 'L') c->i++;
    if (*ndim == CMX_MAX_NDIM) {
      *too_many = true;
      return false;
    }
    shape[(*ndim)++] = v;
    if (!eat(c, ',')) return eat(c, ')');
  }
}

typedef struct {
  cmx_dtype dtype;
  bool swap, fortran;
  int ndim;
  int64_t shape[CMX_MAX_NDIM];
} npy_header;

/* Maps a descr ("<f4", "|b1", "<V2") to a dtype; false if unsupported. */
static bool parse_descr(const char* d, npy_header* h) {
  char order = '|';
  if (*d == '<' || *d == '>' || *d == '|' || *d == '=') order = *d++;
  if (!d[0] || !d[1]) return false;
  for (int t = 0; t < CMX_NUM_DTYPES; t++) {
    if (strcmp(d, k_descr[t]) != 0) continue;
    h->dtype = (cmx_dtype)t;
    h->swap = cmx_dtype_size(h->dtype) > 1 && order != '|' && order != '=' &&
              order != HOST_ORDER;
    return true;
  }
  /* numpy also spells bool "?" in some writers. */
  if (strcmp(d, "?") == 0 || strcmp(d, "?1") == 0) {
    h->dtype = CMX_BOOL;
    h->swap = false;
    return true;
  }
  return false;
}

static cmx_status parse_header(const char* op, const char* s, size_t n,
                               npy_header* h) {
  cursor c = {s, n, 0};
  bool have_descr = false, have_order = false, have_shape = false;
  char key[32], descr[32];
  if (!eat(&c, '{')) goto bad;
  for (;;) {
    if (eat(&c, '}')) break;
    if (!parse_str(&c, key, sizeof key) || !eat(&c, ':')) goto bad;
    if (strcmp(key, "descr") == 0 && !have_descr) {
      if (!parse_str(&c, descr, sizeof descr)) {
        skip_ws(&c);
        if (c.i >= c.n || c.s[c.i] == '\'' || c.s[c.i] == '"') goto bad;
        return cmx__error(CMX_ERR_VALUE,
                          "[%s] unsupported npy dtype description (structured "
                          "or unknown) at header byte %zu",
                          op, c.i);
      }
      if (!parse_descr(descr, h))
        return cmx__error(CMX_ERR_VALUE, "[%s] unsupported npy dtype '%s'", op,
                          descr);
      have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
      if (parse_word(&c, "True"))
        h->fortran = true;
      else if (parse_word(&c, "False"))
        h->fortran = false;
      else
        goto bad;
      have_order = true;
    } else if (strcmp(key, "shape") == 0 && !have_shape) {
      bool too_many = false;
      if (!parse_shape(&c, h->shape, &h->ndim, &too_many)) {
        if (too_many)
          return cmx__error(CMX_ERR_VALUE,
                            "[%s] npy array has more than %d dimensions", op,
                            CMX_MAX_NDIM);
        goto bad;
      }
      have_shape = true;
    } else {
      return cmx__error(CMX_ERR_VALUE,
                        "[%s] unexpected or repeated key '%s' in npy header",
                        op, key);
    }
    if (!eat(&c, ',')) {
      if (eat(&c, '}')) break;
      goto bad;
    }
  }
  skip_ws(&c);
  while (c.i < c.n && c.s[c.i] == 0) c.i++; /* some writers pad with NUL */
  if (c.i != c.n) goto bad;
  if (!have_descr || !have_order || !have_shape)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] npy header lacks 'descr', 'fortran_order' or "
                      "'shape'",
                      op);
  return CMX_OK;
bad:
  return cmx__error(CMX_ERR_VALUE, "[%s] Invalid npy header near byte %zu", op,
                    c.i);
}

/* ---------------- reading ---------------- */

static cmx_status in_read(cmx__npy_in* in, void* dst, uint64_t n,
                          const char* what) {
  if (n > in->avail)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] file is truncated: %s needs %llu bytes but only "
                      "%llu remain",
                      in->op, what, (unsigned long long)n,
                      (unsigned long long)in->avail);
  cmx_status st = in->read(in->ctx, dst, n, what);
  if (st == CMX_OK) in->avail -= n;
  return st;
}

/* The lazy array of a .npy file's data at *in->pos: Fortran-order data
 * as the transpose of the reversed shape. */
static cmx_array lazy_npy(cmx__npy_in* in, const npy_header* h) {
  int64_t shape[CMX_MAX_NDIM];
  for (int i = 0; i < h->ndim; i++)
    shape[i] = h->fortran ? h->shape[h->ndim - 1 - i] : h->shape[i];
  cmx_array a = cmx__io_read_array(in->lazy, *in->pos, shape, h->ndim, h->dtype,
                                   "npy data");
  if (!a || !h->fortran || h->ndim < 2) return a;
  cmx_array t = NULL;
  cmx_status st = cmx_transpose(&t, a, NULL, 0, in->lazy->stream);
  cmx_array_release(a);
  return st == CMX_OK ? t : NULL;
}

cmx_array cmx__npy_read(cmx__npy_in* in) {
  const char* op = in->op;
  uint8_t pre[12] = {0};
  if (in->avail < 10)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Invalid header: %llu bytes is too short for a .npy "
                     "file",
                     op, (unsigned long long)in->avail);
  if (in_read(in, pre, 8, "npy magic") != CMX_OK) return NULL;
  if (memcmp(pre, k_magic, 6) != 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Invalid header: not a .npy file (bad magic)", op);
  uint8_t major = pre[6];
  if (major < 1 || major > 3 || pre[7] != 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] Unsupported npy format version %u.%u",
                     op, major, pre[7]);
  uint32_t hlen;
  if (major == 1) {
    if (in_read(in, pre + 8, 2, "npy header length") != CMX_OK) return NULL;
    hlen = cmx__le16(pre + 8);
  } else {
    if (in_read(in, pre + 8, 4, "npy header length") != CMX_OK) return NULL;
    hlen = cmx__le32(pre + 8);
  }
  if (hlen > NPY_MAX_HEADER || hlen > in->avail)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] npy header length %u is larger than the file "
                     "allows",
                     op, hlen);
  char* text = malloc((size_t)hlen + 1);
  if (!text) return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  npy_header h;
  memset(&h, 0, sizeof h);
  cmx_status st = in_read(in, text, hlen, "npy header");
  if (st == CMX_OK) st = parse_header(op, text, hlen, &h);
  free(text);
  if (st != CMX_OK) return NULL;
  int64_t size = cmx__shape_size(h.shape, h.ndim);
  uint64_t nbytes;
  if (size < 0 ||
      __builtin_mul_overflow((uint64_t)size, cmx_dtype_size(h.dtype), &nbytes))
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] npy shape is too large", op);
  if (in->lazy && !h.swap) /* read when evaluated (MLX: truncation fails
                            * the evaluation) */
    return lazy_npy(in, &h);
  if (nbytes > in->avail)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] file is truncated: the npy header describes %llu "
                     "bytes of data but %llu follow",
                     op, (unsigned long long)nbytes,
                     (unsigned long long)in->avail);
  cmx_array a = cmx__io_new_array(op, h.shape, h.ndim, h.dtype);
  if (!a) return NULL;
  if (in_read(in, cmx__io_data(a), nbytes, "npy data") != CMX_OK) {
    cmx_array_release(a);
    return NULL;
  }
  if (h.swap) cmx__byteswap(cmx__io_data(a), size, h.dtype);
  if (h.fortran) { /* column-major strides over the same buffer */
    int64_t s = 1;
    for (int i = 0; i < h.ndim; i++) {
      CMX__STRIDES(a)[i] = s;
      s *= h.shape[i] > 0 ? h.shape[i] : 1;
    }
    cmx__node_update_flags(a);
  }
  return a;
}

typedef struct {
  const cmx__src* src;
  uint64_t pos;
} src_cursor;

static cmx_status src_seq_read(void* ctx, void* dst, uint64_t n,
                               const char* what) {
  src_cursor* c = ctx;
  cmx_status st = cmx__src_read(c->src, dst, n, c->pos, what);
  if (st == CMX_OK) c->pos += n;
  return st;
}

cmx_array cmx__load_npy_src(const cmx__src* s) {
  src_cursor c = {s, 0};
  cmx__npy_in in = {src_seq_read,       &c,    s->size, s->op,
                    s->file ? s : NULL, &c.pos};
  return cmx__npy_read(&in);
}

/* ---------------- writing ---------------- */

cmx_status cmx__npy_header(const char* op, cmx_dtype dt, const int64_t* shape,
                           int ndim, bool col, uint8_t** out, size_t* len) {
  char dict[64 + CMX_MAX_NDIM * 24];
  char order = cmx_dtype_size(dt) > 1 ? HOST_ORDER : '|';
  int k = snprintf(dict, sizeof dict,
                   "{'descr': '%c%s', 'fortran_order': %s, 'shape': (", order,
                   k_descr[dt], col ? "True" : "False");
  for (int i = 0; i < ndim; i++)
    k += snprintf(dict + k, sizeof dict - (size_t)k, "%s%lld", i ? ", " : "",
                  (long long)shape[i]);
  k += snprintf(dict + k, sizeof dict - (size_t)k, "%s), }",
                ndim == 1 ? "," : "");
  /* Pad with spaces and a newline so the data starts 64-byte aligned, as
   * numpy does; version 1.0 has a 2-byte length, 2.0 a 4-byte one. */
  size_t pre = (size_t)k + 1 + 10 > 65535 ? 12 : 10;
  size_t total = ((pre + (size_t)k + 1 + 63) / 64) * 64;
  uint8_t* h = malloc(total);
  if (!h) return cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  memcpy(h, k_magic, 6);
  h[6] = pre == 10 ? 1 : 2;
  h[7] = 0;
  if (pre == 10)
    cmx__put16(h + 8, (uint16_t)(total - pre));
  else
    cmx__put32(h + 8, (uint32_t)(total - pre));
  memcpy(h + pre, dict, (size_t)k);
  memset(h + pre + k, ' ', total - pre - (size_t)k - 1);
  h[total - 1] = '\n';
  *out = h;
  *len = total;
  return CMX_OK;
}

static cmx_status sink_write(void* ctx, const void* p, size_t n) {
  return cmx__wr_write(ctx, p, n);
}

cmx_status cmx_save(const char* path, cmx_array a) {
  char* file = cmx__path_with_ext("save", path, ".npy");
  if (!file) return cmx_last_status();
  cmx_status st = cmx__eval_for_save("save", &a, 1);
  uint8_t* hdr = NULL;
  size_t hlen = 0;
  bool col = st == CMX_OK && cmx__array_col_only(a);
  if (st == CMX_OK)
    st = cmx__npy_header("save", a->dtype, a->dims, a->ndim, col, &hdr, &hlen);
  cmx__wr w;
  if (st == CMX_OK) st = cmx__wr_open(&w, "save", file);
  if (st == CMX_OK) {
    st = cmx__wr_write(&w, hdr, hlen);
    if (st == CMX_OK) st = cmx__array_bytes(a, col, sink_write, &w);
    if (st == CMX_OK) st = cmx__wr_commit(&w);
    cmx__wr_abort(&w); /* no-op after commit */
  }
  free(hdr);
  free(file);
  return st;
}
