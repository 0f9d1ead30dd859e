//===- PeerLaunch.h - run a peer kernel on the emulator ---------*- C++ -*-===//
//
// Peer kernels (shared/peer-kernels: Triton's prequant-bmm, compiled for
// gfx942) have their own argument layout and grid. This launches one on the
// emulator for a PrequantBmmCall, so that Verify.h checks it exactly as it
// checks this project's kernels (mla-fp8-emu --abi=triton-peer, the peer
// tests).
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_RUNTIME_PEERLAUNCH_H
#define MLA_FP8_RUNTIME_PEERLAUNCH_H

#include "mla-fp8/Emulator/Emulator.h"
#include "mla-fp8/Runtime/KernelTable.h"

#include "llvm/Support/Error.h"

namespace mlir::mlafp8::runtime {

/// How a Triton peer kernel is launched: its tile (the grid is (B,
/// ceil(M / tileM) * ceil(N / tileN), 1)) and the workgroup size and dynamic
/// LDS it needs.
struct TritonPeerLaunch {
  unsigned tileM = 0, tileN = 0;
  emu::DispatchConfig config;
  /// Runs the timing model for this product: with `fullTiming` every
  /// workgroup, else one per class (first/interior/last batch element, M
  /// tile and each N tile), which leaves Y incomplete.
  const DeviceTiming *timing = nullptr;
  bool fullTiming = false;
};

/// Launches `kernel` of `emulator` for `call` (an N x K problem, per-tensor
/// descale, no bias) with `threads` worker threads, arguments as
/// shared/peer-kernels/README.md lays them out: x, w, y, w_scale pointers;
/// M, N, K and the batch and row strides of X, W and Y as i32; two null
/// scratch pointers. Copies Y's view back into `call.y`.
llvm::Expected<emu::ExecStats>
launchTritonPeer(emu::Emulator &emulator, llvm::StringRef kernel, int64_t n,
                 int64_t k, const PrequantBmmCall &call,
                 const TritonPeerLaunch &launch, unsigned threads);

} // namespace mlir::mlafp8::runtime

#endif // MLA_FP8_RUNTIME_PEERLAUNCH_H
