//===- TileSelection.cpp - Tile lookup and the fallback heuristic
//----------===//

#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"

#include "TileTable.h"
#include "mla-fp8/Target/Chip.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::mlafp8;

TileAttr TileConfig::toAttr(MLIRContext *context) const {
  return TileAttr::get(context, minRows, maxRows, blockM, blockN, waves, mfma,
                       splitK, stages, occupancy);
}

const TileConfig *mlir::mlafp8::findTileForRows(ArrayRef<TileConfig> tiles,
                                                int64_t rows) {
  for (const TileConfig &tile : tiles)
    if (tile.containsRows(rows))
      return &tile;
  return nullptr;
}

/// The batch the heuristic assumes when it turns a range of rows (B * M)
/// into tokens per batch, to size blocks and the grid: DeepSeek-class models
/// at TP8 have 16 heads per rank.
static constexpr int64_t kAssumedBatch = 16;

/// Picks one tile for the rows [minRows, maxRows] of a shape the table
/// lacks: the widest N tile that still gives at least one workgroup per CU at
/// the top of the range, the 32x32x16 MFMA for large blocks (gfx950: the
/// f8f6f4 forms of both), and a block that fits the chip's LDS.
static TileConfig pickTile(const ChipInfo &chip, int64_t n, int64_t groupSize,
                           int64_t numGroups, int64_t minRows, int64_t maxRows,
                           int64_t blockM) {
  int64_t topM = maxRows == 0 ? 1024 : maxRows / kAssumedBatch;
  // Both chips have these two; a group shorter than the small one's K needs
  // the large one.
  static const MfmaLayout *const small = lookupMfma("m16n16k32");
  static const MfmaLayout *const large = lookupMfma("m32n32k16");
  bool big = (blockM >= 64 && topM > 256) || groupSize < small->k;
  const MfmaLayout *mfma = big ? large : small;
  // gfx950's f8f6f4 twin of the same output block, where the group holds its
  // K: never slower in the timing model (fewer MFMAs per group, the table's
  // comments give the numbers).
  for (const MfmaLayout &twin : getMfmaLayouts())
    if (twin.f8f6f4 && !twin.blockScaled && twin.m == mfma->m &&
        twin.n == mfma->n && twin.k <= groupSize && chip.hasMfma(twin))
      mfma = &twin;
  int64_t rows = mfma->m, columns = mfma->n;
  blockM = std::max(blockM, rows);
  while (blockM > rows &&
         kernel_abi::getLDSBytes(blockM, groupSize) > chip.ldsBytesPerWorkgroup)
    blockM /= 2;

  int64_t maxN = std::max<int64_t>(columns, llvm::PowerOf2Ceil(n));
  int64_t blockN = columns;
  for (int64_t candidate : {128, 64, 32, 16}) {
    if (candidate < columns || candidate > maxN)
      continue;
    std::array<int64_t, 3> grid = kernel_abi::getGrid(
        {n, blockM, candidate, /*waves=*/1, /*splitK=*/1}, topM, kAssumedBatch);
    if (grid[0] * grid[1] * grid[2] >= chip.numCUs) {
      blockN = candidate;
      break;
    }
  }
  int64_t waves = std::min<int64_t>(4, blockN / columns);
  // Prefetch the next K-group when there is one.
  int64_t stages = numGroups > 1 ? 2 : 1;
  return {minRows, maxRows, blockM, blockN, waves, mfma, /*splitK=*/1, stages};
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
  if (groupSize < kernel_abi::kMinGroupSize || !llvm::isPowerOf2_64(groupSize))
    return llvm::createStringError(
        "group size must be a power of two of at least " +
        std::to_string(kernel_abi::kMinGroupSize) + ", got " +
        std::to_string(groupSize));

  for (const TileTableEntry &entry : getTileTable())
    if (entry.chip == chip->name && entry.n == n && entry.k == k &&
        entry.groupSize == groupSize)
      return TileSelection{SmallVector<TileConfig>(entry.tiles),
                           TileSource::Table};

  // Ranges of rows: kAssumedBatch times M = 1-16, 17-32, 33-64, ... 513 up.
  struct Range {
    int64_t minRows, maxRows, blockM;
  };
  static constexpr Range ranges[] = {
      {1, 256, 16},     {257, 512, 32},   {513, 1024, 32}, {1025, 2048, 64},
      {2049, 4096, 64}, {4097, 8192, 64}, {8193, 0, 128}};
  TileSelection selection{{}, TileSource::Heuristic};
  for (const Range &range : ranges) {
    TileConfig tile =
        pickTile(*chip, n, groupSize, llvm::divideCeil(k, groupSize),
                 range.minRows, range.maxRows, range.blockM);
    // Even the smallest block holds one whole K-group per row in LDS.
    int64_t lds = kernel_abi::getLDSBytes(tile.blockM, groupSize);
    if (lds > chip->ldsBytesPerWorkgroup)
      return llvm::createStringError(
          "group size " + std::to_string(groupSize) + " needs " +
          std::to_string(lds) + " bytes of LDS for a block of " +
          std::to_string(tile.blockM) + " rows, more than the " +
          std::to_string(chip->ldsBytesPerWorkgroup) + " of " +
          chip->name.str());
    selection.tiles.push_back(tile);
  }
  return selection;
}
