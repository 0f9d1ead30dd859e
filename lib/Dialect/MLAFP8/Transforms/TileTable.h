//===- TileTable.h - The tuned tile table ------------------------*- C++
//-*-===//

#ifndef MLAFP8_LIB_DIALECT_MLAFP8_TRANSFORMS_TILETABLE_H
#define MLAFP8_LIB_DIALECT_MLAFP8_TRANSFORMS_TILETABLE_H

#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"

namespace mlir::mlafp8 {

/// The tiles of one (chip, N, K, group size), sorted by M.
struct TileTableEntry {
  StringRef chip;
  int64_t n;
  int64_t k;
  int64_t groupSize;
  ArrayRef<TileConfig> tiles;
};

/// Every tuned entry (TileTable.cpp).
ArrayRef<TileTableEntry> getTileTable();

} // namespace mlir::mlafp8

#endif // MLAFP8_LIB_DIALECT_MLAFP8_TRANSFORMS_TILETABLE_H
