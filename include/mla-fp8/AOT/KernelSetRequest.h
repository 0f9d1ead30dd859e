//===- KernelSetRequest.h - the kernel-set options as given -----*- C++ -*-===//
//
// What a user asks mla-fp8-aot or the embedding API for, before any check;
// Options.h resolves it. Plain C++17, so that the embedding API (built with
// exceptions and RTTI, without LLVM's headers) holds it as it is.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_AOT_KERNELSETREQUEST_H
#define MLA_FP8_AOT_KERNELSETREQUEST_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::mlafp8 {

/// The kernel-set options as given, before any check.
struct KernelSetRequest {
  /// A preset name; nullopt: deepseek-r1. With a dimension overridden the
  /// set is called "<model>-custom", or "custom" when no model was named.
  std::optional<std::string> model;
  /// Overrides of the preset's dimensions; nullopt keeps the preset's.
  std::optional<int64_t> heads, kvLoraRank, qkNopeHeadDim, vHeadDim;
  /// Empty: 1, 2, 4, 8, skipping degrees that do not divide the heads.
  /// Given degrees must divide them.
  std::vector<int64_t> tp;
  int64_t maxM = 1024;
  /// Empty: gfx942 and gfx950.
  std::vector<std::string> chips;
  /// "per_tensor" or "per_batch" ("per-tensor", "per-batch" too).
  std::string weightScale = "per_tensor";
  /// "bf16" or "f16".
  std::string outType = "bf16";
  /// Activation types, "bf16" and/or "f16", each with its own kernels;
  /// empty: both.
  std::vector<std::string> inTypes;
  /// Code-object version of the code objects: 5 (ROCm 6.0+) or 6 (6.3+).
  int64_t codeObjectVersion = 5;
  /// K elements per activation scale: a power of two.
  int64_t groupSize = 128;
  /// Also generate the kernels that add a (B, N) bias.
  bool bias = false;
  /// Explicit tiles instead of the tile table, for tuning and testing:
  /// "PROJECTION:BMxBNxWAVES:MFMA[:SPLIT_K[:STAGES]]" (projection k_up or
  /// v_up), one kernel serving every M of that projection.
  std::vector<std::string> tiles;
};

} // namespace mlir::mlafp8

#endif // MLA_FP8_AOT_KERNELSETREQUEST_H
