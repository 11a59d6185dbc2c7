/* Importing functions: reading and validating a file written by an
 * exporter, and calling it (matching a trace, rebuilding its ops with the
 * validating ops and checking each against the recorded types). See
 * include/cmx/export.h and the layout in export_internal.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "io/io_common.h"
#include "ops/ops_internal.h"

#define OP "import_function"

struct cmx_imported {
  char* metadata;
  cmx__fn_trace* traces;
  int n;
};

/* ---------------- reading ---------------- */
typedef struct rd {
  const uint8_t* p;
  uint64_t n, pos;
  const char* path;
  bool failed;
} rd;

static bool bad_file(rd* r, const char* what) {
  if (!r->failed)
    cmx__error(CMX_ERR_VALUE, "[%s] %s is not a valid exported function: %s",
               OP, r->path, what);
  r->failed = true;
  return false;
}

static const uint8_t* take(rd* r, uint64_t n, const char* what) {
  if (r->failed) return NULL;
  if (n > r->n - r->pos) {
    char msg[128];
    snprintf(msg, sizeof msg, "the file ends inside %s", what);
    bad_file(r, msg);
    return NULL;
  }
  const uint8_t* p = r->p + r->pos;
  r->pos += n;
  return p;
}
static uint8_t get_u8(rd* r, const char* what) {
  const uint8_t* p = take(r, 1, what);
  return p ? p[0] : 0;
}
static uint16_t get_u16(rd* r, const char* what) {
  const uint8_t* p = take(r, 2, what);
  return p ? cmx__le16(p) : 0;
}
static uint32_t get_u32(rd* r, const char* what) {
  const uint8_t* p = take(r, 4, what);
  return p ? cmx__le32(p) : 0;
}
static uint64_t get_u64(rd* r, const char* what) {
  const uint8_t* p = take(r, 8, what);
  return p ? cmx__le64(p) : 0;
}
/* A count of items of at least `min_bytes` each: bounded by the file. */
static uint32_t get_count(rd* r, uint64_t min_bytes, uint32_t limit,
                          const char* what) {
  uint32_t v = get_u32(r, what);
  if (r->failed) return 0;
  if (v > limit || (uint64_t)v * min_bytes > r->n - r->pos) {
    bad_file(r, what);
    return 0;
  }
  return v;
}
static char* get_str(rd* r, const char* what) {
  uint32_t len = get_count(r, 1, UINT32_MAX, what);
  const uint8_t* p = take(r, len, what);
  if (!p) return NULL;
  if (memchr(p, 0, len)) {
    bad_file(r, "a name holds a NUL byte");
    return NULL;
  }
  char* s = cmx__strndup(OP, (const char*)p, len);
  if (!s) r->failed = true;
  return s;
}

static bool get_type(rd* r, cmx__fn_value* v, uint32_t id) {
  uint8_t dt = get_u8(r, "a type");
  uint8_t nd = get_u8(r, "a type");
  if (r->failed) return false;
  if (dt >= CMX_NUM_DTYPES) return bad_file(r, "unknown dtype");
  if (nd > CMX_MAX_NDIM) return bad_file(r, "too many dimensions");
  v->dtype = (cmx_dtype)dt;
  v->ndim = nd;
  for (int i = 0; i < nd; i++) {
    uint64_t d = get_u64(r, "a shape");
    if (d > ((uint64_t)1 << 48)) return bad_file(r, "a dimension is too large");
    v->shape[i] = (int64_t)d;
  }
  if (cmx__shape_size(v->shape, nd) < 0) return bad_file(r, "shape too large");
  cmx__fn_value_name(id, v->name);
  return !r->failed;
}

