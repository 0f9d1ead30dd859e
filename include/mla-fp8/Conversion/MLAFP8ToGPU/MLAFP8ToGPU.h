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
// 80 bytes of explicit kernel arguments. Workgroup: (64 * waves, 1, 1).
// Grid in workgroups: x = ceil(N / block_n) * split_k, y = ceil(M / block_m),
// z = B. M = 0 means no launch (an empty grid).
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
inline constexpr unsigned kKernelArgBytes = 80;

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
