//===- PeerKernels.h - Find ../shared/peer-kernels or skip ------*- C++ -*-===//
//
// The Triton code objects in ../shared/peer-kernels live outside the
// repository, so a fresh clone does not have them. Tests that need them skip
// with the reason, except where CI=true or MLAFP8_REQUIRE_PEER_KERNELS=1 says
// they must run: there a missing directory fails the test.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_TEST_UNIT_EMULATOR_PEERKERNELS_H
#define MLA_FP8_TEST_UNIT_EMULATOR_PEERKERNELS_H

#include "gtest/gtest.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>

namespace mlir::mlafp8::test {

/// The peer-kernels directory: the source tree's ../shared/peer-kernels.
inline std::string getPeerKernelsDir() { return MLAFP8_PEER_KERNELS_DIR; }

/// Whether the environment makes a missing peer-kernels directory an error.
inline bool arePeerKernelsRequired() {
  const char *ci = std::getenv("CI");
  const char *require = std::getenv("MLAFP8_REQUIRE_PEER_KERNELS");
  return (ci && std::strcmp(ci, "true") == 0) ||
         (require && std::strcmp(require, "1") == 0);
}

/// Whether `path` is a directory.
inline bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace mlir::mlafp8::test

/// Declares `std::string var` holding the peer-kernels directory, or ends the
/// test: skipped with the reason, or failed where the kernels are required.
#define MLAFP8_PEER_KERNELS_DIR_OR_SKIP(var)                                   \
  std::string var = ::mlir::mlafp8::test::getPeerKernelsDir();                 \
  if (!::mlir::mlafp8::test::isDirectory(var)) {                               \
    if (::mlir::mlafp8::test::arePeerKernelsRequired())                        \
      FAIL() << "peer kernels required (CI=true or "                           \
                "MLAFP8_REQUIRE_PEER_KERNELS=1) but "                          \
             << var << " is missing";                                          \
    GTEST_SKIP() << "needs the Triton peer kernels in " << var                 \
                 << " (absent: ../shared is not beside this checkout)";        \
  }

#endif // MLA_FP8_TEST_UNIT_EMULATOR_PEERKERNELS_H
