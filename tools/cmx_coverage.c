/* cmx_coverage: which built-in primitive has a kernel on which device.
 *
 * Prints one line per primitive of src/primitives/list.h, in its order:
 *
 *     <Name> <cpu yes|no> <gpu yes|no>        e.g. "Add yes yes"
 *
 * read from the backends' kernel tables, so it runs the same on machines
 * with and without a GPU (no driver is loaded). Exit status 0, or 1 when
 * the library reports no primitives. */
#include <cmx/cmx.h>
#include <stdio.h>

int main(void) {
  int n = cmx_builtin_primitive_count();
  for (int i = 0; i < n; i++) {
    const cmx_primitive_vtable* vt = cmx_builtin_primitive(i);
    printf("%s %s %s\n", vt->name,
           cmx_primitive_has_kernel(vt, CMX_CPU) ? "yes" : "no",
           cmx_primitive_has_kernel(vt, CMX_GPU) ? "yes" : "no");
  }
  return n > 0 ? 0 : 1;
}