static bool get_trace(rd* r, cmx__fn_trace* t) {
  t->shapeless = get_u8(r, "a trace") != 0;
  get_u8(r, "a trace");
  get_u16(r, "a trace");
  uint32_t npos = get_count(r, 2, CMX__FN_MAX_TRACES, "the inputs");
  uint32_t nkw = get_count(r, 6, CMX__FN_MAX_TRACES, "the keywords");
  if (r->failed) return false;
  if (npos + nkw > CMX__FN_MAX_TRACES) return bad_file(r, "too many inputs");
  t->npos = (int)npos;
  t->kwnames = calloc(nkw ? nkw : 1, sizeof *t->kwnames);
  if (!t->kwnames) return bad_file(r, "out of memory");
  for (uint32_t i = 0; i < nkw; i++, t->nkw++)
    if (!(t->kwnames[i] = get_str(r, "a keyword"))) return false;
  for (uint32_t i = 0; i < nkw; i++)
    for (uint32_t j = 0; j < i; j++)
      if (!strcmp(t->kwnames[i], t->kwnames[j]))
        return bad_file(r, "a keyword appears twice");
  t->nconst = get_count(r, 10, CMX__FN_MAX_ITEMS, "the constants");
  t->nops = get_count(r, 14, CMX__FN_MAX_ITEMS, "the ops");
  t->nout = get_count(r, 4, CMX__FN_MAX_ITEMS, "the outputs");
  if (r->failed) return false;
  uint32_t nin = npos + nkw;
  /* Values: inputs and constants now; op outputs as the ops are read. */
  uint64_t cap = (uint64_t)nin + t->nconst + 1;
  t->vals = calloc((size_t)cap, sizeof *t->vals);
  t->ops = calloc(t->nops ? t->nops : 1, sizeof *t->ops);
  t->outs = calloc(t->nout ? t->nout : 1, sizeof *t->outs);
  if (!t->vals || !t->ops || !t->outs) return bad_file(r, "out of memory");
  for (uint32_t i = 0; i < nin; i++, t->nvals++)
    if (!get_type(r, &t->vals[i], i)) return false;
  for (uint32_t i = 0; i < t->nconst; i++) {
    cmx__fn_value* v = &t->vals[t->nvals];
    if (!get_type(r, v, t->nvals)) return false;
    uint64_t nbytes = get_u64(r, "a constant");
    uint64_t want =
        (uint64_t)cmx__shape_size(v->shape, v->ndim) * cmx_dtype_size(v->dtype);
    if (r->failed) return false;
    if (nbytes != want) return bad_file(r, "a constant's size and type differ");
    const uint8_t* data = take(r, nbytes, "a constant");
    if (!data) return false;
    if (cmx_array_from_data(&v->array, data, v->shape, v->ndim, v->dtype) !=
        CMX_OK) {
      r->failed = true;
      return false;
    }
    t->nvals++;
  }
  for (uint32_t k = 0; k < t->nops; k++) {
    cmx__fn_op* f = &t->ops[k];
    uint16_t len = get_u16(r, "an op");
    const uint8_t* name = take(r, len, "an op name");
    if (!name) return false;
    f->vt = cmx__fn_primitive((const char*)name, len);
    if (!f->vt || !cmx__fn_exportable(f->vt))
      return bad_file(r, "unknown primitive");
    f->psize = get_count(r, 1, 1u << 20, "parameters");
    const uint8_t* params = take(r, f->psize, "parameters");
    if (!params) return false;
    f->params = malloc(f->psize ? f->psize : 1);
    if (!f->params) return bad_file(r, "out of memory");
    memcpy(f->params, params, f->psize);
    uint32_t nin_op = get_count(r, 4, 1u << 16, "an op's inputs");
    if (r->failed) return false;
    f->nin = (int)nin_op;
    f->in = malloc((nin_op ? nin_op : 1) * sizeof *f->in);
    if (!f->in) return bad_file(r, "out of memory");
    for (uint32_t i = 0; i < nin_op; i++) {
      f->in[i] = get_u32(r, "an op's input");
      if (!r->failed && f->in[i] >= t->nvals)
        return bad_file(r, "an op reads a value not made before it");
    }
    uint32_t nout = get_count(r, 2, 1u << 16, "an op's outputs");
    if (r->failed) return false;
    if (nout == 0) return bad_file(r, "an op has no output");
    if (t->nvals + (uint64_t)nout > CMX__FN_MAX_ITEMS * 4ull)
      return bad_file(r, "too many values");
    if (t->nvals + (uint64_t)nout > cap) {
      uint64_t c = cap * 2 > t->nvals + (uint64_t)nout
                       ? cap * 2
                       : t->nvals + (uint64_t)nout;
      cmx__fn_value* nv = realloc(t->vals, (size_t)c * sizeof *nv);
      if (!nv) return bad_file(r, "out of memory");
      memset(nv + cap, 0, (size_t)(c - cap) * sizeof *nv);
      t->vals = nv;
      cap = c;
    }
    f->nout = (int)nout;
    f->out = t->nvals;
    for (uint32_t i = 0; i < nout; i++, t->nvals++)
      if (!get_type(r, &t->vals[t->nvals], t->nvals)) return false;
  }
  for (uint32_t i = 0; i < t->nout; i++) {
    t->outs[i] = get_u32(r, "the outputs");
    if (!r->failed && t->outs[i] >= t->nvals)
      return bad_file(r, "an output is not a value of the trace");
  }
  return !r->failed;
}

