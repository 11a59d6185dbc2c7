/* Sort kernels: Sort, ArgSort, Partition, ArgPartition, SearchSorted.
 *
 * Every dtype maps to an unsigned key whose integer order is NumPy's sort
 * order: integers flip the sign bit; floats flip all bits of negatives and
 * the sign bit of positives, with -0.0 keyed as 0.0 and every NaN as the
 * largest key; complex64 keys (real, imag) in 64 bits with NumPy's classes
 * for NaN parts. Rows are sorted as records (sort_records.h):
 * - the value path sorts bare keys and maps them back to values. It is
 *   exact when keys are a bijection of the row's values, i.e. the row has
 *   no NaN and no -0.0 (checked while loading);
 * - the index path sorts (key, index) records, for argsort/argpartition,
 *   and for sort/partition of rows with NaN or -0.0, which then gather
 *   the original elements (keeping -0.0 and NaN payloads, stably).
 * Rows are spread over the thread pool; one large row sorts in parallel.
 */
#include "primitives/sort.h"

#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/sort_records.h"

/* ---------------- keys ----------------
 * Per dtype S with storage bits U: fk_S (key, exact when nb_S is false),
 * ck_S (canonical key, always right), nb_S (the value needs ck: NaN or
 * -0.0), inv_S (value bits of a key from fk). */
#define UINT_KEYS(S, U)            \
  static inline U fk_##S(U u) {    \
    return u;                      \
  }                                \
  static inline U ck_##S(U u) {    \
    return u;                      \
  }                                \
  static inline bool nb_##S(U u) { \
    (void)u;                       \
    return false;                  \
  }                                \
  static inline U inv_##S(U k) {   \
    return k;                      \
  }
#define SINT_KEYS(S, U, SIGN)      \
  static inline U fk_##S(U u) {    \
    return (U)(u ^ SIGN);          \
  }                                \
  static inline U ck_##S(U u) {    \
    return (U)(u ^ SIGN);          \
  }                                \
  static inline bool nb_##S(U u) { \
    (void)u;                       \
    return false;                  \
  }                                \
  static inline U inv_##S(U k) {   \
    return (U)(k ^ SIGN);          \
  }
#define FLOAT_KEYS(S, U, SIGN, INF)                           \
  static inline U fk_##S(U u) {                               \
    U m = (U)((U)(0 - (U)(u >> (sizeof(U) * 8 - 1))) | SIGN); \
    return (U)(u ^ m);                                        \
  }                                                           \
  static inline bool nb_##S(U u) {                            \
    return (U)(u & (U)~SIGN) > INF || u == SIGN;              \
  }                                                           \
  static inline U ck_##S(U u) {                               \
    if ((U)(u & (U)~SIGN) > INF) return (U) ~(U)0;            \
    return u == SIGN ? SIGN : fk_##S(u);                      \
  }                                                           \
  static inline U inv_##S(U k) {                              \
    return (k & SIGN) ? (U)(k & (U)~SIGN) : (U)~k;            \
  }
UINT_KEYS(b8, uint8_t)
UINT_KEYS(u8, uint8_t)
UINT_KEYS(u16, uint16_t)
UINT_KEYS(u32, uint32_t)
UINT_KEYS(u64, uint64_t)
SINT_KEYS(i8, uint8_t, 0x80u)
SINT_KEYS(i16, uint16_t, 0x8000u)
SINT_KEYS(i32, uint32_t, 0x80000000u)
SINT_KEYS(i64, uint64_t, 0x8000000000000000ull)
FLOAT_KEYS(f16, uint16_t, 0x8000u, 0x7c00u)
FLOAT_KEYS(bf16, uint16_t, 0x8000u, 0x7f80u)
FLOAT_KEYS(f32, uint32_t, 0x80000000u, 0x7f800000u)
FLOAT_KEYS(f64, uint64_t, 0x8000000000000000ull, 0x7ff0000000000000ull)

