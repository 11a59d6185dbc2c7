/* The CUDA backend: device discovery, NVRTC compilation of every kernel
 * family and the kernel caches, GPU streams and events, host<->device data
 * movement, and the GPU kernels' layout paths (Add, Copy/AsType) through
 * the ordinary op path. Add, Subtract and Multiply on every dtype, shape
 * and layout are checked against the CPU by the op harness (test_harness,
 * test_binary), which runs every case on every device; the kernel layer
 * (registry, encoder, launches, CCCL, cuBLASLt) by test_gpu_layer.
 *
 * With no GPU (CI), the unavailable-GPU behaviour is checked and the GPU
 * cases are skipped with a note; NVRTC cases run wherever NVRTC loads.
 * CMX_TEST_REQUIRE_GPU=1 turns a missing GPU or NVRTC into a failure (the
 * GPU machine's check). Results are compared with plain loops on the host
 * and with the CPU backend.
 *
 * CMX_TEST_ONLY=name,name runs only the named cases (for debugging).
 *
 * The test runs with a private temporary CMX_CACHE_DIR (set before any cmx
 * call: the environment is read once) and re-runs itself as a child
 * process to check that a second process finds the disk cache.
 */
#include "gpu_util.h"

/* The source of the f32 Add module with its contiguous kernel alone, as
 * cmx__gpu_kernel_get builds it (caller frees). */
static char* add_f32_source(void) {
  cmx__gpu_variant var;
  int v = cmx__vt_Add.id * CMX_NUM_DTYPES + CMX_FLOAT32;
  CHECK(cmx__gpu_family_elementwise.variant(v, &var));
  CHECK(strcmp(var.name, "elementwise_Add_float32") == 0);
  CHECK(strcmp(cmx__gpu_family_elementwise.kernels[0], "cmx_ew_c0") == 0);
  return cmx__gpu_family_source(&cmx__gpu_family_elementwise, var.prelude, 0);
}

/* ---------------- without a GPU ---------------- */

static void test_unavailable(void) {
  CHECK(!cmx_is_available(cmx_device_gpu()));
  CHECK(cmx_device_count(CMX_GPU) == 0);
  CHECK(cmx_device_count(CMX_CPU) == 1);
  const char* why = cmx__gpu_unavailable_reason();
  CHECK(why && strlen(why) > 0);
  CHECK(cmx__device_hooks == NULL);
  float x[3] = {1, 2, 3};
  int64_t n = 3;
  cmx_array a = arr(x, &n, 1, CMX_FLOAT32), c = NULL;
  FAILS(cmx_add(&c, a, a, gpu()), CMX_ERR_VALUE,
        "] device gpu:0 is not available: ");
  CHECK(c == NULL && cmx_last_error()[0] == '[');
  CHECK(strstr(cmx_last_error(), why) != NULL);
  cmx_stream s;
  FAILS(cmx_new_stream(&s, cmx_device_gpu()), CMX_ERR_VALUE,
        "[new_stream] device gpu:0 is not available");
  FAILS(cmx_set_default_device(cmx_device_gpu()), CMX_ERR_VALUE,
        "not available");
  CHECK(cmx__gpu_stream_new(0) == NULL);
  CHECK(strncmp(cmx_last_error(), "[gpu] no GPU is available (", 27) == 0);
  CHECK(cmx__gpu_device_get(0) == NULL);
  /* The CPU keeps working. */
  OK(cmx_add(&c, a, a, cpu()));
  float r[3] = {2, 4, 6};
  CHECK(equal_f32(c, r, 3));
  cmx_array_release(a);
  cmx_array_release(c);
}

/* ---------------- NVRTC (no GPU needed) ---------------- */

/* A module of test_compile_all: one variant of a family with some of its
 * kernels (all of them when all). */
typedef struct {
  const cmx__gpu_family* f;
  int variant;
  bool all, cubin;
  int kernels[3];
  int failed;
  char msg[256];
} compile_item;

typedef struct {
  compile_item* items;
  int begin, end, step;
} compile_job;

/* Compiles its items; a thread's slice of test_compile_all. */
static void* compile_slice(void* arg) {
  compile_job* job = arg;
  for (int i = job->begin; i < job->end; i += job->step) {
    compile_item* it = &job->items[i];
    it->failed = 1;
    cmx__gpu_variant var = {.flags = 0};
    if (!it->f->variant(it->variant, &var)) continue;
    /* Several kernels in one module: CMX_ONLY with one define each. */
    char pre[CMX__GPU_PRELUDE_MAX + 512];
    int w = snprintf(pre, sizeof pre, "%s", var.prelude);
    if (!it->all) {
      w += snprintf(pre + w, sizeof pre - (size_t)w, "#define CMX_ONLY\n");
      for (int k = 0; k < 3; k++)
        w += snprintf(pre + w, sizeof pre - (size_t)w, "#define CMX_ONLY_%s\n",
                      it->f->kernels[it->kernels[k]]);
    }
    const char* opts[8];
    char optbuf[4400];
    int nopts =
        cmx__gpu_family_options(it->f, &var, opts, 8, optbuf, sizeof optbuf);
    char* src = nopts < 0 ? NULL : cmx__gpu_family_source(it->f, pre, -1);
    if (!src) {
      snprintf(it->msg, sizeof it->msg, "%s", cmx_last_error());
      continue;
    }
    cmx__gpu_image img;
    bool ptx = !it->cubin;
    if (cmx__nvrtc_compile(var.name, src, g_arch, opts, nopts, ptx, &img) !=
        CMX_OK) {
      snprintf(it->msg, sizeof it->msg, "%s", cmx_last_error());
    } else if (img.size > 0 && (!ptx || img.ptx) &&
               /* A CUBIN is an ELF object; PTX is NUL-terminated text. */
               (img.ptx ? ((char*)img.data)[img.size - 1] == 0
                        : memcmp(img.data, "\177ELF", 4) == 0)) {
      it->failed = 0;
      /* The module holds exactly the kernels asked for, and every kernel
       * the family lists exists in its source. */
      int nk = cmx__gpu_family_nkernels(it->f);
      for (int k = 0; img.ptx && k < nk; k++) {
        char entry[128];
        snprintf(entry, sizeof entry, ".entry %s(", it->f->kernels[k]);
        bool want = it->all || k == it->kernels[0] || k == it->kernels[1] ||
                    k == it->kernels[2];
        if ((strstr(img.data, entry) != NULL) != want) {
          snprintf(it->msg, sizeof it->msg, "kernel %s %s", it->f->kernels[k],
                   want ? "missing" : "not left out");
          it->failed = 1;
        }
      }
    } else {
      snprintf(it->msg, sizeof it->msg, "bad image");
    }
    cmx__gpu_image_free(&img);
    free(src);
  }
  return NULL;
}

