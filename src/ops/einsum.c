/* einsum and einsum_path, as MLX's (which follows NumPy and opt_einsum).
 *
 * 1. Parsing: subscripts become one label list per operand and one for
 *    the output (letters a-z, A-Z; "..." expands to letters the string
 *    does not use, taken from the end of the unused pool so that shorter
 *    ellipses align to the right and broadcast). Label sizes are checked
 *    and broadcast (size 1 meets anything).
 * 2. Path: with one or two operands a single step; otherwise MLX's greedy
 *    search over pairs: each round adds the candidate pairs that share a
 *    label (all pairs when none does), keeps those whose result fits the
 *    largest input or output and whose cost keeps the path below the naive
 *    cost, and takes the one removing the most elements (ties: fewer
 *    FLOPs, then the earliest found). The result joins the end of the
 *    operand list. FLOPs of a step: the product of its label sizes, times
 *    2 when it sums a label.
 * 3. Each step first takes repeated labels as diagonals (views) and sums
 *    labels no other operand of the step or its output has; then two
 *    operands with a summed label shared become one batched matmul
 *    (floating and complex types), anything else a broadcast product and
 *    sum. The last step's result is transposed to the output's order.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"

#define NLAB 52 /* a-z then A-Z */

static int lab_index(char c) {
  return c >= 'a' && c <= 'z'   ? c - 'a'
         : c >= 'A' && c <= 'Z' ? c - 'A' + 26
                                : -1;
}
static char lab_char(int i) {
  return (char)(i < 26 ? 'a' + i : 'A' + i - 26);
}

/* Labels of one operand (or of the output), one per axis. */
typedef struct {
  int n;
  int8_t lab[NLAB + CMX_MAX_NDIM];
} term;

static uint64_t term_set(const term* t) {
  uint64_t s = 0;
  for (int i = 0; i < t->n; i++) s |= 1ull << t->lab[i];
  return s;
}

typedef struct {
  const char* op; /* "einsum" or "einsum_path" for messages */
  int n;
  term* in; /* n */
  term out;
  int64_t dim[NLAB];
  uint64_t out_set, all_set;
} spec;

/* One contraction: cnt positions into the current operand list. */
typedef struct {
  int cnt;
  int pos[2];   /* cnt == 2; the naive remainder lists 0..cnt-1 */
  uint64_t res; /* labels of its result (the output for the last step) */
  uint64_t all; /* labels it touches */
} step;

typedef struct {
  step* steps;
  int nsteps;
  double naive_cost, opt_cost, largest;
  int naive_scaling, opt_scaling;
} path;

static double set_size(uint64_t set, const int64_t* dim) {
  double s = 1;
  for (int i = 0; i < NLAB; i++)
    if (set >> i & 1) s *= (double)dim[i];
  return s;
}

static int popcount64(uint64_t x) {
  return __builtin_popcountll(x);
}

/* FLOPs of combining `terms` operands over labels `all`, summing some
 * labels when inner. */
static double flops(uint64_t all, bool inner, int terms, const int64_t* dim) {
  double f = terms - 1 > 1 ? terms - 1 : 1;
  return set_size(all, dim) * (f + (inner ? 1 : 0));
}

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
      cmx__error(CMX_ERR_VALUE,
                 "[%s] Subscripts must be letters, but got '%c'.", sp->op, *c);
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

static void spec_free(spec* sp) {
  free(sp->in);
  sp->in = NULL;
}

static bool parse(spec* sp, const char* subscripts, const cmx_array* ops,
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
  if (!ok) spec_free(sp);
  return ok;
}

/* ---------------- path ---------------- */
typedef struct {
  double removed, cost;
  uint64_t res, all;
  int x, y;
} cand;

static bool path_push(path* pa, const step* st, int* cap) {
  if (pa->nsteps == *cap) {
    int nc = *cap ? 2 * *cap : 8;
    step* ns = realloc(pa->steps, (size_t)nc * sizeof *ns);
    if (!ns) return false;
    pa->steps = ns;
    *cap = nc;
  }
  pa->steps[pa->nsteps++] = *st;
  return true;
}

