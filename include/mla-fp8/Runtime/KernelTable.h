//===- KernelTable.h - the kernels of a loaded bundle -----------*- C++ -*-===//
//
// What a launcher needs about each kernel of a bundle, in plain C++17 types:
// the Python module and other embedders compiled with exceptions and RTTI can
// include this header without pulling in LLVM's types. Bundle.h loads it.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_RUNTIME_KERNELTABLE_H
#define MLA_FP8_RUNTIME_KERNELTABLE_H

#include "mla-fp8/ABI/KernelDescription.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::mlafp8::runtime {

/// The manifest schema version this loader reads.
inline constexpr int kSupportedManifestSchemaVersion = 5;

/// Bounds the loader enforces on every manifest (docs/manifest.md, "What the
/// loader checks"): beyond them the kernels' index arithmetic or a launch's
/// allocations would overflow.
inline constexpr int64_t kMaxManifestN = kernel_abi::kMaxKernelDimension;
inline constexpr int64_t kMaxManifestK = kernel_abi::kMaxKernelDimension;
inline constexpr int64_t kMaxManifestGroupSize = 65536;
inline constexpr int64_t kMaxManifestM = (int64_t(1) << 31) - 1;
/// The bound of a kernel's `min_rows` and `max_rows`. A launch of more rows
/// (B * M) is served by the unbounded range.
inline constexpr int64_t kMaxManifestRows = (int64_t(1) << 31) - 1;
inline constexpr int64_t kMaxManifestChips = 16;
inline constexpr int64_t kMaxManifestKernelsPerChip = 4096;
inline constexpr int64_t kMaxManifestArgs = 64;
inline constexpr int64_t kMaxManifestKernargBytes = 4096;
/// A parse bound only: each kernel's LDS is checked against its chip's.
inline constexpr int64_t kMaxManifestLdsBytes = 1 << 20;
inline constexpr int64_t kMaxManifestScratchBytes = 1 << 20;
inline constexpr unsigned kMaxManifestJSONDepth = 64;

/// One entry of a kernel's kernarg layout.
struct KernelArg {
  uint32_t offset = 0;
  uint32_t size = 0;
  /// Metadata value kind, e.g. "global_buffer", "by_value",
  /// "hidden_block_count_x".
  std::string kind;
  /// For explicit arguments, the manifest's `meaning`: for people only.
  std::string meaning;
  /// For explicit arguments, the manifest's `name`, which the loader checked
  /// against the kernel ABI (e.g. "x", "m", "y_stride_b"); `kind` for hidden
  /// ones.
  std::string name;

  bool isHidden() const { return kind.rfind("hidden_", 0) == 0; }
};

/// One kernel of a bundle, as the manifest describes it: its description
/// (chip, shape, formats, epilogue; a kernel without a bias never reads
/// that argument) and how to launch it.
struct KernelEntry : kernel_abi::KernelDescription {
  std::string symbol;
  std::string projection;
  /// The kernel serves the launches of minRows <= B * M <= maxRows rows;
  /// maxRows 0 means no upper bound.
  int64_t minRows = 0, maxRows = 0;
  /// The tile's block_m (the grid's M divisor), block_n, waves and split_k.
  int64_t blockM = 0, blockN = 0, waves = 0, splitK = 1;
  std::array<uint32_t, 3> workgroupSize = {0, 0, 0};
  uint32_t kernargSize = 0, kernargAlign = 0;
  uint64_t ldsBytes = 0, scratchBytes = 0;
  /// Split-K kernels: bytes of workspace per (batch element, M tile); 0 when
  /// the kernel takes none. The workspace is zeroed once by its owner and
  /// left zeroed by every launch (docs/manifest.md).
  uint64_t workspaceBytesPerBlock = 0;
  std::vector<KernelArg> args;
  /// The code object of the kernel's chip (shared by every kernel of it).
  std::shared_ptr<const std::string> codeObject;