/* Every variant of every registered kernel family compiles (a thread a core, 4 to 16
 * at once, which NVRTC allows), walking the registry. A family's first
 * variant compiles whole (every kernel, checked against the family's
 * list, and once as a CUBIN); the others compile three kernels each: the
 * first and two that rotate with the variant, so each kernel is compiled
 * for many variants and each variant's prelude is checked. */
static void test_compile_all(void) {
  int nitems = 0, cap = 64;
  compile_item* items = malloc((size_t)cap * sizeof *items);
  int nfam = cmx__gpu_family_count();
  CHECK(nfam >= 3 &&
        cmx__gpu_family_find("elementwise") == &cmx__gpu_family_elementwise &&
        cmx__gpu_family_find("convert") == &cmx__gpu_family_convert &&
        cmx__gpu_family_find("copy") == &cmx__gpu_family_copy);
  /* Families of many variants (the op table's: ~800) are sampled unless
   * CMX_TEST_COMPILE_ALL=1 (gpu-check sets it): every step-th variant,
   * the step rotating the dtypes, keeping the run short on a small
   * machine. */
  const char* all_env = getenv("CMX_TEST_COMPILE_ALL");
  bool every = all_env && strcmp(all_env, "1") == 0;
  for (int fi = 0; fi < nfam; fi++) {
    const cmx__gpu_family* f = cmx__gpu_family_at(fi);
    int nk = cmx__gpu_family_nkernels(f), seen = 0, present = 0;
    CHECK_MSG(nk > 0 && f->nvariants > 0, "family %s", f->name);
    for (int v = 0; v < f->nvariants; v++) {
      cmx__gpu_variant var;
      present += f->variant(v, &var);
    }
    int step = every || present <= 48 ? 1 : present / 48 + 1, index = -1;
    for (int v = 0; v < f->nvariants; v++) {
      cmx__gpu_variant var;
      if (!f->variant(v, &var)) continue;
      if (++index % step != 0) continue;
      CHECK_MSG(strncmp(var.name, f->name, strlen(f->name)) == 0,
                "variant %s of family %s", var.name, f->name);
      if (nitems == cap)
        items = realloc(items, (size_t)(cap *= 2) * sizeof *items);
      compile_item* it = &items[nitems++];
      memset(it, 0, sizeof *it);
      it->f = f;
      it->variant = v;
      it->all = it->cubin = seen == 0;
      it->kernels[0] = 0;
      it->kernels[1] = nk > 1 ? 1 + (2 * seen) % (nk - 1) : 0;
      it->kernels[2] = nk > 1 ? 1 + (2 * seen + 1) % (nk - 1) : 0;
      seen++;
    }
    CHECK_MSG(seen > 0, "family %s has no variant", f->name);
  }
  /* a thread a core, 4 to 16 */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int nth = cores < 4 ? 4 : cores > 16 ? 16 : (int)cores;
  compile_job jobs[16];
  pthread_t th[16];
  for (int t = 0; t < nth; t++) {
    jobs[t] =
        (compile_job){.items = items, .begin = t, .end = nitems, .step = nth};
    CHECK(pthread_create(&th[t], NULL, compile_slice, &jobs[t]) == 0);
  }
  for (int t = 0; t < nth; t++) pthread_join(th[t], NULL);
  for (int i = 0; i < nitems; i++) {
    cmx__gpu_variant var;
    items[i].f->variant(items[i].variant, &var);
    CHECK_MSG(!items[i].failed, "%s: %s", var.name, items[i].msg);
  }
  printf("compiled %d variants of %d kernel families\n", nitems, nfam);
  free(items);
  /* The source of one kernel holds that kernel alone. */
  cmx__gpu_variant var;
  const cmx__gpu_family* ew = &cmx__gpu_family_elementwise;
  CHECK(ew->variant(cmx__vt_Add.id * CMX_NUM_DTYPES + CMX_FLOAT32, &var));
  int g2 = 7 + 1; /* after c0 .. c6: g1_32, g2_32 */
  CHECK(strcmp(ew->kernels[g2], "cmx_ew_g2_32") == 0);
  char* src = cmx__gpu_family_source(ew, var.prelude, g2);
  cmx__gpu_image img;
  OK(cmx__nvrtc_compile("ew_only", src, g_arch, NULL, 0, true, &img));
  if (img.data) {
    CHECK(strstr(img.data, ".entry cmx_ew_g2_32") != NULL);
    CHECK(strstr(img.data, "cmx_ew_c0") == NULL);
    CHECK(strstr(img.data, "cmx_ew_g2_64") == NULL);
  }
  cmx__gpu_image_free(&img);
  free(src);
  CHECK(cmx__gpu_family_source(ew, var.prelude, 99) == NULL);
  CHECK(
      strstr(cmx_last_error(), "kernel family 'elementwise' has no kernel 99"));
}

static void test_compile_error(void) {
  const char* bad =
      "extern \"C\" __global__ void k(float* x) {\n"
      "  x[0] = not_declared_anywhere;\n}\n";
  cmx__gpu_image img;
  cmx__gpu_cache_stats s0 = cmx__gpu_cache_stats_get();
  FAILS(cmx__nvrtc_compile("broken_kernel", bad, g_arch, NULL, 0, false, &img),
        CMX_ERR_RUNTIME, "[gpu] NVRTC failed to compile 'broken_kernel'");
  CHECK(strstr(cmx_last_error(), "not_declared_anywhere") != NULL);
  CHECK(strstr(cmx_last_error(), "NVRTC_ERROR_COMPILATION") != NULL);
  /* Through the cache: same error, nothing written. */
  int origin = -1;
  FAILS(
      cmx__gpu_image_get("broken_kernel", bad, g_arch, NULL, 0, &img, &origin),
      CMX_ERR_RUNTIME, "not_declared_anywhere");
  char names[4][1024];
  CHECK(list_entries("broken_kernel", names, 4) == 0);
  cmx__gpu_cache_stats s1 = cmx__gpu_cache_stats_get();
  CHECK(s1.disk_writes == s0.disk_writes);
  CHECK(s1.compiles >= s0.compiles + 2);
}

