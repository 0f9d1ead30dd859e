//===- Presets.h - MLA model presets ----------------------------*- C++ -*-===//
//
// The attention dimensions of published MLA models, from their configs.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_AOT_PRESETS_H
#define MLA_FP8_AOT_PRESETS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir::mlafp8 {

/// The attention dimensions that decide a layer's batched matmuls: the two
/// MLA absorb bmms (kv_lora_rank, qk_nope_head_dim, v_head_dim; all 0 for a
/// model without them) and a grouped low-rank output projection (o_groups,
/// o_lora_rank, head_dim; all 0 for a model without one).
struct ModelDims {
  /// Attention heads of the whole model (split over tensor-parallel ranks).
  int64_t heads = 0;
  /// kv_lora_rank (L).
  int64_t kvLoraRank = 0;
  /// qk_nope_head_dim (P).
  int64_t qkNopeHeadDim = 0;
  /// v_head_dim (V).
  int64_t vHeadDim = 0;
  /// o_groups (G): the heads' outputs are split into G groups, each
  /// projected by its own wo_a (split over tensor-parallel ranks).
  int64_t outputGroups = 0;
  /// o_lora_rank (R): wo_a's output width.
  int64_t outputLoraRank = 0;
  /// head_dim (D) of the attention output, which wo_a reduces over: each
  /// group's wo_a has K = heads * D / G.
  int64_t headDim = 0;

  bool hasAbsorbBmms() const { return kvLoraRank != 0; }
  bool hasOutputGroups() const { return outputGroups != 0; }
  /// Whether `tp` ranks split the heads (and the output groups) evenly.
  bool splitsOver(int64_t tp) const {
    return tp >= 1 && heads % tp == 0 &&
           (!hasOutputGroups() || outputGroups % tp == 0);
  }
};

/// One batched matmul of a layer, Y (B, M, N) = X (B, M, K) x W (B, N, K)^T.
struct ModelProjection {
  /// Its manifest name: k_up (q_nope x W_UK), v_up (o x W_UV) or wo_a (the
  /// attention output's groups x their wo_a).
  llvm::StringRef name;
  int64_t n = 0, k = 0;
  /// The batch at TP 1 (heads, or o_groups for wo_a): B = this / TP.
  int64_t batchAtTp1 = 0;
};

/// The manifest names a projection may have, in manifest order.
llvm::ArrayRef<llvm::StringRef> getProjectionNames();

/// The batched matmuls of a model with these dimensions: K-up and V-up when
/// it has the absorb bmms, wo_a when it has output groups.
llvm::SmallVector<ModelProjection, 3> getModelProjections(const ModelDims &dims);

struct ModelPreset {
  llvm::StringRef name;
  ModelDims dims;
  /// The activation type the model is usually served in (its config's
  /// torch_dtype): "bf16" or "f16". Serving it in the other type needs
  /// mla-fp8-aot --in-type with that type.
  llvm::StringRef usualInType;
  /// The tensor-parallel degrees it is usually served at on one 8-GPU
  /// MI300X/MI355X node (information: --tp still defaults to 1, 2, 4, 8,
  /// skipping degrees that do not divide the heads).
  llvm::ArrayRef<int64_t> usualTp;
  /// The published config the dimensions were read from (a Hugging Face
  /// repository's config.json; "text_config" where the config nests the
  /// language model).
  llvm::StringRef source;
};

/// Every preset, in a stable order.
llvm::ArrayRef<ModelPreset> getModelPresets();

/// The preset called `name`, or null.
const ModelPreset *lookupModelPreset(llvm::StringRef name);

/// "deepseek-v2-lite (bf16), deepseek-v2 (bf16), ...": every preset with
/// its usual activation type, separated by `separator`.
std::string describeModelPresets(llvm::StringRef separator = ", ");

/// One line per preset: name, heads, kv_lora_rank, qk_nope_head_dim,
/// v_head_dim, the two projections' (N, K), the usual activation type and TP
/// degrees and the source config (mla-fp8-aot --list-models). Every preset
/// is generated for every chip of the chip table by default.
std::string formatModelPresetTable();

/// "unknown model 'x'; known models: deepseek-v2-lite, ...".
std::string describeUnknownModel(llvm::StringRef name);

} // namespace mlir::mlafp8

#endif // MLA_FP8_AOT_PRESETS_H
