//===- EmptyLaunchTest.cpp - M = 0 and B = 0 launch nothing ---------------===//
//
// A data-parallel attention rank can get a batch without tokens (M = 0), and
// an embedder may pass B = 0: both are no-ops on every launch path of the C++
// API. Nothing is read or written, so the pointers may be null; the kernel's
// code object is never decoded, and a split-K kernel's workspace is neither
// allocated nor touched.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/AOT/KernelSet.h"
#include "mla-fp8/AOT/Presets.h"
#include "mla-fp8/Embedding/Runtime.h"
#include "mla-fp8/Runtime/EmulatorLaunch.h"
#include "mla-fp8/Runtime/Verify.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"

#include <memory>
#include <utility>

using namespace mlir::mlafp8;
using runtime::KernelEntry;
using runtime::LoadedBundle;

namespace {

/// The empty launches (B, M): no tokens, no batches, neither.
const std::pair<int64_t, int64_t> kEmpty[] = {{16, 0}, {0, 5}, {0, 0}};

/// DeepSeek-R1 at TP 8 on gfx942 with bf16 activations, V-up given an
/// explicit tile that splits K two ways at every launch (the tile table no
/// longer splits), loaded through the embedding API. The build tree's cache
/// compiles it once for every test process.
std::shared_ptr<const LoadedBundle> getSplitKBundle() {
  static const std::shared_ptr<const LoadedBundle> bundle = [] {
    llvm::SmallString<128> dir;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("mlafp8-empty", dir));
    llvm::sys::path::append(dir, "bundle");
    BundleOptions options;
    KernelSetOptions &ks = options.kernels;
    ks.dims = lookupModelPreset("deepseek-r1")->dims;
    ks.tp = {8};
    ks.tpExplicit = true;
    ks.maxM = 64;
    ks.chips = {"gfx942"};
    ks.inTypes = {"bf16"};
    llvm::Expected<TileConfig> tile = parseTileSpec("16x64x4:m16n16k32:2:2");
    EXPECT_TRUE(bool(tile)) << llvm::toString(tile.takeError());
    if (tile)
      ks.tiles = {{"v_up", *tile}};
    options.outputDir = std::string(dir);
    options.cacheDir = MLAFP8_TEST_BUNDLE_CACHE;
    llvm::Expected<BundleResult> result = generateBundle(options);
    EXPECT_TRUE(bool(result)) << llvm::toString(result.takeError());
    std::string error;
    std::shared_ptr<const LoadedBundle> loaded =
        embedding::loadBundle(std::string(dir), error);
    EXPECT_TRUE(loaded) << error;
    llvm::sys::fs::remove_directories(llvm::sys::path::parent_path(dir));
    return loaded;
  }();
  return bundle;
}

/// The kernel the lookup gives a launch of `batch` x `m` rows, which for M = 0
/// or B = 0 is the lowest range's.
const KernelEntry *findKernel(int64_t n, int64_t k, int64_t m, int64_t batch) {
  std::shared_ptr<const LoadedBundle> bundle = getSplitKBundle();
  return bundle ? bundle->findKernel("gfx942", n, k, m, batch) : nullptr;
}

/// A call with every pointer null: any read, write or workspace use of an
/// empty launch would fault or be refused.
runtime::PrequantBmmCall nullCall(int64_t batch, int64_t m) {
  runtime::PrequantBmmCall call;
  call.batch = batch;
  call.m = m;
  return call;
}

/// EmulatorLauncher::launch: no emulator run, no workspace, for K-up and the
/// split-K V-up, with null pointers.
TEST(EmptyLaunch, EmulatorLauncherRunsNothing) {
  runtime::EmulatorLauncher launcher;
  for (auto [n, k] : {std::pair<int64_t, int64_t>{512, 128}, {128, 512}})
    for (auto [batch, m] : kEmpty) {
      SCOPED_TRACE(testing::Message()
                   << "N=" << n << " B=" << batch << " M=" << m);
      const KernelEntry *kernel = findKernel(n, k, m, batch);
      ASSERT_NE(kernel, nullptr);
      EXPECT_EQ(kernel->getWorkspaceBytes(m, batch), 0u);
      llvm::Expected<emu::ExecStats> stats =
          launcher.launch(*kernel, nullCall(batch, m));
      ASSERT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
      EXPECT_EQ(stats->instructions, 0u);
      EXPECT_EQ(stats->workgroups, 0u);
      EXPECT_EQ(launcher.getWorkspaceSize(*kernel), 0u);
    }
}

