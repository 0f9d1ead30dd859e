//===- TileSelection.cpp - Tile lookup and the fallback heuristic
//----------===//

#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"

#include "TileTable.h"
#include "mla-fp8/Target/Chip.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::mlafp8;

TileAttr TileConfig::toAttr(MLIRContext *context) const {
  return TileAttr::get(context, minM, maxM, blockM, blockN, waves, mfma, splitK,
                       stages, occupancy);
}

TileConfig TileConfig::fromAttr(TileAttr attr) {
  return {attr.getMinM(),   attr.getMaxM(),   attr.getBlockM(),
          attr.getBlockN(), attr.getWaves(),  attr.getMfma(),
          attr.getSplitK(), attr.getStages(), attr.getOccupancy()};
}

const TileConfig *mlir::mlafp8::findTileForM(ArrayRef<TileConfig> tiles,
                                             int64_t m) {
  for (const TileConfig &tile : tiles)
    if (tile.containsM(m))
      return &tile;
  return nullptr;
}

int64_t mlir::mlafp8::countWorkgroups(const TileConfig &tile, int64_t n,
                                      int64_t m, int64_t batch) {
  return llvm::divideCeil(n, tile.blockN) * tile.splitK *
         llvm::divideCeil(m, tile.blockM) * batch;
}

int64_t mlir::mlafp8::getTileLDSBytes(const TileConfig &tile,
                                      int64_t groupSize) {
  return tile.blockM * groupSize + 4 * tile.blockM;
}

/// The batch the heuristic assumes when it sizes the grid: DeepSeek-class
/// models at TP8 have 16 heads per rank; fewer heads only make narrow tiles
/// more worthwhile.
static constexpr int64_t kAssumedBatch = 16;

/// Picks one tile for the M range [minM, maxM] of a shape the table lacks:
/// the widest N tile that still gives at least one workgroup per CU at the
/// top of the range, the 32x32x16 MFMA for large blocks, and a block that
/// fits the chip's LDS.
static TileConfig pickTile(const ChipInfo &chip, int64_t n, int64_t groupSize,
                           int64_t numGroups, int64_t minM, int64_t maxM,
                           int64_t blockM) {
  int64_t topM = maxM == 0 ? 1024 : maxM;
  // 16x16x32 needs groups of at least 32 columns; 32x32x16 needs 16.
  bool big = (blockM >= 64 && topM > 256) || groupSize < 32;
  MfmaShape mfma = big ? MfmaShape::M32N32K16 : MfmaShape::M16N16K32;
  int64_t dim = big ? 32 : 16;
  blockM = std::max(blockM, dim);
  while (blockM > dim &&
         blockM * groupSize + 4 * blockM > chip.ldsBytesPerWorkgroup)
    blockM /= 2;

  int64_t maxN = std::max<int64_t>(dim, llvm::PowerOf2Ceil(n));
  int64_t blockN = dim;
  for (int64_t candidate : {128, 64, 32, 16}) {
    if (candidate < dim || candidate > maxN)
      continue;
    int64_t groups = llvm::divideCeil(n, candidate) *
                     llvm::divideCeil(topM, blockM) * kAssumedBatch;
    if (groups >= chip.numCUs) {
      blockN = candidate;
      break;
    }
  }
  int64_t waves = std::min<int64_t>(4, blockN / dim);
  // Prefetch the next K-group when there is one.
  int64_t stages = numGroups > 1 ? 2 : 1;
  return {minM, maxM, blockM, blockN, waves, mfma, /*splitK=*/1, stages};
}

llvm::Expected<TileSelection> mlir::mlafp8::selectTiles(StringRef chipName,
                                                        int64_t n, int64_t k,
                                                        int64_t groupSize) {
  const ChipInfo *chip = lookupChip(chipName);
  if (!chip)
    return llvm::createStringError(describeUnsupportedChip(chipName));
  if (n < 1 || k < 1)
    return llvm::createStringError(
        "N and K must be at least 1, got N = " + std::to_string(n) +
        ", K = " + std::to_string(k));
  if (groupSize < 16 || !llvm::isPowerOf2_64(groupSize))
    return llvm::createStringError(
        "group size must be a power of two of at least 16, got " +
        std::to_string(groupSize));

  for (const TileTableEntry &entry : getTileTable())
    if (entry.chip == chip->name && entry.n == n && entry.k == k &&
        entry.groupSize == groupSize)
      return TileSelection{SmallVector<TileConfig>(entry.tiles),
                           TileSource::Table};

  struct Range {
    int64_t minM, maxM, blockM;
  };
  static constexpr Range ranges[] = {
      {1, 16, 16},    {17, 32, 32},   {33, 64, 32}, {65, 128, 64},
      {129, 256, 64}, {257, 512, 64}, {513, 0, 128}};
  TileSelection selection{{}, TileSource::Heuristic};
  for (const Range &range : ranges)
    selection.tiles.push_back(pickTile(*chip, n, groupSize,
                                       llvm::divideCeil(k, groupSize),
                                       range.minM, range.maxM, range.blockM));
  return selection;
}
