//===- Harness.h - the interface of every fuzz harness ----------*- C++ -*-===//
//
// Each harness source is built twice: as a libFuzzer target (fuzz/, clang
// with -fsanitize=fuzzer) and, with test/Regression/ReplayMain.cpp, as a
// replay driver that runs the regression corpus as ordinary tests in every
// build. So a harness says what it did with an input, not only that it did
// not crash: the corpus can require a damaged input to be refused.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_FUZZ_HARNESS_H
#define MLA_FP8_FUZZ_HARNESS_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>

namespace mlir::mlafp8::fuzz {

/// What the code under test did with an input.
struct Outcome {
  /// The input was loaded, parsed or run without an error.
  bool accepted = false;
  /// The error when it was not (one line, as the code under test gave it).
  std::string message;

  static Outcome accept() { return {true, ""}; }
  static Outcome reject(std::string message) {
    return {false, std::move(message)};
  }
};

/// Runs the code under test on `data`. Any crash, sanitizer report, abort or
/// unbounded allocation is a bug of the code under test; errors are returned.
Outcome runInput(llvm::ArrayRef<uint8_t> data);

/// The harness's name, e.g. "manifest"; names the corpus directory.
const char *getHarnessName();

} // namespace mlir::mlafp8::fuzz

#endif // MLA_FP8_FUZZ_HARNESS_H