/* MLX's greedy search (see the file comment). sets: the operands' label
 * sets (modified). */
static bool greedy(const spec* sp, uint64_t* sets, int n, double mem_limit,
                   path* pa) {
  int cap = 0, ncand = 0, candcap = 0;
  cand* cands = NULL;
  /* Pairs to examine this round: all of them first, then (i, last). */
  int npairs = 0;
  int(*pairs)[2] = malloc((size_t)(n * (n - 1) / 2 + n) * sizeof *pairs);
  bool ok = pairs != NULL;
  for (int i = 0; ok && i < n; i++)
    for (int j = i + 1; j < n; j++)
      pairs[npairs][0] = i, pairs[npairs++][1] = j;
  double cost_sum = 0;
  int m = n; /* current operand count */
  for (int round = 0; ok && round < n - 1; round++) {
    /* Pairs sharing a label; outer products only when no pair does. */
    for (int pass = 0; ok && pass < 2; pass++) {
      if (pass == 1 && ncand > 0) break;
      for (int q = 0; q < npairs; q++) {
        int x = pairs[q][0], y = pairs[q][1];
        if (pass == 0 && !(sets[x] & sets[y])) continue;
        uint64_t all = sets[x] | sets[y], keep = sp->out_set;
        for (int i = 0; i < m; i++)
          if (i != x && i != y) keep |= sets[i];
        uint64_t res = all & keep;
        double rsize = set_size(res, sp->dim);
        if (rsize > mem_limit) continue;
        double cost = flops(all, all != res, 2, sp->dim);
        if (cost_sum + cost > pa->naive_cost) continue;
        if (ncand == candcap) {
          int nc = candcap ? 2 * candcap : 16;
          cand* nb = realloc(cands, (size_t)nc * sizeof *nb);
          if (!nb) {
            ok = false;
            break;
          }
          cands = nb, candcap = nc;
        }
        cands[ncand++] = (cand){
            set_size(sets[x], sp->dim) + set_size(sets[y], sp->dim) - rsize,
            cost,
            res,
            all,
            x,
            y};
      }
    }
    if (!ok) break;
    if (ncand == 0) { /* nothing fits: one naive step for the rest */
      step st = {m, {0, 1}, sp->out_set, 0};
      for (int i = 0; i < m; i++) st.all |= sets[i];
      uint64_t all = st.all;
      pa->opt_cost += flops(all, (all & ~sp->out_set) != 0, m, sp->dim);
      if (popcount64(all) > pa->opt_scaling) pa->opt_scaling = popcount64(all);
      ok = path_push(pa, &st, &cap);
      break;
    }
    int best = 0;
    for (int c = 1; c < ncand; c++)
      if (cands[c].removed > cands[best].removed ||
          (cands[c].removed == cands[best].removed &&
           cands[c].cost < cands[best].cost))
        best = c;
    cand b = cands[best];
    step st = {2, {b.x, b.y}, b.res, b.all};
    if (!path_push(pa, &st, &cap)) {
      ok = false;
      break;
    }
    if (popcount64(b.all) > pa->opt_scaling)
      pa->opt_scaling = popcount64(b.all);
    cost_sum += b.cost;
    /* The operand list: x and y out, the result at the end. */
    int w = 0;
    for (int i = 0; i < m; i++)
      if (i != b.x && i != b.y) sets[w++] = sets[i];
    sets[w] = b.res;
    m = w + 1;
    /* Surviving candidates, renumbered. */
    int kept = 0;
    for (int c = 0; c < ncand; c++) {
      cand v = cands[c];
      if (v.x == b.x || v.x == b.y || v.y == b.x || v.y == b.y) continue;
      v.x -= (v.x > b.x) + (v.x > b.y);
      v.y -= (v.y > b.x) + (v.y > b.y);
      cands[kept++] = v;
    }
    ncand = kept;
    npairs = 0;
    for (int i = 0; i < m - 1; i++)
      pairs[npairs][0] = i, pairs[npairs++][1] = m - 1;
  }
  pa->opt_cost += cost_sum;
  free(pairs);
  free(cands);
  if (!ok) cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", sp->op);
  return ok;
}

