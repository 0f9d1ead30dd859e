//===- Limits.h - Sizes a launch of a bundle kernel may have ----*- C++ -*-===//
//
// The bounds every launcher checks before it allocates or launches anything;
// docs/limits.md explains where each comes from. Two sets: what the GPU
// kernels can address, and the lower bounds of the CPU emulator, whose
// buffers are host memory and whose run time grows with every element.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_RUNTIME_LIMITS_H
#define MLA_FP8_RUNTIME_LIMITS_H

#include <cstdint>

namespace mlir::mlafp8::runtime {

//===----------------------------------------------------------------------===//
// GPU kernels
//===----------------------------------------------------------------------===//

/// The extent of every buffer argument as a kernel declares it: the lowering
/// (MLAFP8ToGPU.cpp, kUnboundedElements) types X, W, w_scale, bias, Y and the
/// workspace as memref<2147483647 x T>, so each element a launch touches must
/// have an index below this, counted in elements of that buffer.
constexpr int64_t kKernelMaxElements = 2147483647;

/// A grid dimension in workgroups, and the same dimension in work-items
/// (workgroups * workgroup size): the HSA dispatch packet holds grid sizes
/// as uint32 work-items, and hipModuleLaunchKernel takes unsigned counts.
constexpr uint64_t kMaxGridWorkItems = 0xffffffffu;

//===----------------------------------------------------------------------===//
// CPU emulator (mla-fp8-emu's flags and the Python numpy path)
//===----------------------------------------------------------------------===//

/// Batch B: 1 to 65535.
constexpr int64_t kEmulatorMaxBatch = 65535;
/// Rows M: 0 to 2^20.
constexpr int64_t kEmulatorMaxM = int64_t(1) << 20;
/// N and K: 1 to 65536.
constexpr int64_t kEmulatorMaxDim = 65536;
/// B * max(M, 1) * max(N, K, 512): at most 2^28 elements in one emulation.
/// The operands, the reference's output and the emulator's memory take about
/// 18 bytes per element (1.2 GB at B = 2048, M = 64, N = 512), so this bounds
/// one emulation at about 5 GB of host memory (2^32 ran out of 24 GB).
constexpr int64_t kEmulatorMaxElements = int64_t(1) << 28;
/// Emulator worker threads a caller may ask for (0: one per core).
constexpr int64_t kEmulatorMaxThreads = 1024;

/// The element count kEmulatorMaxElements bounds, for B, M, N, K within their
/// own limits (no overflow).
constexpr int64_t getEmulatorElements(int64_t b, int64_t m, int64_t n,
                                      int64_t k) {
  int64_t rows = m > 1 ? m : 1;
  int64_t cols = n > k ? n : k;
  cols = cols > 512 ? cols : 512;
  return b * rows * cols;
}

} // namespace mlir::mlafp8::runtime

#endif // MLA_FP8_RUNTIME_LIMITS_H
