# MLAFP8_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on every
# target of the project (clang). MLAFP8_FUZZ adds libFuzzer's coverage
# instrumentation and builds the harnesses under fuzz/.
#
# libLLVM.so and libMLIR.so stay uninstrumented: ASan still sees their heap
# (it replaces malloc and operator new process-wide) but not their stack or
# globals. vptr checks need the RTTI of every class they meet, which LLVM's
# classes do not all have, so they are off. Run with
# ASAN_OPTIONS=allow_user_poisoning=0:use_sigaltstack=0 (build.sh and
# bench/fuzz.sh do): the poisoning that LLVM's headers compile into our code
# does not match the uninstrumented allocations it meets, and LLVM installs
# its own alternate signal stacks in the threads it starts.

option(MLAFP8_SANITIZE "Build with -fsanitize=address,undefined (clang)" OFF)
option(MLAFP8_FUZZ
  "Build the libFuzzer harnesses of fuzz/ (clang; implies MLAFP8_SANITIZE)" OFF)

if(MLAFP8_FUZZ)
  set(MLAFP8_SANITIZE ON)
endif()

if(MLAFP8_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MLAFP8_SANITIZE and MLAFP8_FUZZ need clang "
      "(e.g. -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_C_COMPILER=clang-22)")
  endif()
  add_compile_options(-fsanitize=address,undefined
    -fno-sanitize-recover=undefined -fno-sanitize=vptr
    -fno-omit-frame-pointer -gline-tables-only)
  add_link_options(-fsanitize=address,undefined)
endif()

if(MLAFP8_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