static void path_free(path* pa) {
  free(pa->steps);
  pa->steps = NULL;
}

static bool find_path(const spec* sp, const cmx_array* ops, path* pa) {
  memset(pa, 0, sizeof *pa);
  int n = sp->n;
  /* The memory limit: the largest operand or output (repeats counted). */
  double mem = 1;
  for (int j = 0; j < sp->out.n; j++) mem *= (double)sp->dim[sp->out.lab[j]];
  for (int i = 0; i < n; i++) {
    double t = 1;
    for (int j = 0; j < sp->in[i].n; j++) t *= (double)ops[i]->dims[j];
    if (t > mem) mem = t;
  }
  pa->naive_scaling = popcount64(sp->all_set);
  pa->naive_cost =
      flops(sp->all_set, (sp->all_set & ~sp->out_set) != 0, n, sp->dim);
  if (n <= 2) {
    step st = {n, {0, 1}, sp->out_set, sp->all_set};
    int cap = 0;
    if (!path_push(pa, &st, &cap)) {
      cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", sp->op);
      return false;
    }
    pa->opt_cost = pa->naive_cost;
    pa->opt_scaling = pa->naive_scaling;
  } else {
    uint64_t* sets = malloc((size_t)n * sizeof *sets);
    if (!sets) {
      cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", sp->op);
      return false;
    }
    for (int i = 0; i < n; i++) sets[i] = term_set(&sp->in[i]);
    bool ok = greedy(sp, sets, n, mem, pa);
    free(sets);
    if (!ok) {
      path_free(pa);
      return false;
    }
    pa->steps[pa->nsteps - 1].res = sp->out_set;
  }
  for (int i = 0; i < pa->nsteps; i++) {
    double r = set_size(pa->steps[i].res, sp->dim);
    if (r > pa->largest) pa->largest = r;
  }
  return true;
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
  if (!parse(&sp, subscripts, operands, n)) return NULL;
  path pa;
  if (!find_path(&sp, operands, &pa)) {
    spec_free(&sp);
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
  path_free(&pa);
  spec_free(&sp);
  return result;
}

cmx_status cmx_einsum(cmx_array* out, const char* subscripts,
                      const cmx_array* operands, int n, cmx_stream s) {
  CMX__PUBLIC(out, "einsum", cmx__einsum(subscripts, operands, n, s));
}

/* ---------------- einsum_path ---------------- */
typedef struct {
  char* p;
  size_t n, cap;
  bool failed;
} sbuf;

static void sb_printf(sbuf* b, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf* b, const char* fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w =
        vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->failed = true;
      return;
    }
    if (b->p && b->n + (size_t)w < b->cap) {
      b->n += (size_t)w;
      return;
    }
    size_t nc = (b->cap + (size_t)w + 1) * 2;
    char* np = realloc(b->p, nc);
    if (!np) {
      b->failed = true;
      return;
    }
    b->p = np;
    b->cap = nc;
  }
}

static void sb_term(sbuf* b, const term* t) {
  for (int i = 0; i < t->n; i++) sb_printf(b, "%c", lab_char(t->lab[i]));
}

/* "ab,bc->ac" of terms ts (n) and result r into b. */
static void sb_contraction(sbuf* b, const term* ts, int n, const term* r) {
  for (int i = 0; i < n; i++) {
    if (i) sb_printf(b, ",");
    sb_term(b, &ts[i]);
  }
  sb_printf(b, "->");
  sb_term(b, r);
}

/* MLX's report, then NumPy's speedup, largest intermediate and the steps
 * (each intermediate's labels in order of first appearance). */