static void test_disk_cache(void) {
  char dir[512];
  cache_dir(dir, sizeof dir);
  struct stat st;
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
  CHECK(stat(g_root, &st) == 0 && (st.st_mode & 0777) == 0700);
  char* src = add_f32_source();
  if (!src) return;
  /* A fresh entry: compiled and written. */
  int origin = -1;
  cmx__gpu_image a, b;
  char old[4][1024];
  for (int i = 0, k = list_entries("binary-", old, 4); i < k && i < 4; i++)
    unlink(old[i]);
  cmx__gpu_cache_stats s0 = cmx__gpu_cache_stats_get();
  OK(cmx__gpu_image_get("binary", src, g_arch, NULL, 0, &a, &origin));
  CHECK(origin == CMX__IMAGE_COMPILED);
  cmx__gpu_cache_stats s1 = cmx__gpu_cache_stats_get();
  CHECK(s1.compiles == s0.compiles + 1);
  CHECK(s1.disk_writes == s0.disk_writes + 1);
  char names[4][1024];
  CHECK(list_entries("binary-", names, 4) == 1);
  CHECK(list_entries(".tmp", old, 4) == 0);
  CHECK(stat(names[0], &st) == 0 && S_ISREG(st.st_mode) &&
        (st.st_mode & 0777) == 0600);
  /* Read back: same bytes, no compile. */
  OK(cmx__gpu_image_get("binary", src, g_arch, NULL, 0, &b, &origin));
  CHECK(origin == CMX__IMAGE_DISK);
  CHECK(a.size == b.size && a.ptx == b.ptx &&
        memcmp(a.data, b.data, a.size) == 0);
  cmx__gpu_cache_stats s2 = cmx__gpu_cache_stats_get();
  CHECK(s2.compiles == s1.compiles && s2.disk_hits == s1.disk_hits + 1);
  cmx__gpu_image_free(&b);
  /* Another process finds it. */
  CHECK(run_child("--child-image") == 0);
  /* A corrupt entry is ignored and rewritten... */
  flip_byte(names[0], (long)(st.st_size / 2));
  OK(cmx__gpu_image_get("binary", src, g_arch, NULL, 0, &b, &origin));
  CHECK(origin == CMX__IMAGE_COMPILED);
  CHECK(a.size == b.size && memcmp(a.data, b.data, a.size) == 0);
  cmx__gpu_image_free(&b);
  cmx__gpu_cache_stats s3 = cmx__gpu_cache_stats_get();
  CHECK(s3.disk_rejects == s2.disk_rejects + 1);
  OK(cmx__gpu_image_get("binary", src, g_arch, NULL, 0, &b, &origin));
  CHECK(origin == CMX__IMAGE_DISK);
  cmx__gpu_image_free(&b);
  /* ...so is a truncated one, and one that others could have written. */
  CHECK(truncate(names[0], 20) == 0);
  OK(cmx__gpu_image_get("binary", src, g_arch, NULL, 0, &b, &origin));
  CHECK(origin == CMX__IMAGE_COMPILED);
  cmx__gpu_image_free(&b);
  CHECK(chmod(names[0], 0666) == 0);
  OK(cmx__gpu_image_get("binary", src, g_arch, NULL, 0, &b, &origin));
  CHECK(origin == CMX__IMAGE_COMPILED);
  cmx__gpu_image_free(&b);
  CHECK(stat(names[0], &st) == 0 && (st.st_mode & 0777) == 0600);
  cmx__gpu_cache_stats s4 = cmx__gpu_cache_stats_get();
  CHECK(s4.disk_rejects == s3.disk_rejects + 2);
  /* Forgetting removes it. */
  cmx__gpu_image_forget("binary", src, g_arch, NULL, 0);
  CHECK(list_entries("binary-", names, 4) == 0);
  OK(cmx__gpu_image_get("binary", src, g_arch, NULL, 0, &b, &origin));
  CHECK(origin == CMX__IMAGE_COMPILED);
  cmx__gpu_image_free(&b);
  cmx__gpu_image_free(&a);
  free(src);
}

/* Child: the f32 Add image must come from the disk cache. */
static int child_image(void) {
  char* src = add_f32_source();
  cmx__gpu_image img;
  int origin = -1;
  cmx_status st =
      cmx__gpu_image_get("binary", src, g_arch, NULL, 0, &img, &origin);
  cmx__gpu_cache_stats s = cmx__gpu_cache_stats_get();
  int rc = st == CMX_OK && origin == CMX__IMAGE_DISK && s.compiles == 0 ? 0 : 1;
  if (rc)
    fprintf(stderr, "child: st %d origin %d compiles %llu: %s\n", st, origin,
            (unsigned long long)s.compiles, cmx_last_error());
  cmx__gpu_image_free(&img);
  free(src);
  return rc;
}

/* ---------------- with a GPU ---------------- */

static void test_available(void) {
  CHECK(cmx_is_available(cmx_device_gpu()));
  CHECK(cmx_device_count(CMX_GPU) >= 1);
  CHECK(strcmp(cmx__gpu_unavailable_reason(), "") == 0);
  CHECK(!cmx_is_available((cmx_device){CMX_GPU, cmx_device_count(CMX_GPU)}));
  CHECK(cmx__device_hooks != NULL);
  cmx__gpu_device* d = cmx__gpu_device_get(0);
  CHECK(d && d->cc_major >= 3 && d->sm_count >= 1);
  if (d)
    printf("gpu: %s, sm_%d%d, %d SMs, driver %d, memory pools %s\n", d->name,
           d->cc_major, d->cc_minor, d->sm_count, cmx__gpu_driver_version(),
           d->pools ? "yes" : "no");
  CHECK(cmx__gpu_device_get(99) == NULL);
  CHECK(strstr(cmx_last_error(), "[gpu] gpu:99 does not exist") != NULL);
  /* The default stream of the gpu is a gpu stream. */
  cmx_stream s;
  OK(cmx_stream_resolve(&s, gpu()));
  CHECK(s.device.type == CMX_GPU && s.index >= 0);
}

