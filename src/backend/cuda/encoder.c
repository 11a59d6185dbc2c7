/* The encoder: every kernel launch, memset and device-to-device copy of a
 * GPU task goes through cmx__gpu_encode, and is issued on the stream in
 * cmx__gpu_cmd_issue alone.
 *
 * GPU tasks run on the thread that evaluates (stream.c), so a recorder
 * installed on that thread sees every command of its evals, in order, with
 * the stream each is for: what a CUDA graph of the eval needs (one kernel,
 * memset or copy node per command, chained per stream). The recorder keeps
 * or lets through each command; the ones it keeps it replays itself.
 *
 * Without a recorder, commands go to the task's stream, which batches them
 * into CUDA graphs (stream.c, graph.c) or issues them at once.
 *
 * Launch checks turn the driver's CUDA_ERROR_INVALID_VALUE into messages
 * that say which limit a configuration broke; a kernel that asks for more
 * than its default dynamic shared memory (48 KB less its static shared
 * memory) is opted in with cuFuncSetAttribute up to the device's limit.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"

static _Thread_local const cmx__gpu_recorder* tl_recorder;
static _Atomic uint64_t n_launches, n_memsets, n_copies, n_recorded, n_calls;

cmx__gpu_encoder_stats cmx__gpu_encoder_stats_get(void) {
  return (cmx__gpu_encoder_stats){
      atomic_load(&n_launches), atomic_load(&n_memsets), atomic_load(&n_copies),
      atomic_load(&n_recorded), atomic_load(&n_calls)};
}

bool cmx__gpu_recording(void) { return tl_recorder != NULL; }

const cmx__gpu_recorder* cmx__gpu_recorder_set(const cmx__gpu_recorder* r) {
  const cmx__gpu_recorder* prev = tl_recorder;
  tl_recorder = r;
  return prev;
}

/* ---------------- arguments and configurations ---------------- */

void cmx__gpu_args_init(cmx__gpu_args* a) {
  a->n = 0;
  a->overflow = false;
  a->used = 0;
}

void cmx__gpu_args_add(cmx__gpu_args* a, const void* value, size_t size,
                       size_t align) {
  size_t at = (a->used + align - 1) & ~(align - 1);
  if (a->n == CMX__GPU_MAX_ARGS || at + size > CMX__GPU_ARGS_BYTES ||
      align > 16) {
    a->overflow = true;
    return;
  }
  memcpy(a->data + at, value, size);
  a->offset[a->n] = (uint16_t)at;
  a->size[a->n] = (uint16_t)size;
  a->n++;
  a->used = at + size;
}

/* Whether cmx__gpu_cfg_one_shot leaves the grid uncapped (CMX_CUDA_ONE_SHOT=0:
 * no, for A/B runs; read once). */
static bool one_shot_on(void) {
  static _Atomic int on = -1;
  int v = atomic_load(&on);
  if (v < 0) {
    const char* e = getenv("CMX_CUDA_ONE_SHOT");
    v = !(e && strcmp(e, "0") == 0);
    atomic_store(&on, v);
  }
  return v;
}

/* The 1-D launch of `work` items in k's family shape; GRID_STRIDE grids
 * capped at blocks_per_sm a multiprocessor when `capped`. */
static cmx__gpu_cfg cfg_1d(const cmx__gpu_kernel* k, int64_t work,
                           bool capped) {
  const cmx__gpu_shape* sh = &k->family->shape;
  unsigned threads = sh->threads ? sh->threads : 256;
  int64_t blocks = (work + threads - 1) / threads;
  if (capped && sh->kind == CMX__GPU_GRID_STRIDE) {
    cmx__gpu_device* d = cmx__gpu_device_get(k->dev);
    int64_t cap = (int64_t)(d ? d->sm_count : 1) *
                  (sh->blocks_per_sm ? sh->blocks_per_sm : 16);
    if (blocks > cap) blocks = cap;
  }
  if (blocks < 1) blocks = 1;
  if (blocks > 0x7fffffff) blocks = 0x7fffffff; /* issue reports it */
  return (cmx__gpu_cfg){
      .grid = {(unsigned)blocks, 1, 1}, .block = {threads, 1, 1}, .shared = 0};
}

cmx__gpu_cfg cmx__gpu_cfg_for(const cmx__gpu_kernel* k, int64_t work) {
  return cfg_1d(k, work, true);
}

