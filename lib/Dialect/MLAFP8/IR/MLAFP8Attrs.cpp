//===- MLAFP8Attrs.cpp - mlafp8 attributes --------------------------------===//

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Attrs.h"
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Dialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mlafp8;

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Enums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Attrs.cpp.inc"

void MLAFP8Dialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Attrs.cpp.inc"
      >();
}

int64_t TileAttr::getMfmaM() const {
  switch (getMfma()) {
  case MfmaShape::M16N16K32:
  case MfmaShape::M16N16K128:
    return 16;
  case MfmaShape::M32N32K16:
  case MfmaShape::M32N32K64:
    return 32;
  }
  llvm_unreachable("unknown MFMA shape");
}

int64_t TileAttr::getMfmaN() const { return getMfmaM(); }

int64_t TileAttr::getMfmaK() const {
  switch (getMfma()) {
  case MfmaShape::M16N16K32:
    return 32;
  case MfmaShape::M32N32K16:
    return 16;
  case MfmaShape::M16N16K128:
    return 128;
  case MfmaShape::M32N32K64:
    return 64;
  }
  llvm_unreachable("unknown MFMA shape");
}

LogicalResult TileAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t minM, int64_t maxM, int64_t blockM,
                               int64_t blockN, int64_t waves, MfmaShape mfma,
                               int64_t splitK, int64_t stages,
                               int64_t occupancy) {
  if (minM < 1)
    return emitError() << "min_m must be at least 1, got " << minM;
  if (maxM != 0 && maxM < minM)
    return emitError() << "max_m must be 0 (unbounded) or at least min_m ("
                       << minM << "), got " << maxM;
  int64_t mfmaDim =
      (mfma == MfmaShape::M16N16K32 || mfma == MfmaShape::M16N16K128) ? 16 : 32;
  if (blockM < 1 || blockM % mfmaDim != 0)
    return emitError() << "block_m must be a positive multiple of the MFMA's "
                       << mfmaDim << " rows, got " << blockM;
  if (blockN < 1 || blockN % mfmaDim != 0)
    return emitError() << "block_n must be a positive multiple of the MFMA's "
                       << mfmaDim << " columns, got " << blockN;
  // Far above any useful block; keeps the tile arithmetic below from
  // overflowing.
  constexpr int64_t kMaxBlock = 4096;
  if (blockM > kMaxBlock || blockN > kMaxBlock)
    return emitError() << "block_m and block_n must be at most " << kMaxBlock
                       << ", got " << blockM << "x" << blockN;
  if (waves < 1 || waves > 16)
    return emitError() << "waves must be between 1 and 16, got " << waves;
  int64_t mfmaTiles = (blockM / mfmaDim) * (blockN / mfmaDim);
  if (mfmaTiles % waves != 0)
    return emitError() << "the " << mfmaTiles << " MFMA tiles of a " << blockM
                       << "x" << blockN << " block cannot be shared evenly by "
                       << waves << " waves";
  // Each wave keeps its share of the block's fp32 accumulators in registers
  // (4 per lane per 16x16 tile, 16 per 32x32 tile); beyond half of the 512
  // VGPRs + AGPRs a lane has, nothing is left for the operands. This also
  // bounds the unrolled code the lowering emits.
  int64_t accPerLane = (mfmaTiles / waves) * (mfmaDim == 16 ? 4 : 16);
  if (accPerLane > 256)
    return emitError() << "a " << blockM << "x" << blockN << " block on "
                       << waves << " waves needs " << accPerLane
                       << " accumulator registers per lane, more than 256";
  if (splitK < 1)
    return emitError() << "split_k must be at least 1, got " << splitK;
  if (stages < 1 || stages > 4)
    return emitError() << "stages must be between 1 and 4, got " << stages;
  if (occupancy < 1 || occupancy > 8)
    return emitError() << "occupancy must be between 1 and 8, got "
                       << occupancy;
  return success();
}
