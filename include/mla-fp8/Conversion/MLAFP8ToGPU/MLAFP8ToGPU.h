//===- MLAFP8ToGPU.h - prequant_bmm to gpu.func kernels ---------*- C++ -*-===//
//
// The kernel generator: one gpu.func per #mlafp8.tile of a prequant_bmm.
//
// Kernel ABI (bare pointers, every kernel of every shape alike):
//   arg  kernarg offset  type          meaning
//   0    0               ptr (global)  X, bf16/f16, element (b, m, k) at
//                                      b * x_stride_b + m * x_stride_m + k
//   1    8               ptr (global)  W, fp8 (B, N, K) row-major
//   2    16              ptr (global)  ws, f32: 1 value (per_tensor) or B
//   3    24              ptr (global)  bias, (B, N) in Y's type; may be null
//                                      (never read) when the op has no bias
//   4    32              ptr (global)  Y, bf16/f16, element (b, m, n) at
//                                      b * y_stride_b + m * y_stride_m + n
//   5    40              i64           M (tokens)
//   6    48              i64           x_stride_b (elements)
//   7    56              i64           x_stride_m (elements)
//   8    64              i64           y_stride_b (elements)
//   9    72              i64           y_stride_m (elements)
//   10   80              ptr (global)  workspace, split-K only (below); may
//                                      be null (never read) when split_k = 1
// 88 bytes of explicit kernel arguments. Workgroup: (64 * waves, 1, 1).
// Grid in workgroups: x = ceil(N / block_n) * split_k, y = ceil(M / block_m),
// z = B. M = 0 means no launch (an empty grid). Workgroup x runs N tile
// x / split_k and split x % split_k, which covers K-groups
// [s * G / split_k, (s + 1) * G / split_k) of the G = ceil(K / group_size)
// groups (a partial last group goes to the last split).
//
// Split-K workspace (split_k > 1). It is made of blocks of
// getWorkspaceBytesPerBlock(tile, N) bytes, one per (b, M tile), block
// index b * ceil(M / block_m) + M tile: B * ceil(M / block_m) blocks in all,
// the base 256-byte aligned. A block holds, for each N tile t and split s,
// the f32 partial tile at element (t * split_k + s) * block_m * block_n
// (already multiplied by the row scales, before the descale and bias; lanes'
// accumulators in register order), then one u32 arrival counter per N tile
// at element ceil(N / block_n) * split_k * block_m * block_n + t.
// Each workgroup stores its partial, fences (release, agent scope) and adds 1
// to its counter; the one that reads split_k - 1 is the last: it fences
// (acquire), sums the split_k partials in split order 0, 1, ..., split_k - 1
// (so the result has the same bits whatever order the workgroups ran in),
// applies the descale and bias, rounds once and stores Y, and sets the
// counter back to 0.
// Zero-once contract: the caller zeroes the workspace (at least the counters)
// once, when it allocates it; every launch leaves all counters at 0 again,
// so later launches, graph replays included, need no memset. Launches that
// share a workspace must not run concurrently.
// When K is a multiple of 8, X rows are read with 16-byte loads: the X base
// must be 16-byte aligned and x_stride_b, x_stride_m multiples of 8.
//
//===----------------------------------------------------------------------===//

#ifndef MLAFP8_CONVERSION_MLAFP8TOGPU_MLAFP8TOGPU_H
#define MLAFP8_CONVERSION_MLAFP8TOGPU_MLAFP8TOGPU_H

#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"
#include "mlir/Support/LLVM.h"

#include <array>
#include <string>

namespace mlir::mlafp8 {

/// Size in bytes of the explicit kernel arguments of every kernel.
inline constexpr unsigned kKernelArgBytes = 88;

/// Alignment in bytes of the split-K workspace and of each of its blocks.
inline constexpr int64_t kWorkspaceAlignment = 256;

/// One explicit kernel argument (the ABI above), for launchers and manifests.
struct KernelArgument {
  StringRef name;
  unsigned offset;
  unsigned size;
  /// "pointer" or "i64".
  StringRef kind;
  StringRef meaning;
};

/// The explicit arguments of every kernel, in order.
ArrayRef<KernelArgument> getKernelArguments();

/// The grid, in workgroups (x, y, z), of the kernel of `tile` for `m` tokens
/// and `batch` batch elements: (ceil(N / block_n) * split_k,
/// ceil(M / block_m), B); y is 0 when M is 0 (launch nothing).
std::array<int64_t, 3> getGridSize(const TileConfig &tile, int64_t n, int64_t m,
                                   int64_t batch);

/// The split-K workspace bytes of one (batch element, M tile) block of the
/// kernel of `tile` for N = `n` (the layout above), a multiple of
/// kWorkspaceAlignment; 0 when split_k is 1. A launch needs
/// B * ceil(M / block_m) times this, zeroed once.
int64_t getWorkspaceBytesPerBlock(const TileConfig &tile, int64_t n);

/// The workgroup size in work-items: (64 * waves, 1, 1).
std::array<int64_t, 3> getWorkgroupSize(const TileConfig &tile);

/// What decides one kernel's code, apart from the tile.
struct KernelShape {
  int64_t n;
  int64_t k;
  int64_t groupSize;
  /// "bf16" or "f16".
  std::string outType;
  bool perBatchScale = false;
  bool hasBias = false;
};

/// The symbol of the kernel for `shape` and `tile` on `chip`, e.g.
/// `mla_fp8_n512_k128_g128_bf16_gfx942_m1_16` (`m513_inf` for an unbounded M
/// range, `_pb` for a per-batch descale, `_bias` with a bias).
std::string getKernelName(const KernelShape &shape, StringRef chip,
                          const TileConfig &tile);

} // namespace mlir::mlafp8

#endif // MLAFP8_CONVERSION_MLAFP8TOGPU_MLAFP8TOGPU_H
