//===- KernelPlanTest.cpp - planKernel reads the MFMA records -------------===//
//
// The kernel plan of a prequant_bmm: the geometry it derives from the MFMA
// record and the tile, and the message of every tile it refuses.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Conversion/MLAFP8ToGPU/KernelPlan.h"
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Dialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::mlafp8;

namespace {

class KernelPlanTest : public ::testing::Test {
protected:
  KernelPlanTest() { context.loadDialect<MLAFP8Dialect, func::FuncDialect>(); }

  /// Parses one prequant_bmm of (B = 16, N, K) with fp8 type `fp8`.
  PrequantBmmOp parse(int64_t n, int64_t k, int64_t groupSize,
                      StringRef fp8 = "f8E4M3FNUZ") {
    std::string x = "tensor<16x?x" + std::to_string(k) + "xbf16>";
    std::string w = "tensor<16x" + std::to_string(n) + "x" + std::to_string(k) +
                    "x" + fp8.str() + ">";
    std::string y = "tensor<16x?x" + std::to_string(n) + "xbf16>";
    std::string source =
        "func.func @f(%x: " + x + ", %w: " + w + ", %ws: tensor<1xf32>) -> " +
        y + " {\n" + "  %y = mlafp8.prequant_bmm %x, %w, %ws {group_size = " +
        std::to_string(groupSize) + " : i64} : " + x + ", " + w +
        ", tensor<1xf32> -> " + y + "\n  return %y : " + y + "\n}\n";
    OwningOpRef<ModuleOp> &module =
        modules.emplace_back(parseSourceString<ModuleOp>(source, &context));
    EXPECT_TRUE(module);
    PrequantBmmOp op;
    if (module)
      module->walk([&](PrequantBmmOp found) { op = found; });
    return op;
  }

  TileAttr tile(int64_t blockM, int64_t blockN, int64_t waves, StringRef mfma,
                int64_t splitK = 1, int64_t stages = 1) {
    return TileAttr::get(&context, 1, 0, blockM, blockN, waves,
                         lookupMfma(mfma), splitK, stages, kTileOccupancy);
  }

  /// The error planKernel reports, or "" when it plans the kernel.
  std::string planError(PrequantBmmOp op, StringRef chip, TileAttr attr) {
    llvm::Expected<KernelPlan> plan = planKernel(op, *lookupChip(chip), attr);
    return plan ? "" : llvm::toString(plan.takeError());
  }

  MLIRContext context;
  /// Every parsed module, alive until the test ends.
  std::vector<OwningOpRef<ModuleOp>> modules;
};

TEST_F(KernelPlanTest, SixteenBySixteenFromTheRecord) {
  // DeepSeek K-up: one group of 128, a 32x64 tile on 4 waves.
  PrequantBmmOp op = parse(512, 128, 128);
  llvm::Expected<KernelPlan> plan =
      planKernel(op, *lookupChip("gfx942"), tile(32, 64, 4, "m16n16k32"));
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->mfma, lookupMfma("m16n16k32"));
  EXPECT_EQ(plan->waveSize, kernel_abi::kWaveSize);
  EXPECT_EQ(plan->laneGroups, 4);
  EXPECT_EQ(plan->operandBytes, 8);
  EXPECT_EQ(plan->accumulators, 4);
  // 128 = 2 units x 4 lane groups x 16 bytes: two MFMA steps per unit.
  EXPECT_EQ(plan->unitBytes, 16);
  EXPECT_EQ(plan->stepsPerUnit, 2);
  EXPECT_EQ(plan->unitsPerGroup, 2);
  // 2 x 4 MFMA tiles: the 4 waves take one N tile each, both M tiles.
  EXPECT_EQ(plan->wavesN, 4);
  EXPECT_EQ(plan->wavesM, 1);
  EXPECT_EQ(plan->mtPerWave, 2);
  EXPECT_EQ(plan->ntPerWave, 1);
  EXPECT_EQ(plan->waveCols, 16);
  // 256 lanes, 16 chunks of 8 per row: 16 rows per pass, 2 passes.
  EXPECT_EQ(plan->threads, 256);
  EXPECT_EQ(plan->lanesPerRow, 16);
  EXPECT_EQ(plan->rowsPerPass, 16);
  EXPECT_EQ(plan->passes, 2);
  EXPECT_EQ(plan->numGroups, 1);
  EXPECT_EQ(plan->workspaceBlockElements, 0);
  EXPECT_EQ(plan->ldsABytes, 32 * 128);
}

