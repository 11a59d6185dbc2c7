/* NumPy-style indexing through the C API: cmx_index_get, cmx_index_set,
 * cmx_index_update and the combining slice updates. A plain model of
 * NumPy's rules (ellipsis expansion, slices as Python normalises them,
 * advanced indices broadcast together and placed where the first one is
 * when they are adjacent, else in front) gives, for every element of
 * a[index], the source element; random index tuples over many shapes,
 * dtypes and layouts are checked against it, plus the placement examples
 * of NumPy's documentation and the error messages. */
#include "index_util.h"

#define MAXE 12

typedef struct {
  int nd;
  int64_t shape[4];
  int n;
  cmx_index ix[MAXE];
  h_tensor arr[MAXE]; /* ARRAY entries' values */
} icase;

/* One entry after ellipsis expansion, as the model sees it. */
typedef struct {
  cmx_index_kind kind;
  int axis, src; /* src: position in the case's entries (-1: expansion) */
  int64_t first, step, len, value;
} mentry;

typedef struct {
  int n;
  mentry e[MAXE + 4];
  int nb;
  int64_t B[4];
  int nt;
  int64_t T[16];
  /* per result dim: -1 - k for B dim k, else the entry it comes from */
  int dsrc[16];
} model;

/* Python's slice.indices with None (CMX_SLICE_NONE) handled. */
static int64_t model_slice(int64_t n, int64_t start, int64_t stop, int64_t step,
                           int64_t* first) {
  if (step == CMX_SLICE_NONE) step = 1;
  if (start == CMX_SLICE_NONE) start = step < 0 ? n - 1 : 0;
  if (stop == CMX_SLICE_NONE) stop = step < 0 ? -n - 1 : n;
  int64_t len = py_slice(n, &start, &stop, step);
  *first = start;
  return len;
}

static void build_model(const icase* c, model* m) {
  memset(m, 0, sizeof *m);
  int ncons = 0;
  bool ell = false, has_array = false;
  for (int i = 0; i < c->n; i++) {
    cmx_index_kind k = c->ix[i].kind;
    ncons += k == CMX_INDEX_INT || k == CMX_INDEX_SLICE || k == CMX_INDEX_ARRAY;
    ell |= k == CMX_INDEX_ELLIPSIS;
    has_array |= k == CMX_INDEX_ARRAY;
  }
  int fill = c->nd - ncons, ax = 0;
  for (int i = 0; i <= c->n; i++) {
    bool expand = i == c->n ? !ell : c->ix[i].kind == CMX_INDEX_ELLIPSIS;
    if (expand)
      for (int f = 0; f < fill; f++) {
        mentry* x = &m->e[m->n++];
        x->kind = CMX_INDEX_SLICE;
        x->axis = ax;
        x->src = -1;
        x->step = 1;
        x->first = 0;
        x->len = c->shape[ax++];
      }
    if (i == c->n || c->ix[i].kind == CMX_INDEX_ELLIPSIS) continue;
    mentry* x = &m->e[m->n++];
    const cmx_index* q = &c->ix[i];
    x->kind = q->kind;
    x->src = i;
    x->axis = q->kind == CMX_INDEX_NEWAXIS ? -1 : ax++;
    if (q->kind == CMX_INDEX_INT) {
      int64_t dim = c->shape[x->axis];
      x->value = q->value < 0 ? q->value + dim : q->value;
    } else if (q->kind == CMX_INDEX_SLICE) {
      x->len =
          model_slice(c->shape[x->axis], q->start, q->stop, q->step, &x->first);
      x->step = q->step == CMX_SLICE_NONE ? 1 : q->step;
    }
  }
  /* B: broadcast of the arrays' shapes. */
  for (int i = 0; i < m->n; i++) {
    if (m->e[i].kind != CMX_INDEX_ARRAY) continue;
    const h_tensor* t = &c->arr[m->e[i].src];
    int nd = t->ndim > m->nb ? t->ndim : m->nb;
    int64_t out[4];
    for (int d = 0; d < nd; d++) {
      int da = d - (nd - t->ndim), db = d - (nd - m->nb);
      int64_t ea = da < 0 ? 1 : t->shape[da], eb = db < 0 ? 1 : m->B[db];
      out[d] = ea == 1 ? eb : ea;
    }
    memcpy(m->B, out, sizeof out);
    m->nb = nd;
  }
  /* Advanced entries adjacent? */
  int first = -1, last = -1, nadv = 0;
  for (int i = 0; i < m->n; i++) {
    bool adv = m->e[i].kind == CMX_INDEX_ARRAY ||
               (has_array && m->e[i].kind == CMX_INDEX_INT);
    if (!adv) continue;
    if (first < 0) first = i;
    last = i;
    nadv++;
  }
  bool front = nadv > 0 && last - first + 1 != nadv;
  if (front)
    for (int k = 0; k < m->nb; k++) {
      m->dsrc[m->nt] = -1 - k;
      m->T[m->nt++] = m->B[k];
    }
  for (int i = 0; i < m->n; i++) {
    if (i == first && !front)
      for (int k = 0; k < m->nb; k++) {
        m->dsrc[m->nt] = -1 - k;
        m->T[m->nt++] = m->B[k];
      }
    if (m->e[i].kind == CMX_INDEX_SLICE) {
      m->dsrc[m->nt] = i;
      m->T[m->nt++] = m->e[i].len;
    } else if (m->e[i].kind == CMX_INDEX_NEWAXIS) {
      m->dsrc[m->nt] = i;
      m->T[m->nt++] = 1;
    }
  }
}

