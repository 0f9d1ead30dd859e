//===- bundle-load.cpp - time loading a bundle and finding kernels --------===//
//
// What a server does at start-up: read manifest.json and the code objects
// (checking their hashes), then look up the kernel for each shape and M.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Runtime/Bundle.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

using namespace mlir::mlafp8::runtime;

int main(int argc, char **argv) {
  if (argc < 2) {
    llvm::errs() << "usage: mla-fp8-bench-load <bundle-dir> [runs]\n";
    return 2;
  }
  int runs = argc > 2 ? std::atoi(argv[2]) : 20;
  std::vector<double> loadMs, lookupUs;
  size_t found = 0;
  for (int run = 0; run < std::max(runs, 1); ++run) {
    auto start = std::chrono::steady_clock::now();
    llvm::Expected<LoadedBundle> bundle = loadBundle(argv[1]);
    auto loaded = std::chrono::steady_clock::now();
    if (!bundle) {
      llvm::errs() << "error: " << llvm::toString(bundle.takeError()) << "\n";
      return 1;
    }
    // Every chip and projection, M = 1..1024 at B = 16: the lookups a
    // warm-up does.
    found = 0;
    for (const LoadedChip &chip : bundle->chips)
      for (auto [n, k] : {std::pair<int64_t, int64_t>{512, 128}, {128, 512}})
        for (int64_t m = 1; m <= 1024; ++m)
          found += bundle->findKernel(chip.chip, n, k, m, 16) != nullptr;
    auto done = std::chrono::steady_clock::now();
    loadMs.push_back(
        std::chrono::duration<double, std::milli>(loaded - start).count());
    lookupUs.push_back(
        std::chrono::duration<double, std::micro>(done - loaded).count() /
        std::max<size_t>(found, 1));
  }
  std::sort(loadMs.begin(), loadMs.end());
  std::sort(lookupUs.begin(), lookupUs.end());
  llvm::outs() << llvm::format("load: median %.2f ms, min %.2f ms, max %.2f ms "
                               "over %zu runs\n",
                               loadMs[loadMs.size() / 2], loadMs.front(),
                               loadMs.back(), loadMs.size());
  llvm::outs() << llvm::format("lookup: median %.3f us per kernel (%zu "
                               "lookups per run)\n",
                               lookupUs[lookupUs.size() / 2], found);
  return found ? 0 : 1;
}
