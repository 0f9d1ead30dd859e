//===- KernelEmulatorTest.cpp - generated kernels vs the reference --------===//
//
// Builds a prequant_bmm, runs the mlafp8-to-hsaco pipeline in-process and
// checks the kernel that serves each M with the project's reference check
// (Runtime/Verify.h): launched on the gfx9 emulator by the kernel ABI
// (ABI/KernelABI.h), Y compared with the exact reference, repeated launches
// bitwise equal, split-K counters left at 0.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"
#include "mla-fp8/Pipelines/Pipelines.h"
#include "mla-fp8/Runtime/Verify.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

#include <memory>

using namespace mlir;
using namespace mlir::mlafp8;

namespace {

struct Case {
  std::string chip = "gfx942";
  int64_t B = 2, N = 512, K = 128, groupSize = 128;
  std::vector<int64_t> ms = {1};
  bool perBatch = false, bias = false, f16 = false;
  bool xTokenMajor = false, yTokenMajor = false;
  /// Extra elements between X rows (a strided view); a multiple of 8.
  int64_t xRowPadding = 0;
  /// A NaN row and an Inf row in batch 0, and some all-zero K-groups.
  bool specials = false;
  /// Explicit tiles (attribute text); empty: mlafp8-select-tiles.
  std::vector<TileConfig> tiles;
  /// Emulator threads of each run: every M is launched once per entry, on
  /// the same (never re-zeroed) workspace, and every run must give the same
  /// bits. More threads change the order in which workgroups finish.
  std::vector<unsigned> threads = {2};
};

std::string printTile(const TileConfig &t) {
  std::string mfma = t.mfma->shapeName.str();
  std::string stages = std::to_string(t.stages);
  return "#mlafp8.tile<min_rows = " + std::to_string(t.minRows) +
         ", max_rows = " + std::to_string(t.maxRows) +
         ", block_m = " + std::to_string(t.blockM) +
         ", block_n = " + std::to_string(t.blockN) +
         ", waves = " + std::to_string(t.waves) + ", mfma = " + mfma +
         ", split_k = " + std::to_string(t.splitK) + ", stages = " + stages +
         ", occupancy = 2>";
}

/// The MLIR source of one prequant_bmm for `c`.
std::string buildSource(const Case &c) {
  std::string fp8 = c.chip == "gfx942" ? "f8E4M3FNUZ" : "f8E4M3FN";
  std::string act = c.f16 ? "f16" : "bf16";
  std::string B = std::to_string(c.B), N = std::to_string(c.N),
              K = std::to_string(c.K);
  std::string xType = "tensor<" + (c.xTokenMajor ? "?x" + B : B + "x?") + "x" +
                      K + "x" + act + ">";
  std::string yType = "tensor<" + (c.yTokenMajor ? "?x" + B : B + "x?") + "x" +
                      N + "x" + act + ">";
  std::string wType = "tensor<" + B + "x" + N + "x" + K + "x" + fp8 + ">";
  std::string wsType = "tensor<" + std::string(c.perBatch ? B : "1") + "xf32>";
  std::string biasType = "tensor<" + B + "x" + N + "x" + act + ">";
  std::string attrs = "group_size = " + std::to_string(c.groupSize) + " : i64";
  if (c.perBatch)
    attrs += ", w_scale_mode = #mlafp8<weight_scale per_batch>";
  if (c.xTokenMajor)
    attrs += ", x_layout = #mlafp8<layout mb>";
  if (c.yTokenMajor)
    attrs += ", y_layout = #mlafp8<layout mb>";
  if (!c.tiles.empty()) {
    attrs += ", tiles = [";
    for (size_t i = 0; i < c.tiles.size(); ++i)
      attrs += (i ? ", " : "") + printTile(c.tiles[i]);
    attrs += "]";
  }
  std::string args = "%x: " + xType + ", %w: " + wType + ", %ws: " + wsType;
  if (c.bias)
    args += ", %bias: " + biasType;
  return "func.func @f(" + args + ") -> " + yType +
         " {\n  %y = " + "mlafp8.prequant_bmm %x, %w, %ws" +
         (c.bias ? " bias %bias" : "") + " {" + attrs + "} : " + xType + ", " +
         wType + ", " + wsType + (c.bias ? ", " + biasType : "") + " -> " +
         yType + "\n  return %y : " + yType + "\n}\n";
}

/// Runs the pipeline; returns the code object bytes of @f_kernels.
std::string compile(const Case &c) {
  DialectRegistry registry;
  registerMLAFP8PipelineDependencies(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(buildSource(c), &context);
  if (!module)
    return {};
  PassManager pm(&context);
  MLAFP8ToHsacoPipelineOptions options;
  options.chip = c.chip;
  populateMLAFP8ToHsacoPipeline(pm, options);
  if (failed(pm.run(*module)))
    return {};
  for (auto binary : module->getOps<gpu::BinaryOp>())
    for (Attribute object : binary.getObjects())
      return cast<gpu::ObjectAttr>(object).getObject().str();
  return {};
}

/// The bundle-style description of the kernel compiled for `tile`: what the
/// launcher and the reference check read (the kernel ABI's arguments,
/// workgroup and grid, which the launcher checks against the code object).
runtime::KernelEntry describeKernel(const Case &c, const TileConfig &tile,
                                    std::shared_ptr<const std::string> code) {
  kernel_abi::KernelDescription d;
  d.chip = c.chip;
  d.n = c.N;
  d.k = c.K;
  d.groupSize = c.groupSize;
  d.inType = d.outType = c.f16 ? "f16" : "bf16";
  d.fp8Type = c.chip == "gfx942" ? "f8E4M3FNUZ" : "f8E4M3FN";
  d.weightScale = c.perBatch ? kernel_abi::WeightScaleMode::PerBatch
                             : kernel_abi::WeightScaleMode::PerTensor;
  d.hasBias = c.bias;
  return runtime::makeKernelEntry(d, tile.minRows, tile.maxRows,
                                  tile.getLaunchShape(c.N), std::move(code));
}

/// Runs every M of `c` through the reference check, each M once per entry of
/// `c.threads` on one launcher (so split-K kernels reuse their workspace,
/// never re-zeroed), and counts the split-K launches in `splitLaunches`.
void runCaseImpl(const Case &c, int64_t &splitLaunches) {
  std::string code = compile(c);
  ASSERT_FALSE(code.empty()) << "compilation failed:\n" << buildSource(c);
  auto codeObject = std::make_shared<const std::string>(std::move(code));

  std::vector<TileConfig> tiles = c.tiles;
  if (tiles.empty()) {
    auto selection = selectTiles(c.chip, c.N, c.K, c.groupSize);
    ASSERT_TRUE(static_cast<bool>(selection));
    tiles.assign(selection->tiles.begin(), selection->tiles.end());
  }
  runtime::EmulatorLauncher launcher;
  for (int64_t M : c.ms) {
    SCOPED_TRACE("M = " + std::to_string(M));
    // M = 0 launches nothing: the lowest range's kernel describes it.
    const TileConfig *tile =
        findTileForRows(tiles, std::max<int64_t>(c.B * M, 1));
    ASSERT_NE(tile, nullptr);
    runtime::KernelEntry kernel = describeKernel(c, *tile, codeObject);
    runtime::VerifyProblem problem;
    problem.batch = c.B;
    problem.m = M;
    problem.seed = 1234 + M;
    problem.x = {c.xTokenMajor, c.xRowPadding};
    problem.y = {c.yTokenMajor, 0};
    problem.varyRowScales = true;
    problem.specials = problem.zeroGroups = c.specials;
    problem.threads = c.threads.front();
    problem.repeatThreads.assign(c.threads.begin() + 1, c.threads.end());
    runtime::VerifyResult result =
        runtime::verifyKernel(launcher, kernel, problem);
    EXPECT_TRUE(result.passed())
        << kernel.symbol << ": " << result.error << result.message;
    if (tile->splitK > 1 && M > 0)
      splitLaunches += result.launches;
  }
}

/// Runs every M of `c` and checks Y element by element; returns the number
/// of split-K launches.
int64_t runCase(const Case &c) {
  int64_t splitLaunches = 0;
  runCaseImpl(c, splitLaunches);
  return splitLaunches;
}

TEST(KernelEmulator, KUpGfx942EveryRange) {
  Case c;
  c.ms = {1, 5, 16, 17, 40, 65, 129, 300, 513};
  runCase(c);
}

TEST(KernelEmulator, VUpGfx942EveryRange) {
  Case c;
  c.N = 128;
  c.K = 512;
  c.ms = {1, 7, 17, 33, 70, 130, 260, 520};
  runCase(c);
}

TEST(KernelEmulator, KUpAndVUpGfx950) {
  Case kup;
  kup.chip = "gfx950";
  kup.ms = {1, 20, 300, 513};
  runCase(kup);
  Case vup = kup;
  vup.N = 128;
  vup.K = 512;
  vup.ms = {3, 40, 520};
  runCase(vup);
}

TEST(KernelEmulator, Gfx950EveryKernelNaNAndInfRows) {
  // Each default gfx950 kernel (all f8f6f4) at one M of its range: a NaN row
  // and an Inf row give NaN rows of Y, other rows and all-zero groups match
  // the reference.
  Case kup;
  kup.chip = "gfx950";
  kup.specials = true;
  kup.ms = {16, 17, 64, 65, 256, 257, 513};
  runCase(kup);
  Case vup = kup;
  vup.N = 128;
  vup.K = 512;
  runCase(vup);
}

TEST(KernelEmulator, PartialGroupShapesNaNAndInfRows) {
  // GLM-5's K-up (K = 192: a full group and a 64-column tail) and
  // MiniCPM3's (K = 64: the tail alone), through the tile table's kernels on
  // both chips, at M on both sides of range edges: a NaN row and an Inf row
  // give NaN rows of Y, other rows and all-zero groups match the reference
  // (the tail's chunks past K read as zeros, not as the next row's values).
  for (const char *chip : {"gfx942", "gfx950"}) {
    Case glm;
    glm.chip = chip;
    glm.B = 8;
    glm.N = 512;
    glm.K = 192;
    glm.specials = true;
    glm.ms = {1, 5, 160, 161};
    runCase(glm);
    Case minicpm = glm;
    minicpm.B = 5;
    minicpm.N = 256;
    minicpm.K = 64;
    minicpm.ms = {1, 3, 128, 129};
    runCase(minicpm);
  }
}

TEST(KernelEmulator, PerBatchBiasF16TokenMajor) {
  Case c;
  c.N = 128;
  c.K = 512;
  c.B = 3;
  c.perBatch = c.bias = c.f16 = true;
  c.xTokenMajor = c.yTokenMajor = true;
  c.ms = {1, 37, 130};
  runCase(c);
}

TEST(KernelEmulator, StridedXAndTokenMajorY) {
  Case c;
  c.xRowPadding = 64;
  c.yTokenMajor = true;
  c.ms = {3, 50};
  runCase(c);
}

TEST(KernelEmulator, PartialLastGroupAndNTail) {
  // K = 200: one full group and 72 columns; N = 40 is not a multiple of the
  // tile; both MFMA shapes.
  Case c;
  c.N = 40;
  c.K = 200;
  c.ms = {1, 19, 70};
  c.tiles = {{1, 16, 16, 32, 2, lookupMfma("m16n16k32")},
             {17, 0, 32, 32, 1, lookupMfma("m32n32k16")}};
  runCase(c);
  c.chip = "gfx950";
  c.bias = true;
  runCase(c);
}

TEST(KernelEmulator, PrefetchWithPartialLastGroup) {
  // Three full groups with the next group's loads in flight (stages = 2),
  // then a 72-column tail.
  Case c;
  c.N = 96;
  c.K = 456;
  c.ms = {2, 40};
  c.tiles = {{1, 16, 16, 32, 2, lookupMfma("m16n16k32"), 1, 2},
             {17, 0, 64, 64, 4, lookupMfma("m32n32k16"), 1, 2}};
  runCase(c);
}

TEST(KernelEmulator, SmallGroupsUse8ByteUnits) {
  // G = 32 with 16x16x32 and G = 16 with 32x32x16: one MFMA step per group.
  Case c;
  c.N = 64;
  c.K = 96;
  c.groupSize = 32;
  c.ms = {5};
  c.tiles = {{1, 0, 16, 32, 2, lookupMfma("m16n16k32")}};
  runCase(c);
  c.groupSize = 16;
  c.tiles = {{1, 0, 32, 32, 1, lookupMfma("m32n32k16")}};
  runCase(c);
}

/// Split-K tiles for V-up: 4 ways (one group each, single-wave and
/// four-wave tiles) and 2 ways with the second group prefetched. The table
/// splits only at small M; these keep every split shape under test.
std::vector<TileConfig> getSplitKTiles() {
  const MfmaLayout *k16 = lookupMfma("m16n16k32");
  return {{1, 16, 16, 16, 1, k16, 4, 1},
          {17, 32, 32, 64, 4, k16, 4, 1},
          {33, 0, 32, 16, 1, k16, 2, 2}};
}

TEST(KernelEmulator, VUpSplitKGfx942) {
  // Y must match the reference and be bitwise the same with 1 and 4 emulator
  // threads (different arrival orders), on a workspace zeroed only once.
  Case c;
  c.N = 128;
  c.K = 512;
  c.B = 4;
  c.tiles = getSplitKTiles();
  c.ms = {1, 5, 16, 17, 23, 32, 40, 64};
  c.threads = {1, 4, 4};
  EXPECT_EQ(runCase(c), 8 * 3);
}

TEST(KernelEmulator, VUpSplitKGfx950) {
  Case c;
  c.chip = "gfx950";
  c.N = 128;
  c.K = 512;
  c.B = 4;
  c.tiles = getSplitKTiles();
  c.ms = {1, 9, 17, 32};
  c.threads = {1, 4, 4};
  EXPECT_EQ(runCase(c), 4 * 3);
}

TEST(KernelEmulator, SplitKPerBatchBiasF16TokenMajor) {
  for (const char *chip : {"gfx942", "gfx950"}) {
    SCOPED_TRACE(chip);
    Case c;
    c.chip = chip;
    c.N = 128;
    c.K = 512;
    c.B = 3;
    c.perBatch = c.bias = c.f16 = true;
    c.xTokenMajor = c.yTokenMajor = true;
    c.tiles = getSplitKTiles();
    c.ms = {1, 13, 30};
    c.threads = {1, 4};
    EXPECT_EQ(runCase(c), 3 * 2);
  }
}

TEST(KernelEmulator, SplitKUnevenWithPartialGroupAndPrefetch) {
  // K = 456: three full groups and a 72-column tail (4 groups). split_k = 3
  // gives the splits groups {0}, {1}, {2, tail}; split_k = 2 gives {0, 1}
  // and {2, tail}, with the next group's loads in flight; N = 96 leaves an N
  // tail in the 64-wide tiles; four waves with 32x32x16 MFMAs.
  Case c;
  c.N = 96;
  c.K = 456;
  c.ms = {2, 16, 40, 70};
  c.tiles = {{1, 16, 16, 32, 2, lookupMfma("m16n16k32"), 3, 2},
             {17, 0, 64, 64, 4, lookupMfma("m32n32k16"), 2, 2}};
  c.threads = {1, 4};
  EXPECT_EQ(runCase(c), 4 * 2);
  c.chip = "gfx950";
  c.bias = true;
  EXPECT_EQ(runCase(c), 4 * 2);
}

/// gfx950's f8f6f4 MFMAs: one 16x16x128 (or two 32x32x64) per 128-column
/// group and output block, 32 operand bytes per lane.
TEST(KernelEmulator, F8F6F4KUpAndVUp) {
  const MfmaLayout *k128 = lookupMfma("m16n16k128");
  const MfmaLayout *k64 = lookupMfma("m32n32k64");
  Case c;
  c.chip = "gfx950";
  c.specials = true;
  c.ms = {1, 16, 17, 40, 100};
  c.tiles = {{1, 16, 16, 128, 8, k128},
             {17, 32, 32, 128, 8, k128},
             {33, 64, 64, 256, 8, k64},
             {65, 0, 32, 64, 2, k128}};
  runCase(c);
  // V-up: four groups, all loaded at once, one LDS copy each.
  c.N = 128;
  c.K = 512;
  c.tiles = {{1, 16, 16, 64, 4, k128, 1, 4},
             {17, 64, 32, 128, 8, k128, 1, 4},
             {65, 0, 64, 128, 4, k64, 1, 2}};
  runCase(c);
}

TEST(KernelEmulator, F8F6F4PartialGroupSplitKAndNTail) {
  // K = 200: the 72-column tail fills part of one 16x16x128 step; N = 40.
  Case c;
  c.chip = "gfx950";
  c.N = 40;
  c.K = 200;
  c.bias = true;
  c.specials = true;
  c.ms = {1, 19, 70};
  c.tiles = {{1, 16, 16, 32, 2, lookupMfma("m16n16k128"), 2, 2},
             {17, 0, 32, 32, 1, lookupMfma("m32n32k64")}};
  c.threads = {1, 4};
  EXPECT_EQ(runCase(c), 2 * 1);
}

TEST(KernelEmulator, F8F6F4LongGroups) {
  // G = 256: two MFMA steps per 64-byte unit, and a row's amax spans 32
  // lanes (two DPP rows joined by v_permlane16_swap, which
  // amax-permlane-gfx950.mlir checks). G = 512: 64 lanes (v_permlane32_swap
  // too), two units per group.
  Case c;
  c.chip = "gfx950";
  c.N = 64;
  c.K = 512;
  c.groupSize = 256;
  c.specials = true;
  c.ms = {3, 33};
  c.tiles = {{1, 16, 16, 64, 4, lookupMfma("m16n16k128"), 1, 2},
             {17, 0, 32, 64, 2, lookupMfma("m32n32k64")}};
  runCase(c);
  c.K = 1000;
  c.groupSize = 512;
  runCase(c);
}

} // namespace

TEST(KernelEmulator, StraightLineGroupsAndDeepLoops) {
  // The group schedules KernelPlan picks (KernelPlanTest covers which is
  // picked), each against the reference with NaN/Inf rows and zero groups:
  const MfmaLayout *k16 = lookupMfma("m16n16k32");
  const MfmaLayout *k32 = lookupMfma("m32n32k16");
  Case c;
  c.N = 64;
  c.specials = true;
  c.ms = {3, 40};
  // eight straight-line groups, one LDS copy each, all loaded at once;
  c.K = 1024;
  c.tiles = {{1, 0, 16, 64, 4, k16, 1, 4}};
  runCase(c);
  // eight straight-line groups, one copy for all (its A operands exceed the
  // register budget), two groups in flight;
  c.tiles = {{1, 0, 32, 64, 4, k16, 1, 2}};
  runCase(c);
  // a loop of nine groups with three and four groups in flight, the last
  // iterations re-loading the clamped last group;
  c.K = 1152;
  c.tiles = {{1, 16, 16, 64, 4, k16, 1, 3}, {17, 0, 32, 64, 2, k32, 1, 4}};
  runCase(c);
  // splits of four straight-line groups each, and uneven splits (a loop).
  c.K = 1024;
  c.tiles = {{1, 16, 16, 64, 4, k16, 2, 4}, {17, 0, 16, 64, 4, k16, 3, 2}};
  runCase(c);
}
