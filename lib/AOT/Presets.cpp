//===- Presets.cpp - MLA model presets ------------------------------------===//

#include "mla-fp8/AOT/Presets.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir::mlafp8;

// heads, kv_lora_rank, qk_nope_head_dim, v_head_dim and torch_dtype as the
// models' configs publish them (every one says bfloat16).
static const ModelPreset kPresets[] = {
    {"deepseek-v2-lite", {16, 512, 128, 128}, "bf16"},
    {"deepseek-v2", {128, 512, 128, 128}, "bf16"},
    {"deepseek-v3", {128, 512, 128, 128}, "bf16"},
    {"deepseek-r1", {128, 512, 128, 128}, "bf16"},
    {"kimi-k2", {64, 512, 128, 128}, "bf16"},
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

std::string mlir::mlafp8::describeUnknownModel(llvm::StringRef name) {
  std::string message = "unknown model '" + name.str() + "'; known models: ";
  for (const ModelPreset &preset : kPresets) {
    if (&preset != kPresets)
      message += ", ";
    message += preset.name.str();
  }
  return message;
}
