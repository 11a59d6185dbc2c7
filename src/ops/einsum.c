/* einsum, as MLX's (which follows NumPy and opt_einsum).
 *
 * 1. Parsing: subscripts become one label list per operand and one for
 *    the output (letters a-z, A-Z; "..." expands to letters the string
 *    does not use, taken from the end of the unused pool so that shorter
 *    ellipses align to the right and broadcast). Label sizes are checked
 *    and broadcast (size 1 meets anything).
 * 2. The path (einsum_path.c) orders the pairwise contractions.
 * 3. Each step first takes repeated labels as diagonals (views) and sums
 *    labels no other operand of the step or its output has; then two
 *    operands with a summed label shared become one batched matmul
 *    (floating and complex types), anything else a broadcast product and
 *    sum. The last step's result is transposed to the output's order.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ops/einsum_internal.h"

/* ---------------- parsing ---------------- */
/* Reads one term of subscripts [p, e) into t: letters and at most one
 * "...", which takes `ell` labels from the end of pool (ell < 0: the
 * operand's rank decides, given as ndim with its shape). For operands,
 * *ell_io grows to the longest ellipsis seen; for the output (ndim < 0) it
 * is the ellipsis length used. */
static bool read_term(const spec* sp, const char* p, const char* e,
                      const int64_t* shape, int ndim, int which,
                      const char* pool, int npool, term* t, int* ell_io) {
  int before = 0, after = 0;
  bool ell = false;
  for (const char* c = p; c < e; c++) {
    if (lab_index(*c) >= 0) {
      if (ell)
        after++;
      else
        before++;
      continue;
    }
    if (*c != '.' || e - c < 3 || c[1] != '.' || c[2] != '.') {
      unsigned char u = (unsigned char)*c;
      if (u < 0x20 || u >= 0x7f) /* keep the message valid text */
        cmx__error(CMX_ERR_VALUE,
                   "[%s] Subscripts must be letters, but got byte 0x%02x.",
                   sp->op, u);
      else
        cmx__error(CMX_ERR_VALUE,
                   "[%s] Subscripts must be letters, but got '%c'.", sp->op,
                   *c);
      return false;
    }
    if (ell) {
      cmx__error(CMX_ERR_VALUE,
                 "[%s] Only one ellipsis per subscript is allowed but found "
                 "more in '%.*s'.",
                 sp->op, (int)(e - p), p);
      return false;
    }
    ell = true;
    c += 2;
  }
  int L = 0;
  if (ell) {
    L = ndim >= 0 ? ndim - before - after : *ell_io;
    if (L < 0) {
      char sh[512];
      cmx__error(CMX_ERR_VALUE,
                 "[%s] Operand %d with shape %s has insufficient dimensions "
                 "for subscript '%.*s'. The ellipsis requires at least %d "
                 "dimensions but the operand has %d dimensions.",
                 sp->op, which, cmx__shape_str(shape, ndim, sh, sizeof sh),
                 (int)(e - p), p, before + after, ndim);
      return false;
    }
    if (L > npool) {
      cmx__error(CMX_ERR_VALUE,
                 "[%s] Not enough unused letters for an ellipsis of %d "
                 "dimensions.",
                 sp->op, L);
      return false;
    }
    if (ndim >= 0 && L > *ell_io) *ell_io = L;
  }
  if (before + after + L > (int)sizeof t->lab) {
    cmx__error(CMX_ERR_VALUE, "[%s] Too many subscripts in '%.*s'.", sp->op,
               (int)(e - p), p);
    return false;
  }
  t->n = 0;
  for (const char* c = p; c < e; c++) {
    if (*c == '.') {
      for (int k = npool - L; k < npool; k++) t->lab[t->n++] = (int8_t)pool[k];
      c += 2;
    } else {
      t->lab[t->n++] = (int8_t)lab_index(*c);
    }
  }
  return true;
}

void cmx__einsum_spec_free(spec* sp) {
  free(sp->in);
  sp->in = NULL;
}

