//===- KernelABI.h - what a bundle kernel's fields imply -------*- C++ -*-===//
//
// The facts of the prequant-bmm kernel ABI that a loader derives from a
// manifest entry to check it: the kernel's symbol, its explicit arguments and
// its split-K workspace. Plain C++17, no LLVM or MLIR types, so that the
// run-time loader and embedders can use it; the compiler's own definitions
// (getKernelName, getKernelArguments, getWorkspaceBytesPerBlock in
// Conversion/MLAFP8ToGPU) are tested to agree with these.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_CODEOBJECT_KERNELABI_H
#define MLA_FP8_CODEOBJECT_KERNELABI_H

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mlir::mlafp8::kernel_abi {

/// What names a kernel: the shape, the epilogue and the M range.
struct KernelNameFields {
  int64_t n = 0, k = 0, groupSize = 0;
  /// "bf16" or "f16".
  std::string outType;
  bool perBatchScale = false;
  bool hasBias = false;
  std::string chip;
  /// maxM 0: no upper bound ("inf").
  int64_t minM = 0, maxM = 0;
};

/// The kernel's symbol, e.g. `mla_fp8_n512_k128_g128_bf16_gfx942_m1_16`,
/// with `_pb` for a per-batch descale, `_bias` for a bias and `m513_inf` for
/// an unbounded M range.
inline std::string getKernelSymbol(const KernelNameFields &f) {
  std::string name = "mla_fp8_n" + std::to_string(f.n) + "_k" +
                     std::to_string(f.k) + "_g" + std::to_string(f.groupSize) +
                     "_" + f.outType;
  if (f.perBatchScale)
    name += "_pb";
  if (f.hasBias)
    name += "_bias";
  name += "_" + f.chip + "_m" + std::to_string(f.minM) + "_" +
          (f.maxM == 0 ? std::string("inf") : std::to_string(f.maxM));
  return name;
}

/// One explicit kernel argument.
struct ExplicitArg {
  std::string_view name;
  uint32_t offset;
  uint32_t size;
  /// The metadata's .value_kind.
  std::string_view valueKind;
};

/// The explicit arguments of every kernel, in kernarg order.
inline constexpr std::array<ExplicitArg, 11> kExplicitArgs = {{
    {"x", 0, 8, "global_buffer"},
    {"w", 8, 8, "global_buffer"},
    {"w_scale", 16, 8, "global_buffer"},
    {"bias", 24, 8, "global_buffer"},
    {"y", 32, 8, "global_buffer"},
    {"m", 40, 8, "by_value"},
    {"x_stride_b", 48, 8, "by_value"},
    {"x_stride_m", 56, 8, "by_value"},
    {"y_stride_b", 64, 8, "by_value"},
    {"y_stride_m", 72, 8, "by_value"},
    {"workspace", 80, 8, "global_buffer"},
}};

/// Alignment in bytes of each split-K workspace block.
inline constexpr int64_t kWorkspaceAlignment = 256;

/// Bounds of the tile fields the formulas below accept; beyond them they
/// could overflow.
inline constexpr int64_t kMaxTileDim = 4096;
inline constexpr int64_t kMaxSplitK = 1024;
inline constexpr int64_t kMaxN = int64_t(1) << 24;

/// The split-K workspace bytes of one (batch element, M tile) block: the
/// fp32 partials of every N tile and split, one u32 arrival counter per N
/// tile, rounded up to kWorkspaceAlignment; 0 without split-K. nullopt when
/// an input is out of bounds.
inline std::optional<int64_t> getWorkspaceBytesPerBlock(int64_t n,
                                                        int64_t blockM,
                                                        int64_t blockN,
                                                        int64_t splitK) {
  if (n < 1 || n > kMaxN || blockM < 1 || blockM > kMaxTileDim || blockN < 1 ||
      blockN > kMaxTileDim || splitK < 1 || splitK > kMaxSplitK)
    return std::nullopt;
  if (splitK == 1)
    return 0;
  int64_t nTiles = (n + blockN - 1) / blockN;
  int64_t bytes = nTiles * splitK * blockM * blockN * 4 + 4 * nTiles;
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment *
         kWorkspaceAlignment;
}

} // namespace mlir::mlafp8::kernel_abi

#endif // MLA_FP8_CODEOBJECT_KERNELABI_H