/* complex64: the real part's bits are the low word (memory order). The
 * fast key is (real key, imag key); with NaN parts the canonical key uses
 * high words above any real key for NumPy's classes: imag NaN (by real),
 * then real NaN (by imag), then both. */
static inline uint64_t fk_c64(uint64_t u) {
  return (uint64_t)fk_f32((uint32_t)u) << 32 | fk_f32((uint32_t)(u >> 32));
}
static inline bool nb_c64(uint64_t u) {
  return nb_f32((uint32_t)u) || nb_f32((uint32_t)(u >> 32));
}
static inline uint64_t ck_c64(uint64_t u) {
  uint32_t re = (uint32_t)u, im = (uint32_t)(u >> 32);
  bool nre = (re & 0x7fffffffu) > 0x7f800000u;
  bool nim = (im & 0x7fffffffu) > 0x7f800000u;
  if (!nre && !nim) return (uint64_t)ck_f32(re) << 32 | ck_f32(im);
  if (!nre) return 0xfffffffdull << 32 | ck_f32(re);
  if (!nim) return 0xfffffffeull << 32 | ck_f32(im);
  return 0xffffffffull << 32;
}
static inline uint64_t inv_c64(uint64_t k) {
  return (uint64_t)inv_f32((uint32_t)(k >> 32)) | (uint64_t)inv_f32((uint32_t)k)
                                                      << 32;
}

/* ---------------- records ---------------- */
/* Index records: a key of <= 32 bits packed above a 32-bit index, or a
 * 64-bit key with its index. */
typedef struct {
  uint64_t k, i;
} kidx;

#define LESS_U(a, b) ((a) < (b))
#define KEY_U(r, sh) ((uint64_t)(r) >> (sh))
#define LESS_KI(a, b) ((a).k < (b).k || ((a).k == (b).k && (a).i < (b).i))
#define KEY_KI(r, sh) ((void)(sh), (r).k)
CMX__SORT_RECORDS(u8, uint8_t, LESS_U, KEY_U)
CMX__SORT_RECORDS(u16, uint16_t, LESS_U, KEY_U)
CMX__SORT_RECORDS(u32, uint32_t, LESS_U, KEY_U)
CMX__SORT_RECORDS(u64, uint64_t, LESS_U, KEY_U)
CMX__SORT_RECORDS(ki, kidx, LESS_KI, KEY_KI)

/* ---------------- per-dtype row loaders ---------------- */
/* searchsorted: canonical keys of the sorted sequence; finds the first
 * index whose key is >= v (left) or > v (right). */
typedef struct {
  const uint64_t* keys;
  int64_t n;
  bool right;
} ss_ctx;

static inline int64_t ss_find(const ss_ctx* c, uint64_t v) {
  int64_t lo = 0, hi = c->n;
  if (c->right)
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (c->keys[mid] <= v)
        lo = mid + 1;
      else
        hi = mid;
    }
  else
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (c->keys[mid] < v)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo;
}

/* Rows up to this long sort through short_rows. */
#define SORT_SHORT 16

/* load_keys: fast keys of a strided row into k (U[n]); true when the row
 * needs the index path. load_recs: canonical index records into r (packed
 * uint64 for keys of <= 32 bits, else kidx). store_keys: values back from
 * fast keys. Elements move through memcpy (no aliasing assumptions). */
