/* Every primitive of src/primitives/list.h has output_shapes, equal and
 * hash (shapeless compile and CSE need all three; a NULL equal or hash
 * would silently fall back to comparing parameter bytes, which is wrong
 * for parameters holding pointers, padding or partly used arrays). The
 * correctness of the three is checked in test_primitive_shapes.c; this
 * test makes a primitive added later without them fail. */
#include "primitives/registry.h"
#include "test.h"

int main(void) {
  for (int i = 0; i < CMX__NUM_PRIMITIVES; i++) {
    const cmx_primitive_vtable* vt = cmx__all_primitives[i];
    CHECK(vt != NULL && vt->id == i);
    if (!vt) continue;
    CHECK_MSG(vt->output_shapes != NULL, "%s has no output_shapes", vt->name);
    CHECK_MSG(vt->equal != NULL, "%s has no equal", vt->name);
    CHECK_MSG(vt->hash != NULL, "%s has no hash", vt->name);
  }
  return test_summary("test_primitive_coverage");
}
