//===- KernelSetTest.cpp - presets, kernel sets and cache keys ------------===//

#include "mla-fp8/AOT/KernelSet.h"
#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/AOT/Presets.h"

#include "llvm/Support/Error.h"
#include "gtest/gtest.h"

using namespace mlir::mlafp8;

namespace {

KernelSetOptions r1Options() {
  KernelSetOptions options;
  options.model = "deepseek-r1";
  options.dims = lookupModelPreset("deepseek-r1")->dims;
  return options;
}

std::string errorOf(llvm::Expected<std::vector<KernelGroupSpec>> result) {
  if (result)
    return "";
  return llvm::toString(result.takeError());
}

TEST(Presets, PublishedDimensions) {
  const ModelPreset *r1 = lookupModelPreset("deepseek-r1");
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r1->dims.heads, 128);
  EXPECT_EQ(r1->dims.kvLoraRank, 512);
  EXPECT_EQ(r1->dims.qkNopeHeadDim, 128);
  EXPECT_EQ(r1->dims.vHeadDim, 128);
  EXPECT_EQ(lookupModelPreset("deepseek-v2-lite")->dims.heads, 16);
  EXPECT_EQ(lookupModelPreset("kimi-k2")->dims.heads, 64);
  EXPECT_EQ(getModelPresets().size(), 5u);
  EXPECT_EQ(lookupModelPreset("llama"), nullptr);
  EXPECT_EQ(describeUnknownModel("llama"),
            "unknown model 'llama'; known models: deepseek-v2-lite, "
            "deepseek-v2, deepseek-v3, deepseek-r1, kimi-k2");
}

TEST(KernelSet, DefaultIsTwoShapesPerChip) {
  auto groups = buildKernelSet(r1Options());
  ASSERT_TRUE(static_cast<bool>(groups)) << llvm::toString(groups.takeError());
  ASSERT_EQ(groups->size(), 4u);
  const KernelGroupSpec &kUp = (*groups)[0];
  EXPECT_EQ(kUp.chip, "gfx942");
  EXPECT_EQ(kUp.shape.name, "k_up");
  EXPECT_EQ(kUp.shape.n, 512);
  EXPECT_EQ(kUp.shape.k, 128);
  EXPECT_EQ(kUp.fp8Type, "f8E4M3FNUZ");
  EXPECT_EQ(kUp.shape.batches, (std::vector<int64_t>{128, 64, 32, 16}));
  const KernelGroupSpec &vUp = (*groups)[1];
  EXPECT_EQ(vUp.shape.name, "v_up");
  EXPECT_EQ(vUp.shape.n, 128);
  EXPECT_EQ(vUp.shape.k, 512);
  EXPECT_EQ((*groups)[2].chip, "gfx950");
  EXPECT_EQ((*groups)[2].fp8Type, "f8E4M3FN");
}

TEST(KernelSet, DefaultDegreesThatDoNotDivideAreSkipped) {
  KernelSetOptions options = r1Options();
  options.model = "custom";
  options.dims.heads = 12;
  auto groups = buildKernelSet(options);
  ASSERT_TRUE(static_cast<bool>(groups));
  EXPECT_EQ((*groups)[0].shape.tp, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ((*groups)[0].shape.batches, (std::vector<int64_t>{12, 6, 3}));
}

TEST(KernelSet, ExplicitDegreeThatDoesNotDivideIsAnError) {
  KernelSetOptions options = r1Options();
  options.tp = {3};
  options.tpExplicit = true;
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "tensor-parallel degree 3 does not divide the 128 heads of "
            "deepseek-r1");
}

TEST(KernelSet, RejectsBadOptions) {
  KernelSetOptions options = r1Options();
  options.chips = {"gfx90a"};
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "unknown chip 'gfx90a'; supported chips: gfx942, gfx950");
  options = r1Options();
  options.maxM = 0;
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "--max-m must be between 1 and 2147483647, got 0");
  // Above what the loader accepts: refused before a bundle is written.
  options.maxM = int64_t(1) << 31;
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "--max-m must be between 1 and 2147483647, got 2147483648");
  options = r1Options();
  options.outType = "f32";
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "output type must be bf16 or f16, got 'f32'");
  options = r1Options();
  options.tp = {0};
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "tensor-parallel degree must be at least 1, got 0");
}

TEST(KernelSet, DuplicateDegreesAndChipsCollapse) {
  KernelSetOptions options = r1Options();
  options.tp = {8, 8, 4};
  options.chips = {"gfx942", "gfx942"};
  auto groups = buildKernelSet(options);
  ASSERT_TRUE(static_cast<bool>(groups));
  EXPECT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].shape.batches, (std::vector<int64_t>{16, 32}));
}

TEST(KernelSet, NamesTellOptionsApart) {
  KernelSetOptions options = r1Options();
  options.chips = {"gfx942"};
  std::string base = (*buildKernelSet(options))[0].getBaseName();
  EXPECT_EQ(base, "mla_fp8_k_up_n512_k128_g128_bf16_pt_gfx942");
  options.weightScale = WeightScale::PerBatch;
  EXPECT_EQ((*buildKernelSet(options))[0].getBaseName(),
            "mla_fp8_k_up_n512_k128_g128_bf16_pb_gfx942");
  options.outType = "f16";
  EXPECT_EQ((*buildKernelSet(options))[0].getBaseName(),
            "mla_fp8_k_up_n512_k128_g128_f16_pb_gfx942");
}

TEST(KernelSet, BiasAddsTheBiasVariants) {
  KernelSetOptions options = r1Options();
  options.chips = {"gfx950"};
  options.bias = true;
  auto groups = buildKernelSet(options);
  ASSERT_TRUE(static_cast<bool>(groups));
  ASSERT_EQ(groups->size(), 4u);
  EXPECT_FALSE((*groups)[0].hasBias);
  EXPECT_TRUE((*groups)[2].hasBias);
  EXPECT_EQ((*groups)[2].getBaseName(),
            "mla_fp8_k_up_n512_k128_g128_bf16_pt_bias_gfx950");
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

  std::vector<KernelSetOptions> changed(7, base);
  changed[6].bias = true;
  changed[0].maxM = 512;
  changed[1].weightScale = WeightScale::PerBatch;
  changed[2].outType = "f16";
  changed[3].groupSize = 64;
  changed[4].dims.kvLoraRank = 256;
  changed[5].dims.vHeadDim = 64;
  std::vector<std::string> keys = {key};
  for (const KernelSetOptions &options : changed) {
    std::string k = keyOf(options);
    for (const std::string &seen : keys)
      EXPECT_NE(k, seen);
    keys.push_back(k);
  }
  auto groups = buildKernelSet(base);
  EXPECT_NE(computeChipCacheKey(*groups, "gfx950"), key);
}

TEST(CacheKey, FingerprintNamesVersionsAndBinary) {
  const std::string &fingerprint = getCompilerFingerprint();
  EXPECT_NE(fingerprint.find("mla-fp8 " + getCompilerVersion().str()),
            std::string::npos);
  EXPECT_NE(fingerprint.find("LLVM 22"), std::string::npos);
  EXPECT_NE(fingerprint.find("binary "), std::string::npos);
}

} // namespace