static void test_layouts(void) {
  /* (300,1) + (1,500): both inputs broadcast, general strides. */
  {
    int64_t sa[2] = {300, 1}, sb[2] = {1, 500};
    float *x = rnd_floats(300), *y = rnd_floats(500);
    float* ref = malloc(300 * 500 * sizeof(float));
    for (int i = 0; i < 300; i++)
      for (int j = 0; j < 500; j++) ref[i * 500 + j] = x[i] + y[j];
    cmx_array a = arr(x, sa, 2, CMX_FLOAT32), b = arr(y, sb, 2, CMX_FLOAT32);
    cmx_array c = NULL;
    OK(cmx_add(&c, a, b, gpu()));
    CHECK(cmx_array_ndim(c) == 2 && cmx_array_shape(c)[0] == 300 &&
          cmx_array_shape(c)[1] == 500);
    CHECK(equal_f32(c, ref, 300 * 500));
    cmx_array_release_all((cmx_array[]){a, b, c}, 3);
    free(x);
    free(y);
    free(ref);
  }
  /* Vector and weak scalar, both orders (stride-0 operand), and 0-d. */
  {
    int64_t n = 1001;
    float* x = rnd_floats(n);
    float* ref = malloc(n * sizeof(float));
    for (int64_t i = 0; i < n; i++) ref[i] = x[i] + 2.5f;
    cmx_array a = arr(x, &n, 1, CMX_FLOAT32), w = NULL, c = NULL, d = NULL;
    OK(cmx_array_weak_float(&w, 2.5));
    OK(cmx_add(&c, a, w, gpu()));
    OK(cmx_add(&d, w, a, gpu()));
    CHECK(equal_f32(c, ref, n));
    CHECK(equal_f32(d, ref, n));
    cmx_array s1 = NULL, s2 = NULL, s3 = NULL;
    OK(cmx_array_from_double(&s1, 1.25, CMX_FLOAT32));
    OK(cmx_array_from_double(&s2, -4, CMX_FLOAT32));
    OK(cmx_add(&s3, s1, s2, gpu()));
    double v = 0;
    OK(cmx_array_item_double(s3, &v));
    CHECK(v == -2.75);
    cmx_array_release_all((cmx_array[]){a, w, c, d, s1, s2, s3}, 7);
    free(x);
    free(ref);
  }
  /* A transposed input, from host data and from a GPU result. */
  {
    int64_t sx[2] = {200, 300}, st[2] = {300, 200}, tstr[2] = {1, 300};
    float *x = rnd_floats(200 * 300), *y = rnd_floats(300 * 200);
    float* ref = malloc(300 * 200 * sizeof(float));
    float* ref2 = malloc(300 * 200 * sizeof(float));
    for (int i = 0; i < 300; i++)
      for (int j = 0; j < 200; j++) {
        ref[i * 200 + j] = x[j * 300 + i] + y[i * 200 + j];
        ref2[i * 200 + j] = (x[j * 300 + i] + x[j * 300 + i]) + y[i * 200 + j];
      }
    cmx_array a = arr(x, sx, 2, CMX_FLOAT32), b = arr(y, st, 2, CMX_FLOAT32);
    cmx_array t = view(a, st, tstr, 2, 0), c = NULL;
    CHECK(!cmx_kernel_is_contiguous(t));
    OK(cmx_add(&c, t, b, gpu()));
    CHECK(equal_f32(c, ref, 300 * 200));
    cmx_array g = NULL, g2 = NULL, h = NULL;
    OK(cmx_add(&g, a, a, gpu()));
    OK(cmx_array_eval(g));
    cmx_array tg = view(g, st, tstr, 2, 0);
    CHECK(device_only(tg));
    OK(cmx_add(&g2, tg, b, gpu())); /* strided reads on the device */
    CHECK(equal_f32(g2, ref2, 300 * 200));
    OK(cmx_add(&h, tg, b, cpu())); /* the same data moved to the host */
    CHECK(equal_f32(h, ref2, 300 * 200));
    cmx_array_release_all((cmx_array[]){a, b, t, c, g, g2, h, tg}, 8);
    free(x);
    free(y);
    free(ref);
    free(ref2);
  }
  /* Misaligned contiguous views: the vector path must step aside. */
  {
    int64_t n = 1010, m = 1000, one = 1;
    float *x = rnd_floats(n), *y = rnd_floats(n);
    float* ref = malloc(m * sizeof(float));
    for (int64_t i = 0; i < m; i++) ref[i] = x[i + 1] + y[i + 3];
    cmx_array a = arr(x, &n, 1, CMX_FLOAT32), b = arr(y, &n, 1, CMX_FLOAT32);
    cmx_array va = view(a, &m, &one, 1, 1), vb = view(b, &m, &one, 1, 3);
    cmx_array c = NULL;
    OK(cmx_add(&c, va, vb, gpu()));
    CHECK(equal_f32(c, ref, m));
    cmx_array_release_all((cmx_array[]){a, b, va, vb, c}, 5);
    free(x);
    free(y);
    free(ref);
  }
  /* Five dims that cannot merge: the any-rank kernel. */
  {
    int64_t shape[5] = {6, 5, 4, 3, 2}, rev[5] = {1, 6, 30, 120, 360};
    int64_t n = 720;
    float *x = rnd_floats(n), *y = rnd_floats(n);
    float* ref = malloc(n * sizeof(float));
    int64_t k = 0;
    for (int i0 = 0; i0 < 6; i0++)
      for (int i1 = 0; i1 < 5; i1++)
        for (int i2 = 0; i2 < 4; i2++)
          for (int i3 = 0; i3 < 3; i3++)
            for (int i4 = 0; i4 < 2; i4++, k++)
              ref[k] = x[i0 + 6 * i1 + 30 * i2 + 120 * i3 + 360 * i4] + y[k];
    cmx_array a = arr(x, &n, 1, CMX_FLOAT32), b = arr(y, shape, 5, CMX_FLOAT32);
    cmx_array p = view(a, shape, rev, 5, 0), c = NULL, h = NULL;
    OK(cmx_add(&c, p, b, gpu()));
    CHECK(equal_f32(c, ref, n));
    OK(cmx_astype(&h, p, CMX_FLOAT32, gpu())); /* strided copy, any rank */
    for (int64_t i = 0; i < n; i++) ref[i] -= y[i];
    CHECK(equal_f32(h, ref, n));
    cmx_array_release_all((cmx_array[]){a, b, p, c, h}, 5);
    free(x);
    free(y);
    free(ref);
  }
}

/* Offsets past 2^30 elements: the 64-bit index kernels (2 GB of memory,
 * so real GPUs only; see the fake driver's case list). */
static void test_index64(void) {
  int64_t big = ((int64_t)1 << 30) + 16;
  cmx_array a = cmx__node_new("big", &big, 1, CMX_UINT8);
  a->buf = cmx__buffer_alloc((size_t)big);
  CHECK(a->buf != NULL);
  if (!a->buf) {
    cmx_array_release(a);
    return;
  }
  uint8_t* hp = a->buf->host;
  uint8_t want[16], want2[16];
  for (int i = 0; i < 8; i++) {
    hp[i] = (uint8_t)(3 * i + 1);
    hp[((int64_t)1 << 30) + i] = (uint8_t)(200 + i);
  }
  int64_t sh[2] = {2, 8}, str[2] = {(int64_t)1 << 30, 1};
  cmx_array v = view(a, sh, str, 2, 0), c = NULL, d = NULL;
  for (int i = 0; i < 8; i++) {
    want[i] = (uint8_t)(3 * i + 1);
    want[8 + i] = (uint8_t)(200 + i);
  }
  for (int i = 0; i < 16; i++) want2[i] = (uint8_t)(2 * want[i]);
  OK(cmx_astype(&c, v, CMX_UINT8, gpu()));
  OK(cmx_add(&d, v, v, gpu()));
  uint8_t got[16], got2[16];
  OK(cmx_array_copy_to(c, got, 16));
  OK(cmx_array_copy_to(d, got2, 16));
  CHECK(memcmp(got, want, 16) == 0);
  CHECK(memcmp(got2, want2, 16) == 0);
  cmx_array_release_all((cmx_array[]){a, v, c, d}, 4);
}