#define ROW_FNS(S, U)                                                          \
  static bool load_keys_##S(const char* p, int64_t st, int64_t n, void* kv) {  \
    U* k = kv;                                                                 \
    bool nb = false;                                                           \
    for (int64_t i = 0; i < n; i++) {                                          \
      U u;                                                                     \
      memcpy(&u, p + i * st * (int64_t)sizeof(U), sizeof(U));                  \
      nb |= nb_##S(u);                                                         \
      k[i] = fk_##S(u);                                                        \
    }                                                                          \
    return nb;                                                                 \
  }                                                                            \
  static void store_keys_##S(char* p, int64_t st, int64_t n, const void* kv) { \
    const U* k = kv;                                                           \
    for (int64_t i = 0; i < n; i++) {                                          \
      U u = inv_##S(k[i]);                                                     \
      memcpy(p + i * st * (int64_t)sizeof(U), &u, sizeof(U));                  \
    }                                                                          \
  }                                                                            \
  static void load_recs_##S(const char* p, int64_t st, int64_t n, void* rv) {  \
    for (int64_t i = 0; i < n; i++) {                                          \
      U u;                                                                     \
      memcpy(&u, p + i * st * (int64_t)sizeof(U), sizeof(U));                  \
      if (sizeof(U) <= 4)                                                      \
        ((uint64_t*)rv)[i] = (uint64_t)ck_##S(u) << 32 | (uint64_t)i;          \
      else                                                                     \
        ((kidx*)rv)[i] = (kidx){(uint64_t)ck_##S(u), (uint64_t)i};             \
    }                                                                          \
  }                                                                            \
  static void load_ckeys_##S(const char* p, int64_t st, int64_t n,             \
                             uint64_t* k) {                                    \
    for (int64_t i = 0; i < n; i++) {                                          \
      U u;                                                                     \
      memcpy(&u, p + i * st * (int64_t)sizeof(U), sizeof(U));                  \
      k[i] = ck_##S(u);                                                        \
    }                                                                          \
  }                                                                            \
  /* Short rows (n <= SORT_SHORT), `rows` of them adjacent in and out:         \
   * each by insertion of its canonical index records, then the indices        \
   * (arg) or the original elements gathered: the index path's result, and     \
   * a sorted row is partitioned for every kth. A call per row of the          \
   * general path costs ~250 instructions, ~100 an element for pairs. */       \
  static void short_rows_##S(const char* in, char* out, int64_t rows,          \
                             int64_t n, bool arg) {                            \
    uint64_t pk[SORT_SHORT];                                                   \
    kidx ki[SORT_SHORT];                                                       \
    const int64_t isz = (int64_t)sizeof(U), osz = arg ? 4 : isz;               \
    for (int64_t r = 0; r < rows; r++, in += n * isz, out += n * osz) {        \
      for (int64_t i = 0; i < n; i++) {                                        \
        U u;                                                                   \
        memcpy(&u, in + i * isz, sizeof(U));                                   \
        /* insertion without branches on the data (the record moves down       \
         * past every larger one): random keys would mispredict */             \
        if (sizeof(U) <= 4) {                                                  \
          uint64_t x = (uint64_t)ck_##S(u) << 32 | (uint64_t)i;                \
          for (int64_t j = i; j > 0; j--) {                                    \
            uint64_t p = pk[j - 1];                                            \
            pk[j] = p > x ? p : x;                                             \
            x = p > x ? x : p;                                                 \
          }                                                                    \
          pk[0] = x;                                                           \
        } else {                                                               \
          kidx x = {(uint64_t)ck_##S(u), (uint64_t)i};                         \
          for (int64_t j = i; j > 0; j--) {                                    \
            kidx p = ki[j - 1];                                                \
            bool lt = LESS_KI(x, p);                                           \
            ki[j] = lt ? p : x;                                                \
            x = lt ? x : p;                                                    \
          }                                                                    \
          ki[0] = x;                                                           \
        }                                                                      \
      }                                                                        \
      for (int64_t i = 0; i < n; i++) {                                        \
        uint32_t src = sizeof(U) <= 4 ? (uint32_t)pk[i] : (uint32_t)ki[i].i;   \
        if (arg)                                                               \
          memcpy(out + i * 4, &src, 4);                                        \
        else                                                                   \
          memcpy(out + i * isz, in + (int64_t)src * isz, sizeof(U));           \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  /* searchsorted over a row of values: ptrs = {out (uint32), values} */       \
  static void ss_row_##S(char* const* ptrs, const int64_t* strides, int64_t n, \
                         const void* ctx) {                                    \
    const ss_ctx* c = ctx;                                                     \
    for (int64_t i = 0; i < n; i++) {                                          \
      U u;                                                                     \
      memcpy(&u, ptrs[1] + i * strides[1] * (int64_t)sizeof(U), sizeof(U));    \
      uint32_t r = (uint32_t)ss_find(c, (uint64_t)ck_##S(u));                  \
      memcpy(ptrs[0] + i * strides[0] * 4, &r, 4);                             \
    }                                                                          \
  }
ROW_FNS(b8, uint8_t)
ROW_FNS(u8, uint8_t)
ROW_FNS(u16, uint16_t)
ROW_FNS(u32, uint32_t)
ROW_FNS(u64, uint64_t)
ROW_FNS(i8, uint8_t)
ROW_FNS(i16, uint16_t)
ROW_FNS(i32, uint32_t)
ROW_FNS(i64, uint64_t)
ROW_FNS(f16, uint16_t)
ROW_FNS(bf16, uint16_t)
ROW_FNS(f32, uint32_t)
ROW_FNS(f64, uint64_t)
ROW_FNS(c64, uint64_t)

typedef struct {
  int bits; /* key width: 8, 16, 32 or 64 */
  bool (*load_keys)(const char*, int64_t, int64_t, void*);
  void (*store_keys)(char*, int64_t, int64_t, const void*);
  void (*load_recs)(const char*, int64_t, int64_t, void*);
  void (*load_ckeys)(const char*, int64_t, int64_t, uint64_t*);
  cmx__row_fn ss_row;
  void (*short_rows)(const char*, char*, int64_t, int64_t, bool);
} dtype_fns;

static const dtype_fns* fns_of(cmx_dtype dt) {
#define F(E, S, B)                               \
  case E: {                                      \
    static const dtype_fns f = {B,               \
                                load_keys_##S,   \
                                store_keys_##S,  \
                                load_recs_##S,   \
                                load_ckeys_##S,  \
                                ss_row_##S,      \
                                short_rows_##S}; \
    return &f;                                   \
  }
  switch (dt) {
    F(CMX_BOOL, b8, 8)
    F(CMX_UINT8, u8, 8)
    F(CMX_UINT16, u16, 16)
    F(CMX_UINT32, u32, 32)
    F(CMX_UINT64, u64, 64)
    F(CMX_INT8, i8, 8)
    F(CMX_INT16, i16, 16)
    F(CMX_INT32, i32, 32)
    F(CMX_INT64, i64, 64)
    F(CMX_FLOAT16, f16, 16)
    F(CMX_BFLOAT16, bf16, 16)
    F(CMX_FLOAT32, f32, 32)
    F(CMX_FLOAT64, f64, 64)
    F(CMX_COMPLEX64, c64, 64)
    default:
      return NULL;
  }
#undef F
}

/* ---------------- rows ---------------- */
enum { M_SORT, M_ARGSORT, M_PART, M_ARGPART };

typedef struct {
  int mode;
  int64_t kth;
  const dtype_fns* f;
  int64_t isz;    /* element bytes */
  const char* in; /* element 0 */
  char* out;
  int64_t n, in_st, out_st; /* the axis: length, strides in elements */
  int od;                   /* the other dims */
  int64_t oshape[CMX_MAX_NDIM], ist[CMX_MAX_NDIM], ost[CMX_MAX_NDIM];
  bool parallel_row; /* sort each row on the whole pool */
  _Atomic int failed;
} job;

/* Scratch that grows as rows need it. */
typedef struct {
  char* p;
  size_t cap;
} scratch;

static char* scratch_get(scratch* w, size_t bytes) {
  if (bytes > w->cap) {
    free(w->p);
    w->p = malloc(bytes);
    w->cap = w->p ? bytes : 0;
  }
  return w->p;
}

/* Sorts or selects the records of a (bits-wide keys shifted by sh). */
#define DISPATCH(R, a, t)                \
  do {                                   \
    if (part)                            \
      select_##R(a, t, n, J->kth);       \
    else if (J->parallel_row)            \
      ok = psort_##R(a, t, n, sh, bits); \
    else                                 \
      ok = sort_##R(a, t, n, sh, bits);  \
  } while (0)

/* One row: n elements at in (stride in_st) into out (stride out_st). */
static bool do_row(job* J, scratch* w, const char* in, int64_t in_st, char* out,
                   int64_t out_st) {
  int64_t n = J->n;
  int bits = J->f->bits;
  bool part = J->mode == M_PART || J->mode == M_ARGPART, ok = true;
  if (J->mode == M_SORT || J->mode == M_PART) {
    /* the value path, sorting in the output row when it is contiguous */
    bool in_out = out_st == 1;
    char* buf = scratch_get(w, (size_t)(in_out ? 1 : 2) * (size_t)(n * J->isz));
    if (!buf) return false;
    char* a = in_out ? out : buf;
    char* t = in_out ? buf : buf + n * J->isz;
    if (!J->f->load_keys(in, in_st, n, a)) {
      int sh = 0;
      switch (bits) {
        case 8:
          DISPATCH(u8, (uint8_t*)a, (uint8_t*)t);
          break;
        case 16:
          DISPATCH(u16, (uint16_t*)a, (uint16_t*)t);
          break;
        case 32:
          DISPATCH(u32, (uint32_t*)a, (uint32_t*)t);
          break;
        default:
          DISPATCH(u64, (uint64_t*)a, (uint64_t*)t);
          break;
      }
      J->f->store_keys(out, out_st, n, a);
      return ok;
    }
  }
  /* the index path */
  size_t rb = bits <= 32 ? sizeof(uint64_t) : sizeof(kidx);
  char* buf = scratch_get(w, 2 * (size_t)n * rb);
  if (!buf) return false;
  char *a = buf, *t = buf + (size_t)n * rb;
  J->f->load_recs(in, in_st, n, a);
  if (bits <= 32) {
    int sh = 32;
    DISPATCH(u64, (uint64_t*)a, (uint64_t*)t);
  } else {
    int sh = 0;
    DISPATCH(ki, (kidx*)a, (kidx*)t);
  }
  const uint64_t* pk = (const uint64_t*)a;
  const kidx* ki = (const kidx*)a;
  if (J->mode == M_ARGSORT || J->mode == M_ARGPART) {
    uint32_t* o = (uint32_t*)out;
    for (int64_t i = 0; i < n; i++)
      o[i * out_st] = bits <= 32 ? (uint32_t)pk[i] : (uint32_t)ki[i].i;
  } else {
    int64_t isz = J->isz;
    for (int64_t i = 0; i < n; i++) {
      int64_t src = bits <= 32 ? (int64_t)(uint32_t)pk[i] : (int64_t)ki[i].i;
      memcpy(out + i * out_st * isz, in + src * in_st * isz, (size_t)isz);
    }
  }
  return ok;
}
#undef DISPATCH

/* Rows along a strided axis whose neighbours lie next to each other (the
 * innermost other dim has stride 1) go TILE at a time through contiguous
 * buffers: read and written row by row, every element of a row would sit
 * in its own cache line and page (a 4 KB stride even maps them all to one
 * cache set), ~3x the time of a contiguous sort. */
#define TILE 16
#define TILE_MAX_N 65536

/* dst[k * dn + i] = src[i * ss + k] (or, with back, src[k * ss + i] into
 * dst[i * dn + k]), k < g, i < n, elements of isz bytes. */
static void tile_copy(char* dst, int64_t dn, const char* src, int64_t ss,
                      int64_t g, int64_t n, int64_t isz, bool back) {
#define TC(T)                                 \
  do {                                        \
    T* d_ = (T*)(void*)dst;                   \
    const T* s_ = (const T*)(const void*)src; \
    for (int64_t i = 0; i < n; i++)           \
      for (int64_t k = 0; k < g; k++) {       \
        if (back)                             \
          d_[i * dn + k] = s_[k * ss + i];    \
        else                                  \
          d_[k * dn + i] = s_[i * ss + k];    \
      }                                       \
  } while (0)
  switch (isz) {
    case 1:
      TC(uint8_t);
      break;
    case 2:
      TC(uint16_t);
      break;
    case 4:
      TC(uint32_t);
      break;
    default:
      TC(uint64_t);
  }
#undef TC
}

/* Rows [b, e): the other dims unravelled, offsets stepped like an
 * odometer. */
static void row_chunk(void* ctx, int64_t b, int64_t e) {
  job* J = ctx;
  int64_t idx[CMX_MAX_NDIM], ioff = 0, ooff = 0, rem = b;
  for (int d = J->od - 1; d >= 0; d--) {
    idx[d] = rem % J->oshape[d];
    rem /= J->oshape[d];
    ioff += idx[d] * J->ist[d];
    ooff += idx[d] * J->ost[d];
  }
  scratch w = {NULL, 0}, tw = {NULL, 0};
  int64_t osz = J->mode == M_ARGSORT || J->mode == M_ARGPART ? 4 : J->isz;
  int last = J->od - 1;
  bool tiles = J->in_st != 1 && J->out_st != 1 && last >= 0 &&
               J->ist[last] == 1 && J->ost[last] == 1 && J->n <= TILE_MAX_N &&
               !J->parallel_row;
  /* short contiguous rows, adjacent: many a call */
  bool shorts = J->n <= SORT_SHORT && J->in_st == 1 && J->out_st == 1 &&
                last >= 0 && J->ist[last] == J->n && J->ost[last] == J->n;
  bool arg = J->mode == M_ARGSORT || J->mode == M_ARGPART;
  for (int64_t r = b; r < e;) {
    int64_t g = 1;
    if (shorts) {
      g = J->oshape[last] - idx[last];
      g = g < e - r ? g : e - r;
      J->f->short_rows(J->in + ioff * J->isz, J->out + ooff * osz, g, J->n,
                       arg);
    } else if (tiles) {
      g = J->oshape[last] - idx[last];
      g = g < e - r ? g : e - r;
      g = g < TILE ? g : TILE;
    }
    bool ok = true;
    if (shorts) {
      /* done above */
    } else if (g > 1) {
      int64_t n = J->n;
      int64_t tib = (g * n * J->isz + 7) / 8 * 8; /* outputs 8-aligned */
      char* ti = scratch_get(&tw, (size_t)(tib + g * n * osz));
      char* to = ti + tib;
      ok = ti != NULL;
      if (ok)
        tile_copy(ti, n, J->in + ioff * J->isz, J->in_st, g, n, J->isz, false);
      for (int64_t k = 0; ok && k < g; k++)
        ok = do_row(J, &w, ti + k * n * J->isz, 1, to + k * n * osz, 1);
      if (ok) tile_copy(J->out + ooff * osz, J->out_st, to, n, g, n, osz, true);
    } else {
      ok = do_row(J, &w, J->in + ioff * J->isz, J->in_st, J->out + ooff * osz,
                  J->out_st);
    }
    if (!ok) {
      atomic_store(&J->failed, 1);
      break;
    }
    for (int64_t s = 0; s < g; s++, r++)
      for (int d = J->od - 1; d >= 0; d--) {
        ioff += J->ist[d];
        ooff += J->ost[d];
        if (++idx[d] < J->oshape[d]) break;
        ioff -= J->oshape[d] * J->ist[d];
        ooff -= J->oshape[d] * J->ost[d];
        idx[d] = 0;
      }
  }
  free(w.p);
  free(tw.p);
}

static cmx_status run_sort(const cmx_primitive* p, const cmx_array* in,
                           const cmx_array* out, int mode) {
  const cmx__sort_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  if (cmx_kernel_alloc(o) != CMX_OK) return cmx_last_status();
  if (o->size == 0) return CMX_OK;
  job* J = calloc(1, sizeof *J);
  if (!J)
    return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of memory",
                            cmx_primitive_name(p));
  J->mode = mode;
  J->kth = q->kth;
  J->f = fns_of(a->dtype);
  if (!J->f) {
    free(J);
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype",
                            cmx_primitive_name(p));
  }
  J->isz = (int64_t)cmx_dtype_size(a->dtype);
  J->in = cmx__node_ptr(a);
  J->out = cmx__node_ptr(o);
  int axis = q->axis;
  J->n = a->dims[axis];
  J->in_st = CMX__STRIDES(a)[axis];
  int64_t ost = 1;
  for (int d = a->ndim - 1; d >= 0; d--) {
    if (d == axis) J->out_st = ost;
    ost *= a->dims[d];
  }
  ost = 1;
  int od = 0;
  for (int d = 0; d < a->ndim; d++)
    if (d != axis) od++;
  J->od = od;
  for (int d = a->ndim - 1, k = od - 1; d >= 0; d--) {
    if (d != axis) {
      J->oshape[k] = a->dims[d];
      J->ist[k] = CMX__STRIDES(a)[d];
      J->ost[k] = ost;
      k--;
    }
    ost *= a->dims[d];
  }
  int64_t rows = o->size / J->n;
  int threads = cmx__pool_threads();
  if (rows < threads && J->n >= CMX__SORT_PAR_MIN && mode != M_PART &&
      mode != M_ARGPART) {
    J->parallel_row = true;
    row_chunk(J, 0, rows);
  } else {
    int64_t grain = J->n >= 32768 ? 1 : 32768 / J->n;
    cmx__parallel_for(rows, grain, row_chunk, J);
  }
  int failed = atomic_load(&J->failed);
  free(J);
  if (failed)
    return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of memory",
                            cmx_primitive_name(p));
  return CMX_OK;
}

#define SORT_KERNEL(name, mode)                                         \
  cmx_status name(const cmx_primitive* p, const cmx_array* in, int nin, \
                  const cmx_array* out, int nout) {                     \
    (void)nin;                                                          \
    (void)nout;                                                         \
    return run_sort(p, in, out, mode);                                  \
  }
SORT_KERNEL(cmx__cpu_sort, M_SORT)
SORT_KERNEL(cmx__cpu_argsort, M_ARGSORT)
SORT_KERNEL(cmx__cpu_partition, M_PART)
SORT_KERNEL(cmx__cpu_argpartition, M_ARGPART)

/* ---------------- searchsorted ---------------- */
cmx_status cmx__cpu_searchsorted(const cmx_primitive* p, const cmx_array* in,
                                 int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__searchsorted_params* q = cmx_primitive_params(p);
  cmx_array seq = in[0], vals = in[1], o = out[0];
  if (cmx_kernel_alloc(o) != CMX_OK) return cmx_last_status();
  if (o->size == 0) return CMX_OK;
  const dtype_fns* f = fns_of(seq->dtype);
  if (!f)
    return cmx_kernel_error(CMX_ERR_TYPE, "[searchsorted] unsupported dtype");
  int64_t n = seq->size;
  uint64_t* keys = malloc((size_t)(n ? n : 1) * sizeof(uint64_t));
  if (!keys)
    return cmx_kernel_error(CMX_ERR_MEMORY, "[searchsorted] out of memory");
  f->load_ckeys(cmx__node_ptr(seq), seq->ndim ? CMX__STRIDES(seq)[0] : 1, n,
                keys);
  ss_ctx c = {keys, n, q->right != 0};
  cmx__cpu_ew_run(o, &vals, 1, f->ss_row, &c);
  free(keys);
  return CMX_OK;
}