  /// Whether a launch of `b` batches of `m` tokens is served by this kernel.
  /// Every B * M above kMaxManifestRows (B and M are at most 2^31 - 1, the
  /// product fits) falls in the unbounded range.
  bool serves(int64_t m, int64_t b) const {
    if (m < 1 || b < 1)
      return false;
    int64_t rows = m * b;
    return rows >= minRows && (maxRows == 0 || rows <= maxRows);
  }
  /// Workgroups per dimension for `m` tokens and `b` batches, as the kernel
  /// ABI gives them for the tile; y is 0 (no launch) when m is 0, and all are
  /// 0 for a tile outside the ABI's bounds (checkLaunch says why). Never
  /// overflows.
  std::array<uint64_t, 3> getGrid(int64_t m, int64_t b) const;
  /// Checks a launch for `m` tokens and `b` batches against what the kernel
  /// can run: a tile within the kernel ABI's bounds, M within kMaxManifestM,
  /// every grid dimension fits the dispatch packet (work-items per dimension
  /// below 2^32), and the workspace size is representable. Returns the reason
  /// it cannot, or an empty string.
  std::string checkLaunch(int64_t m, int64_t b) const;
  /// Workspace bytes a launch for `m` tokens and `b` batches needs (the
  /// kernel ABI's); UINT64_MAX when that does not fit in 64 bits or the tile
  /// is outside the ABI's bounds.
  uint64_t getWorkspaceBytes(int64_t m, int64_t b) const;
  /// The argument called `name` (see KernelArg::name), or null.
  const KernelArg *findArg(std::string_view name) const;
};

} // namespace mlir::mlafp8::runtime
namespace mlir::mlafp8::kernel_abi {
struct LaunchShape;
} // namespace mlir::mlafp8::kernel_abi
namespace mlir::mlafp8::runtime {

/// The entry of a kernel compiled outside a bundle (tests, tile sweeps): its
/// description, range of rows and launch shape, with everything else the kernel
/// ABI implies (symbol, workgroup, kernarg layout, workspace).
KernelEntry makeKernelEntry(const kernel_abi::KernelDescription &description,
                            int64_t minRows, int64_t maxRows,
                            const kernel_abi::LaunchShape &launch,
                            std::shared_ptr<const std::string> codeObject);

/// One call of a prequant-bmm kernel. Element strides; K and N strides are 1.
/// X (bf16/f16 bits) element (b, m, k) is at x[b * xStrideB + m * xStrideM +
/// k]; Y likewise with N. Only the extent the strides reach is copied in and
/// out, so views into larger tensors work and their other elements are kept.
struct PrequantBmmCall {
  int64_t batch = 0;
  int64_t m = 0;
  const uint16_t *x = nullptr;
  int64_t xStrideB = 0, xStrideM = 0;
  /// (B, N, K) fp8 bits, contiguous.
  const uint8_t *w = nullptr;
  /// 1 value (per_tensor kernels) or B (per_batch).
  const float *wScale = nullptr;
  /// (B, N) in the output type, or null.
  const uint16_t *bias = nullptr;
  uint16_t *y = nullptr;
  int64_t yStrideB = 0, yStrideM = 0;
};

/// One chip's code object and its kernels.
struct LoadedChip {
  std::string chip;
  /// File name inside the bundle directory.
  std::string codeObjectFile;
  std::string sha256;
  /// The code-object version, from its ELF header (5 or 6).
  unsigned codeObjectVersion = 0;
  std::shared_ptr<const std::string> codeObject;
  std::vector<KernelEntry> kernels;
};

/// What a kernel lookup matches: every field of the description except the
/// fp8 type (the chip decides it), and the launch a kernel must serve: `batch`
/// (B) times `m` tokens.
struct KernelQuery : kernel_abi::KernelDescription {
  int64_t m = 0;
  int64_t batch = 0;
};

/// A bundle read from disk: immutable after loading, so that pointers to its
/// kernels stay valid and lookups may run from several threads.
class LoadedBundle {
public:
  int schemaVersion = 0;
  std::string directory;
  std::string compilerVersion;
  std::string model;
  /// The SHA-256 of manifest.json, as manifest.sha256 records it.
  std::string manifestSha256;
  int64_t maxM = 0;
  std::vector<LoadedChip> chips;

  /// The kernel of `chip` for the (n, k) shape whose range of rows holds
  /// `batch` * `m`, or null. M = 0 or B = 0 (nothing to compute) gets the
  /// kernel of the lowest range, whose grid is then empty.
  const KernelEntry *findKernel(std::string_view chip, int64_t n, int64_t k,
                                int64_t m, int64_t batch,
                                std::string_view outType = "bf16",
                                std::string_view wScale = "per_tensor",
                                int64_t groupSize = 128) const;
  const KernelEntry *findKernel(const KernelQuery &query) const;

  /// The chip called `chip`, or null.
  const LoadedChip *findChip(std::string_view chip) const;
};

} // namespace mlir::mlafp8::runtime

#endif // MLA_FP8_RUNTIME_KERNELTABLE_H
