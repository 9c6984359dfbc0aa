# cmake/layers.cmake — cudal1_layer(): one static library per folder of src/, its layer.
#
# A layer's translation units see only its own headers and those of the layers it DEPENDS on
# (transitively): each layer publishes an include root of its own, build/layers/<name>/, holding
# one link, <name> -> src/<name>. `#include "lint/lint.h"` from the evaluator then fails to
# compile ("No such file or directory"), so the order in docs/architecture.md is the build's.
function(cudal1_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;DEPENDS;LINK" ${ARGN})
  set(root "${CMAKE_BINARY_DIR}/layers/${name}")
  file(MAKE_DIRECTORY "${root}")
  file(CREATE_LINK "${CMAKE_SOURCE_DIR}/src/${name}" "${root}/${name}" SYMBOLIC)
  add_library(cudal1_${name} STATIC ${L_SOURCES})
  target_include_directories(cudal1_${name} PUBLIC "${root}")
  foreach(dep IN LISTS L_DEPENDS)
    target_link_libraries(cudal1_${name} PUBLIC cudal1_${dep})
  endforeach()
  if(L_LINK)
    target_link_libraries(cudal1_${name} PUBLIC ${L_LINK})
  endif()
endfunction()

# An include root for a folder that is not a library of its own (the CLI's, the tests'), as
# cudal1_layer makes one.
function(cudal1_include_root target name)
  set(root "${CMAKE_BINARY_DIR}/layers/${name}")
  file(MAKE_DIRECTORY "${root}")
  file(CREATE_LINK "${CMAKE_SOURCE_DIR}/src/${name}" "${root}/${name}" SYMBOLIC)
  target_include_directories(${target} PRIVATE "${root}")
endfunction()