bool cmx__einsum_parse(spec* sp, const char* subscripts, const cmx_array* ops,
                       int n) {
  sp->in = NULL;
  if (!subscripts) {
    cmx__error(CMX_ERR_VALUE, "[%s] subscripts is NULL.", sp->op);
    return false;
  }
  if (n < 1 || !ops) {
    cmx__error(CMX_ERR_VALUE, "[%s] At least one operand is required.", sp->op);
    return false;
  }
  for (int i = 0; i < n; i++)
    if (!cmx__check_args(sp->op, 1, ops[i])) return false;
  /* Whitespace removed (MLX drops spaces). */
  size_t len = strlen(subscripts);
  char* str = malloc(len + 4);
  if (!str) {
    cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", sp->op);
    return false;
  }
  size_t k = 0;
  for (size_t i = 0; i < len; i++)
    if (!isspace((unsigned char)subscripts[i])) str[k++] = subscripts[i];
  str[k] = 0;
  /* Letters free for ellipses: those the string does not use. */
  bool used[NLAB] = {false};
  for (size_t i = 0; i < k; i++)
    if (lab_index(str[i]) >= 0) used[lab_index(str[i])] = true;
  char pool[NLAB];
  int npool = 0;
  for (int i = 0; i < NLAB; i++)
    if (!used[i]) pool[npool++] = (char)i;
  char* arrow = strstr(str, "->");
  char* lhs_end = arrow ? arrow : str + k;
  int nterms = 1;
  for (char* c = str; c < lhs_end; c++) nterms += *c == ',';
  bool ok = false;
  if (nterms != n) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Number of operands, %d, does not match number of input "
               "subscripts, %d.",
               sp->op, n, nterms);
    goto done;
  }
  sp->n = n;
  sp->in = calloc((size_t)n, sizeof(term));
  if (!sp->in) {
    cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", sp->op);
    goto done;
  }
  int ell = 0;
  char* p = str;
  for (int i = 0; i < n; i++) {
    char* e = p;
    while (e < lhs_end && *e != ',') e++;
    if (!read_term(sp, p, e, ops[i]->dims, ops[i]->ndim, i, pool, npool,
                   &sp->in[i], &ell))
      goto done;
    if (sp->in[i].n != ops[i]->ndim) {
      cmx__error(CMX_ERR_VALUE,
                 "[%s] Invalid number of subscripts %d for input %d with %d "
                 "dimensions.",
                 sp->op, sp->in[i].n, i, ops[i]->ndim);
      goto done;
    }
    p = e + 1;
  }
  /* The output: explicit, or the letters used once in order after any
   * ellipsis. */
  if (arrow) {
    if (!read_term(sp, arrow + 2, str + k, NULL, -1, -1, pool, npool, &sp->out,
                   &ell))
      goto done;
  } else {
    int count[NLAB] = {0};
    for (int i = 0; i < n; i++)
      for (int j = 0; j < sp->in[i].n; j++) count[sp->in[i].lab[j]]++;
    sp->out.n = 0;
    /* Ellipsis labels first (pool order), then letters used once. */
    for (int q = npool - ell; q < npool; q++)
      sp->out.lab[sp->out.n++] = (int8_t)pool[q];
    for (int l = 26; l < NLAB; l++) /* ASCII order: upper case first */
      if (used[l] && count[l] == 1) sp->out.lab[sp->out.n++] = (int8_t)l;
    for (int l = 0; l < 26; l++)
      if (used[l] && count[l] == 1) sp->out.lab[sp->out.n++] = (int8_t)l;
  }
  uint64_t all = 0;
  for (int i = 0; i < n; i++) all |= term_set(&sp->in[i]);
  uint64_t oset = 0;
  for (int j = 0; j < sp->out.n; j++) {
    uint64_t bit = 1ull << sp->out.lab[j];
    if (oset & bit) {
      cmx__error(CMX_ERR_VALUE, "[%s] Repeat indices not allowed in output.",
                 sp->op);
      goto done;
    }
    if (!(all & bit)) {
      cmx__error(CMX_ERR_VALUE,
                 "[%s] Output subscript '%c' does not appear in the input "
                 "subscripts.",
                 sp->op, lab_char(sp->out.lab[j]));
      goto done;
    }
    oset |= bit;
  }
  if (sp->out.n > CMX_MAX_NDIM) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] The output would have %d dimensions (max %d).", sp->op,
               sp->out.n, CMX_MAX_NDIM);
    goto done;
  }
  sp->out_set = oset;
  sp->all_set = all;
  /* Sizes: repeats within an operand must agree; across operands size 1
   * broadcasts. */
  for (int l = 0; l < NLAB; l++) sp->dim[l] = -1;
  for (int i = 0; i < n; i++) {
    int64_t local[NLAB];
    for (int l = 0; l < NLAB; l++) local[l] = -1;
    for (int j = 0; j < sp->in[i].n; j++) {
      int l = sp->in[i].lab[j];
      int64_t d = ops[i]->dims[j];
      if (local[l] >= 0 && local[l] != d) {
        cmx__error(CMX_ERR_VALUE,
                   "[%s] Dimensions of repeated subscripts do not have the "
                   "same size (%lld != %lld).",
                   sp->op, (long long)local[l], (long long)d);
        goto done;
      }
      local[l] = d;
      int64_t* g = &sp->dim[l];
      if (*g < 0 || *g == 1) {
        *g = d;
      } else if (d != 1 && d != *g) {
        char sh[512];
        cmx__error(CMX_ERR_VALUE,
                   "[%s] Cannot broadcast dimension %d of input %d with shape "
                   "%s to size %lld.",
                   sp->op, j, i,
                   cmx__shape_str(ops[i]->dims, ops[i]->ndim, sh, sizeof sh),
                   (long long)*g);
        goto done;
      }
    }
  }
  ok = true;