cmx__gpu_cfg cmx__gpu_cfg_one_shot(const cmx__gpu_kernel* k, int64_t work) {
  return cfg_1d(k, work, !one_shot_on());
}

/* ---------------- issuing ---------------- */

cmx_status cmx__gpu_launch_check(int dev, const cmx__gpu_cmd* c) {
  const cmx__gpu_kernel* k = c->kernel;
  const cmx__gpu_cfg* g = &c->cfg;
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (!d) return cmx_last_status();
  uint64_t threads = (uint64_t)g->block[0] * g->block[1] * g->block[2];
  if (threads == 0 || g->grid[0] == 0 || g->grid[1] == 0 || g->grid[2] == 0 ||
      g->grid[0] > 0x7fffffffu || g->grid[1] > 65535 || g->grid[2] > 65535)
    return cmx__error(CMX_ERR_RUNTIME,
                      "[%s] invalid launch of gpu kernel %s: grid (%u, %u, "
                      "%u), block (%u, %u, %u)",
                      c->op, k->name, g->grid[0], g->grid[1], g->grid[2],
                      g->block[0], g->block[1], g->block[2]);
  if (threads > (uint64_t)k->max_threads)
    return cmx__error(CMX_ERR_RUNTIME,
                      "[%s] gpu kernel %s launched with %llu threads per "
                      "block; it allows at most %d",
                      c->op, k->name, (unsigned long long)threads,
                      k->max_threads);
  if (g->shared <= (size_t)atomic_load(&k->dynamic_shared)) return CMX_OK;
  size_t room = d->shared_optin > k->static_shared
                    ? (size_t)(d->shared_optin - k->static_shared)
                    : 0;
  if (g->shared > room)
    return cmx__error(CMX_ERR_RUNTIME,
                      "[%s] gpu kernel %s asks for %zu bytes of shared memory "
                      "per block; %s allows %zu",
                      c->op, k->name, g->shared, d->name, room);
  CUresult r = cmx__cu.cuFuncSetAttribute(
      k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)g->shared);
  if (r != CUDA_SUCCESS)
    return cmx__cu_error(r, c->op, "raising a kernel's shared memory limit");
  /* Several threads may raise it at once: keep the largest. (Kernels are
   * handed out const; this field alone changes, atomically.) */
  _Atomic int* lim = &((cmx__gpu_kernel*)k)->dynamic_shared;
  int cur = atomic_load(lim);
  while (cur < (int)g->shared &&
         !atomic_compare_exchange_weak(lim, &cur, (int)g->shared)) {
  }
  return CMX_OK;
}

cmx_status cmx__gpu_cmd_issue(int dev, CUstream s, const cmx__gpu_cmd* c) {
  CUresult r = CUDA_SUCCESS;
  switch (c->kind) {
    case CMX__GPU_CMD_LAUNCH: {
      if (c->args->overflow)
        return cmx__error(CMX_ERR_RUNTIME,
                          "[%s] gpu kernel %s: arguments exceed %d values or "
                          "%d bytes",
                          c->op, c->kernel->name, CMX__GPU_MAX_ARGS,
                          CMX__GPU_ARGS_BYTES);
      cmx_status st = cmx__gpu_launch_check(dev, c);
      if (st != CMX_OK) return st;
      void* params[CMX__GPU_MAX_ARGS];
      for (int i = 0; i < c->args->n; i++)
        params[i] = (void*)(c->args->data + c->args->offset[i]);
      const cmx__gpu_cfg* g = &c->cfg;
      r = cmx__cu.cuLaunchKernel(
          c->kernel->fn, g->grid[0], g->grid[1], g->grid[2], g->block[0],
          g->block[1], g->block[2], (unsigned)g->shared, s, params, NULL);
      if (r == CUDA_SUCCESS) atomic_fetch_add(&n_launches, 1);
      break;
    }
    case CMX__GPU_CMD_MEMSET:
      if (c->elem == 1)
        r = cmx__cu.cuMemsetD8Async(c->dst, (unsigned char)c->value, c->count,
                                    s);
      else if (c->elem == 2)
        r = cmx__cu.cuMemsetD16Async(c->dst, (unsigned short)c->value, c->count,
                                     s);
      else if (c->elem == 4)
        r = cmx__cu.cuMemsetD32Async(c->dst, c->value, c->count, s);
      else
        return cmx__error(CMX_ERR_RUNTIME,
                          "[%s] gpu memset of %u-byte elements", c->op,
                          c->elem);
      if (r == CUDA_SUCCESS) atomic_fetch_add(&n_memsets, 1);
      break;
    case CMX__GPU_CMD_COPY:
      r = cmx__cu.cuMemcpyDtoDAsync(c->dst, c->src, c->count, s);
      if (r == CUDA_SUCCESS) atomic_fetch_add(&n_copies, 1);
      break;
    case CMX__GPU_CMD_CALL: {
      cmx_status st = c->call(c->ctx, s);
      if (st == CMX_OK) atomic_fetch_add(&n_calls, 1);
      return st;
    }
  }
  if (r == CUDA_SUCCESS) return CMX_OK;
  char what[160];
  snprintf(what, sizeof what, "%s%s",
           c->kind == CMX__GPU_CMD_LAUNCH   ? "launching gpu kernel "
           : c->kind == CMX__GPU_CMD_MEMSET ? "a gpu memset"
                                            : "a gpu copy",
           c->kind == CMX__GPU_CMD_LAUNCH ? c->kernel->name : "");
  return cmx__cu_error(r, c->op, what);
}

