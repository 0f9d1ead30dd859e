//===- CacheTest.cpp - the cache key --------------------------------------===//

#include "mla-fp8/AOT/Cache.h"
#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/AOT/KernelSet.h"
#include "mla-fp8/AOT/Options.h"

#include "../KernelDescriptionFields.h"

#include "llvm/Support/Error.h"
#include "gtest/gtest.h"

#include <set>

using namespace mlir::mlafp8;

namespace {

/// The default options: DeepSeek-R1 on both chips.
KernelSetOptions r1Options() {
  llvm::Expected<KernelSetOptions> options = resolveKernelSetOptions({});
  EXPECT_TRUE(static_cast<bool>(options))
      << llvm::toString(options.takeError());
  return *options;
}

std::vector<KernelGroupSpec> r1Groups() {
  llvm::Expected<std::vector<KernelGroupSpec>> groups =
      buildKernelSet(r1Options());
  EXPECT_TRUE(static_cast<bool>(groups)) << llvm::toString(groups.takeError());
  return *groups;
}

/// Every option that changes a kernel changes the key; TP degrees (B is a
/// run-time value) do not.
TEST(CacheKey, CoversEveryOptionThatChangesTheCode) {
  auto keyOf = [](const KernelSetOptions &options) {
    auto groups = buildKernelSet(options);
    EXPECT_TRUE(static_cast<bool>(groups));
    return computeChipCacheKey(*groups, "gfx942");
  };
  KernelSetOptions base = r1Options();
  std::string key = keyOf(base);
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key, keyOf(base));

  KernelSetOptions other = base;
  other.tp = {8};
  EXPECT_EQ(keyOf(other), key);

  std::vector<KernelSetOptions> changed(8, base);
  changed[0].maxM = 512;
  changed[1].weightScale = kernel_abi::WeightScaleMode::PerBatch;
  changed[2].outType = "f16";
  changed[3].groupSize = 64;
  changed[4].dims.kvLoraRank = 256;
  changed[5].dims.vHeadDim = 64;
  changed[6].bias = true;
  changed[7].dims.qkNopeHeadDim = 64;
  std::set<std::string> keys = {key};
  for (const KernelSetOptions &options : changed)
    EXPECT_TRUE(keys.insert(keyOf(options)).second);
  EXPECT_NE(computeChipCacheKey(r1Groups(), "gfx950"), key);
}

// Through the description's field visitor: a field added to
// KernelDescription is covered here without editing this test.
TEST(CacheKey, EveryDescriptionFieldChangesTheKey) {
  std::vector<KernelGroupSpec> groups = r1Groups();
  std::string key = computeChipCacheKey(groups, "gfx942");
  std::set<std::string> keys = {key};
  for (size_t i = 0; i < kernel_abi::kNumKernelDescriptionFields; ++i) {
    std::vector<KernelGroupSpec> changed = groups;
    std::string name;
    changed[0].kernel = test::withFieldChanged(changed[0].kernel, i, name);
    EXPECT_TRUE(keys.insert(computeChipCacheKey(changed, "gfx942")).second)
        << name;
  }
}

TEST(CacheKey, GroupFieldsThatChangeTheCode) {
  std::vector<KernelGroupSpec> groups = r1Groups();
  std::string key = computeChipCacheKey(groups, "gfx942");
  std::vector<KernelGroupSpec> changed = groups;
  changed[0].projection = "q_up";
  EXPECT_NE(computeChipCacheKey(changed, "gfx942"), key);
  changed = groups;
  changed[0].maxM = 2048;
  EXPECT_NE(computeChipCacheKey(changed, "gfx942"), key);
  // A v5 and a v6 build never share an entry.
  changed = groups;
  for (KernelGroupSpec &group : changed)
    group.codeObjectVersion = 6;
  EXPECT_NE(computeChipCacheKey(changed, "gfx942"), key);
  // B is a run-time value.
  changed = groups;
  changed[0].batches = {1};
  changed[0].tp = {128};
  EXPECT_EQ(computeChipCacheKey(changed, "gfx942"), key);
}

TEST(CacheKey, SerializesTheWholeDescription) {
  KernelGroupSpec group = r1Groups()[0];
  EXPECT_EQ(serializeGroupForCache(group),
            "projection=k_up max_m=1024 kernel=" +
                kernel_abi::serialize(group.kernel) + " code_object_version=5");
}

TEST(CacheKey, FingerprintNamesVersionsAndBinary) {
  const std::string &fingerprint = getCompilerFingerprint();
  EXPECT_NE(fingerprint.find("mla-fp8 " + getCompilerVersion().str()),
            std::string::npos);
  EXPECT_NE(fingerprint.find("LLVM 22"), std::string::npos);
  EXPECT_NE(fingerprint.find("binary "), std::string::npos);
}

} // namespace
