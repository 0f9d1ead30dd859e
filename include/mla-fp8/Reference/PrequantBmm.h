//===- PrequantBmm.h - Exact reference of the quantized bmm -----*- C++ -*-===//
//
// SPEC.md's math, performed literally: group quantization of the activations
// in f32, products and sums in f64, one rounding to the output type. Every
// kernel and emulator test compares against this.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_REFERENCE_PREQUANTBMM_H
#define MLA_FP8_REFERENCE_PREQUANTBMM_H

#include "mla-fp8/Reference/Formats.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::mlafp8 {

/// The amax floor of SPEC.md, for weights and activation groups alike.
constexpr float kAmaxFloor = 1e-10f;

//===----------------------------------------------------------------------===//
// Weight quantization
//===----------------------------------------------------------------------===//

/// Quantizes `count` f32 weights with one scale for the whole tensor:
/// amax = max(max|w|, 1e-10) (f32), q = fp8(clamp(w * (FMAX / amax))) with the
/// products in f32 and RNE, written to `out`. Returns the descale amax / FMAX
/// (f32). NaN weights do not take part in amax and encode as NaN; weights are
/// expected to be finite.
float quantizeWeights(const float *w, int64_t count, FP8Format format,
                      uint8_t *out);

/// quantizeWeights of a part of a tensor whose max|w| over the whole tensor
/// is `amax` (before the 1e-10 floor): the bits and descale quantizeWeights
/// gives for the whole tensor, one chunk at a time.
float quantizeWeightsWithAmax(const float *w, int64_t count, float amax,
                              FP8Format format, uint8_t *out);

/// Per-batch (per-head) variant: `w` is (batch, perBatchCount) row-major,
/// each batch element gets its own scale; descales[b] receives its descale.
void quantizeWeightsPerBatch(const float *w, int64_t batch,
                             int64_t perBatchCount, FP8Format format,
                             uint8_t *out, float *descales);

/// Factor by which the descale must be multiplied after
/// reencodeE4M3FNToFNUZ: a non-special bit pattern means half as much in
/// E4M3FNUZ as in E4M3FN.
constexpr float kE4M3FNToFNUZDescaleFactor = 2.0f;

/// Re-encodes OCP e4m3fn bytes as e4m3fnuz for gfx942 by keeping every
/// non-special bit pattern (exact: the FNUZ value is half the OCP value, which
/// the descale doubling compensates). Specials: OCP NaN 0x7F and 0xFF ->
/// 0x80 (FNUZ NaN); OCP -0 (0x80) -> 0x00 (FNUZ +0, there is no -0). FNUZ 0x7F
/// (240) is never produced. Returns kE4M3FNToFNUZDescaleFactor (2).
float reencodeE4M3FNToFNUZ(const uint8_t *in, int64_t count, uint8_t *out);

//===----------------------------------------------------------------------===//
// Activation quantization
//===----------------------------------------------------------------------===//

/// Quantizes one group of `count` f32 values (count >= 1) exactly as SPEC.md
/// states, every step in f32:
///   amax = max(max|x|, 1e-10); s = amax * (1 / FMAX);
///   q = fp8(clamp(x * (1 / s), -FMAX, FMAX))  (RNE).
/// NaN inputs do not take part in amax (maxNum semantics) and encode as NaN.
/// Writes `count` fp8 bytes to `q` and returns s.
float quantizeGroup(const float *x, int64_t count, FP8Format format,
                    uint8_t *q);

/// Number of K-groups of a row: ceil(k / groupSize).
int64_t getNumGroups(int64_t k, int64_t groupSize);

/// Quantizes one activation row of `k` 16-bit values (raw bits of
/// `inputType`) in groups of `groupSize`; the last group is partial when
/// k % groupSize != 0. Writes `k` fp8 bytes to `q` and getNumGroups(k,
/// groupSize) scales to `scales`.
void quantizeActivationRow(const uint16_t *x, OutType inputType, int64_t k,
                           int64_t groupSize, FP8Format format, uint8_t *q,
                           float *scales);

//===----------------------------------------------------------------------===//
// The batched matmul
//===----------------------------------------------------------------------===//

/// Operands of Y[b] = X[b] · W[b]^T with group-quantized activations. All
/// strides are in elements; the innermost stride of X (along K) and of Y
/// (along N) is 1. (B, M, N) or (M, B, N) output order, and transposed or
/// strided X views, are expressed by the strides alone.
struct PrequantBmmArgs {
  /// Batch, rows, columns, reduction.
  int64_t B = 0, M = 0, N = 0, K = 0;
  /// Quantization group along K; a power of two.
  int64_t groupSize = 128;
  FP8Format format = FP8Format::E4M3FNUZ;
  /// Activation type; X holds its raw bits.
  OutType inputType = OutType::BF16;
  /// X[b, m, k] = x[b * xStrideB + m * xStrideM + k].
  const uint16_t *x = nullptr;
  int64_t xStrideB = 0, xStrideM = 0;
  /// W, (B, N, K) contiguous fp8 bits of `format`.
  const uint8_t *w = nullptr;
  /// Weight descale: one value, or B values when perBatchDescale.
  const float *weightDescale = nullptr;
  bool perBatchDescale = false;
  /// Optional bias, (B, N) contiguous raw bits of `outType`; may be null.
  const uint16_t *bias = nullptr;
  OutType outType = OutType::BF16;
  /// Y[b, m, n] = y[b * yStrideB + m * yStrideM + n].
  uint16_t *y = nullptr;
  int64_t yStrideB = 0, yStrideM = 0;
};

