//===- Verify.h - check a kernel against the reference ----------*- C++ -*-===//
//
// The project's one reference check of a prequant-bmm kernel: random inputs
// in the layouts servers use, a launch, and every output element compared
// with the exact reference of SPEC.md under one tolerance rule. How the
// kernel is launched is the caller's: a bundle kernel through its manifest
// (verifyKernel: mla-fp8-aot --verify, mla-fp8-emu on a bundle, the
// end-to-end and generator tests) or a peer kernel with its own argument
// layout (PeerLaunch.h). MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_RUNTIME_VERIFY_H
#define MLA_FP8_RUNTIME_VERIFY_H

#include "mla-fp8/Runtime/EmulatorLaunch.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>
#include <vector>

namespace mlir::mlafp8::runtime {

/// Where a (B, M, cols) operand's element (b, m, c) lives: rows of
/// cols + rowPadding elements, batch-major (b * M + m) or token-major
/// (m * B + b).
struct VerifyLayout {
  bool tokenMajor = false;
  int64_t rowPadding = 0;
};

/// X as the K-up view of q_nope: (M, B, K + 64) storage read as (B, M, K).
inline constexpr VerifyLayout kQNopeLayout = {true, 64};
/// Y as (M, B, N) inside a wider (M, B, N + 32) tensor.
inline constexpr VerifyLayout kWideTokenMajorLayout = {true, 32};

/// One verification problem for a kernel: its shape comes from the kernel.
struct VerifyProblem {
  int64_t batch = 1;
  int64_t m = 1;
  uint64_t seed = 1;
  VerifyLayout x;
  VerifyLayout y;
  /// Put a NaN in X row 0 and an Inf in row 1 of batch 0: their rows of Y
  /// must come out NaN, as in the reference.
  bool specials = false;
  /// Give X row (b, m) the magnitude 2^((b + m) % 7 - 3), so that rows get
  /// different quantization scales.
  bool varyRowScales = false;
  /// Zero X's K-group g of row (b, m) when (b + m + g) % 9 == 4, so that the
  /// quantization's amax floor matters.
  bool zeroGroups = false;
  /// Emulator worker threads of the first launch (0: one per core).
  unsigned threads = 0;
  /// Launch again with each of these thread counts (other workgroup orders),
  /// on the same inputs and, for a split-K kernel, the same never re-zeroed
  /// workspace: every launch must give the same bits.
  std::vector<unsigned> repeatThreads;
  /// False: launch only, with no reference and no comparison (for the
  /// timing model's representative mode, which leaves Y incomplete).
  bool compare = true;
  /// Multiplies every generated activation before it is rounded: from about
  /// 2.6e35 on, SPEC.md's fp32 accumulator overflows.
  float xScale = 1.0f;
};

struct VerifyResult {
  /// Elements outside 1 output ulp + 2^-20 max|reference| (SPEC.md's
  /// accuracy: one ulp plus fp32 accumulation noise). The claim holds where
  /// the fp32 accumulator does not overflow; elsewhere see accOverflows.
  int64_t failures = 0;
  /// Elements of Y the kernel never wrote.
  int64_t unwritten = 0;
  /// Elements whose fp32 accumulation overflows (getAccumulatorOverflow):
  /// there the kernel may give Inf (or NaN from Inf - Inf) where the f64
  /// reference is finite, as SPEC.md says; such an element is not a failure
  /// when it is non-finite or within the tolerance.
  int64_t accOverflows = 0;
  /// Of accOverflows, the elements the kernel gave as Inf or NaN.
  int64_t accOverflowsNonFinite = 0;
  /// Elements outside Y's view that changed.
  int64_t outside = 0;
  /// Repeated launches (VerifyProblem::repeatThreads) whose Y differed from
  /// the first launch's.
  int64_t unstableRuns = 0;
  double maxAbsError = 0;
  /// Largest error in output ulps of the reference value.
  double maxUlp = 0;
  /// Dynamic counts of the first launch.
  emu::ExecStats stats;
  /// Launches made (the first and the repeats).
  unsigned launches = 0;
  /// Why the kernel could not be run (launch or emulation error); empty when
  /// it ran.
  std::string error;
  /// The first problem found.
  std::string message;
  /// When accOverflows > 0, a line that says so (printed even on success).
  std::string note;

  bool passed() const {
    return error.empty() && failures == 0 && unwritten == 0 && outside == 0 &&
           unstableRuns == 0;
  }
};

/// Runs one launch of the kernel for `call` with `threads` emulator threads.
using VerifyLaunch = llvm::function_ref<llvm::Expected<emu::ExecStats>(
    const PrequantBmmCall &call, unsigned threads)>;

/// Generates inputs for `kernel`'s shape and types (x ~ N(0, 1) in its
/// in_type, weights ~ N(0, 0.05^2) quantized per tensor or per batch as it
/// expects, a bias when it has one), launches through `launch` as `problem`
/// says and compares. Only the kernel's description is read: `launch` runs
/// it however its argument layout needs.
VerifyResult verifyPrequantBmm(const KernelEntry &kernel,
                               const VerifyProblem &problem,
                               VerifyLaunch launch);

/// verifyPrequantBmm of a bundle kernel, launched by `launcher` as its
/// manifest says.
VerifyResult verifyKernel(EmulatorLauncher &launcher, const KernelEntry &kernel,
                          const VerifyProblem &problem);

} // namespace mlir::mlafp8::runtime

#endif // MLA_FP8_RUNTIME_VERIFY_H
