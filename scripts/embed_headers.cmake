# Turns the headers that compile's generated C includes into C strings in
# OUT, keyed by their include path (relative to SRC_DIR):
#   const cmx__jit_header cmx__jit_headers[] = {{"backend/cpu/vmath.h", ...},
#                                               ..., {NULL, NULL}};
# FILES is a comma-separated list of those paths.
string(REPLACE "," ";" files "${FILES}")
set(body "/* Generated from headers of src/ for compile's C kernels. Do not edit. */\n#include <stddef.h>\n")
set(table "")
set(i 0)
foreach(f ${files})
  file(READ ${SRC_DIR}/${f} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(APPEND body "static const unsigned char k_h${i}[] = {${bytes}0x00};\n")
  string(APPEND table "  {\"${f}\", (const char*)k_h${i}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND body "typedef struct { const char* path; const char* text; } cmx__jit_header;\n")
string(APPEND body "const cmx__jit_header cmx__jit_headers[] = {\n${table}  {NULL, NULL}};\n")
file(WRITE ${OUT} "${body}")
