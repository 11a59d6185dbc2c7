/* CUDA kernels of extensions (include/cmx/cuda.h): each distinct program
 * (name, source, entry) becomes a one-kernel family of its own, made at
 * first use and kept for the life of the process, so compiling, the disk
 * cache, the module cache and launching are the built-in kernels' own
 * (nvrtc.c, module.c, encoder.c). These families are not registered in
 * the family registry: they are the user's, not cmx's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "cmx/cuda.h"

typedef struct program {
  cmx__gpu_family fam; /* first: kernels point to it */
  const char* kernels[2];
  char* name;
  char* source; /* CUDA source, or the image (+ a NUL) of a precompiled one */
  size_t size;  /* the image's bytes; 0 for source */
  uint64_t hash;
  struct program* next;
} program;

static struct {
  pthread_mutex_t lock;
  program* list;
} g_progs = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t fnv_n(uint64_t h, const unsigned char* s, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return (h ^ 0xff) * 0x100000001b3ull; /* a separator between strings */
}

static uint64_t fnv(uint64_t h, const char* s) {
  return fnv_n(h, (const unsigned char*)s, strlen(s));
}

/* The one variant of an extension program: no prelude. */
static bool ext_variant(int v, cmx__gpu_variant* out) {
  if (v != 0) return false;
  out->prelude[0] = 0;
  snprintf(out->name, sizeof out->name, "extension");
  out->flags = 0;
  return true;
}

/* The program (name, source or image of `size` bytes, entry), made at
 * first use. size 0: source is CUDA source text. */
static program* program_get(const char* name, const char* source, size_t size,
                            const char* entry) {
  size_t n = size ? size : strlen(source);
  uint64_t h = fnv(fnv_n(fnv(0xcbf29ce484222325ull, name),
                         (const unsigned char*)source, n),
                   entry) ^
               (uint64_t)size;
  pthread_mutex_lock(&g_progs.lock);
  program* p = g_progs.list;
  for (; p; p = p->next)
    if (p->hash == h && p->size == size && strcmp(p->name, name) == 0 &&
        strcmp(p->kernels[0], entry) == 0 &&
        (size ? memcmp(p->source, source, size) == 0
              : strcmp(p->source, source) == 0))
      break;
  if (!p) {
    p = calloc(1, sizeof *p);
    char* nm = strdup(name);
    char* src = malloc(n + 1);
    char* en = strdup(entry);
    if (!p || !nm || !src || !en) {
      free(p), free(nm), free(src), free(en);
      pthread_mutex_unlock(&g_progs.lock);
      return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", name);
    }
    memcpy(src, source, n);
    src[n] = 0; /* PTX must end with a NUL; a CUBIN ignores it */
    p->name = nm;
    p->source = src;
    p->size = size;
    p->kernels[0] = en;
    p->hash = h;
    p->fam = (cmx__gpu_family){.name = nm,
                               .source = src,
                               .kernels = p->kernels,
                               .nvariants = 1,
                               .variant = ext_variant,
                               .flags = CMX__GPU_TOOLKIT_HEADERS,
                               .shape = {.kind = CMX__GPU_CUSTOM}};
    p->next = g_progs.list;
    g_progs.list = p;
  }
  pthread_mutex_unlock(&g_progs.lock);
  return p;
}

static cmx_status check_args(const char* name, const char* source,
                             const char* entry) {
  if (!name || !*name || !source || !*source || !entry || !*entry)
    return cmx__error(CMX_ERR_VALUE,
                      "[cuda] a kernel needs a name, a source and an entry "
                      "point");
  return CMX_OK;
}

cmx_status cmx_cuda_kernel_get(const cmx_cuda_kernel** out, const char* name,
                               const char* source, const char* entry) {
  *out = NULL;
  cmx_status st = check_args(name, source, entry);
  if (st != CMX_OK) return st;
  int dev = -1;
  if (!cmx__gpu_current_stream(&dev))
    return cmx__error(CMX_ERR_RUNTIME,
                      "[%s] a CUDA kernel is compiled and launched from a "
                      "gpu stream's task (an eval_gpu)",
                      name);
  program* p = program_get(name, source, 0, entry);
  if (!p) return cmx_last_status();
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(dev, &p->fam, 0, 0);
  if (!k) return cmx_last_status();
  *out = (const cmx_cuda_kernel*)k;
  return CMX_OK;
}