/// Whether distinct (b, m) rows of `n` elements, at element strides strideB
/// and strideM over extentB x extentM rows, can share an element. Only
/// dimensions with more than one row constrain the layout.
bool doRowsOverlap(int64_t strideB, int64_t extentB, int64_t strideM,
                   int64_t extentM, int64_t n);

/// Returns an empty string when `args` is valid, else a lower-case message
/// naming the offending field. Dimensions must be non-negative and K positive,
/// groupSize a positive power of two; x, w and weightDescale must be non-null
/// unless there is no output element (B, M or N is 0); with `requireOutput`,
/// y too, and distinct (b, m) rows of Y must not overlap.
std::string validatePrequantBmmArgs(const PrequantBmmArgs &args,
                                    bool requireOutput = true);

/// Computes Y exactly as SPEC.md states: per (b, m) row the activations are
/// quantized in f32 (quantizeActivationRow), then
///   acc = sum_g s[b,m,g] * sum_{k in g} q * w   (f64; products exact)
///   y   = outType(acc * ws (+ bias[b,n]))        (f64, rounded once, RNE).
/// Writes nothing when B, M or N is 0. Returns false and sets `*error` (when
/// non-null) on invalid arguments, writing nothing. With `accOverflow`, dense
/// (B, M, N), also writes 1 for each output getAccumulatorOverflow flags,
/// else 0.
bool referencePrequantBmm(const PrequantBmmArgs &args,
                          std::string *error = nullptr,
                          uint8_t *accOverflow = nullptr);

/// Same computation, but returns the f64 values before the final rounding,
/// dense (B, M, N) row-major in `out` (resized to B * M * N); args.y and the Y
/// strides are ignored. With `accOverflow`, also the flags of
/// getAccumulatorOverflow, dense (B, M, N) like `out`.
bool referencePrequantBmmF64(const PrequantBmmArgs &args,
                             std::vector<double> &out,
                             std::string *error = nullptr,
                             std::vector<uint8_t> *accOverflow = nullptr);

//===----------------------------------------------------------------------===//
// fp32 accumulator range
//===----------------------------------------------------------------------===//

/// SPEC.md's accumulator is fp32 where this reference's is f64, so for huge
/// activations (|x| from about 2.6e35 with fp8 weights near FMAX) a kernel
/// gives Inf where the f64 value is finite. An output is flagged when its
/// fp32 accumulation can overflow: a group's term fp32(s[g] * fp32(partial))
/// overflows, or the sum of the terms' magnitudes reaches the fp32 overflow
/// threshold (2^128 - 2^103, where round-to-nearest gives Inf), or so does
/// that sum times |ws|. With one K-group, or terms of one sign, these are
/// exactly the outputs whose fp32 accumulation overflows in any order; with
/// terms of mixed signs the order of the sum (split-K) decides, and a flagged
/// output may also come out finite. Rows whose scales are not finite (NaN or
/// Inf in X) are NaN anyway and are not flagged.
bool getAccumulatorOverflow(const float *terms, int64_t numGroups,
                            float descale);

//===----------------------------------------------------------------------===//
// Error metrics
//===----------------------------------------------------------------------===//

/// How far an output array is from an expected one.
struct OutputErrorStats {
  /// Largest |actual - expected| over the compared elements.
  double maxAbsError = 0.0;
  /// Largest |actual - expected| / |expected|; +Inf when expected is 0 and
  /// actual is not.
  double maxRelError = 0.0;
  /// Largest distance in output-type ulps (number of representable values
  /// between the two; +0 and -0 are at distance 0). When the expected value
  /// is f64, the distance is |actual - expected| / ulp(expected), the ulp
  /// taken in the output type at the magnitude of the expected value.
  double maxUlpDistance = 0.0;
  /// Index of the element with the largest ulp distance (-1 if none).
  int64_t worstIndex = -1;
  /// Elements where exactly one side is NaN (excluded from the maxima).
  int64_t nanMismatches = 0;
  /// Elements compared.
  int64_t count = 0;
};

/// Compares two arrays of raw `type` bits element by element.
OutputErrorStats compareOutputs(const uint16_t *actual,
                                const uint16_t *expected, int64_t count,
                                OutType type);

/// Compares raw `type` bits against unrounded f64 reference values (as from
/// referencePrequantBmmF64).
OutputErrorStats compareOutputsToF64(const uint16_t *actual,
                                     const double *expected, int64_t count,
                                     OutType type);

/// Distance in representable values between two non-NaN bit patterns of
/// `type` (+0 and -0 are at distance 0).
int64_t getUlpDistance(uint16_t a, uint16_t b, OutType type);

/// The spacing of `type` values at the magnitude of the finite `value` (the
/// smallest subnormal's spacing near 0): the ulp of SPEC.md's accuracy rule.
double getOutputUlp(double value, OutType type);

} // namespace mlir::mlafp8

#endif // MLA_FP8_REFERENCE_PREQUANTBMM_H
