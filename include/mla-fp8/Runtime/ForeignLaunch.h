//===- ForeignLaunch.h - run a described foreign kernel ---------*- C++ -*-===//
//
// A code object this project did not produce (AITER's Triton kernels, their
// calibration builds) runs on the emulator from a record that describes it:
// its arguments with offsets and sizes, the grid as a formula, the workgroup
// and the dynamic LDS (the kernels.json form of shared/calibration and
// shared/peer-kernels/aiter). Each argument's role comes from its name, in
// one table (getForeignArgRole): a_ptr is X, b_ptr W, c_ptr Y, and so on.
// The launcher fills real inputs, runs the kernel, and checks Y against a
// reference of the kernel's math:
//  - prequant: bf16 X quantized per token and group to fp8, fp8 W with one
//    scale, optional bias (the project's exact reference);
//  - a8w8: int8 X and W with per-row and per-column fp32 scales and a bias;
//  - bf16: a plain bf16 GEMM with an optional bias.
// AITER's prequant and int8 kernels round the product to bf16 before they
// add the bias (its bf16 GEMM adds it in f32); an option makes the
// reference do the same.
// mla-fp8-emu --foreign KERNELS_JSON --file NAME drives it.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_RUNTIME_FOREIGNLAUNCH_H
#define MLA_FP8_RUNTIME_FOREIGNLAUNCH_H

#include "mla-fp8/Emulator/Emulator.h"
#include "mla-fp8/Emulator/Timing.h"

#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::mlafp8::runtime {

/// What a foreign kernel argument is, by its name.
enum class ForeignArgRole {
  X,            // a_ptr
  W,            // b_ptr
  Y,            // c_ptr
  XScale,       // a_scale_ptr (a8w8: one fp32 per row)
  WScale,       // b_scale_ptr (prequant: one fp32; a8w8: one per column)
  Bias,         // bias_ptr ((B, 1, N) in the output type), null unless used
  M, N, K,      // the shape, i32
  XStrideB, XStrideM, WStrideB, WStrideN, YStrideB, YStrideM, YStrideK,
  BiasStrideB, XScaleStrideB, WScaleStrideB,
  Null,         // Triton's global and profile scratch pointers
};

/// The role of an argument named `name`, or none for a name the table does
/// not know (the launch refuses it).
std::optional<ForeignArgRole> getForeignArgRole(llvm::StringRef name);

/// The math a foreign kernel computes.
enum class ForeignMath { Prequant, A8W8, BF16 };

struct ForeignArg {
  std::string name, type;
  uint32_t offset = 0, size = 0;
  ForeignArgRole role = ForeignArgRole::Null;
};

/// A published measurement (or just a shape) of a record.
struct ForeignCase {
  int64_t b = 0, m = 0, n = 0, k = 0;
  std::optional<double> timeUs;
  /// X given as (M, B, K) and Y as (M, B, N) (AITER's transpose_bm_in and
  /// transpose_bm), from the case's layout text.
  bool tokenMajorX = false, tokenMajorY = false;
  std::string source, method;
};

/// One kernels.json record.
struct ForeignKernel {
  std::string file, symbol, chip, grid;
  unsigned workgroupSize = 0, dynamicLdsBytes = 0;
  std::vector<ForeignArg> args;
  ForeignMath math = ForeignMath::Prequant;
  bool hasBias = false;
  /// BLOCK_SIZE_M / _N / _K of the config or constexprs (0 when absent).
  int64_t blockM = 0, blockN = 0, blockK = 0;
  /// The record's N and K when it fixes them (shared/peer-kernels/aiter).
  int64_t n = 0, k = 0;
  std::vector<ForeignCase> cases;
};

/// Reads every record of a kernels.json (an object with "kernels", or an
/// array of records). Errors name the record and the field.
llvm::Expected<std::vector<ForeignKernel>>
readForeignKernels(llvm::StringRef path);

/// Evaluates a grid formula such as "(B, cdiv(M, 16) * cdiv(N, 64), 1)":
/// integers, B, M, N, K, cdiv(a, b), +, -, *, parentheses; three axes.
llvm::Expected<std::array<uint64_t, 3>>
evaluateForeignGrid(llvm::StringRef formula, int64_t b, int64_t m, int64_t n,
                    int64_t k);

struct ForeignRunOptions {
  int64_t b = 0, m = 0, n = 0, k = 0;
  bool tokenMajorX = false, tokenMajorY = false;
  /// Round to bf16 before adding the bias, as AITER's prequant and int8
  /// kernels do.
  bool aiterBiasRounding = false;
  uint64_t seed = 1;
  unsigned threads = 0;
  /// With a device: the timing model, one workgroup per class (Y is then
  /// incomplete and not compared).
  const DeviceTiming *timing = nullptr;
};

struct ForeignRunResult {
  emu::ExecStats stats;
  std::array<uint64_t, 3> grid = {0, 0, 0};
  /// Set when Y was compared: elements outside the tolerance, the largest
  /// error relative to max |reference|, and the first mismatch.
  bool compared = false;
  int64_t failures = 0, elements = 0;
  double maxRelativeError = 0;
  std::string message;
  bool passed() const { return !compared || failures == 0; }
};

/// Runs `kernel` (whose code object `emulator` holds) at the options' shape:
/// checks every argument's offset and size against the code object's
/// metadata, fills X, W, the scales and the bias from `seed`, launches, and
/// (without timing) compares Y with the reference of the kernel's math.
llvm::Expected<ForeignRunResult>
runForeignKernel(emu::Emulator &emulator, const ForeignKernel &kernel,
                 const ForeignRunOptions &options);

} // namespace mlir::mlafp8::runtime

#endif // MLA_FP8_RUNTIME_FOREIGNLAUNCH_H
