//===- PrequantBmmRunner.h - Run a prequant-bmm kernel vs the reference -*- C++
//-*-===//
//
// Generates random inputs for a prequant-bmm problem, lays them out for a
// kernel argument ABI, runs the kernel on the emulator and compares the output
// with the Reference library.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_EMULATOR_PREQUANTBMMRUNNER_H
#define MLA_FP8_EMULATOR_PREQUANTBMMRUNNER_H

#include "mla-fp8/Emulator/Emulator.h"
#include "mla-fp8/Reference/PrequantBmm.h"

#include <optional>
#include <string>

namespace mlir::mlafp8::emu {

/// Kernel argument layouts of prequant-bmm kernels.
enum class PrequantAbi : uint8_t {
  /// shared/peer-kernels/README.md: a, w, c, ws pointers; M, N, K and the b/m
  /// strides of X, W, Y as i32; two null scratch pointers (88 bytes).
  TritonPeer,
};

/// Parses "triton-peer"; std::nullopt otherwise. (This project's kernels run
/// from their bundle, whose manifest gives the launch: mla-fp8-emu <bundle>.)
std::optional<PrequantAbi> parsePrequantAbi(llvm::StringRef name);

/// One problem instance.
struct PrequantBmmProblem {
  int64_t B = 1, M = 1, N = 0, K = 0;
  int64_t groupSize = 128;
  FP8Format format = FP8Format::E4M3FNUZ;
  uint64_t seed = 1;
  /// Activations ~ N(0, 1) * xScale (bf16).
  float xScale = 1.0f;
  /// Y written as (M, B, N) instead of (B, M, N).
  bool transposeY = false;
};

/// What a run produced.
struct PrequantBmmResult {
  OutputErrorStats error;
  /// Elements outside the tolerance 1 bf16 ulp(|ref|) + 2^-20 * max|ref|.
  int64_t failures = 0;
  /// Elements of Y the kernel never wrote (still holding the sentinel).
  int64_t unwritten = 0;
  ExecStats stats;
  std::string firstFailure;
};

/// Runs `kernel` for `problem`. `config` supplies the workgroup size, dynamic
/// LDS and threads; the grid is computed for the ABI from the tile sizes
/// `tileM` x `tileN` (Triton: (B, ceil(M/tileM) * ceil(N/tileN), 1)).
llvm::Expected<PrequantBmmResult>
runPrequantBmm(Emulator &emu, llvm::StringRef kernel, PrequantAbi abi,
               const PrequantBmmProblem &problem, unsigned tileM,
               unsigned tileN, const DispatchConfig &config);

} // namespace mlir::mlafp8::emu

#endif // MLA_FP8_EMULATOR_PREQUANTBMMRUNNER_H