static cmx_status parse(cmx_imported* f, rd* r) {
  const uint8_t* magic = take(r, 6, "the header");
  if (!magic || memcmp(magic, CMX__FN_MAGIC, 6) != 0)
    return bad_file(r, "bad magic"), cmx_last_status();
  uint16_t version = get_u16(r, "the header");
  get_u16(r, "the header");
  if (!r->failed && version != CMX__FN_VERSION) {
    char msg[96];
    snprintf(msg, sizeof msg, "format version %u (this cmx reads %u)",
             (unsigned)version, (unsigned)CMX__FN_VERSION);
    bad_file(r, msg);
  }
  f->metadata = get_str(r, "the metadata");
  uint32_t n = get_count(r, 24, CMX__FN_MAX_TRACES, "the traces");
  if (r->failed) return cmx_last_status();
  f->traces = calloc(n ? n : 1, sizeof *f->traces);
  if (!f->traces) return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", OP);
  for (uint32_t i = 0; i < n; i++) {
    f->n++;
    if (!get_trace(r, &f->traces[i])) return cmx_last_status();
  }
  if (r->pos != r->n) bad_file(r, "bytes follow the last trace");
  return r->failed ? cmx_last_status() : CMX_OK;
}

cmx_status cmx_import_function(cmx_imported** out, const char* path) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[%s] output is NULL", OP);
  *out = NULL;
  cmx__src src;
  cmx_status st = cmx__src_open(&src, OP, path);
  if (st != CMX_OK) return st;
  uint8_t* data = malloc(src.size ? src.size : 1);
  if (!data) {
    cmx__src_close(&src);
    return cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  }
  st = cmx__src_read(&src, data, src.size, 0, "the file");
  cmx__src_close(&src);
  cmx_imported* f = calloc(1, sizeof *f);
  if (st == CMX_OK && !f)
    st = cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  if (st == CMX_OK) {
    rd r = {data, src.size, 0, path, false};
    st = parse(f, &r);
  }
  free(data);
  if (st != CMX_OK) {
    cmx_imported_free(f);
    return st;
  }
  *out = f;
  return CMX_OK;
}

const char* cmx_imported_metadata(const cmx_imported* f) {
  return f && f->metadata ? f->metadata : "";
}

int cmx_imported_traces(const cmx_imported* f) {
  return f ? f->n : 0;
}

void cmx_imported_free(cmx_imported* f) {
  if (!f) return;
  for (int i = 0; i < f->n; i++) cmx__fn_trace_free(&f->traces[i]);
  free(f->traces);
  free(f->metadata);
  free(f);
}

/* ---------------- calling ---------------- */
static bool type_matches(const cmx__fn_value* v, cmx_array a, bool shapeless) {
  if (a->dtype != v->dtype || a->ndim != v->ndim) return false;
  return shapeless ||
         !memcmp(a->dims, v->shape, (size_t)v->ndim * sizeof(int64_t));
}

/* The positions in t's keyword order of the call's keywords, or false. */
static bool match(const cmx__fn_trace* t, const cmx_array* args, int nargs,
                  const char* const* kwnames, const cmx_array* kwargs, int nkw,
                  cmx_array* inputs) {
  if (t->npos != nargs || t->nkw != nkw) return false;
  for (int i = 0; i < nargs; i++) {
    if (!type_matches(&t->vals[i], args[i], t->shapeless)) return false;
    inputs[i] = args[i];
  }
  for (int i = 0; i < t->nkw; i++) {
    int j = 0;
    while (j < nkw && strcmp(kwnames[j], t->kwnames[i]) != 0) j++;
    if (j == nkw || !type_matches(&t->vals[nargs + i], kwargs[j], t->shapeless))
      return false;
    inputs[nargs + i] = kwargs[j];
  }
  return true;
}

/* Appends "  <name>: (2,3) float32\n" lines of values [lo, hi) to b. */
static void describe_inputs(char* b, size_t size, const cmx__fn_trace* t) {
  size_t n = strlen(b);
  for (int i = 0; i < t->npos + t->nkw && n < size; i++) {
    const cmx__fn_value* v = &t->vals[i];
    char sh[32 + CMX_MAX_NDIM * 21];
    cmx__shape_str(v->shape, v->ndim, sh, sizeof sh);
    if (i < t->npos)
      n += (size_t)snprintf(b + n, size - n, "   %d: %s %s\n", i + 1, sh,
                            cmx_dtype_name(v->dtype));
    else
      n += (size_t)snprintf(b + n, size - n, "   \"%s\": %s %s\n",
                            t->kwnames[i - t->npos], sh,
                            cmx_dtype_name(v->dtype));
  }
}