/* Shape ops on a GPU stream: views (transpose, slice) feed GPU kernels
 * strided; reshape and contiguous copy on the device when they must. */
static void test_shape_ops(void) {
  int64_t sx[3] = {4, 5, 6};
  float* x = rnd_floats(120);
  cmx_array a = arr(x, sx, 3, CMX_FLOAT32);
  /* t[i][j][k] = x[j][k][i], shape (6,4,5) */
  cmx_array t = NULL, c = NULL, s = NULL, w = NULL, d = NULL;
  OK(cmx_transpose(&t, a, (int[]){2, 0, 1}, 3, gpu()));
  OK(cmx_add(&c, t, t, gpu()));
  float rt[120], rc[120];
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 5; k++) {
        rt[(i * 4 + j) * 5 + k] = x[(j * 5 + k) * 6 + i];
        rc[(i * 4 + j) * 5 + k] = rt[(i * 4 + j) * 5 + k] * 2;
      }
  CHECK(equal_f32(c, rc, 120));
  /* s = x[1:4, ::2, ::3] + 0.5: shape (3,3,2) */
  OK(cmx_slice(&s, a, (int64_t[]){1, 0, 0}, (int64_t[]){4, 5, 6},
               (int64_t[]){1, 2, 3}, gpu()));
  OK(cmx_array_weak_float(&w, 0.5));
  OK(cmx_add(&d, s, w, gpu()));
  float rs[18];
  int k = 0;
  for (int i = 1; i < 4; i++)
    for (int j = 0; j < 5; j += 2)
      for (int l = 0; l < 6; l += 3) rs[k++] = x[(i * 5 + j) * 6 + l] + 0.5f;
  CHECK(k == 18 && equal_f32(d, rs, 18));
  /* Reshaping the transposed view must copy (on the device)... */
  cmx_array r = NULL, cc = NULL, r2 = NULL;
  OK(cmx_reshape(&r, t, (int64_t[]){30, 4}, 2, gpu()));
  OK(cmx_array_eval(r));
  CHECK(device_only(r) && cmx_kernel_is_contiguous(r));
  CHECK(equal_f32(r, rt, 120));
  OK(cmx_contiguous(&cc, t, false, gpu()));
  OK(cmx_array_eval(cc));
  CHECK(device_only(cc) && cmx_kernel_is_contiguous(cc));
  CHECK(equal_f32(cc, rt, 120));
  /* ...while reshaping a contiguous GPU result is a view of it. */
  OK(cmx_reshape(&r2, c, (int64_t[]){120}, 1, gpu()));
  OK(cmx_array_eval(r2));
  CHECK(r2->buf == c->buf);
  CHECK(equal_f32(r2, rc, 120));
  cmx_array_release_all((cmx_array[]){a, t, c, s, w, d, r, cc, r2}, 9);
  free(x);
}

static cmx_status copy_op(cmx_array* out, cmx_array a, cmx_stream s) {
  CMX__PUBLIC(out, "copy", cmx__copy(a, s));
}

static void test_copy(void) {
  /* Strided copies of every element size, checked against the host's own
   * strided read of the view. */
  const cmx_dtype dts[] = {CMX_INT8, CMX_FLOAT16, CMX_FLOAT32, CMX_FLOAT64,
                           CMX_COMPLEX64};
  for (int k = 0; k < 5; k++) {
    cmx_dtype dt = dts[k];
    int64_t sx[2] = {37, 53}, st[2] = {53, 37}, tstr[2] = {1, 53};
    size_t isz = cmx_dtype_size(dt);
    char* x = malloc(37 * 53 * isz);
    fill(x, dt, 37 * 53);
    cmx_array a = arr(x, sx, 2, dt), t = view(a, st, tstr, 2, 0), c = NULL;
    OK(copy_op(&c, t, gpu()));
    OK(cmx_array_eval(c));
    CHECK_MSG(device_only(c) && same_bytes(c, t), "%s", cmx_dtype_name(dt));
    cmx_array_release_all((cmx_array[]){a, t, c}, 3);
    free(x);
  }
  /* Contiguous copies, with and without an input to donate. */
  int64_t n = 4099;
  float* x = rnd_floats(n);
  float* ref = malloc(n * sizeof(float));
  for (int64_t i = 0; i < n; i++) ref[i] = x[i] + x[i];
  cmx_array a = arr(x, &n, 1, CMX_FLOAT32), s = NULL, c = NULL, d = NULL;
  OK(cmx_add(&s, a, a, gpu()));
  OK(cmx_astype(&c, s, CMX_FLOAT32, gpu())); /* s is still held */
  OK(cmx_array_eval(c));
  CHECK(equal_f32(c, ref, n));
  cmx_array tmp = NULL;
  OK(cmx_add(&tmp, a, a, gpu()));
  OK(cmx_astype(&d, tmp, CMX_FLOAT32, gpu()));
  cmx_array_release(tmp); /* only d's op holds it now: donated */
  CHECK(equal_f32(d, ref, n));
  CHECK(equal_f32(s, ref, n));
  /* A conversion on the GPU truncates as the host does (every dtype pair
   * is test_ew_special's). */
  cmx_array e = NULL, ok2 = NULL, big = NULL, hundred = NULL;
  OK(cmx_array_from_double(&hundred, 100.0, CMX_FLOAT32));
  OK(cmx_multiply(&big, s, hundred, gpu()));
  OK(cmx_astype(&e, big, CMX_INT32, gpu()));
  OK(cmx_array_eval(e));
  const int32_t* ei = NULL;
  OK(cmx_array_data(e, (const void**)&ei));
  bool trunc_ok = ei != NULL;
  for (int64_t i = 0; trunc_ok && i < n; i++) {
    float v = ref[i] * 100.0f;
    trunc_ok = ei[i] == (int32_t)v;
  }
  CHECK(trunc_ok);
  cmx_array_release_all((cmx_array[]){big, hundred}, 2);
  OK(cmx_add(&ok2, a, a, gpu()));
  CHECK(equal_f32(ok2, ref, n));
  cmx_array_release_all((cmx_array[]){a, s, c, d, e, ok2}, 6);
  free(x);
  free(ref);
}

