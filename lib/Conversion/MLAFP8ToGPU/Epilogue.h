//===- Epilogue.h - What a kernel does with its accumulators ----*- C++ -*-===//
//
// After its last K-group a workgroup hands its accumulators to an epilogue.
// Without split-K that is the output epilogue; with split-K, the split-K
// epilogue reduces the partials of all splits first and then runs the output
// epilogue it wraps. A new epilogue (another output format, a fused
// activation) is one more implementation of this interface.
//
//===----------------------------------------------------------------------===//

#ifndef MLAFP8_LIB_CONVERSION_MLAFP8TOGPU_EPILOGUE_H
#define MLAFP8_LIB_CONVERSION_MLAFP8TOGPU_EPILOGUE_H

#include "EmitterBase.h"

#include <memory>

namespace mlir::mlafp8 {

class Epilogue {
public:
  virtual ~Epilogue() = default;
  /// Emits the epilogue of this wave's accumulators, one vector of
  /// accumulators per MFMA tile, [MFMA row tile][N tile].
  virtual void emit(ValueRange accs) = 0;
};

/// Multiplies by the weight descale `descale`, adds the bias, rounds to Y's
/// type and stores Y, masking rows past M and columns past N. `kernel` must
/// have its arguments and ids bound.
std::unique_ptr<Epilogue> createOutputEpilogue(const EmitterBase &kernel,
                                               Value descale);

/// Split-K: stores this workgroup's partial to the workspace and counts its
/// arrival; the last of the split_k arrivals sums the partials in split
/// order and runs `output` on the sum.
std::unique_ptr<Epilogue>
createSplitKEpilogue(const EmitterBase &kernel,
                     std::unique_ptr<Epilogue> output);

} // namespace mlir::mlafp8

#endif // MLAFP8_LIB_CONVERSION_MLAFP8TOGPU_EPILOGUE_H