done:
  free(str);
  if (!ok) cmx__einsum_spec_free(sp);
  return ok;
}

/* ---------------- evaluation ---------------- */
typedef struct {
  cmx_array a;
  term t;
} opnd;

/* Takes each label repeated in o's term as a diagonal (a view), which
 * moves to the last axis. */
static void collapse_repeats(opnd* o, cmx_stream s) {
  for (bool again = true; again && o->a;) {
    again = false;
    for (int i = 0; i < o->t.n && !again; i++)
      for (int j = i + 1; j < o->t.n && !again; j++) {
        if (o->t.lab[i] != o->t.lab[j]) continue;
        int8_t l = o->t.lab[i];
        o->a = cmx__diagonal(o->a, 0, i, j, s);
        int w = 0;
        for (int d = 0; d < o->t.n; d++)
          if (d != i && d != j) o->t.lab[w++] = o->t.lab[d];
        o->t.lab[w++] = l;
        o->t.n = w;
        again = true;
      }
  }
}

/* Sums the axes of o whose labels are not in keep. */
static void sum_unkept(opnd* o, uint64_t keep, cmx_stream s) {
  int axes[CMX_MAX_NDIM], na = 0, w = 0;
  for (int d = 0; d < o->t.n; d++) {
    if (keep >> o->t.lab[d] & 1)
      o->t.lab[w++] = o->t.lab[d];
    else
      axes[na++] = d;
  }
  if (!na) return;
  o->t.n = w;
  o->a = cmx__sum(o->a, axes, na, false, s);
}

static int find_label(const term* t, int8_t l) {
  for (int d = 0; d < t->n; d++)
    if (t->lab[d] == l) return d;
  return -1;
}

/* a with its axes reordered from term `from` to term `to` (same labels). */
static cmx_array transpose_to(cmx_array a, const term* from, const term* to,
                              cmx_stream s) {
  int perm[CMX_MAX_NDIM];
  bool same = true;
  for (int d = 0; d < to->n; d++) {
    perm[d] = find_label(from, to->lab[d]);
    same = same && perm[d] == d;
  }
  return same ? a : cmx__transpose(a, perm, to->n, s);
}

static bool too_many(const char* what, int nd) {
  if (nd <= CMX_MAX_NDIM) return false;
  cmx__error(CMX_ERR_VALUE, "[einsum] %s would have %d dimensions (max %d).",
             what, nd, CMX_MAX_NDIM);
  return true;
}

/* Two operands sharing summed labels as one batched matmul: x to (batch,
 * x-free, summed), y to (batch, summed, y-free); the result's labels are
 * batch + x-free + y-free. */
