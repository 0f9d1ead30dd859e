//===- OptionsTest.cpp - one resolution of the kernel-set options ---------===//

#include "mla-fp8/AOT/Options.h"

#include "llvm/Support/Error.h"
#include "gtest/gtest.h"

using namespace mlir::mlafp8;

namespace {

std::string errorOf(const KernelSetRequest &request) {
  llvm::Expected<KernelSetOptions> options = resolveKernelSetOptions(request);
  if (options)
    return "";
  return llvm::toString(options.takeError());
}

TEST(ResolveOptions, Defaults) {
  llvm::Expected<KernelSetOptions> options = resolveKernelSetOptions({});
  ASSERT_TRUE(static_cast<bool>(options))
      << llvm::toString(options.takeError());
  EXPECT_EQ(options->model, "deepseek-r1");
  EXPECT_EQ(options->dims.heads, 128);
  EXPECT_EQ(options->tp, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_FALSE(options->tpExplicit);
  EXPECT_EQ(options->chips, (std::vector<std::string>{"gfx942", "gfx950"}));
  EXPECT_EQ(options->weightScale, kernel_abi::WeightScaleMode::PerTensor);
  EXPECT_EQ(options->groupSize, 128);
  EXPECT_FALSE(options->bias);
  EXPECT_EQ(options->inTypes, (std::vector<std::string>{"bf16", "f16"}));
  EXPECT_EQ(options->codeObjectVersion, 5u);
}

TEST(ResolveOptions, PresetOverridesAndNames) {
  KernelSetRequest request;
  request.model = "kimi-k2";
  request.kvLoraRank = 256;
  request.tp = {8};
  request.chips = {"gfx950"};
  request.weightScale = "per-batch";
  request.outType = "f16";
  request.groupSize = 64;
  request.bias = true;
  request.inTypes = {"f16"};
  request.codeObjectVersion = 6;
  llvm::Expected<KernelSetOptions> options = resolveKernelSetOptions(request);
  ASSERT_TRUE(static_cast<bool>(options))
      << llvm::toString(options.takeError());
  EXPECT_EQ(options->model, "kimi-k2-custom");
  EXPECT_EQ(options->dims.heads, 64);
  EXPECT_EQ(options->dims.kvLoraRank, 256);
  EXPECT_TRUE(options->tpExplicit);
  EXPECT_EQ(options->weightScale, kernel_abi::WeightScaleMode::PerBatch);
  EXPECT_EQ(options->outType, "f16");
  EXPECT_EQ(options->groupSize, 64);
  EXPECT_TRUE(options->bias);
  EXPECT_EQ(options->inTypes, (std::vector<std::string>{"f16"}));
  EXPECT_EQ(options->codeObjectVersion, 6u);
  request.model.reset();
  EXPECT_EQ(resolveKernelSetOptions(request)->model, "custom");
  request.weightScale = "per_tensor";
  EXPECT_EQ(resolveKernelSetOptions(request)->weightScale,
            kernel_abi::WeightScaleMode::PerTensor);
}

TEST(ResolveOptions, RejectsEachBadOptionByName) {
  KernelSetRequest request;
  request.model = "llama";
  EXPECT_EQ(errorOf(request),
            "unknown model 'llama'; known models: deepseek-v2-lite, "
            "deepseek-v2, deepseek-v3, deepseek-r1, deepseek-v3.2, kimi-k2, "
            "kimi-k2.5, kimi-k3, kimi-linear-48b, glm-5, glm-4.7-flash, "
            "minicpm3-4b, deepseek-v4-pro, deepseek-v4-flash");
  request = {};
  request.heads = 0;
  EXPECT_EQ(errorOf(request), "heads must be between 1 and 65536, got 0");
  request = {};
  request.kvLoraRank = int64_t(1) << 62;
  EXPECT_EQ(errorOf(request), "kv_lora_rank must be between 1 and 65536, got "
                              "4611686018427387904");
  request = {};
  request.qkNopeHeadDim = -1;
  EXPECT_EQ(errorOf(request),
            "qk_nope_head_dim must be between 1 and 65536, got -1");
  request = {};
  request.vHeadDim = 65537;
  EXPECT_EQ(errorOf(request), "v_head_dim must be between 1 and 65536, got "
                              "65537");
  request = {};
  request.maxM = 0;
  EXPECT_EQ(errorOf(request), "max_m must be between 1 and 2147483647, got 0");
  request = {};
  request.weightScale = "per_row";
  EXPECT_EQ(errorOf(request),
            "weight_scale must be per_tensor or per_batch, got 'per_row'");
  request = {};
  request.outType = "f32";
  EXPECT_EQ(errorOf(request), "out_type must be bf16 or f16, got 'f32'");
  request = {};
  request.inTypes = {"bf16", "fp16"};
  EXPECT_EQ(errorOf(request), "in_type must be bf16 or f16, got 'fp16'");
  // Not narrowed before the check: 2^32 + 5 is not 5.
  for (int64_t version : {int64_t(4), int64_t(7), (int64_t(1) << 32) + 5}) {
    request = {};
    request.codeObjectVersion = version;
    EXPECT_EQ(errorOf(request),
              "code_object_version must be 5 (ROCm 6.0 and later) or 6 (ROCm "
              "6.3 and later), got " +
                  std::to_string(version));
  }
  request = {};
  request.groupSize = int64_t(1) << 20;
  EXPECT_EQ(errorOf(request), "group_size must be at most 65536, got 1048576");
  request = {};
  request.chips = {"gfx90a"};
  EXPECT_EQ(errorOf(request),
            "unknown chip 'gfx90a'; supported chips: gfx942, gfx950");
  request = {};
  request.tp = {3};
  EXPECT_EQ(errorOf(request), "tensor-parallel degree 3 does not divide the "
                              "128 heads of deepseek-r1");
  request = {};
  request.tp = {0};
  EXPECT_EQ(errorOf(request),
            "tensor-parallel degree must be at least 1, got 0");
}

// Group sizes the tile table does not support fail when the kernel set is
// built, before anything is compiled, with the tile selection's message.
TEST(ResolveOptions, GroupSizeIsTheTileTablesToAccept) {
  KernelSetRequest request;
  request.groupSize = 96;
  llvm::Expected<KernelSetOptions> options = resolveKernelSetOptions(request);
  ASSERT_TRUE(static_cast<bool>(options));
  llvm::Expected<std::vector<KernelGroupSpec>> groups =
      buildKernelSet(*options);
  ASSERT_FALSE(static_cast<bool>(groups));
  EXPECT_EQ(llvm::toString(groups.takeError()),
            "group size must be a power of two of at least 16, got 96");
}

} // namespace