cmx_status cmx_cuda_kernel_get_image(const cmx_cuda_kernel** out,
                                     const char* name, const void* image,
                                     size_t size, const char* entry) {
  *out = NULL;
  if (!name || !*name || !image || !size || !entry || !*entry)
    return cmx__error(CMX_ERR_VALUE,
                      "[cuda] a precompiled kernel needs a name, an image "
                      "and an entry point");
  int dev = -1;
  if (!cmx__gpu_current_stream(&dev))
    return cmx__error(CMX_ERR_RUNTIME,
                      "[%s] a CUDA kernel is loaded and launched from a gpu "
                      "stream's task (an eval_gpu)",
                      name);
  program* p = program_get(name, image, size, entry);
  if (!p) return cmx_last_status();
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get_image(dev, &p->fam, p->source);
  if (!k) return cmx_last_status();
  *out = (const cmx_cuda_kernel*)k;
  return CMX_OK;
}

cmx_status cmx_cuda_launch(const char* op, const cmx_cuda_kernel* k,
                           const cmx_cuda_cfg* cfg, const void* const* args,
                           const size_t* sizes, int nargs) {
  if (!k || !cfg || nargs < 0 || (nargs > 0 && (!args || !sizes)))
    return cmx__error(CMX_ERR_VALUE, "[%s] invalid CUDA launch arguments",
                      op ? op : "cuda");
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  for (int i = 0; i < nargs; i++) {
    size_t align = 1;
    while (align < 16 && sizes[i] % (align * 2) == 0) align *= 2;
    cmx__gpu_args_add(&a, args[i], sizes[i], align);
  }
  cmx__gpu_cfg c;
  memcpy(c.grid, cfg->grid, sizeof c.grid);
  memcpy(c.block, cfg->block, sizeof c.block);
  c.shared = cfg->shared_bytes;
  return cmx__gpu_launch(op ? op : "cuda", (const cmx__gpu_kernel*)k, &c, &a);
}

/* Compiles source as a launch would (the family's source and options,
 * every kernel of the program in it) into *img: PTX when ptx, else a
 * CUBIN where NVRTC can make one. */
static cmx_status compile_image(const char* name, const char* source, int arch,
                                bool ptx, cmx__gpu_image* img) {
  memset(img, 0, sizeof *img);
  cmx_status st = check_args(name, source, "compile");
  if (st != CMX_OK) return st;
  const char* why = NULL;
  if (!cmx__nvrtc_available(&why))
    return cmx__error(CMX_ERR_RUNTIME, "[%s] NVRTC is not available: %s", name,
                      why ? why : "not found");
  if (arch <= 0) {
    cmx__gpu_device* d = cmx__gpu_available() ? cmx__gpu_device_get(0) : NULL;
    arch = d ? d->cc_major * 10 + d->cc_minor : 80;
  }
  const char* none[1] = {NULL};
  cmx__gpu_family fam = {.name = name,
                         .source = source,
                         .kernels = none,
                         .nvariants = 1,
                         .variant = ext_variant,
                         .flags = CMX__GPU_TOOLKIT_HEADERS};
  const char* opts[8];
  char optbuf[8400];
  int nopts =
      cmx__gpu_family_options(&fam, NULL, opts, 8, optbuf, sizeof optbuf);
  if (nopts < 0) return cmx_last_status();
  char* src = cmx__gpu_family_source(&fam, "", -1);
  if (!src) return cmx_last_status();
  st = cmx__nvrtc_compile(name, src, arch, opts, nopts, ptx, img);
  free(src);
  return st;
}

cmx_status cmx_cuda_compile(const char* name, const char* source, int arch,
                            bool ptx, void** image, size_t* size) {
  *image = NULL;
  *size = 0;
  cmx__gpu_image img;
  cmx_status st = compile_image(name, source, arch, ptx, &img);
  if (st != CMX_OK) {
    cmx__gpu_image_free(&img);
    return st;
  }
  *image = img.data;
  *size = img.ptx ? strlen(img.data) : img.size;
  return CMX_OK;
}

cmx_status cmx_cuda_compile_check(const char* name, const char* source,
                                  int arch) {
  cmx__gpu_image img;
  cmx_status st = compile_image(name, source, arch, true, &img);
  cmx__gpu_image_free(&img);
  return st;
}

bool cmx_cuda_nvrtc_available(void) {
  return cmx__nvrtc_available(NULL);
}
