//===- KernelSetTest.cpp - presets and kernel sets ------------------------===//

#include "mla-fp8/AOT/KernelSet.h"
#include "mla-fp8/AOT/Presets.h"

#include "llvm/Support/Error.h"
#include "gtest/gtest.h"

#include <algorithm>

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
  EXPECT_EQ(lookupModelPreset("kimi-k2.5")->dims.heads, 64);
  EXPECT_EQ(lookupModelPreset("kimi-k3")->dims.heads, 96);
  EXPECT_EQ(lookupModelPreset("kimi-linear-48b")->dims.heads, 32);
  EXPECT_EQ(lookupModelPreset("deepseek-v3.2")->dims.heads, 128);
  // GLM: K-up's K = 192 (one and a half groups of 128), V-up's N = 256.
  const ModelPreset *glm = lookupModelPreset("glm-5");
  ASSERT_NE(glm, nullptr);
  EXPECT_EQ(glm->dims.heads, 64);
  EXPECT_EQ(glm->dims.kvLoraRank, 512);
  EXPECT_EQ(glm->dims.qkNopeHeadDim, 192);
  EXPECT_EQ(glm->dims.vHeadDim, 256);
  EXPECT_EQ(lookupModelPreset("glm-4.7-flash")->dims.heads, 20);
  // MiniCPM3: K-up's K = 64, less than one group.
  const ModelPreset *minicpm = lookupModelPreset("minicpm3-4b");
  ASSERT_NE(minicpm, nullptr);
  EXPECT_EQ(minicpm->dims.heads, 40);
  EXPECT_EQ(minicpm->dims.kvLoraRank, 256);
  EXPECT_EQ(minicpm->dims.qkNopeHeadDim, 64);
  EXPECT_EQ(minicpm->dims.vHeadDim, 64);
  // DeepSeek-V4: no absorb bmms; 128 heads of 512 in 16 output groups, each
  // projected to 1024.
  const ModelPreset *v4 = lookupModelPreset("deepseek-v4-pro");
  ASSERT_NE(v4, nullptr);
  EXPECT_FALSE(v4->dims.hasAbsorbBmms());
  EXPECT_EQ(v4->dims.heads, 128);
  EXPECT_EQ(v4->dims.outputGroups, 16);
  EXPECT_EQ(v4->dims.outputLoraRank, 1024);
  EXPECT_EQ(v4->dims.headDim, 512);
  EXPECT_EQ(lookupModelPreset("deepseek-v4-flash")->dims.outputGroups, 8);
  EXPECT_EQ(getModelPresets().size(), 14u);
  // Every preset names its source and usual TP degrees, each dividing the
  // heads.
  for (const ModelPreset &preset : getModelPresets()) {
    EXPECT_FALSE(preset.source.empty()) << preset.name.str();
    EXPECT_FALSE(preset.usualTp.empty()) << preset.name.str();
    for (int64_t tp : preset.usualTp)
      EXPECT_TRUE(preset.dims.splitsOver(tp))
          << preset.name.str() << " TP " << tp;
  }
  EXPECT_EQ(lookupModelPreset("llama"), nullptr);
  EXPECT_EQ(describeModelPresets(),
            "deepseek-v2-lite (bf16), deepseek-v2 (bf16), deepseek-v3 (bf16), "
            "deepseek-r1 (bf16), deepseek-v3.2 (bf16), kimi-k2 (bf16), "
            "kimi-k2.5 (bf16), kimi-k3 (bf16), kimi-linear-48b (bf16), "
            "glm-5 (bf16), glm-4.7-flash (bf16), minicpm3-4b (bf16), "
            "deepseek-v4-pro (bf16), deepseek-v4-flash (bf16)");
  EXPECT_EQ(describeUnknownModel("llama"),
            "unknown model 'llama'; known models: deepseek-v2-lite, "
            "deepseek-v2, deepseek-v3, deepseek-r1, deepseek-v3.2, kimi-k2, "
            "kimi-k2.5, kimi-k3, kimi-linear-48b, glm-5, glm-4.7-flash, "
            "minicpm3-4b, deepseek-v4-pro, deepseek-v4-flash");
  // The table: one line per preset after the header, each with the
  // projections' shapes.
  std::string table = formatModelPresetTable();
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 15);
  EXPECT_NE(table.find("glm-5"), std::string::npos);
  EXPECT_NE(table.find("512,192     256,512     -"), std::string::npos)
      << table;
  EXPECT_NE(table.find("-           -           16,1024,4096"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("zai-org/GLM-5"), std::string::npos);
}