TEST_F(KernelPlanTest, ThirtyTwoByThirtyTwoWithSplitK) {
  // V-up with a partial last group: K = 500 is 3 full groups of 128 + 116.
  PrequantBmmOp op = parse(128, 500, 128);
  llvm::Expected<KernelPlan> plan =
      planKernel(op, *lookupChip("gfx942"), tile(64, 64, 2, "m32n32k16", 2, 2));
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->laneGroups, 2);
  EXPECT_EQ(plan->accumulators, 16);
  EXPECT_EQ(plan->unitBytes, 16);
  EXPECT_EQ(plan->unitsPerGroup, 4);
  EXPECT_EQ(plan->wavesN, 2);
  EXPECT_EQ(plan->mtPerWave, 2);
  EXPECT_EQ(plan->fullGroups, 3);
  EXPECT_EQ(plan->tailColumns, 116);
  EXPECT_EQ(plan->numGroups, 4);
  EXPECT_EQ(plan->maxGroupsPerWorkgroup, 2);
  // K is a multiple of 4, not 8: X rows are only 2-byte aligned.
  EXPECT_EQ(plan->xAlign, 2);
  EXPECT_EQ(plan->wAlign, 4);
  // The ABI's workspace block, in f32 elements.
  EXPECT_EQ(plan->workspaceBlockElements * 4,
            *kernel_abi::getWorkspaceBytesPerBlock(plan->launch));
  // The counters follow the partials: 2 N tiles x 2 splits x 64 x 64.
  EXPECT_EQ(plan->workspaceCountersElement, 2 * 2 * 64 * 64);
}

TEST_F(KernelPlanTest, ShortGroupsLoadOneStepPerUnit) {
  // 32 = 1 unit x 4 lane groups x 8 bytes.
  PrequantBmmOp op = parse(512, 128, 32);
  llvm::Expected<KernelPlan> plan =
      planKernel(op, *lookupChip("gfx942"), tile(16, 16, 1, "m16n16k32"));
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->unitBytes, 8);
  EXPECT_EQ(plan->stepsPerUnit, 1);
  EXPECT_EQ(plan->unitsPerGroup, 1);
}

TEST_F(KernelPlanTest, Refusals) {
  PrequantBmmOp kup = parse(512, 128, 128);
  EXPECT_EQ(planError(kup, "gfx942", tile(16, 16, 1, "m16n16k32")), "");
  // gfx942 lacks the f8f6f4 MFMAs; their K is above small groups.
  EXPECT_EQ(planError(kup, "gfx942", tile(16, 16, 1, "m16n16k128")),
            "gfx942 has no v_mfma_f32_16x16x128_f8f6f4");
  PrequantBmmOp ocp64 = parse(512, 128, 64, "f8E4M3FN");
  EXPECT_EQ(planError(ocp64, "gfx950", tile(16, 16, 1, "m16n16k128")),
            "group_size 64 is smaller than the MFMA's K (128)");
  EXPECT_EQ(planError(ocp64, "gfx950", tile(32, 32, 1, "m32n32k64")), "");
  EXPECT_EQ(planError(kup, "gfx942", tile(16, 32, 4, "m16n16k32")),
            "the 1x2 MFMA tiles cannot be split among 4 waves (N first, "
            "then M)");
  EXPECT_EQ(planError(kup, "gfx942", tile(16, 16, 1, "m16n16k32", 2)),
            "split_k = 2 exceeds the 1 K-groups");
  PrequantBmmOp shortGroups = parse(512, 128, 16);
  EXPECT_EQ(planError(shortGroups, "gfx942", tile(16, 16, 1, "m16n16k32")),
            "group_size 16 is smaller than the MFMA's K (32)");
  PrequantBmmOp longGroups = parse(128, 1024, 1024);
  EXPECT_EQ(planError(longGroups, "gfx942", tile(128, 32, 1, "m32n32k16")),
            "the tile needs 131584 bytes of LDS, more than the 65536 of "
            "gfx942");
  EXPECT_EQ(planError(longGroups, "gfx950", tile(128, 32, 1, "m32n32k16")), "");
}

TEST_F(KernelPlanTest, F8F6F4Units) {
  // 32 operand bytes per lane: a 128-column group is one 16x16x128 step (or
  // two 32x32x64 steps in one 64-byte unit); a 256-column group pairs steps.
  for (int64_t group : {128, 256}) {
    PrequantBmmOp op = parse(512, 512, group, "f8E4M3FN");
    for (const char *shape : {"m16n16k128", "m32n32k64"}) {
      SCOPED_TRACE(std::string(shape) + " G = " + std::to_string(group));
      const MfmaLayout &mfma = *lookupMfma(shape);
      llvm::Expected<KernelPlan> plan = planKernel(
          op, *lookupChip("gfx950"), tile(mfma.m, mfma.n * 2, 2, shape));
      ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
      EXPECT_EQ(plan->operandBytes, 32);
      int64_t unitBytes = group / mfma.getLaneGroups() >= 64 ? 64 : 32;
      EXPECT_EQ(plan->unitBytes, unitBytes);
      EXPECT_EQ(plan->stepsPerUnit, unitBytes / 32);
      EXPECT_EQ(plan->unitsPerGroup * unitBytes * plan->laneGroups, group);
    }
  }
}

