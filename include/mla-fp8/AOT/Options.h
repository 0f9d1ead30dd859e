//===- Options.h - one resolution of the kernel-set options ----*- C++ -*-===//
//
// What a user asks for, on mla-fp8-aot's command line or through the
// embedding API, and its one resolution into checked KernelSetOptions: both
// entry points accept the same values and reject bad ones with the same
// message.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_AOT_OPTIONS_H
#define MLA_FP8_AOT_OPTIONS_H

#include "mla-fp8/AOT/KernelSet.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::mlafp8 {

/// The largest number of heads and the largest MLA dimension: heads become a
/// grid dimension and the dimensions a GEMM's N and K, bounded well inside
/// what a launch and a kernel can address (and what a loader accepts).
inline constexpr int64_t kMaxModelDimension = 65536;

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
  /// K elements per activation scale: a power of two.
  int64_t groupSize = 128;
  /// Also generate the kernels that add a (B, N) bias.
  bool bias = false;
};

/// Applies the preset and the overrides, parses the names and checks the
/// result (checkKernelSetOptions); the error is one line naming the option
/// (by its manifest key, e.g. "kv_lora_rank") and the value.
llvm::Expected<KernelSetOptions>
resolveKernelSetOptions(const KernelSetRequest &request);

} // namespace mlir::mlafp8

#endif // MLA_FP8_AOT_OPTIONS_H
