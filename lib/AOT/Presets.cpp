//===- Presets.cpp - MLA model presets ------------------------------------===//

#include "mla-fp8/AOT/Presets.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir::mlafp8;

// heads, kv_lora_rank, qk_nope_head_dim, v_head_dim and torch_dtype as the
// models' configs publish them (every one says bfloat16); `source` names the
// config. The usual TP degrees are those of one 8-GPU node that divide the
// heads: only 8 for the models too large for fewer GPUs.
static const int64_t kTp1To8[] = {1, 2, 4, 8};
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
};

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
  std::string text =
      llvm::formatv("{0,-17} {1,5} {2,7} {3,4} {4,3}  {5,-11} "
                    "{6,-11} {7,-5} {8,-10} {9}\n",
                    "model", "heads", "kv_lora", "nope", "v", "K-up (N,K)",
                    "V-up (N,K)", "dtype", "usual TP", "source config")
          .str();
  for (const ModelPreset &preset : kPresets) {
    const ModelDims &d = preset.dims;
    std::string tp;
    for (int64_t degree : preset.usualTp)
      tp += (tp.empty() ? "" : ",") + std::to_string(degree);
    text += llvm::formatv(
                "{0,-17} {1,5} {2,7} {3,4} {4,3}  {5,-11} {6,-11} "
                "{7,-5} {8,-10} {9}\n",
                preset.name, d.heads, d.kvLoraRank, d.qkNopeHeadDim, d.vHeadDim,
                llvm::formatv("{0},{1}", d.kvLoraRank, d.qkNopeHeadDim).str(),
                llvm::formatv("{0},{1}", d.vHeadDim, d.kvLoraRank).str(),
                preset.usualInType, tp, preset.source)
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