/* The flat source element of result position pos (of T). */
static int64_t model_source(const icase* c, const model* m,
                            const int64_t* pos) {
  int64_t bpos[4] = {0}, src[4] = {0}, coord[MAXE + 4];
  for (int d = 0; d < m->nt; d++) {
    if (m->dsrc[d] < 0)
      bpos[-1 - m->dsrc[d]] = pos[d];
    else
      coord[m->dsrc[d]] = pos[d];
  }
  for (int i = 0; i < m->n; i++) {
    const mentry* x = &m->e[i];
    if (x->axis < 0) continue;
    int64_t dim = c->shape[x->axis], v;
    switch (x->kind) {
      case CMX_INDEX_SLICE:
        v = x->first + x->step * coord[i];
        break;
      case CMX_INDEX_INT:
        v = x->value;
        break;
      default:
        v = iu_bload(&c->arr[x->src], bpos, m->nb);
        if (v < 0) v += dim;
    }
    src[x->axis] = v;
  }
  return su_ravel(src, c->shape, c->nd);
}

/* A random index tuple for a random shape (valid for indexing). */
static icase random_icase(uint64_t* rng) {
  icase c;
  memset(&c, 0, sizeof c);
  c.nd = (int)iu_rand(rng, 0, 4);
  for (int d = 0; d < c.nd; d++) {
    c.shape[d] = iu_rand(rng, 1, 5);
    if (iu_rand(rng, 0, 20) == 0) c.shape[d] = 0;
  }
  int ncons = (int)iu_rand(rng, 0, c.nd);
  bool ell = iu_rand(rng, 0, 1);
  int nnew = (int)iu_rand(rng, 0, 2) == 2 ? (int)iu_rand(rng, 1, 2) : 0;
  /* Kinds in order: consuming entries, then splice in newaxis/ellipsis. */
  cmx_index_kind kinds[MAXE];
  int n = 0;
  for (int i = 0; i < ncons; i++) {
    int r = (int)iu_rand(rng, 0, 9);
    kinds[n++] = r < 2   ? CMX_INDEX_INT
                 : r < 6 ? CMX_INDEX_SLICE
                         : CMX_INDEX_ARRAY;
  }
  for (int i = 0; i < nnew + (ell ? 1 : 0); i++) {
    int at = (int)iu_rand(rng, 0, n);
    memmove(kinds + at + 1, kinds + at, (size_t)(n - at) * sizeof kinds[0]);
    kinds[at] = i < nnew ? CMX_INDEX_NEWAXIS : CMX_INDEX_ELLIPSIS;
    n++;
  }
  /* Axis of each consuming entry (the ellipsis takes the rest). */
  int axis[MAXE], before = 0, ellpos = n;
  for (int i = 0; i < n; i++)
    if (kinds[i] == CMX_INDEX_ELLIPSIS) ellpos = i;
  for (int i = 0, a = 0; i < n; i++) {
    axis[i] = -1;
    if (kinds[i] == CMX_INDEX_NEWAXIS || kinds[i] == CMX_INDEX_ELLIPSIS)
      continue;
    if (i < ellpos) before++;
    axis[i] = i < ellpos ? a++ : -2;
  }
  for (int i = n - 1, a = c.nd - 1; i > ellpos; i--)
    if (axis[i] == -2) axis[i] = a--;
  (void)before;
  /* B for the arrays. */
  int bnd = (int)iu_rand(rng, 0, 2);
  int64_t B[2];
  for (int d = 0; d < bnd; d++) B[d] = iu_rand(rng, 1, 3);
  bool first_array = true;
  for (int i = 0; i < n; i++) {
    cmx_index* q = &c.ix[i];
    int64_t dim = axis[i] >= 0 ? c.shape[axis[i]] : 0;
    cmx_index_kind k = kinds[i];
    if ((k == CMX_INDEX_INT || k == CMX_INDEX_ARRAY) && dim == 0)
      k = CMX_INDEX_SLICE;
    switch (k) {
      case CMX_INDEX_INT:
        *q = cmx_index_int(iu_rand(rng, -dim, dim - 1));
        break;
      case CMX_INDEX_SLICE: {
        int64_t st = iu_rand(rng, -dim - 2, dim + 2),
                sp = iu_rand(rng, -dim - 2, dim + 2),
                step = iu_rand(rng, -3, 3);
        if (step == 0) step = CMX_SLICE_NONE;
        if (iu_rand(rng, 0, 3) == 0) st = CMX_SLICE_NONE;
        if (iu_rand(rng, 0, 3) == 0) sp = CMX_SLICE_NONE;
        *q = cmx_index_slice(st, sp, step);
        if (iu_rand(rng, 0, 5) == 0) *q = cmx_index_all();
        break;
      }
      case CMX_INDEX_ARRAY: {
        int r = first_array ? bnd : (int)iu_rand(rng, 0, bnd);
        first_array = false;
        int64_t sh[2];
        for (int d = 0; d < r; d++) {
          sh[d] = B[bnd - r + d];
          if (iu_rand(rng, 0, 3) == 0) sh[d] = 1;
        }
        cmx_dtype dt = IU_IDX_DTYPES[iu_rand(rng, 0, IU_NUM_IDX_DTYPES - 1)];
        c.arr[i] = h_alloc(sh, r, dt);
        for (int64_t j = 0; j < c.arr[i].size; j++) {
          int64_t v = iu_rand(rng, 0, dim - 1);
          if (cmx_dtype_is_signed(dt) && iu_rand(rng, 0, 1)) v -= dim;
          c.arr[i].re[j] = (double)v;
        }
        q->kind = CMX_INDEX_ARRAY; /* array set when converted */
        break;
      }
      case CMX_INDEX_NEWAXIS:
        *q = cmx_index_newaxis();
        break;
      default:
        *q = cmx_index_ellipsis();
        break;
    }
  }
  c.n = n;
  return c;
}

