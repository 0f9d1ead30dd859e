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
/// Host memory one emulation allocates, per element of each tensor, counted
/// from what the emulation paths allocate (bench/emulator-memory.py measures
/// it against this bound):
///  - X: its storage (2 bytes; the verification layouts pad rows up to 1.5x),
///    mapped into the emulator without a copy: 4 bytes an element at most;
///  - W: its fp8 storage, also mapped: 1 byte an element (B * N * K);
///  - Y: the output and the emulator's copy of it (2 + 2), the reference's f64
///    value and overflow flag (8 + 1), a verification's copy of the first run
///    and its map of Y's view (2 + 1/8): 16 bytes an element at most.
constexpr int64_t kEmulatorXBytesPerElement = 4;
constexpr int64_t kEmulatorWBytesPerElement = 1;
constexpr int64_t kEmulatorYBytesPerElement = 16;
/// The bound on getEmulatorHostBytes: 4 GiB in one emulation. The process
/// itself (its code and libraries, about 64 MB resident) comes on top.
constexpr int64_t kEmulatorMaxHostBytes = int64_t(4) << 30;
/// Emulator worker threads a caller may ask for (0: one per core).
constexpr int64_t kEmulatorMaxThreads = 1024;

/// The host bytes kEmulatorMaxHostBytes bounds, for B, M, N, K within their
/// own limits (no overflow: at most 2^56), and a split-K kernel's workspace
/// of `workspaceBytes`, held twice (the one kept for the kernel across
/// launches and the emulator's copy; at most 2^31 * 4 bytes).
constexpr int64_t getEmulatorHostBytes(int64_t b, int64_t m, int64_t n,
                                       int64_t k, int64_t workspaceBytes = 0) {
  int64_t rows = m > 1 ? m : 1;
  return b * rows * k * kEmulatorXBytesPerElement +
         b * n * k * kEmulatorWBytesPerElement +
         b * rows * n * kEmulatorYBytesPerElement + 2 * workspaceBytes;
}

} // namespace mlir::mlafp8::runtime

#endif // MLA_FP8_RUNTIME_LIMITS_H
