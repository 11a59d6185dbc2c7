/* einsum_path: the order of einsum's pairwise contractions, and MLX's
 * report of it.
 *
 * With one or two operands the path is a single step. Otherwise MLX's
 * greedy search over pairs: each round adds the candidate pairs that share
 * a label (all pairs when none does), keeps those whose result fits the
 * largest input or output and whose cost keeps the path below the naive
 * cost, and takes the one removing the most elements (ties: fewer FLOPs,
 * then the earliest found); candidates of earlier rounds stay (renumbered)
 * unless they used a contracted operand. The result joins the end of the
 * operand list. FLOPs of a step: the product of its label sizes, times 2
 * when it sums a label (times the operand count - 1 for naive steps).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/einsum_internal.h"

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

void cmx__einsum_path_free(path* pa) {
  free(pa->steps);
  pa->steps = NULL;
}

bool cmx__einsum_find_path(const spec* sp, const cmx_array* ops, path* pa) {
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
      cmx__einsum_path_free(pa);
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
  if (!cmx__einsum_parse(&sp, subscripts, operands, n) ||
      !cmx__einsum_find_path(&sp, operands, &pa)) {
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
  cmx__einsum_path_free(&pa);
  cmx__einsum_spec_free(&sp);
  cmx__scope_exit_n(mark, NULL, NULL, 0);
  return st;
}