static char* path_report(const spec* sp, const path* pa,
                         const char* subscripts) {
  sbuf b = {NULL, 0, 0, false};
  sb_printf(&b, "  Complete contraction:  %s\n", subscripts);
  sb_printf(&b, "         Naive scaling:  %d\n", pa->naive_scaling);
  sb_printf(&b, "     Optimized scaling:  %d\n", pa->opt_scaling);
  sb_printf(&b, "      Naive FLOP count:  %.0f\n", pa->naive_cost);
  sb_printf(&b, "  Optimized FLOP count:  %.0f\n", pa->opt_cost);
  sb_printf(&b, "   Theoretical speedup:  %.3f\n",
            pa->opt_cost > 0 ? pa->naive_cost / pa->opt_cost : 1.0);
  sb_printf(&b, "  Largest intermediate:  %.0f elements\n", pa->largest);
  static const char rule[] =
      "--------------------------------------------------------------------"
      "------";
  sb_printf(&b, "%s\n%-9s%-32s%s\n%s\n", rule, "scaling", "current",
            "remaining", rule);
  term* list = malloc((size_t)sp->n * sizeof *list);
  term* cur = malloc((size_t)sp->n * sizeof *cur);
  if (!list || !cur) b.failed = true;
  int m = sp->n;
  for (int i = 0; !b.failed && i < m; i++) list[i] = sp->in[i];
  for (int si = 0; !b.failed && si < pa->nsteps; si++) {
    const step* st = &pa->steps[si];
    int k = st->cnt;
    term r = {0, {0}};
    uint64_t seen = 0, all = 0;
    for (int i = 0; i < k; i++) {
      cur[i] = list[k == 2 ? st->pos[i] : i];
      all |= term_set(&cur[i]);
    }
    if (si == pa->nsteps - 1) {
      r = sp->out;
    } else {
      for (int i = 0; i < k; i++)
        for (int d = 0; d < cur[i].n; d++) {
          int8_t l = cur[i].lab[d];
          if ((st->res >> l & 1) && !(seen >> l & 1)) {
            seen |= 1ull << l;
            r.lab[r.n++] = l;
          }
        }
    }
    int w = 0;
    for (int i = 0; i < m; i++) {
      bool used = k == 2 ? (i == st->pos[0] || i == st->pos[1]) : i < k;
      if (!used) list[w++] = list[i];
    }
    list[w++] = r;
    m = w;
    sb_printf(&b, "%4d     ", popcount64(all));
    size_t at = b.n;
    sb_contraction(&b, cur, k, &r);
    int width = (int)(b.n - at);
    sb_printf(&b, "%*s", width < 32 ? 32 - width : 1, "");
    sb_contraction(&b, list, m, &sp->out);
    sb_printf(&b, "\n");
  }
  free(list);
  free(cur);
  if (b.failed) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

cmx_status cmx_einsum_path(int** positions, int** counts, int* nsteps,
                           char** report, const char* subscripts,
                           const cmx_array* operands, int n) {
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  cmx_status st = CMX_OK;
  spec sp;
  memset(&sp, 0, sizeof sp);
  sp.op = "einsum_path";
  path pa;
  memset(&pa, 0, sizeof pa);
  if (!positions || !counts || !nsteps) {
    st = cmx__error(CMX_ERR_VALUE, "[einsum_path] output pointer is NULL");
    goto out;
  }
  *positions = NULL, *counts = NULL, *nsteps = 0;
  if (report) *report = NULL;
  if (!parse(&sp, subscripts, operands, n) || !find_path(&sp, operands, &pa)) {
    st = cmx_last_status();
    goto out;
  }
  int total = 0;
  for (int i = 0; i < pa.nsteps; i++) total += pa.steps[i].cnt;
  int* pos = malloc((size_t)total * sizeof *pos);
  int* cnt = malloc((size_t)pa.nsteps * sizeof *cnt);
  char* rep = report ? path_report(&sp, &pa, subscripts) : NULL;
  if (!pos || !cnt || (report && !rep)) {
    free(pos), free(cnt), free(rep);
    st = cmx__error(CMX_ERR_MEMORY, "[einsum_path] out of memory");
    goto out;
  }
  int k = 0;
  for (int i = 0; i < pa.nsteps; i++) {
    const step* s = &pa.steps[i];
    cnt[i] = s->cnt;
    for (int j = 0; j < s->cnt; j++) pos[k++] = s->cnt == 2 ? s->pos[j] : j;
  }
  *positions = pos, *counts = cnt, *nsteps = pa.nsteps;
  if (report) *report = rep;
out:
  path_free(&pa);
  spec_free(&sp);
  cmx__scope_exit_n(mark, NULL, NULL, 0);
  return st;
}