TEST(KernelSet, DefaultIsTwoShapesPerChipAndInType) {
  auto groups = buildKernelSet(r1Options());
  ASSERT_TRUE(static_cast<bool>(groups)) << llvm::toString(groups.takeError());
  ASSERT_EQ(groups->size(), 8u);
  const KernelGroupSpec &kUp = (*groups)[0];
  EXPECT_EQ(kUp.kernel.chip, "gfx942");
  EXPECT_EQ(kUp.projection, "k_up");
  EXPECT_EQ(kUp.kernel.n, 512);
  EXPECT_EQ(kUp.kernel.k, 128);
  EXPECT_EQ(kUp.kernel.fp8Type, "f8E4M3FNUZ");
  EXPECT_EQ(kUp.batches, (std::vector<int64_t>{128, 64, 32, 16}));
  const KernelGroupSpec &vUp = (*groups)[1];
  EXPECT_EQ(vUp.projection, "v_up");
  EXPECT_EQ(vUp.kernel.n, 128);
  EXPECT_EQ(vUp.kernel.k, 512);
  EXPECT_EQ(kUp.kernel.inType, "bf16");
  EXPECT_EQ(vUp.kernel.inType, "bf16");
  // Then the same shapes for f16 activations, then the next chip.
  EXPECT_EQ((*groups)[2].kernel.inType, "f16");
  EXPECT_EQ((*groups)[2].projection, "k_up");
  EXPECT_EQ((*groups)[3].kernel.inType, "f16");
  EXPECT_EQ((*groups)[4].kernel.chip, "gfx950");
  EXPECT_EQ((*groups)[4].kernel.fp8Type, "f8E4M3FN");
  for (const KernelGroupSpec &group : *groups)
    EXPECT_EQ(group.codeObjectVersion, 5u);
}

TEST(KernelSet, InTypesAndCodeObjectVersion) {
  KernelSetOptions options = r1Options();
  options.chips = {"gfx942"};
  options.inTypes = {"f16", "f16"};
  options.codeObjectVersion = 6;
  auto groups = buildKernelSet(options);
  ASSERT_TRUE(static_cast<bool>(groups)) << llvm::toString(groups.takeError());
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].kernel.inType, "f16");
  EXPECT_EQ((*groups)[0].codeObjectVersion, 6u);
  EXPECT_EQ((*groups)[0].getBaseName(),
            "mla_fp8_k_up_n512_k128_g128_xf16_bf16_pt_gfx942");
  options.inTypes = {"bf16", "f32"};
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "in_type must be bf16 or f16, got 'f32'");
  options.inTypes = {};
  EXPECT_EQ(errorOf(buildKernelSet(options)), "no in_type given");
  options.inTypes = {"bf16"};
  options.codeObjectVersion = 4;
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "code_object_version must be 5 (ROCm 6.0 and later) or 6 (ROCm "
            "6.3 and later), got 4");
}