/* Creates the cmx arrays of the ARRAY entries (in alternating layouts). */
static void icase_arrays(icase* c) {
  for (int i = 0; i < c->n; i++)
    if (c->ix[i].kind == CMX_INDEX_ARRAY)
      c->ix[i] =
          cmx_index_array(h_array(&c->arr[i], i % 2 ? H_STRIDED : H_CONTIG));
}

static void free_icase(icase* c) {
  for (int i = 0; i < c->n; i++)
    if (c->ix[i].kind == CMX_INDEX_ARRAY) {
      cmx_array_release(c->ix[i].array);
      h_free(&c->arr[i]);
    }
}

static void icase_str(char* buf, size_t size, const char* op, cmx_dtype dt,
                      const icase* c) {
  char sh[128];
  size_t k = (size_t)snprintf(buf, size, "%s %s a%s [", op, cmx_dtype_name(dt),
                              cmx__shape_str(c->shape, c->nd, sh, sizeof sh));
  for (int i = 0; i < c->n && k + 40 < size; i++) {
    const cmx_index* q = &c->ix[i];
    int w = 0;
#define NONE_OR(v) ((v) == CMX_SLICE_NONE ? -999 : (long long)(v))
    switch (q->kind) {
      case CMX_INDEX_INT:
        w = snprintf(buf + k, size - k, "%lld, ", (long long)q->value);
        break;
      case CMX_INDEX_SLICE:
        w = snprintf(buf + k, size - k, "%lld:%lld:%lld, ", NONE_OR(q->start),
                     NONE_OR(q->stop), NONE_OR(q->step));
        break;
      case CMX_INDEX_NEWAXIS:
        w = snprintf(buf + k, size - k, "None, ");
        break;
      case CMX_INDEX_ELLIPSIS:
        w = snprintf(buf + k, size - k, "..., ");
        break;
      default:
        w = snprintf(
            buf + k, size - k, "arr%s, ",
            cmx__shape_str(c->arr[i].shape, c->arr[i].ndim, sh, sizeof sh));
    }
    if (w > 0) k += (size_t)w;
  }
  snprintf(buf + k, size - k, "]");
}

static const cmx_dtype ND_DTYPES[] = {CMX_BOOL,    CMX_UINT8,    CMX_INT16,
                                      CMX_INT32,   CMX_INT64,    CMX_UINT64,
                                      CMX_FLOAT16, CMX_BFLOAT16, CMX_FLOAT32,
                                      CMX_FLOAT64, CMX_COMPLEX64};

static void test_get_random(void) {
  uint64_t rng = 2024;
  for (int trial = 0; trial < 3000; trial++) {
    icase c = random_icase(&rng);
    cmx_dtype dt = ND_DTYPES[trial % 11];
    model m;
    build_model(&c, &m);
    h_tensor x = h_random(c.shape, c.nd, dt, -50, 50, (uint64_t)trial);
    h_tensor want = h_alloc(m.T, m.nt, dt);
    int64_t pos[16];
    for (int64_t k = 0; k < want.size; k++) {
      su_unravel(k, m.T, m.nt, pos);
      int64_t j = model_source(&c, &m, pos);
      want.re[k] = x.re[j];
      if (want.im) want.im[k] = x.im[j];
    }
    icase_arrays(&c);
    int l = (int)iu_rand(&rng, 0, SU_NUM_LAYOUTS - 1);
    if (!su_layout_ok(l, c.nd)) l = SU_CONTIG;
    cmx_array a = su_input(&x, l), r = NULL;
    char what[512];
    icase_str(what, sizeof what, "index", dt, &c);
    cmx_status s = cmx_index_get(&r, a, c.ix, c.n, S);
    CHECK_MSG(s == CMX_OK, "%s: %s", what, cmx_last_error());
    if (s == CMX_OK) su_check(r, &want, what);
    cmx_array_release(a);
    cmx_array_release(r);
    free_icase(&c);
    h_free(&x);
    h_free(&want);
  }
}

