# cmx_add_extension(<target> SOURCES <files...> [LIBRARIES <libs...>]
#                   [OUTPUT_NAME <module name>])
# A CPython extension module built on cmx: <files> may include
# <cmx/python.h> to take and return cmx.core arrays and streams. The module
# links cmx::cmx, is named <OUTPUT_NAME or target><Python's ext suffix>,
# and finds libcmx through an rpath (the process has it loaded already
# once `import cmx.core` ran, which cmx_python_import() does).
function(cmx_add_extension target)
  cmake_parse_arguments(ARG "" "OUTPUT_NAME" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "cmx_add_extension(${target}): no SOURCES")
  endif()
  if(NOT TARGET Python3::Module)
    find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)
  endif()
  Python3_add_library(${target} MODULE WITH_SOABI ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE cmx::cmx ${ARG_LIBRARIES})
  if(ARG_OUTPUT_NAME)
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${ARG_OUTPUT_NAME})
  endif()
  get_target_property(cmx_lib cmx::cmx LOCATION)
  get_filename_component(cmx_libdir "${cmx_lib}" DIRECTORY)
  set_target_properties(${target} PROPERTIES
    C_VISIBILITY_PRESET hidden
    BUILD_RPATH "${cmx_libdir}"
    INSTALL_RPATH "${cmx_libdir}")
endfunction()