static void test_cross_device(void) {
  int64_t n = 5000;
  float *x = rnd_floats(n), *y = rnd_floats(n);
  float *r1 = malloc(n * 4), *r2 = malloc(n * 4);
  for (int64_t i = 0; i < n; i++) {
    r1[i] = (x[i] + y[i]) + x[i];
    r2[i] = (x[i] + x[i]) + y[i];
  }
  cmx_array a = arr(x, &n, 1, CMX_FLOAT32), b = arr(y, &n, 1, CMX_FLOAT32);
  cmx_array g = NULL, c = NULL, h = NULL, k = NULL;
  OK(cmx_add(&g, a, b, gpu()));
  OK(cmx_add(&c, g, a, cpu())); /* a CPU op reads a GPU result */
  CHECK(equal_f32(c, r1, n));
  OK(cmx_add(&h, a, a, cpu()));
  OK(cmx_add(&k, h, b, gpu())); /* a GPU op reads a CPU result */
  OK(cmx_array_eval(k));
  CHECK(device_only(k));
  CHECK(equal_f32(k, r2, n));
  /* Both copies valid after reading: reading again moves nothing. */
  CHECK(k->buf->host_valid && k->buf->dev_valid);
  CHECK(equal_f32(k, r2, n));
  /* The default device switched to the gpu. */
  cmx_array m = NULL;
  OK(cmx_set_default_device(cmx_device_gpu()));
  OK(cmx_add(&m, h, b, CMX_STREAM_DEFAULT));
  OK(cmx_set_default_device(cmx_device_cpu()));
  CHECK(cmx_array_stream(m).device.type == CMX_GPU);
  CHECK(equal_f32(m, r2, n));
  cmx_array_release_all((cmx_array[]){a, b, g, c, h, k, m}, 7);
  free(x);
  free(y);
  free(r1);
  free(r2);
}

static void test_chain(void) {
  size_t base = cmx__gpu_active_bytes();
  int64_t n = 1 << 16;
  float* x = malloc(n * 4);
  float* ones = malloc(n * 4);
  float* ref = malloc(n * 4);
  for (int64_t i = 0; i < n; i++) {
    x[i] = (float)(i % 97);
    ones[i] = 1;
    ref[i] = x[i] + 1000;
  }
  cmx_array a = arr(x, &n, 1, CMX_FLOAT32), one = arr(ones, &n, 1, CMX_FLOAT32);
  cmx_array cur = cmx_array_retain(a);
  for (int i = 0; i < 1000; i++) {
    cmx_array next = NULL;
    OK(cmx_add(&next, cur, one, gpu()));
    cmx_array_release(cur);
    cur = next;
  }
  OK(cmx_array_eval(cur));
  CHECK(equal_f32(cur, ref, n));
  cmx_array_release_all((cmx_array[]){a, one, cur}, 3);
  /* Every device byte came back. */
  CHECK_MSG(cmx__gpu_active_bytes() == base, "%zu device bytes, want %zu",
            cmx__gpu_active_bytes(), base);
  CHECK(cmx__gpu_peak_bytes() >= (size_t)n * 4);
  free(x);
  free(ones);
  free(ref);
}

static void test_streams(void) {
  int64_t n = 100000;
  float *x = rnd_floats(n), *y = rnd_floats(n);
  float *rx = malloc(n * 4), *ry = malloc(n * 4), *rz = malloc(n * 4),
        *rw = malloc(n * 4), *rv = malloc(n * 4);
  for (int64_t i = 0; i < n; i++) {
    rx[i] = x[i] + y[i];
    rv[i] = rx[i] + x[i];
    ry[i] = rx[i] + y[i];
    rz[i] = ry[i] + x[i];
    rw[i] = rz[i] + x[i];
  }
  cmx_stream s2, s3, s1;
  OK(cmx_new_stream(&s2, cmx_device_gpu()));
  OK(cmx_new_stream(&s3, cmx_device_cpu()));
  OK(cmx_stream_resolve(&s1, gpu()));
  CHECK(s2.device.type == CMX_GPU && s2.index != s1.index);
  cmx_array a = arr(x, &n, 1, CMX_FLOAT32), b = arr(y, &n, 1, CMX_FLOAT32);
  cmx_array vx = NULL, vy = NULL, vz = NULL, vw = NULL;
  OK(cmx_add(&vx, a, b, s1));
  OK(cmx_add(&vy, vx, b, s2)); /* waits for s1 */
  OK(cmx_add(&vz, vy, a, s1)); /* waits for s2 */
  OK(cmx_add(&vw, vz, a, s3)); /* a CPU stream waits for s1 */
  OK(cmx_async_eval((cmx_array[]){vw}, 1));
  OK(cmx_synchronize(s3));
  CHECK(cmx_array_is_available(vw));
  OK(cmx_synchronize(s2));
  OK(cmx_synchronize_all());
  CHECK(cmx_array_stream(vy).index == s2.index);
  CHECK(equal_f32(vx, rx, n));
  CHECK(equal_f32(vy, ry, n));
  CHECK(equal_f32(vz, rz, n));
  CHECK(equal_f32(vw, rw, n));
  /* Many small tasks over two streams, more than the event ring holds. */
  int64_t m = 2048;
  cmx_array sa = arr(x, &m, 1, CMX_FLOAT32), sb = arr(y, &m, 1, CMX_FLOAT32);
  cmx_array p = cmx_array_retain(sa), q = cmx_array_retain(sb);
  for (int i = 0; i < 1500; i++) {
    cmx_array np = NULL, nq = NULL;
    OK(cmx_add(&np, p, sb, s1));
    OK(cmx_add(&nq, q, np, s2));
    cmx_array_release(p);
    cmx_array_release(q);
    p = np;
    q = nq;
  }
  OK(cmx_eval((cmx_array[]){p, q}, 2));
  float* got = malloc(m * 4);
  OK(cmx_array_copy_to(q, got, m * 4));
  /* p_k = p_{k-1} + y, q_k = q_{k-1} + p_k, in float in the same order. */
  int bad = 0;
  for (int64_t i = 0; i < m; i += 7) {
    float pp = x[i], qq = y[i];
    for (int k = 0; k < 1500; k++) {
      pp = pp + y[i];
      qq = qq + pp;
    }
    bad += got[i] != qq;
  }
  CHECK(bad == 0);
  /* The last reference to an input dropped while another stream's kernel
   * may still read it: its memory must not be reused or poisoned early. */
  cmx_array_release_all((cmx_array[]){vy, vz, vw}, 3);
  bad = 0;
  for (int i = 0; i < 50; i++) {
    cmx_array t = NULL, u = NULL;
    OK(cmx_add(&t, a, b, s1));
    OK(cmx_array_eval(t));
    OK(cmx_add(&u, t, b, s2));
    OK(cmx_async_eval(&u, 1));
    cmx_array_release(t);      /* freed outside any task: the free stream */
    OK(cmx_add(&t, a, a, s1)); /* may reuse t's memory at once */
    OK(cmx_array_eval(t));
    bad += !equal_f32(u, ry, n);
    cmx_array_release_all((cmx_array[]){t, u}, 2);
  }
  CHECK(bad == 0);
  /* An input donated to an output (written in place) while another
   * stream's kernel may still read it. */
  bad = 0;
  for (int i = 0; i < 50; i++) {
    cmx_array t = NULL, u = NULL, v = NULL;
    OK(cmx_add(&t, a, b, s1));
    OK(cmx_array_eval(t));
    OK(cmx_add(&u, t, b, s2));
    OK(cmx_async_eval(&u, 1));
    OK(cmx_add(&v, t, a, s1));
    cmx_array_release(t); /* v's task holds the only reference */
    OK(cmx_array_eval(v));
    bad += !equal_f32(u, ry, n) + !equal_f32(v, rv, n);
    cmx_array_release_all((cmx_array[]){u, v}, 2);
  }
  CHECK(bad == 0);
  cmx_array_release_all((cmx_array[]){a, b, vx, p, q, sa, sb}, 7);
  free(got);
  free(x);
  free(y);
  free(rx);
  free(ry);
  free(rz);
  free(rw);
  free(rv);
}