TEST_F(KernelPlanTest, EveryRecordIsPlannedOrNamed) {
  // Each record a tile can name either plans with its own shape or is refused
  // by its mnemonic on the chips that lack it; nothing else in the generator
  // lists the MFMAs.
  PrequantBmmOp op = parse(512, 512, 512, "f8E4M3FN");
  for (const char *chipName : {"gfx942", "gfx950"})
    for (const MfmaLayout &mfma : getMfmaLayouts()) {
      if (mfma.blockScaled)
        continue;
      SCOPED_TRACE(std::string(chipName) + " " + mfma.mnemonic.str());
      const ChipInfo &chip = *lookupChip(chipName);
      llvm::Expected<KernelPlan> plan =
          planKernel(op, chip, tile(mfma.m, mfma.n, 1, mfma.shapeName));
      if (!chip.hasMfma(mfma)) {
        ASSERT_FALSE(static_cast<bool>(plan));
        EXPECT_NE(llvm::toString(plan.takeError()).find(mfma.mnemonic.str()),
                  std::string::npos);
        continue;
      }
      ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
      EXPECT_EQ(plan->mfma, &mfma);
      EXPECT_EQ(plan->laneGroups, mfma.getLaneGroups());
      EXPECT_EQ(plan->operandBytes, mfma.getOperandBytesPerLane());
      EXPECT_EQ(plan->accumulators, mfma.getAccumulatorsPerLane());
      EXPECT_EQ(plan->unitsPerGroup * plan->unitBytes * plan->laneGroups, 512);
    }
}

} // namespace

TEST_F(KernelPlanTest, StraightLineGroupsWithinTheirBudgets) {
  auto shape = [&](int64_t n, int64_t k, int64_t g, TileAttr attr) {
    llvm::Expected<KernelPlan> plan =
        planKernel(parse(n, k, g), *lookupChip("gfx942"), attr);
    EXPECT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
    return plan ? std::pair{plan->unrolledGroups, plan->ldsBuffers}
                : std::pair<int64_t, int64_t>{-1, -1};
  };
  using Pair = std::pair<int64_t, int64_t>;
  // DeepSeek's V-up tiles: four groups, four LDS copies (96 and 128 of the
  // 128 registers).
  EXPECT_EQ(shape(128, 512, 128, tile(16, 64, 4, "m16n16k32", 1, 4)),
            Pair(4, 4));
  EXPECT_EQ(shape(128, 512, 128, tile(32, 128, 8, "m16n16k32", 1, 4)),
            Pair(4, 4));
  // One group (K-up): straight-line, one copy.
  EXPECT_EQ(shape(512, 128, 128, tile(32, 128, 8, "m16n16k32")), Pair(1, 1));
  // Eight groups of 32x128: their loads fit (128) but not with the A
  // operands of eight copies: unrolled with one copy, a barrier pair each.
  EXPECT_EQ(shape(128, 1024, 128, tile(32, 128, 8, "m16n16k32", 1, 2)),
            Pair(8, 1));
  // Single-wave 64x32 and 128x32 tiles of eight 64-column groups spilled
  // when unrolled (16 and 32 X chunks per lane and group): a loop.
  EXPECT_EQ(shape(128, 512, 64, tile(64, 32, 1, "m32n32k16", 1, 2)),
            Pair(0, 1));
  EXPECT_EQ(shape(128, 512, 64, tile(128, 32, 1, "m32n32k16", 1, 1)),
            Pair(0, 1));
  // More than eight groups: a loop; a split with a static count: unrolled.
  EXPECT_EQ(shape(128, 1152, 128, tile(16, 64, 4, "m16n16k32", 1, 2)),
            Pair(0, 1));
  EXPECT_EQ(shape(128, 1024, 128, tile(16, 64, 4, "m16n16k32", 2, 2)),
            Pair(4, 4));
  // A partial group (K = 200) leaves splits without a static count.
  EXPECT_EQ(shape(128, 200, 128, tile(16, 64, 4, "m16n16k32", 2, 1)),
            Pair(0, 1));
  // Two LDS copies of a 128-row tile exceed kMaxBatchedLDSBytes (2 x
  // 16.5 KiB), although the registers would allow them (96).
  EXPECT_EQ(shape(64, 256, 128, tile(128, 16, 8, "m16n16k32", 1, 2)),
            Pair(2, 1));
}
