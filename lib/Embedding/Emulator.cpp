//===- Emulator.cpp - bundle kernels on the emulator in plain C++ types ---===//

#include "mla-fp8/Embedding/Runtime.h"

#include "mla-fp8/Runtime/EmulatorLaunch.h"

using namespace mlir::mlafp8;

struct embedding::BundleEmulator::Launcher {
  runtime::EmulatorLauncher launcher;
};

embedding::BundleEmulator::BundleEmulator(
    std::shared_ptr<const runtime::LoadedBundle> bundle)
    : bundle(std::move(bundle)), launcher(std::make_unique<Launcher>()) {}

embedding::BundleEmulator::~BundleEmulator() = default;

/// Whether `kernel` is one of `bundle`'s entries: the launcher caches decoded
/// code objects by address, which only stays sound while the bundle that
/// owns them is alive.
static bool ownsKernel(const runtime::LoadedBundle &bundle,
                       const runtime::KernelEntry &kernel) {
  for (const runtime::LoadedChip &chip : bundle.chips)
    if (!chip.kernels.empty() && &kernel >= chip.kernels.data() &&
        &kernel < chip.kernels.data() + chip.kernels.size())
      return true;
  return false;
}

bool embedding::BundleEmulator::launch(const runtime::KernelEntry &kernel,
                                       const runtime::PrequantBmmCall &call,
                                       unsigned threads, uint64_t &instructions,
                                       std::string &error) {
  if (!ownsKernel(*bundle, kernel)) {
    error = "kernel '" + kernel.symbol + "' is not part of this bundle";
    return false;
  }
  auto result = launcher->launcher.launch(kernel, call, threads);
  if (!result) {
    error = llvm::toString(result.takeError());
    return false;
  }
  instructions = result->instructions;
  return true;
}