static cmx_status no_match(const cmx_imported* f, const cmx_array* args,
                           int nargs, const char* const* kwnames,
                           const cmx_array* kwargs, int nkw) {
  size_t size = 8192;
  char* msg = malloc(size);
  if (!msg) return cmx__error(CMX_ERR_VALUE, "[%s::call] no match", OP);
  snprintf(msg, size,
           "[%s::call] No imported function found which matches the given "
           "positional and keyword arguments. Possible functions include:\n",
           OP);
  for (int k = 0; k < f->n && strlen(msg) < size - 200; k++) {
    size_t n = strlen(msg);
    snprintf(
        msg + n, size - n,
        " %d. Function with %d positional inputs and %d keyword inputs%s:\n",
        k + 1, f->traces[k].npos, f->traces[k].nkw,
        f->traces[k].shapeless ? " (shapeless)" : "");
    describe_inputs(msg, size - 200, &f->traces[k]);
  }
  size_t n = strlen(msg);
  snprintf(msg + n, size - n,
           "\nCalled with %d positional inputs and %d keyword inputs:\n", nargs,
           nkw);
  for (int i = 0; i < nargs + nkw && strlen(msg) < size - 200; i++) {
    cmx_array a = i < nargs ? args[i] : kwargs[i - nargs];
    char sh[32 + CMX_MAX_NDIM * 21];
    n = strlen(msg);
    if (!a) continue;
    cmx__shape_str(a->dims, a->ndim, sh, sizeof sh);
    if (i < nargs)
      snprintf(msg + n, size - n, "  %d: %s %s\n", i + 1, sh,
               cmx_dtype_name(a->dtype));
    else
      snprintf(msg + n, size - n, "  \"%s\": %s %s\n", kwnames[i - nargs], sh,
               cmx_dtype_name(a->dtype));
  }
  cmx_status st = cmx__error(CMX_ERR_VALUE, "%s", msg);
  free(msg);
  return st;
}

/* In a shapeless trace, a Broadcast whose output is read only by
 * element-wise ops of two or more inputs (which broadcast by themselves)
 * and is not an output: its shape follows the call's shapes (MLX's
 * shapeless broadcasting), so it is rebuilt as its input with leading
 * 1-dims instead of the recorded shape. NULL when none (or no memory). */
static bool* loose_broadcasts(const cmx__fn_trace* t) {
  if (!t->shapeless) return NULL;
  /* per value: 0 unread, 1 read only by such ops, 2 read otherwise */
  unsigned char* use = calloc(t->nvals ? t->nvals : 1, 1);
  bool* loose = calloc(t->nops ? t->nops : 1, sizeof *loose);
  if (!use || !loose) {
    free(use);
    free(loose);
    return NULL;
  }
  for (uint32_t k = 0; k < t->nops; k++) {
    const cmx__fn_op* f = &t->ops[k];
    bool ew = (f->vt->flags & CMX_PRIM_ELEMENTWISE) && f->nin >= 2;
    for (int i = 0; i < f->nin; i++)
      use[f->in[i]] = ew && use[f->in[i]] != 2 ? 1 : 2;
  }
  for (uint32_t i = 0; i < t->nout; i++) use[t->outs[i]] = 2;
  for (uint32_t k = 0; k < t->nops; k++)
    loose[k] = !strcmp(t->ops[k].vt->name, "Broadcast") && t->ops[k].nin == 1 &&
               t->ops[k].nout == 1 && use[t->ops[k].out] == 1;
  free(use);
  return loose;
}

/* in reshaped to ndim dimensions by leading 1s (scope-owned). */
static cmx_array lead_ones(cmx_array in, int ndim) {
  int64_t shape[CMX_MAX_NDIM];
  int pad = ndim - in->ndim;
  if (pad < 0) return NULL;
  for (int i = 0; i < ndim; i++) shape[i] = i < pad ? 1 : in->dims[i - pad];
  return cmx__reshape(in, shape, ndim, CMX_STREAM_DEFAULT);
}

