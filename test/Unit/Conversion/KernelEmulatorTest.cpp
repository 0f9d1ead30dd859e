//===- KernelEmulatorTest.cpp - generated kernels vs the reference --------===//
//
// Builds a prequant_bmm, runs the mlafp8-to-hsaco pipeline in-process, loads
// the code object into the gfx9 emulator, launches the kernel that serves M
// with the documented ABI (KernelABI.h) and compares Y with the reference.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"
#include "mla-fp8/Emulator/Emulator.h"
#include "mla-fp8/Pipelines/Pipelines.h"
#include "mla-fp8/Reference/Formats.h"
#include "mla-fp8/Reference/PrequantBmm.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>

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
  return "#mlafp8.tile<min_m = " + std::to_string(t.minM) +
         ", max_m = " + std::to_string(t.maxM) +
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

uint16_t toOut(float v, bool f16) {
  return f16 ? floatToF16(v) : floatToBF16(v);
}
double fromOut(uint16_t v, bool f16) {
  return f16 ? f16ToFloat(v) : bf16ToFloat(v);
}
double ulpOf(double v, bool f16) {
  v = std::fabs(v);
  int mantissa = f16 ? 10 : 7;
  double minNormal = f16 ? 0x1p-14 : 0x1p-126;
  if (v < minNormal)
    return std::ldexp(minNormal, -mantissa);
  return std::ldexp(1.0, std::ilogb(v) - mantissa);
}

