//===- AOTUnavailable.cpp - a build without the AOT generator -------------===//
//
// Linked instead of AOT.cpp when the AOT library is not part of the build, so
// that the rest of the embedding API still works.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/CAPI/Embedding.h"

using namespace mlir::mlafp8;

static const char *const kUnavailable =
    "this build of mla-fp8 has no ahead-of-time generator";

bool capi::hasAOT() { return false; }

capi::GenerateResult capi::generateBundle(const GenerateOptions &) {
  GenerateResult result;
  result.error = kUnavailable;
  return result;
}

capi::CompileSpecResult capi::compileSpec(const CompileSpecOptions &) {
  CompileSpecResult result;
  result.error = kUnavailable;
  return result;
}
