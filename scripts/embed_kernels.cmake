# Turns every .cu file in SRC_DIR, and the files listed in EXTRA (the
# elementwise semantics, primitives/ew_scalar.h, which kernels include as
# "ew_scalar"), into a C string constant in OUT:
#   static const unsigned char k_<name>[] = {...};
# plus a lookup table, so the library carries CUDA source, not binaries.
file(GLOB files ${SRC_DIR}/*.cu)
list(SORT files)
list(APPEND files ${EXTRA})
set(body "/* Generated from the .cu files of src/backend/cuda/kernels. Do not edit. */\n#include <stddef.h>\n")
set(table "")
foreach(f ${files})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # unsigned char: bytes above 0x7f stay in range (UTF-8 in comments).
  string(APPEND body "static const unsigned char k_${name}[] = {${bytes}0x00};\n")
  string(APPEND table "  {\"${name}\", (const char*)k_${name}},\n")
endforeach()
string(APPEND body "typedef struct { const char* name; const char* source; } cmx__kernel_source;\n")
string(APPEND body "const cmx__kernel_source cmx__kernel_sources[] = {\n${table}  {NULL, NULL}};\n")
file(WRITE ${OUT} "${body}")
