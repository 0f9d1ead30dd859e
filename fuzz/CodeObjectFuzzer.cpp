//===- CodeObjectFuzzer.cpp - the code-object readers on ELF bytes --------===//
//
// Input: the bytes of an AMDGPU code object. Both readers see them: Target's
// (the metadata note, for reports and the manifest) and the emulator's (the
// loaded image, the kernel descriptors and the note). The input is accepted
// when both read it. Seeds: the .hsaco files of a bundle.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include "mla-fp8/Emulator/CodeObject.h"
#include "mla-fp8/Target/CodeObject.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir::mlafp8;

namespace mlir::mlafp8::fuzz {

const char *getHarnessName() { return "codeobject"; }

Outcome runInput(llvm::ArrayRef<uint8_t> data) {
  std::string errors;
  llvm::Expected<CodeObjectMetadata> metadata =
      readCodeObjectMetadata(llvm::toStringRef(data));
  if (!metadata) {
    errors = "Target: " + llvm::toString(metadata.takeError());
  } else {
    // What the reports do with the result: look every kernel up by name.
    for (const KernelMetadata &kernel : metadata->kernels)
      (void)metadata->findKernel(kernel.name);
  }

  auto codeObject = emu::CodeObject::fromBytes(data);
  if (!codeObject) {
    errors += (errors.empty() ? "" : "; ") + std::string("Emulator: ") +
              llvm::toString(codeObject.takeError());
  } else {
    for (const emu::KernelInfo &kernel : (*codeObject)->getKernels()) {
      llvm::Expected<const emu::KernelInfo &> found =
          (*codeObject)->getKernel(kernel.name);
      if (!found)
        llvm::consumeError(found.takeError());
    }
  }
  if (!errors.empty())
    return Outcome::reject(errors);
  return Outcome::accept();
}

} // namespace mlir::mlafp8::fuzz
