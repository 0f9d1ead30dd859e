# `cmake --install` of the C++ API: public headers (with the generated .h.inc
# they include), the project's static libraries and a CMake package, so that
#   find_package(mla-fp8 CONFIG)
#   target_link_libraries(app PRIVATE mla-fp8::AOT mla-fp8::Runtime)
# works from another project. Everything is in the component "mla-fp8".
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MLAFP8_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/mla-fp8)

# Library target -> exported name (mla-fp8::<name>).
set(MLAFP8_EXPORTED_LIBRARIES)
set(MLAFP8_EXPORTED_TARGETS)
set(mlafp8_install_targets)
foreach(entry
    MLAFP8ABI:ABI MLAFP8Hardware:Hardware MLAFP8CodeObject:CodeObject
    MLAFP8Dialect:Dialect MLAFP8Transforms:Transforms
    MLAFP8Target:Target
    MLAFP8Conversion:Conversion MLAFP8Pipelines:Pipelines MLAFP8AOT:AOT
    MLAFP8Reference:Reference MLAFP8Emulator:Emulator MLAFP8Runtime:Runtime
    MLAFP8RuntimeEmulator:RuntimeEmulator
    MLAFP8EmbeddingRuntime:EmbeddingRuntime MLAFP8Embedding:Embedding)
  string(REPLACE ":" ";" entry "${entry}")
  list(GET entry 0 target)
  list(GET entry 1 name)
  if(TARGET ${target})
    set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
    list(APPEND mlafp8_install_targets ${target})
    list(APPEND MLAFP8_EXPORTED_LIBRARIES ${name})
    list(APPEND MLAFP8_EXPORTED_TARGETS mla-fp8::${name})
  endif()
endforeach()

install(TARGETS ${mlafp8_install_targets}
  EXPORT mla-fp8Targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT mla-fp8
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT mla-fp8
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/mla-fp8
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT mla-fp8
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/mla-fp8
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT mla-fp8
  FILES_MATCHING PATTERN "*.h.inc"
  PATTERN "CMakeFiles" EXCLUDE)

install(EXPORT mla-fp8Targets
  NAMESPACE mla-fp8::
  DESTINATION ${MLAFP8_INSTALL_CMAKEDIR} COMPONENT mla-fp8)

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/mla-fp8Config.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/mla-fp8Config.cmake
  INSTALL_DESTINATION ${MLAFP8_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/mla-fp8ConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/mla-fp8Config.cmake
  ${PROJECT_BINARY_DIR}/cmake/mla-fp8ConfigVersion.cmake
  DESTINATION ${MLAFP8_INSTALL_CMAKEDIR} COMPONENT mla-fp8)

# Installs into a temporary prefix, builds test/Install/consumer (the README's
# C++ example) against it with Ninja and runs it.
add_test(NAME mla-fp8-install
  COMMAND sh ${PROJECT_SOURCE_DIR}/test/Install/install-test.sh
    ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${CMAKE_COMMAND})
set_tests_properties(mla-fp8-install PROPERTIES TIMEOUT 300 LABELS install)
