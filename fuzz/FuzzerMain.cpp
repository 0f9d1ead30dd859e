//===- FuzzerMain.cpp - libFuzzer's entry point for a harness -------------===//

#include "Harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)mlir::mlafp8::fuzz::runInput(llvm::ArrayRef<uint8_t>(data, size));
  return 0;
}
