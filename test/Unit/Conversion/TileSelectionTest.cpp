//===- TileSelectionTest.cpp - tile table and heuristic -------------------===//

#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Dialect.h"
#include "mla-fp8/Target/Chip.h"

#include "gtest/gtest.h"

using namespace mlir::mlafp8;
using llvm::StringRef;

namespace {

/// Workgroups of one launch of the kernel of `tile` (the ABI's grid).
int64_t countWorkgroups(const TileConfig &tile, int64_t n, int64_t m,
                        int64_t batch) {
  std::array<int64_t, 3> grid =
      kernel_abi::getGrid(tile.getLaunchShape(n), m, batch);
  return grid[0] * grid[1] * grid[2];
}

/// Every selection covers rows = 1.. without gaps, ends unbounded, fits the LDS
/// and splits K at most `maxSplitK` ways.
void expectWellFormed(const TileSelection &selection, StringRef chip,
                      int64_t groupSize, int64_t maxSplitK = 1) {
  const ChipInfo *facts = lookupChip(chip);
  ASSERT_TRUE(facts);
  ASSERT_FALSE(selection.tiles.empty());
  int64_t next = 1;
  for (const TileConfig &tile : selection.tiles) {
    EXPECT_EQ(tile.minRows, next);
    EXPECT_GE(tile.splitK, 1);
    EXPECT_LE(tile.splitK, maxSplitK);
    EXPECT_LE(kernel_abi::getLDSBytes(tile.blockM, groupSize),
              facts->ldsBytesPerWorkgroup);
    ASSERT_NE(tile.mfma, nullptr);
    EXPECT_TRUE(facts->hasMfma(*tile.mfma)) << tile.mfma->mnemonic.str();
    // The attribute verifier accepts every selected tile, stages and
    // occupancy included.
    mlir::MLIRContext context;
    context.loadDialect<MLAFP8Dialect>();
    EXPECT_TRUE(TileAttr::getChecked(
        [&] { return mlir::emitError(mlir::UnknownLoc::get(&context)); },
        &context, tile.minRows, tile.maxRows, tile.blockM, tile.blockN,
        tile.waves, tile.mfma, tile.splitK, tile.stages, tile.occupancy));
    next = tile.maxRows == 0 ? 0 : tile.maxRows + 1;
  }
  EXPECT_EQ(next, 0) << "the last tile must be unbounded";
}

TEST(TileSelection, DeepSeekShapesComeFromTheTable) {
  for (StringRef chip : {"gfx942", "gfx950"})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{512, 128}, {128, 512}}) {
      auto selection = selectTiles(chip, n, k, 128);
      ASSERT_TRUE(static_cast<bool>(selection))
          << llvm::toString(selection.takeError());
      EXPECT_EQ(selection->source, TileSource::Table);
      // split_k never exceeds the K-groups (K-up has one).
      expectWellFormed(*selection, chip, 128, k / 128);
    }
}

TEST(TileSelection, DecodeLaunchesUseNarrowTiles) {
  // What timing model 3 chose (TileTable.cpp): a decode launch (B = 8 to
  // 128 heads, M = 1 to 16 tokens: at most 2048 rows) leaves CUs idle with
  // any tile, so its tile takes the fewest rows a workgroup can (16, one
  // MFMA block) and at least two waves; no tile splits K (its partials cost
  // two round trips and HBM traffic), and V-up loads all four of its groups
  // at once (stages = 4).
  for (StringRef chip : {"gfx942", "gfx950"})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{512, 128}, {128, 512}}) {
      auto selection = selectTiles(chip, n, k, 128);
      ASSERT_TRUE(static_cast<bool>(selection));
      for (int64_t rows : {1, 8, 16, 128, 256, 257, 1024, 2048}) {
        const TileConfig *tile = findTileForRows(selection->tiles, rows);
        ASSERT_NE(tile, nullptr);
        SCOPED_TRACE(chip.str() + " N = " + std::to_string(n) +
                     " rows = " + std::to_string(rows));
        EXPECT_EQ(tile->blockM, 16);
        EXPECT_GE(tile->waves, 2);
        EXPECT_EQ(tile->splitK, 1);
        EXPECT_EQ(tile->stages, n == 128 ? 4 : 1);
      }
    }
}