TEST(KernelSet, DefaultDegreesThatDoNotDivideAreSkipped) {
  KernelSetOptions options = r1Options();
  options.model = "custom";
  options.dims.heads = 12;
  auto groups = buildKernelSet(options);
  ASSERT_TRUE(static_cast<bool>(groups));
  EXPECT_EQ((*groups)[0].tp, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ((*groups)[0].batches, (std::vector<int64_t>{12, 6, 3}));
}

TEST(KernelSet, ProjectionsOfEachModel) {
  auto names = [](const ModelDims &dims) {
    std::string text;
    for (const ModelProjection &p : getModelProjections(dims))
      text += (text.empty() ? "" : " ") + p.name.str() + "(" +
              std::to_string(p.batchAtTp1) + "," + std::to_string(p.n) + "," +
              std::to_string(p.k) + ")";
    return text;
  };
  EXPECT_EQ(names(lookupModelPreset("glm-5")->dims),
            "k_up(64,512,192) v_up(64,256,512)");
  EXPECT_EQ(names(lookupModelPreset("deepseek-v4-pro")->dims),
            "wo_a(16,1024,4096)");
  EXPECT_EQ(names(lookupModelPreset("deepseek-v4-flash")->dims),
            "wo_a(8,1024,4096)");
  ModelDims both = lookupModelPreset("deepseek-r1")->dims;
  both.outputGroups = 16;
  both.outputLoraRank = 1024;
  both.headDim = 512;
  EXPECT_EQ(names(both), "k_up(128,512,128) v_up(128,128,512) "
                         "wo_a(16,1024,4096)");
}

TEST(KernelSet, OutputGroupsSplitOverTheRanks) {
  // DeepSeek-V4-Pro's wo_a: B = 16 / TP, one group per chip and in-type.
  KernelSetOptions options;
  options.model = "deepseek-v4-pro";
  options.dims = lookupModelPreset("deepseek-v4-pro")->dims;
  options.chips = {"gfx950"};
  options.inTypes = {"bf16"};
  auto groups = buildKernelSet(options);
  ASSERT_TRUE(static_cast<bool>(groups)) << llvm::toString(groups.takeError());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].projection, "wo_a");
  EXPECT_EQ((*groups)[0].kernel.n, 1024);
  EXPECT_EQ((*groups)[0].kernel.k, 4096);
  EXPECT_EQ((*groups)[0].batches, (std::vector<int64_t>{16, 8, 4, 2}));
  EXPECT_EQ((*groups)[0].tp, (std::vector<int64_t>{1, 2, 4, 8}));
  // A degree must split the output groups too: 16 heads of V4-Flash's 64
  // would divide, its 8 groups do not.
  options.dims = lookupModelPreset("deepseek-v4-flash")->dims;
  options.model = "deepseek-v4-flash";
  options.tp = {16};
  options.tpExplicit = true;
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "tensor-parallel degree 16 does not divide the 64 heads and 8 "
            "output groups of deepseek-v4-flash");
  // Groups that do not divide the heads, and a model with neither kind of
  // bmm, are refused.
  options.tp = {1};
  options.dims.outputGroups = 3;
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "o_groups 3 does not divide the 64 heads");
  options.dims = ModelDims{64, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "kv_lora_rank must be between 1 and 65536, got 0");
  options.dims = ModelDims{64, 0, 0, 0, 8, 1024, 0};
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "head_dim must be between 1 and 65536, got 0");
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
            "max_m must be between 1 and 2147483647, got 0");
  // Above what the loader accepts: refused before a bundle is written.
  options.maxM = int64_t(1) << 31;
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "max_m must be between 1 and 2147483647, got 2147483648");
  options = r1Options();
  options.outType = "f32";
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "out_type must be bf16 or f16, got 'f32'");
  options = r1Options();
  options.tp = {0};
  EXPECT_EQ(errorOf(buildKernelSet(options)),
            "tensor-parallel degree must be at least 1, got 0");
}

TEST(KernelSet, DuplicateDegreesAndChipsCollapse) {
  KernelSetOptions options = r1Options();
  options.tp = {8, 8, 4};
  options.chips = {"gfx942", "gfx942"};
  options.inTypes = {"bf16", "bf16"};
  auto groups = buildKernelSet(options);
  ASSERT_TRUE(static_cast<bool>(groups));
  EXPECT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].batches, (std::vector<int64_t>{16, 32}));
}

TEST(KernelSet, NamesTellOptionsApart) {
  KernelSetOptions options = r1Options();
  options.chips = {"gfx942"};
  std::string base = (*buildKernelSet(options))[0].getBaseName();
  EXPECT_EQ(base, "mla_fp8_k_up_n512_k128_g128_bf16_pt_gfx942");
  options.weightScale = kernel_abi::WeightScaleMode::PerBatch;
  EXPECT_EQ((*buildKernelSet(options))[0].getBaseName(),
            "mla_fp8_k_up_n512_k128_g128_bf16_pb_gfx942");
  options.outType = "f16";
  EXPECT_EQ((*buildKernelSet(options))[0].getBaseName(),
            "mla_fp8_k_up_n512_k128_g128_f16_pb_gfx942");
}

TEST(KernelSet, BiasAddsTheBiasVariants) {
  KernelSetOptions options = r1Options();
  options.chips = {"gfx950"};
  options.inTypes = {"bf16"};
  options.bias = true;
  auto groups = buildKernelSet(options);
  ASSERT_TRUE(static_cast<bool>(groups));
  ASSERT_EQ(groups->size(), 4u);
  EXPECT_FALSE((*groups)[0].kernel.hasBias);
  EXPECT_TRUE((*groups)[2].kernel.hasBias);
  EXPECT_EQ((*groups)[2].getBaseName(),
            "mla_fp8_k_up_n512_k128_g128_bf16_pt_bias_gfx950");
}

} // namespace