/// The code object is not even decoded: an entry without one launches M = 0
/// and refuses M = 1.
TEST(EmptyLaunch, CodeObjectIsNotDecoded) {
  const KernelEntry *kernel = findKernel(512, 128, 0, 16);
  ASSERT_NE(kernel, nullptr);
  KernelEntry detached = *kernel;
  detached.codeObject = nullptr;
  runtime::EmulatorLauncher launcher;
  for (auto [batch, m] : kEmpty) {
    llvm::Expected<emu::ExecStats> stats =
        launcher.launch(detached, nullCall(batch, m));
    EXPECT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
  }
  std::vector<uint16_t> x(16 * 128), y(16 * 512);
  std::vector<uint8_t> w(16 * 512 * 128);
  float scale = 1.0f;
  runtime::PrequantBmmCall call = nullCall(16, 1);
  call.x = x.data();
  call.xStrideB = 128;
  call.w = w.data();
  call.wScale = &scale;
  call.y = y.data();
  call.yStrideB = 512;
  llvm::Expected<emu::ExecStats> stats = launcher.launch(detached, call);
  ASSERT_FALSE(bool(stats));
  EXPECT_NE(llvm::toString(stats.takeError()).find("has no code object"),
            std::string::npos);
}

/// A split-K kernel's workspace: an empty launch neither allocates it nor
/// changes the one a real launch left.
TEST(EmptyLaunch, SplitKWorkspaceIsNotTouched) {
  const KernelEntry *kernel = findKernel(128, 512, 0, 16);
  ASSERT_NE(kernel, nullptr);
  ASSERT_GT(kernel->workspaceBytesPerBlock, 0u) << kernel->symbol;
  runtime::EmulatorLauncher launcher;
  for (auto [batch, m] : kEmpty)
    ASSERT_TRUE(bool(launcher.launch(*kernel, nullCall(batch, m))));
  EXPECT_EQ(launcher.getWorkspaceSize(*kernel), 0u);

  // A real launch keeps its workspace; empty launches after it keep it as
  // it is.
  runtime::VerifyProblem problem;
  problem.batch = 16;
  problem.m = 5;
  runtime::VerifyResult result =
      runtime::verifyKernel(launcher, *kernel, problem);
  ASSERT_TRUE(result.passed()) << result.error << result.message;
  uint64_t kept = launcher.getWorkspaceSize(*kernel);
  EXPECT_EQ(kept, kernel->getWorkspaceBytes(5, 16));
  for (auto [batch, m] : kEmpty)
    ASSERT_TRUE(bool(launcher.launch(*kernel, nullCall(batch, m))));
  EXPECT_EQ(launcher.getWorkspaceSize(*kernel), kept);
}

/// The embedding API (Embedding/Runtime.h): BundleEmulator::launch of an
/// empty call succeeds with null pointers and executes no instruction.
TEST(EmptyLaunch, BundleEmulatorRunsNothing) {
  std::shared_ptr<const LoadedBundle> bundle = getSplitKBundle();
  ASSERT_TRUE(bundle);
  embedding::BundleEmulator emulator(bundle);
  for (auto [n, k] : {std::pair<int64_t, int64_t>{512, 128}, {128, 512}})
    for (auto [batch, m] : kEmpty) {
      SCOPED_TRACE(testing::Message()
                   << "N=" << n << " B=" << batch << " M=" << m);
      const KernelEntry *kernel = bundle->findKernel("gfx942", n, k, m, batch);
      ASSERT_NE(kernel, nullptr);
      uint64_t instructions = 1;
      std::string error;
      EXPECT_TRUE(emulator.launch(*kernel, nullCall(batch, m), /*threads=*/0,
                                  instructions, error))
          << error;
      EXPECT_EQ(instructions, 0u);
    }
}

} // namespace