TEST(TileSelection, LargeLaunchesUseWideTiles) {
  // Launches of several residency rounds (B * M of 65536: 128 heads at
  // M = 512) take the widest tiles, which quantize X least often.
  for (StringRef chip : {"gfx942", "gfx950"})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{512, 128}, {128, 512}}) {
      auto selection = selectTiles(chip, n, k, 128);
      ASSERT_TRUE(static_cast<bool>(selection));
      const TileConfig *tile = findTileForRows(selection->tiles, 65536);
      ASSERT_NE(tile, nullptr);
      SCOPED_TRACE(chip.str() + " N = " + std::to_string(n));
      EXPECT_GE(tile->blockM, 32);
      EXPECT_EQ(tile->waves, 8);
      EXPECT_GE(tile->blockN, std::min<int64_t>(n, 256));
    }
}

TEST(TileSelection, EveryRowCountHasATile) {
  auto selection = selectTiles("gfx942", 512, 128, 128);
  ASSERT_TRUE(static_cast<bool>(selection));
  for (int64_t rows : std::initializer_list<int64_t>{
           1, 2, 16, 17, 64, 65, 1000, 1024, 1025, 100000, int64_t(1) << 40})
    EXPECT_NE(findTileForRows(selection->tiles, rows), nullptr) << rows;
  EXPECT_EQ(findTileForRows(selection->tiles, 0), nullptr);
  EXPECT_EQ(countWorkgroups(selection->tiles.front(), 512, 0, 16), 0);
}

TEST(TileSelection, HeuristicForOtherShapes) {
  for (StringRef chip : {"gfx942", "gfx950"})
    for (auto [n, k, g] : {std::tuple<int64_t, int64_t, int64_t>{384, 256, 128},
                           {40, 200, 128},
                           {4096, 7168, 128},
                           {512, 128, 16},
                           {128, 2048, 1024}}) {
      auto selection = selectTiles(chip, n, k, g);
      ASSERT_TRUE(static_cast<bool>(selection));
      EXPECT_EQ(selection->source, TileSource::Heuristic);
      expectWellFormed(*selection, chip, g);
      if (g < 32) {
        for (const TileConfig &tile : selection->tiles)
          EXPECT_EQ(tile.mfma, lookupMfma("m32n32k16"));
      }
    }
}

TEST(TileSelection, F8F6F4WhereTheGroupHoldsItsK) {
  // gfx950's f8f6f4 MFMAs model never slower than the 16x16x32 / 32x32x16
  // tiles of the same blocks (TileTable.cpp), in the table and in the
  // heuristic tiles; gfx942 has none, and a group shorter than their K keeps
  // the older shapes.
  for (StringRef chip : {"gfx942", "gfx950"})
    for (auto [n, k, g] : {std::tuple<int64_t, int64_t, int64_t>{512, 128, 128},
                           {128, 512, 128},
                           {4096, 7168, 128},
                           {384, 256, 64},
                           {384, 256, 32}}) {
      SCOPED_TRACE(chip.str() + " N = " + std::to_string(n) +
                   " G = " + std::to_string(g));
      auto selection = selectTiles(chip, n, k, g);
      ASSERT_TRUE(static_cast<bool>(selection));
      for (const TileConfig &tile : selection->tiles) {
        // K of 16x16x128 and 32x32x64.
        int64_t twinK = tile.mfma->m == 16 ? 128 : 64;
        bool expected = chip == "gfx950" && g >= twinK;
        EXPECT_EQ(tile.mfma->f8f6f4, expected) << tile.mfma->shapeName.str();
      }
    }
}

TEST(TileSelection, Errors) {
  auto unknown = selectTiles("gfx90a", 512, 128, 128);
  ASSERT_FALSE(static_cast<bool>(unknown));
  EXPECT_EQ(llvm::toString(unknown.takeError()),
            "unknown chip 'gfx90a'; supported chips: gfx942, gfx950");
  auto group = selectTiles("gfx942", 512, 128, 8);
  ASSERT_FALSE(static_cast<bool>(group));
  EXPECT_NE(llvm::toString(group.takeError()).find("at least 16"),
            std::string::npos);
}

} // namespace