/* A value for a[index] = v: T's shape, size-1 dims, fewer dims, or extra
 * leading 1s; sometimes another dtype. */
static h_tensor random_value(uint64_t* rng, const model* m, cmx_dtype dt,
                             double lo, double hi, uint64_t seed) {
  int64_t sh[20];
  int nd = 0, kind = (int)iu_rand(rng, 0, 3);
  if (kind == 3) sh[nd++] = 1;
  int drop = kind == 2 ? (int)iu_rand(rng, 0, m->nt) : 0;
  for (int d = drop; d < m->nt; d++)
    sh[nd++] = kind == 1 && iu_rand(rng, 0, 1) ? 1 : m->T[d];
  return h_random(sh, nd, dt, lo, hi, seed);
}

/* value[...] broadcast at T position pos. */
static int64_t value_pos(const h_tensor* v, const model* m,
                         const int64_t* pos) {
  int64_t k = 0;
  for (int d = 0; d < v->ndim; d++) {
    int td = d + (m->nt - v->ndim);
    int64_t p = td < 0 ? 0 : pos[td];
    k = k * v->shape[d] + (v->shape[d] == 1 ? 0 : p);
  }
  return k;
}

/* The reciprocal index_update's divide multiplies by: 1/v computed in
 * float32 (float64 for float64, complex in complex64) and converted to
 * dt (integers truncate toward zero). */
static void model_reciprocal(cmx_dtype dt, double vr, double vi, double* rr,
                             double* ri) {
  *ri = 0;
  if (dt == CMX_COMPLEX64) {
    double d = vr * vr + vi * vi;
    *rr = h_round_to(vr / d, dt);
    *ri = h_round_to(-vi / d, dt);
  } else if (dt == CMX_FLOAT64) {
    *rr = 1 / vr;
  } else {
    *rr = h_round_to(h_round_to(1 / vr, CMX_FLOAT32), dt);
    if (cmx_dtype_is_integer(dt)) *rr = trunc(h_round_to(1 / vr, CMX_FLOAT32));
  }
}

/* index_set and index_update (every op) against the model: updates
 * applied in row-major order of a[index]. */
enum { U_SET, U_ADD, U_MUL, U_MAX, U_MIN, U_SUB, U_DIV, U_NUM };
static void test_set_update_random(void) {
  uint64_t rng = 4096;
  static const cmx_index_update_op ops[U_NUM] = {0,
                                                 CMX_UPDATE_ADD,
                                                 CMX_UPDATE_MULTIPLY,
                                                 CMX_UPDATE_MAXIMUM,
                                                 CMX_UPDATE_MINIMUM,
                                                 CMX_UPDATE_SUBTRACT,
                                                 CMX_UPDATE_DIVIDE};
  static const int model_mode[U_NUM] = {IU_NONE, IU_ADD, IU_PROD, IU_MAX,
                                        IU_MIN,  IU_ADD, IU_PROD};
  static const char* const names[U_NUM] = {"index_set", "add",     "multiply",
                                           "maximum",   "minimum", "subtract",
                                           "divide"};
  for (int trial = 0; trial < 4200; trial++) {
    icase c = random_icase(&rng);
    cmx_dtype dt = ND_DTYPES[trial % 11];
    int u = (trial / 11) % U_NUM;
    /* subtract: not for bool, nor uint64 (the double model cannot wrap
     * it); divide: not bool. */
    if ((u == U_SUB && (dt == CMX_BOOL || dt == CMX_UINT64)) ||
        (u == U_DIV && dt == CMX_BOOL))
      u = U_ADD;
    model m;
    build_model(&c, &m);
    bool small = u == U_MUL || u == U_DIV;
    double lo = small ? -3 : -50, hi = small ? 3 : 50;
    h_tensor x = h_random(c.shape, c.nd, dt, lo, hi, (uint64_t)trial);
    /* Values of another dtype sometimes (not into unsigned arrays, whose
     * wrapped negatives the double model cannot multiply exactly). */
    cmx_dtype vdt = trial % 7 == 0 && cmx_dtype_is_signed(dt) ? CMX_INT32 : dt;
    h_tensor v = random_value(&rng, &m, vdt, lo, hi, (uint64_t)trial + 1);
    if (u == U_DIV)
      for (int64_t k = 0; k < v.size; k++)
        if (v.re[k] == 0 && (!v.im || v.im[k] == 0)) v.re[k] = 1;
    h_tensor want = iu_copy(&x);
    int64_t pos[16], tsize = 1;
    for (int d = 0; d < m.nt; d++) tsize *= m.T[d];
    for (int64_t k = 0; k < tsize; k++) {
      su_unravel(k, m.T, m.nt, pos);
      int64_t j = model_source(&c, &m, pos), vk = value_pos(&v, &m, pos);
      double vr = h_round_to(v.re[vk], dt), vi = v.im ? v.im[vk] : 0;
      if (u == U_SUB) {
        vr = h_round_to(-vr, dt);
        vi = -vi;
      } else if (u == U_DIV) {
        model_reciprocal(dt, vr, vi, &vr, &vi);
      }
      iu_combine(model_mode[u], dt, &want.re[j], want.im ? &want.im[j] : NULL,
                 vr, vi);
    }
    icase_arrays(&c);
    int l = (int)iu_rand(&rng, 0, SU_NUM_LAYOUTS - 1);
    if (!su_layout_ok(l, c.nd)) l = SU_CONTIG;
    cmx_array a = su_input(&x, l), va = h_array(&v, H_STRIDED), r = NULL;
    char what[512];
    icase_str(what, sizeof what, names[u], dt, &c);
    cmx_status s = u == U_SET
                       ? cmx_index_set(&r, a, c.ix, c.n, va, S)
                       : cmx_index_update(&r, a, c.ix, c.n, va, ops[u], S);
    CHECK_MSG(s == CMX_OK, "%s: %s", what, cmx_last_error());
    if (s == CMX_OK) {
      h_tensor got = h_read(r), mag = {.size = -1};
      double rtol = u == U_DIV ? 4 * h_tol(dt) : 0;
      if (iu_any_order(r, model_mode[u])) { /* want's model on |values| */
        mag = iu_abs(&x);
        for (int64_t k = 0; k < tsize; k++) {
          su_unravel(k, m.T, m.nt, pos);
          int64_t j = model_source(&c, &m, pos), vk = value_pos(&v, &m, pos);
          double vr = h_round_to(v.re[vk], dt), vi = v.im ? v.im[vk] : 0;
          if (u == U_DIV) model_reciprocal(dt, vr, vi, &vr, &vi);
          iu_combine(model_mode[u], dt, &mag.re[j], mag.im ? &mag.im[j] : NULL,
                     hypot(vr, vi), 0);
        }
      }
      CHECK(iu_close(&got, &want, mag.size >= 0 ? &mag : NULL, rtol, what));
      h_free(&got);
      h_free(&mag);
      su_check(a, &x, "index_set input unchanged");
    }
    cmx_array_release_all((cmx_array[]){a, va, r}, 3);
    free_icase(&c);
    h_free(&x);
    h_free(&v);
    h_free(&want);
  }
}