static opnd pair_product(const opnd* x, const opnd* y, uint64_t res,
                         cmx_stream s) {
  opnd r = {NULL, {0, {0}}};
  uint64_t ys = term_set(&y->t), xs = term_set(&x->t);
  term bt = {0, {0}}, ct = {0, {0}}, xf = {0, {0}}, yf = {0, {0}};
  for (int d = 0; d < x->t.n; d++) {
    int8_t l = x->t.lab[d];
    term* t = !(ys >> l & 1) ? &xf : (res >> l & 1) ? &bt : &ct;
    t->lab[t->n++] = l;
  }
  for (int d = 0; d < y->t.n; d++)
    if (!(xs >> y->t.lab[d] & 1)) yf.lab[yf.n++] = y->t.lab[d];
  if (too_many("An intermediate result", bt.n + xf.n + yf.n)) return r;
  /* Sizes of the shared labels broadcast (one side may be 1). */
  int64_t sx[CMX_MAX_NDIM], sy[CMX_MAX_NDIM], fx[CMX_MAX_NDIM],
      fy[CMX_MAX_NDIM], so[CMX_MAX_NDIM];
  term tx = bt, ty = bt;
  int nx = 0, ny = 0, no = 0;
  int64_t M = 1, K = 1, N = 1;
  for (int i = 0; i < bt.n; i++) {
    int64_t a = x->a->dims[find_label(&x->t, bt.lab[i])];
    int64_t b = y->a->dims[find_label(&y->t, bt.lab[i])];
    sx[nx++] = sy[ny++] = so[no++] = a == 1 ? b : a;
  }
  for (int i = 0; i < xf.n; i++) {
    tx.lab[tx.n++] = xf.lab[i];
    sx[nx++] = so[no++] = x->a->dims[find_label(&x->t, xf.lab[i])];
    M *= sx[nx - 1];
  }
  for (int i = 0; i < ct.n; i++) {
    int64_t a = x->a->dims[find_label(&x->t, ct.lab[i])];
    int64_t b = y->a->dims[find_label(&y->t, ct.lab[i])];
    tx.lab[tx.n++] = ty.lab[ty.n++] = ct.lab[i];
    sx[nx++] = sy[ny++] = a == 1 ? b : a;
    K *= sx[nx - 1];
  }
  for (int i = 0; i < yf.n; i++) {
    ty.lab[ty.n++] = yf.lab[i];
    sy[ny++] = so[no++] = y->a->dims[find_label(&y->t, yf.lab[i])];
    N *= sy[ny - 1];
  }
  memcpy(fx, sx, (size_t)bt.n * sizeof *fx);
  memcpy(fy, sy, (size_t)bt.n * sizeof *fy);
  fx[bt.n] = M, fx[bt.n + 1] = K;
  fy[bt.n] = K, fy[bt.n + 1] = N;
  cmx_array a = cmx__broadcast_to(transpose_to(x->a, &x->t, &tx, s), sx, nx, s);
  cmx_array b = cmx__broadcast_to(transpose_to(y->a, &y->t, &ty, s), sy, ny, s);
  cmx_array p = cmx__matmul(cmx__reshape(a, fx, bt.n + 2, s),
                            cmx__reshape(b, fy, bt.n + 2, s), s);
  r.a = cmx__reshape(p, so, no, s);
  r.t = bt;
  for (int i = 0; i < xf.n; i++) r.t.lab[r.t.n++] = xf.lab[i];
  for (int i = 0; i < yf.n; i++) r.t.lab[r.t.n++] = yf.lab[i];
  return r;
}

/* Any number of operands as a broadcast product over all their labels
 * (in order of first appearance) and a sum over those not in res. */
