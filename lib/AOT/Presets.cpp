//===- Presets.cpp - MLA model presets ------------------------------------===//

#include "mla-fp8/AOT/Presets.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir::mlafp8;

// heads, kv_lora_rank, qk_nope_head_dim, v_head_dim (or, for DeepSeek-V4,
// o_groups, o_lora_rank and head_dim) and torch_dtype as the models' configs
// publish them (every one says bfloat16); `source` names the config. The
// usual TP degrees are those of one 8-GPU node that divide the heads: only 8
// for the models too large for fewer GPUs, 1 for the 4B model.
static const int64_t kTp1To8[] = {1, 2, 4, 8};
static const int64_t kTp1[] = {1};
static const int64_t kTp8[] = {8};
static const int64_t kTp1To4[] = {1, 2, 4};
static const ModelPreset kPresets[] = {
    {"deepseek-v2-lite",
     {16, 512, 128, 128},
     "bf16",
     kTp1To8,
     "deepseek-ai/DeepSeek-V2-Lite"},
    {"deepseek-v2",
     {128, 512, 128, 128},
     "bf16",
     kTp8,
     "deepseek-ai/DeepSeek-V2"},
    {"deepseek-v3",
     {128, 512, 128, 128},
     "bf16",
     kTp8,
     "deepseek-ai/DeepSeek-V3"},
    {"deepseek-r1",
     {128, 512, 128, 128},
     "bf16",
     kTp8,
     "deepseek-ai/DeepSeek-R1"},
    {"deepseek-v3.2",
     {128, 512, 128, 128},
     "bf16",
     kTp8,
     "deepseek-ai/DeepSeek-V3.2"},
    {"kimi-k2",
     {64, 512, 128, 128},
     "bf16",
     kTp8,
     "moonshotai/Kimi-K2-Instruct"},
    {"kimi-k2.5",
     {64, 512, 128, 128},
     "bf16",
     kTp8,
     "moonshotai/Kimi-K2.5 (text_config)"},
    {"kimi-k3",
     {96, 512, 128, 128},
     "bf16",
     kTp8,
     "moonshotai/Kimi-K3 (text_config; its MLA layers)"},
    {"kimi-linear-48b",
     {32, 512, 128, 128},
     "bf16",
     kTp1To8,
     "moonshotai/Kimi-Linear-48B-A3B-Instruct (its MLA layers)"},
    {"glm-5", {64, 512, 192, 256}, "bf16", kTp8, "zai-org/GLM-5"},
    {"glm-4.7-flash",
     {20, 512, 192, 256},
     "bf16",
     kTp1To4,
     "zai-org/GLM-4.7-Flash"},
    {"minicpm3-4b",
     {40, 256, 64, 64},
     "bf16",
     kTp1,
     "openbmb/MiniCPM3-4B (v_head_dim: hidden_size / heads)"},
    // No absorb bmms (one shared 512-wide KV head); the attention output's
    // 128 * 512 values split into 16 groups, each projected by its own wo_a:
    // B = 16 / TP, N = 1024, K = 4096.
    {"deepseek-v4-pro",
     {128, 0, 0, 0, 16, 1024, 512},
     "bf16",
     kTp8,
     "deepseek-ai/DeepSeek-V4-Pro"},
    {"deepseek-v4-flash",
     {64, 0, 0, 0, 8, 1024, 512},
     "bf16",
     kTp1To8,
     "deepseek-ai/DeepSeek-V4-Flash"},
};

static const llvm::StringRef kProjectionNames[] = {"k_up", "v_up", "wo_a"};

llvm::ArrayRef<llvm::StringRef> mlir::mlafp8::getProjectionNames() {
  return kProjectionNames;
}

llvm::SmallVector<ModelProjection, 3>
mlir::mlafp8::getModelProjections(const ModelDims &dims) {
  llvm::SmallVector<ModelProjection, 3> projections;
  // K-up: q_nope (H, M, P) x W_UK (H, L, P); V-up: o (H, M, L) x W_UV (H,
  // V, L); wo_a: o (G, M, H * D / G) x wo_a (G, R, H * D / G).
  if (dims.hasAbsorbBmms()) {
    projections.push_back(
        {"k_up", dims.kvLoraRank, dims.qkNopeHeadDim, dims.heads});
    projections.push_back({"v_up", dims.vHeadDim, dims.kvLoraRank, dims.heads});
  }
  if (dims.hasOutputGroups())
    projections.push_back({"wo_a", dims.outputLoraRank,
                           dims.heads * dims.headDim / dims.outputGroups,
                           dims.outputGroups});
  return projections;
}

llvm::ArrayRef<ModelPreset> mlir::mlafp8::getModelPresets() { return kPresets; }

const ModelPreset *mlir::mlafp8::lookupModelPreset(llvm::StringRef name) {
  const ModelPreset *it = llvm::find_if(
      kPresets, [&](const ModelPreset &p) { return p.name == name; });
  return it == std::end(kPresets) ? nullptr : it;
}

std::string mlir::mlafp8::describeModelPresets(llvm::StringRef separator) {
  std::string text;
  for (const ModelPreset &preset : kPresets) {
    if (&preset != kPresets)
      text += separator;
    text += preset.name.str() + " (" + preset.usualInType.str() + ")";
  }
  return text;
}

std::string mlir::mlafp8::formatModelPresetTable() {
  const char *format = "{0,-17} {1,5} {2,7} {3,4} {4,3}  {5,-11} {6,-11} "
                       "{7,-14} {8,-5} {9,-10} {10}\n";
  std::string text =
      llvm::formatv(format, "model", "heads", "kv_lora", "nope", "v",
                    "K-up (N,K)", "V-up (N,K)", "wo_a (G,N,K)", "dtype",
                    "usual TP", "source config")
          .str();
  // A dimension or projection the model does not have is "-".
  auto dim = [](int64_t value) {
    return value ? std::to_string(value) : std::string("-");
  };
  for (const ModelPreset &preset : kPresets) {
    const ModelDims &d = preset.dims;
    std::string tp;
    for (int64_t degree : preset.usualTp)
      tp += (tp.empty() ? "" : ",") + std::to_string(degree);
    std::string shapes[3] = {"-", "-", "-"};
    for (const ModelProjection &p : getModelProjections(d)) {
      size_t column = llvm::find(kProjectionNames, p.name) - kProjectionNames;
      shapes[column] =
          column == 2
              ? llvm::formatv("{0},{1},{2}", p.batchAtTp1, p.n, p.k).str()
              : llvm::formatv("{0},{1}", p.n, p.k).str();
    }
    text += llvm::formatv(format, preset.name, d.heads, dim(d.kvLoraRank),
                          dim(d.qkNopeHeadDim), dim(d.vHeadDim), shapes[0],
                          shapes[1], shapes[2], preset.usualInType, tp,
                          preset.source)
                .str();
  }
  return text;
}

std::string mlir::mlafp8::describeUnknownModel(llvm::StringRef name) {
  std::string message = "unknown model '" + name.str() + "'; known models: ";
  for (const ModelPreset &preset : kPresets) {
    if (&preset != kPresets)
      message += ", ";
    message += preset.name.str();
  }
  return message;
}
