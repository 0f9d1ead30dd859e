//===- Verify.h - check a bundle kernel against the reference ---*- C++ -*-===//
//
// Runs a kernel of a loaded bundle on the emulator with random inputs in the
// layouts servers use, and compares every output element with the exact
// reference of SPEC.md. mla-fp8-aot --verify, mla-fp8-emu --bundle and the
// end-to-end tests share it.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_RUNTIME_VERIFY_H
#define MLA_FP8_RUNTIME_VERIFY_H

#include "mla-fp8/Runtime/EmulatorLaunch.h"

#include <string>

namespace mlir::mlafp8::runtime {

/// One verification problem for a kernel: its shape comes from the kernel.
struct VerifyProblem {
  int64_t batch = 1;
  int64_t m = 1;
  uint64_t seed = 1;
  /// X as the K-up view of q_nope: (M, B, K + 64) storage read as (B, M, K).
  bool stridedX = false;
  /// Y as (M, B, N) inside a wider (M, B, N + 32) tensor.
  bool transposedY = false;
  /// Put a NaN in X row 0 and an Inf in row 1 of batch 0: their rows of Y
  /// must come out NaN, as in the reference.
  bool specials = false;
  /// Emulator worker threads (0: one per core).
  unsigned threads = 0;
  /// Multiplies every generated activation before it is rounded to bf16:
  /// from about 2.6e35 on, SPEC.md's fp32 accumulator overflows.
  float xScale = 1.0f;
};

struct VerifyResult {
  /// Elements outside 1 output ulp + 2^-20 max|reference| (SPEC.md's
  /// accuracy: one ulp plus fp32 accumulation noise). The claim holds where
  /// the fp32 accumulator does not overflow; elsewhere see accOverflows.
  int64_t failures = 0;
  /// Elements whose fp32 accumulation overflows (getAccumulatorOverflow):
  /// there the kernel may give Inf (or NaN from Inf - Inf) where the f64
  /// reference is finite, as SPEC.md says; such an element is not a failure
  /// when it is non-finite or within the tolerance.
  int64_t accOverflows = 0;
  /// Of accOverflows, the elements the kernel gave as Inf or NaN.
  int64_t accOverflowsNonFinite = 0;
  /// Elements outside Y's view that changed.
  int64_t outside = 0;
  double maxAbsError = 0;
  /// Largest error in output ulps of the reference value.
  double maxUlp = 0;
  /// Dynamic counts of the kernel's run.
  emu::ExecStats stats;
  /// Why the kernel could not be run (launch or emulation error); empty when
  /// it ran.
  std::string error;
  /// The first mismatch.
  std::string message;
  /// When accOverflows > 0, a line that says so (printed even on success).
  std::string note;

  bool passed() const { return error.empty() && failures == 0 && outside == 0; }
};

/// Generates inputs (x ~ N(0, 1) in bf16, weights ~ N(0, 0.05^2) quantized
/// per tensor or per batch as the kernel expects), runs `kernel` and compares.
VerifyResult verifyKernel(EmulatorLauncher &launcher, const KernelEntry &kernel,
                          const VerifyProblem &problem);

} // namespace mlir::mlafp8::runtime

#endif // MLA_FP8_RUNTIME_VERIFY_H