cmx_status cmx__gpu_encode(const cmx__gpu_cmd* cmd) {
  int dev = -1;
  CUstream s = cmx__gpu_current_stream(&dev);
  if (!s)
    return cmx__error(CMX_ERR_RUNTIME,
                      "[%s] gpu work can only be issued by a task of a gpu "
                      "stream",
                      cmd->op);
  if (tl_recorder) {
    bool issue = true;
    cmx_status st = tl_recorder->record(tl_recorder->ctx, dev, s, cmd, &issue);
    if (st != CMX_OK) return st;
    atomic_fetch_add(&n_recorded, 1);
    if (!issue) return CMX_OK;
  }
  /* the stream's batch takes it, or has it issued now (stream.c) */
  bool batched = false;
  cmx_status st = cmx__gpu_stream_encode(dev, s, cmd, &batched);
  if (st == CMX_OK && batched) /* counted as issued: it will be */
    atomic_fetch_add(cmd->kind == CMX__GPU_CMD_LAUNCH ? &n_launches : &n_calls,
                     1);
  return st;
}

cmx_status cmx__gpu_launch(const char* op, const cmx__gpu_kernel* k,
                           const cmx__gpu_cfg* cfg, const cmx__gpu_args* args) {
  cmx__gpu_cmd c = {
      .kind = CMX__GPU_CMD_LAUNCH, .op = op, .kernel = k, .args = args};
  c.cfg = *cfg;
  return cmx__gpu_encode(&c);
}

cmx_status cmx__gpu_memset(const char* op, CUdeviceptr dst, uint32_t value,
                           unsigned elem, size_t count) {
  cmx__gpu_cmd c = {.kind = CMX__GPU_CMD_MEMSET,
                    .op = op,
                    .dst = dst,
                    .value = value,
                    .elem = elem,
                    .count = count};
  return count ? cmx__gpu_encode(&c) : CMX_OK;
}

cmx_status cmx__gpu_copy_d2d(const char* op, CUdeviceptr dst, CUdeviceptr src,
                             size_t bytes) {
  cmx__gpu_cmd c = {.kind = CMX__GPU_CMD_COPY,
                    .op = op,
                    .dst = dst,
                    .src = src,
                    .count = bytes};
  return bytes ? cmx__gpu_encode(&c) : CMX_OK;
}

cmx_status cmx__gpu_call(const char* op, cmx_status (*call)(void*, CUstream),
                         void* ctx) {
  cmx__gpu_cmd c = {
      .kind = CMX__GPU_CMD_CALL, .op = op, .call = call, .ctx = ctx};
  return cmx__gpu_encode(&c);
}

cmx_status cmx__gpu_call_graphable(const char* op,
                                   cmx_status (*call)(void*, CUstream),
                                   void* ctx) {
  cmx__gpu_cmd c = {.kind = CMX__GPU_CMD_CALL,
                    .op = op,
                    .call = call,
                    .ctx = ctx,
                    .graphable = true};
  return cmx__gpu_encode(&c);
}
