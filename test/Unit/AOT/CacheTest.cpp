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

  // Only the largest batch (TP 1: B = 128) gives the rows the ranges are
  // planned for.
  KernelSetOptions other = base;
  other.tp = {1};
  EXPECT_EQ(keyOf(other), key);

  std::vector<KernelSetOptions> changed(8, base);
  // 16 x 128 rows: gfx942 K-up's first range only.
  changed[0].maxM = 16;
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
  // A maxM that keeps fewer ranges; one that keeps the same ranges is the
  // same code.
  changed = groups;
  changed[0].maxM = 16;
  EXPECT_NE(computeChipCacheKey(changed, "gfx942"), key);
  changed[0].maxM = 2048;
  EXPECT_EQ(computeChipCacheKey(changed, "gfx942"), key);
  // A v5 and a v6 build never share an entry.
  changed = groups;
  for (KernelGroupSpec &group : changed)
    group.codeObjectVersion = 6;
  EXPECT_NE(computeChipCacheKey(changed, "gfx942"), key);
  // B is a run-time value: only the largest batch, which with maxM gives
  // the rows the ranges are planned for and so the ranges kept, changes the
  // key, and only when it changes the ranges.
  changed = groups;
  changed[0].batches = {changed[0].batches.front()};
  changed[0].tp = {1};
  EXPECT_EQ(computeChipCacheKey(changed, "gfx942"), key);
  changed[0].batches = {16};
  EXPECT_EQ(computeChipCacheKey(changed, "gfx942"), key);
  // 1024 rows keep only gfx942 K-up's first two ranges (1 to 512, 513 to
  // 2048).
  changed[0].batches = {1};
  EXPECT_NE(computeChipCacheKey(changed, "gfx942"), key);
}

TEST(CacheKey, SerializesTheWholeDescription) {
  KernelGroupSpec group = r1Groups()[0];
  std::string text = serializeGroupForCache(group);
  EXPECT_EQ(text.substr(0, text.find(" tile=")),
            "projection=k_up kernel=" + kernel_abi::serialize(group.kernel) +
                " code_object_version=5");
  // One tile per kernel of the group, with its range of rows.
  EXPECT_NE(text.find(" tile=1-512:16x64x4:m16n16k32:1:1:2 "
                      "tile=513-2048:16x128x4:m16n16k32:1:1:2 tile=2049-8192:"),
            std::string::npos)
      << text;
}

TEST(CacheKey, FingerprintNamesVersionsAndBinary) {
  const std::string &fingerprint = getCompilerFingerprint();
  EXPECT_NE(fingerprint.find("mla-fp8 " + getCompilerVersion().str()),
            std::string::npos);
  EXPECT_NE(fingerprint.find("LLVM 22"), std::string::npos);
  EXPECT_NE(fingerprint.find("binary "), std::string::npos);
}

} // namespace