/// Runs every M of `c`, checks Y element by element, and counts the split-K
/// launches in `splitLaunches`.
void runCaseImpl(const Case &c, int64_t &splitLaunches) {
  std::string code = compile(c);
  ASSERT_FALSE(code.empty()) << "compilation failed:\n" << buildSource(c);
  auto codeObject = emu::CodeObject::fromBytes(ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(code.data()), code.size()));
  ASSERT_TRUE(static_cast<bool>(codeObject))
      << llvm::toString(codeObject.takeError());
  auto emulator = emu::Emulator::create(std::move(*codeObject));
  ASSERT_TRUE(static_cast<bool>(emulator))
      << llvm::toString(emulator.takeError());

  std::vector<TileConfig> tiles = c.tiles;
  if (tiles.empty()) {
    auto selection = selectTiles(c.chip, c.N, c.K, c.groupSize);
    ASSERT_TRUE(static_cast<bool>(selection));
    tiles.assign(selection->tiles.begin(), selection->tiles.end());
  }
  kernel_abi::KernelNameFields name;
  name.n = c.N;
  name.k = c.K;
  name.groupSize = c.groupSize;
  name.outType = c.f16 ? "f16" : "bf16";
  name.perBatchScale = c.perBatch;
  name.hasBias = c.bias;
  name.chip = c.chip;
  FP8Format format =
      c.chip == "gfx942" ? FP8Format::E4M3FNUZ : FP8Format::E4M3FN;

  for (int64_t M : c.ms) {
    SCOPED_TRACE("M = " + std::to_string(M));
    const TileConfig *tile = findTileForM(tiles, M);
    ASSERT_NE(tile, nullptr);
    name.minM = tile->minM;
    name.maxM = tile->maxM;
    std::string kernel = kernel_abi::getKernelSymbol(name);
    int64_t B = c.B, N = c.N, K = c.K;
    std::mt19937_64 rng(1234 + M);
    std::normal_distribution<float> normal(0.0f, 1.0f);

    // X, with a per-row magnitude so that rows get different scales.
    int64_t rowPitch = K + c.xRowPadding;
    int64_t xStrideB = c.xTokenMajor ? rowPitch : M * rowPitch;
    int64_t xStrideM = c.xTokenMajor ? B * rowPitch : rowPitch;
    std::vector<uint16_t> x(std::max<int64_t>(B * M * rowPitch, 1));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k)
          x[b * xStrideB + m * xStrideM + k] = toOut(
              normal(rng) * std::ldexp(1.0f, int((m + b) % 7) - 3), c.f16);
    std::vector<float> wf(B * N * K);
    for (float &v : wf)
      v = normal(rng) * 0.05f;
    std::vector<uint8_t> w(B * N * K);
    std::vector<float> ws(c.perBatch ? B : 1);
    if (c.perBatch)
      quantizeWeightsPerBatch(wf.data(), B, N * K, format, w.data(), ws.data());
    else
      ws[0] = quantizeWeights(wf.data(), int64_t(wf.size()), format, w.data());
    std::vector<uint16_t> bias(B * N);
    for (uint16_t &v : bias)
      v = toOut(normal(rng), c.f16);

    int64_t yStrideB = c.yTokenMajor ? N : M * N;
    int64_t yStrideM = c.yTokenMajor ? B * N : N;
    const uint16_t sentinel = 0x7fc1;
    std::vector<uint16_t> y(std::max<int64_t>(B * M * N, 1), sentinel);

    PrequantBmmArgs args;
    args.B = B;
    args.M = M;
    args.N = N;
    args.K = K;
    args.groupSize = c.groupSize;
    args.format = format;
    args.inputType = c.f16 ? OutType::F16 : OutType::BF16;
    args.x = x.data();
    args.xStrideB = xStrideB;
    args.xStrideM = xStrideM;
    args.w = w.data();
    args.weightDescale = ws.data();
    args.perBatchDescale = c.perBatch;
    args.bias = c.bias ? bias.data() : nullptr;
    args.outType = c.f16 ? OutType::F16 : OutType::BF16;
    std::vector<double> ref;
    std::string error;
    ASSERT_TRUE(referencePrequantBmmF64(args, ref, &error)) << error;

    emu::DeviceMemory memory;
    auto map = [&](StringRef name, auto &vec, bool readOnly) {
      size_t bytes = vec.size() * sizeof(vec[0]);
      uint64_t address = memory.allocate(name, bytes, 256);
      llvm::cantFail(memory.write(
          address, ArrayRef<uint8_t>(
                       reinterpret_cast<const uint8_t *>(vec.data()), bytes)));
      memory.lookup(name)->readOnly = readOnly;
      return address;
    };
    uint64_t xAddr = map("X", x, true), wAddr = map("W", w, true),
             wsAddr = map("ws", ws, true), yAddr = map("Y", y, false);
    uint64_t biasAddr = c.bias ? map("bias", bias, true) : 0;
    // The split-K workspace, zeroed once (the contract in KernelABI.h);
    // null without split-K.
    int64_t mTiles = llvm::divideCeil(M, tile->blockM);
    kernel_abi::LaunchShape launch = tile->getLaunchShape(N);
    int64_t blockBytes = *kernel_abi::getWorkspaceBytesPerBlock(launch);
    ASSERT_EQ(blockBytes == 0, tile->splitK == 1);
    ASSERT_EQ(blockBytes % kernel_abi::kWorkspaceAlignment, 0);
    std::vector<uint8_t> workspace(B * mTiles * blockBytes, 0);
    uint64_t workspaceAddr =
        workspace.empty() ? 0 : map("workspace", workspace, false);

    emu::DispatchConfig config;
    std::array<int64_t, 3> grid = kernel_abi::getGrid(launch, M, B);
    std::array<int64_t, 3> block = kernel_abi::getWorkgroupSize(launch);
    config.gridWorkgroups = {uint32_t(grid[0]), uint32_t(grid[1]),
                             uint32_t(grid[2])};
    config.workgroupSize = {uint32_t(block[0]), 1, 1};
    std::vector<emu::KernelArg> kernelArgs = {
        emu::KernelArg::pointer(xAddr),
        emu::KernelArg::pointer(wAddr),
        emu::KernelArg::pointer(wsAddr),
        emu::KernelArg::pointer(biasAddr),
        emu::KernelArg::pointer(yAddr),
        emu::KernelArg::i64(M),
        emu::KernelArg::i64(xStrideB),
        emu::KernelArg::i64(xStrideM),
        emu::KernelArg::i64(yStrideB),
        emu::KernelArg::i64(yStrideM),
        emu::KernelArg::pointer(workspaceAddr)};
    std::vector<uint8_t> packed = emu::packKernelArgs(kernelArgs);
    ASSERT_EQ(packed.size(), kernel_abi::kKernargBytes);
    ASSERT_EQ(kernel_abi::getKernelArgs().size(), kernelArgs.size());
    for (auto [index, argument] : llvm::enumerate(kernel_abi::getKernelArgs()))
      ASSERT_EQ(argument.offset, 8 * index);

    std::vector<uint16_t> firstRun;
    for (unsigned threads : c.threads) {
      SCOPED_TRACE("threads = " + std::to_string(threads));
      std::fill(y.begin(), y.end(), sentinel);
      llvm::cantFail(memory.write(
          yAddr, ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(y.data()),
                                   y.size() * 2)));
      config.threads = threads;
      if (M > 0) {
        auto stats = (*emulator)->dispatch(kernel, config, packed, memory);
        ASSERT_TRUE(static_cast<bool>(stats))
            << kernel << ": " << llvm::toString(stats.takeError());
        if (tile->splitK > 1)
          ++splitLaunches;
      }
      llvm::cantFail(memory.read(
          yAddr, MutableArrayRef<uint8_t>(reinterpret_cast<uint8_t *>(y.data()),
                                          y.size() * 2)));
      // Same bits whatever order the workgroups ran in.
      if (firstRun.empty())
        firstRun = y;
      else
        ASSERT_TRUE(firstRun == y) << kernel << ": Y differs between runs";
      // Every arrival counter is back to 0: the workspace is reusable.
      if (!workspace.empty()) {
        llvm::cantFail(memory.read(workspaceAddr, workspace));
        int64_t nTiles = llvm::divideCeil(N, tile->blockN);
        int64_t counters =
            nTiles * tile->splitK * tile->blockM * tile->blockN * 4;
        for (int64_t blockIndex = 0; blockIndex < B * mTiles; ++blockIndex)
          for (int64_t t = 0; t < nTiles; ++t) {
            uint32_t counter;
            std::memcpy(&counter,
                        &workspace[blockIndex * blockBytes + counters + 4 * t],
                        4);
            ASSERT_EQ(counter, 0u) << kernel << ": counter of block "
                                   << blockIndex << ", tile " << t;
          }
      }
    }

    double maxRef = 0;
    for (double r : ref)
      maxRef = std::max(maxRef, std::fabs(r));
    int64_t failures = 0, unwritten = 0;
    std::string first;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          uint16_t got = y[b * yStrideB + m * yStrideM + n];
          double expected = ref[(b * M + m) * N + n];
          if (got == sentinel) {
            ++unwritten;
            continue;
          }
          double tolerance = ulpOf(expected, c.f16) + 0x1p-20 * maxRef;
          if (!(std::fabs(fromOut(got, c.f16) - expected) <= tolerance) &&
              failures++ == 0)
            first = "Y[" + std::to_string(b) + "," + std::to_string(m) + "," +
                    std::to_string(n) +
                    "] = " + std::to_string(fromOut(got, c.f16)) +
                    ", reference " + std::to_string(expected);
        }
    EXPECT_EQ(unwritten, 0) << kernel;
    EXPECT_EQ(failures, 0) << kernel << ": first " << first;
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

TEST(KernelEmulator, VUpSplitKGfx942) {
  // The table splits K 4 ways for M <= 32 and 2 ways for M = 33..64: Y must
  // match the reference and be bitwise the same with 1 and 4 emulator
  // threads (different arrival orders), on a workspace zeroed only once.
  Case c;
  c.N = 128;
  c.K = 512;
  c.B = 4;
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

} // namespace
