# Helpers shared by every CMakeLists.txt of the project.

# mlafp8_add_library(<name> <sources>... [LINK <libs>...])
# A static, position-independent library linked against libMLIR.so/libLLVM.so
# (through the LINK list) so that tools and the Python module link in seconds.
function(mlafp8_add_library name)
  cmake_parse_arguments(ARG "" "" "LINK;DEPENDS" ${ARGN})
  add_library(${name} STATIC ${ARG_UNPARSED_ARGUMENTS})
  if(ARG_LINK)
    target_link_libraries(${name} PUBLIC ${ARG_LINK})
  endif()
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
endfunction()

# Adds each listed subdirectory; a listed directory without a CMakeLists.txt
# is a configuration error, not a silently smaller build.
function(mlafp8_add_subdirectories)
  foreach(dir ${ARGN})
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt)
      message(FATAL_ERROR "${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt "
                          "is missing")
    endif()
    add_subdirectory(${dir})
  endforeach()
endfunction()