/* One f32 Add on the gpu, checked. */
static bool gpu_add_ok(void) {
  int64_t n = 3000;
  float *x = rnd_floats(n), *ref = malloc(n * 4);
  for (int64_t i = 0; i < n; i++) ref[i] = x[i] + x[i];
  cmx_array a = arr(x, &n, 1, CMX_FLOAT32), c = NULL;
  bool ok = cmx_add(&c, a, a, gpu()) == CMX_OK && equal_f32(c, ref, n);
  cmx_array_release_all((cmx_array[]){a, c}, 2);
  free(x);
  free(ref);
  return ok;
}

static void test_kernel_cache(void) {
  char names[64][1024];
  CHECK(list_entries("elementwise_Add_float32-", names, 64) >= 1);
  cmx__gpu_cache_stats s0 = cmx__gpu_cache_stats_get();
  CHECK(gpu_add_ok());
  cmx__gpu_cache_stats s1 = cmx__gpu_cache_stats_get();
  CHECK(s1.mem_hits > s0.mem_hits && s1.compiles == s0.compiles);
  /* A cleared memory cache loads from disk. */
  cmx__gpu_module_cache_clear();
  CHECK(gpu_add_ok());
  cmx__gpu_cache_stats s2 = cmx__gpu_cache_stats_get();
  CHECK(s2.disk_hits > s1.disk_hits && s2.compiles == s1.compiles);
  /* So does a second process. */
  CHECK(run_child("--child-gpu") == 0);
  /* Corrupt entries are rebuilt. */
  int k = list_entries("elementwise_Add_float32-", names, 64);
  for (int i = 0; i < k && i < 64; i++) flip_byte(names[i], 100);
  cmx__gpu_module_cache_clear();
  CHECK(gpu_add_ok());
  cmx__gpu_cache_stats s3 = cmx__gpu_cache_stats_get();
  CHECK(s3.disk_rejects > s2.disk_rejects && s3.compiles > s2.compiles);
}

/* Child: a GPU add served by the disk cache alone. */
static int child_gpu(void) {
  if (!cmx_is_available(cmx_device_gpu())) return 2;
  bool ok = gpu_add_ok();
  cmx__gpu_cache_stats s = cmx__gpu_cache_stats_get();
  if (!ok || s.compiles != 0 || s.disk_hits == 0) {
    fprintf(stderr, "child: ok %d compiles %llu disk hits %llu\n", ok,
            (unsigned long long)s.compiles, (unsigned long long)s.disk_hits);
    return 1;
  }
  return 0;
}

/* QuantizedMatmulSwiGLU's kernels (cmx_qmv1sg, cmx_qmv1sgf) compile for
 * the GPU's architecture (sm_90 without one) in every float dtype at 4 and
 * 8 bits (the variant walk above reaches each kernel in a few variants
 * only), both in one module with nothing else. */
static void test_compile_qmv_swiglu(void) {
  const cmx__gpu_family* f = &cmx__gpu_family_quantized;
  int sg = -1, sgf = -1, nk = cmx__gpu_family_nkernels(f);
  for (int k = 0; k < nk; k++) {
    if (!strcmp(f->kernels[k], "cmx_qmv1sg")) sg = k;
    if (!strcmp(f->kernels[k], "cmx_qmv1sgf")) sgf = k;
  }
  CHECK(sg >= 0 && sgf >= 0);
  if (sg < 0 || sgf < 0) return;
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  int bits[2] = {4, 8};
  compile_item items[6];
  memset(items, 0, sizeof items);
  for (int i = 0; i < 6; i++) {
    items[i].f = f;
    items[i].variant = (int)dts[i / 2] * 9 + bits[i % 2]; /* q_variant_of */
    items[i].kernels[0] = sg;
    items[i].kernels[1] = sgf;
    items[i].kernels[2] = sgf;
  }
  compile_job job = {.items = items, .begin = 0, .end = 6, .step = 1};
  compile_slice(&job);
  for (int i = 0; i < 6; i++) {
    cmx__gpu_variant var;
    CHECK(f->variant(items[i].variant, &var));
    CHECK_MSG(!items[i].failed, "%s: %s", var.name, items[i].msg);
  }
}

/* AddRMSNormQuantizedMatmul's kernels (cmx_qmv1n, cmx_qmv1r1n,
 * cmx_qmv1sgn: the one-row mat-vec kernels with AddRMSNorm's row first)
 * compile for the GPU's architecture (sm_90 without one) in every float
 * dtype at 3, 4 and 8 bits, the three in one module with nothing else
 * (the module holds exactly those three entry points). */
static void test_compile_qmv_norm(void) {
  const cmx__gpu_family* f = &cmx__gpu_family_quantized;
  static const char* const names[3] = {"cmx_qmv1n", "cmx_qmv1r1n",
                                       "cmx_qmv1sgn"};
  int ks[3] = {-1, -1, -1}, nk = cmx__gpu_family_nkernels(f);
  for (int k = 0; k < nk; k++)
    for (int i = 0; i < 3; i++)
      if (!strcmp(f->kernels[k], names[i])) ks[i] = k;
  CHECK(ks[0] >= 0 && ks[1] >= 0 && ks[2] >= 0);
  if (ks[0] < 0 || ks[1] < 0 || ks[2] < 0) return;
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  int bits[3] = {3, 4, 8};
  compile_item items[9];
  memset(items, 0, sizeof items);
  for (int i = 0; i < 9; i++) {
    items[i].f = f;
    items[i].variant = (int)dts[i / 3] * 9 + bits[i % 3]; /* q_variant_of */
    for (int k = 0; k < 3; k++) items[i].kernels[k] = ks[k];
  }
  compile_job job = {.items = items, .begin = 0, .end = 9, .step = 1};
  compile_slice(&job);
  for (int i = 0; i < 9; i++) {
    cmx__gpu_variant var;
    CHECK(f->variant(items[i].variant, &var));
    CHECK_MSG(!items[i].failed, "%s: %s", var.name, items[i].msg);
  }
}

