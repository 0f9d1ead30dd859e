//===- MLAFP8Attrs.cpp - mlafp8 attributes --------------------------------===//

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Attrs.h"
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Dialect.h"

#include "mla-fp8/ABI/KernelABI.h"

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

FailureOr<MfmaRecord> mlir::mlafp8::parseMfmaLayout(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  if (const MfmaLayout *mfma = lookupMfma(name))
    return mfma;
  std::string known;
  for (const MfmaLayout &mfma : getMfmaLayouts())
    if (!mfma.blockScaled)
      known += (known.empty() ? "" : ", ") + mfma.shapeName.str();
  return parser.emitError(loc)
         << "unknown fp8 MFMA '" << name << "'; known: " << known;
}

LogicalResult TileAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t minRows, int64_t maxRows, int64_t blockM,
                               int64_t blockN, int64_t waves,
                               const MfmaLayout *mfma, int64_t splitK,
                               int64_t stages, int64_t occupancy) {
  if (minRows < 1)
    return emitError() << "min_rows must be at least 1, got " << minRows;
  if (maxRows != 0 && maxRows < minRows)
    return emitError() << "max_rows must be 0 (unbounded) or at least "
                          "min_rows ("
                       << minRows << "), got " << maxRows;
  if (!mfma)
    return emitError() << "mfma must be an fp8 MFMA record";
  if (blockM < 1 || blockM % mfma->m != 0)
    return emitError() << "block_m must be a positive multiple of the MFMA's "
                       << mfma->m << " rows, got " << blockM;
  if (blockN < 1 || blockN % mfma->n != 0)
    return emitError() << "block_n must be a positive multiple of the MFMA's "
                       << mfma->n << " columns, got " << blockN;
  // The kernel ABI's bounds: far above any useful block, they keep the tile
  // arithmetic below and the launch formulas from overflowing.
  if (blockM > kernel_abi::kMaxTileDim || blockN > kernel_abi::kMaxTileDim)
    return emitError() << "block_m and block_n must be at most "
                       << kernel_abi::kMaxTileDim << ", got " << blockM << "x"
                       << blockN;
  if (waves < 1 || waves > kernel_abi::kMaxWaves)
    return emitError() << "waves must be between 1 and "
                       << kernel_abi::kMaxWaves << ", got " << waves;
  int64_t mfmaTiles = (blockM / mfma->m) * (blockN / mfma->n);
  if (mfmaTiles % waves != 0)
    return emitError() << "the " << mfmaTiles << " MFMA tiles of a " << blockM
                       << "x" << blockN << " block cannot be shared evenly by "
                       << waves << " waves";
  // Each wave keeps its share of the block's fp32 accumulators in registers;
  // beyond half of the 512 VGPRs + AGPRs a lane has, nothing is left for the
  // operands. This also bounds the unrolled code the lowering emits.
  int64_t accPerLane = (mfmaTiles / waves) * mfma->getAccumulatorsPerLane();
  if (accPerLane > 256)
    return emitError() << "a " << blockM << "x" << blockN << " block on "
                       << waves << " waves needs " << accPerLane
                       << " accumulator registers per lane, more than 256";
  if (splitK < 1 || splitK > kernel_abi::kMaxSplitK)
    return emitError() << "split_k must be between 1 and "
                       << kernel_abi::kMaxSplitK << ", got " << splitK;
  if (stages < 1 || stages > kMaxTileStages)
    return emitError() << "stages must be between 1 and " << kMaxTileStages
                       << " (deeper pipelines are not generated), got "
                       << stages;
  if (occupancy != kTileOccupancy)
    return emitError() << "occupancy must be " << kTileOccupancy
                       << " (the generator does not use it yet), got "
                       << occupancy;
  return success();
}
