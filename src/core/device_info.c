/* cmx_device_get_info: the CPU described here, other devices by their
 * backend. */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/backend.h"
#include "core/internal.h"

/* The CPU's model name from /proc/cpuinfo into buf ("cpu" when it cannot
 * be read). */
static void cpu_model(char* buf, size_t size) {
  snprintf(buf, size, "cpu");
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char* colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) != 0 || !colon) continue;
    colon++;
    while (*colon == ' ' || *colon == '\t') colon++;
    size_t n = strcspn(colon, "\n");
    snprintf(buf, size, "%.*s", (int)n, colon);
    break;
  }
  fclose(f);
}

static void cpu_info(cmx_device_info* out) {
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  long avail = sysconf(_SC_AVPHYS_PAGES);
  out->memory_size = pages > 0 && psize > 0 ? (size_t)pages * (size_t)psize : 0;
  out->free_memory = avail > 0 && psize > 0 ? (size_t)avail * (size_t)psize : 0;
  struct utsname u;
  snprintf(out->architecture, sizeof out->architecture, "%.31s",
           uname(&u) == 0 ? u.machine : "unknown");
  cpu_model(out->name, sizeof out->name);
  out->cores = cmx__env_get()->num_threads;
}

cmx_status cmx_device_get_info(cmx_device dev, cmx_device_info* out) {
  if (!out)
    return cmx__error(CMX_ERR_VALUE, "[device_info] output pointer is NULL");
  memset(out, 0, sizeof *out);
  if (!cmx_is_available(dev))
    return cmx__error(CMX_ERR_VALUE,
                      "[device_info] device %s:%d is not "
                      "available",
                      dev.type == CMX_GPU ? "gpu" : "cpu", dev.index);
  if (dev.type == CMX_CPU) {
    cpu_info(out);
    return CMX_OK;
  }
  const cmx__backend* b = cmx__backend_get(dev.type);
  if (!b || !b->device_info)
    return cmx__error(CMX_ERR_VALUE,
                      "[device_info] no backend describes "
                      "device type %d",
                      (int)dev.type);
  return b->device_info(dev.index, out);
}
