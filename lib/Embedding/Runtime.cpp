//===- Runtime.cpp - bundle loading in plain C++ types --------------------===//

#include "mla-fp8/Embedding/Runtime.h"

#include "mla-fp8/Runtime/Bundle.h"

using namespace mlir::mlafp8;

std::shared_ptr<const runtime::LoadedBundle>
embedding::loadBundle(const std::string &dir, std::string &error) {
  llvm::Expected<runtime::LoadedBundle> bundle = runtime::loadBundle(dir);
  if (!bundle) {
    error = llvm::toString(bundle.takeError());
    return nullptr;
  }
  return std::make_shared<const runtime::LoadedBundle>(std::move(*bundle));
}
