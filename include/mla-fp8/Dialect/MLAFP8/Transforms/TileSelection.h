//===- TileSelection.h - Tile configurations per chip, shape and M -*- C++
//-*-===//
//
// The C++ face of `mlafp8-select-tiles`: which kernels (one per range of
// launch rows, B x M) a prequant_bmm of a given (N, K, group size) gets on a
// chip. The AOT generator calls it to list the kernels and their ranges; the
// pass attaches the same list to the op as `#mlafp8.tile`s.
//
//===----------------------------------------------------------------------===//

#ifndef MLAFP8_DIALECT_MLAFP8_TRANSFORMS_TILESELECTION_H
#define MLAFP8_DIALECT_MLAFP8_TRANSFORMS_TILESELECTION_H

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Attrs.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace mlir::mlafp8 {

/// One kernel's tiling, for the launches of `minRows <= B * M <= maxRows`
/// rows (`maxRows` 0: unbounded). Mirrors `#mlafp8.tile`.
struct TileConfig {
  int64_t minRows;
  int64_t maxRows;
  int64_t blockM;
  int64_t blockN;
  int64_t waves;
  const MfmaLayout *mfma;
  int64_t splitK = 1;
  int64_t stages = 1;
  int64_t occupancy = kTileOccupancy;

  /// Whether a launch of `rows` = B * M rows is served by this tile.
  bool containsRows(int64_t rows) const {
    return rows >= minRows && (maxRows == 0 || rows <= maxRows);
  }
  /// The attribute form.
  TileAttr toAttr(MLIRContext *context) const;
  /// The launch facts of the kernel of this tile for N = `n` (ABI/KernelABI.h).
  kernel_abi::LaunchShape getLaunchShape(int64_t n) const {
    return {n, blockM, blockN, waves, splitK};
  }
};

/// Where a selection came from.
enum class TileSource {
  /// A tuned entry of the table in TileTable.cpp.
  Table,
  /// The heuristic, for a shape the table lacks.
  Heuristic,
};

/// A complete selection: tiles sorted by rows, covering every row count >= 1,
/// the last one unbounded.
struct TileSelection {
  SmallVector<TileConfig> tiles;
  TileSource source;
};

/// Selects the tiles for a prequant_bmm with `n` output columns, reduction
/// depth `k` and K-groups of `groupSize` on `chip` (e.g. "gfx942"). Fails for
/// an unknown chip (the message lists the supported ones) or a group size the
/// kernels cannot handle (below 16).
llvm::Expected<TileSelection> selectTiles(StringRef chip, int64_t n, int64_t k,
                                          int64_t groupSize);

/// The tile of `tiles` that serves a launch of `rows` = B * M rows, or null.
const TileConfig *findTileForRows(ArrayRef<TileConfig> tiles, int64_t rows);

} // namespace mlir::mlafp8

#endif // MLAFP8_DIALECT_MLAFP8_TRANSFORMS_TILESELECTION_H