/* Shapes from NumPy's documentation of advanced-index placement. */
static void test_placement(void) {
  int64_t shape[4] = {2, 3, 4, 5};
  cmx_array a = NULL;
  OK(cmx_zeros(&a, shape, 4, CMX_FLOAT32, S));
  int64_t two = 2, v01[2] = {0, 1}, v12[2] = {1, 2}, v3[3] = {0, 1, 2};
  int64_t col[2] = {2, 1};
  cmx_array i01 = NULL, i12 = NULL, i3 = NULL, icol = NULL;
  cmx_array_from_data(&i01, v01, &two, 1, CMX_INT64);
  cmx_array_from_data(&i12, v12, &two, 1, CMX_INT32);
  cmx_array_from_data(&i3, v3, (int64_t[]){3}, 1, CMX_INT64);
  cmx_array_from_data(&icol, v01, col, 2, CMX_INT64);
  cmx_index all = cmx_index_all(), na = cmx_index_newaxis(),
            el = cmx_index_ellipsis();
  struct {
    int n;
    cmx_index ix[5];
    int nd;
    int64_t want[6];
  } cases[] = {
      /* a[:, [0,1], :, [1,2]]: separated -> B in front */
      {4, {all, cmx_index_array(i01), all, cmx_index_array(i12)}, 3, {2, 2, 4}},
      /* a[:, [0,1], [1,2]]: adjacent -> in place */
      {3, {all, cmx_index_array(i01), cmx_index_array(i12)}, 3, {2, 2, 5}},
      /* a[:, 0, :, [1,2]]: the int is advanced too -> front */
      {4, {all, cmx_index_int(0), all, cmx_index_array(i12)}, 3, {2, 2, 4}},
      /* a[:, 0, [1,2]]: adjacent with the int */
      {3, {all, cmx_index_int(0), cmx_index_array(i12)}, 3, {2, 2, 5}},
      /* a[None, :, [0,1]] */
      {3, {na, all, cmx_index_array(i01)}, 5, {1, 2, 2, 4, 5}},
      /* a[[0,1], None, [1,2]]: None separates */
      {3, {cmx_index_array(i01), na, cmx_index_array(i12)}, 4, {2, 1, 4, 5}},
      /* a[..., [0,1]] */
      {2, {el, cmx_index_array(i01)}, 4, {2, 3, 4, 2}},
      /* a[[[0],[1]], [0,1,2]]: B (2,3) */
      {2, {cmx_index_array(icol), cmx_index_array(i3)}, 4, {2, 3, 4, 5}},
      /* a[1, ..., None, 2] basic */
      {4, {cmx_index_int(1), el, na, cmx_index_int(2)}, 3, {3, 4, 1}},
      /* a[:, :, :, :, None] */
      {5, {all, all, all, all, na}, 5, {2, 3, 4, 5, 1}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cmx_array r = NULL;
    OK(cmx_index_get(&r, a, cases[i].ix, cases[i].n, S));
    bool ok = r && cmx_array_ndim(r) == cases[i].nd;
    for (int d = 0; ok && d < cases[i].nd; d++)
      ok = cmx_array_dim(r, d) == cases[i].want[d];
    CHECK_MSG(ok, "placement case %zu", i);
    if (r) OK(cmx_array_eval(r));
    cmx_array_release(r);
  }
  cmx_array_release_all((cmx_array[]){a, i01, i12, i3, icol}, 5);
}

/* 0-d arrays and empty index tuples. */
static void test_scalars(void) {
  cmx_array a = NULL, v = NULL, r = NULL;
  cmx_array_from_double(&a, 3.5, CMX_FLOAT32);
  cmx_array_from_double(&v, 2, CMX_FLOAT32);
  OK(cmx_index_get(&r, a, NULL, 0, S));
  CHECK(r == a);
  cmx_array_release(r);
  cmx_index el = cmx_index_ellipsis(), na = cmx_index_newaxis();
  OK(cmx_index_get(&r, a, &el, 1, S));
  CHECK(r && cmx_array_ndim(r) == 0);
  cmx_array_release(r);
  OK(cmx_index_get(&r, a, &na, 1, S));
  CHECK(r && cmx_array_ndim(r) == 1 && cmx_array_dim(r, 0) == 1);
  double d = 0;
  OK(cmx_array_item_double(r, &d));
  CHECK(d == 3.5);
  cmx_array_release(r);
  OK(cmx_index_set(&r, a, &el, 1, v, S));
  OK(cmx_array_item_double(r, &d));
  CHECK(d == 2);
  cmx_array_release(r);
  OK(cmx_index_update(&r, a, NULL, 0, v, CMX_UPDATE_ADD, S));
  OK(cmx_array_item_double(r, &d));
  CHECK(d == 5.5);
  cmx_array_release(r);
  OK(cmx_index_update(&r, a, &na, 1, v, CMX_UPDATE_MULTIPLY, S));
  OK(cmx_array_item_double(r, &d));
  CHECK(d == 7);
  CHECK(r && cmx_array_ndim(r) == 0);
  cmx_array_release(r);
  cmx_index zero = cmx_index_int(0);
  FAILS(cmx_index_get(&r, a, &zero, 1, S), CMX_ERR_VALUE,
        "[index] Too many indices for array with 0 dimensions");
  cmx_array_release_all((cmx_array[]){a, v}, 2);
}

/* a.at[idx].add(1) with repeated indices counts occurrences (bincount). */
static void test_update_counts(void) {
  int64_t n = 1000, bins = 7;
  int32_t* iv = malloc((size_t)n * 4);
  uint64_t rng = 3;
  double want[7] = {0};
  for (int64_t i = 0; i < n; i++) {
    iv[i] = (int32_t)iu_rand(&rng, -7, 6);
    want[iv[i] < 0 ? iv[i] + 7 : iv[i]] += 1;
  }
  cmx_array a = NULL, idx = NULL, one = NULL, r = NULL;
  cmx_zeros(&a, &bins, 1, CMX_INT32, S);
  cmx_array_from_data(&idx, iv, &n, 1, CMX_INT32);
  cmx_array_weak_int(&one, 1);
  cmx_index ix = cmx_index_array(idx);
  OK(cmx_index_update(&r, a, &ix, 1, one, CMX_UPDATE_ADD, S));
  h_tensor got = h_read(r);
  bool ok = got.size == 7 && got.dtype == CMX_INT32;
  for (int b = 0; ok && b < 7; b++) ok = got.re[b] == want[b];
  CHECK(ok);
  h_free(&got);
  cmx_array_release_all((cmx_array[]){a, idx, one, r}, 4);
  free(iv);
}

static void test_index_errors(void) {
  int64_t shape[2] = {4, 3}, two = 2;
  cmx_array a = NULL, r = NULL, fi = NULL, bi = NULL, i2 = NULL, i3 = NULL,
            v = NULL, bad = NULL;
  cmx_zeros(&a, shape, 2, CMX_FLOAT32, S);
  float fv[2] = {0, 1};
  uint8_t bv[2] = {1, 0};
  int64_t iv[3] = {0, 1, 2}, bv2[2] = {0, 4};
  cmx_array_from_data(&fi, fv, &two, 1, CMX_FLOAT32);
  cmx_array_from_data(&bi, bv, &two, 1, CMX_BOOL);
  cmx_array_from_data(&i2, iv, &two, 1, CMX_INT64);
  cmx_array_from_data(&i3, iv, (int64_t[]){3}, 1, CMX_INT64);
  cmx_array_from_data(&bad, bv2, &two, 1, CMX_INT64);
  cmx_zeros(&v, (int64_t[]){5}, 1, CMX_FLOAT32, S);
  cmx_index el = cmx_index_ellipsis();
  FAILS(cmx_index_get(&r, a, ((cmx_index[]){el, el}), 2, S), CMX_ERR_VALUE,
        "[index] An index can only have a single ellipsis (...).");
  FAILS(cmx_index_get(&r, a,
                      ((cmx_index[]){cmx_index_int(0), cmx_index_int(0),
                                     cmx_index_int(0)}),
                      3, S),
        CMX_ERR_VALUE, "[index] Too many indices for array with 2 dimensions");
  FAILS(cmx_index_get(&r, a, ((cmx_index[]){cmx_index_all(), cmx_index_int(3)}),
                      2, S),
        CMX_ERR_INDEX,
        "[index] Index 3 is out of bounds for axis 1 with size 3.");
  FAILS(cmx_index_get(&r, a, ((cmx_index[]){cmx_index_int(-5)}), 1, S),
        CMX_ERR_INDEX,
        "[index] Index -5 is out of bounds for axis 0 with size 4.");
  FAILS(cmx_index_get(&r, a, ((cmx_index[]){cmx_index_array(fi)}), 1, S),
        CMX_ERR_TYPE,
        "[index] Index arrays must have an integer dtype, got "
        "float32.");
  FAILS(cmx_index_get(&r, a, ((cmx_index[]){cmx_index_array(bi)}), 1, S),
        CMX_ERR_TYPE, "[index] Boolean index arrays are not supported");
  FAILS(cmx_index_get(&r, a,
                      ((cmx_index[]){cmx_index_array(i2), cmx_index_array(i3)}),
                      2, S),
        CMX_ERR_INDEX,
        "[index] shape mismatch: indexing arrays could not be broadcast "
        "together with shapes (2) (3).");
  FAILS(cmx_index_get(&r, a, ((cmx_index[]){cmx_index_slice(0, 3, 0)}), 1, S),
        CMX_ERR_VALUE, "[index] Slice step cannot be zero.");
  FAILS(cmx_index_get(&r, a, ((cmx_index[]){cmx_index_array(NULL)}), 1, S),
        CMX_ERR_VALUE, "[index] index array is a null array");
  FAILS(
      cmx_index_get(&r, a, ((cmx_index[]){{.kind = (cmx_index_kind)9}}), 1, S),
      CMX_ERR_VALUE, "[index] Unknown index kind 9.");
  FAILS(
      cmx_index_set(&r, a, ((cmx_index[]){cmx_index_slice(0, 2, 1)}), 1, v, S),
      CMX_ERR_VALUE,
      "[index_set] Cannot broadcast value of shape (5) to the indexed "
      "shape (2,3).");
  FAILS(cmx_index_update(&r, a, ((cmx_index[]){cmx_index_array(i2)}), 1, v,
                         CMX_UPDATE_ADD, S),
        CMX_ERR_VALUE,
        "[index_update] Cannot broadcast value of shape (5) to the indexed "
        "shape (2,3).");
  FAILS(cmx_index_update(&r, a, ((cmx_index[]){cmx_index_int(0)}), 1, v,
                         (cmx_index_update_op)42, S),
        CMX_ERR_VALUE, "[index_update] Unknown update op 42.");
  FAILS(cmx_index_update(&r, a, ((cmx_index[]){cmx_index_int(7)}), 1, v,
                         CMX_UPDATE_ADD, S),
        CMX_ERR_INDEX, "[index_update] Index 7 is out of bounds");
  cmx_array ba = NULL, bval = NULL;
  cmx_zeros(&ba, (int64_t[]){3}, 1, CMX_BOOL, S);
  cmx_array_from_double(&bval, 1, CMX_BOOL);
  FAILS(cmx_index_update(&r, ba, ((cmx_index[]){cmx_index_int(0)}), 1, bval,
                         CMX_UPDATE_SUBTRACT, S),
        CMX_ERR_TYPE, "[index_update] subtract is not supported for bool");
  cmx_array_release_all((cmx_array[]){ba, bval}, 2);
  FAILS(cmx_index_set(&r, a, ((cmx_index[]){cmx_index_int(0)}), 1, NULL, S),
        CMX_ERR_VALUE, "[index_set] argument");
  CHECK(r == NULL);
  cmx_array empty = NULL;
  cmx_zeros(&empty, (int64_t[]){0, 3}, 2, CMX_FLOAT32, S);
  FAILS(cmx_index_get(&r, empty, ((cmx_index[]){cmx_index_array(i2)}), 1, S),
        CMX_ERR_INDEX, "[index] Index arrays cannot index axis 0 of size 0.");
  FAILS(cmx_index_set(&r, empty, ((cmx_index[]){cmx_index_array(i2)}), 1, v, S),
        CMX_ERR_INDEX,
        "[index_set] Index arrays cannot index axis 0 of size 0.");
  cmx_array_release(empty);
  /* Array indices out of bounds fail at evaluation. */
  cmx_array one = NULL;
  cmx_array_from_double(&one, 1, CMX_FLOAT32);
  cmx_index ib[2] = {cmx_index_all(), cmx_index_array(bad)};
  OK(cmx_index_get(&r, a, ib, 2, S));
  iu_eval_fails(r, "Index 4 is out of bounds for axis 1 with size 3.",
                "index_get bounds");
  cmx_array_release(r);
  OK(cmx_index_set(&r, a, ib, 2, one, S));
  iu_eval_fails(r, "Index 4 is out of bounds for axis 1 with size 3.",
                "index_set bounds");
  cmx_array_release(r);
  OK(cmx_index_update(&r, a, ib, 2, one, CMX_UPDATE_MAXIMUM, S));
  iu_eval_fails(r, "Index 4 is out of bounds for axis 1 with size 3.",
                "index_update bounds");
  cmx_array_release(r);
  cmx_array_release_all((cmx_array[]){a, fi, bi, i2, i3, v, bad, one}, 8);
}

/* ---------------- slice_update_add/prod/max/min ---------------- */

typedef cmx_status (*su_op_fn)(cmx_array*, cmx_array, cmx_array, const int64_t*,
                               const int64_t*, const int64_t*, cmx_stream);

static void test_slice_update_ops(void) {
  static const su_op_fn fns[IU_NUM_MODES] = {
      NULL, cmx_slice_update_add, cmx_slice_update_prod, cmx_slice_update_max,
      cmx_slice_update_min};
  uint64_t rng = 31337;
  for (int trial = 0; trial < 600; trial++) {
    int mode = 1 + trial % 4;
    cmx_dtype dt = ND_DTYPES[(trial / 4) % 11];
    int nd = (int)iu_rand(&rng, 0, 3);
    int64_t shape[3], st[3], sp[3], step[3], first[3], ext[3];
    for (int d = 0; d < nd; d++) {
      shape[d] = iu_rand(&rng, 0, 5);
      int64_t n = shape[d];
      st[d] = iu_rand(&rng, -n - 2, n + 2);
      sp[d] = iu_rand(&rng, -n - 2, n + 2);
      step[d] = iu_rand(&rng, -2, 2);
      if (step[d] == 0) step[d] = 1;
      int64_t b = st[d], e = sp[d];
      ext[d] = py_slice(n, &b, &e, step[d]);
      first[d] = b;
    }
    double lo = mode == IU_PROD ? -3 : -40, hi = mode == IU_PROD ? 3 : 40;
    h_tensor x = h_random(shape, nd, dt, lo, hi, (uint64_t)trial);
    int64_t ush[3];
    for (int d = 0; d < nd; d++) ush[d] = trial % 3 == 0 ? 1 : ext[d];
    h_tensor u = h_random(ush, nd, dt, lo, hi, (uint64_t)trial + 2);
    h_tensor want = iu_copy(&x);
    int64_t reg = 1, idx[3], j[3], ui[3];
    for (int d = 0; d < nd; d++) reg *= ext[d];
    for (int64_t k = 0; k < reg; k++) {
      su_unravel(k, ext, nd, idx);
      for (int d = 0; d < nd; d++) {
        j[d] = first[d] + idx[d] * step[d];
        ui[d] = ush[d] == 1 ? 0 : idx[d];
      }
      int64_t o = su_ravel(j, shape, nd), s = su_ravel(ui, ush, nd);
      iu_combine(mode, dt, &want.re[o], want.im ? &want.im[o] : NULL, u.re[s],
                 u.im ? u.im[s] : 0);
    }
    int l = (int)iu_rand(&rng, 0, SU_NUM_LAYOUTS - 1);
    if (!su_layout_ok(l, nd)) l = SU_CONTIG;
    cmx_array a = su_input(&x, l), ua = h_array(&u, H_CONTIG), r = NULL;
    char what[256];
    su_what(what, sizeof what, iu_mode_names[mode], &x, l, "slice_update");
    OK(fns[mode](&r, a, ua, st, sp, step, S));
    h_tensor got = h_read(r);
    CHECK(h_close(&got, &want, 0, iu_atol(&want), what));
    h_free(&got);
    cmx_array_release_all((cmx_array[]){a, ua, r}, 3);
    h_free(&x);
    h_free(&u);
    h_free(&want);
  }
  int64_t shape[2] = {3, 3}, st[2] = {0, 0}, sp[2] = {2, 2};
  cmx_array a = NULL, u = NULL, r = NULL;
  cmx_zeros(&a, shape, 2, CMX_FLOAT32, S);
  cmx_zeros(&u, (int64_t[]){3}, 1, CMX_FLOAT32, S);
  FAILS(cmx_slice_update_add(&r, a, u, st, sp, NULL, S), CMX_ERR_VALUE,
        "[slice_update_add] Cannot broadcast value of shape (3) to the "
        "indexed shape (2,2).");
  FAILS(cmx_slice_update_max(&r, a, u, NULL, sp, NULL, S), CMX_ERR_VALUE,
        "[slice_update_max] start and stop are required.");
  cmx_array_release_all((cmx_array[]){a, u}, 2);
}

int main(void) {
  RUN(test_get_random);
  RUN(test_set_update_random);
  RUN(test_placement);
  RUN(test_scalars);
  RUN(test_update_counts);
  RUN(test_index_errors);
  RUN(test_slice_update_ops);
  return test_summary("test_indexing_nd");
}