static opnd naive_product(const opnd* ops, int k, uint64_t res, cmx_dtype dt,
                          cmx_stream s) {
  opnd r = {NULL, {0, {0}}};
  term u = {0, {0}};
  uint64_t seen = 0;
  for (int i = 0; i < k; i++)
    for (int d = 0; d < ops[i].t.n; d++) {
      int8_t l = ops[i].t.lab[d];
      if (seen >> l & 1) continue;
      seen |= 1ull << l;
      u.lab[u.n++] = l;
    }
  if (too_many("A contraction", u.n)) return r;
  cmx_array prod = NULL;
  for (int i = 0; i < k; i++) {
    /* The operand's labels in union order, then size-1 axes for the
     * others. */
    term own = {0, {0}};
    int64_t shape[CMX_MAX_NDIM];
    for (int d = 0; d < u.n; d++) {
      int pos = find_label(&ops[i].t, u.lab[d]);
      if (pos >= 0) own.lab[own.n++] = u.lab[d];
      shape[d] = pos >= 0 ? ops[i].a->dims[pos] : 1;
    }
    cmx_array x =
        cmx__reshape(transpose_to(ops[i].a, &ops[i].t, &own, s), shape, u.n, s);
    prod = prod ? cmx__multiply(prod, x, s) : x;
  }
  int axes[CMX_MAX_NDIM], na = 0;
  r.t.n = 0;
  for (int d = 0; d < u.n; d++) {
    if (res >> u.lab[d] & 1)
      r.t.lab[r.t.n++] = u.lab[d];
    else
      axes[na++] = d;
  }
  if (na) prod = cmx__sum(prod, axes, na, false, s);
  /* Sums widen integers and bool; the result keeps the operands' type. */
  r.a = prod && prod->dtype != dt ? cmx__astype(prod, dt, s) : prod;
  return r;
}

/* One path step over the k operands ops (modified), giving labels res. */
static opnd contract(opnd* ops, int k, uint64_t res, cmx_dtype dt,
                     cmx_stream s) {
  for (int i = 0; i < k; i++) collapse_repeats(&ops[i], s);
  for (int i = 0; i < k; i++) {
    uint64_t keep = res;
    for (int j = 0; j < k; j++)
      if (j != i) keep |= term_set(&ops[j].t);
    sum_unkept(&ops[i], keep, s);
  }
  for (int i = 0; i < k; i++)
    if (!ops[i].a) return (opnd){NULL, {0, {0}}};
  if (k == 2 && cmx_dtype_is_inexact(dt) && (term_set(&ops[0].t) & ~res))
    return pair_product(&ops[0], &ops[1], res, s);
  return naive_product(ops, k, res, dt, s);
}

cmx_array cmx__einsum(const char* subscripts, const cmx_array* operands, int n,
                      cmx_stream s) {
  spec sp;
  memset(&sp, 0, sizeof sp);
  sp.op = "einsum";
  if (!cmx__einsum_parse(&sp, subscripts, operands, n)) return NULL;
  path pa;
  if (!cmx__einsum_find_path(&sp, operands, &pa)) {
    cmx__einsum_spec_free(&sp);
    return NULL;
  }
  cmx_dtype dt = cmx__result_type(operands, n);
  opnd* list = malloc((size_t)n * sizeof *list);
  opnd* work = malloc((size_t)n * sizeof *work);
  cmx_array result = NULL;
  if (!list || !work) {
    cmx__error(CMX_ERR_MEMORY, "[einsum] out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    list[i].a = cmx__as_dtype(operands[i], dt, s);
    list[i].t = sp.in[i];
  }
  int m = n;
  for (int si = 0; si < pa.nsteps; si++) {
    const step* st = &pa.steps[si];
    int k = st->cnt;
    const int* ps = k == 2 ? st->pos : NULL;
    for (int i = 0; i < k; i++) {
      int at = ps ? ps[i] : i;
      work[i] = list[at];
    }
    opnd r = contract(work, k, st->res, dt, s);
    if (!r.a) goto done;
    /* Remove the contracted operands (positions ascending), append r. */
    int w = 0;
    for (int i = 0; i < m; i++) {
      bool used = ps ? (i == ps[0] || i == ps[1]) : i < k;
      if (!used) list[w++] = list[i];
    }
    list[w++] = r;
    m = w;
  }
  result = transpose_to(list[0].a, &list[0].t, &sp.out, s);
  if (result && result->dtype != dt) result = cmx__astype(result, dt, s);
done:
  free(list);
  free(work);
  cmx__einsum_path_free(&pa);
  cmx__einsum_spec_free(&sp);
  return result;
}

cmx_status cmx_einsum(cmx_array* out, const char* subscripts,
                      const cmx_array* operands, int n, cmx_stream s) {
  CMX__PUBLIC(out, "einsum", cmx__einsum(subscripts, operands, n, s));
}