/* ---------------- main ---------------- */

/* Small host arrays (one element of 1, 2, 4 or 8 bytes) reach the device
 * by a launch on the reading task's stream (memory.c's puts): scalars of
 * int8, int16, float32 and float64 added on the GPU give the exact sums;
 * a scalar read by tasks of two streams comes out right on both (the
 * second waits for the put: the fake driver's random delays would show a
 * missing wait), many times over, and reading it back on the host after
 * is right too; a 2-element array still goes by copy. */
static bool small_sum_ok(cmx_dtype dt, double v, const cmx_stream* on,
                         int nstreams) {
  enum { N = 4096 };
  static double base[N];
  unsigned char data[N * 8], want[N * 8], got[N * 8], sv[8];
  size_t es = cmx_dtype_size(dt);
  for (int i = 0; i < N; i++) {
    base[i] = (double)(i % 50) - 25.0;
    double w = base[i] + v;
    switch (dt) {
      case CMX_INT8: ((int8_t*)data)[i] = (int8_t)base[i];
                     ((int8_t*)want)[i] = (int8_t)w; break;
      case CMX_INT16: ((int16_t*)data)[i] = (int16_t)base[i];
                      ((int16_t*)want)[i] = (int16_t)w; break;
      case CMX_FLOAT32: ((float*)data)[i] = (float)base[i];
                        ((float*)want)[i] = (float)w; break;
      default: ((double*)data)[i] = base[i]; ((double*)want)[i] = w; break;
    }
  }
  switch (dt) {
    case CMX_INT8: *(int8_t*)sv = (int8_t)v; break;
    case CMX_INT16: *(int16_t*)sv = (int16_t)v; break;
    case CMX_FLOAT32: *(float*)sv = (float)v; break;
    default: *(double*)sv = v; break;
  }
  int64_t n = N;
  cmx_array a = arr(data, &n, 1, dt), c = arr(sv, NULL, 0, dt);
  cmx_array y[2] = {NULL, NULL};
  bool ok = true;
  for (int k = 0; k < nstreams; k++) OK(cmx_add(&y[k], a, c, on[k]));
  ok = cmx_eval(y, nstreams) == CMX_OK;
  for (int k = 0; ok && k < nstreams; k++) {
    ok = cmx_array_copy_to(y[k], got, N * es) == CMX_OK &&
         !memcmp(got, want, N * es);
    if (!ok) {
      int i = 0;
      while (i < N && !memcmp(got + i * es, want + i * es, es)) i++;
      fprintf(stderr, "  stream %d (task %d of %d): element %d of %d differs\n",
              on[k].index, k, nstreams, i, N);
    }
  }
  unsigned char back[8];
  ok = ok && cmx_array_copy_to(c, back, es) == CMX_OK && !memcmp(back, sv, es);
  cmx_array_release_all((cmx_array[]){a, c, y[0], y[1]}, 4);
  return ok;
}

static void test_small_puts(void) {
  cmx_stream s[2];
  OK(cmx_stream_resolve(&s[0], gpu()));
  OK(cmx_new_stream(&s[1], cmx_device_gpu()));
  const cmx_dtype dts[4] = {CMX_INT8, CMX_INT16, CMX_FLOAT32, CMX_FLOAT64};
  uint64_t p0 = cmx__gpu_small_puts();
  for (int d = 0; d < 4; d++)
    CHECK_MSG(small_sum_ok(dts[d], 3.0, s, 1), "%s on one stream",
              cmx_dtype_name(dts[d]));
  CHECK(cmx__gpu_small_puts() - p0 == 4);
  for (int r = 0; r < 40; r++) {
    cmx_stream two[2] = {s[r % 2], s[1 - r % 2]};
    CHECK_MSG(small_sum_ok(dts[r % 4], (double)(r % 7) - 3.0, two, 2),
              "%s over two streams, round %d", cmx_dtype_name(dts[r % 4]), r);
  }
  CHECK(cmx__gpu_small_puts() - p0 == 44);
  /* by copy: two elements */
  uint64_t p1 = cmx__gpu_small_puts();
  double z[2] = {1.5, -2.0};
  int64_t two = 2;
  cmx_array z2 = arr(z, &two, 1, CMX_FLOAT64), o2 = NULL;
  OK(cmx_add(&o2, z2, z2, s[0]));
  OK(cmx_eval(&o2, 1));
  double g2[2];
  OK(cmx_array_copy_to(o2, g2, sizeof g2));
  CHECK(g2[0] == 3.0 && g2[1] == -4.0);
  CHECK(cmx__gpu_small_puts() == p1);
  cmx_array_release_all((cmx_array[]){z2, o2}, 2);
}

int main(int argc, char** argv) {
  if (argc > 1) { /* children inherit CMX_CACHE_DIR */
    g_gpu = cmx_is_available(cmx_device_gpu());
    if (g_gpu) {
      cmx__gpu_device* d = cmx__gpu_device_get(0);
      g_arch = d->cc_major * 10 + d->cc_minor;
    }
    if (!strcmp(argv[1], "--child-image")) return child_image();
    if (!strcmp(argv[1], "--child-gpu")) return child_gpu();
    return 3;
  }
  if (!gpu_test_begin("test-gpu")) return 1;
  bool require = gpu_test_required();
  const char* why = NULL;
  cmx__nvrtc_available(&why);
  if (g_gpu) {
    CASE(test_available);
  } else {
    CASE(test_unavailable);
  }
  if (g_nvrtc) {
    CASE(test_compile_all);
    CASE(test_compile_qmv_swiglu);
    CASE(test_compile_qmv_norm);
    CASE(test_compile_error);
    CASE(test_disk_cache);
  } else {
    printf("nvrtc: unavailable (%s), compile cases not run\n", why);
    CHECK_MSG(!require && !g_gpu, "NVRTC is needed: %s", why);
  }
  if (g_gpu && g_nvrtc) {
    CASE(test_layouts);
    CASE(test_index64);
    CASE(test_shape_ops);
    CASE(test_copy);
    CASE(test_cross_device);
    CASE(test_chain);
    CASE(test_streams);
    CASE(test_small_puts);
    CASE(test_kernel_cache);
  } else {
    printf("gpu: unavailable, GPU cases not run (%s)\n",
           g_gpu ? "no NVRTC" : cmx__gpu_unavailable_reason());
    CHECK_MSG(!require,
              "CMX_TEST_REQUIRE_GPU is set but the GPU is "
              "unavailable: %s",
              g_gpu ? why : cmx__gpu_unavailable_reason());
  }
  gpu_test_end();
  return test_summary("test_gpu");
}
