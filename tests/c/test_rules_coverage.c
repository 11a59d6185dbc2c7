/* Every primitive of src/primitives/list.h has its transform rules: a vjp,
 * a jvp and a vmap (elementwise primitives get the driver's generic vmap),
 * or is listed below with the reason it has none. The per-family
 * test_rules_* programs check that the rules are right; this one checks
 * that none is missing, so a primitive added later without rules fails
 * here. */
#include "primitives/registry.h"
#include "test.h"

/* A missing slot allowed for a named reason. */
typedef struct exemption {
  const char* name;
  const char* slot; /* "vjp", "jvp" or "vmap" */
  const char* why;
} exemption;

/* The list ends with a NULL name. */
#define MSG "a message between two processes: MLX defines no such rule"
static const exemption EXEMPT[] = {
    {"ReduceScatter", "vjp", "MLX defines no vjp of sum_scatter"},
    {"Send", "vjp", MSG},
    {"Send", "jvp", MSG},
    {"Send", "vmap", MSG},
    {"Recv", "vjp", MSG},
    {"Recv", "jvp", MSG},
    {"Recv", "vmap", MSG},
    {NULL, NULL, NULL}};

static const char* exemption_for(const char* name, const char* slot) {
  for (size_t i = 0; EXEMPT[i].name; i++)
    if (!strcmp(EXEMPT[i].name, name) && !strcmp(EXEMPT[i].slot, slot))
      return EXEMPT[i].why;
  return NULL;
}

static void check_slot(const cmx_primitive_vtable* vt, const char* slot,
                       bool present) {
  const char* why = exemption_for(vt->name, slot);
  if (present)
    CHECK_MSG(!why, "%s has a %s rule: drop its stale exemption", vt->name,
              slot);
  else
    CHECK_MSG(why, "%s has no %s rule and no exemption", vt->name, slot);
}

int main(void) {
  for (int i = 0; i < CMX__NUM_PRIMITIVES; i++) {
    const cmx_primitive_vtable* vt = cmx__all_primitives[i];
    CHECK(vt != NULL && vt->id == i);
    if (!vt) continue;
    check_slot(vt, "vjp", vt->vjp != NULL);
    check_slot(vt, "jvp", vt->jvp != NULL);
    check_slot(vt, "vmap",
               vt->vmap != NULL || (vt->flags & CMX_PRIM_ELEMENTWISE));
  }
  /* Exemptions name real primitives (stale entries are errors too). */
  for (size_t e = 0; EXEMPT[e].name; e++) {
    bool found = false;
    for (int i = 0; i < CMX__NUM_PRIMITIVES; i++)
      found |= !strcmp(cmx__all_primitives[i]->name, EXEMPT[e].name);
    CHECK_MSG(found, "exemption for unknown primitive %s", EXEMPT[e].name);
  }
  return test_summary("test_rules_coverage");
}
