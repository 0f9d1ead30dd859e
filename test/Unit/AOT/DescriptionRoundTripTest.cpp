//===- DescriptionRoundTripTest.cpp - a description through a bundle ------===//
//
// Every field of a kernel's description goes from the generator through
// manifest.json to the loader's KernelEntry unchanged. The fields are
// visited through the description's field list, so a new field that the
// manifest or the loader forgets fails here.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/Runtime/Bundle.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"

#include <type_traits>

using namespace mlir::mlafp8;

namespace {

/// `value` as the manifest writes it.
template <typename T> llvm::json::Value toManifestValue(const T &value) {
  if constexpr (std::is_same_v<T, kernel_abi::WeightScaleMode>)
    return llvm::StringRef(kernel_abi::stringifyWeightScaleMode(value));
  else
    return value;
}

TEST(DescriptionRoundTrip, EveryFieldReachesTheManifestAndTheLoader) {
  llvm::SmallString<128> root;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("mlafp8-roundtrip", root));
  std::string dir = (root + "/bundle").str();
  BundleOptions options;
  options.kernels.dims = lookupModelPreset("deepseek-r1")->dims;
  options.kernels.chips = {"gfx950"};
  options.kernels.tp = {8};
  options.kernels.maxM = 16;
  // Values other than the defaults, so a field the loader leaves at its
  // default shows.
  options.kernels.weightScale = kernel_abi::WeightScaleMode::PerBatch;
  options.kernels.outType = "f16";
  options.kernels.groupSize = 64;
  options.kernels.bias = true;
  options.outputDir = dir;
  options.jobs = 1;
  llvm::Expected<BundleResult> generated = generateBundle(options);
  ASSERT_TRUE(static_cast<bool>(generated))
      << llvm::toString(generated.takeError());

  llvm::Expected<runtime::LoadedBundle> loaded = runtime::loadBundle(dir);
  ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
  llvm::Expected<llvm::json::Value> manifest =
      llvm::json::parse(generated->manifest);
  ASSERT_TRUE(static_cast<bool>(manifest));
  const llvm::json::Object *chip =
      manifest->getAsObject()->getArray("chips")->front().getAsObject();
  const llvm::json::Array &kernels = *chip->getArray("kernels");

  const std::vector<BundleKernel> &written = generated->chips.front().kernels;
  const std::vector<runtime::KernelEntry> &read = loaded->chips.front().kernels;
  ASSERT_EQ(written.size(), kernels.size());
  ASSERT_EQ(read.size(), kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    const kernel_abi::KernelDescription &description = written[i].group.kernel;
    EXPECT_EQ(static_cast<const kernel_abi::KernelDescription &>(read[i]),
              description)
        << kernel_abi::serialize(read[i]) << " vs "
        << kernel_abi::serialize(description);
    const llvm::json::Object &object = *kernels[i].getAsObject();
    kernel_abi::forEachField(
        description, [&](const char *name, const auto &value) {
          // The chip is named once, by the kernel's chip object.
          const llvm::json::Value *inManifest = llvm::StringRef(name) == "chip"
                                                    ? chip->get("chip")
                                                    : object.get(name);
          ASSERT_NE(inManifest, nullptr) << name;
          EXPECT_EQ(*inManifest, toManifestValue(value)) << name;
        });
  }
  llvm::sys::fs::remove_directories(root);
}

} // namespace