/* Rebuilds trace t on inputs; writes its outputs (scope-owned). */
static bool run(const cmx__fn_trace* t, const cmx_array* inputs,
                cmx_array* outs) {
  uint32_t nin = (uint32_t)(t->npos + t->nkw);
  cmx_array* v = calloc(t->nvals ? t->nvals : 1, sizeof *v);
  cmx_array* ins = NULL;
  bool* loose = loose_broadcasts(t);
  bool ok = v != NULL;
  if (!ok) cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  for (uint32_t i = 0; ok && i < nin + t->nconst; i++)
    v[i] = i < nin ? inputs[i] : t->vals[i].array;
  for (uint32_t k = 0; ok && k < t->nops; k++) {
    const cmx__fn_op* f = &t->ops[k];
    free(ins);
    ins = malloc((size_t)(f->nin ? f->nin : 1) * sizeof *ins);
    if (!ins) {
      cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
      ok = false;
      break;
    }
    for (int i = 0; i < f->nin; i++) ins[i] = v[f->in[i]];
    if (loose && loose[k]) {
      v[f->out] = lead_ones(ins[0], t->vals[f->out].ndim);
      ok = v[f->out] != NULL;
      if (!ok)
        cmx__error(CMX_ERR_VALUE,
                   "[%s] op %u (Broadcast) cannot "
                   "be rebuilt",
                   OP, k);
    } else {
      ok = cmx__fn_replay(f, &t->vals[f->out], ins, &v[f->out]);
    }
    for (int i = 0; ok && i < f->nout; i++) {
      const cmx__fn_value* want = &t->vals[f->out + (uint32_t)i];
      if (!v[f->out + (uint32_t)i] ||
          !type_matches(want, v[f->out + (uint32_t)i], t->shapeless)) {
        cmx_array got = v[f->out + (uint32_t)i];
        char a[32 + CMX_MAX_NDIM * 21], b[32 + CMX_MAX_NDIM * 21];
        cmx__shape_str(want->shape, want->ndim, a, sizeof a);
        if (got) cmx__shape_str(got->dims, got->ndim, b, sizeof b);
        cmx__error(CMX_ERR_VALUE,
                   "[%s] op %u (%s) gives %s %s where the file records %s %s",
                   OP, k, f->vt->name, got ? b : "nothing",
                   got ? cmx_dtype_name(got->dtype) : "", a,
                   cmx_dtype_name(want->dtype));
        ok = false;
      }
    }
  }
  for (uint32_t i = 0; ok && i < t->nout; i++) outs[i] = v[t->outs[i]];
  free(loose);
  free(ins);
  free(v);
  return ok;
}

cmx_status cmx_imported_call(const cmx_imported* f, const cmx_array* args,
                             int nargs, const char* const* kwnames,
                             const cmx_array* kwargs, int nkw, cmx_array** outs,
                             int* nout) {
  if (!outs || !nout)
    return cmx__error(CMX_ERR_VALUE, "[%s::call] output is NULL", OP);
  *outs = NULL;
  *nout = 0;
  if (!f) return cmx__error(CMX_ERR_VALUE, "[%s::call] function is NULL", OP);
  if (nargs < 0 || nkw < 0 || (nargs && !args) ||
      (nkw && (!kwargs || !kwnames)))
    return cmx__error(CMX_ERR_VALUE, "[%s::call] invalid argument lists", OP);
  for (int i = 0; i < nargs + nkw; i++)
    if (!(i < nargs ? args[i] : kwargs[i - nargs]) ||
        (i >= nargs && !kwnames[i - nargs]))
      return cmx__error(CMX_ERR_VALUE, "[%s::call] argument %d is NULL", OP, i);
  cmx_array* inputs = malloc((size_t)(nargs + nkw + 1) * sizeof *inputs);
  if (!inputs) return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", OP);
  const cmx__fn_trace* t = NULL;
  for (int k = 0; k < f->n && !t; k++)
    if (match(&f->traces[k], args, nargs, kwnames, kwargs, nkw, inputs))
      t = &f->traces[k];
  if (!t) {
    free(inputs);
    return no_match(f, args, nargs, kwnames, kwargs, nkw);
  }
  cmx_array* res = malloc((t->nout ? t->nout : 1) * sizeof *res);
  if (!res) {
    free(inputs);
    return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", OP);
  }
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  bool ok = run(t, inputs, res);
  free(inputs);
  if (!ok) {
    cmx__scope_exit_n(mark, NULL, NULL, 0);
    free(res);
    return cmx_last_status();
  }
  cmx_status st = cmx__scope_exit_n(mark, res, res, t->nout);
  if (st != CMX_OK) {
    free(res);
    return st;
  }
  *outs = res;
  *nout = (int)t->nout;
  return CMX_OK;
}
